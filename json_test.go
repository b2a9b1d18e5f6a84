package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
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
