package mcpotel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e6ac58cb/mcp"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

var (
	versions   = []string{mcp.Version20251125, mcp.Version20260728}
	transports = []string{"stdio", "http"}
)

// testServer is a server with the tools, prompt and resource the tests
// call: "ask" asks the client twice, "steps" reports progress twice.
// started, when not nil, hears from the "block" tool once it runs.
func testServer(p *peer, started chan<- struct{}, more ...mcp.ServerOption) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "otel-test", Version: "1"}, p.serverOptions(more...)...)
	srv.AddTool(mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(req.Params.Arguments))}}, nil
		})
	srv.AddTool(mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("the tool failed")
		})
	srv.AddTool(mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if started != nil {
				started <- struct{}{}
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	srv.AddTool(mcp.Tool{Name: "panic", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("the tool panicked")
		})
	srv.AddTool(mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, key := range []string{"first", "second"} {
				if _, err := req.Gateway().Elicit(ctx, key+"?", nil, mcp.WithKey(key)); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("asked twice")}}, nil
		})
	srv.AddTool(mcp.Tool{Name: "steps", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(1, 2, "half")
			req.Gateway().Progress(2, 2, "done")
			return &mcp.CallToolResult{}, nil
		})
	srv.AddPrompt(mcp.Prompt{Name: "greet"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{}}, nil
	})
	srv.AddResource(mcp.Resource{URI: "file:///report.txt", Name: "report"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: "file:///report.txt", Text: "ok"}}}, nil
	})
	return srv
}

func newClient(p *peer, more ...mcp.ClientOption) *mcp.Client {
	return mcp.NewClient(mcp.Implementation{Name: "otel-test-client", Version: "1"}, p.clientOptions(more...)...)
}

// sessionIDs says which spans of a pair carry mcp.session.id.
type sessionIDs int

const (
	sessionNone   sessionIDs = iota
	sessionBoth              // the same on both
	sessionServer            // initialize over HTTP: the client learns it from the answer
)

// each runs fn as a parallel subtest for each name.
func each(t *testing.T, names []string, fn func(t *testing.T, name string)) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, name)
		})
	}
}

// callAsk calls the "ask" tool over transport on revision v, the client
// answering both asks, and returns the two sides' telemetry.
func callAsk(t *testing.T, transport, v string) (cp, sp *peer) {
	t.Helper()
	cp, sp = newPeer(), newPeer()
	asked := 0
	cl := newClient(cp, mcp.WithProtocolVersion(v),
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"answer": "yes"}}, nil
		}))
	connect(t, transport, testServer(sp, nil), cl)
	res, err := cl.CallTool(context.Background(), "ask", nil)
	if err != nil || res.IsError || asked != 2 {
		t.Fatalf("CallTool: %+v, %v after %d asks, want 2", res, err, asked)
	}
	return cp, sp
}

