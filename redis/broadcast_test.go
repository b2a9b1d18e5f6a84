package mcpredis

import (
	"context"
	"fmt"
	"github.com/redis/go-redis/v9"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// inbox collects what a subscriber is delivered, for a test to wait on.
type inbox struct {
	mu   sync.Mutex
	msgs []string
	seen int           // how many the test looked at
	more chan struct{} // signalled on each delivery
}

func newInbox() *inbox { return &inbox{more: make(chan struct{}, 1)} }

func (in *inbox) deliver(msg []byte) {
	in.mu.Lock()
	in.msgs = append(in.msgs, string(msg))
	in.mu.Unlock()
	select {
	case in.more <- struct{}{}:
	default:
	}
}

// next waits for the next len(want) deliveries and checks them.
func (in *inbox) next(t *testing.T, want ...string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		in.mu.Lock()
		if len(in.msgs) >= in.seen+len(want) {
			got := slices.Clone(in.msgs[in.seen : in.seen+len(want)])
			in.seen += len(want)
			in.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("delivered %q, want %q", got, want)
			}
			return
		}
		n := len(in.msgs) - in.seen
		in.mu.Unlock()
		select {
		case <-in.more:
		case <-timeout:
			t.Fatalf("%d of %d messages delivered", n, len(want))
		}
	}
}

// last waits for the next deliveries, as next does, and checks that
// nothing came after them.
func (in *inbox) last(t *testing.T, want ...string) {
	t.Helper()
	in.next(t, want...)
	in.none(t)
}

// none checks that nothing was delivered after what the test looked at.
func (in *inbox) none(t *testing.T) {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	if rest := in.msgs[in.seen:]; len(rest) != 0 {
		t.Fatalf("delivered %q besides", rest)
	}
}

