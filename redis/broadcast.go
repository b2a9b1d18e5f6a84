package mcpredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// Broadcaster is an [mcp.Broadcaster] on Redis pub/sub. Each channel is
// the Redis channel of the same name after the key prefix. One dedicated
// connection carries all of an instance's subscriptions, read by one
// goroutine; the local subscribers of a channel share its one Redis
// subscription.
//
// Delivery is best effort, as Redis pub/sub is: messages published while
// the connection is down are lost, and so are those that find a
// subscriber's queue full ([WithQueueLength]; the drop is logged). A
// subscriber gets its messages in the order they were published, one at
// a time, on a goroutine of its own that runs while it has messages, so a
// slow subscriber holds up no other. After Redis restarts, the
// subscriptions come back by themselves. Callers keep the truth in a
// store and use the broadcaster to learn sooner. Server side.
type Broadcaster struct {
	client
	ctx  context.Context // ends with Close
	stop context.CancelFunc
	done chan struct{} // closed when the reading goroutine returned
	subs sync.WaitGroup

	// change is held, in turn, by whoever changes the Redis subscriptions,
	// and while waiting for Redis to confirm one, so that the
	// subscriptions Redis holds follow the local ones in order.
	change chan struct{}

	mu       sync.Mutex
	ps       *redis.PubSub
	channels map[string]*localChannel // by Redis channel name
	closed   bool
}

// localChannel is one channel's local subscribers.
type localChannel struct {
	subs      []*subscriber // replaced, never changed in place
	confirmed chan struct{} // closed once Redis confirmed the subscription
}

// subscriber is one Subscribe: its queue and whether a goroutine drains it.
type subscriber struct {
	b       *Broadcaster
	channel string
	deliver func([]byte)
	stopped atomic.Bool

	mu       sync.Mutex
	queue    [][]byte
	draining bool
	dropping bool
}

var _ mcp.Broadcaster = (*Broadcaster)(nil)

// NewBroadcaster returns a Broadcaster on rdb; it holds one connection of
// its own, and a goroutine, until Close. Server side.
func NewBroadcaster(rdb *redis.Client, opts ...Option) *Broadcaster {
	ctx, stop := context.WithCancel(context.Background())
	b := &Broadcaster{
		client: newClient(rdb, opts, "Broadcaster"), ctx: ctx, stop: stop,
		done:     make(chan struct{}),
		change:   make(chan struct{}, 1),
		ps:       rdb.Subscribe(ctx),
		channels: make(map[string]*localChannel),
	}
	go b.read(b.ps)
	return b
}

// ErrClosed is returned by a Broadcaster's methods after Close. Server side.
var ErrClosed = errors.New("mcpredis: the broadcaster is closed")

// Publish implements mcp.Broadcaster.
func (b *Broadcaster) Publish(ctx context.Context, channel string, msg []byte) error {
	name := b.cfg.prefix + channel
	if b.ctx.Err() != nil {
		return fail("Broadcaster.Publish", name, ErrClosed)
	}
	ctx, cancel := b.cfg.call(ctx)
	defer cancel()
	return fail("Broadcaster.Publish", name, b.rdb.Publish(ctx, name, msg).Err())
}

// Subscribe implements mcp.Broadcaster. It returns once Redis confirmed
// the subscription, so that whatever is published after it returns is
// delivered (and what came since the confirmation, so deliver may run
// before Subscribe returns); it fails when Redis cannot confirm it in
// time.
func (b *Broadcaster) Subscribe(ctx context.Context, channel string, deliver func(msg []byte)) (func(), error) {
	name := b.cfg.prefix + channel
	s := &subscriber{b: b, channel: name, deliver: deliver}
	if b.addIfConfirmed(name, s) {
		return s.stop, nil
	}
	ctx, cancel := b.cfg.call(ctx)
	defer cancel()
	select {
	case b.change <- struct{}{}:
	case <-ctx.Done():
		return nil, fail("Broadcaster.Subscribe", name, fmt.Errorf("waiting for another subscription: %w", context.Cause(ctx)))
	}
	defer func() { <-b.change }()
	if b.addIfConfirmed(name, s) { // subscribed while we waited
		return s.stop, nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, fail("Broadcaster.Subscribe", name, ErrClosed)
	}
	// s takes what comes as soon as Redis confirms, before Subscribe returns.
	lc := &localChannel{subs: []*subscriber{s}, confirmed: make(chan struct{})}
	b.channels[name] = lc
	ps := b.ps
	b.mu.Unlock()
	err := ps.Subscribe(ctx, name)
	if err == nil {
		select {
		case <-lc.confirmed:
		case <-ctx.Done():
			err = fmt.Errorf("no confirmation from Redis: %w", context.Cause(ctx))
		}
	}
	if err != nil {
		s.stopped.Store(true)
		b.mu.Lock()
		delete(b.channels, name)
		b.mu.Unlock()
		// Unsubscribing fails too while Redis is away, but it tells the
		// PubSub not to subscribe again when it reconnects.
		unsubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.timeout)
		defer cancel()
		_ = ps.Unsubscribe(unsubCtx, name)
		return nil, fail("Broadcaster.Subscribe", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fail("Broadcaster.Subscribe", name, ErrClosed)
	}
	return s.stop, nil
}

// addIfConfirmed adds s to the local subscribers of a channel that Redis
// already confirmed.
func (b *Broadcaster) addIfConfirmed(name string, s *subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	lc := b.channels[name]
	if b.closed || lc == nil {
		return false
	}
	select {
	case <-lc.confirmed:
	default:
		return false
	}
	lc.subs = append(slices.Clip(lc.subs), s)
	return true
}

