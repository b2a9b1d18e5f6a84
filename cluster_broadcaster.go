package mcp

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// Broadcaster carries messages between the instances of a server:
// publish/subscribe on named channels. A server that runs as several
// instances uses it for what every instance must see (a resource updated,
// a list changed, a task's status) and to route a message to the instance
// that holds a session's live part (a client's answer to an ask that a
// handler elsewhere waits on, events for a stream held elsewhere). Every
// method takes a context and may fail. Server side; see [WithBroadcaster].
type Broadcaster interface {
	// Publish sends msg to every current subscriber of channel, on every
	// instance, this one included. It does not wait for them to handle it.
	Publish(ctx context.Context, channel string, msg []byte) error
	// Subscribe calls deliver with each message published to channel
	// from now until stop is called, in the order they were published,
	// one at a time; deliver must not block for long. msg is deliver's
	// only until it returns. A delivery under way when stop is called may
	// finish after it returns; none starts after.
	Subscribe(ctx context.Context, channel string, deliver func(msg []byte)) (stop func(), err error)
}

// MemoryBroadcaster is a Broadcaster within one process: for tests and
// for several handlers in one process. Publish delivers to each
// subscriber before it returns. Server side.
type MemoryBroadcaster struct {
	mu   sync.Mutex
	subs map[string][]*memorySub
}

type memorySub struct {
	mu      sync.Mutex // one delivery at a time, in order
	deliver func([]byte)
	stopped atomic.Bool
}

// NewMemoryBroadcaster returns a MemoryBroadcaster with no subscribers.
// Server side.
func NewMemoryBroadcaster() *MemoryBroadcaster {
	return &MemoryBroadcaster{subs: make(map[string][]*memorySub)}
}

// Publish implements Broadcaster.
func (b *MemoryBroadcaster) Publish(_ context.Context, channel string, msg []byte) error {
	b.mu.Lock()
	subs := slices.Clone(b.subs[channel])
	b.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.stopped.Load() {
			s.deliver(msg)
		}
		s.mu.Unlock()
	}
	return nil
}

// Subscribe implements Broadcaster.
func (b *MemoryBroadcaster) Subscribe(_ context.Context, channel string, deliver func([]byte)) (func(), error) {
	s := &memorySub{deliver: deliver}
	b.mu.Lock()
	b.subs[channel] = append(b.subs[channel], s)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.stopped.Store(true)
			b.mu.Lock()
			defer b.mu.Unlock()
			rest := slices.DeleteFunc(slices.Clone(b.subs[channel]), func(x *memorySub) bool { return x == s })
			if len(rest) == 0 {
				delete(b.subs, channel)
			} else {
				b.subs[channel] = rest
			}
		})
	}, nil
}
