package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestWireErrors sends malformed and unanswerable messages and checks each
// gets the protocol's error, with the connection still serving afterwards.
func TestWireErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, send string
		code       int
		id         any // nil: id null
	}{
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":`, CodeParseError, nil},
		{"not utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", CodeParseError, nil},
		{"jsonrpc missing", `{"id":2,"method":"ping"}`, CodeInvalidRequest, 2.0},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, CodeInvalidRequest, 3.0},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, CodeInvalidRequest, nil},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, CodeInvalidRequest, nil},
		{"id float", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, CodeInvalidRequest, nil},
		{"params not object", `{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}`, CodeInvalidRequest, 4.0},
		{"method not a string", `{"jsonrpc":"2.0","id":5,"method":7}`, CodeInvalidRequest, 5.0},
		{"batch where not allowed", `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, CodeInvalidRequest, nil},
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"no/such"}`, CodeMethodNotFound, 7.0},
		{"notification with an id is a request", `{"jsonrpc":"2.0","id":8,"method":"notifications/initialized"}`, CodeMethodNotFound, 8.0},
		{"invalid params", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}`, CodeInvalidParams, 9.0},
		{"unknown tool", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope"}}`, CodeInvalidParams, 10.0},
		{"handler panic", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"panic"}}`, CodeInternalError, 11.0},
		{"unsupported modern version", `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, CodeUnsupportedProtocolVersion, 12.0},
		{"missing modern capabilities", `{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, CodeInvalidParams, 13.0},
		{"legacy method on modern", `{"jsonrpc":"2.0","id":14,"method":"logging/setLevel","params":{"level":"info","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, CodeMethodNotFound, 14.0},
		{"huge id", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, CodeInvalidRequest, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := rawServer(t, newTestServer())
			p.initialize(Version20251125)
			p.send(tc.send)
			got := p.recv()
			if code := field(t, got, "error.code"); code != float64(tc.code) {
				t.Fatalf("code %v, want %d: %s", code, tc.code, got)
			}
			if id := field(t, got, "id"); id != tc.id {
				t.Fatalf("id %v, want %v: %s", id, tc.id, got)
			}
			// The connection keeps working.
			p.send(`{"jsonrpc":"2.0","id":"next","method":"ping"}`)
			p.expect(`{"jsonrpc":"2.0","id":"next","result":{}}`)
		})
	}
}

func TestUnsupportedVersionData(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	got := p.recv()
	if field(t, got, "error.data.requested") != "2027-01-01" {
		t.Fatalf("no requested version: %s", got)
	}
	supported, _ := field(t, got, "error.data.supported").([]any)
	if len(supported) != len(SupportedVersions) {
		t.Fatalf("supported = %v", supported)
	}
}

func TestRequestBeforeInitializeIsRejected(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if code := field(t, p.recv(), "error.code"); code != float64(CodeInvalidRequest) {
		t.Fatalf("code %v", code)
	}
	// ping is allowed before initialize.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
	p.initialize(Version20250618)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if field(t, p.recv(), "result.tools") == nil {
		t.Fatal("tools/list failed after initialize")
	}
}

// TestIDTypeIsEchoed: 1 and "1" are different ids, each echoed as sent.
func TestIDTypeIsEchoed(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	p.send(`{"jsonrpc":"2.0","id":"1","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"1","result":{}}`)
	p.send(`{"jsonrpc":"2.0","id":-9007199254740993,"method":"ping"}`)
	if got := p.recv(); !strings.Contains(got, `"id":-9007199254740993`) {
		t.Fatalf("large id not echoed exactly: %s", got)
	}
	// Both in flight at once: no duplicate.
	p.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}}`)
	p.send(`{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if got := p.recv(); field(t, got, "id") != "7" || field(t, got, "error") != nil {
		t.Fatalf("string id 7 was treated as the number 7: %s", got)
	}
}