// checkPair checks a CLIENT span and the SERVER span it caused: one
// trace, the server span the client span's child through the message,
// both named name and carrying exactly want, plus the same request id
// and the session ids session says.
func checkPair(t *testing.T, client, server sdktrace.ReadOnlySpan, name string, want map[string]string, session sessionIDs) {
	t.Helper()
	for _, s := range []sdktrace.ReadOnlySpan{client, server} {
		if s.Name() != name {
			t.Errorf("%s span named %q, want %q", s.SpanKind(), s.Name(), name)
		}
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || server.SpanContext().TraceID() != client.SpanContext().TraceID() {
		t.Errorf("server span's parent %s in trace %s; want the client span %s of trace %s",
			server.Parent().SpanID(), server.SpanContext().TraceID(), client.SpanContext().SpanID(), client.SpanContext().TraceID())
	}
	if !server.Parent().IsRemote() {
		t.Errorf("server span's parent is not remote: it did not come through the message")
	}
	ca, sa := attrs(client.Attributes()), attrs(server.Attributes())
	if ca["jsonrpc.request.id"] == "" || ca["jsonrpc.request.id"] != sa["jsonrpc.request.id"] {
		t.Errorf("jsonrpc.request.id: client %q, server %q; want the same, not empty", ca["jsonrpc.request.id"], sa["jsonrpc.request.id"])
	}
	switch cs, ss := ca["mcp.session.id"], sa["mcp.session.id"]; session {
	case sessionNone, sessionBoth:
		if (cs != "") != (session == sessionBoth) || cs != ss {
			t.Errorf("mcp.session.id: client %q, server %q; want the same, set %v", cs, ss, session == sessionBoth)
		}
	case sessionServer:
		if cs != "" || ss == "" {
			t.Errorf("mcp.session.id: client %q, server %q; want it on the server only", cs, ss)
		}
	}
	for _, m := range []map[string]string{ca, sa} {
		delete(m, "jsonrpc.request.id")
		delete(m, "mcp.session.id")
	}
	if !maps.Equal(ca, want) {
		t.Errorf("client span attributes\n got %v\nwant %v", ca, want)
	}
	if !maps.Equal(sa, want) {
		t.Errorf("server span attributes\n got %v\nwant %v", sa, want)
	}
}

// TestTraceAcrossTransports: a call from the client to the server over
// stdio framing and over HTTP, on both eras, is one trace: the client's
// CLIENT span is the parent of the server's SERVER span, both named and
// attributed as the conventions say, and a span in the caller's context
// is the client span's parent.
func TestTraceAcrossTransports(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, v := range versions {
			t.Run(transport+"/"+v, func(t *testing.T) {
				t.Parallel()
				cp, sp := newPeer(), newPeer()
				cl := newClient(cp, mcp.WithProtocolVersion(v))
				connect(t, transport, testServer(sp, nil), cl)
				session := sessionNone
				if transport == "http" && v == mcp.Version20251125 {
					session = sessionBoth
				}

				ctx, caller := cp.tp.Tracer("test").Start(context.Background(), "caller")
				if _, err := cl.CallTool(ctx, "echo", map[string]any{"x": 1}); err != nil {
					t.Fatal(err)
				}
				if _, err := cl.GetPrompt(ctx, "greet", nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cl.ReadResource(ctx, "file:///report.txt"); err != nil {
					t.Fatal(err)
				}
				caller.End()

				tool := cp.spans.one(t, "tools/call echo", trace.SpanKindClient)
				if tool.Parent().SpanID() != caller.SpanContext().SpanID() {
					t.Errorf("client span's parent %s, want the caller's span %s", tool.Parent().SpanID(), caller.SpanContext().SpanID())
				}
				checkPair(t, tool, sp.spans.one(t, "tools/call echo", trace.SpanKindServer), "tools/call echo", map[string]string{
					"mcp.method.name": "tools/call", "mcp.protocol.version": v,
					"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
				}, session)
				checkPair(t, cp.spans.one(t, "prompts/get greet", trace.SpanKindClient), sp.spans.one(t, "prompts/get greet", trace.SpanKindServer),
					"prompts/get greet", map[string]string{
						"mcp.method.name": "prompts/get", "mcp.protocol.version": v, "gen_ai.prompt.name": "greet",
					}, session)
				checkPair(t, cp.spans.one(t, "resources/read", trace.SpanKindClient), sp.spans.one(t, "resources/read", trace.SpanKindServer),
					"resources/read", map[string]string{
						"mcp.method.name": "resources/read", "mcp.protocol.version": v, "mcp.resource.uri": "file:///report.txt",
					}, session)
				for _, s := range []sdktrace.ReadOnlySpan{tool, sp.spans.one(t, "tools/call echo", trace.SpanKindServer)} {
					if s.Status().Code != codes.Unset {
						t.Errorf("%s span status %v, want unset", s.SpanKind(), s.Status())
					}
				}
				if v == mcp.Version20251125 {
					// The handshake is traced too, its revision read from
					// the result; over HTTP the server makes the session
					// as it answers, so the client's span has none.
					initSession := sessionNone
					if transport == "http" {
						initSession = sessionServer
					}
					checkPair(t, cp.spans.one(t, "initialize", trace.SpanKindClient), sp.spans.one(t, "initialize", trace.SpanKindServer),
						"initialize", map[string]string{"mcp.method.name": "initialize", "mcp.protocol.version": v}, initSession)
				}
			})
		}
	}
}

// errorCase is a call that fails and how its spans say so.
type errorCase struct {
	name    string
	call    func(ctx context.Context, cl *mcp.Client) error
	span    string // the spans' name
	errType string // error.type on both spans
	code    string // rpc.response.status_code; empty when none
}

// TestFailuresSetErrorType: a tool result with isError, a protocol error
// (an unknown tool, a handler's panic, a method the server does not have)
// each set the status Error and error.type on the client span and the
// server span, and on their duration metrics.
func TestFailuresSetErrorType(t *testing.T) {
	cases := []errorCase{
		{name: "tool error", span: "tools/call fail", errType: "tool_error",
			call: func(ctx context.Context, cl *mcp.Client) error {
				res, err := cl.CallTool(ctx, "fail", nil)
				if err == nil && !res.IsError {
					return errors.New("the result has no isError")
				}
				return err
			}},
		{name: "unknown tool", span: "tools/call nope", errType: "-32602", code: "-32602",
			call: func(ctx context.Context, cl *mcp.Client) error {
				_, err := cl.CallTool(ctx, "nope", nil)
				return wantCode(err, mcp.CodeInvalidParams)
			}},
		{name: "panic", span: "tools/call panic", errType: "-32603", code: "-32603",
			call: func(ctx context.Context, cl *mcp.Client) error {
				_, err := cl.CallTool(ctx, "panic", nil)
				return wantCode(err, mcp.CodeInternalError)
			}},
		{name: "unknown method", span: "no/such", errType: "-32601", code: "-32601",
			call: func(ctx context.Context, cl *mcp.Client) error {
				err := cl.SendRequest(ctx, "no/such", nil, nil)
				return wantCode(err, mcp.CodeMethodNotFound)
			}},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(v+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				cp, sp := newPeer(), newPeer()
				cl := newClient(cp, mcp.WithProtocolVersion(v))
				connect(t, "stdio", testServer(sp, nil), cl)
				if err := tc.call(context.Background(), cl); err != nil {
					t.Fatal(err)
				}
				client := cp.spans.one(t, tc.span, trace.SpanKindClient)
				server := sp.spans.one(t, tc.span, trace.SpanKindServer)
				for _, s := range []sdktrace.ReadOnlySpan{client, server} {
					checkError(t, s, tc.errType, tc.code)
				}
				for _, m := range []struct {
					p    *peer
					name string
				}{{cp, "mcp.client.operation.duration"}, {sp, "mcp.server.operation.duration"}} {
					want := map[string]string{"mcp.method.name": attrs(client.Attributes())["mcp.method.name"], "mcp.protocol.version": v, "error.type": tc.errType}
					if tc.code != "" {
						want["rpc.response.status_code"] = tc.code
					}
					if n := attrs(client.Attributes())["gen_ai.tool.name"]; n != "" {
						want["gen_ai.tool.name"], want["gen_ai.operation.name"] = n, "execute_tool"
					}
					pointWith(t, histogramPoints(t, m.p.metrics, m.name), m.name, want)
				}
			})
		}
	}
}

