package mcpredis

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// The fleet test of Events: three instances in this process, each its own
// server and HTTP handler on loopback, sharing a Redis of the test's own
// (sessions, the legacy sessions' event store, the broadcaster, and the
// EventLog), behind the round-robin proxy of multi_test.go.

// eventFleet is Redis, three in-process instances and the proxy, and the
// TLS endpoint the webhook subscriber's deliveries go to.
type eventFleet struct {
	t       *testing.T
	redis   *redisServer
	hooks   *webhookSink
	servers []*mcp.Server
	fronts  []*httptest.Server
	stops   []context.CancelFunc // each instance's handler context
	proxy   *rrProxy
	front   *httptest.Server
	http    *http.Client
	closers []func()
}

// fleetEvent is the payload: which instance published it, its number.
type fleetEvent struct {
	P int `json:"p"`
	N int `json:"n"`
}

// webhookSink is the webhook subscriber's endpoint: it checks, as the
// stream's callback does, that each occurrence comes once and each
// instance's in order (the receiver has dropped repeated deliveries of
// one id by then).
type webhookSink struct {
	receiver *mcp.WebhookReceiver
	url      string
	secret   string

	mu       sync.Mutex
	next     [3]int
	seen     map[string]bool
	failure  string
	received atomic.Int64
	posts    atomic.Int64  // POSTs the endpoint got, verification and repeats included
	from     atomic.Int32  // the instance that delivered the last occurrence
	want     int64         // set before the subscription is made
	done     chan struct{} // closed when want have arrived
}

func newWebhookSink() *webhookSink {
	k := &webhookSink{secret: mcp.NewWebhookSecret(), seen: make(map[string]bool)}
	k.receiver = mcp.NewWebhookReceiver(func(_ context.Context, m mcp.WebhookMessage) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		var p fleetEvent
		switch {
		case m.Type != "" || m.Event == nil:
			k.failure = fmt.Sprintf("a %q envelope", m.Type)
		case json.Unmarshal(m.Event.Data, &p) != nil || p.P < 0 || p.P >= len(k.next):
			k.failure = fmt.Sprintf("occurrence %s: payload %s", m.Event.EventID, m.Event.Data)
		case k.seen[m.Event.EventID]:
			k.failure = fmt.Sprintf("occurrence %s (instance %d, number %d) handed on twice", m.Event.EventID, p.P+1, p.N)
		case p.N != k.next[p.P]:
			k.failure = fmt.Sprintf("instance %d: number %d after %d", p.P+1, p.N, k.next[p.P]-1)
		}
		if k.failure != "" {
			return nil // acknowledged: the failure is the test's to report
		}
		k.seen[m.Event.EventID] = true
		k.next[p.P]++
		if k.received.Add(1) == k.want {
			close(k.done)
		}
		return nil
	})
	k.receiver.AddSecret(k.secret)
	return k
}

// instanceTag names the instance that makes a webhook delivery, in a
// header the endpoint reads.
type instanceTag struct {
	base http.RoundTripper
	i    int
}

func (t instanceTag) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Instance", strconv.Itoa(t.i))
	return t.base.RoundTrip(r)
}

