package mcp

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHTTPSessionEvictionOrder: at the session cap an initialize evicts an
// idle session, never one with a request in progress: first the sessions
// that served nothing after their initialize, oldest first, then the one
// used least recently.
func TestHTTPSessionEvictionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHTTPHandler(newTestServer(), WithMaxSessions(4)).(*httpHandler)
		defer h.shutdown()
		a, b, c, d := directSession(t, h), directSession(t, h), directSession(t, h), directSession(t, h)
		post := func(sid, body string) int {
			return serveDirect(h, "POST", body, postHeaders("Mcp-Session-Id", sid)).Code
		}
		// a, the oldest, is busy with a call that lasts a minute.
		busy := make(chan int)
		go func() {
			busy <- post(a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":1,"delayMs":60000}}}`)
		}()
		synctest.Wait()
		time.Sleep(time.Second)
		if code := post(b, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != 200 {
			t.Fatalf("ping: %d", code)
		}
		// Idle now, least recently used first: c, d, b.
		fresh := serveDirect(h, "POST", initBody, postHeaders())
		if fresh.Code != 200 {
			t.Fatalf("initialize at the cap: %d %s", fresh.Code, fresh.Body)
		}
		expectSessionGone(t, h, c)
		// The new session has served nothing since its initialize: it goes
		// before d, which a client used.
		if rec := serveDirect(h, "POST", initBody, postHeaders()); rec.Code != 200 {
			t.Fatalf("initialize at the cap: %d %s", rec.Code, rec.Body)
		}
		expectSessionGone(t, h, fresh.Header().Get("Mcp-Session-Id"))
		for _, sid := range []string{b, d} {
			if code := post(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != 200 {
				t.Fatalf("ping of a session not evicted: %d", code)
			}
		}
		if code := <-busy; code != 200 {
			t.Fatalf("the busy session's call: %d", code)
		}
		if code := post(a, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != 200 {
			t.Fatalf("ping of the busy session: %d", code)
		}
	})
}

// TestHTTPSessionFlood: 12,000 anonymous initializes, the last 2,000 at
// the default cap, neither stop the calls of a client that uses its
// session nor keep a new client out; the oldest flood sessions make room.
func TestHTTPSessionFlood(t *testing.T) {
	const flood = DefaultMaxSessions + 2000
	h := NewHTTPHandler(newTestServer()).(*httpHandler)
	defer h.shutdown()
	ts := httptest.NewServer(h)
	defer ts.Close()
	connect := func() (*Client, error) {
		cl := NewClient(Implementation{Name: "worker", Version: "1"}, WithProtocolVersion(Version20251125))
		// No GET stream: between calls the session is idle, and only its
		// recent use protects it.
		return cl, cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithoutStandaloneStream()))
	}
	worker, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()

	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		refused  atomic.Int64
		firstSID atomic.Value
	)
	start := time.Now()
	for range 4 {
		wg.Go(func() {
			for next.Add(1) <= flood {
				rec := serveDirect(h, "POST", initBody, postHeaders())
				if rec.Code != 200 {
					refused.Add(1)
					continue
				}
				firstSID.CompareAndSwap(nil, rec.Header().Get("Mcp-Session-Id"))
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	calls := 0
	for flooding := true; flooding; calls++ {
		select {
		case <-done:
			flooding = false
		default:
		}
		if _, err := worker.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatalf("the working client's call %d during the flood: %v", calls, err)
		}
	}
	elapsed := time.Since(start)
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	h.mu.Lock()
	live := len(h.sessions)
	h.mu.Unlock()
	t.Logf("%d initializes in %v, %d refused; %d calls of the working client went through; %d sessions, heap %d MiB", flood, elapsed.Round(time.Millisecond), refused.Load(), calls, live, m.HeapAlloc>>20)
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d initializes refused at the cap", n)
	}
	if live != DefaultMaxSessions {
		t.Fatalf("%d sessions, want the cap, %d", live, DefaultMaxSessions)
	}
	expectSessionGone(t, h, firstSID.Load().(string))
	if _, err := worker.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatalf("the working client after the flood: %v", err)
	}
	newcomer, err := connect()
	if err != nil {
		t.Fatalf("a new client after the flood: %v", err)
	}
	defer newcomer.Close()
	if _, err := newcomer.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatalf("a new client's call after the flood: %v", err)
	}
}

// TestSharedSessionEvictionKeepsCopies: a copy of a shared session loaded
// for a request counts as used, so an initialize at the cap evicts a
// session that served nothing since its initialize before it.
func TestSharedSessionEvictionKeepsCopies(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2, WithMaxSessions(2))
	first := legacySession(t, c.url(0), Version20251125)
	if r := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", first)); r.status != 200 {
		t.Fatalf("ping on instance 1: %d %s", r.status, r.body)
	}
	for i := range 2 { // the second evicts the first
		if r := doHTTP(t, "POST", c.url(1), initBody, postHeaders()); r.status != 200 {
			t.Fatalf("initialize %d on instance 1: %d %s", i, r.status, r.body)
		}
	}
	if n := c.holders(first); n != 2 {
		t.Fatalf("%d copies of the session in use, want 2", n)
	}
}

// TestHTTPSessionEvictionSparesRunningHandlers: a session whose POST went
// away while its handlers run on (a 2025-03-26 batch, answered on a stream
// the client may resume) is in use, not idle: the cap evicts another.
func TestHTTPSessionEvictionSparesRunningHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := newTestServer()
		srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			<-release
			return &CallToolResult{}, nil
		})
		h := NewHTTPHandler(srv, WithMaxSessions(2)).(*httpHandler)
		defer h.shutdown()
		rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
		a := rec.Header().Get("Mcp-Session-Id")
		if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, postHeaders("Mcp-Session-Id", a, "Mcp-Protocol-Version", "2025-03-26")); rec.Code != 202 {
			t.Fatalf("initialized: %d", rec.Code)
		}
		b := directSession(t, h)
		// a's call waits; its client leaves.
		ctx, leave := context.WithCancel(context.Background())
		left := make(chan struct{})
		go func() {
			defer close(left)
			req := httptest.NewRequestWithContext(ctx, "POST", "/mcp", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}]`))
			for k, v := range postHeaders("Mcp-Session-Id", a, "Mcp-Protocol-Version", "2025-03-26") {
				req.Header.Set(k, v)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
		synctest.Wait()
		leave()
		<-left
		if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders("Mcp-Session-Id", b)); rec.Code != 200 {
			t.Fatalf("ping: %d", rec.Code)
		}
		// b was used last, but a's handler still runs.
		if rec := serveDirect(h, "POST", initBody, postHeaders()); rec.Code != 200 {
			t.Fatalf("initialize at the cap: %d %s", rec.Code, rec.Body)
		}
		expectSessionGone(t, h, b)
		close(release)
		synctest.Wait()
		if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", a, "Mcp-Protocol-Version", "2025-03-26")); rec.Code != 200 {
			t.Fatalf("the session whose handler ran on: %d %s", rec.Code, rec.Body)
		}
	})
}
