package mcp

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fanCluster is several instances of one server, each a Server behind its own
// NewHTTPHandler on loopback, sharing a task store and a broadcaster,
// behind a round-robin reverse proxy with no affinity: each request goes
// to the next instance.
type fanCluster struct {
	servers  []*Server
	backends []*httptest.Server
	proxy    *httptest.Server
	b        *countingBroadcaster
	store    *MemoryTaskStore

	mu  sync.Mutex
	log []routed // every request the proxy passed on, in order
}

// routed is one request the proxy passed on: to which instance, for which
// method (the Mcp-Method header of 2026-07-28).
type routed struct {
	instance int
	method   string
}

// newFanCluster starts n instances of the server newServer makes from the
// shared options.
func newFanCluster(t *testing.T, n int, newServer func(opts ...ServerOption) *Server) *fanCluster {
	t.Helper()
	c := &fanCluster{b: newCountingBroadcaster(), store: NewMemoryTaskStore(0, 0)}
	key := make([]byte, 32)
	rand.Read(key)
	for range n {
		srv := newServer(WithBroadcaster(c.b), WithTasks(TaskOptions{Store: c.store, PollInterval: time.Millisecond}), WithStateKey(key))
		ts := httptest.NewServer(NewHTTPHandler(srv, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) { return r.Header.Get("X-Who"), nil }))))
		t.Cleanup(ts.Close) // after the proxy's
		c.servers, c.backends = append(c.servers, srv), append(c.backends, ts)
	}
	c.proxy = roundRobinProxy(t, c.backends, func(i int, r *http.Request) {
		c.mu.Lock()
		c.log = append(c.log, routed{instance: i, method: r.Header.Get("Mcp-Method")})
		c.mu.Unlock()
	})
	return c
}

// dial connects a client with opts to the Streamable HTTP server at url;
// it closes with the test, if not before.
func dial(t *testing.T, url string, opts ...ClientOption) *Client {
	t.Helper()
	cl := NewClient(Implementation{Name: "client", Version: "1"}, opts...)
	if err := cl.Connect(context.Background(), NewHTTPTransport(url)); err != nil {
		t.Fatalf("Connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// instancesOf returns the instances that served the requests of method,
// in order.
func (c *fanCluster) instancesOf(method string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var got []int
	for _, r := range c.log {
		if r.method == method {
			got = append(got, r.instance)
		}
	}
	return got
}

// listeners is how many listen streams instance i holds.
func (c *fanCluster) listeners(i int) int {
	s := c.servers[i]
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	return len(s.listeners)
}

// countingBroadcaster is a MemoryBroadcaster that counts the live
// subscriptions of each channel and tells the test when they change.
type countingBroadcaster struct {
	*MemoryBroadcaster
	failPublish, failSubscribe atomic.Bool

	mu      sync.Mutex
	subs    map[string]int
	changed chan struct{}
}

func newCountingBroadcaster() *countingBroadcaster {
	return &countingBroadcaster{MemoryBroadcaster: NewMemoryBroadcaster(), subs: make(map[string]int), changed: make(chan struct{})}
}

var errBroken = errors.New("the broadcaster is down")

func (b *countingBroadcaster) Publish(ctx context.Context, channel string, msg []byte) error {
	if b.failPublish.Load() {
		return errBroken
	}
	return b.MemoryBroadcaster.Publish(ctx, channel, msg)
}

func (b *countingBroadcaster) Subscribe(ctx context.Context, channel string, deliver func([]byte)) (func(), error) {
	if b.failSubscribe.Load() {
		return nil, errBroken
	}
	stop, err := b.MemoryBroadcaster.Subscribe(ctx, channel, deliver)
	if err != nil {
		return nil, err
	}
	b.count(channel, 1)
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			b.count(channel, -1)
		})
	}, nil
}

func (b *countingBroadcaster) count(channel string, d int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs[channel] += d
	if b.subs[channel] == 0 {
		delete(b.subs, channel)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// await waits until the live subscriptions satisfy ok.
func (b *countingBroadcaster) await(t *testing.T, what string, ok func(subs map[string]int) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		done, changed := ok(b.subs), b.changed
		subs := make(map[string]int, len(b.subs))
		for k, v := range b.subs {
			subs[k] = v
		}
		b.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%s: never happened; subscriptions %v", what, subs)
		}
	}
}

// rawListen is a 2026-07-28 subscriptions/listen POSTed by hand, whose
// event stream the test reads message by message (recv).
type rawListen struct {
	*rawPeer
	res *http.Response
}

