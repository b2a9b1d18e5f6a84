package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// eachTransport runs f once per carrier of the package, as subtests:
// "memory" (in-memory pipes), "stdio-pipe" (the stdio framing over OS
// pipes), "http" (Streamable HTTP through an httptest server on 127.0.0.1)
// and "http+sse-2024" (the HTTP+SSE transport of 2024-11-05). connect serves srv on a fresh connection of that carrier and
// returns a client connected to it with opts; everything is closed when
// the subtest ends. Tests of behaviour every carrier must share use it,
// so they are one table over transports, not copies.
func eachTransport(t *testing.T, f func(t *testing.T, connect func(*Server, ...ClientOption) *Client)) {
	t.Helper()
	carriers := []struct {
		name    string
		connect func(t *testing.T, srv *Server, opts ...ClientOption) *Client
	}{
		{"memory", func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			ct, st := NewInMemoryTransports()
			return serveAndConnect(t, srv, ct, st, opts)
		}},
		{"stdio-pipe", func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			ct, st := pipeTransports(t)
			return serveAndConnect(t, srv, ct, st, opts)
		}},
		{"http", func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			return connectHTTP(t, srv, opts...)
		}},
		{"http+sse-2024", func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			return connectSSE(t, srv, opts...)
		}},
	}
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, func(srv *Server, opts ...ClientOption) *Client { return c.connect(t, srv, opts...) })
		})
	}
}

// connectHTTP serves srv with NewHTTPHandler on 127.0.0.1 and connects a
// client with opts to it; both end with the test.
func connectHTTP(t testing.TB, srv *Server, opts ...ClientOption) *Client {
	t.Helper()
	ts := serveHTTP(t, srv)
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, opts...)
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
		t.Fatalf("Connect over HTTP: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// connectSSE serves srv with the 2024-11-05 NewSSEHandler on 127.0.0.1
// and connects a client with opts to it; both end with the test.
func connectSSE(t testing.TB, srv *Server, opts ...ClientOption) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := httptest.NewServer(NewSSEHandler(srv, WithContext(ctx)))
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, opts...)
	if err := cl.Connect(context.Background(), NewSSETransport(ts.URL+"/sse")); err != nil {
		t.Fatalf("Connect over HTTP+SSE: %v", err)
	}
	t.Cleanup(func() {
		cl.Close()
		cancel()
		ts.Close()
	})
	return cl
}

// serveAndConnect serves srv on st and connects a client over ct.
func serveAndConnect(t testing.TB, srv *Server, ct, st Transport, opts []ClientOption) *Client {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, opts...)
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		cl.Close()
		st.Close()
		<-served
	})
	return cl
}

// serveHTTP serves srv with NewHTTPHandler on 127.0.0.1 until the test
// ends.
func serveHTTP(t testing.TB, srv *Server, opts ...HTTPHandlerOption) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := httptest.NewServer(NewHTTPHandler(srv, append([]HTTPHandlerOption{WithContext(ctx)}, opts...)...))
	t.Cleanup(func() {
		cancel()
		ts.Close()
	})
	return ts
}

// TestTransportsLifecycle runs the handshake and a few calls on every
// revision over every carrier.
func TestTransportsLifecycle(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, connect func(*Server, ...ClientOption) *Client) {
		for _, v := range SupportedVersions {
			t.Run(v, func(t *testing.T) {
				checkLifecycle(t, connect(newTestServer(), WithProtocolVersion(v)), v)
			})
		}
		t.Run("unpinned", func(t *testing.T) {
			cl := connect(newTestServer())
			if v := cl.ProtocolVersion(); v != LatestVersion {
				t.Fatalf("negotiated %s", v)
			}
		})
	})
}

var _ = errors.New
var _ = http.StatusOK

// eras are the two protocol eras, one revision each, for the tests that
// must hold on both.
var eras = []string{Version20251125, Version20260728}

// TestTransportsProgress: every progress report of a call arrives, in
// order, before the call returns, on every carrier and era.
func TestTransportsProgress(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, connect func(*Server, ...ClientOption) *Client) {
		for _, v := range eras {
			t.Run(v, func(t *testing.T) {
				cl := connect(newTestServer(), WithProtocolVersion(v))
				const steps = 500
				var got []float64
				res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": steps}, WithProgress(func(p Progress) {
					got = append(got, p.Progress)
				}))
				if err != nil {
					t.Fatal(err)
				}
				if res.Content[0].Text != fmt.Sprintf("%d steps", steps) {
					t.Fatalf("result %+v", res)
				}
				if len(got) != steps {
					t.Fatalf("%d reports before the call returned, want %d", len(got), steps)
				}
				for i, p := range got {
					if p != float64(i+1) {
						t.Fatalf("report %d is %g: out of order", i, p)
					}
				}
			})
		}
	})
}

// TestTransportsTimeoutCancelsHandler: a call that times out returns a
// RequestTimeoutError and the server's handler is cancelled, on every
// carrier and era (over HTTP by notifications/cancelled on the older
// revisions and by closing the stream on 2026-07-28).
func TestTransportsTimeoutCancelsHandler(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, connect func(*Server, ...ClientOption) *Client) {
		for _, v := range eras {
			t.Run(v, func(t *testing.T) {
				srv, started, cancelled := blockingServer()
				cl := connect(srv, WithProtocolVersion(v))
				errc := make(chan error, 1)
				go func() {
					_, err := cl.CallTool(context.Background(), "wait", nil, WithTimeout(100*time.Millisecond))
					errc <- err
				}()
				<-started
				var timeout *RequestTimeoutError
				if err := <-errc; !errors.As(err, &timeout) {
					t.Fatalf("CallTool = %v, want a RequestTimeoutError", err)
				}
				select {
				case cause := <-cancelled:
					if !errors.Is(cause, context.Canceled) {
						t.Fatalf("handler's context ended with %v", cause)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the server's handler was not cancelled")
				}
				// The connection still serves.
				if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
					t.Fatalf("after the timeout: %v", err)
				}
			})
		}
	})
}