// startEventFleet starts the fleet; everything ends with the test.
func startEventFleet(t *testing.T, heartbeat time.Duration) *eventFleet {
	t.Helper()
	f := &eventFleet{t: t, redis: startRedis(t), hooks: newWebhookSink()}
	hookServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hooks.posts.Add(1)
		if i, err := strconv.Atoi(r.Header.Get("X-Test-Instance")); err == nil && strings.HasPrefix(r.Header.Get("webhook-id"), "p") {
			f.hooks.from.Store(int32(i))
		}
		f.hooks.receiver.ServeHTTP(w, r)
	}))
	f.hooks.url = hookServer.URL + "/hook"
	key := make([]byte, 32)
	rand.Read(key)
	var backends []string
	for i := range 3 {
		rdb := redis.NewClient(&redis.Options{Addr: f.redis.addr(), ContextTimeoutEnabled: true, PoolSize: 32})
		opts := []Option{WithKeyPrefix("fleet:"), WithTimeout(5 * time.Second)}
		bc := NewBroadcaster(rdb, opts...)
		// Killing an instance ends its webhook delivery too (ctx): another
		// takes the subscription over when the lease lapses.
		ctx, stop := context.WithCancel(context.Background())
		srv := mcp.NewServer(mcp.Implementation{Name: fmt.Sprintf("i%d", i+1), Version: "1"},
			mcp.WithStateKey(key), mcp.WithBroadcaster(bc),
			mcp.WithEvents(mcp.EventOptions{Log: NewEventLog(rdb, opts...), Heartbeat: heartbeat}),
			mcp.WithWebhooks(mcp.WebhookOptions{
				Context: ctx, Store: NewWebhookStore(rdb, 0, opts...),
				Client: &http.Client{Transport: instanceTag{hookServer.Client().Transport, i}},
				Rescan: 100 * time.Millisecond, Lease: time.Second, FirstRetry: 50 * time.Millisecond,
			}))
		srv.AddEventType(mcp.EventType{Name: "seq", Description: "A numbered occurrence."})
		h := mcp.NewHTTPHandler(srv, mcp.WithContext(ctx),
			mcp.WithAuthorizer(mcp.AuthorizerFunc(func(r *http.Request) (string, error) { return r.Header.Get("X-Test-Principal"), nil })),
			mcp.WithSessionStore(NewSessionStore(rdb, opts...)),
			mcp.WithEventStore(NewEventStore(rdb, opts...)))
		hs := httptest.NewServer(h)
		f.servers, f.fronts, f.stops = append(f.servers, srv), append(f.fronts, hs), append(f.stops, stop)
		backends = append(backends, hs.URL)
		f.closers = append(f.closers, func() { stop(); hs.CloseClientConnections(); hs.Close(); bc.Close(); rdb.Close() })
	}
	f.closers = append(f.closers, func() { hookServer.Client().CloseIdleConnections(); hookServer.Close() })
	f.proxy = newProxy(backends)
	f.front = httptest.NewServer(f.proxy)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	f.http = &http.Client{Transport: tr}
	t.Cleanup(f.close)
	return f
}

// kill cuts instance i off at once: its handler context, its clients'
// connections and its listener; the proxy finds it refusing connections.
// Its server stays in this process, so it can still publish: the
// publishers stand for work that outlives the HTTP front.
func (f *eventFleet) kill(i int) {
	f.stops[i]()
	f.fronts[i].CloseClientConnections()
	done := make(chan struct{})
	go func() { f.fronts[i].Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitBound):
		f.t.Fatalf("instance %d did not close in %v", i+1, waitBound)
	}
}

func (f *eventFleet) close() {
	f.front.Close()
	f.proxy.transport.CloseIdleConnections()
	f.http.CloseIdleConnections()
	for _, c := range f.closers {
		c()
	}
	f.closers = nil
}

// TestEventsFleet: 10,000 occurrences published concurrently by three
// instances, each its own numbered sequence, reach one StreamEvents
// subscriber through the proxy exactly once and, per instance, in order;
// midway the instance holding the stream is killed, and the stream resumes
// by its cursor on another with nothing lost or repeated. A webhook
// subscriber of another principal, subscribed through the proxy, gets the
// same at its TLS endpoint from whichever instance leases its subscription
// (in the shared WebhookStore), the kill notwithstanding; then the instance
// delivering the webhook is killed too, and another takes its lease over:
// 50 more occurrences arrive once each, in order. On both eras (the
// legacy one through shared sessions); goroutines settle after.
func TestEventsFleet(t *testing.T) {
	total := 10000
	if testing.Short() {
		total = 1500
	}
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			before := runtime.NumGoroutine()
			start := time.Now()
			f := startEventFleet(t, time.Minute)
			runEventsFleet(t, f, v, total)
			t.Logf("%s: %d occurrences through a kill in %v; the subscriber's requests: %s", v, total, time.Since(start).Round(time.Millisecond), f.proxy.routeOf("subscriber"))
			f.close()
			// The redis-server's two goroutines end with the test.
			settle(t, before+2)
		})
	}
}