// TestDuplicateInFlightID: a second request with an id in flight gets -32600
// and no handler; once the first finishes, the id may be reused.
func TestDuplicateInFlightID(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	srv := newTestServer()
	srv.AddTool(Tool{Name: "gate"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-release
		return &CallToolResult{Content: []Content{TextContent("released")}}, nil
	})
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"gate"}}`)
	<-started
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"gate"}}`)
	got := p.recv()
	if field(t, got, "error.code") != float64(CodeInvalidRequest) || field(t, got, "id") != 5.0 {
		t.Fatalf("duplicate: %s", got)
	}
	close(release)
	if got := p.recv(); field(t, got, "result.content") == nil {
		t.Fatalf("first call: %s", got)
	}
	if len(started) != 0 {
		t.Fatal("the duplicate ran a handler")
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if got := p.recv(); field(t, got, "error") != nil {
		t.Fatalf("sequential reuse rejected: %s", got)
	}
}

// TestOverloadedBeforeClaim: at the cap a request is refused with -32000
// before its id is claimed, so a retry with the same id is not a duplicate.
func TestOverloadedBeforeClaim(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := newTestServer(WithMaxInFlight(1))
	srv.AddTool(Tool{Name: "gate"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-release
		return &CallToolResult{}, nil
	})
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate"}}`)
	<-started
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"overloaded"}}`)
	close(release)
	p.recv() // id 1's result
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
}

// TestCancelledRequestIsNotAnswered: notifications/cancelled cancels the
// handler's context and its response is never written.
func TestCancelledRequestIsNotAnswered(t *testing.T) {
	t.Parallel()
	observed := make(chan error, 1)
	srv := newTestServer()
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		<-ctx.Done()
		observed <- context.Cause(ctx)
		// A handler that returns tidily after cancellation is still not answered.
		return &CallToolResult{Content: []Content{TextContent("too late")}}, nil
	})
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`)
	p.send(`{"jsonrpc":"2.0","id":"warm","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"warm","result":{}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"user aborted"}}`)
	cause := <-observed
	if !strings.Contains(cause.Error(), "user aborted") {
		t.Fatalf("cause %v does not carry the reason", cause)
	}
	// The next line is the ping's answer: nothing was written for "w".
	p.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"after","result":{}}`)
	// Cancelling an id that is not in flight is harmless.
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}`)
	p.send(`{"jsonrpc":"2.0","id":"again","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"again","result":{}}`)
}

// TestMessageSizeLimit: an over-long line is answered with an error and
// skipped; the next message is served.
func TestMessageSizeLimit(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer(WithMaxMessageSize(1024)))
	p.initialize(Version20251125)
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"s":%q}}}`, strings.Repeat("x", 200_000))
	p.send(big)
	got := p.recv()
	if field(t, got, "error.code") != float64(CodeInvalidRequest) || !strings.Contains(got, "exceeds the limit of 1024") {
		t.Fatalf("oversized: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
}

// TestBatchesOnlyOn20250326: an array is served on 2025-03-26 and refused
// with -32600 on every other revision.
func TestBatchesOnlyOn20250326(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20241105, Version20250326, Version20250618, Version20251125} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			p := rawServer(t, newTestServer())
			p.initialize(v)
			p.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			if v != Version20250326 {
				if got := p.recv(); field(t, got, "error.code") != float64(CodeInvalidRequest) {
					t.Fatalf("batch on %s: %s", v, got)
				}
				return
			}
			ids := map[any]bool{}
			for range 2 {
				got := p.recv()
				if field(t, got, "result") == nil {
					t.Fatalf("batch item: %s", got)
				}
				ids[field(t, got, "id")] = true
			}
			if !ids[1.0] || !ids[2.0] {
				t.Fatalf("ids %v", ids)
			}
			p.send(`[{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}]`)
			if got := p.recv(); field(t, got, "error.code") != float64(CodeInvalidRequest) {
				t.Fatalf("batched initialize: %s", got)
			}
		})
	}
}

// TestOrphanResponseIsDropped: a response nobody waits for is logged and
// dropped, and the connection goes on.
func TestOrphanResponseIsDropped(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	p := rawServer(t, newTestServer(WithLogger(slog.New(rec))))
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	p.send(`{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	if rec.count("orphan success") != 1 || rec.count("orphan error") != 1 {
		t.Fatalf("orphans not logged: %v", rec.msgs)
	}
}

