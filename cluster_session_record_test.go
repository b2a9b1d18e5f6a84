package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// sessionCluster is a server run as several instances, each a Server behind its
// own handler on loopback, sharing a session store, an event store and a
// broadcaster, behind a round-robin proxy with no affinity.
type sessionCluster struct {
	servers  []*Server
	handlers []*httpHandler
	backends []*httptest.Server
	proxy    *httptest.Server
	store    *checkedSessionStore
	events   *MemoryEventStore
	bc       *checkedBroadcaster
	log      *logRecorder // every instance's log
	cancel   context.CancelFunc
}

// newSessionCluster starts n instances of newTestServer with opts on each handler.
func newSessionCluster(t *testing.T, n int, opts ...HTTPHandlerOption) *sessionCluster {
	t.Helper()
	c := &sessionCluster{events: NewMemoryEventStore(1 << 20), log: &logRecorder{}}
	c.store = &checkedSessionStore{MemorySessionStore: NewMemorySessionStore(), t: t, c: c, calls: map[string]int{}}
	c.bc = &checkedBroadcaster{MemoryBroadcaster: NewMemoryBroadcaster(), t: t, c: c, kinds: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for range n {
		srv := newTestServer(WithBroadcaster(c.bc), WithLogger(slog.New(c.log)))
		h := NewHTTPHandler(srv, append([]HTTPHandlerOption{WithContext(ctx), WithSessionStore(c.store), WithEventStore(c.events)}, opts...)...)
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close) // after the proxy's
		c.servers = append(c.servers, srv)
		c.handlers = append(c.handlers, h.(*httpHandler))
		c.backends = append(c.backends, ts)
	}
	t.Cleanup(cancel) // the instances end before their test servers close
	c.proxy = roundRobinProxy(t, c.backends, nil)
	return c
}

// close ends the instances and the proxy before the test does.
func (c *sessionCluster) close() {
	c.cancel()
	c.proxy.Close()
	for _, ts := range c.backends {
		ts.Close()
	}
}

// url is the address of instance i.
func (c *sessionCluster) url(i int) string { return c.backends[i].URL }

// holders counts the instances that hold a copy of session sid.
func (c *sessionCluster) holders(sid string) int {
	n := 0
	for _, h := range c.handlers {
		if h.session(sid) != nil {
			n++
		}
	}
	return n
}

// checkLocks fails the test when a store or broadcaster call for session
// sid is made while a handler's lock or the session's is held: it takes
// each in turn, which the calling goroutine could not if it held one.
func (c *sessionCluster) checkLocks(t *testing.T, method, sid string) {
	for _, h := range c.handlers {
		var sess *httpSession
		takeLock(t, method, "handler", &h.mu, func() { sess = h.sessions[sid] })
		if sess != nil {
			takeLock(t, method, "session", &sess.mu, func() {})
		}
	}
}

// checkedSessionStore is a MemorySessionStore that counts its calls,
// checks that no lock is held across them, and fails while down is set.
type checkedSessionStore struct {
	*MemorySessionStore
	t    *testing.T
	c    *sessionCluster
	down atomic.Bool

	mu      sync.Mutex
	calls   map[string]int
	touched func() // called at the first Touch
	loaded  func() // called after the next Load has read the record
	// saving, when set, is called before each Save, with no lock held; an
	// error it returns is the Save's.
	saving func(rec *SessionRecord) error
}

// onSave has f called before each Save from now on (nil: none).
func (s *checkedSessionStore) onSave(f func(rec *SessionRecord) error) {
	s.mu.Lock()
	s.saving = f
	s.mu.Unlock()
}

// onTouch has f called at the next Touch.
func (s *checkedSessionStore) onTouch(f func()) {
	s.mu.Lock()
	s.touched = f
	s.mu.Unlock()
}

func (s *checkedSessionStore) enter(method, id string) error {
	s.c.checkLocks(s.t, "SessionStore."+method, id)
	s.mu.Lock()
	s.calls[method]++
	if f := s.touched; f != nil && method == "Touch" {
		s.touched = nil
		defer f()
	}
	s.mu.Unlock()
	if s.down.Load() {
		return errStoreDown
	}
	return nil
}

