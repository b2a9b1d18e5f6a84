package mcp

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// backlogBudget bounds the bytes that all the standalone streams of a
// handler hold for their clients (WithSessionBacklogBudget): past it the
// oldest messages of any session go first, so that a server-wide message
// sent to every session that once opened a GET stream cannot fill the
// memory, however many sessions there are.
type backlogBudget struct {
	bytes atomic.Int64 // held now by the standalone streams

	mu      sync.Mutex
	queue   []backlogEntry // every message held, oldest first, and some that left
	head    int            // queue[head:] is the queue
	held    int            // messages held now
	dropped int            // messages dropped since the bytes were last under half the budget
}

// backlogEntry names one message of a stream's backlog by its index.
type backlogEntry struct {
	st    *httpStream
	index int64
}

// stale reports whether the message has left its stream's backlog: written,
// dropped, or its stream ended.
func (e backlogEntry) stale() bool { return e.index < e.st.backlog.firstPending.Load() }

// setPendingLocked replaces what the stream holds for its writer, keeping
// the handler's budget's count of a standalone stream's backlog; s.mu is
// held.
func (s *httpStream) setPendingLocked(pending []streamEvent, bytes int) {
	s.pending, s.pendBytes = pending, bytes
	s.countBacklogLocked()
}

// countBacklogLocked brings the budget's count of the stream's backlog up
// to date; a closed stream holds nothing its client will get.
func (s *httpStream) countBacklogLocked() {
	if !s.standalone {
		return
	}
	bytes, n, first := s.pendBytes, len(s.pending), int64(math.MaxInt64)
	if s.closed {
		bytes, n = 0, 0
	} else if n > 0 {
		first = s.pending[0].index
	}
	c := s.backlog
	c.firstPending.Store(first)
	b := &s.sess.h.backlog
	if d := bytes - c.countedBytes; d != 0 {
		b.bytes.Add(int64(d))
	}
	if d := n - c.countedMessages; d != 0 {
		b.mu.Lock()
		if b.held += d; b.held == 0 {
			// Every entry left is stale: let go of the streams they name.
			clear(b.queue)
			if cap(b.queue) > 64 {
				b.queue = nil
			}
			b.queue, b.head = b.queue[:0], 0
		}
		b.mu.Unlock()
	}
	c.countedBytes, c.countedMessages = bytes, n
}

// queueLocked records the message of index, just added to the stream's
// backlog, as the newest; s.mu is held. The queue is compacted when the
// messages that left it outnumber those held.
func (b *backlogBudget) queueLocked(s *httpStream, index int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.queue) - b.head; n > 2*b.held+64 {
		kept := b.queue[:0]
		for _, e := range b.queue[b.head:] {
			if !e.stale() {
				kept = append(kept, e)
			}
		}
		clear(b.queue[len(kept):])
		b.queue, b.head = kept, 0
	}
	b.queue = append(b.queue, backlogEntry{s, index})
}

// oldest takes the oldest message still held off the queue; ok is false
// when none is.
func (b *backlogBudget) oldest() (e backlogEntry, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.head < len(b.queue) {
		e = b.queue[b.head]
		b.queue[b.head] = backlogEntry{}
		b.head++
		if !e.stale() {
			return e, true
		}
	}
	b.queue, b.head = b.queue[:0], 0
	return e, false
}

// enforce drops the oldest messages of any standalone stream while the
// backlogs hold more than max bytes; it runs with no stream's lock held.
// The first drop of a run is logged at once, and each stream's count when
// its backlog is next handed over (reportDropsLocked).
func (b *backlogBudget) enforce(h *httpHandler) {
	limit := int64(h.cfg.backlogBudget)
	for b.bytes.Load() > limit {
		e, ok := b.oldest()
		if !ok {
			return
		}
		if e.st.dropIndex(e.index) {
			b.mu.Lock()
			if b.dropped++; b.dropped == 1 {
				h.log.Warn("the sessions' standalone stream backlogs are over the handler's budget; dropping the oldest undelivered messages", "maxBytes", limit)
			}
			b.mu.Unlock()
		}
	}
	if b.bytes.Load() < limit/2 {
		b.mu.Lock()
		b.dropped = 0
		b.mu.Unlock()
	}
}

// dropIndex drops the message of index from the stream's backlog, if it is
// still there, as the budget's oldest.
func (s *httpStream) dropIndex(index int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.pending) && s.pending[i].index < index {
		i++
	}
	if i == len(s.pending) || s.pending[i].index != index {
		return false
	}
	bytes := s.pendBytes - len(s.pending[i].data)
	if i == 0 {
		clear(s.pending[:1]) // the message goes now, not when the array does
		s.setPendingLocked(s.pending[1:], bytes)
	} else {
		s.setPendingLocked(slices.Delete(s.pending, i, i+1), bytes)
	}
	s.backlog.dropped++
	return true
}
