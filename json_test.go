package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

const testForm = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// schemaServer has a tool that elicits with the schema value named by its
// argument, and reports Elicit's error as the tool's text.
func schemaServer(schemas map[string]any) *Server {
	s := NewServer(Implementation{Name: "schemas", Version: "1"})
	s.AddTool(Tool{Name: "elicit"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var a struct{ Schema string }
		json.Unmarshal(req.Params.Arguments, &a)
		res, err := req.Gateway().Elicit(ctx, "fill in", schemas[a.Schema])
		if err != nil {
			if errors.Is(err, ErrInputRequired) {
				return nil, err
			}
			return &CallToolResult{Content: []Content{TextContent("error: " + err.Error())}}, nil
		}
		return &CallToolResult{Content: []Content{TextContent(res.Action)}}, nil
	})
	return s
}

// TestElicitTakesBytesAsJSON: a schema handed over as []byte or
// json.RawMessage reaches the client as the object it holds, on both eras.
// A []byte used to be sent as a base64 string, which the TypeScript SDK's
// client rejects and ours took silently.
func TestElicitTakesBytesAsJSON(t *testing.T) {
	t.Parallel()
	schemas := map[string]any{
		"bytes":  []byte(testForm),
		"raw":    json.RawMessage(testForm),
		"map":    map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
		"schema": &Schema{Type: "object", Properties: map[string]*Schema{"name": {Type: "string"}}, Required: []string{"name"}},
	}
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			var got atomic.Value
			cl := pair(t, schemaServer(schemas), WithProtocolVersion(v),
				WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
					got.Store(string(p.RequestedSchema))
					return &ElicitResult{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
				}))
			for name := range schemas {
				got.Store("")
				if text := callText(t, cl, "elicit", map[string]string{"schema": name}); text != ActionAccept {
					t.Fatalf("%s: %s", name, text)
				}
				if s := got.Load().(string); !jsonEqual(s, testForm) {
					t.Errorf("%s: the client saw requestedSchema %s, want %s", name, s, testForm)
				}
			}
		})
	}
}

// TestElicitRefusesANonObjectSchema: a schema that does not encode to a JSON
// object is refused before anything is sent, with an error naming the type.
func TestElicitRefusesANonObjectSchema(t *testing.T) {
	t.Parallel()
	schemas := map[string]any{
		"string":      "type: object",
		"number":      42,
		"slice":       []string{"name"},
		"quoted":      []byte(`"eyJ0eXBlIjoib2JqZWN0In0="`),
		"broken":      json.RawMessage(`{"type":`),
		"not-json":    []byte("type=object"),
		"unencodable": map[string]any{"f": func() {}},
	}
	want := map[string]string{
		"string":      "the string given encodes to a JSON string",
		"number":      "the int given encodes to a JSON number",
		"slice":       "the []string given encodes to a JSON array",
		"quoted":      "the []uint8 given encodes to a JSON string",
		"broken":      "the json.RawMessage given does not hold valid JSON",
		"not-json":    "the []uint8 given does not hold valid JSON (invalid character 'y'",
		"unencodable": "unsupported type: func()",
	}
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			cl := pair(t, schemaServer(schemas), WithProtocolVersion(v),
				WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
					asked.Add(1)
					return &ElicitResult{Action: ActionAccept}, nil
				}))
			for name := range schemas {
				text := callText(t, cl, "elicit", map[string]string{"schema": name})
				if !strings.HasPrefix(text, "error: mcp: Elicit: the requested schema: ") || !strings.Contains(text, want[name]) {
					t.Errorf("%s: got %q, want an error containing %q", name, text, want[name])
				}
			}
			if n := asked.Load(); n != 0 {
				t.Errorf("the client was asked %d times", n)
			}
		})
	}
}