// TestCloseFailsPendingCalls: closing either side mid-call fails every
// pending call with an ErrClosed-wrapped error at once (no time passes in
// the bubble) and leaves no goroutine behind.
func TestCloseFailsPendingCalls(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run(side, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ct, st := NewInMemoryTransports()
				srv := newTestServer()
				ctx, stopServer := context.WithCancel(context.Background())
				served := make(chan error, 1)
				go func() { served <- srv.Serve(ctx, st) }()
				cl := NewClient(Implementation{Name: "c", Version: "1"})
				if err := cl.Connect(context.Background(), ct); err != nil {
					t.Fatal(err)
				}
				errs := make(chan error, 3)
				for range 3 {
					go func() {
						_, err := cl.CallTool(context.Background(), "block", nil)
						errs <- err
					}()
				}
				synctest.Wait()
				start := time.Now()
				if side == "client" {
					cl.Close()
				} else {
					stopServer()
				}
				for range 3 {
					if err := <-errs; !isClosedErr(err) {
						t.Fatalf("pending call returned %v, want ErrClosed", err)
					}
				}
				if d := time.Since(start); d != 0 {
					t.Fatalf("pending calls took %v to fail", d)
				}
				cl.Close()
				<-served
				stopServer()
				synctest.Wait() // every goroutine of the bubble has ended, or the test fails
			})
		})
	}
}

// TestHandlersCancelledOnClose: when the transport ends, every handler's
// context is cancelled.
func TestHandlersCancelledOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		observed := make(chan error, 2)
		srv := NewServer(Implementation{Name: "s", Version: "1"})
		srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			<-ctx.Done()
			observed <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		ct, st := NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), st) }()
		cl := NewClient(Implementation{Name: "c", Version: "1"})
		if err := cl.Connect(context.Background(), ct); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			go cl.CallTool(context.Background(), "wait", nil)
		}
		synctest.Wait()
		cl.Close()
		for range 2 {
			if err := <-observed; !isClosedErr(err) {
				t.Fatalf("handler saw %v", err)
			}
		}
		if err := <-served; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})
}

