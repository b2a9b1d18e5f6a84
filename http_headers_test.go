package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPHeaderValueEncoding: the Mcp-Param-* value encoding round-trips
// and uses base64 exactly when it must.
func TestHTTPHeaderValueEncoding(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, wire string
	}{
		{"us-west1", "us-west1"},
		{"", ""},
		{"us west 1", "us west 1"},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="},
	}
	for _, tc := range cases {
		if got := encodeHeaderValue(tc.in); got != tc.wire {
			t.Errorf("encode(%q) = %q, want %q", tc.in, got, tc.wire)
		}
		if got, ok := decodeHeaderValue(tc.wire); !ok || got != tc.in {
			t.Errorf("decode(%q) = %q %v, want %q", tc.wire, got, ok, tc.in)
		}
	}
}

// TestToolParamHeaders: x-mcp-header annotations are read through
// properties chains, and the forbidden ones are errors.
func TestToolParamHeaders(t *testing.T) {
	t.Parallel()
	ok := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"o":{"type":"object","properties":{"deep":{"type":"boolean","x-mcp-header":"Deep"}}},"plain":{"type":"string"}}}`
	params, err := toolParamHeaders(json.RawMessage(ok))
	if err != nil || len(params) != 3 || params[0].name != "Deep" || strings.Join(params[0].path, ".") != "o.deep" {
		t.Fatalf("%+v %v", params, err)
	}
	bad := map[string]string{
		"empty":       `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"space":       `{"properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}`,
		"colon":       `{"properties":{"a":{"type":"string","x-mcp-header":"Region:Primary"}}}`,
		"non-ASCII":   `{"properties":{"a":{"type":"string","x-mcp-header":"Région"}}}`,
		"control":     `{"properties":{"a":{"type":"string","x-mcp-header":"Region\t1"}}}`,
		"number":      `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		"object":      `{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}`,
		"array":       `{"properties":{"a":{"type":"array","x-mcp-header":"A"}}}`,
		"null":        `{"properties":{"a":{"type":"null","x-mcp-header":"A"}}}`,
		"duplicate":   `{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`,
		"dup by case": `{"properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`,
		"under items": `{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		"on the root": `{"type":"string","x-mcp-header":"A"}`,
	}
	for name, schema := range bad {
		if _, err := toolParamHeaders(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestHTTPClientMirrorsParams: a 2026-07-28 client learns the x-mcp-header
// arguments from tools/list, drops tools with invalid annotations, and
// mirrors the arguments of a call into Mcp-Param-* headers the server
// accepts, base64 where needed.
func TestHTTPClientMirrorsParams(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	srv.AddTool(Tool{Name: "custom", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},
		"verbose":{"type":"boolean","x-mcp-header":"Verbose"},"query":{"type":"string"}}}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments))}}, nil
		})
	srv.AddTool(Tool{Name: "invalid", InputSchema: json.RawMessage(`{"type":"object","properties":{"f":{"type":"number","x-mcp-header":"F"}}}`)}, nil)
	cl := connectHTTP(t, srv, WithProtocolVersion(Version20260728))
	ctx := context.Background()
	tools, err := cl.ListTools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "invalid" {
			t.Fatal("a tool with an invalid x-mcp-header was listed")
		}
	}
	for _, args := range []map[string]any{
		{"region": "us-west1", "priority": 42, "verbose": false, "query": "SELECT 1"},
		{"region": "Hello, 世界", "priority": 1, "verbose": nil},
		{"region": " padded ", "query": "x"},
		{"region": ""},
	} {
		if res, err := cl.CallTool(ctx, "custom", args); err != nil || res.IsError {
			t.Fatalf("CallTool(%v) = %+v, %v", args, res, err)
		}
	}
}

// TestHTTPClientHeaderMapsShared: messages that carry the same headers
// share a map, and each message still gets its own headers: a 2026-07-28
// request's method and name, and a tool's mirrored arguments per call.
func TestHTTPClientHeaderMapsShared(t *testing.T) {
	t.Parallel()
	tr := NewHTTPTransport("http://127.0.0.1:1/mcp")
	tr.toolHeaders = map[string][]paramHeader{"mirrored": {{name: "Region", path: []string{"region"}}}}
	header := func(body string) http.Header {
		var m httpMessage
		sniffMessage([]byte(body), &m)
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.headerLocked(&m)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(id int, name, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, id, meta, name, args)
	}
	echo1, echo2 := header(call(1, "echo", `{}`)), header(call(2, "echo", `{"text":"x"}`))
	echo1["X-Probe"] = []string{"shared"}
	if echo2.Get("X-Probe") != "shared" {
		t.Error("two calls of one tool got two header maps")
	}
	delete(echo1, "X-Probe")
	other := header(call(3, "other", `{}`))
	if got := other.Get(headerName); got != "other" || echo1.Get(headerName) != "echo" {
		t.Errorf("Mcp-Name: %q and %q", echo1.Get(headerName), got)
	}
	list := header(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{%s}}`, meta))
	if list.Get(headerMethod) != "tools/list" || list.Get(headerName) != "" || echo1.Get(headerMethod) != "tools/call" {
		t.Errorf("Mcp-Method: %q and %q", list.Get(headerMethod), echo1.Get(headerMethod))
	}
	a, b := header(call(5, "mirrored", `{"region":"a"}`)), header(call(6, "mirrored", `{"region":"b"}`))
	if a.Get(headerParamPrefix+"Region") != "a" || b.Get(headerParamPrefix+"Region") != "b" {
		t.Errorf("mirrored arguments: %q and %q", a.Get(headerParamPrefix+"Region"), b.Get(headerParamPrefix+"Region"))
	}
	for i := range 2 * maxModernHeaders {
		header(call(10+i, fmt.Sprint("tool", i), `{}`))
	}
	if n := len(tr.modernHeaders); n > maxModernHeaders {
		t.Errorf("%d header maps kept, want at most %d", n, maxModernHeaders)
	}
}