// TestClientRefusesANonObjectRequestedSchema: a form elicitation whose
// requestedSchema is not an object is answered -32602 and never reaches
// the handler; a url elicitation needs none.
func TestClientRefusesANonObjectRequestedSchema(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	_, p := rawServerPeer(t, WithURLElicitation(),
		WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			asked.Add(1)
			return &ElicitResult{Action: ActionDecline}, nil
		}))
	cases := []struct{ params, want string }{
		{`{"message":"m","requestedSchema":"eyJ0eXBlIjoib2JqZWN0In0="}`, "not a string"},
		{`{"message":"m","requestedSchema":[]}`, "not an array"},
		{`{"message":"m","requestedSchema":null}`, "not a null"},
		{`{"message":"m"}`, "not nothing"},
		{`{"mode":"form","message":"m","requestedSchema":7}`, "not a number"},
	}
	for i, tc := range cases {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":%s}`, i, tc.params))
		got := p.recv()
		if code := field(t, got, "error.code"); code != float64(CodeInvalidParams) {
			t.Errorf("%s: got %s, want error %d", tc.params, got, CodeInvalidParams)
			continue
		}
		if msg := field(t, got, "error.message").(string); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: message %q does not say %q", tc.params, msg, tc.want)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for refused requests", n)
	}
	p.send(`{"jsonrpc":"2.0","id":"ok","method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}`)
	p.expect(`{"jsonrpc":"2.0","id":"ok","result":{"action":"decline"}}`)
	p.send(`{"jsonrpc":"2.0","id":"url","method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}}`)
	p.expect(`{"jsonrpc":"2.0","id":"url","result":{"action":"decline"}}`)
}

// TestAPITakesBytesAsJSON: every place the API takes `any` for JSON takes a
// []byte as the JSON it holds, and refuses one that holds none, instead of
// sending base64; where the protocol needs an object, anything else is
// refused before it is sent.
func TestAPITakesBytesAsJSON(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	srv.AddTool(Tool{Name: "log_bytes"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if err := req.Gateway().Log(LevelInfo, "t", []byte(`{"k":[1,2]}`)); err != nil {
			return nil, err
		}
		if err := req.Gateway().Log(LevelInfo, "t", []byte(`{"k":`)); err == nil {
			return nil, errors.New("Log took broken JSON")
		}
		if err := req.Gateway().Notify("notifications/custom", []byte(`{"n":1}`)); err != nil {
			return nil, err
		}
		for _, bad := range []any{[]byte(`[1]`), "text", 3} {
			if err := req.Gateway().Notify("notifications/custom", bad); err == nil || !strings.Contains(err.Error(), "a JSON object is required") {
				return nil, fmt.Errorf("Notify(%T): %v", bad, err)
			}
		}
		return &CallToolResult{Content: []Content{TextContent("ok")}}, nil
	})
	logs := make(chan string, 4)
	custom := make(chan string, 4)
	cl := pair(t, srv, WithProtocolVersion(Version20251125),
		WithLoggingMessageHandler(func(ctx context.Context, m *LoggingMessageParams) { logs <- string(m.Data) }),
		WithNotificationHandler("notifications/custom", func(ctx context.Context, params json.RawMessage) { custom <- string(params) }))
	ctx := context.Background()

	if got := callText(t, cl, "echo", []byte(`{"text":"hi"}`)); !jsonEqual(got, `{"text":"hi"}`) {
		t.Errorf("CallTool with []byte arguments: the tool saw %s", got)
	}
	for _, bad := range []any{"text", []byte(`"text"`), []int{1}, []byte(`{"a":`)} {
		if _, err := cl.CallTool(ctx, "echo", bad); err == nil || !strings.Contains(err.Error(), "mcp: the arguments of echo: ") {
			t.Errorf("CallTool(%T %v): err %v, want a refusal", bad, bad, err)
		}
	}
	var res CallToolResult
	if err := cl.SendRequest(ctx, "tools/call", []byte(`{"name":"echo","arguments":{"x":1}}`), &res); err != nil || !jsonEqual(res.Content[0].Text, `{"x":1}`) {
		t.Errorf("SendRequest with []byte params: %v %+v", err, res)
	}
	if err := cl.SendRequest(ctx, "tools/call", "echo", nil); err == nil || !strings.Contains(err.Error(), "the string given encodes to a JSON string") {
		t.Errorf("SendRequest with string params: %v", err)
	}
	if got := callText(t, cl, "log_bytes", nil); got != "ok" {
		t.Fatal(got)
	}
	if got := <-logs; got != `{"k":[1,2]}` {
		t.Errorf("Log with []byte data: the client saw %s", got)
	}
	if got := <-custom; got != `{"n":1}` {
		t.Errorf("Notify with []byte params: the client saw %s", got)
	}
	if e := NewError(1, "m", []byte(`{"why":"x"}`)); string(e.Data) != `{"why":"x"}` {
		t.Errorf("NewError with []byte data: %s", e.Data)
	}
	if e := NewError(1, "m", []byte(`{"why"`)); e.Data != nil || !strings.Contains(e.Message, "data left out") {
		t.Errorf("NewError with broken data: %+v", e)
	}
}

