package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// journal records what middleware saw, from any goroutine.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// tracing returns a middleware that records entering and leaving the
// handling of method as name+">" and "<"+name.
func tracing(j *journal, name, method string) Middleware {
	return func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			if r.Method != method {
				return next(ctx, r)
			}
			j.add(name + ">")
			defer j.add("<" + name)
			return next(ctx, r)
		}
	}
}

// watching returns a middleware that sends every request it sees to seen.
func watching(seen chan<- Request) Middleware {
	return func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			seen <- *r
			return next(ctx, r)
		}
	}
}

// takeRequest waits for the next request of method on seen, skipping
// others.
func takeRequest(t *testing.T, seen <-chan Request, method string) Request {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-seen:
			if r.Method == method {
				return r
			}
		case <-timeout:
			t.Fatalf("no %s reached the middleware", method)
		}
	}
}

// bothEras are the revisions the middleware tests run on: one with
// sessions and live asks, one without.
var bothEras = []string{Version20251125, Version20260728}

func TestMiddlewareOrder(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			var in, out journal
			srv := newTestServer(WithProtocolVersion(v),
				WithInboundMiddleware(tracing(&in, "a", "tools/call"), tracing(&in, "b", "tools/call")),
				WithInboundMiddleware(tracing(&in, "c", "tools/call")))
			cl := pair(t, srv, WithProtocolVersion(v),
				WithOutboundMiddleware(tracing(&out, "x", "tools/call")),
				WithOutboundMiddleware(tracing(&out, "y", "tools/call"), tracing(&out, "z", "tools/call")))
			if _, err := cl.CallTool(context.Background(), "echo", map[string]string{"hi": "there"}); err != nil {
				t.Fatal(err)
			}
			if got, want := in.list(), []string{"a>", "b>", "c>", "<c", "<b", "<a"}; !slices.Equal(got, want) {
				t.Errorf("server inbound: %v, want %v", got, want)
			}
			if got, want := out.list(), []string{"x>", "y>", "z>", "<z", "<y", "<x"}; !slices.Equal(got, want) {
				t.Errorf("client outbound: %v, want %v", got, want)
			}
		})
	}
}

// denying refuses tools/call of the tool "limited" with a -32042 error and
// of "broken" with a plain error, before the handler runs.
func denying(next MethodHandler) MethodHandler {
	return func(ctx context.Context, r *Request) (json.RawMessage, error) {
		if r.Method == "tools/call" {
			var p CallToolParams
			json.Unmarshal(r.Params, &p)
			switch p.Name {
			case "limited":
				return nil, &Error{Code: CodeURLElicitationRequired, Message: "go elsewhere first"}
			case "broken":
				return nil, errors.New("the middleware broke")
			}
		}
		return next(ctx, r)
	}
}

func TestMiddlewareShortCircuit(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			var ran atomic.Int32
			srv := newTestServer(WithProtocolVersion(v), WithInboundMiddleware(denying))
			for _, name := range []string{"limited", "broken"} {
				srv.AddTool(Tool{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
					ran.Add(1)
					return &CallToolResult{}, nil
				})
			}
			cl := pair(t, srv, WithProtocolVersion(v))
			ctx := context.Background()
			for _, tc := range []struct {
				tool string
				code int
			}{{"limited", CodeURLElicitationRequired}, {"broken", CodeInternalError}} {
				_, err := cl.CallTool(ctx, tc.tool, nil)
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != tc.code {
					t.Errorf("%s: %v, want a %d error", tc.tool, err, tc.code)
				}
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("the handlers ran %d times behind a refusing middleware", n)
			}
			res, err := cl.CallTool(ctx, "echo", map[string]int{"n": 1})
			if err != nil || res.Content[0].Text != `{"n":1}` {
				t.Fatalf("the connection after the refusals: %v, %v", res, err)
			}
		})
	}
}

