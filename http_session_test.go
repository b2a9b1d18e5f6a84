package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
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

// tokenAuthorizer names the principal of "Bearer <name>"; "Bearer -" is
// anonymous and anything else is refused.
func tokenAuthorizer(r *http.Request) (string, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || name == "" {
		return "", errors.New("a bearer token is required")
	}
	if name == "-" {
		return "", nil
	}
	return name, nil
}

// serveEnded is serveDirect with a request whose context has ended, so
// that a GET let through by mistake returns instead of streaming.
func serveEnded(h http.Handler, method, body string, header map[string]string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, method, "/mcp", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHTTPSessionBoundToPrincipal: a legacy session belongs to the
// principal whose initialize opened it; another principal, or an anonymous
// one, that names it gets the 404 of an unknown session on POST, GET and
// DELETE, and the session lives on for its owner.
func TestHTTPSessionBoundToPrincipal(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(), WithAuthorizer(AuthorizerFunc(tokenAuthorizer))).(*httpHandler)
	defer h.shutdown()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	rec := serveDirect(h, "POST", init, postHeaders("Authorization", "Bearer alice"))
	sid := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	unknown := serveDirect(h, "POST", ping, postHeaders("Authorization", "Bearer alice", "Mcp-Session-Id", "no-such-session"))
	if unknown.Code != 404 {
		t.Fatalf("an unknown session: %d %s", unknown.Code, unknown.Body)
	}
	for _, who := range []string{"Bearer bob", "Bearer -"} {
		for _, tc := range []struct {
			method, body string
			header       map[string]string
		}{
			{"POST", ping, postHeaders("Authorization", who, "Mcp-Session-Id", sid)},
			{"POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, postHeaders("Authorization", who, "Mcp-Session-Id", sid)},
			{"GET", "", map[string]string{"Authorization": who, "Mcp-Session-Id": sid, "Accept": "text/event-stream"}},
			{"GET", "", map[string]string{"Authorization": who, "Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": "0_1"}},
			{"DELETE", "", map[string]string{"Authorization": who, "Mcp-Session-Id": sid}},
		} {
			rec := serveEnded(h, tc.method, tc.body, tc.header)
			if rec.Code != 404 || rec.Body.String() != unknown.Body.String() {
				t.Errorf("%s %s as %q: %d %s, want the 404 of an unknown session", tc.method, tc.body, who, rec.Code, rec.Body)
			}
		}
	}
	if rec := serveDirect(h, "POST", ping, postHeaders("Authorization", "Bearer alice", "Mcp-Session-Id", sid)); rec.Code != 200 {
		t.Fatalf("the owner after the others tried: %d %s", rec.Code, rec.Body)
	}
	if rec := serveDirect(h, "DELETE", "", map[string]string{"Authorization": "Bearer alice", "Mcp-Session-Id": sid}); rec.Code != 204 {
		t.Fatalf("the owner's DELETE: %d %s", rec.Code, rec.Body)
	}

	// An anonymous session (empty principal) is not another principal's.
	anon := serveDirect(h, "POST", init, postHeaders("Authorization", "Bearer -"))
	asid := anon.Header().Get("Mcp-Session-Id")
	if anon.Code != 200 || asid == "" {
		t.Fatalf("anonymous initialize: %d %s", anon.Code, anon.Body)
	}
	if rec := serveDirect(h, "POST", ping, postHeaders("Authorization", "Bearer bob", "Mcp-Session-Id", asid)); rec.Code != 404 {
		t.Fatalf("bob on an anonymous session: %d %s", rec.Code, rec.Body)
	}
	if rec := serveDirect(h, "POST", ping, postHeaders("Authorization", "Bearer -", "Mcp-Session-Id", asid)); rec.Code != 200 {
		t.Fatalf("anonymous on its own session: %d %s", rec.Code, rec.Body)
	}
}

// TestSSESessionBoundToPrincipal: a 2024-11-05 session takes messages only
// from the principal that opened its event stream.
func TestSSESessionBoundToPrincipal(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(NewSSEHandler(newTestServer(), WithAuthorizer(AuthorizerFunc(tokenAuthorizer))))
	t.Cleanup(ts.Close) // after the stream is closed
	endpoint := openSSE(t, ts.URL, "Bearer alice")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for who, want := range map[string]int{"Bearer bob": 404, "Bearer -": 404, "Bearer alice": 202} {
		if r := doHTTP(t, "POST", endpoint, ping, map[string]string{"Content-Type": "application/json", "Authorization": who}); r.status != want {
			t.Errorf("POST as %q: %d, want %d: %s", who, r.status, want, r.body)
		}
	}
}

// initBody is a legacy initialize request with id 7.
const initBody = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// expectSessionRefused checks the answer to an initialize beyond a session
// cap: 503, a Retry-After and a JSON-RPC error for the request, no session.
func expectSessionRefused(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || rec.Header().Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize beyond the cap: %d, Retry-After %q, session %q: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Mcp-Session-Id"), rec.Body)
	}
	if code := field(t, rec.Body.String(), "error.code"); code != float64(CodeOverloaded) {
		t.Fatalf("error code %v: %s", code, rec.Body)
	}
	if id := field(t, rec.Body.String(), "id"); id != float64(7) {
		t.Fatalf("error id %v: %s", id, rec.Body)
	}
}