// TestParseErrorSaysWhereTheJSONBroke: a line that is not JSON is answered
// with where it broke, and the connection keeps working.
func TestParseErrorSaysWhereTheJSONBroke(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.send(`{"jsonrpc":"2.0","id" 1}`)
	p.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid character '1' after object key at byte 23"}}`)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
}

func TestValidJSONDepthMatchesEncodingJSON(t *testing.T) {
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1} {
		doc := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		if got, want := validJSON(doc), json.Valid(doc); got != want {
			t.Errorf("depth %d: validJSON %v, json.Valid %v", depth, got, want)
		}
	}
}

// TestValidJSONControlBytes: every ASCII byte, at every position of a long
// string, is judged as encoding/json judges it (the word-at-a-time path).
func TestValidJSONControlBytes(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		for pos := 0; pos < 40; pos++ {
			b := []byte(`"` + strings.Repeat("a", 40) + `"`)
			b[1+pos] = byte(c)
			if got, want := validJSON(b), json.Valid(b); got != want {
				t.Fatalf("byte %#x at %d: validJSON %v, json.Valid %v", c, pos, got, want)
			}
		}
	}
}

// FuzzValidJSON: our validator agrees with encoding/json's on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5e-3,-0,true,false,null,"x\u00e9\n"]}`, `{"a":}`, `[1,]`, `01`, `"\x01"`, `1.`, `-`, `{"a" 1}`, `[[[[]]]]`, ` "s" `, `tru`, `{"\u12G4":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // UTF-8 is checked separately
		}
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", data, got, want)
		}
	})
}

// FuzzDecodeAny: the reflection-free decoder of free-form values (result
// _meta) gives what json.Unmarshal into an any gives, or defers to it.
func FuzzDecodeAny(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5e-3,-0,true,false,null,"x\u00e9\n"]}`, `{"a":{"b":{"c":[]}},"a":2}`, `1e400`, `"\ud800"`, ` {"k" : [ {} , [ ] ] } `, `{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) || !json.Valid(data) {
			return // the reader only passes valid JSON on
		}
		got, ok := decodeAny(data)
		var want any
		werr := json.Unmarshal(data, &want)
		if !ok {
			return // deferred to json.Unmarshal
		}
		if werr != nil {
			t.Fatalf("decodeAny(%q) = %#v, json.Unmarshal fails: %v", data, got, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeAny(%q) = %#v, json.Unmarshal = %#v", data, got, want)
		}
	})
}

