package mcp

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultDPoPReplayCacheSize bounds the DPoP proofs a
// [MemoryDPoPReplayStore] remembers at once. Server side.
const DefaultDPoPReplayCacheSize = 100_000

// ErrDPoPReplayStoreFull is what a [DPoPReplayStore] returns when it
// cannot remember one more proof. The bearer middleware answers it with
// 503: the proof may be good, but accepting it unremembered would let it
// be replayed. Server side.
var ErrDPoPReplayStoreFull = errors.New("the DPoP replay store is full")

// DPoPReplayStore remembers the DPoP proofs a resource server accepted, so
// that none is accepted twice (RFC 9449 §11.1). Instances of one server
// share one store (the redis module has one), or a proof refused by one
// could be replayed at another. Server side.
type DPoPReplayStore interface {
	// FirstUse records id until the given time and reports whether this
	// is its first use: false when id is recorded and has not expired.
	// id is an opaque key of fixed length derived from the proof's key
	// and jti. An error, such as [ErrDPoPReplayStoreFull], refuses the
	// proof as the server's failure.
	FirstUse(ctx context.Context, id string, until time.Time) (bool, error)
}

// MemoryDPoPReplayStore is the in-memory [DPoPReplayStore], the default
// of [NewDPoPVerifier]. It holds at most its size of unexpired proofs:
// when full it drops the expired ones first, and when none has expired it
// refuses the new proof with [ErrDPoPReplayStoreFull] rather than forget
// one that could then be replayed. Safe for concurrent use. Server side.
type MemoryDPoPReplayStore struct {
	mu    sync.Mutex
	size  int
	until map[string]time.Time
	order replayHeap // the ids by expiry, soonest first
}

// NewMemoryDPoPReplayStore returns a store of at most size proofs; size
// zero or less means [DefaultDPoPReplayCacheSize]. Server side.
func NewMemoryDPoPReplayStore(size int) *MemoryDPoPReplayStore {
	if size <= 0 {
		size = DefaultDPoPReplayCacheSize
	}
	return &MemoryDPoPReplayStore{size: size, until: make(map[string]time.Time)}
}

// FirstUse implements [DPoPReplayStore].
func (s *MemoryDPoPReplayStore) FirstUse(ctx context.Context, id string, until time.Time) (bool, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.until[id]; ok && now.Before(u) {
		return false, nil
	}
	s.dropExpiredLocked(now)
	if len(s.until) >= s.size {
		return false, ErrDPoPReplayStoreFull
	}
	if !now.Before(until) {
		return true, nil // expired already: nothing to remember
	}
	s.until[id] = until
	heap.Push(&s.order, replayEntry{id: id, until: until})
	return true, nil
}

// Len returns how many proofs the store remembers, expired ones not yet
// dropped included.
func (s *MemoryDPoPReplayStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.until)
}

// dropExpiredLocked forgets the proofs expired at now.
func (s *MemoryDPoPReplayStore) dropExpiredLocked(now time.Time) {
	for len(s.order) > 0 && !now.Before(s.order[0].until) {
		e := heap.Pop(&s.order).(replayEntry)
		if u, ok := s.until[e.id]; ok && u.Equal(e.until) {
			delete(s.until, e.id)
		}
	}
}

type replayEntry struct {
	id    string
	until time.Time
}

// replayHeap is a min-heap of entries by expiry.
type replayHeap []replayEntry

func (h replayHeap) Len() int           { return len(h) }
func (h replayHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h replayHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *replayHeap) Push(x any)        { *h = append(*h, x.(replayEntry)) }
func (h *replayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