func TestMiddlewareOutboundShortCircuit(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			var calls atomic.Int32
			counting := func(next MethodHandler) MethodHandler {
				return func(ctx context.Context, r *Request) (json.RawMessage, error) {
					if r.Method == "tools/call" {
						calls.Add(1)
					}
					return next(ctx, r)
				}
			}
			errQuota := errors.New("over quota")
			quota := func(next MethodHandler) MethodHandler {
				return func(ctx context.Context, r *Request) (json.RawMessage, error) {
					if r.Method == "tools/call" {
						return nil, errQuota
					}
					return next(ctx, r)
				}
			}
			srv := newTestServer(WithProtocolVersion(v), WithInboundMiddleware(counting))
			cl := pair(t, srv, WithProtocolVersion(v), WithOutboundMiddleware(quota))
			if _, err := cl.CallTool(context.Background(), "echo", nil); err != errQuota {
				t.Fatalf("CallTool: %v, want the middleware's error as it is", err)
			}
			if err := cl.Ping(context.Background()); err != nil && v == Version20251125 {
				t.Fatal(err)
			}
			if _, err := cl.ListTools(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("the server saw %d tools/call that the client's middleware refused", n)
			}
		})
	}
}

func TestMiddlewareSeesPrincipalOverHTTP(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			seen := make(chan Request, 64)
			srv := newTestServer(WithProtocolVersion(v), WithInboundMiddleware(watching(seen)))
			ts := httptest.NewServer(NewHTTPHandler(srv, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
				return r.Header.Get("X-User"), nil
			}))))
			defer ts.Close()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
			if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHeader("X-User", "alice"))); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
				t.Fatal(err)
			}
			r := takeRequest(t, seen, "tools/call")
			if r.Info == nil || r.Info.Principal() != "alice" {
				t.Fatalf("the middleware saw Info %+v, want principal alice", r.Info)
			}
			if r.ProtocolVersion != v || r.Info.ProtocolVersion() != v {
				t.Errorf("ProtocolVersion %q (Info: %q), want %q", r.ProtocolVersion, r.Info.ProtocolVersion(), v)
			}
			if !r.ID.IsValid() || r.ID != r.Info.ID() {
				t.Errorf("ID %v, Info.ID %v", r.ID, r.Info.ID())
			}
			if v == Version20260728 {
				if r.SessionID != "" || r.Info.SessionID() != "" {
					t.Errorf("a 2026-07-28 request has session %q (Info: %q)", r.SessionID, r.Info.SessionID())
				}
				return
			}
			if r.SessionID == "" || r.SessionID != r.Info.SessionID() || r.SessionID != cl.conn.t.(*HTTPTransport).session() {
				t.Errorf("SessionID %q, Info.SessionID %q, the client's %q", r.SessionID, r.Info.SessionID(), cl.conn.t.(*HTTPTransport).session())
			}
		})
	}
}

func TestMiddlewareWrapsAsksAndNotifications(t *testing.T) {
	serverOut, clientIn := make(chan Request, 64), make(chan Request, 64)
	srv := newTestServer(WithProtocolVersion(Version20251125), WithOutboundMiddleware(watching(serverOut)))
	cl := pair(t, srv, WithProtocolVersion(Version20251125), WithInboundMiddleware(watching(clientIn)),
		WithElicitationHandler(func(context.Context, *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		}))
	ctx := context.Background()
	if _, err := cl.CallTool(ctx, "ask_elicitation", map[string]string{"message": "name?"}); err != nil {
		t.Fatal(err)
	}
	ask := takeRequest(t, serverOut, "elicitation/create")
	answered := takeRequest(t, clientIn, "elicitation/create")
	if !ask.ID.IsValid() || ask.ID != answered.ID {
		t.Errorf("the server sent ask %v, the client answered %v", ask.ID, answered.ID)
	}
	if answered.ProtocolVersion != Version20251125 || ask.ProtocolVersion != Version20251125 {
		t.Errorf("ProtocolVersion: server %q, client %q", ask.ProtocolVersion, answered.ProtocolVersion)
	}
	if answered.Info != nil {
		t.Errorf("the client's middleware got Info %+v", answered.Info)
	}

	// A log message passes both; the client has no handler for it.
	if _, err := cl.CallTool(ctx, "log", nil); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan Request{serverOut, clientIn} {
		if r := takeRequest(t, ch, "notifications/message"); !r.IsNotification() || !strings.Contains(string(r.Params), `"level"`) {
			t.Errorf("notification %+v", r)
		}
	}

	// Progress passes the server's chain; at the client it is the call's,
	// which the engine routes itself.
	var reports atomic.Int32
	if _, err := cl.CallTool(ctx, "progress", map[string]int{"steps": 2}, WithProgress(func(Progress) { reports.Add(1) })); err != nil {
		t.Fatal(err)
	}
	if r := takeRequest(t, serverOut, "notifications/progress"); !strings.Contains(string(r.Params), `"progressToken"`) {
		t.Errorf("progress params %s", r.Params)
	}
	if reports.Load() != 2 {
		t.Errorf("%d progress reports, want 2", reports.Load())
	}
}