// FuzzAppendJSONString: our string encoder writes valid JSON that decodes
// to the string encoding/json would encode (invalid UTF-8 as U+FFFD).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "hello", "a\"b\\c", "\x00\x1f\n\r\t", "é漢字🙂", "\xff\xfe", "line\u2028sep\u2029", strings.Repeat("abcdefgh", 5) + "\"" + strings.Repeat("x", 9), "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString([]byte("x"), s)
		if got[0] != 'x' || !json.Valid(got[1:]) {
			t.Fatalf("appendJSONString(%q) = %s: not valid JSON", s, got[1:])
		}
		var back, want string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(s)
		json.Unmarshal(enc, &want)
		if back != want {
			t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json's to %q", s, back, want)
		}
		var plain bytes.Buffer
		e := json.NewEncoder(&plain)
		e.SetEscapeHTML(false)
		e.Encode(s)
		if got := appendJSONString(nil, s); string(got)+"\n" != plain.String() {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json without HTML escaping = %s", s, got, plain.Bytes())
		}
	})
}

// TestMessageBuffersComeBackWithoutAllocating: a message buffer given back
// with recycleMessage is the next one messageBuffer hands out, and neither
// step allocates (the pool's *[]byte holders are recycled too).
func TestMessageBuffersComeBackWithoutAllocating(t *testing.T) {
	recycleMessage(messageBuffer(600))
	if n := testing.AllocsPerRun(100, func() {
		b := messageBuffer(600)
		b = append(b, `{"jsonrpc":"2.0"}`...)
		recycleMessage(b)
	}); n != 0 {
		t.Fatalf("a message buffer's round trip through the pool allocates %v times", n)
	}
	// A large buffer comes back for a large message of its class, without
	// allocating, and never for a small one.
	big := messageBuffer(1 << 20)
	if cap(big) != 1<<20 {
		t.Fatalf("messageBuffer(1 MiB) has capacity %d", cap(big))
	}
	recycleMessage(big)
	if b := messageBuffer(600); cap(b) > maxPooledMessage {
		t.Fatalf("a buffer of %d bytes came back for 600", cap(b))
	}
	if n := testing.AllocsPerRun(100, func() {
		b := messageBuffer(1<<19 + 1)
		b = append(b, `{"jsonrpc":"2.0"}`...)
		recycleMessage(b)
	}); n != 0 && !raceEnabled {
		t.Fatalf("a large message buffer's round trip through the pool allocates %v times", n)
	}
	// A buffer grown past its class by append goes to the class below its
	// capacity: every buffer of a class has room for the class's size.
	odd := make([]byte, 0, 3<<19) // 1.5 MiB
	recycleMessage(odd)
	for range 4 {
		if b := messageBuffer(1<<20 + 1); cap(b) < 1<<20+1 {
			t.Fatalf("messageBuffer(1 MiB + 1) has capacity %d", cap(b))
		}
	}
	// Beyond the largest class: made and dropped, never kept.
	huge := messageBuffer(maxLargeMessage + 1)
	if cap(huge) < maxLargeMessage+1 {
		t.Fatalf("messageBuffer(%d) has capacity %d", maxLargeMessage+1, cap(huge))
	}
	recycleMessage(huge)
	if b := messageBuffer(maxLargeMessage); cap(b) != maxLargeMessage {
		t.Fatalf("messageBuffer(%d) has capacity %d", maxLargeMessage, cap(b))
	}
}

// TestGrowMessageKeepsTheBytes: growMessage returns b when it has room,
// and otherwise a larger buffer with b's bytes; b goes back to the pool.
func TestGrowMessageKeepsTheBytes(t *testing.T) {
	b := append(messageBuffer(600), "abc"...)
	if g := growMessage(b, 10); &g[:1][0] != &b[:1][0] {
		t.Error("growMessage moved a buffer that had room")
	}
	for _, n := range []int{1 << 10, 100 << 10, 3 << 20} {
		b := append(messageBuffer(600), "abc"...)
		g := growMessage(b, n)
		if string(g) != "abc" || cap(g)-len(g) < n {
			t.Errorf("growMessage(%d): %q with room for %d", n, g, cap(g)-len(g))
		}
		recycleMessage(g)
	}
}