func TestPendingTableEmptyAfterCalls(t *testing.T) {
	t.Parallel()
	cl := pair(t, newTestServer())
	for i := range 50 {
		if _, err := cl.CallTool(context.Background(), "echo", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	c := cl.conn
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) != 0 || len(c.progress) != 0 || len(c.inbound) != 0 || c.sole != nil {
		t.Fatalf("pending %d progress %d inbound %d", len(c.pending), len(c.progress), len(c.inbound))
	}
}

func TestWithMeta(t *testing.T) {
	t.Parallel()
	e := []metaEntry{{key: "k", value: json.RawMessage(`1`)}}
	cases := []struct{ in, want string }{
		{``, `{"_meta":{"k":1}}`},
		{`{}`, `{"_meta":{"k":1}}`},
		{`{"a":2}`, `{"_meta":{"k":1},"a":2}`},
		{`{"a":2,"_meta":{"x":3}}`, `{"a":2,"_meta":{"k":1,"x":3}}`},
		{`{"_meta":{"k":0}}`, `{"_meta":{"k":1}}`},
	}
	for _, tc := range cases {
		if got := withMeta(json.RawMessage(tc.in), e); !jsonEqual(string(got), tc.want) {
			t.Errorf("withMeta(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestHandlerWorkersAreBoundedAndEndWithTheConnection: after a burst of
// concurrent requests a connection keeps at most maxIdleWorkers handler
// goroutines parked for the next ones, and none outlives Serve.
func TestHandlerWorkersAreBoundedAndEndWithTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct, st := NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- newTestServer().Serve(context.Background(), st) }()
		cl := NewClient(Implementation{Name: "c", Version: "1"})
		if err := cl.Connect(context.Background(), ct); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var wg sync.WaitGroup
		for range 2 * maxIdleWorkers {
			wg.Go(func() {
				if _, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": 1, "delayMs": 10}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if n := parkedWorkers(); n != maxIdleWorkers {
			t.Fatalf("%d handler goroutines parked after %d concurrent calls, want %d", n, 2*maxIdleWorkers, maxIdleWorkers)
		}
		// Sequential calls take a parked worker and park it again.
		for range 10 {
			if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := parkedWorkers(); n != maxIdleWorkers {
			t.Fatalf("%d handler goroutines parked after sequential calls, want %d", n, maxIdleWorkers)
		}
		cl.Close()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := parkedWorkers(); n != 0 {
			t.Fatalf("%d handler goroutines outlived the connection", n)
		}
	})
}

// parkedWorkers counts the goroutines of the calling goroutine's synctest
// bubble that are a connection's workers: of its pool (*conn).run, those
// that do not have the reading.
func parkedWorkers() int {
	return bubbleGoroutines("mcp.(*conn).run(") - bubbleGoroutines("mcp.(*conn).readLoop(")
}

// bubbleGoroutines counts the goroutines of the calling goroutine's synctest
// bubble whose stack has a line containing fn, from a dump of every
// goroutine: the process-wide goroutine count also sees other tests'
// goroutines.
func bubbleGoroutines(fn string) int {
	self := make([]byte, 256)
	self = self[:runtime.Stack(self, false)]
	header, _, _ := strings.Cut(string(self), "\n")
	_, bubble, ok := strings.Cut(header, "synctest bubble ")
	if !ok {
		panic("bubbleGoroutines: not in a synctest bubble")
	}
	bubble = "synctest bubble " + strings.TrimSuffix(bubble, "]:")
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		first, _, _ := strings.Cut(g, "\n")
		if strings.Contains(first, bubble+"]") && strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// echoBlockServer serves echo, and block, which waits for its context
// and reports on started and cancelled.
func echoBlockServer(started, cancelled chan<- struct{}) *Server {
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments))}}, nil
	})
	srv.AddTool(Tool{Name: "block"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	return srv
}

// TestKnownVersionsAreInterned: a revision's name read from JSON comes back
// as the package's constant, without allocating; anything else is left to
// the caller's own parsing.
func TestKnownVersionsAreInterned(t *testing.T) {
	for _, v := range SupportedVersions {
		raw := []byte(`"` + v + `"`)
		if got, ok := knownVersion(raw); !ok || got != v {
			t.Errorf("knownVersion(%s) = %q, %v", raw, got, ok)
		}
		if n := testing.AllocsPerRun(100, func() { knownVersion(raw) }); n != 0 {
			t.Errorf("knownVersion(%s) allocates %v times", raw, n)
		}
	}
	for _, raw := range []string{`"2099-01-01"`, `"2026-07-2\u0038"`, `2026-07-28`, `"2026-07-28`, `null`, `""`, `"2026-07-28 "`} {
		if got, ok := knownVersion([]byte(raw)); ok {
			t.Errorf("knownVersion(%s) = %q, want none", raw, got)
		}
	}
}

// TestHandlerGoexitDoesNotHangServe: a handler that ends its goroutine
// (runtime.Goexit, as t.FailNow does in a test's handler) sends no answer,
// and the server still shuts down when the client closes (pair's cleanup
// waits for Serve; in the bubble a Serve that never returns fails the test
// as a deadlock): the engine's count of the handlers it waits for is kept.
func TestHandlerGoexitDoesNotHangServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Implementation{Name: "s", Version: "1"})
		srv.AddTool(Tool{Name: "quit"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			runtime.Goexit()
			return nil, nil
		})
		cl := pair(t, srv)
		ctx, stop := context.WithTimeout(context.Background(), time.Second)
		defer stop()
		if _, err := cl.CallTool(ctx, "quit", nil); err == nil {
			t.Fatal("a handler whose goroutine exited answered")
		}
	})
}