// count is how many calls of method were made, or of all for "".
func (s *checkedSessionStore) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return countOf(s.calls, method)
}

// countOf is counts[key], or the sum of all counts for "".
func countOf(counts map[string]int, key string) int {
	if key != "" {
		return counts[key]
	}
	n := 0
	for _, k := range counts {
		n += k
	}
	return n
}

func (s *checkedSessionStore) Save(ctx context.Context, rec *SessionRecord, ttl time.Duration) error {
	if err := s.enter("Save", rec.ID); err != nil {
		return err
	}
	s.mu.Lock()
	f := s.saving
	s.mu.Unlock()
	if f != nil {
		if err := f(rec); err != nil {
			return err
		}
	}
	return s.MemorySessionStore.Save(ctx, rec, ttl)
}

func (s *checkedSessionStore) Load(ctx context.Context, id string) (*SessionRecord, error) {
	if err := s.enter("Load", id); err != nil {
		return nil, err
	}
	rec, err := s.MemorySessionStore.Load(ctx, id)
	s.mu.Lock()
	f := s.loaded
	s.loaded = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return rec, err
}

// onLoad has f called after the next Load has read the record, before
// it returns it.
func (s *checkedSessionStore) onLoad(f func()) {
	s.mu.Lock()
	s.loaded = f
	s.mu.Unlock()
}

func (s *checkedSessionStore) Touch(ctx context.Context, id string, ttl time.Duration) error {
	if err := s.enter("Touch", id); err != nil {
		return err
	}
	return s.MemorySessionStore.Touch(ctx, id, ttl)
}

func (s *checkedSessionStore) Delete(ctx context.Context, id string) error {
	if err := s.enter("Delete", id); err != nil {
		return err
	}
	return s.MemorySessionStore.Delete(ctx, id)
}

// only returns the id of the one session in the store.
func (s *checkedSessionStore) only(t *testing.T) string {
	t.Helper()
	s.MemorySessionStore.mu.Lock()
	defer s.MemorySessionStore.mu.Unlock()
	if len(s.MemorySessionStore.sessions) != 1 {
		t.Fatalf("the store holds %d sessions, want 1", len(s.MemorySessionStore.sessions))
	}
	for id := range s.MemorySessionStore.sessions {
		return id
	}
	return ""
}

// checkedBroadcaster is a MemoryBroadcaster that counts what is published
// on session channels by kind, and the subscriptions, and checks that no
// lock is held meanwhile.
type checkedBroadcaster struct {
	*MemoryBroadcaster
	t *testing.T
	c *sessionCluster

	mu    sync.Mutex
	kinds map[string]int
	dead  map[string]bool // instances whose words on session channels are lost, as if killed
}

// kill loses, from now on, what instance publishes on session channels,
// as when it is killed: it never says that it let a stream go.
func (b *checkedBroadcaster) kill(instance string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead == nil {
		b.dead = map[string]bool{}
	}
	b.dead[instance] = true
}

func (b *checkedBroadcaster) Publish(ctx context.Context, channel string, msg []byte) error {
	sid, session := strings.CutPrefix(channel, "mcp:session:")
	b.c.checkLocks(b.t, "Broadcaster.Publish", sid)
	if session {
		b.mu.Lock()
		kind, _ := fieldOrNil(string(msg), "kind").(string)
		b.kinds[kind]++
		from, _ := fieldOrNil(string(msg), "from").(string)
		dead := b.dead[from]
		b.mu.Unlock()
		if dead {
			return nil
		}
	}
	return b.MemoryBroadcaster.Publish(ctx, channel, msg)
}

func (b *checkedBroadcaster) Subscribe(ctx context.Context, channel string, deliver func([]byte)) (func(), error) {
	sid, session := strings.CutPrefix(channel, "mcp:session:")
	b.c.checkLocks(b.t, "Broadcaster.Subscribe", sid)
	if session {
		b.mu.Lock()
		b.kinds["(subscribe)"]++
		b.mu.Unlock()
	}
	return b.MemoryBroadcaster.Subscribe(ctx, channel, deliver)
}

// count is how many messages of kind were published, or of all for "".
func (b *checkedBroadcaster) count(kind string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return countOf(b.kinds, kind)
}