// wantCode says what is wrong when err is not a JSON-RPC error of code.
func wantCode(err error, code int) error {
	var rpcErr *mcp.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != code {
		return fmt.Errorf("got %v, want a JSON-RPC error %d", err, code)
	}
	return nil
}

// checkError checks a failed operation's span: status Error, error.type
// and, for a JSON-RPC error, rpc.response.status_code and the error's
// message as the description.
func checkError(t *testing.T, s sdktrace.ReadOnlySpan, errType, code string) {
	t.Helper()
	a := attrs(s.Attributes())
	if s.Status().Code != codes.Error || a["error.type"] != errType || a["rpc.response.status_code"] != code {
		t.Errorf("%s span %q: status %v, error.type %q, rpc.response.status_code %q; want Error, %q, %q",
			s.SpanKind(), s.Name(), s.Status(), a["error.type"], a["rpc.response.status_code"], errType, code)
	}
	if code != "" && s.Status().Description == "" {
		t.Errorf("%s span %q: no status description; want the JSON-RPC error's message", s.SpanKind(), s.Name())
	}
}

// inBubble runs fn in a synctest bubble over stdio framing, where time is
// the bubble's; over HTTP, whose loopback sockets cannot be in a bubble,
// it runs fn as it is.
func inBubble(t *testing.T, transport string, fn func(t *testing.T)) {
	if transport == "stdio" {
		synctest.Test(t, fn)
		return
	}
	fn(t)
}

// TestCancelledCall: a call whose context is cancelled while the tool
// runs is cancelled on both spans: the client's call returns, the server's
// handler sees the cancellation and its answer is never sent.
func TestCancelledCall(t *testing.T) {
	each(t, transports, func(t *testing.T, transport string) {
		each(t, versions, func(t *testing.T, v string) {
			inBubble(t, transport, func(t *testing.T) {
				cp, sp := newPeer(), newPeer()
				started := make(chan struct{}, 1)
				cl := newClient(cp, mcp.WithProtocolVersion(v))
				connect(t, transport, testServer(sp, started), cl)
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-started
					cancel()
				}()
				if _, err := cl.CallTool(ctx, "block", nil); !errors.Is(err, context.Canceled) {
					t.Fatalf("CallTool over %s: %v, want context.Canceled", transport, err)
				}
				checkError(t, cp.spans.one(t, "tools/call block", trace.SpanKindClient), "cancelled", "")
				checkError(t, sp.spans.one(t, "tools/call block", trace.SpanKindServer), "cancelled", "")
			})
		})
	})
}