// TestHTTPMaxSessions: exactly WithMaxSessions sessions are made; when
// every one is busy (here each holds its GET stream) the next initialize
// gets 503 with Retry-After and creates nothing, however many come (20,000
// refused ones leave the heap flat); a failed initialize does not keep a
// place, a deleted session frees one, and an idle one is evicted to make
// room.
func TestHTTPMaxSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		srv := newTestServer()
		h := NewHTTPHandler(srv, WithMaxSessions(n)).(*httpHandler)
		defer h.shutdown()
		var sids []string
		for range n {
			sid := directSession(t, h)
			sids = append(sids, sid)
			defer holdGET(t, h, sid)()
		}
		expectSessionRefused(t, serveDirect(h, "POST", initBody, postHeaders()))

		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const refused = 20000
		for i := range refused {
			if rec := serveDirect(h, "POST", initBody, postHeaders()); rec.Code != 503 {
				t.Fatalf("refused initialize %d: %d %s", i, rec.Code, rec.Body)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("heap growth after %d refused initializes: %d bytes", refused, growth)
		if growth > 1<<20 {
			t.Errorf("%d refused initializes grew the heap by %d bytes, want under 1 MiB", refused, growth)
		}
		h.mu.Lock()
		live := len(h.sessions)
		h.mu.Unlock()
		if live != n {
			t.Fatalf("%d sessions, want %d", live, n)
		}

		if rec := serveDirect(h, "DELETE", "", map[string]string{"Mcp-Session-Id": sids[0]}); rec.Code != 204 {
			t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
		}
		// A failed initialize takes the free place only while it runs.
		bad := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, postHeaders())
		if field(t, bad.Body.String(), "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("bad initialize: %d %s", bad.Code, bad.Body)
		}
		idle := directSession(t, h)
		if rec := serveDirect(h, "POST", initBody, postHeaders()); rec.Code != 200 {
			t.Fatalf("an initialize with an idle session to evict: %d %s", rec.Code, rec.Body)
		}
		expectSessionGone(t, h, idle)
	})
}

// holdGET opens session sid's GET stream on h and holds it until the
// returned func is called. It runs in a synctest bubble.
func holdGET(t *testing.T, h http.Handler, sid string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "GET", "/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	synctest.Wait()
	return func() { cancel(); <-done }
}

// expectSessionGone checks that a request of session sid gets 404, the
// spec's word for "start a new session".
func expectSessionGone(t *testing.T, h http.Handler, sid string, header ...string) {
	t.Helper()
	if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders(append([]string{"Mcp-Session-Id", sid}, header...)...)); rec.Code != 404 {
		t.Fatalf("a request of an evicted session: %d %s", rec.Code, rec.Body)
	}
}