// TestEndOfInputAnswersWhatWasSent: when the peer's input ends, handlers
// still running are cancelled, but what they answer is written before the
// connection closes, and Serve returns nil.
func TestEndOfInputAnswersWhatWasSent(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	ct, st := NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	p := newRawPeer(t, ct.(*IOTransport))
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"block"}}`)
	p.send(`{"jsonrpc":"2.0","id":"quick","method":"tools/list"}`)
	p.w.Close()
	got := map[string]string{}
	for range 2 {
		msg := p.recv()
		got[fmt.Sprint(field(t, msg, "id"))] = msg
	}
	if !strings.Contains(got["quick"], `"tools":[`) {
		t.Errorf("tools/list: %s", got["quick"])
	}
	if field(t, got["slow"], "result.isError") != true || !strings.Contains(got["slow"], "context canceled") {
		t.Errorf("the cancelled call: %s", got["slow"])
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestNoOrphanWarningOnClose: a 2026-07-28 client with an open listen
// stream to a child server closes without warning of an orphan response:
// the child answers the listen request as its input ends, after the client
// let go of it (10 of 10 closes warned before).
func TestNoOrphanWarningOnClose(t *testing.T) {
	for range 5 {
		rec := &logRecorder{}
		cl := childServer(t, "", WithLogger(slog.New(rec)), WithToolListChangedHandler(func(context.Context) {}))
		if v := cl.ProtocolVersion(); v != Version20260728 {
			t.Fatalf("negotiated %s", v)
		}
		if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		if n := rec.count("orphan"); n != 0 {
			t.Fatalf("%d orphan warnings on close: %v", n, rec.msgs)
		}
	}
}

// TestSequentialCallsOverAPipe: over OS pipes, sequential calls each get
// their own answer.
func TestSequentialCallsOverAPipe(t *testing.T) {
	t.Parallel()
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, echoBlockServer(nil, nil), ct, st, nil)
	for i := range 50 {
		res, err := cl.CallTool(context.Background(), "echo", map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"i":%d}`, i); len(res.Content) != 1 || res.Content[0].Text != want {
			t.Fatalf("call %d answered %+v", i, res.Content)
		}
	}
}

// TestIdleClientStillReadsWhatTheServerSends: when no call waits, the
// reader goes on reading, so that a notification the server sends
// unprompted reaches its handler without waiting for a call.
func TestIdleClientStillReadsWhatTheServerSends(t *testing.T) {
	t.Parallel()
	srv := echoBlockServer(nil, nil)
	changed := make(chan struct{}, 1)
	ct, st := pipeTransports(t)
	// On 2025-11-25 the change comes as a notification; on 2026-07-28 it
	// would come on a listen stream, a call that keeps the reading busy.
	cl := serveAndConnect(t, srv, ct, st, []ClientOption{WithProtocolVersion(Version20251125), WithToolListChangedHandler(func(context.Context) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})})
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	srv.AddTool(Tool{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the list-changed notification sent to an idle client was never read")
	}
}

// TestCallOverAPipeEndsWithItsContext: over OS pipes, a call cancelled
// while it waits for its response returns context.Canceled, the server is
// told, and the connection goes on.
func TestCallOverAPipeEndsWithItsContext(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, echoBlockServer(started, cancelled), ct, st, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cl.CallTool(ctx, "block", nil)
		errc <- err
	}()
	<-started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call never returned")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was never cancelled")
	}
	for i := range 3 {
		if _, err := cl.CallTool(context.Background(), "echo", map[string]int{"i": i}); err != nil {
			t.Fatalf("call %d after the cancellation: %v", i, err)
		}
	}
}

// TestLongCallOverAPipe: over OS pipes, a call whose handler waits until
// the call's request has long been read is answered, and calls go on
// after it.
func TestLongCallOverAPipe(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := echoBlockServer(nil, nil)
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-release
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, srv, ct, st, nil)
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-started
		close(release)
	}()
	res, err := cl.CallTool(context.Background(), "wait", nil)
	if err != nil || len(res.Content) != 1 || res.Content[0].Text != "done" {
		t.Fatalf("long call = %+v, %v", res, err)
	}
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatalf("call after the long one: %v", err)
	}
}