// blockingServer returns a test server whose "wait" tool reports that it
// started and then the cause of its context's end.
func blockingServer(opts ...ServerOption) (*Server, <-chan struct{}, <-chan error) {
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	srv := newTestServer(opts...)
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	return srv, started, cancelled
}

// TestHTTPTenThousandProgress: 10,000 progress notifications over HTTP all
// arrive, in order, before CallTool returns, on both eras.
func TestHTTPTenThousandProgress(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cl := connectHTTP(t, newTestServer(), WithProtocolVersion(v))
			const steps = 10_000
			next := 1.0
			count := 0
			res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": steps}, WithProgress(func(p Progress) {
				if p.Progress != next {
					t.Errorf("report %g arrived when %g was due", p.Progress, next)
				}
				next = p.Progress + 1
				count++
			}))
			if err != nil {
				t.Fatal(err)
			}
			if count != steps || res.Content[0].Text != "10000 steps" {
				t.Fatalf("%d/%d reports before CallTool returned; result %+v", count, steps, res)
			}
		})
	}
}

// httpReply is a raw HTTP response, body read.
type httpReply struct {
	status int
	header http.Header
	body   string
}

// doHTTP sends one raw request; header values "" are sent empty, and a
// "Host" entry sets the request's Host.
func doHTTP(t testing.TB, method, url, body string, header map[string]string) httpReply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpReply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// postHeaders are the headers of a well-formed POST, plus extra ones
// (a value of "-" removes a header).
func postHeaders(extra ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "-" {
			delete(h, extra[i])
			continue
		}
		h[extra[i]] = extra[i+1]
	}
	return h
}

// legacySession initializes a legacy session at version v over raw HTTP
// and returns its id.
func legacySession(t testing.TB, url, v string) string {
	t.Helper()
	r := doHTTP(t, "POST", url, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" || !strings.Contains(r.body, `"protocolVersion":"`+v+`"`) {
		t.Fatalf("initialize: %d %q %s", r.status, sid, r.body)
	}
	if a := doHTTP(t, "POST", url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", v)); a.status != 202 {
		t.Fatalf("initialized: %d %s", a.status, a.body)
	}
	return sid
}

// modernRequest is a 2026-07-28 request body with the required _meta.
func modernRequest(id, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = "{" + params + "," + meta + "}"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
}

// modernHeaders are the headers of a well-formed 2026-07-28 POST.
func modernHeaders(method string, extra ...string) map[string]string {
	return postHeaders(append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}, extra...)...)
}

// TestHTTPLegacyRules checks every status code and header rule of the
// legacy Streamable HTTP (2025-03-26 … 2025-11-25).
func TestHTTPLegacyRules(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer(), WithMaxBodyBytes(1<<10))
	sid := legacySession(t, ts.URL, Version20251125)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	withSession := func(extra ...string) map[string]string {
		return postHeaders(append([]string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125}, extra...)...)
	}
	cases := []struct {
		name         string
		method, body string
		header       map[string]string
		status       int
		code         float64 // the JSON-RPC error code in the body, if any
		contains     string
	}{
		{"ping", "POST", ping, withSession(), 200, 0, `"result":{}`},
		{"no Accept", "POST", ping, withSession("Accept", "-"), 406, CodeInvalidRequest, ""},
		{"Accept JSON only", "POST", ping, withSession("Accept", "application/json"), 406, CodeInvalidRequest, ""},
		{"Accept SSE only", "POST", ping, withSession("Accept", "text/event-stream"), 406, CodeInvalidRequest, ""},
		{"Accept wildcard", "POST", ping, withSession("Accept", "*/*"), 200, 0, `"result":{}`},
		{"Accept type wildcards", "POST", ping, withSession("Accept", "application/*;q=0.9, text/*"), 200, 0, `"result":{}`},
		{"Accept in another case and order", "POST", ping, withSession("Accept", "TEXT/Event-Stream,Application/JSON"), 200, 0, `"result":{}`},
		{"Accept wildcard of the wrong type", "POST", ping, withSession("Accept", "application/json, application/*"), 406, CodeInvalidRequest, ""},
		{"text/plain body", "POST", ping, withSession("Content-Type", "text/plain"), 415, CodeInvalidRequest, ""},
		{"JSON with charset", "POST", ping, withSession("Content-Type", "application/json; charset=utf-8"), 200, 0, `"result":{}`},
		{"body over the cap", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 2<<10) + `"}}`, withSession(), 413, CodeInvalidRequest, ""},
		{"not JSON", "POST", `{"jsonrpc":`, withSession(), 400, CodeParseError, ""},
		{"empty batch", "POST", `[]`, withSession(), 400, CodeInvalidRequest, ""},
		{"no session", "POST", ping, postHeaders(), 400, CodeInvalidRequest, "Mcp-Session-Id"},
		{"unknown session", "POST", ping, postHeaders("Mcp-Session-Id", "nope"), 404, CodeInvalidRequest, ""},
		{"unsupported version header", "POST", ping, withSession("MCP-Protocol-Version", "1999-01-01"), 400, CodeInvalidRequest, "MCP-Protocol-Version"},
		{"another supported version header", "POST", ping, withSession("MCP-Protocol-Version", Version20250326), 200, 0, `"result":{}`},
		{"no version header: 2025-03-26 assumed", "POST", ping, withSession("MCP-Protocol-Version", "-"), 200, 0, `"result":{}`},
		{"notification", "POST", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, withSession(), 202, 0, ""},
		{"response", "POST", `{"jsonrpc":"2.0","id":99,"result":{}}`, withSession(), 202, 0, ""},
		{"invalid message", "POST", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, withSession(), 400, CodeInvalidRequest, `"id":5`},
		{"batch off 2025-03-26", "POST", `[` + ping + `]`, withSession(), 400, CodeInvalidRequest, "2025-03-26"},
		{"PUT", "PUT", ping, withSession(), 405, CodeInvalidRequest, ""},
		{"GET without session", "GET", "", map[string]string{"Accept": "text/event-stream"}, 400, CodeInvalidRequest, ""},
		{"GET unknown session", "GET", "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": "nope"}, 404, CodeInvalidRequest, ""},
		{"GET not accepting SSE", "GET", "", map[string]string{"Accept": "application/json", "Mcp-Session-Id": sid}, 406, CodeInvalidRequest, ""},
		{"GET resuming an unknown stream", "GET", "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": "77_3"}, 400, CodeInvalidRequest, ""},
		{"GET with the 2026-07-28 header", "GET", "", map[string]string{"Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"}, 405, CodeInvalidRequest, ""},
		{"DELETE without session", "DELETE", "", nil, 400, CodeInvalidRequest, ""},
		{"DELETE unknown session", "DELETE", "", map[string]string{"Mcp-Session-Id": "nope"}, 404, CodeInvalidRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := doHTTP(t, tc.method, ts.URL, tc.body, tc.header)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != 0 {
				if got := field(t, r.body, "error.code"); got != tc.code {
					t.Fatalf("code %v, want %v: %s", got, tc.code, r.body)
				}
			}
			if !strings.Contains(r.body, tc.contains) {
				t.Fatalf("body %s does not contain %q", r.body, tc.contains)
			}
			if r.status == 202 && r.body != "" {
				t.Fatalf("202 with a body: %s", r.body)
			}
		})
	}
}

