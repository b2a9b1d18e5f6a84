package mcpotel

import (
	"encoding/json"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/propagation"
)

var traceFields = propagation.TraceContext{}.Fields()

const (
	parentHeader = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	stateHeader  = "rojo=00f067aa0ba902b7"
)

// TestInjectMeta: the trace context goes into params._meta, created when
// missing and merged when present; every other member stays byte for byte,
// and a stale traceparent is replaced, not duplicated.
func TestInjectMeta(t *testing.T) {
	c := propagation.MapCarrier{"traceparent": parentHeader, "tracestate": stateHeader}
	meta := `{"traceparent":"` + parentHeader + `","tracestate":"` + stateHeader + `"}`
	for _, tc := range []struct{ name, in, want string }{
		{"no params", ``, `{"_meta":` + meta + `}`},
		{"null params", `null`, `{"_meta":` + meta + `}`},
		{"empty object", `{}`, `{"_meta":` + meta + `}`},
		{"empty object with space", ` { } `, ` {"_meta":` + meta + ` } `},
		{"members, no _meta", `{"name":"echo","arguments":{"x":[1,{"_meta":2}]}}`,
			`{"_meta":` + meta + `,"name":"echo","arguments":{"x":[1,{"_meta":2}]}}`},
		{"_meta with members", `{"name":"echo","_meta":{"progressToken":7, "a\"b":"c"},"z":1}`,
			`{"name":"echo","_meta":{"traceparent":"` + parentHeader + `","tracestate":"` + stateHeader + `","progressToken":7,"a\"b":"c"},"z":1}`},
		{"stale trace context", `{"_meta":{"traceparent":"00-old-old-01","x":true,"tracestate":"old"}}`,
			`{"_meta":{"traceparent":"` + parentHeader + `","tracestate":"` + stateHeader + `","x":true}}`},
		{"escaped stale key", `{"_meta":{"trace\u0070arent":"old"}}`, `{"_meta":` + meta + `}`},
		{"null _meta", `{"_meta":null,"a":1}`, `{"_meta":` + meta + `,"a":1}`},
		{"_meta not an object", `{"_meta":"x"}`, `{"_meta":"x"}`},
		{"params an array", `[1,2]`, `[1,2]`},
		{"truncated", `{"name":"echo"`, `{"name":"echo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(injectMeta([]byte(tc.in), c, traceFields))
			if got != tc.want {
				t.Errorf("injectMeta(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestInjectMetaNothingToCarry: without a trace context (no span in the
// context, a no-op tracer) the params are not touched.
func TestInjectMetaNothingToCarry(t *testing.T) {
	in := []byte(`{"name":"echo"}`)
	if got := injectMeta(in, propagation.MapCarrier{}, traceFields); &got[0] != &in[0] {
		t.Errorf("injectMeta with an empty carrier copied the params: %s", got)
	}
}

// TestReadParams reads the name, the URI and the trace context, whatever
// else the params hold, and reads bad params as empty.
func TestReadParams(t *testing.T) {
	p := readParams([]byte(`{"arguments":{"name":"not this","uri":"nor this"},"name":"get-weather",` +
		`"uri":"file:///a\"b","_meta":{"traceparent":"` + parentHeader + `","progressToken":"t","tracestate":5}}`))
	if p.name != "get-weather" || p.uri != `file:///a"b` {
		t.Errorf("name %q uri %q, want get-weather and file:///a\"b", p.name, p.uri)
	}
	if got, want := p.carrier(traceFields), (propagation.MapCarrier{"traceparent": parentHeader}); !reflect.DeepEqual(got, want) {
		t.Errorf("carrier %v, want %v (a tracestate that is not a string left out)", got, want)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"name":`, `{"name":5}`, `{"name":"x"`, `{"name" "x"}`, `{"_meta":[}`, `"x"`} {
		p := readParams([]byte(bad))
		if p.name != "" || p.carrier(traceFields) != nil {
			t.Errorf("readParams(%s) = %+v, want nothing read", bad, p)
		}
	}
}

// FuzzInjectMeta: whatever the params, nothing panics, and what was valid
// JSON stays valid JSON with every member but _meta unchanged.
func FuzzInjectMeta(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a":1}`, `{"_meta":{"x":[1,"]"]}}`, `{"_meta":null}`, `{"a":"\"}"}`, `[{}]`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	c := propagation.MapCarrier{"traceparent": parentHeader}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := readParams(data)
		p.carrier(traceFields)
		out := injectMeta(data, c, traceFields)
		var before map[string]json.RawMessage
		if json.Unmarshal(data, &before) != nil || before == nil {
			return
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("injectMeta(%s) = %s: %v", data, out, err)
		}
		var meta map[string]json.RawMessage
		if m, ok := before["_meta"]; ok && string(m) != "null" && json.Unmarshal(m, &meta) != nil {
			return // a _meta that is not an object is left as it was
		}
		if err := json.Unmarshal(after["_meta"], &meta); err != nil || string(meta["traceparent"]) != `"`+parentHeader+`"` {
			t.Fatalf("injectMeta(%s) = %s: no traceparent in _meta", data, out)
		}
		delete(before, "_meta")
		delete(after, "_meta")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("injectMeta(%s) = %s: other members changed", data, out)
		}
	})
}