// TestCallOverAPipeEndsAtItsDeadline: over OS pipes, a call waiting for
// its response stops at its timeout with a RequestTimeoutError, the
// server's handler is cancelled, and the connection goes on.
func TestCallOverAPipeEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, echoBlockServer(started, cancelled), ct, st, nil)
	_, err := cl.CallTool(context.Background(), "block", nil, WithTimeout(50*time.Millisecond))
	var te *RequestTimeoutError
	if !errors.As(err, &te) || te.Bound != BoundIdle {
		t.Fatalf("call past its timeout = %v, want a RequestTimeoutError on the idle bound", err)
	}
	<-started
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was never cancelled")
	}
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatalf("call after the timeout: %v", err)
	}
}

// TestABlockedRequestNeverStopsTheReading: over an OS pipe a request that
// blocks must not stop the connection from reading, so a second call that
// releases it is served, and a cancellation still reaches a blocked
// handler. (Requests once ran on the reader for a moment; none does now.)
func TestABlockedRequestNeverStopsTheReading(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "gate"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-gate:
			return &CallToolResult{Content: []Content{TextContent("through")}}, nil
		case <-time.After(10 * time.Second):
			return nil, errors.New("never released")
		}
	})
	srv.AddTool(Tool{Name: "open"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		close(gate)
		return &CallToolResult{}, nil
	})
	srv.AddTool(Tool{Name: "block"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			if v == Version20260728 {
				gate = make(chan struct{})
			}
			cl := connectOver(t, srv, "stdio", v)
			through := make(chan error, 1)
			go func() {
				res, err := cl.CallTool(context.Background(), "gate", nil)
				if err == nil && (len(res.Content) != 1 || res.Content[0].Text != "through") {
					err = fmt.Errorf("gate returned %+v", res)
				}
				through <- err
			}()
			<-started // gate blocks: open must still be read
			if _, err := cl.CallTool(context.Background(), "open", nil); err != nil {
				t.Fatalf("open: %v", err)
			}
			if err := <-through; err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := cl.CallTool(ctx, "block", nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("block: %v", err)
			}
			select {
			case err := <-cancelled:
				if err == nil {
					t.Fatal("the handler's context ended without a cause")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancellation never reached the blocked handler")
			}
		})
	}
}

// TestNoRequestRunsOnTheReader: over an OS pipe, where the reader once
// served a request that came alone, no handler runs on a connection's
// reader, sequential calls included.
func TestNoRequestRunsOnTheReader(t *testing.T) {
	t.Parallel()
	var reader atomic.Int32
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "where"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if onReader() {
			reader.Add(1)
		}
		return &CallToolResult{}, nil
	})
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, srv, ct, st, nil)
	for range 50 {
		if _, err := cl.CallTool(context.Background(), "where", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := reader.Load(); n > 0 {
		t.Fatalf("%d of 50 requests ran on the reader", n)
	}
}

// TestRequestsOfManyLengthsOverAPipe: over OS pipes, requests whose
// handlers take from nothing to 120 µs, sequential and concurrent, all get
// their answer, and nothing is left running after.
func TestRequestsOfManyLengthsOverAPipe(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "spin"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct {
			Us int `json:"us"`
		}
		json.Unmarshal(req.Params.Arguments, &args)
		for end := time.Now().Add(time.Duration(args.Us) * time.Microsecond); time.Now().Before(end); {
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(args.Us))}}, nil
	})
	ct, st := pipeTransports(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatal(err)
	}
	call := func(us int) {
		res, err := cl.CallTool(context.Background(), "spin", map[string]int{"us": us})
		if err != nil {
			t.Error(err)
			return
		}
		if len(res.Content) != 1 || res.Content[0].Text != fmt.Sprint(us) {
			t.Errorf("spin %d answered %+v", us, res.Content)
		}
	}
	for i := range 300 {
		call(i % 120)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				call((i * (g + 1)) % 120)
			}
		})
	}
	wg.Wait()
	cl.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after close, started with %d", n, before)
	}
}