// TestHTTPMaxSessionsPerPrincipal: with an authorizer, one principal holds
// at most WithMaxSessionsPerPrincipal sessions, while others, and
// anonymous requests, still get theirs; a deleted session frees a place.
func TestHTTPMaxSessionsPerPrincipal(t *testing.T) {
	t.Parallel()
	const n = 3
	h := NewHTTPHandler(newTestServer(), WithAuthorizer(AuthorizerFunc(tokenAuthorizer)), WithMaxSessionsPerPrincipal(n), WithMaxSessions(2*n+n+1)).(*httpHandler)
	defer h.shutdown()
	open := func(who string) *httptest.ResponseRecorder {
		return serveDirect(h, "POST", initBody, postHeaders("Authorization", "Bearer "+who))
	}
	var alice []string
	for range n {
		rec := open("alice")
		if rec.Code != 200 {
			t.Fatalf("alice's initialize: %d %s", rec.Code, rec.Body)
		}
		alice = append(alice, rec.Header().Get("Mcp-Session-Id"))
	}
	expectSessionRefused(t, open("alice"))
	for range n {
		if rec := open("bob"); rec.Code != 200 {
			t.Fatalf("bob's initialize: %d %s", rec.Code, rec.Body)
		}
	}
	expectSessionRefused(t, open("bob"))
	// Anonymous sessions count only against the handler's cap (10 here).
	for range n + 1 {
		if rec := open("-"); rec.Code != 200 {
			t.Fatalf("an anonymous initialize: %d %s", rec.Code, rec.Body)
		}
	}
	// At the handler's cap (10 here) carol's initialize evicts the idle
	// session used least recently, alice's first: alice may open another.
	if rec := open("carol"); rec.Code != 200 {
		t.Fatalf("carol's initialize at the cap: %d %s", rec.Code, rec.Body)
	}
	expectSessionGone(t, h, alice[0], "Authorization", "Bearer alice")
	// Hers, at the cap still, evicts the next: alice's second.
	if rec := open("alice"); rec.Code != 200 {
		t.Fatalf("alice after one of hers was evicted: %d %s", rec.Code, rec.Body)
	}
	expectSessionGone(t, h, alice[1], "Authorization", "Bearer alice")
	rec := serveDirect(h, "DELETE", "", map[string]string{"Authorization": "Bearer alice", "Mcp-Session-Id": alice[2]})
	if rec.Code != 204 {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	if rec := open("alice"); rec.Code != 200 {
		t.Fatalf("alice after deleting one: %d %s", rec.Code, rec.Body)
	}
}

// TestHTTPSessionCapOptions: the caps' defaults, 0 for no cap, and
// negative values ignored.
func TestHTTPSessionCapOptions(t *testing.T) {
	t.Parallel()
	c := handlerConfig(nil)
	if c.maxSessions != DefaultMaxSessions || c.maxPerUser != DefaultMaxSessionsPerPrincipal {
		t.Fatalf("defaults %d, %d", c.maxSessions, c.maxPerUser)
	}
	c = handlerConfig([]HTTPHandlerOption{WithMaxSessions(0), WithMaxSessionsPerPrincipal(0)})
	if c.maxSessions != 0 || c.maxPerUser != 0 {
		t.Fatalf("0 gave %d, %d", c.maxSessions, c.maxPerUser)
	}
	c = handlerConfig([]HTTPHandlerOption{WithMaxSessions(-1), WithMaxSessionsPerPrincipal(-1)})
	if c.maxSessions != DefaultMaxSessions || c.maxPerUser != DefaultMaxSessionsPerPrincipal {
		t.Fatalf("negative values gave %d, %d", c.maxSessions, c.maxPerUser)
	}
	// No cap: more sessions than a cap of 2 would allow.
	h := NewHTTPHandler(newTestServer(), WithMaxSessions(2), WithMaxSessions(0)).(*httpHandler)
	defer h.shutdown()
	for range 3 {
		directSession(t, h)
	}
}

// TestHTTPSessionIDValidation: a session id that is not visible ASCII gets
// 400 with a JSON-RPC error on POST, GET and DELETE, and is never looked
// up: not even a session registered under that very id is found.
func TestHTTPSessionIDValidation(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer()).(*httpHandler)
	defer h.shutdown()
	bad := []string{"a b", "a\tb", "a\x7fb", "a\x01b", "sé", "a\xffb", "\x00"}
	for _, id := range bad {
		// Register a live session under the bad id: were the id looked
		// up, the request would reach it.
		sess := h.session(directSession(t, h))
		h.mu.Lock()
		h.sessions[id] = sess
		h.mu.Unlock()
		for _, tc := range []struct {
			method, body string
			header       map[string]string
		}{
			{"POST", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", id)},
			{"GET", "", map[string]string{"Mcp-Session-Id": id, "Accept": "text/event-stream"}},
			{"DELETE", "", map[string]string{"Mcp-Session-Id": id}},
		} {
			rec := serveEnded(h, tc.method, tc.body, tc.header)
			if rec.Code != 400 || field(t, rec.Body.String(), "error.code") != float64(CodeInvalidRequest) {
				t.Errorf("%s with session id %q: %d %s, want 400 with a JSON-RPC error", tc.method, id, rec.Code, rec.Body)
			}
		}
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	}
	// Every visible ASCII byte is allowed: an unknown id is 404.
	var all []byte
	for c := byte(0x21); c <= 0x7e; c++ {
		all = append(all, c)
	}
	if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", string(all))); rec.Code != 404 {
		t.Errorf("an unknown visible ASCII id: %d %s", rec.Code, rec.Body)
	}
}

// TestHTTPSessionMapShrinks: the session map gives back its memory after
// 100,000 sessions ended (a Go map keeps its peak size, so forget rebuilds
// it when few are left). The sessions are bare, registered and forgotten
// through the handler's own bookkeeping, as newSession and a DELETE or an
// expiry do.
func TestHTTPSessionMapShrinks(t *testing.T) {
	h := NewHTTPHandler(newTestServer(), WithMaxSessions(0)).(*httpHandler)
	const n = 100_000
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	sessions := make([]*httpSession, n)
	for i := range sessions {
		s := &httpSession{h: h, id: strconv.Itoa(i), ss: &serverSession{}}
		if err := h.reserveSession(""); err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		h.registerLocked(s)
		h.mu.Unlock()
		sessions[i] = s
	}
	full := heap()
	for _, s := range sessions {
		h.forget(s)
	}
	clear(sessions)
	after := heap()
	t.Logf("heap: %d bytes with %d sessions, %d bytes after they ended", full-before, n, after-before)
	if after-before > 256<<10 {
		t.Errorf("the handler holds %d bytes after every session ended, want under 256 KiB", after-before)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sessions) != 0 || h.sessionsLive != 0 || h.sessionsPeak > 1024 {
		t.Fatalf("%d sessions, %d counted, peak %d", len(h.sessions), h.sessionsLive, h.sessionsPeak)
	}
}