// openListen POSTs a listen for filter (a JSON object's members) to url,
// with the client capabilities caps, and waits for its acknowledgement.
func openListen(t *testing.T, url string, id int, filter, caps string) *rawListen {
	t.Helper()
	res, err := testHTTPClient.Do(modernPost(url, id, "subscriptions/listen", `"notifications":{`+filter+`}`, caps))
	if err != nil {
		t.Fatal(err)
	}
	l := &rawListen{rawPeer: &rawPeer{t: t, lines: make(chan string, 64)}, res: res}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				l.lines <- d
			}
		}
	}()
	t.Cleanup(l.close)
	if ack := l.recv(); field(t, ack, "method") != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: %s", ack)
	}
	return l
}

func (l *rawListen) close() { l.res.Body.Close() }

// TestBroadcastAcrossInstances: a resource updated and a list changed on
// one instance reach the listeners of every instance, each exactly once:
// 2026-07-28 clients and listen streams through the round-robin proxy, on
// every instance, and 2025-11-25 sessions subscribed on each instance.
// Every instance subscribes to the server channel once, whatever its
// listeners, and once everyone has gone, to nothing.
func TestBroadcastAcrossInstances(t *testing.T) {
	before := runtime.NumGoroutine()
	c := newFanCluster(t, 3, featureServer)
	ctx := context.Background()
	var clients []*Client
	connect := func(url, version string, rec *changeRecorder) *Client {
		cl := dial(t, url, append(rec.options(), WithProtocolVersion(version))...)
		clients = append(clients, cl)
		return cl
	}

	// 2026-07-28 clients through the proxy, until every instance holds
	// one's listen stream (for the list changes the client has handlers
	// for), each acknowledged before Connect returns.
	var modern []*changeRecorder
	for len(modern) < 9 && (c.listeners(0) == 0 || c.listeners(1) == 0 || c.listeners(2) == 0) {
		rec := newChangeRecorder()
		connect(c.proxy.URL, LatestVersion, rec)
		modern = append(modern, rec)
	}
	for i := range c.servers {
		if c.listeners(i) == 0 {
			t.Fatalf("instance %d holds no listen stream after %d clients", i, len(modern))
		}
	}
	// Three listen streams for two resources, POSTed one after the other
	// through the proxy: one on each instance.
	var raw []*rawListen
	for i := range 3 {
		raw = append(raw, openListen(t, c.proxy.URL, 100+i, `"resourceSubscriptions":["test://static-text","test://items/1"]`, "{}"))
	}
	// 2025-11-25 sessions, one held by each instance.
	var legacy []*changeRecorder
	for i := range c.servers {
		rec := newChangeRecorder()
		cl := connect(c.backends[i].URL, Version20251125, rec)
		// Each returns once updates from any instance reach the session.
		for _, uri := range []string{"test://static-text", "test://items/1"} {
			if err := cl.Subscribe(ctx, uri); err != nil {
				t.Fatal(err)
			}
		}
		legacy = append(legacy, rec)
	}
	expectRaw := func(uri string) {
		t.Helper()
		for i, l := range raw {
			if got := l.recv(); field(t, got, "method") != "notifications/resources/updated" || field(t, got, "params.uri") != uri {
				t.Fatalf("listen stream %d: got %s, want the update of %s", i, got, uri)
			}
		}
	}

	// A resource updated on one instance, then another on a third as a
	// marker: what comes next on each stream is the marker, so the first
	// came once.
	c.servers[0].ResourceUpdated("test://static-text")
	c.servers[2].ResourceUpdated("test://items/1")
	expectRaw("test://static-text")
	expectRaw("test://items/1")
	for _, rec := range legacy {
		rec.expect(t, "updated test://static-text")
		rec.expect(t, "updated test://items/1")
	}

	// Lists changed on each instance, then an update as a marker.
	c.servers[1].AddTool(Tool{Name: "added"}, nil)
	c.servers[2].AddPrompt(Prompt{Name: "added"}, nil)
	c.servers[0].AddResource(Resource{URI: "test://added", Name: "added"}, nil)
	c.servers[1].ResourceUpdated("test://items/1")
	for _, rec := range append(modern, legacy...) {
		rec.expect(t, "tools")
		rec.expect(t, "prompts")
		rec.expect(t, "resources")
	}
	for _, rec := range legacy {
		rec.expect(t, "updated test://items/1")
	}
	expectRaw("test://items/1") // the raw streams asked for no list

	c.b.mu.Lock()
	n := c.b.subs[serverChannel]
	c.b.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d subscriptions to %s, want one per instance", n, serverChannel)
	}
	for _, l := range raw {
		l.close()
	}
	for _, cl := range clients {
		cl.Close()
	}
	c.b.await(t, "every subscription ends", func(subs map[string]int) bool { return len(subs) == 0 })
	c.proxy.Close()
	for _, ts := range c.backends {
		ts.Close()
	}
	testHTTPClient.CloseIdleConnections()
	settleGoroutines(t, before)
}