// addTraceparent is an outbound middleware that puts trace context in
// every request's _meta.
func addTraceparent(next MethodHandler) MethodHandler {
	return func(ctx context.Context, r *Request) (json.RawMessage, error) {
		p := map[string]json.RawMessage{}
		if len(r.Params) > 0 {
			if err := json.Unmarshal(r.Params, &p); err != nil {
				return nil, err
			}
		}
		meta := map[string]json.RawMessage{}
		json.Unmarshal(p["_meta"], &meta)
		meta["traceparent"] = json.RawMessage(`"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`)
		p["_meta"], _ = json.Marshal(meta)
		changed := *r
		changed.Params, _ = json.Marshal(p)
		return next(ctx, &changed)
	}
}

func TestMiddlewareInputRounds(t *testing.T) {
	clientOut, serverIn := make(chan Request, 64), make(chan Request, 64)
	srv := newTestServer(WithProtocolVersion(Version20260728), WithInboundMiddleware(watching(serverIn)))
	cl := pair(t, srv, WithProtocolVersion(Version20260728), WithOutboundMiddleware(watching(clientOut), addTraceparent),
		WithElicitationHandler(func(context.Context, *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		}))
	res, err := cl.CallTool(context.Background(), "ask_elicitation", map[string]string{"message": "name?"}, WithProgress(func(Progress) {}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content[0].Text, "Ada") {
		t.Fatalf("result %+v", res)
	}
	call := takeRequest(t, clientOut, "tools/call")
	var rounds []Request
	for len(rounds) < 2 {
		rounds = append(rounds, takeRequest(t, serverIn, "tools/call"))
	}
	close(clientOut)
	for r := range clientOut {
		if r.Method == "tools/call" {
			t.Errorf("the client's outbound middleware saw a second tools/call: %s", r.Params)
		}
	}
	if rounds[0].ID != call.ID || rounds[1].ID == call.ID {
		t.Errorf("the call's id %v; the rounds' %v, %v", call.ID, rounds[0].ID, rounds[1].ID)
	}
	for i, r := range rounds {
		var p struct {
			Meta struct {
				Traceparent   string          `json:"traceparent"`
				ProgressToken json.RawMessage `json:"progressToken"`
				Version       string          `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
			InputResponses json.RawMessage `json:"inputResponses"`
		}
		if err := json.Unmarshal(r.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.Meta.Traceparent == "" || len(p.Meta.ProgressToken) == 0 || p.Meta.Version != Version20260728 {
			t.Errorf("round %d: _meta %+v", i+1, p.Meta)
		}
		if (i == 1) != (len(p.InputResponses) > 0) {
			t.Errorf("round %d: inputResponses %s", i+1, p.InputResponses)
		}
	}
}

// streamPair returns the two ends of an in-memory connection ("inmemory")
// or of one over OS pipes ("pipe"), where callers may read their own answers.
func streamPair(t *testing.T, carrier string) (client, server Transport) {
	if carrier == "pipe" {
		return pipeTransports(t)
	}
	return NewInMemoryTransports()
}

func TestMiddlewareNotOnReader(t *testing.T) {
	// A client's middleware that holds a notification does not hold the
	// responses to the client's calls. (Not a log message: a call waits
	// for the log messages read before its answer, conn_logs.go.)
	release := make(chan struct{})
	holding := make(chan struct{}, 8)
	hold := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			if r.Method == "test/note" {
				holding <- struct{}{}
				<-release
			}
			return next(ctx, r)
		}
	}
	for _, carrier := range []string{"inmemory", "pipe"} {
		t.Run(carrier, func(t *testing.T) {
			ct, st := streamPair(t, carrier)
			srv := newTestServer(WithProtocolVersion(Version20251125))
			srv.AddTool(Tool{Name: "note"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				for range 4 {
					if err := req.Gateway().Notify("test/note", nil); err != nil {
						return nil, err
					}
				}
				return &CallToolResult{}, nil
			})
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), st) }()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125), WithInboundMiddleware(hold))
			if err := cl.Connect(context.Background(), ct); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.CallTool(context.Background(), "note", nil); err != nil {
				t.Fatal(err)
			}
			<-holding
			for range 3 {
				if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
					t.Fatal(err)
				}
			}
			release <- struct{}{}
			for range 3 {
				<-holding
				release <- struct{}{}
			}
			cl.Close()
			<-served
		})
	}
}

func TestMiddlewareServerNotificationHeldNotOnReader(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{})
	hold := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			if r.Method == "notifications/roots/list_changed" {
				close(held)
				<-release
			}
			return next(ctx, r)
		}
	}
	srv := newTestServer(WithProtocolVersion(Version20251125), WithInboundMiddleware(hold))
	cl := pair(t, srv, WithProtocolVersion(Version20251125), WithRoots(Root{URI: "file:///a"}))
	defer close(release)
	if err := cl.SetRoots(Root{URI: "file:///b"}); err != nil {
		t.Fatal(err)
	}
	<-held
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
}

// onReader reports whether the calling goroutine is a connection's reader.
func onReader() bool {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	return strings.Contains(stack, "(*conn).readLoop")
}

func TestMiddlewareInitializePipelined(t *testing.T) {
	var seen, reader journal
	srv := newTestServer(WithInboundMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			seen.add(r.Method)
			if onReader() {
				reader.add(r.Method)
			}
			return next(ctx, r)
		}
	}))
	for _, carrier := range []string{"inmemory", "pipe"} {
		t.Run(carrier, func(t *testing.T) {
			ct, st := streamPair(t, carrier)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), st) }()
			answers := make(chan string, 4)
			go func() {
				defer close(answers)
				for range 4 {
					msg, err := ct.ReadMessage()
					if err != nil {
						return
					}
					answers <- string(msg)
				}
			}()
			// Written at once, unanswered: the call must find the session
			// initialized, and its answer must come after initialize's.
			if err := ct.WriteMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)); err != nil {
				t.Fatal(err)
			}
			ct.WriteMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			ct.WriteMessage([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
			for _, want := range []string{`"id":1,"result":{"protocolVersion":"2025-11-25"`, `"id":2,"result":`} {
				msg, ok := <-answers
				if !ok {
					t.Fatal("the server answered too little")
				}
				if !strings.Contains(msg, want) {
					t.Fatalf("got %s, want %s", msg, want)
				}
			}
			// One at a time, as a request alone on the connection.
			for _, id := range []string{"3", "4"} {
				ct.WriteMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))
				if msg := <-answers; !strings.Contains(msg, `"id":`+id+`,"result":`) {
					t.Fatalf("got %s", msg)
				}
			}
			ct.Close()
			<-served
		})
	}
	if got := seen.list(); !slices.Contains(got, "initialize") || !slices.Contains(got, "notifications/initialized") {
		t.Errorf("the middleware saw %v", got)
	}
	if got := reader.list(); len(got) > 0 {
		t.Errorf("the middleware ran on the reader for %v", got)
	}
}

type ctxKey struct{}

func TestMiddlewareContextReachesHandler(t *testing.T) {
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithInboundMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			return next(context.WithValue(ctx, ctxKey{}, "from the middleware"), r)
		}
	}))
	srv.AddTool(Tool{Name: "ctx"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		v, _ := ctx.Value(ctxKey{}).(string)
		return &CallToolResult{Content: []Content{TextContent(v)}}, nil
	})
	for _, v := range bothEras {
		cl := pair(t, srv, WithProtocolVersion(v))
		res, err := cl.CallTool(context.Background(), "ctx", nil)
		if err != nil || res.Content[0].Text != "from the middleware" {
			t.Errorf("%s: %+v, %v", v, res, err)
		}
	}
}

// TestMiddlewareHandlerNotificationsKeepItsContext: what a handler sends
// through its gateway (progress, log messages, notifications) reaches the
// outbound middleware with the context the inbound middleware gave the
// handler, so a trace's span can be their parent.
func TestMiddlewareHandlerNotificationsKeepItsContext(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	srv := NewServer(Implementation{Name: "s", Version: "1"},
		WithInboundMiddleware(func(next MethodHandler) MethodHandler {
			return func(ctx context.Context, r *Request) (json.RawMessage, error) {
				return next(context.WithValue(ctx, ctxKey{}, "handler of "+r.Method), r)
			}
		}),
		WithOutboundMiddleware(func(next MethodHandler) MethodHandler {
			return func(ctx context.Context, r *Request) (json.RawMessage, error) {
				v, _ := ctx.Value(ctxKey{}).(string)
				mu.Lock()
				seen[r.Method] = v
				mu.Unlock()
				return next(ctx, r)
			}
		}))
	srv.AddTool(Tool{Name: "talk"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		g.Progress(1, 1, "")
		g.Log(LevelInfo, "", "hello")
		g.Notify("notifications/custom", nil)
		return &CallToolResult{}, nil
	})
	cl := pair(t, srv, WithProtocolVersion(Version20251125))
	if _, err := cl.CallTool(context.Background(), "talk", nil, WithProgress(func(Progress) {})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range []string{"notifications/progress", "notifications/message", "notifications/custom"} {
		if seen[m] != "handler of tools/call" {
			t.Errorf("%s reached the outbound middleware with %q in its context", m, seen[m])
		}
	}
}

// noop is a middleware that does nothing but call on.
func noop(next MethodHandler) MethodHandler {
	return func(ctx context.Context, r *Request) (json.RawMessage, error) { return next(ctx, r) }
}

// BenchmarkMiddleware measures the sequential echo call of
// BenchmarkCallToolEcho over in-memory transports without middleware
// ("none") and with one no-op inbound and one no-op outbound middleware on
// both peers ("noop").
func BenchmarkMiddleware(b *testing.B) {
	for _, mode := range []string{"none", "noop"} {
		for _, v := range benchVersions {
			b.Run(mode+"/"+v, func(b *testing.B) {
				var opts []Option
				if mode == "noop" {
					opts = append(opts, WithInboundMiddleware(noop), WithOutboundMiddleware(noop))
				}
				benchEcho(b, benchConnect(b, "inmemory", v, opts...))
			})
		}
	}
}

func TestMiddlewareTaskPolling(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			var out journal
			record := func(next MethodHandler) MethodHandler {
				return func(ctx context.Context, r *Request) (json.RawMessage, error) {
					if !r.IsNotification() {
						out.add(r.Method)
					}
					return next(ctx, r)
				}
			}
			rig := newTaskRig(WithProtocolVersion(v), WithTasks(TaskOptions{PollInterval: time.Millisecond}))
			close(rig.release) // work ends at once
			cl := pair(t, rig.srv, WithProtocolVersion(v), WithOutboundMiddleware(record))
			task, err := cl.StartTool(context.Background(), "work", nil, WithTask(0))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := task.Wait(context.Background()); err != nil || res.Content[0].Text != "done" {
				t.Fatalf("%+v, %v", res, err)
			}
			got := out.list()
			calls := 0
			for _, m := range got {
				if m == "tools/call" {
					calls++
				}
			}
			if calls != 1 || !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, "tasks/") }) {
				t.Errorf("the client's outbound middleware saw %v: want one tools/call and the task's own requests", got)
			}
		})
	}
}