// stop ends a subscription; the last local subscriber of a channel gone,
// the Redis subscription goes too, in the background so that stop never
// waits on Redis.
func (s *subscriber) stop() {
	if s.stopped.Swap(true) {
		return
	}
	b := s.b
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	lc := b.channels[s.channel]
	if lc == nil {
		return
	}
	lc.subs = slices.DeleteFunc(slices.Clone(lc.subs), func(x *subscriber) bool { return x == s })
	if len(lc.subs) > 0 || b.closed {
		return
	}
	delete(b.channels, s.channel)
	b.subs.Add(1)
	go b.unsubscribe(s.channel)
}

// unsubscribe drops the Redis subscription of a channel unless someone
// subscribed to it again meanwhile.
func (b *Broadcaster) unsubscribe(name string) {
	defer b.subs.Done()
	select {
	case b.change <- struct{}{}:
	case <-b.ctx.Done():
		return
	}
	defer func() { <-b.change }()
	b.mu.Lock()
	again, ps := b.channels[name] != nil, b.ps
	b.mu.Unlock()
	if again {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.timeout)
	defer cancel()
	if err := ps.Unsubscribe(ctx, name); err != nil && b.ctx.Err() == nil {
		// The PubSub forgot the channel all the same: it will not come
		// back with a reconnection.
		b.cfg.log.Debug("mcpredis: cannot unsubscribe now", "channel", name, "err", err)
	}
}

// read is the one goroutine that reads the subscription connection: it
// hands each message to the channel's subscribers, notices confirmations,
// pings a silent connection and replaces one that stays silent.
func (b *Broadcaster) read(ps *redis.PubSub) {
	defer close(b.done)
	var pinged, down bool
	backoff := 50 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(b.ctx, b.cfg.pingInterval)
		if b.ctx.Err() != nil {
			return
		}
		var ne net.Error
		switch {
		case err != nil && errors.As(err, &ne) && ne.Timeout():
			if pinged {
				b.cfg.log.Warn("mcpredis: the broadcaster's connection to Redis went silent; replacing it")
				ps = b.replace(ps)
				pinged, down = false, true
				continue
			}
			pinged = true
			ctx, cancel := context.WithTimeout(b.ctx, b.cfg.timeout)
			_ = ps.Ping(ctx) // its answer, or the lack of one, is read above
			cancel()
			continue
		case err != nil:
			if !down {
				b.cfg.log.Warn("mcpredis: the broadcaster lost Redis; messages published until it is back are lost", "err", err)
				down = true
			}
			pinged = false
			select {
			case <-time.After(backoff):
			case <-b.ctx.Done():
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		pinged, backoff = false, 50*time.Millisecond
		if down {
			b.cfg.log.Info("mcpredis: the broadcaster is back on Redis; its subscriptions are renewed")
			down = false
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				b.confirm(m.Channel)
			}
		case *redis.Message:
			b.dispatch(m.Channel, m.Payload)
		}
	}
}

// replace closes a silent PubSub and opens another on the same channels.
func (b *Broadcaster) replace(old *redis.PubSub) *redis.PubSub {
	select {
	case b.change <- struct{}{}:
	case <-b.ctx.Done():
		return old
	}
	defer func() { <-b.change }()
	b.mu.Lock()
	names := make([]string, 0, len(b.channels))
	for name := range b.channels {
		names = append(names, name)
	}
	b.mu.Unlock()
	_ = old.Close()
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.timeout)
	defer cancel()
	ps := b.rdb.Subscribe(ctx, names...) // on failure, it subscribes when it reconnects
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = ps.Close()
		return old
	}
	b.ps = ps
	return ps
}

// confirm marks a channel's Redis subscription as confirmed. A late
// confirmation of a Subscribe that gave up may confirm the next one a
// moment early; the broadcaster is best effort.
func (b *Broadcaster) confirm(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if lc := b.channels[name]; lc != nil {
		select {
		case <-lc.confirmed:
		default:
			close(lc.confirmed)
		}
	}
}

// dispatch queues a message for each local subscriber of its channel.
func (b *Broadcaster) dispatch(name, payload string) {
	b.mu.Lock()
	var subs []*subscriber
	if lc := b.channels[name]; lc != nil {
		subs = lc.subs
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.enqueue([]byte(payload))
	}
}

// enqueue adds msg to the subscriber's queue, or drops it when the queue
// is full, and starts a goroutine to drain the queue if none runs.
func (s *subscriber) enqueue(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return
	}
	if len(s.queue) >= s.b.cfg.queueLength {
		if !s.dropping {
			s.b.cfg.log.Warn("mcpredis: a subscriber is too slow; dropping its messages until it catches up", "channel", s.channel)
			s.dropping = true
		}
		return
	}
	s.queue = append(s.queue, msg)
	if !s.draining {
		s.draining = true
		s.b.subs.Add(1)
		go s.drain()
	}
}

// drain delivers the queued messages one at a time, then returns.
func (s *subscriber) drain() {
	defer s.b.subs.Done()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 || s.stopped.Load() {
			s.queue, s.draining, s.dropping = nil, false, false
			s.mu.Unlock()
			return
		}
		msg := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		if !s.stopped.Load() {
			s.deliver(msg)
		}
	}
}

// Close ends every subscription and the broadcaster's connection, and
// returns once its goroutines did, deliveries under way included.
// Server side.
func (b *Broadcaster) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	for _, lc := range b.channels {
		for _, s := range lc.subs {
			s.stopped.Store(true)
		}
	}
	b.channels = nil
	ps := b.ps
	b.mu.Unlock()
	b.stop()
	err := ps.Close()
	<-b.done
	b.subs.Wait()
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		return fail("Broadcaster.Close", "", err)
	}
	return nil
}