// TestBroadcasterDown: a change that cannot be published still reaches
// this instance's clients, once, and the reason is logged; a listen stream
// or a task whose subscription fails is refused with an error naming the
// channel, and works once the broadcaster is back.
func TestBroadcasterDown(t *testing.T) {
	ctx := context.Background()
	b := newCountingBroadcaster()
	logs := &logRecorder{}
	srv := featureServer(WithBroadcaster(b), WithLogger(slogOf(logs)))
	rec := newChangeRecorder()
	legacy := connectOver(t, srv, "memory", Version20251125, rec.options()...)
	if err := legacy.Subscribe(ctx, "test://static-text"); err != nil {
		t.Fatal(err)
	}
	b.failPublish.Store(true)
	srv.ResourceUpdated("test://static-text")
	rec.expect(t, "updated test://static-text")
	if n := logs.count("cannot publish a change"); n != 1 {
		t.Fatalf("logged %d failed publications, want 1", n)
	}
	b.failPublish.Store(false)
	srv.ResourceUpdated("test://static-text")
	srv.AddPrompt(Prompt{Name: "marker"}, nil)
	rec.expect(t, "updated test://static-text")
	rec.expect(t, "prompts")

	// A server with nothing subscribed yet.
	b.failSubscribe.Store(true)
	srv = featureServer(WithBroadcaster(b))
	modern := connectOver(t, srv, "memory", LatestVersion)
	err := modern.Subscribe(ctx, "test://static-text")
	if rpcCode(err) != CodeInternalError || !strings.Contains(err.Error(), serverChannel) || !strings.Contains(err.Error(), errBroken.Error()) {
		t.Fatalf("listen with the broadcaster down: %v", err)
	}
	rig := newTaskRig(WithBroadcaster(b))
	call := memoryCaller(t, rig.srv)
	got := call(1, "tools/call", `"name":"work","arguments":{}`, taskCaps)
	if msg, _ := field(t, got, "error.message").(string); !strings.Contains(msg, "mcp:task:") || !strings.Contains(msg, errBroken.Error()) {
		t.Fatalf("a task with the broadcaster down: %s", got)
	}
	if n := rig.srv.tasks.len(); n != 0 {
		t.Fatalf("%d tasks run after a refused call", n)
	}
	b.failSubscribe.Store(false)
	if err := modern.Subscribe(ctx, "test://static-text"); err != nil {
		t.Fatal(err)
	}
	startTask(t, call, 2, "work")
	close(rig.release)
}

// heldRoutes is an HTTP client transport that sends each 2026-07-28
// subscriptions/listen to the next of backends in turn and everything else
// to the first, as a balancer with no affinity might; while hold is set,
// what the first listen stream carries is held up on its way to the
// client, as at a balancer that buffers it.
type heldRoutes struct {
	backends []*httptest.Server
	listens  atomic.Int32
	hold     atomic.Bool
	release  chan struct{} // closed: what was held goes on
}

func (h *heldRoutes) RoundTrip(r *http.Request) (*http.Response, error) {
	target, n := 0, 0
	if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
		n = int(h.listens.Add(1))
		target = (n - 1) % len(h.backends)
	}
	out := r.Clone(r.Context())
	out.URL.Host = strings.TrimPrefix(h.backends[target].URL, "http://")
	out.Host = out.URL.Host
	res, err := http.DefaultTransport.RoundTrip(out)
	if err != nil || n != 1 {
		return res, err
	}
	pr, pw := io.Pipe()
	body := res.Body
	go func() {
		buf := make([]byte, 32<<10)
		for {
			k, err := body.Read(buf)
			if k > 0 && h.hold.Load() {
				select {
				case <-h.release:
				case <-r.Context().Done():
					pw.CloseWithError(r.Context().Err())
					body.Close()
					return
				}
			}
			if k > 0 {
				if _, werr := pw.Write(buf[:k]); werr != nil {
					body.Close()
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				body.Close()
				return
			}
		}
	}()
	res.Body = pr
	return res, nil
}