func runEventsFleet(t *testing.T, f *eventFleet, v string, total int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mcp.NewClient(mcp.Implementation{Name: "fleet-subscriber", Version: "1"}, mcp.WithProtocolVersion(v))
	if err := cl.Connect(ctx, mcp.NewHTTPTransport(f.front.URL, mcp.WithHTTPClient(f.http), mcp.WithHeader("X-Test-Client", "subscriber"))); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	first, err := cl.PollEvents(ctx, mcp.EventSubscription{Name: "seq"})
	if err != nil {
		t.Fatal(err)
	}
	// The webhook subscriber, another principal, subscribes through the
	// proxy from the same cursor: whichever instance leases the
	// subscription delivers what all three publish.
	hooker := mcp.NewClient(mcp.Implementation{Name: "fleet-webhooks", Version: "1"}, mcp.WithProtocolVersion(v))
	if err := hooker.Connect(ctx, mcp.NewHTTPTransport(f.front.URL, mcp.WithHTTPClient(f.http),
		mcp.WithHeader("X-Test-Client", "webhooks"), mcp.WithHeader("X-Test-Principal", "hooks"))); err != nil {
		t.Fatal(err)
	}
	defer hooker.Close()
	f.hooks.want, f.hooks.done = int64(total+1), make(chan struct{})
	if _, err := hooker.SubscribeEvents(ctx, mcp.EventSubscription{Name: "seq", Cursor: first.Cursor},
		mcp.WebhookDelivery{URL: f.hooks.url, Secret: f.hooks.secret}, time.Hour); err != nil {
		t.Fatal(err)
	}

	const publishers = 3
	// Instance p publishes share(p) occurrences, total in all.
	share := func(p int) int { return total/publishers + min(max(total%publishers-p, 0), 1) }
	var (
		mu       sync.Mutex
		next     [publishers]int // the number each instance's next occurrence should carry
		received atomic.Int64
		seen     = make(map[string]bool, total)
		failure  string
		// lastCursor is the cursor of the occurrence handled last.
		lastCursor string
	)
	quarter, all := make(chan struct{}), make(chan struct{})
	arrived := make(chan struct{}, 1) // signalled at each occurrence handled
	streamCtx, stopStream := context.WithCancel(ctx)
	streamed := make(chan error, 1)
	go func() {
		_, err := cl.StreamEvents(streamCtx, mcp.EventSubscription{Name: "seq", Cursor: first.Cursor}, 3*time.Second, func(e mcp.EventOccurrence) {
			var p fleetEvent
			mu.Lock()
			defer mu.Unlock()
			switch {
			case json.Unmarshal(e.Data, &p) != nil || p.P < 0 || p.P >= publishers:
				failure = fmt.Sprintf("occurrence %s: payload %s", e.EventID, e.Data)
			case seen[e.EventID]:
				failure = fmt.Sprintf("occurrence %s (instance %d, number %d) twice", e.EventID, p.P+1, p.N)
			case p.N != next[p.P]:
				failure = fmt.Sprintf("instance %d: number %d after %d (cursor %s, the one before %s)", p.P+1, p.N, next[p.P]-1, e.Cursor, lastCursor)
			}
			lastCursor = e.Cursor
			if failure != "" {
				stopStream()
				return
			}
			seen[e.EventID] = true
			next[p.P]++
			n := received.Add(1)
			select {
			case arrived <- struct{}{}:
			default:
			}
			switch n {
			case int64(total / 4):
				close(quarter)
			case int64(total):
				close(all)
			}
		})
		streamed <- err
	}()

	// The publishers: each instance its own sequence, the first half now,
	// the rest once the stream's instance was killed.
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			each := share(p)
			for n := range each {
				if n == each/2 {
					select {
					case <-killed:
					case <-ctx.Done():
						return
					}
				}
				data, _ := json.Marshal(fleetEvent{P: p, N: n})
				if _, err := f.servers[p].PublishEvent(ctx, mcp.EventOccurrence{Name: "seq", EventID: fmt.Sprintf("p%d-%d", p, n), Data: data}); err != nil {
					t.Errorf("instance %d publishing %d: %v", p+1, n, err)
					return
				}
			}
		})
	}

	select {
	case <-quarter:
	case err := <-streamed:
		t.Fatalf("the stream ended before a quarter arrived: %v (%s)", err, failure)
	case <-ctx.Done():
		t.Fatalf("a quarter did not arrive: %d of %d", received.Load(), total)
	}
	// The proxy records a request's answer when it ends: the stream's is
	// the one events/stream without.
	running := f.proxy.where(func(h hit) bool { return strings.Contains(h.body, `"events/stream"`) && h.status == 0 })
	if len(running) != 1 {
		t.Fatalf("%d events/stream requests in flight, want 1", len(running))
	}
	holder := running[0].backend
	atKill := received.Load()
	f.kill(holder)
	close(killed)
	t.Logf("killed instance %d, which held the stream, after %d occurrences", holder+1, atKill)

	select {
	case <-all:
	case err := <-streamed:
		t.Fatalf("the stream ended: %v (%s); %d of %d arrived; the subscriber's requests: %s", err, failure, received.Load(), total, f.proxy.routeOf("subscriber"))
	case <-ctx.Done():
		t.Fatalf("%d of %d occurrences arrived; the subscriber's requests: %s", received.Load(), total, f.proxy.routeOf("subscriber"))
	}
	wg.Wait()
	// The heartbeat is a minute away: what the instances that do not hold
	// the stream publish now reaches it only by the log's wake-ups.
	// (The killed instance's stays unanswered in the proxy's record: the
	// proxy aborted it.)
	running = f.proxy.where(func(h hit) bool {
		return strings.Contains(h.body, `"events/stream"`) && h.status == 0 && h.backend != holder
	})
	if len(running) != 1 {
		t.Fatalf("%d events/stream requests in flight after the kill, want 1", len(running))
	}
	now := running[0].backend
	var tail []int
	for p := range publishers {
		if p != now && p != holder {
			tail = append(tail, p)
		}
	}
	want := received.Load() + int64(len(tail))
	opened := len(f.proxy.find(`"events/stream"`))
	for _, p := range tail {
		data, _ := json.Marshal(fleetEvent{P: p, N: share(p)})
		if _, err := f.servers[p].PublishEvent(ctx, mcp.EventOccurrence{Name: "seq", EventID: fmt.Sprintf("p%d-%d", p, share(p)), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	for received.Load() < want {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("what instance %v published last did not arrive", tail)
		}
	}
	// Had the wake-up not crossed instances, the quiet stream would have
	// been reopened (its liveness is 3s), and the new one read them.
	if n := len(f.proxy.find(`"events/stream"`)); n != opened {
		t.Fatalf("what instance %v published last arrived on a stream opened again, not by a wake-up: %s", tail, f.proxy.routeOf("subscriber"))
	}
	// The webhook subscriber got the same: every occurrence once, each
	// instance's in order, the last one's included.
	if len(tail) != 1 {
		t.Fatalf("%d instances neither held the stream nor were killed", len(tail))
	}
	select {
	case <-f.hooks.done:
	case <-ctx.Done():
		t.Fatalf("the webhook endpoint got %d of %d occurrences", f.hooks.received.Load(), f.hooks.want)
	}
	t.Logf("webhook: %d occurrences in %d POSTs", f.hooks.received.Load(), f.hooks.posts.Load())
	f.hooks.mu.Lock()
	if f.hooks.failure != "" {
		t.Error("webhook: " + f.hooks.failure)
	}
	if f.hooks.next != next {
		t.Errorf("webhook: %v occurrences per instance, the stream %v", f.hooks.next, next)
	}
	f.hooks.mu.Unlock()
	stopStream()
	if err := <-streamed; !errors.Is(err, context.Canceled) {
		t.Errorf("StreamEvents returned %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failure != "" {
		t.Fatal(failure)
	}
	for p, n := range next {
		want := share(p)
		if slices.Contains(tail, p) {
			want++
		}
		if n != want {
			t.Errorf("instance %d: %d occurrences, want %d", p+1, n, want)
		}
	}
	resumed := f.proxy.where(func(h hit) bool { return strings.Contains(h.body, `"events/stream"`) && h.backend != holder })
	if len(resumed) == 0 {
		t.Errorf("the stream was not resumed on another instance: %s", f.proxy.routeOf("subscriber"))
	}

	// Now the instance that delivers the webhook dies too (unless the
	// first kill was it): another takes its lease over from the stored
	// watermark, and what is published next still arrives once, in order.
	deliverer := int(f.hooks.from.Load())
	if deliverer != holder {
		f.kill(deliverer)
	}
	live := now
	if live == deliverer {
		live = tail[0]
	}
	const more = 50
	f.hooks.mu.Lock()
	from := f.hooks.next[live]
	f.hooks.want += more
	f.hooks.done = make(chan struct{})
	done := f.hooks.done
	f.hooks.mu.Unlock()
	for n := from; n < from+more; n++ {
		data, _ := json.Marshal(fleetEvent{P: live, N: n})
		if _, err := f.servers[live].PublishEvent(ctx, mcp.EventOccurrence{Name: "seq", EventID: fmt.Sprintf("p%d-%d", live, n), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("after instance %d, which delivered the webhook, died: %d of %d occurrences", deliverer+1, f.hooks.received.Load(), f.hooks.want)
	}
	f.hooks.mu.Lock()
	defer f.hooks.mu.Unlock()
	if f.hooks.failure != "" {
		t.Fatal("webhook after the deliverer died: " + f.hooks.failure)
	}
	if by := int(f.hooks.from.Load()); by == deliverer {
		t.Fatalf("instance %d, killed, still delivers", by+1)
	}
	t.Logf("webhook: instance %d delivered until it died; instance %d took over (%d POSTs in all)", deliverer+1, f.hooks.from.Load()+1, f.hooks.posts.Load())
}