// TestTimedOutCall: a call that outlives its WithTimeout is a timeout on
// both spans: the client gives up with a *mcp.RequestTimeoutError and
// cancels the server's handler.
func TestTimedOutCall(t *testing.T) {
	each(t, transports, func(t *testing.T, transport string) {
		each(t, versions, func(t *testing.T, v string) {
			inBubble(t, transport, func(t *testing.T) {
				cp, sp := newPeer(), newPeer()
				cl := newClient(cp, mcp.WithProtocolVersion(v))
				connect(t, transport, testServer(sp, nil), cl)
				bound := 5 * time.Second
				if transport == "http" {
					bound = 50 * time.Millisecond // real time
				}
				_, err := cl.CallTool(context.Background(), "block", nil, mcp.WithTimeout(bound))
				var timeout *mcp.RequestTimeoutError
				if !errors.As(err, &timeout) {
					t.Fatalf("CallTool over %s: %v, want a *mcp.RequestTimeoutError", transport, err)
				}
				client := cp.spans.one(t, "tools/call block", trace.SpanKindClient)
				checkError(t, client, "timeout", "")
				if d := client.EndTime().Sub(client.StartTime()); transport == "stdio" && d != bound {
					t.Errorf("client span lasted %v, want the call's %v", d, bound)
				}
				// The server's handler is cancelled by the client's
				// notifications/cancelled: for the server the request was
				// cancelled, not timed out.
				checkError(t, sp.spans.one(t, "tools/call block", trace.SpanKindServer), "cancelled", "")
				pointWith(t, histogramPoints(t, cp.metrics, "mcp.client.operation.duration"), "mcp.client.operation.duration", map[string]string{
					"mcp.method.name": "tools/call", "mcp.protocol.version": v, "gen_ai.tool.name": "block",
					"gen_ai.operation.name": "execute_tool", "error.type": "timeout",
				})
			})
		})
	})
}

// TestInputRoundsOneTrace: a 2026-07-28 call that asks for input twice is
// one CLIENT span, however many rounds it takes, and one SERVER span a
// round, each the client span's child.
func TestInputRoundsOneTrace(t *testing.T) {
	each(t, transports, func(t *testing.T, transport string) {
		cp, sp := callAsk(t, transport, mcp.Version20260728)
		client := cp.spans.one(t, "tools/call ask", trace.SpanKindClient)
		rounds := sp.spans.wait(t, 3, "tools/call ask", trace.SpanKindServer)
		if len(rounds) != 3 {
			t.Fatalf("%d server spans, want one a round: 3", len(rounds))
		}
		for i, s := range rounds {
			if s.Parent().SpanID() != client.SpanContext().SpanID() || s.SpanContext().TraceID() != client.SpanContext().TraceID() {
				t.Errorf("round %d: parent %s in trace %s, want the client span %s in %s", i+1,
					s.Parent().SpanID(), s.SpanContext().TraceID(), client.SpanContext().SpanID(), client.SpanContext().TraceID())
			}
			if s.Status().Code != codes.Unset {
				t.Errorf("round %d: status %v; asking for input is no failure", i+1, s.Status())
			}
		}
		if client.Status().Code != codes.Unset {
			t.Errorf("client span status %v, want unset", client.Status())
		}
	})
}

