package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestHTTPWireErrors is TestWireErrors over Streamable HTTP: each hostile
// input gets the protocol's answer, an HTTP status and, where the status
// has one, a JSON-RPC error echoing the request's id when it can be read;
// or a documented silent drop (202, logged). Either way the next valid
// request on the same session succeeds.
//
// Legacy cases run on a fresh 2025-11-25 session each; modern cases
// (2026-07-28) have no session, and their next request is a fresh POST.
func TestHTTPWireErrors(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	held := make(chan struct{}, 1)
	srv.AddTool(Tool{Name: "hold"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		held <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	AddTool(srv, Tool{Name: "count"}, func(ctx context.Context, req *CallToolRequest, in struct {
		N int `json:"n"`
	}) (struct{}, error) {
		return struct{}{}, nil
	})
	const maxBody = 64 << 10
	ts := serveHTTP(t, srv, WithMaxBodyBytes(maxBody))

	deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) // past encoding/json's depth limit
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	const (
		legacy = iota
		modern
	)
	cases := []struct {
		name   string
		era    int
		body   string
		header []string // extra headers, "-" removes one; "Mcp-Session-Id" "" sends none
		status int
		code   int // 0: no JSON-RPC error (202, or a result)
		id     any // the id the error echoes; nil: no id member
		// toolError: the answer is a tool result with isError set, as
		// MCP reports invalid tool arguments.
		toolError bool
		// inFlight is a request sent first, which stays in flight (the
		// hold tool) until the case is over.
		inFlight string
	}{
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,"method":`, status: 400, code: CodeParseError},
		{name: "empty body", body: ``, status: 400, code: CodeParseError},
		{name: "batch where batches are not allowed", body: `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, status: 400, code: CodeInvalidRequest},
		{name: "jsonrpc missing", body: `{"id":3,"method":"ping"}`, status: 400, code: CodeInvalidRequest, id: 3.0},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":4,"method":"ping"}`, status: 400, code: CodeInvalidRequest, id: 4.0},
		{name: "jsonrpc a number", body: `{"jsonrpc":2,"id":5,"method":"ping"}`, status: 400, code: CodeInvalidRequest, id: 5.0},
		{name: "id null", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, status: 400, code: CodeInvalidRequest},
		{name: "id object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, status: 400, code: CodeInvalidRequest},
		{name: "id float", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, status: 400, code: CodeInvalidRequest},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":6,"method":7}`, status: 400, code: CodeInvalidRequest, id: 6.0},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}`, status: 400, code: CodeInvalidRequest, id: 7.0},
		{name: "params of the wrong shape", body: call("8", `{"name":5}`), status: 200, code: CodeInvalidParams, id: 8.0},
		{name: "notification carrying an id is a request", body: `{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`, status: 200, code: CodeMethodNotFound, id: 9.0},
		{name: "malformed notification: dropped", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`, status: 202},
		{name: "response for an unknown id: dropped", body: `{"jsonrpc":"2.0","id":999,"result":{}}`, status: 202},
		{name: "error response for an unknown id: dropped", body: `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`, status: 202},
		{name: "duplicate in-flight id", body: call("10", `{"name":"echo"}`), inFlight: call("10", `{"name":"hold"}`), status: 200, code: CodeInvalidRequest, id: 10.0},
		{name: "invalid UTF-8", body: "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", status: 400, code: CodeParseError},
		{name: "body over the size limit", body: call("12", `{"name":"echo","arguments":{"x":"`+strings.Repeat("x", maxBody)+`"}}`), status: 413, code: CodeInvalidRequest},
		{name: "huge number id", body: `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, status: 400, code: CodeInvalidRequest},
		{name: "huge integer id", body: `{"jsonrpc":"2.0","id":` + strings.Repeat("9", 60) + `,"method":"ping"}`, status: 400, code: CodeInvalidRequest},
		{name: "huge number argument", body: call("13", `{"name":"count","arguments":{"n":1e400}}`), status: 200, toolError: true},
		{name: "deeply nested JSON", body: call("14", `{"name":"echo","arguments":`+deep+`}`), status: 400, code: CodeParseError},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":15,"method":"no/such"}`, status: 200, code: CodeMethodNotFound, id: 15.0},
		{name: "request before initialize", body: `{"jsonrpc":"2.0","id":16,"method":"tools/list"}`, header: []string{"Mcp-Session-Id", ""}, status: 400, code: CodeInvalidRequest},
		{name: "unsupported protocol version header", body: `{"jsonrpc":"2.0","id":17,"method":"ping"}`, header: []string{"MCP-Protocol-Version", "1999-01-01"}, status: 400, code: CodeInvalidRequest},
		{name: "2026-07-28 header on a legacy body", body: `{"jsonrpc":"2.0","id":18,"method":"ping"}`, header: []string{"MCP-Protocol-Version", Version20260728}, status: 400, code: CodeInvalidParams, id: 18.0},
		{name: "forged session id", body: `{"jsonrpc":"2.0","id":19,"method":"ping"}`, header: []string{"Mcp-Session-Id", "forged"}, status: 404, code: CodeInvalidRequest},

		{name: "modern malformed JSON", era: modern, body: `{"jsonrpc":"2.0","id":20,`, status: 400, code: CodeParseError},
		{name: "modern batch", era: modern, body: "[" + modernRequest("21", "tools/list", "") + "]", status: 400, code: CodeInvalidRequest},
		{name: "modern response", era: modern, body: `{"jsonrpc":"2.0","id":22,"result":{}}`, status: 400, code: CodeInvalidRequest},
		{name: "modern id float", era: modern, body: modernRequest("23.5", "tools/list", ""), status: 400, code: CodeInvalidRequest},
		{name: "modern invalid UTF-8", era: modern, body: modernRequest("24", "tools/list", "\"x\":\"\xfe\""), status: 400, code: CodeParseError},
		{name: "modern unknown method", era: modern, body: modernRequest("25", "no/such", ""), header: []string{"Mcp-Method", "no/such"}, status: 404, code: CodeMethodNotFound, id: 25.0},
		{name: "modern wrong version header", era: modern, body: modernRequest("26", "tools/list", ""), header: []string{"MCP-Protocol-Version", "2099-01-01"}, status: 400, code: CodeHeaderMismatch, id: 26.0},
		{name: "modern unsupported version", era: modern, body: strings.Replace(modernRequest("27", "tools/list", ""), Version20260728, "2099-01-01", 1), header: []string{"MCP-Protocol-Version", "2099-01-01"}, status: 400, code: CodeUnsupportedProtocolVersion, id: 27.0},
		{name: "modern forged session id", era: modern, body: modernRequest("28", "tools/list", ""), header: []string{"Mcp-Session-Id", "forged"}, status: 200, id: 28.0},
		{name: "modern forged requestState", era: modern, body: modernRequest("29", "tools/call", `"name":"ask_elicitation","arguments":{"message":"m"},"inputResponses":{},"requestState":"forged.state"`), header: []string{"Mcp-Method", "tools/call", "Mcp-Name", "ask_elicitation"}, status: 200, code: CodeInvalidParams, id: 29.0},
		{name: "modern arguments of the wrong type", era: modern, body: modernRequest("30", "tools/call", `"name":"count","arguments":{"n":"many"}`), header: []string{"Mcp-Method", "tools/call", "Mcp-Name", "count"}, status: 200, toolError: true},
		{name: "modern params of the wrong shape", era: modern, body: modernRequest("31", "tools/call", `"name":["count"]`), header: []string{"Mcp-Method", "tools/call"}, status: 200, code: CodeInvalidParams, id: 31.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var header map[string]string
			var sid string
			if tc.era == legacy {
				sid = legacySession(t, ts.URL, Version20251125)
				header = postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)
			} else {
				header = modernHeaders("tools/list")
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				for k := range header {
					if strings.EqualFold(k, tc.header[i]) {
						delete(header, k)
					}
				}
				if v := tc.header[i+1]; v != "" {
					header[tc.header[i]] = v
				}
			}
			if tc.inFlight != "" {
				first := make(chan httpReply, 1)
				go func() { first <- doHTTP(t, "POST", ts.URL, tc.inFlight, header) }()
				<-held
				defer func() {
					cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + fmt.Sprint(field(t, tc.inFlight, "id")) + `}}`
					if r := doHTTP(t, "POST", ts.URL, cancel, header); r.status != 202 {
						t.Errorf("cancelling the request in flight: %d %s", r.status, r.body)
					}
					if r := <-first; r.status/100 != 2 {
						t.Errorf("the request in flight: %d %s", r.status, r.body)
					}
				}()
			}
			r := doHTTP(t, "POST", ts.URL, tc.body, header)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			switch {
			case tc.status == 202:
				if r.body != "" {
					t.Fatalf("202 with a body: %s", r.body)
				}
			case tc.code == 0:
				if field(t, r.body, "error") != nil || field(t, r.body, "result") == nil {
					t.Fatalf("want a result: %s", r.body)
				}
				if isErr := field(t, r.body, "result.isError") == true; isErr != tc.toolError {
					t.Fatalf("isError %v, want %v: %s", isErr, tc.toolError, r.body)
				}
			default:
				if got := field(t, r.body, "error.code"); got != float64(tc.code) {
					t.Fatalf("code %v, want %d: %s", got, tc.code, r.body)
				}
				if got := field(t, r.body, "id"); got != tc.id {
					t.Fatalf("id %v, want %v: %s", got, tc.id, r.body)
				}
				if tc.id == nil && strings.Contains(r.body, `"id"`) && !strings.HasPrefix(tc.body, "[") {
					t.Fatalf("an id member for an unreadable id: %s", r.body)
				}
			}
			// The session (or, on 2026-07-28, the endpoint) keeps working.
			if tc.era == legacy {
				next := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":"next","method":"ping"}`, postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))
				if next.status != 200 || !jsonEqual(next.body, `{"jsonrpc":"2.0","id":"next","result":{}}`) {
					t.Fatalf("the next request: %d %s", next.status, next.body)
				}
			} else {
				next := doHTTP(t, "POST", ts.URL, modernRequest(`"next"`, "tools/list", ""), modernHeaders("tools/list"))
				if next.status != 200 || field(t, next.body, "result.tools") == nil {
					t.Fatalf("the next request: %d %s", next.status, next.body)
				}
			}
		})
	}
}