// connectCluster connects a client on revision v through the proxy.
func connectCluster(t *testing.T, c *sessionCluster, v string, opts ...ClientOption) *Client {
	t.Helper()
	cl := NewClient(Implementation{Name: "cluster-client", Version: "1"}, append([]ClientOption{WithProtocolVersion(v)}, opts...)...)
	if err := cl.Connect(context.Background(), NewHTTPTransport(c.proxy.URL)); err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestSharedSessionCallsOnEveryInstance: a 2025-11-25 client whose
// requests land on three instances in turn gets every call answered with
// all its progress reports, each before its answer, none twice; each
// instance loads the session once, and the calls make no other store call.
// Everything ends with the client and the instances.
func TestSharedSessionCallsOnEveryInstance(t *testing.T) {
	before := runtime.NumGoroutine()
	c := newSessionCluster(t, 3)
	cl := connectCluster(t, c, Version20251125)
	const calls, steps = 30, 5
	for i := range calls {
		var reports atomic.Int32
		res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": steps}, WithProgress(func(p Progress) {
			if int(p.Progress) != int(reports.Add(1)) {
				t.Errorf("call %d: progress %v out of order", i, p.Progress)
			}
		}))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := textOf(res); got != fmt.Sprintf("%d steps", steps) {
			t.Fatalf("call %d: %q", i, got)
		}
		if n := reports.Load(); n != steps {
			t.Fatalf("call %d: %d progress reports before the answer, want %d", i, n, steps)
		}
	}
	sid := c.store.only(t)
	if n := c.holders(sid); n != 3 {
		t.Fatalf("%d instances served the session, want 3", n)
	}
	if n := c.store.count("Save"); n != 1 {
		t.Errorf("%d Saves, want 1 (initialize)", n)
	}
	if n := c.store.count("Load"); n < 2 || n > 4 {
		t.Errorf("%d Loads, want one or two per instance that did not create the session", n)
	}
	if n := c.store.count("Touch"); n != 0 {
		t.Errorf("%d Touches within a quarter of the session timeout, want none", n)
	}
	cl.Close()
	c.close()
	settleGoroutines(t, before)
}

// textOf is the text of a tool result's first content.
func textOf(res *CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// TestSharedSessionStoreDown: while the session store fails, a request
// that needs it (a session this instance does not hold, an initialize) gets
// 503 naming the store and the step, and is logged; a session held here
// keeps being served; once the store is back, every instance serves it.
func TestSharedSessionStoreDown(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	sid := legacySession(t, c.url(0), Version20251125)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}`
	c.store.down.Store(true)
	r := doHTTP(t, "POST", c.url(1), call, postHeaders("Mcp-Session-Id", sid))
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "session store failed") || !strings.Contains(r.body, "cannot load session "+sid) || !strings.Contains(r.body, errStoreDown.Error()) {
		t.Fatalf("with the store down, on another instance: %d %s", r.status, r.body)
	}
	s := c.handlers[0].session(sid)
	s.mu.Lock()
	s.replica.lastTouch = time.Time{} // due for a touch, which fails
	s.mu.Unlock()
	for range 2 {
		if r := doHTTP(t, "POST", c.url(0), call, postHeaders("Mcp-Session-Id", sid)); r.status != 200 || !strings.Contains(r.body, `\"x\":1`) {
			t.Fatalf("with the store down, where the session is held: %d %s", r.status, r.body)
		}
	}
	if n := c.store.count("Touch"); n != 1 {
		t.Fatalf("%d touches tried, want 1: a failed one counts for the interval", n)
	}
	for _, logged := range []string{"a legacy session is unavailable: the session store failed", "cannot touch a legacy session"} {
		if c.log.count(logged) == 0 {
			t.Errorf("not logged: %q", logged)
		}
	}
	init := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
	if !strings.Contains(init.body, "cannot save session") || c.holders(init.header.Get("Mcp-Session-Id")) != 0 {
		t.Fatalf("initialize with the store down: %d %s", init.status, init.body)
	}
	c.store.down.Store(false)
	if r := doHTTP(t, "POST", c.url(1), call, postHeaders("Mcp-Session-Id", sid)); r.status != 200 || !strings.Contains(r.body, `\"x\":1`) {
		t.Fatalf("once the store is back: %d %s", r.status, r.body)
	}
}