// TestTaskHandlerInTrace: a tool that runs as a task runs in the trace of
// the call that created it: a span its handler starts from its context is
// in the client span's trace, a child of the server span.
func TestTaskHandlerInTrace(t *testing.T) {
	each(t, versions, func(t *testing.T, v string) {
		cp, sp := newPeer(), newPeer()
		srv := testServer(sp, nil, mcp.WithTasks(mcp.TaskOptions{PollInterval: time.Millisecond}))
		inTask := make(chan trace.SpanContext, 1)
		srv.AddTool(mcp.Tool{Name: "long", InputSchema: json.RawMessage(`{"type":"object"}`),
			Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "work")
				span.End()
				inTask <- span.SpanContext()
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
			})
		cl := newClient(cp, mcp.WithProtocolVersion(v), mcp.WithTaskPolling(time.Millisecond, time.Millisecond))
		connect(t, "stdio", srv, cl)
		if _, err := cl.ListTools(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		res, err := cl.CallTool(context.Background(), "long", nil, mcp.WithTask(time.Minute))
		if err != nil || res.IsError {
			t.Fatalf("CallTool: %+v, %v", res, err)
		}
		work := <-inTask
		client := cp.spans.one(t, "tools/call long", trace.SpanKindClient)
		server := sp.spans.one(t, "tools/call long", trace.SpanKindServer)
		if work.TraceID() != client.SpanContext().TraceID() {
			t.Fatalf("the task handler's span is in trace %s, the call's is %s: the task lost the trace", work.TraceID(), client.SpanContext().TraceID())
		}
		if w := sp.spans.one(t, "work", trace.SpanKindInternal); w.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Errorf("the handler's span's parent %s, want the server span %s", w.Parent().SpanID(), server.SpanContext().SpanID())
		}
	})
}

// TestServerAskTraced: on 2025-11-25 a server's ask is a request of its
// own: the server's CLIENT span, a child of the tool's SERVER span, is the
// parent of the client's SERVER span for the ask, all in the call's trace.
func TestServerAskTraced(t *testing.T) {
	each(t, transports, func(t *testing.T, transport string) {
		cp, sp := callAsk(t, transport, mcp.Version20251125)
		session := sessionNone
		if transport == "http" {
			session = sessionBoth
		}
		call := cp.spans.one(t, "tools/call ask", trace.SpanKindClient)
		tool := sp.spans.one(t, "tools/call ask", trace.SpanKindServer)
		asks := sp.spans.wait(t, 2, "elicitation/create", trace.SpanKindClient)
		answers := cp.spans.wait(t, 2, "elicitation/create", trace.SpanKindServer)
		if len(asks) != 2 || len(answers) != 2 {
			t.Fatalf("%d asks and %d answers, want 2 of each", len(asks), len(answers))
		}
		for i, ask := range asks {
			if ask.Parent().SpanID() != tool.SpanContext().SpanID() || ask.SpanContext().TraceID() != call.SpanContext().TraceID() {
				t.Errorf("ask %d: parent %s in trace %s, want the tool's span %s in the call's trace %s", i+1,
					ask.Parent().SpanID(), ask.SpanContext().TraceID(), tool.SpanContext().SpanID(), call.SpanContext().TraceID())
			}
			checkPair(t, ask, answers[i], "elicitation/create",
				map[string]string{"mcp.method.name": "elicitation/create", "mcp.protocol.version": mcp.Version20251125}, session)
		}
	})
}

// TestProgressKeptWithTraceContext: the trace context joins the _meta the
// call already has: progress still reaches the caller, and the server's
// progress notifications are CLIENT spans without a request id, children
// of the tool's server span.
func TestProgressKeptWithTraceContext(t *testing.T) {
	each(t, versions, func(t *testing.T, v string) {
		cp, sp := newPeer(), newPeer()
		cl := newClient(cp, mcp.WithProtocolVersion(v))
		connect(t, "stdio", testServer(sp, nil), cl)
		var got []float64
		if _, err := cl.CallTool(context.Background(), "steps", nil, mcp.WithProgress(func(p mcp.Progress) { got = append(got, p.Progress) })); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[1 2]" {
			t.Errorf("progress %v, want [1 2]", got)
		}
		client := cp.spans.one(t, "tools/call steps", trace.SpanKindClient)
		server := sp.spans.one(t, "tools/call steps", trace.SpanKindServer)
		if server.Parent().SpanID() != client.SpanContext().SpanID() {
			t.Errorf("server span's parent %s, want the client span %s", server.Parent().SpanID(), client.SpanContext().SpanID())
		}
		// The handler's progress reports reach the outbound middleware
		// with the handler's context: their spans are the tool span's
		// children, in the call's trace.
		for _, s := range sp.spans.wait(t, 2, "notifications/progress", trace.SpanKindClient) {
			if a := attrs(s.Attributes()); a["jsonrpc.request.id"] != "" {
				t.Errorf("a notification's span has jsonrpc.request.id %q", a["jsonrpc.request.id"])
			}
			if s.Parent().SpanID() != server.SpanContext().SpanID() || s.SpanContext().TraceID() != client.SpanContext().TraceID() {
				t.Errorf("a progress span's parent %s in trace %s, want the tool's server span %s in trace %s",
					s.Parent().SpanID(), s.SpanContext().TraceID(), server.SpanContext().SpanID(), client.SpanContext().TraceID())
			}
		}
	})
}

