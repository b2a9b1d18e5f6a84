package mcp

import (
	"errors"
	"sync"
)

// errSessionEvicted ends a legacy session that made room for a new one at
// the session cap; its client's next request gets 404 and starts afresh.
var errSessionEvicted = errors.New("the session was idle the longest when the server needed room for a new one")

// idleSessions orders the legacy sessions with no HTTP request in progress
// (so no open stream and no request awaiting its answer) by their last use,
// for eviction at the session cap. Sessions that have served nothing since
// their initialize come first, so a flood of initialize evicts its own
// sessions before one a client is using.
type idleSessions struct {
	mu          sync.Mutex
	fresh, used sessionList
}

// sessionList is a list of sessions, oldest first, linked through the
// sessions' idle fields, which idleSessions.mu guards.
type sessionList struct{ head, tail *httpSession }

func (l *sessionList) push(s *httpSession) {
	s.idlePrev, s.idleNext, s.idleIn = l.tail, nil, l
	if l.tail != nil {
		l.tail.idleNext = s
	} else {
		l.head = s
	}
	l.tail = s
}

func (l *sessionList) remove(s *httpSession) {
	if s.idlePrev != nil {
		s.idlePrev.idleNext = s.idleNext
	} else {
		l.head = s.idleNext
	}
	if s.idleNext != nil {
		s.idleNext.idlePrev = s.idlePrev
	} else {
		l.tail = s.idlePrev
	}
	s.idlePrev, s.idleNext, s.idleIn = nil, nil, nil
}

// add puts s last, as the idle session used most recently; used says
// whether it served a request after its initialize.
func (q *idleSessions) add(s *httpSession, used bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.idleIn != nil {
		s.idleIn.remove(s)
	}
	if used {
		q.used.push(s)
	} else {
		q.fresh.push(s)
	}
}

// drop takes s out of the order: it is busy, or it ended.
func (q *idleSessions) drop(s *httpSession) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s.idleIn != nil {
		s.idleIn.remove(s)
	}
}

// oldest takes out and returns the first session to evict, nil when no
// session is idle.
func (q *idleSessions) oldest() *httpSession {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.fresh.head
	if s == nil {
		s = q.used.head
	}
	if s != nil {
		s.idleIn.remove(s)
	}
	return s
}

// evictScan bounds the idle sessions one initialize looks at for one to
// evict, so that sessions whose handlers run on cannot make it a long walk.
const evictScan = 64

// evictIdle ends the idle session used least recently, to make room at the
// session cap; it reports false when every session is busy. A session with
// no HTTP request in progress whose handler still runs (its POST went
// away; the answer waits in the event store) is in use: it goes last. With
// a SessionStore only the copy here ends: the cap is this instance's, and
// the session's next request loads it again, here or elsewhere.
func (h *httpHandler) evictIdle() bool {
	for range evictScan {
		s := h.idle.oldest()
		if s == nil {
			return false
		}
		s.mu.Lock()
		if s.closed || s.evicted || s.active > 0 {
			s.mu.Unlock()
			continue // busy again (its end puts it back) or ending anyway
		}
		if s.conn.busy() {
			s.mu.Unlock()
			h.idle.add(s, true)
			continue
		}
		s.evicted = true // begin refuses it from now on
		s.mu.Unlock()
		h.log.Debug("evicting the idle HTTP session used least recently: the session cap is reached", "session", s.id)
		s.conn.close(errSessionEvicted)
		return true
	}
	return false
}