// TestSharedSessionOtherPrincipal: a session is its principal's on every
// instance: another principal gets 404 wherever it asks, the owner is
// served wherever it asks.
func TestSharedSessionOtherPrincipal(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })))
	init := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders("X-User", "alice"))
	sid := init.header.Get("Mcp-Session-Id")
	if init.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for i := range 3 {
		if r := doHTTP(t, "POST", c.url(i), ping, postHeaders("Mcp-Session-Id", sid, "X-User", "bob")); r.status != http.StatusNotFound {
			t.Fatalf("bob on instance %d: %d %s", i, r.status, r.body)
		}
		if r := doHTTP(t, "DELETE", c.url(i), "", map[string]string{"Mcp-Session-Id": sid, "X-User": "bob"}); r.status != http.StatusNotFound {
			t.Fatalf("bob's DELETE on instance %d: %d %s", i, r.status, r.body)
		}
	}
	for i := range 3 {
		if r := doHTTP(t, "POST", c.url(i), ping, postHeaders("Mcp-Session-Id", sid, "X-User", "alice")); r.status != 200 {
			t.Fatalf("alice on instance %d: %d %s", i, r.status, r.body)
		}
	}
}

// TestSharedSessionStateFollows: what the client set on one instance, its
// log level, is what another instance that loads the session serves by.
func TestSharedSessionStateFollows(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	sid := legacySession(t, c.url(0), Version20251125)
	if r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
		t.Fatalf("setLevel: %d %s", r.status, r.body)
	}
	if n := c.store.count("Save"); n != 2 {
		t.Fatalf("%d Saves, want 2 (initialize, setLevel)", n)
	}
	r := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log"}}`, postHeaders("Mcp-Session-Id", sid))
	if r.status != 200 || strings.Count(r.body, `"method":"notifications/message"`) != 1 || !strings.Contains(r.body, `"level":"error"`) {
		t.Fatalf("a call on the other instance logged: %d %s", r.status, r.body)
	}
}

// TestSharedSessionDeleteEverywhere: DELETE on one instance ends the
// session on every instance that held a copy, and in the store.
func TestSharedSessionDeleteEverywhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	sid := legacySession(t, c.url(0), Version20251125)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for i := range 3 {
		if r := doHTTP(t, "POST", c.url(i), ping, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
			t.Fatalf("ping on instance %d: %d %s", i, r.status, r.body)
		}
	}
	if n := c.holders(sid); n != 3 {
		t.Fatalf("%d copies, want 3", n)
	}
	if r := doHTTP(t, "DELETE", c.url(1), "", map[string]string{"Mcp-Session-Id": sid}); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if n := c.holders(sid); n != 0 {
		t.Fatalf("%d copies after DELETE, want none", n)
	}
	if n := c.bc.count(relayDelete); n != 1 {
		t.Fatalf("%d deletes published, want 1", n)
	}
	for i := range 3 {
		if r := doHTTP(t, "POST", c.url(i), ping, postHeaders("Mcp-Session-Id", sid)); r.status != http.StatusNotFound {
			t.Fatalf("ping on instance %d after DELETE: %d %s", i, r.status, r.body)
		}
	}
}

// TestSharedSessionEndedElsewhere: a copy of a session that the store no
// longer holds, with no word from the broadcaster, goes at its next touch.
func TestSharedSessionEndedElsewhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	sid := legacySession(t, c.url(0), Version20251125)
	c.store.MemorySessionStore.Delete(context.Background(), sid)
	s := c.handlers[0].session(sid)
	s.mu.Lock()
	s.replica.lastTouch = time.Time{} // due for a touch
	s.mu.Unlock()
	if r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != http.StatusNotFound {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	if n := c.holders(sid); n != 0 {
		t.Fatalf("%d copies, want none", n)
	}
}