// TestHTTPBatchOn20250326: a batch is answered on one response, a JSON
// array of every response, notifications aside.
func TestHTTPBatchOn20250326(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	sid := legacySession(t, ts.URL, Version20250326)
	r := doHTTP(t, "POST", ts.URL, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}},{"jsonrpc":"2.0","id":3,"method":"nope"}]`,
		postHeaders("Mcp-Session-Id", sid))
	var answers []map[string]any
	if err := json.Unmarshal([]byte(r.body), &answers); err != nil || r.status != 200 {
		t.Fatalf("batch answer %d: %s", r.status, r.body)
	}
	ids := map[float64]bool{}
	for _, a := range answers {
		ids[a["id"].(float64)] = true
	}
	if len(answers) != 3 || !ids[1] || !ids[2] || !ids[3] {
		t.Fatalf("batch answer %s", r.body)
	}
	// Notifications and responses alone are accepted.
	if a := doHTTP(t, "POST", ts.URL, `[{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":9,"result":{}}]`, postHeaders("Mcp-Session-Id", sid)); a.status != 202 {
		t.Fatalf("notification batch: %d %s", a.status, a.body)
	}
}

// TestHTTPModernRules checks every status code and header rule of the
// 2026-07-28 Streamable HTTP, in the order the conformance suite probes.
func TestHTTPModernRules(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	srv.AddTool(Tool{Name: "headers", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"dry":{"type":"boolean","x-mcp-header":"Dry"},
		"nested":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("ok")}}, nil
		})
	ts := serveHTTP(t, srv)
	call := func(args string) string {
		return modernRequest("7", "tools/call", `"name":"headers","arguments":`+args)
	}
	list := modernRequest("5", "tools/list", "")
	cases := []struct {
		name   string
		method string
		body   string
		header map[string]string
		status int
		code   float64
		id     any // the id the error must echo
	}{
		{"tools/list", "POST", list, modernHeaders("tools/list"), 200, 0, 5.0},
		{"notification", "POST", `{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, modernHeaders("notifications/x"), 202, 0, nil},
		{"version header missing", "POST", list, modernHeaders("tools/list", "MCP-Protocol-Version", "-"), 400, CodeHeaderMismatch, 5.0},
		{"_meta missing", "POST", `{"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}}`, modernHeaders("server/discover"), 400, CodeInvalidParams, 101.0},
		{"_meta without capabilities", "POST", `{"jsonrpc":"2.0","id":104,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, modernHeaders("server/discover"), 400, CodeInvalidParams, 104.0},
		{"header and _meta differ", "POST", strings.Replace(list, `"2026-07-28"`, `"v999.0.0"`, 1), modernHeaders("tools/list"), 400, CodeHeaderMismatch, 5.0},
		{"unsupported version", "POST", strings.Replace(list, `"2026-07-28"`, `"v999.0.0"`, 1), modernHeaders("tools/list", "MCP-Protocol-Version", "v999.0.0"), 400, CodeUnsupportedProtocolVersion, 5.0},
		{"Mcp-Method missing", "POST", list, modernHeaders("tools/list", "Mcp-Method", "-"), 400, CodeHeaderMismatch, 5.0},
		{"Mcp-Method differs", "POST", list, modernHeaders("prompts/list"), 400, CodeHeaderMismatch, 5.0},
		{"Mcp-Method in another case", "POST", list, modernHeaders("TOOLS/LIST"), 400, CodeHeaderMismatch, 5.0},
		{"unknown method", "POST", modernRequest("6", "unknown/method", ""), modernHeaders("unknown/method"), 404, CodeMethodNotFound, 6.0},
		{"initialize", "POST", modernRequest("6", "initialize", ""), modernHeaders("initialize"), 404, CodeMethodNotFound, 6.0},
		{"ping", "POST", modernRequest("6", "ping", ""), modernHeaders("ping"), 404, CodeMethodNotFound, 6.0},
		{"undeclared capability", "POST", modernRequest("8", "tools/call", `"name":"ask_sampling","arguments":{"message":"hi"}`), modernHeaders("tools/call", "Mcp-Name", "ask_sampling"), 400, CodeMissingRequiredClientCapability, 8.0},
		{"Mcp-Name missing", "POST", call(`{}`), modernHeaders("tools/call"), 400, CodeHeaderMismatch, 7.0},
		{"Mcp-Name differs", "POST", call(`{}`), modernHeaders("tools/call", "Mcp-Name", "wrong_tool_name"), 400, CodeHeaderMismatch, 7.0},
		{"Mcp-Name", "POST", call(`{}`), modernHeaders("tools/call", "Mcp-Name", "headers"), 200, 0, 7.0},
		{"Mcp-Name with spaces around", "POST", call(`{}`), modernHeaders("tools/call", "Mcp-Name", "  headers  "), 200, 0, 7.0},
		{"Mcp-Name in base64", "POST", call(`{}`), modernHeaders("tools/call", "Mcp-Name", "=?base64?aGVhZGVycw==?="), 200, 0, 7.0},
		{"resources/read Mcp-Name", "POST", modernRequest("9", "resources/read", `"uri":"file:///a%20b.txt"`), modernHeaders("resources/read", "Mcp-Name", "file:///x"), 400, CodeHeaderMismatch, 9.0},
		{"params mirrored", "POST", call(`{"region":"us-west1","count":42,"dry":false,"nested":{"zone":"b"}}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Region", "us-west1", "Mcp-Param-Count", "42.0", "Mcp-Param-Dry", "false", "Mcp-Param-Zone", "b"), 200, 0, 7.0},
		{"param in base64", "POST", call(`{"region":"Hello"}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Region", "=?base64?SGVsbG8=?="), 200, 0, 7.0},
		{"param literal that looks half encoded", "POST", call(`{"region":"=?base64?SGVsbG8="}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Region", "=?base64?SGVsbG8="), 200, 0, 7.0},
		{"param with bad padding", "POST", call(`{"region":"Hello"}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Region", "=?base64?SGVsbG8?="), 400, CodeHeaderMismatch, 7.0},
		{"param with bad characters", "POST", call(`{"region":"Hello"}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Region", "=?base64?SGVs!!!bG8=?="), 400, CodeHeaderMismatch, 7.0},
		{"param missing", "POST", call(`{"region":"us"}`), modernHeaders("tools/call", "Mcp-Name", "headers"), 400, CodeHeaderMismatch, 7.0},
		{"param differs", "POST", call(`{"count":42}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Count", "41"), 400, CodeHeaderMismatch, 7.0},
		{"param for an absent argument", "POST", call(`{"dry":null}`), modernHeaders("tools/call", "Mcp-Name", "headers", "Mcp-Param-Dry", "true"), 400, CodeHeaderMismatch, 7.0},
		{"batch", "POST", "[" + list + "]", modernHeaders("tools/list"), 400, CodeInvalidRequest, nil},
		{"response", "POST", `{"jsonrpc":"2.0","id":1,"result":{}}`, modernHeaders("x"), 400, CodeInvalidRequest, nil},
		{"GET", "GET", "", map[string]string{"Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"}, 405, CodeInvalidRequest, nil},
		{"DELETE", "DELETE", "", map[string]string{"MCP-Protocol-Version": "2026-07-28"}, 405, CodeInvalidRequest, nil},
		{"no Accept", "POST", list, modernHeaders("tools/list", "Accept", "-"), 406, CodeInvalidRequest, nil},
		{"wrong Content-Type", "POST", list, modernHeaders("tools/list", "Content-Type", "text/plain"), 415, CodeInvalidRequest, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := doHTTP(t, tc.method, ts.URL, tc.body, tc.header)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if r.status == 202 {
				return
			}
			if got := field(t, r.body, "error.code"); tc.code != 0 && got != tc.code || tc.code == 0 && got != nil {
				t.Fatalf("code %v, want %v: %s", got, tc.code, r.body)
			}
			if got := field(t, r.body, "id"); got != tc.id {
				t.Fatalf("id %v, want %v: %s", got, tc.id, r.body)
			}
			if strings.Contains(r.body, `"id":null`) {
				t.Fatalf("an id null on the 2026-07-28 wire: %s", r.body)
			}
			if r.header.Get("Mcp-Session-Id") != "" {
				t.Fatal("a 2026-07-28 response carries a session id")
			}
		})
	}
}

// orderedProgress returns a progress callback that checks reports come
// once each, in order, and signals on reached when report mark arrives.
func orderedProgress(t *testing.T, mark float64, reached chan<- struct{}) (func(Progress), *int) {
	count := 0
	return func(p Progress) {
		count++
		if p.Progress != float64(count) {
			t.Errorf("report %d is %g: lost, repeated or out of order", count, p.Progress)
		}
		if p.Progress == mark && reached != nil {
			close(reached)
		}
	}, &count
}

// TestHTTPResumeAfterServerClosesStream: on 2025-11-25 a handler may end
// its SSE stream early (polling); the client comes back with GET and
// Last-Event-ID after the retry hint and gets the rest, nothing lost or
// repeated.
func TestHTTPResumeAfterServerClosesStream(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	srv.AddTool(Tool{Name: "poll"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		for i := 1; i <= 60; i++ {
			if i%20 == 0 {
				req.CloseStream(10 * time.Millisecond)
			}
			g.Progress(float64(i), 60, "")
		}
		return &CallToolResult{Content: []Content{TextContent("polled")}}, nil
	})
	cl := connectHTTP(t, srv, WithProtocolVersion(Version20251125))
	progress, count := orderedProgress(t, 0, nil)
	res, err := cl.CallTool(context.Background(), "poll", nil, WithProgress(progress))
	if err != nil {
		t.Fatal(err)
	}
	if *count != 60 || res.Content[0].Text != "polled" {
		t.Fatalf("%d reports, result %+v", *count, res)
	}
}

// cuttingTransport cuts the first SSE response of a POST when its cut
// function is called, as a network failure would.
type cuttingTransport struct {
	mu   sync.Mutex
	body io.ReadCloser // the response to cut, once known
	cut  bool
}

func (c *cuttingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		return resp, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body == nil {
		c.body = resp.Body
	}
	return resp, nil
}

func (c *cuttingTransport) cutNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body != nil && !c.cut {
		c.cut = true
		c.body.Close()
	}
}

// TestHTTPResumeAfterDroppedConnection: the connection of a POST's SSE
// stream breaks mid-call (on a legacy session that is not a
// cancellation); the client resumes with GET and Last-Event-ID and every
// report and the result arrive once, in order.
func TestHTTPResumeAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20250326, Version20251125} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv := newTestServer()
			srv.AddTool(Tool{Name: "halves"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				g := req.Gateway()
				for i := 1; i <= 100; i++ {
					if i == 51 {
						select {
						case <-release:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
					}
					g.Progress(float64(i), 100, "")
				}
				return &CallToolResult{Content: []Content{TextContent("whole")}}, nil
			})
			ts := serveHTTP(t, srv)
			cut := &cuttingTransport{}
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
			if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHTTPClient(&http.Client{Transport: cut}), WithoutStandaloneStream())); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			half := make(chan struct{})
			progress, count := orderedProgress(t, 50, half)
			go func() {
				<-half
				cut.cutNow()
				close(release)
			}()
			res, err := cl.CallTool(context.Background(), "halves", nil, WithProgress(progress))
			if err != nil {
				t.Fatal(err)
			}
			if *count != 100 || res.Content[0].Text != "whole" {
				t.Fatalf("%d reports, result %+v", *count, res)
			}
			if !cut.cut {
				t.Fatal("the stream was never cut")
			}
		})
	}
}

// TestHTTPResumeRaw: on the wire, a GET with Last-Event-ID replays exactly
// the events after it and then the rest of the stream; an id whose events
// were evicted is refused.
func TestHTTPResumeRaw(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTestServer()
	srv.AddTool(Tool{Name: "gated"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Gateway().Progress(1, 3, "")
		req.Gateway().Progress(2, 3, "")
		<-release
		req.Gateway().Progress(3, 3, "")
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	ts := serveHTTP(t, srv)
	sid := legacySession(t, ts.URL, Version20251125)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gated","_meta":{"progressToken":"p"}}}`))
	for k, v := range postHeaders("Mcp-Session-Id", sid) {
		req.Header.Set(k, v)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	p := newSSEParser(resp.Body, 1<<20)
	var ids []string
	for len(ids) < 3 { // the priming event and two reports
		e, err := p.next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.id)
	}
	cancel() // the client drops the connection after the first report
	resp.Body.Close()
	close(release)
	get := func(last string) httpReply {
		return doHTTP(t, "GET", ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": last})
	}
	r := get(ids[1])
	var got []string
	p = newSSEParser(strings.NewReader(r.body), 1<<20)
	for {
		e, err := p.next()
		if err != nil {
			break
		}
		if len(e.data) > 0 {
			got = append(got, e.id+" "+fmt.Sprint(field(t, string(e.data), "params.progress"), field(t, string(e.data), "id")))
		}
	}
	stream, _, _ := parseEventID(ids[0])
	want := []string{stream + "_2 2 <nil>", stream + "_3 3 <nil>", stream + "_4 <nil> 1"}
	if r.status != 200 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay %d: got %v, want %v", r.status, got, want)
	}
	// Resuming after the last event replays nothing and ends.
	if r := get(stream + "_4"); r.status != 200 || r.body != "" {
		t.Fatalf("resuming after the last event: %d %q", r.status, r.body)
	}

	emitted, hold := make(chan struct{}), make(chan struct{})
	defer close(hold)
	chatty := newTestServer()
	chatty.AddTool(Tool{Name: "chatty"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		for i := 1; i <= 30; i++ {
			req.Gateway().Progress(float64(i), 0, "")
		}
		close(emitted)
		<-hold
		return nil, nil
	})
	tiny := serveHTTP(t, chatty, WithEventStore(NewMemoryEventStore(200)))
	sid = legacySession(t, tiny.URL, Version20251125)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "POST", tiny.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":"p"}}}`))
	for k, v := range postHeaders("Mcp-Session-Id", sid) {
		req.Header.Set(k, v)
	}
	resp, err = testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := newSSEParser(resp.Body, 1<<20).next()
	cancel()
	resp.Body.Close()
	<-emitted
	if r := doHTTP(t, "GET", tiny.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": first.id}); r.status != 400 {
		t.Fatalf("resuming evicted events: %d %s", r.status, r.body)
	}
}

// TestHTTPStandaloneStream: messages that belong to no request reach the
// client on the session's GET stream; a second GET is refused; a server
// without one answers 405 and the client does without.
func TestHTTPStandaloneStream(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20250326, Version20251125} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			srv := newTestServer()
			changed := make(chan struct{}, 10)
			cl := connectHTTP(t, srv, WithProtocolVersion(v), WithNotificationHandler("notifications/tools/list_changed", func(context.Context, json.RawMessage) {
				changed <- struct{}{}
			}))
			srv.AddTool(Tool{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("list_changed never arrived on the GET stream")
			}
			if _, err := cl.ListTools(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("second GET", func(t *testing.T) {
		t.Parallel()
		ts := serveHTTP(t, newTestServer())
		sid := legacySession(t, ts.URL, Version20251125)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := testHTTPClient.Do(req)
		if err != nil || resp.StatusCode != 200 || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
			t.Fatalf("GET: %v %v", resp, err)
		}
		defer resp.Body.Close()
		if r := doHTTP(t, "GET", ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}); r.status != 409 {
			t.Fatalf("second GET: %d %s", r.status, r.body)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		srv := newTestServer()
		ts := serveHTTP(t, srv, WithoutStandaloneStream())
		sid := legacySession(t, ts.URL, Version20251125)
		if r := doHTTP(t, "GET", ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}); r.status != 405 {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		srv.AddTool(Tool{Name: "late"}, nil) // dropped: nowhere to go
		if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
	})
}

// serveDirect calls h with a request built from the arguments, without a
// network, and returns the recorded response.
func serveDirect(h http.Handler, method, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// directSession initializes a legacy session on h without a network.
func directSession(tb testing.TB, h http.Handler) string {
	rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
	sid := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != 200 || sid == "" {
		tb.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, postHeaders("Mcp-Session-Id", sid)); rec.Code != 202 {
		tb.Fatalf("initialized: %d %s", rec.Code, rec.Body)
	}
	return sid
}

// TestHTTPWriteDeadlineSparesLiveStreams: http.Server's WriteTimeout would
// cut a long SSE response; the handler's per-write deadline replaces it,
// so a stream that keeps moving lives on.
func TestHTTPWriteDeadlineSparesLiveStreams(t *testing.T) {
	t.Parallel()
	ts := httptest.NewUnstartedServer(NewHTTPHandler(newTestServer(), WithWriteTimeout(time.Second)))
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	defer ts.Close()
	for _, v := range eras {
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithoutStandaloneStream())); err != nil {
			t.Fatal(err)
		}
		res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": 10, "delayMs": 40}, WithProgress(func(Progress) {}))
		if err != nil || res.Content[0].Text != "10 steps" {
			t.Fatalf("%s: a 400ms stream under a 100ms server write timeout: %+v %v", v, res, err)
		}
		cl.Close()
	}
}

// TestHTTPKeepAlive: a quiet SSE stream gets comment lines: a legacy
// session's GET stream and a 2026-07-28 listen stream.
func TestHTTPKeepAlive(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer(), WithKeepAlive(10*time.Millisecond))
	sid := legacySession(t, ts.URL, Version20251125)
	get, _ := http.NewRequest("GET", ts.URL, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	listen, _ := http.NewRequest("POST", ts.URL, strings.NewReader(modernRequest(`"sub-1"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)))
	for k, v := range modernHeaders("subscriptions/listen") {
		listen.Header.Set(k, v)
	}
	for _, req := range []*http.Request{get, listen} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := testHTTPClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		for err == nil && !strings.HasPrefix(line, ":") {
			line, err = br.ReadString('\n')
		}
		if err != nil {
			t.Fatalf("%s: no comment: %v", req.Method, err)
		}
	}
}

// TestHTTPListenStream: subscriptions/listen (2026-07-28) is a long-lived
// SSE response: the acknowledgement first, then the changes asked for;
// the client closing it ends the subscription.
func TestHTTPListenStream(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	ts := serveHTTP(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(modernRequest(`"sub-1"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)))
	for k, v := range modernHeaders("subscriptions/listen") {
		req.Header.Set(k, v)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		t.Fatalf("listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := newSSEParser(resp.Body, 1<<20)
	next := func() string {
		for {
			e, err := p.next()
			if err != nil {
				t.Fatal(err)
			}
			if len(e.data) > 0 {
				return string(e.data)
			}
		}
	}
	if m := next(); field(t, m, "method") != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first event %s", m)
	}
	srv.AddTool(Tool{Name: "added"}, nil)
	if m := next(); field(t, m, "method") != "notifications/tools/list_changed" || !strings.Contains(m, `"sub-1"`) {
		t.Fatalf("second event %s", m)
	}
	cancel()
	resp.Body.Close()
	for {
		srv.sessionsMu.Lock()
		n := len(srv.listeners)
		srv.sessionsMu.Unlock()
		if n == 0 {
			break
		}
		runtime.Gosched()
	}
}

// TestHTTPShutdown: when the handler's context ends, open streams close so
// that http.Server.Shutdown returns, and new requests get 503.
func TestHTTPShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	srv := newTestServer()
	ts := httptest.NewServer(NewHTTPHandler(srv, WithContext(ctx)))
	defer ts.Close()
	sid := legacySession(t, ts.URL, Version20251125)
	get := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("GET", ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := testHTTPClient.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get <- err
	}()
	for {
		h := ts.Config.Handler.(*httpHandler)
		st := h.session(sid).standaloneStream()
		st.mu.Lock()
		attached := st.attached
		st.mu.Unlock()
		if attached {
			break
		}
		runtime.Gosched()
	}
	// And a 2026-07-28 subscription, which ends with its closing result.
	listen := make(chan string, 1)
	go func() {
		r := doHTTP(t, "POST", ts.URL, modernRequest(`"sub"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`), modernHeaders("subscriptions/listen"))
		listen <- r.body
	}()
	for {
		srv.sessionsMu.Lock()
		n := len(srv.listeners)
		srv.sessionsMu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-get; err != nil {
		t.Fatalf("the GET stream did not end cleanly: %v", err)
	}
	if body := <-listen; !strings.Contains(body, `"id":"sub","result"`) {
		t.Fatalf("the listen stream ended without its result: %s", body)
	}
	shutdown, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if r := doHTTP(t, "POST", ts.URL, modernRequest("1", "server/discover", ""), modernHeaders("server/discover")); r.status != 503 {
		t.Fatalf("after shutdown: %d", r.status)
	}
	if err := ts.Config.Shutdown(shutdown); err != nil {
		t.Fatal(err)
	}
}

// TestTransportsGateway: every kind of ask and notification a handler
// makes reaches the client on every carrier and era: over HTTP a live ask
// rides the POST's SSE stream and its answer is POSTed back (older
// revisions), or the call is replayed with the answers (2026-07-28).
func TestTransportsGateway(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, connect func(*Server, ...ClientOption) *Client) {
		for _, v := range eras {
			t.Run(v, func(t *testing.T) {
				custom := make(chan string, 1)
				opts := append(gatewayClientOptions(), WithProtocolVersion(v), WithNotificationHandler("notifications/custom", func(ctx context.Context, params json.RawMessage) {
					custom <- string(params)
				}))
				cl := connect(newTestServer(), opts...)
				cases := []struct {
					tool string
					args any
					want string
				}{
					{"ask_elicitation", gatewayArgs{Message: "Your name?"}, `{"action":"accept","content":{"name":"Ada"}}`},
					{"ask_url", gatewayArgs{Message: "Connect", URL: "https://example.com/connect"}, `{"action":"accept"}`},
					{"ask_sampling", gatewayArgs{Message: "hi"}, `{"role":"assistant","content":{"type":"text","text":"sampled: hi"},"model":"test-model","stopReason":"endTurn"}`},
					{"ask_roots", nil, `{"roots":[{"uri":"file:///work","name":"work"}]}`},
					{"capabilities", nil, `{"elicitation":true,"elicitationURL":true,"roots":true,"sampling":true,"samplingContext":false,"samplingTools":true,"ui":true}`},
				}
				for _, tc := range cases {
					if got := callText(t, cl, tc.tool, tc.args); !jsonEqual(got, tc.want) {
						t.Errorf("%s: got %s, want %s", tc.tool, got, tc.want)
					}
				}
				if got := callText(t, cl, "notify", nil); got != `"notified"` {
					t.Fatalf("notify: %s", got)
				}
				if got := <-custom; got != `{"hello":"world"}` {
					t.Fatalf("custom notification: %s", got)
				}
			})
		}
	})
}

// TestHTTPConnectToNonMCPEndpoint: Connect to an HTTP server that is not an
// MCP server fails promptly with an error naming what came back.
func TestHTTPConnectToNonMCPEndpoint(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.Handler{
		"404":  http.NotFoundHandler(),
		"html": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hello</html>") }),
		"empty JSON": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
		}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(h)
			defer ts.Close()
			cl := NewClient(Implementation{Name: "c", Version: "1"})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := cl.Connect(ctx, NewHTTPTransport(ts.URL))
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Connect = %v (ctx %v)", err, ctx.Err())
			}
		})
	}
}

// TestHTTPStatelessLeavesNothingBehind: 2026-07-28 requests, finished or
// abandoned by their client, leave no goroutine on the server.
func TestHTTPStatelessLeavesNothingBehind(t *testing.T) {
	srv, started, cancelled := blockingServer()
	h := NewHTTPHandler(srv)
	before := runtime.NumGoroutine()
	for i := range 200 {
		if rec := serveDirect(h, "POST", modernRequest(fmt.Sprint(i), "tools/call", `"name":"progress","arguments":{"steps":3}`), modernHeaders("tools/call", "Mcp-Name", "progress")); rec.Code != 200 {
			t.Fatalf("call %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, "POST", "/mcp", strings.NewReader(modernRequest(fmt.Sprint(i), "tools/call", `"name":"wait"`)))
		for k, v := range modernHeaders("tools/call", "Mcp-Name", "wait") {
			req.Header.Set(k, v)
		}
		done := make(chan struct{})
		go func() {
			h.ServeHTTP(httptest.NewRecorder(), req)
			close(done)
		}()
		<-started
		cancel()
		<-done
		<-cancelled
	}
	settleGoroutines(t, before)
}

// BenchmarkHTTPCallTool measures one tools/call round trip over Streamable
// HTTP on 127.0.0.1, per era, from several goroutines at once.
func BenchmarkHTTPCallTool(b *testing.B) {
	for _, v := range eras {
		b.Run(v, func(b *testing.B) {
			cl := connectHTTP(b, newTestServer(), WithProtocolVersion(v))
			args := map[string]string{"text": "hello"}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cl.CallTool(context.Background(), "echo", args); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// The echo exchange of the HTTP floors, and the server answering it: it
// reads the body and writes a fixed answer, decoding no JSON.
var (
	httpFloorRequest  = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	httpFloorResponse = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)
)

func floorServer(b *testing.B) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(httpFloorResponse)
	}))
	b.Cleanup(ts.Close)
	return ts
}

// BenchmarkHTTPServerFloor is net/http's server alone: the floor's handler
// on 127.0.0.1, sent the same POST (with the headers our client sends on
// 2025-11-25) by a client that writes fixed bytes on one connection and
// reads the answer with a reused buffer, so that what it allocates is the
// server's. Any SDK that serves an http.Handler allocates at least this
// per call.
func BenchmarkHTTPServerFloor(b *testing.B) {
	body := string(httpFloorRequest)
	ts := floorServer(b)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	request := []byte("POST / HTTP/1.1\r\nHost: " + ts.Listener.Addr().String() + "\r\nUser-Agent: Go-http-client/1.1\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
		"Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: FPG3TEZAN56CDB62CRG2WGG6YS\r\nAccept-Encoding: gzip\r\n\r\n" + body)
	want := "\r\n\r\n" + string(httpFloorResponse)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(request); err != nil {
			b.Fatal(err)
		}
		n := 0
		for !bytes.HasSuffix(buf[:n], []byte(want)) {
			m, err := conn.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
		}
	}
}

// BenchmarkHTTPFloor is the floor an HTTP round trip is compared to:
// net/http alone, on 127.0.0.1, POSTing the echo request and answering the
// echo response as JSON (a handler that reads the body and writes a fixed
// answer), with the client pool the transports use. No JSON is decoded.
func BenchmarkHTTPFloor(b *testing.B) {
	request := httpFloorRequest
	ts := floorServer(b)
	hc := defaultHTTPClient()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", ts.URL, bytes.NewReader(request))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
}

// TestHTTPStandaloneStreamResumes: messages sent while the GET stream was
// down are replayed when the client comes back with Last-Event-ID.
func TestHTTPStandaloneStreamResumes(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	ts := serveHTTP(t, srv)
	sid := legacySession(t, ts.URL, Version20251125)
	open := func(last string) (*http.Response, *sseParser, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := testHTTPClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %v %v", resp, err)
		}
		return resp, newSSEParser(resp.Body, 1<<20), cancel
	}
	nextData := func(p *sseParser) sseEvent {
		for {
			e, err := p.next()
			if err != nil {
				t.Fatal(err)
			}
			if len(e.data) > 0 {
				return e
			}
		}
	}
	resp, p, cancel := open("")
	srv.AddTool(Tool{Name: "one"}, nil)
	first := nextData(p)
	cancel()
	resp.Body.Close()
	// Wait until the server noticed: the stream has no writer.
	st := ts.Config.Handler.(*httpHandler).session(sid).standaloneStream()
	for {
		st.mu.Lock()
		attached := st.attached
		st.mu.Unlock()
		if !attached {
			break
		}
		runtime.Gosched()
	}
	srv.AddPrompt(Prompt{Name: "missed"}, nil)
	resp, p, cancel = open(first.id)
	defer func() {
		cancel()
		resp.Body.Close()
	}()
	if e := nextData(p); field(t, string(e.data), "method") != "notifications/prompts/list_changed" {
		t.Fatalf("resumed with %s (id %s after %s)", e.data, e.id, first.id)
	}
}