// TestListenReplacedInFlight: a 2026-07-28 client subscribes to a second
// resource, and its listen stream is replaced by one on another instance,
// while an update of the first resource, made before, is still on its way
// on the stream being replaced: the update still reaches the client, once
// (it names its announcement, which the client remembers). The two streams
// are separate responses from separate instances, which nothing orders
// (the protocol orders a subscription's own messages only), so each
// subtest forces one order: the held update arriving before an update the
// new stream carries, or after it.
func TestListenReplacedInFlight(t *testing.T) {
	for _, oldFirst := range []bool{true, false} {
		name := "old stream first"
		if !oldFirst {
			name = "new stream first"
		}
		t.Run(name, func(t *testing.T) {
			c := newFanCluster(t, 2, featureServer)
			routes := &heldRoutes{backends: c.backends, release: make(chan struct{})}
			updates := make(chan string, 8)
			cl := NewClient(Implementation{Name: "client", Version: "1"}, WithProtocolVersion(LatestVersion),
				WithResourceUpdatedHandler(func(_ context.Context, uri string) { updates <- uri }))
			if err := cl.Connect(context.Background(), NewHTTPTransport(c.proxy.URL, WithHTTPClient(&http.Client{Transport: routes}))); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			expect := func(want string) {
				t.Helper()
				select {
				case uri := <-updates:
					if uri != want {
						t.Fatalf("update of %s, want %s", uri, want)
					}
				case <-ctx.Done():
					t.Fatalf("no update of %s", want)
				}
			}
			if err := cl.Subscribe(ctx, "test://static-text"); err != nil {
				t.Fatal(err)
			}
			routes.hold.Store(true)
			c.servers[0].ResourceUpdated("test://static-text") // on its way, held
			if err := cl.Subscribe(ctx, "test://items/1"); err != nil {
				t.Fatal(err)
			}
			if oldFirst {
				close(routes.release)
				expect("test://static-text")
				c.servers[0].ResourceUpdated("test://items/1") // on the new stream
				expect("test://items/1")
			} else {
				c.servers[0].ResourceUpdated("test://items/1") // on the new stream
				expect("test://items/1")
				close(routes.release)
				expect("test://static-text")
			}
			// A marker, after which nothing else may come: the held update
			// was delivered once.
			c.servers[0].ResourceUpdated("test://items/1")
			expect("test://items/1")
		})
	}
}

// TestRestartAnnouncesNoChange: an instance that (re)starts beside
// another, registering what every instance registers before it serves,
// tells the clients of the fleet of no change, on either era; a change it
// makes once it serves reaches every client of every instance, its own
// included, and registering again what it already serves changes nothing.
func TestRestartAnnouncesNoChange(t *testing.T) {
	b := NewMemoryBroadcaster()
	first := featureServer(WithBroadcaster(b))
	ts := httptest.NewServer(NewHTTPHandler(first))
	t.Cleanup(ts.Close)
	ctx := context.Background()
	var recs []*changeRecorder
	for _, v := range []string{Version20251125, LatestVersion} {
		rec := newChangeRecorder()
		cl := dial(t, ts.URL, append(rec.options(), WithProtocolVersion(v))...)
		if v != LatestVersion {
			// From here on, changes from any instance reach the
			// session. (A 2026-07-28 client's listen stream, for the
			// lists it has handlers for, is acknowledged in Connect.)
			if err := cl.Subscribe(ctx, "test://static-text"); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, rec)
	}

	// The restart: the same registrations, then its handler. A change
	// from then on is one, even before the instance has a client: the
	// first instance's clients see its lists.
	restarted := featureServer(WithBroadcaster(b))
	rs := httptest.NewServer(NewHTTPHandler(restarted))
	t.Cleanup(rs.Close)
	restarted.AddTool(Tool{Name: "early"}, nil)
	for i, rec := range recs {
		select {
		case got := <-rec.got:
			if got != "tools" {
				t.Fatalf("client %d: got %q, want the early tool's %q", i, got, "tools")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("client %d: no notification of the early tool", i)
		}
	}
	own := newChangeRecorder()
	if err := dial(t, rs.URL, append(own.options(), WithProtocolVersion(Version20251125))...).Subscribe(ctx, "test://static-text"); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, own)
	// Again what it serves: no change either.
	restarted.AddPrompt(Prompt{Name: "p2"}, nil)
	restarted.AddPrompt(Prompt{Name: "p2"}, nil)
	restarted.AddTool(Tool{Name: "added"}, nil)
	restarted.AddTool(Tool{Name: "added"}, nil)
	// A replaced definition is a change.
	restarted.AddTool(Tool{Name: "added", Description: "Changed."}, nil)
	restarted.RemovePrompts("p2")

	// Had the restart announced anything, its tools, resources and
	// prompts would come first.
	for i, rec := range recs {
		for _, want := range []string{"prompts", "tools", "tools", "prompts"} {
			select {
			case got := <-rec.got:
				if got != want {
					t.Fatalf("client %d: got %q, want %q", i, got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("client %d: no %q notification", i, want)
			}
		}
	}
}
