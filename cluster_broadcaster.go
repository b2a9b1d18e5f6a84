package mcp

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// The public face of the many-instance wing: MemoryBroadcaster, the
// Broadcaster (cluster_seam_server.go) within one process, and the
// WithBroadcaster option that turns the wing on.

// MemoryBroadcaster is a Broadcaster within one process: for tests and
// for several handlers in one process. Publish delivers to each
// subscriber before it returns. Server side.
type MemoryBroadcaster struct {
	mu   sync.Mutex
	subs map[string][]*memorySub
}

// memorySub is one subscription to a MemoryBroadcaster channel.
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

// WithBroadcaster makes a server that runs as several instances share,
// through b, what every instance must see: resource updates, list
// changes, task status, and the messages of a legacy session whose parts
// live on other instances. Without it a server is one instance. Server
// side (NewServer).
func WithBroadcaster(b Broadcaster) ServerOption {
	return serverOption(func(c *config) {
		c.server.broadcaster = b
		c.server.cluster = func(s *Server) clusterSeam { return newServerCluster(s, b) }
	})
}