// publish publishes each of msgs on channel, in turn.
func publish(t *testing.T, b mcp.Broadcaster, channel string, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if err := b.Publish(context.Background(), channel, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
}

// broadcasterChecks are what every mcp.Broadcaster does, run against the
// library's MemoryBroadcaster and against ours; they follow the library's
// TestMemoryBroadcaster.
var broadcasterChecks = []check[mcp.Broadcaster]{
	{"every subscriber gets each message in order; another channel's none; a stopped one no more", func(t *testing.T, b mcp.Broadcaster) {
		ctx := context.Background()
		in1, in2, other := newInbox(), newInbox(), newInbox()
		stop1, err := b.Subscribe(ctx, "c", in1.deliver)
		if err != nil {
			t.Fatal(err)
		}
		b.Subscribe(ctx, "c", in2.deliver)
		b.Subscribe(ctx, "d", other.deliver)
		publish(t, b, "c", "a", "b")
		in1.next(t, "a", "b")
		in2.next(t, "a", "b")
		stop1()
		stop1() // twice is harmless
		publish(t, b, "c", "c")
		in2.next(t, "c")
		publish(t, b, "d", "d")
		other.last(t, "d")
		in1.none(t) // stopped
	}},
	{"a subscriber may stop itself from within deliver", func(t *testing.T, b mcp.Broadcaster) {
		ctx := context.Background()
		in, watch := newInbox(), newInbox()
		var stop func()
		var mu sync.Mutex
		mu.Lock()
		stop, _ = b.Subscribe(ctx, "e", func(msg []byte) {
			in.deliver(msg)
			mu.Lock()
			defer mu.Unlock()
			stop()
		})
		mu.Unlock()
		b.Subscribe(ctx, "e", watch.deliver)
		publish(t, b, "e", "1", "2")
		watch.next(t, "1", "2")
		in.next(t, "1")
		publish(t, b, "e", "3")
		watch.next(t, "3")
		in.none(t) // stopped
	}},
	{"a channel subscribed again after its last subscriber left gets messages", func(t *testing.T, b mcp.Broadcaster) {
		ctx := context.Background()
		for i := range 3 {
			in := newInbox()
			stop, err := b.Subscribe(ctx, "f", in.deliver)
			if err != nil {
				t.Fatal(err)
			}
			b.Publish(ctx, "f", []byte(fmt.Sprint(i)))
			in.next(t, fmt.Sprint(i))
			stop()
		}
	}},
}

// TestBroadcasterChecks runs the shared checks on both broadcasters.
func TestBroadcasterChecks(t *testing.T) {
	runChecks(t, broadcasterChecks,
		func() mcp.Broadcaster { return mcp.NewMemoryBroadcaster() },
		func(r *redisServer, prefix Option) mcp.Broadcaster {
			b := NewBroadcaster(r.client(), prefix)
			t.Cleanup(func() { b.Close() })
			return b
		})
}

// TestBroadcasterInstances: two instances, each on its own client; every
// subscriber on either gets every message published on either, in order,
// once; the local subscribers of a channel share one Redis subscription.
func TestBroadcasterInstances(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	a, b := NewBroadcaster(r.client()), NewBroadcaster(r.client())
	defer a.Close()
	defer b.Close()
	inboxes := []*inbox{newInbox(), newInbox(), newInbox()}
	for i, in := range inboxes {
		on := a
		if i == 2 {
			on = b
		}
		if _, err := on.Subscribe(ctx, "c", in.deliver); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.client().PubSubNumSub(ctx, "mcp:c").Val()["mcp:c"]; n != 2 {
		t.Fatalf("%d Redis subscriptions for two instances", n)
	}
	const n = 200
	var want []string
	for i := range n {
		on := a
		if i%2 == 1 {
			on = b
		}
		msg := fmt.Sprint(i)
		want = append(want, msg)
		if err := on.Publish(ctx, "c", []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range inboxes {
		in.next(t, want...)
	}
	// Nothing more comes: a marker published last is the next message.
	a.Publish(ctx, "c", []byte("end"))
	for _, in := range inboxes {
		in.last(t, "end")
	}
}

// TestBroadcasterSlowSubscriber: a subscriber that does not take its
// messages has its queue filled to the bound, then loses the rest, logged;
// the other subscribers of the channel are not held up.
func TestBroadcasterSlowSubscriber(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	logs, logger := newTestLogger()
	b := NewBroadcaster(r.client(), WithQueueLength(2), WithLogger(logger))
	t.Cleanup(func() { b.Close() })
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before Close, which waits for the delivery
	slow, fast := newInbox(), newInbox()
	b.Subscribe(ctx, "c", func(msg []byte) {
		if string(msg) == "1" {
			close(started)
			<-release
		}
		slow.deliver(msg)
	})
	b.Subscribe(ctx, "c", fast.deliver)
	b.Publish(ctx, "c", []byte("1"))
	<-started // the slow one holds 1; its queue is empty
	fast.next(t, "1")
	for _, m := range []string{"2", "3", "4", "5"} {
		b.Publish(ctx, "c", []byte(m))
		fast.next(t, m) // its queue holds one at most
	}
	if !logs.logged("too slow") {
		t.Fatal("the drop was not logged")
	}
	letGo()
	slow.next(t, "1", "2", "3")
	b.Publish(ctx, "c", []byte("6")) // it caught up
	slow.last(t, "6")
}

// TestBroadcasterUnsubscribes: the last local subscriber gone, the Redis
// subscription goes; Close ends every goroutine and refuses new work.
func TestBroadcasterUnsubscribes(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	c := r.client()
	b := NewBroadcaster(c)
	stop1, _ := b.Subscribe(ctx, "c", func([]byte) {})
	stop2, _ := b.Subscribe(ctx, "c", func([]byte) {})
	stop1()
	if n := c.PubSubNumSub(ctx, "mcp:c").Val()["mcp:c"]; n != 1 {
		t.Fatalf("%d Redis subscriptions with one local subscriber left", n)
	}
	stop2()
	b.subs.Wait() // the unsubscribe runs in the background
	// A subscription confirmed on the same connection comes after it.
	b.Subscribe(ctx, "d", func([]byte) {})
	if n := c.PubSubNumSub(ctx, "mcp:c").Val()["mcp:c"]; n != 0 {
		t.Fatalf("%d Redis subscriptions with no local subscriber", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ownGoroutines(); n != 0 {
		t.Fatalf("%d goroutines left after Close", n)
	}
	if _, err := b.Subscribe(ctx, "c", func([]byte) {}); err == nil {
		t.Fatal("Subscribe after Close")
	}
	if err := b.Publish(ctx, "c", nil); err == nil {
		t.Fatal("Publish after Close")
	}
}

// freezingProxy forwards TCP connections to addr until freeze, which
// stalls the connections open at that moment without closing them, as a
// lost network does; later connections are forwarded as before.
type freezingProxy struct {
	l    net.Listener
	addr string
	done chan struct{}

	mu     sync.Mutex
	gates  []chan struct{} // closed: stalled
	closed bool
}

func newFreezingProxy(t *testing.T, addr string) *freezingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{l: l, addr: addr, done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { close(p.done); l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			gate := make(chan struct{})
			p.mu.Lock()
			p.gates = append(p.gates, gate)
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				defer dst.Close()
				defer src.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-gate: // stalled: hold it until the test ends
						<-p.done
						return
					default:
					}
					if n > 0 {
						if _, err := dst.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Go(func() { pipe(up, c) })
			wg.Go(func() { pipe(c, up) })
			go func() { <-p.done; c.Close(); up.Close() }()
		}
	})
	return p
}

func (p *freezingProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.gates {
		close(g)
	}
	p.gates = nil
}

// TestBroadcasterSilentConnection: a subscription connection that stops
// answering, without closing, is found by its ping and replaced; the
// subscriptions carry on over the new one.
func TestBroadcasterSilentConnection(t *testing.T) {
	r := startRedis(t)
	proxy := newFreezingProxy(t, r.addr())
	via := redis.NewClient(&redis.Options{Addr: proxy.l.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { via.Close() })
	logs, logger := newTestLogger()
	b := NewBroadcaster(via, WithPingInterval(50*time.Millisecond), WithTimeout(200*time.Millisecond), WithLogger(logger))
	defer b.Close()
	ctx := context.Background()
	in := newInbox()
	if _, err := b.Subscribe(ctx, "c", in.deliver); err != nil {
		t.Fatal(err)
	}
	direct := r.client()
	direct.Publish(ctx, "mcp:c", "1")
	in.next(t, "1")

	silent, back := logs.next("went silent"), logs.next("back on Redis")
	proxy.freeze()
	awaitAll(t, "the silent connection was not replaced", silent, back)
	direct.Publish(ctx, "mcp:c", "2")
	in.next(t, "2")
}