// TestSessionStoreUnset: without a SessionStore the handler makes no store
// or broadcaster call, and its ids are as before: numbers for its asks,
// plain stream numbers in event ids.
func TestSessionStoreUnset(t *testing.T) {
	t.Parallel()
	c := &sessionCluster{}
	c.bc = &checkedBroadcaster{MemoryBroadcaster: NewMemoryBroadcaster(), t: t, c: c, kinds: map[string]int{}}
	srv := newTestServer(WithBroadcaster(c.bc))
	ts := serveHTTP(t, srv)
	sid := legacySession(t, ts.URL, Version20251125)
	r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":1},"_meta":{"progressToken":"p"}}}`, postHeaders("Mcp-Session-Id", sid))
	if r.status != 200 || !strings.Contains(r.body, "id: 2_1\n") {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	if doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}).status != http.StatusNoContent {
		t.Fatal("DELETE failed")
	}
	if n := c.bc.count(""); n != 0 {
		t.Fatalf("published %d messages without a session store", n)
	}
}

// TestSharedSessionTouchEvery: a copy held here is touched in the store
// once a quarter of the session timeout has passed since its last Save or
// Touch, and not before.
func TestSharedSessionTouchEvery(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1, WithSessionTimeout(time.Hour))
	sid := legacySession(t, c.url(0), Version20251125)
	s := c.handlers[0].session(sid)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tc := range []struct {
		since   time.Duration
		touches int
	}{
		{15*time.Minute - time.Minute, 0}, // within a quarter hour
		{15*time.Minute + time.Second, 1}, // past it
		{0, 1},                            // just touched
	} {
		if tc.since > 0 {
			s.mu.Lock()
			s.replica.lastTouch = time.Now().Add(-tc.since)
			s.mu.Unlock()
		}
		if r := doHTTP(t, "POST", c.url(0), ping, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
			t.Fatalf("ping: %d %s", r.status, r.body)
		}
		if n := c.store.count("Touch"); n != tc.touches {
			t.Fatalf("%v after the last touch: %d touches, want %d", tc.since, n, tc.touches)
		}
	}
}

// TestSharedSessionRestoreCapped: a copy of a session made from the store
// counts against the instance's session cap like a new one; at the cap it
// evicts the idle copy used least recently, whose record stays in the
// store, so that session's next request loads it again.
func TestSharedSessionRestoreCapped(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2, WithMaxSessions(1))
	first := legacySession(t, c.url(0), Version20251125)
	second := legacySession(t, c.url(1), Version20251125) // instance 1 is full
	ping := func(i int, sid string) {
		t.Helper()
		r := doHTTP(t, "POST", c.url(i), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid))
		if r.status != http.StatusOK {
			t.Fatalf("ping on instance %d: %d %s", i, r.status, r.body)
		}
	}
	ping(1, first)
	if f, s := c.holders(first), c.holders(second); f != 2 || s != 0 {
		t.Fatalf("%d copies of the first, %d of the evicted second; want 2, 0", f, s)
	}
	ping(1, second)
	if f, s := c.holders(first), c.holders(second); f != 1 || s != 1 {
		t.Fatalf("%d copies of the first, %d of the second; want 1, 1", f, s)
	}
}

// TestSharedSessionModernUntouched: 2026-07-28 calls through the same
// instances make no session store call.
func TestSharedSessionModernUntouched(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	cl := connectCluster(t, c, Version20260728)
	defer cl.Close()
	for i := range 6 {
		var reports atomic.Int32
		res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": 3}, WithProgress(func(Progress) { reports.Add(1) }))
		if err != nil || textOf(res) != "3 steps" || reports.Load() != 3 {
			t.Fatalf("call %d: %v %v, %d reports", i, textOf(res), err, reports.Load())
		}
	}
	if n := c.store.count(""); n != 0 {
		t.Fatalf("%d session store calls on 2026-07-28", n)
	}
}