// TestHTTPProgressIsLive: a request runs on its POST's handler goroutine,
// and what it sends before its answer goes out at once, on a writer of
// its own: here the tool waits, mid-call, until the client has seen its
// first report.
func TestHTTPProgressIsLive(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			seen := make(chan struct{})
			srv := newTestServer()
			srv.AddTool(Tool{Name: "handshake"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				req.Gateway().Progress(1, 2, "sent")
				select {
				case <-seen:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				req.Gateway().Progress(2, 2, "acknowledged")
				return &CallToolResult{Content: []Content{TextContent("live")}}, nil
			})
			cl := connectHTTP(t, srv, WithProtocolVersion(v))
			var once sync.Once
			res, err := cl.CallTool(context.Background(), "handshake", nil, WithTimeout(10*time.Second), WithProgress(func(Progress) {
				once.Do(func() { close(seen) })
			}))
			if err != nil || res.Content[0].Text != "live" {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
		})
	}
}

// TestHTTPErrorTextsSayWhatHappened: an error names the header that is
// missing or repeated rather than comparing an empty value, and a body that
// is not JSON is answered with where it broke.
func TestHTTPErrorTextsSayWhatHappened(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	list := modernRequest("5", "tools/list", "")
	call := modernRequest("7", "tools/call", `"name":"echo","arguments":{}`)
	cases := []struct {
		name   string
		body   string
		header map[string]string
		twice  string // a header sent a second time
		want   string
	}{
		{"Mcp-Method missing", list, modernHeaders("tools/list", "Mcp-Method", "-"), "",
			`Header mismatch: the Mcp-Method header is required (it names the method, "tools/list")`},
		{"Mcp-Method twice", list, modernHeaders("tools/list"), "Mcp-Method",
			`Header mismatch: the Mcp-Method header must be sent once, not 2 times (it names the method, "tools/list")`},
		{"version header missing", list, modernHeaders("tools/list", "MCP-Protocol-Version", "-"), "",
			"Header mismatch: the MCP-Protocol-Version header is required"},
		{"Mcp-Name missing", call, modernHeaders("tools/call"), "",
			"Header mismatch: the Mcp-Name header is required for tools/call"},
		{"body not JSON", `{"jsonrpc":"2.0","id" 1}`, modernHeaders("tools/list"), "",
			"Parse error: the body is not valid JSON: invalid character '1' after object key at byte 23"},
		{"body cut short", `{"jsonrpc":"2.0","id":1,`, postHeaders(), "",
			"Parse error: the body is not valid JSON: unexpected end of JSON input after 24 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", ts.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.twice != "" {
				req.Header.Add(tc.twice, req.Header.Get(tc.twice))
			}
			resp, err := testHTTPClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got, _ := field(t, string(b), "error.message").(string); got != tc.want {
				t.Errorf("status %d, message\n got %q\nwant %q", resp.StatusCode, got, tc.want)
			}
		})
	}
}
