package mcp

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// TestHTTPSessionIDs: each initialize makes a new session whose id is
// visible ASCII with at least 128 bits of randomness, given only on the
// initialize response; DELETE ends it.
func TestHTTPSessionIDs(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	seen := map[string]bool{}
	for range 20 {
		sid := legacySession(t, ts.URL, Version20250618)
		if len(sid) < 22 || seen[sid] {
			t.Fatalf("session id %q: too short or repeated", sid)
		}
		for _, c := range []byte(sid) {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("session id %q is not visible ASCII", sid)
			}
		}
		seen[sid] = true
	}
	sid := legacySession(t, ts.URL, Version20250618)
	r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, postHeaders("Mcp-Session-Id", sid))
	if r.status != 200 || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a later response: %d, session header %q", r.status, r.header.Get("Mcp-Session-Id"))
	}
	if d := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}); d.status != 204 {
		t.Fatalf("DELETE: %d %s", d.status, d.body)
	}
	if r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != 404 {
		t.Fatalf("after DELETE: %d %s", r.status, r.body)
	}
	// A failed initialize leaves no session behind.
	r = doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, postHeaders())
	if field(t, r.body, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("bad initialize: %s", r.body)
	}
	if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
		if p := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); p.status != 404 {
			t.Fatalf("the session of a failed initialize lives: %d", p.status)
		}
	}
}

// TestHTTPSessionExpiry: a session idle for the session timeout ends and
// frees everything; activity, and an open GET stream, keep it alive.
func TestHTTPSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newTestServer()
		h := NewHTTPHandler(srv, WithSessionTimeout(time.Minute)).(*httpHandler)
		ping := func(sid string) int {
			return serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)).Code
		}
		sid := directSession(t, h)
		for range 3 {
			time.Sleep(50 * time.Second)
			if code := ping(sid); code != 200 {
				t.Fatalf("an active session answered %d", code)
			}
		}
		// An open GET stream is activity too.
		ctx, closeGET := context.WithCancel(context.Background())
		getDone := make(chan struct{})
		go func() {
			defer close(getDone)
			req := httptest.NewRequestWithContext(ctx, "GET", "/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
		time.Sleep(5 * time.Minute)
		if code := ping(sid); code != 200 {
			t.Fatalf("a session with an open GET stream answered %d", code)
		}
		closeGET()
		<-getDone
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if code := ping(sid); code != 404 {
			t.Fatalf("an expired session answered %d", code)
		}
		h.mu.Lock()
		n := len(h.sessions)
		h.mu.Unlock()
		srv.sessionsMu.Lock()
		m := len(srv.sessions)
		srv.sessionsMu.Unlock()
		if n != 0 || m != 0 {
			t.Fatalf("%d handler sessions and %d server sessions left", n, m)
		}
	})
}

// idleSessionCost creates n legacy sessions on a fresh handler and
// measures the heap bytes and goroutines each holds while idle.
func idleSessionCost(tb testing.TB, n int) (bytesPerSession, goroutinesPerSession float64) {
	h := NewHTTPHandler(newTestServer()).(*httpHandler)
	defer h.shutdown()
	directSession(tb, h) // warm up lazily built state
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := runtime.NumGoroutine()
	for range n {
		directSession(tb, h)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	goroutines := runtime.NumGoroutine() - g
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n), float64(goroutines) / float64(n)
}

// TestHTTPIdleSessionCost: 1,000 idle legacy sessions hold no goroutine
// and at most 4 KiB each.
func TestHTTPIdleSessionCost(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	bytes, goroutines := idleSessionCost(t, 1000)
	t.Logf("idle legacy session: %.0f heap bytes, %.3f goroutines", bytes, goroutines)
	if goroutines > 0.01 {
		t.Errorf("%.3f goroutines per idle session, want 0", goroutines)
	}
	if bytes > 4096 {
		t.Errorf("%.0f bytes per idle session, want at most 4096", bytes)
	}
}

// BenchmarkHTTPIdleSessions measures 1,000 concurrent idle legacy
// sessions: heap bytes and goroutines per session.
func BenchmarkHTTPIdleSessions(b *testing.B) {
	var bytes, goroutines float64
	for b.Loop() {
		bytes, goroutines = idleSessionCost(b, 1000)
	}
	b.ReportMetric(bytes, "B/session")
	b.ReportMetric(goroutines, "goroutines/session")
}