// TestSharedSessionStoreDownClient: our client behind the proxy sees the
// calls that land where the session must be loaded fail with the store's
// 503 while the store is down, and its connection serves every call once
// the store is back.
func TestSharedSessionStoreDownClient(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	cl := connectCluster(t, c, Version20251125, WithRequestTimeout(10*time.Second))
	defer cl.Close()
	sid := c.store.only(t)
	for _, h := range c.handlers { // no copies: every call needs the store
		if s := h.session(sid); s != nil {
			s.conn.close(errors.New("dropped by the test"))
		}
	}
	c.store.down.Store(true)
	_, err := cl.CallTool(context.Background(), "echo", map[string]int{"x": 1})
	if err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "session store failed") {
		t.Fatalf("a call with the store down: %v", err)
	}
	c.store.down.Store(false)
	for i := range 6 {
		if res, err := cl.CallTool(context.Background(), "echo", map[string]int{"x": i}); err != nil || textOf(res) != fmt.Sprintf(`{"x":%d}`, i) {
			t.Fatalf("call %d once the store is back: %v %v", i, textOf(res), err)
		}
	}
}

// TestSharedSessionCopyEndingAsARequestComes: a request that finds this
// instance's copy of a session already ending (idle here, or dropped) is
// served by a fresh copy from the store, not refused with 404: the session
// lives on. Before, it got 404, and a client whose notifications/initialized
// met such a copy lost its connection (TestSharedSessionStoreDownClient
// failed so once in CI).
func TestSharedSessionCopyEndingAsARequestComes(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1)
	cl := connectCluster(t, c, Version20251125, WithRequestTimeout(10*time.Second))
	defer cl.Close()
	sid := c.store.only(t)
	old := c.handlers[0].session(sid)
	old.mu.Lock()
	old.closed = true // ending: begin refuses it, it is still in the map
	old.mu.Unlock()
	res, err := cl.CallTool(context.Background(), "echo", map[string]int{"x": 1})
	if err != nil || textOf(res) != `{"x":1}` {
		t.Fatalf("a call as the copy ends: %v %v", textOf(res), err)
	}
	if now := c.handlers[0].session(sid); now == nil || now == old {
		t.Fatalf("the call was not served by a fresh copy: %p, the old one %p", now, old)
	}
	old.mu.Lock()
	old.closed = false // let its close run to its end
	old.mu.Unlock()
	old.conn.close(errors.New("ended by the test"))
	if res, err := cl.CallTool(context.Background(), "echo", map[string]int{"x": 2}); err != nil || textOf(res) != `{"x":2}` {
		t.Fatalf("a call after the old copy closed: %v %v", textOf(res), err)
	}
}