// TestAmbientSpanLinked: a span already in the server handler's context
// (an HTTP server's, say) is linked from the server span, whose parent
// stays the client span.
func TestAmbientSpanLinked(t *testing.T) {
	t.Parallel()
	cp, sp := newPeer(), newPeer()
	var ambient trace.SpanContext
	withAmbient := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			ctx, span := sp.tp.Tracer("test").Start(ctx, "transport")
			defer span.End()
			if req.Method == "tools/call" {
				ambient = span.SpanContext()
			}
			return next(ctx, req)
		}
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"},
		mcp.WithInboundMiddleware(withAmbient, sp.tel.Inbound()))
	srv.AddTool(mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	cl := newClient(cp)
	connect(t, "stdio", srv, cl)
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	client := cp.spans.one(t, "tools/call echo", trace.SpanKindClient)
	server := sp.spans.one(t, "tools/call echo", trace.SpanKindServer)
	if server.Parent().SpanID() != client.SpanContext().SpanID() {
		t.Errorf("server span's parent %s, want the client span %s", server.Parent().SpanID(), client.SpanContext().SpanID())
	}
	if links := server.Links(); len(links) != 1 || !links[0].SpanContext.Equal(ambient) {
		t.Errorf("server span's links %v, want the ambient span %s", links, ambient.SpanID())
	}
}

// TestDefaultsTouchNothing: with the global providers and nothing set up,
// the middleware passes the very params on: no trace, nothing to carry.
func TestDefaultsTouchNothing(t *testing.T) {
	tel := New()
	params := json.RawMessage(`{"name":"echo","_meta":{"progressToken":1}}`)
	var sent *mcp.Request
	h := tel.Outbound()(func(ctx context.Context, r *mcp.Request) (json.RawMessage, error) {
		sent = r
		return json.RawMessage(`{}`), nil
	})
	if _, err := h(context.Background(), &mcp.Request{Method: "tools/call", ID: mcp.Int64ID(1), Params: params}); err != nil {
		t.Fatal(err)
	}
	if &sent.Params[0] != &params[0] {
		t.Errorf("params sent %s, want the very params given", sent.Params)
	}
}

// TestPropagatorCarriesBaggage: WithPropagator replaces W3C Trace Context
// alone: a composite with baggage carries both in _meta, next to what was
// there, and the receiver's handler gets both.
func TestPropagatorCarriesBaggage(t *testing.T) {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	cp, sp := newPeer(), newPeer()
	client := New(WithTracerProvider(cp.tp), WithPropagator(prop))
	server := New(WithTracerProvider(sp.tp), WithPropagator(prop))

	member, _ := baggage.NewMember("user", "alice")
	bag, _ := baggage.New(member)
	ctx := baggage.ContextWithBaggage(context.Background(), bag)
	var wire json.RawMessage
	send := client.Outbound()(func(ctx context.Context, r *mcp.Request) (json.RawMessage, error) {
		wire = r.Params
		return json.RawMessage(`{}`), nil
	})
	if _, err := send(ctx, &mcp.Request{Method: "ping", ID: mcp.Int64ID(1), Params: json.RawMessage(`{"_meta":{"x":1}}`)}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(wire, &got); err != nil || got.Meta["baggage"] != "user=alice" || got.Meta["traceparent"] == nil || got.Meta["x"] != float64(1) {
		t.Fatalf("params sent %s, want baggage, traceparent and x in _meta", wire)
	}
	var user string
	var parent trace.SpanContext
	receive := server.Inbound()(func(ctx context.Context, r *mcp.Request) (json.RawMessage, error) {
		user = baggage.FromContext(ctx).Member("user").Value()
		parent = trace.SpanContextFromContext(ctx)
		return json.RawMessage(`{}`), nil
	})
	if _, err := receive(context.Background(), &mcp.Request{Method: "ping", ID: mcp.Int64ID(1), Params: wire}); err != nil {
		t.Fatal(err)
	}
	ping := cp.spans.one(t, "ping", trace.SpanKindClient)
	if user != "alice" || parent.TraceID() != ping.SpanContext().TraceID() {
		t.Errorf("handler got user %q in trace %s; want alice in %s", user, parent.TraceID(), ping.SpanContext().TraceID())
	}
}