// TestSharedSessionChangesAtOnce: two requests that change one session on
// two instances at the same moment, a logging/setLevel whose Save is held
// until a resources/subscribe elsewhere was saved and answered, both end up
// in the store and in a copy made later from it. Before records had a
// revision, the held Save wrote the whole record over the other and the
// subscription was lost from the store.
func TestSharedSessionChangesAtOnce(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	addResources(c, "res://a")
	sid := legacySession(t, c.url(0), Version20251125)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if r := doHTTP(t, "POST", c.url(1), ping, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
		t.Fatalf("ping on instance 1: %d %s", r.status, r.body)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	var released sync.Once
	defer released.Do(func() { close(release) }) // should the test fail while it holds
	c.store.onSave(func(rec *SessionRecord) error {
		if first.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
		return nil
	})
	level := make(chan httpReply, 1)
	go func() {
		level <- doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"error"}}`, postHeaders("Mcp-Session-Id", sid))
	}()
	<-held
	if r := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"res://a"}}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 || strings.Contains(r.body, `"error"`) {
		t.Fatalf("subscribe on instance 1: %d %s", r.status, r.body)
	}
	released.Do(func() { close(release) })
	if r := <-level; r.status != 200 || strings.Contains(r.body, `"error":{`) {
		t.Fatalf("setLevel on instance 0: %d %s", r.status, r.body)
	}
	rec, err := c.store.MemorySessionStore.Load(context.Background(), sid)
	if err != nil || rec.LogLevel != "error" || !slices.Equal(rec.Subscriptions, []string{"res://a"}) || rec.Revision != 3 {
		t.Fatalf("the store holds %+v, %v; want level error, res://a, revision 3 (initialize and two changes)", rec, err)
	}
	if n, want := c.store.count("Save"), 4; n != want {
		t.Errorf("%d Saves, want %d: initialize, subscribe, setLevel conflicting, then setLevel again", n, want)
	}
	if got := c.handlers[0].session(sid).ss.record(sid); got.LogLevel != "error" || !slices.Equal(got.Subscriptions, []string{"res://a"}) {
		t.Errorf("instance 0's copy, which saved last: %+v", got)
	}
	if r := doHTTP(t, "POST", c.url(2), ping, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
		t.Fatalf("ping on instance 2: %d %s", r.status, r.body)
	}
	if got := c.handlers[2].session(sid).ss.record(sid); got.LogLevel != "error" || !slices.Equal(got.Subscriptions, []string{"res://a"}) {
		t.Fatalf("a copy made later from the store: %+v", got)
	}
}

// TestSharedSessionSaveRetries: a change whose Save meets another
// instance's change at each of its WithSessionSaveRetries(2) tries again,
// three Saves in all, is answered with an error naming the conflict, and
// the session serves on; one that meets a conflict at the first two and
// not the third is kept.
func TestSharedSessionSaveRetries(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1, WithSessionSaveRetries(2))
	cl := NewClient(Implementation{Name: "retries", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(c.url(0))); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sid := c.store.only(t)
	var conflicts atomic.Int32
	c.store.onSave(func(*SessionRecord) error {
		if conflicts.Add(-1) >= 0 {
			return ErrSessionConflict
		}
		return nil
	})
	ctx := context.Background()
	for _, tc := range []struct {
		conflicts int32
		level     LoggingLevel
		kept      bool
	}{
		{3, "error", false}, // every try conflicts
		{2, "warning", true},
	} {
		conflicts.Store(tc.conflicts)
		saves, loads := c.store.count("Save"), c.store.count("Load")
		err := cl.SetLoggingLevel(ctx, tc.level)
		if tc.kept != (err == nil) {
			t.Fatalf("setLevel %s after %d conflicts: %v", tc.level, tc.conflicts, err)
		}
		if !tc.kept && (!strings.Contains(err.Error(), "cannot save session "+sid) || !strings.Contains(err.Error(), "changed on another instance, at each try (3 in all)")) {
			t.Fatalf("setLevel that met a conflict at every try: %v", err)
		}
		if n := c.store.count("Save") - saves; n != 3 {
			t.Errorf("setLevel %s: %d Saves, want 3", tc.level, n)
		}
		if n := c.store.count("Load") - loads; n != 2 {
			t.Errorf("setLevel %s: %d Loads, want 2 (one a retry)", tc.level, n)
		}
		if res, err := cl.CallTool(ctx, "echo", map[string]int{"x": 1}); err != nil || textOf(res) != `{"x":1}` {
			t.Fatalf("a call after setLevel %s: %v %v", tc.level, textOf(res), err)
		}
	}
	if rec, err := c.store.MemorySessionStore.Load(ctx, sid); err != nil || rec.LogLevel != "warning" {
		t.Fatalf("the store holds %+v, %v", rec, err)
	}
}

// TestSharedSessionChangeAfterEnd: a change of a session that the store no
// longer holds (ended elsewhere with no word from the broadcaster) is
// answered with an error and does not bring the session back; the next
// request finds it gone.
func TestSharedSessionChangeAfterEnd(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1)
	sid := legacySession(t, c.url(0), Version20251125)
	c.store.MemorySessionStore.Delete(context.Background(), sid)
	r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}`, postHeaders("Mcp-Session-Id", sid))
	if r.status != 200 || !strings.Contains(r.body, "cannot save session "+sid) || !strings.Contains(r.body, ErrSessionNotFound.Error()) {
		t.Fatalf("setLevel: %d %s", r.status, r.body)
	}
	if _, err := c.store.MemorySessionStore.Load(context.Background(), sid); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("the change brought the session back: %v", err)
	}
	if r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":3,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != http.StatusNotFound {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
}

// subscribedAt reports whether instance i's copy of session sid is
// subscribed to uri.
func subscribedAt(c *sessionCluster, i int, sid, uri string) bool {
	sess := c.handlers[i].session(sid)
	if sess == nil {
		return false
	}
	sess.ss.mu.Lock()
	defer sess.ss.mu.Unlock()
	_, ok := sess.ss.subscriptions[uri]
	return ok
}

// TestSharedSessionCopyHearsWhatChangedWhileItLoaded: a subscription made
// on one instance while another loads its copy of the session (saved after
// that Load read the record, published before the copy heard its channel)
// reaches the copy, and with it the resource's updates.
func TestSharedSessionCopyHearsWhatChangedWhileItLoaded(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	addResources(c, "res://a")
	sid := legacySession(t, c.url(0), Version20251125)
	read, resume := make(chan struct{}), make(chan struct{})
	c.store.onLoad(func() {
		close(read)
		<-resume
	})
	pinged := make(chan int)
	go func() {
		pinged <- doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)).status
	}()
	<-read // the copy on instance 1 has read the record, and hears nothing yet
	subscribeAt(t, c.url(0), sid, "res://a")
	close(resume)
	if status := <-pinged; status != 200 {
		t.Fatalf("ping at the second instance: %d", status)
	}
	if !subscribedAt(c, 1, sid, "res://a") {
		t.Fatal("the copy made while the session subscribed missed the subscription")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := getStream(t, ctx, c.url(1), sid, "")
	nextEvent(t, p, true) // priming
	c.servers[0].ResourceUpdated("res://a")
	if got := updatesUntil(t, p, "res://a", 0, nil); len(got) != 1 {
		t.Fatalf("updates on the copy's stream: %v", got)
	}
}

// TestSharedSessionSubscribeWhileCopiesLoad: 1,000 times, a session
// subscribes on one instance while its first request on another loads a
// copy there, as a client that sends notifications/initialized and
// resources/subscribe together through a balancer does; every copy ends
// subscribed.
func TestSharedSessionSubscribeWhileCopiesLoad(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	addResources(c, "res://a")
	runs := 1000
	if testing.Short() {
		runs = 100
	}
	for run := range runs {
		sid := legacySession(t, c.url(0), Version20251125)
		var wg sync.WaitGroup
		wg.Go(func() { subscribeAt(t, c.url(0), sid, "res://a") })
		wg.Go(func() {
			if r := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
				t.Errorf("ping: %d", r.status)
			}
		})
		wg.Wait()
		if !subscribedAt(c, 1, sid, "res://a") {
			t.Fatalf("run %d: the copy on the second instance missed the subscription", run)
		}
		doHTTP(t, "DELETE", c.url(0), "", map[string]string{"Mcp-Session-Id": sid})
	}
}

// TestSharedSessionRestoredOnce: requests that reach an instance at once
// for a session it does not hold make one copy from one Load of the record
// (and the catch-up's), not a Load, a subscription and a catch-up each.
// Found by TestSharedSessionCallsOnEveryInstance, which saw 6 Loads where
// it allows 4 when a client's first requests to an instance overlapped.
func TestSharedSessionRestoredOnce(t *testing.T) {
	c := newSessionCluster(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := NewHTTPHandler(newTestServer(WithBroadcaster(c.bc)), WithContext(ctx), WithSessionStore(c.store), WithEventStore(c.events))
	const n = 16
	arrived := make(chan struct{}, n)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		h.ServeHTTP(w, r)
	}))
	defer other.Close()
	sid := legacySession(t, c.url(0), Version20251125)
	loads := c.store.count("Load")
	release := make(chan struct{})
	letGo := sync.OnceFunc(func() { close(release) })
	defer letGo()                        // a failure below must not leave the Load waiting
	c.store.onLoad(func() { <-release }) // the first Load waits
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
			req, _ := http.NewRequest("POST", other.URL, strings.NewReader(body))
			for k, v := range postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("ping %d: status %d", i, resp.StatusCode)
			}
		})
	}
	timeout := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-arrived: // every request is in the handler before the Load goes on
		case <-timeout:
			t.Fatalf("%d of %d requests arrived", i, n)
		}
	}
	letGo()
	wg.Wait()
	if got := c.store.count("Load") - loads; got != 2 {
		t.Errorf("%d Loads for %d requests at once, want 2 (the copy's and its catch-up's)", got, n)
	}
	if h.(*httpHandler).session(sid) == nil {
		t.Error("the instance holds no copy of the session")
	}
}
