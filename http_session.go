package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// requestSession finds the session a GET or DELETE names and marks it busy;
// it answers the request itself when there is none.
func (h *httpHandler) requestSession(w http.ResponseWriter, r *http.Request, principal string) (*httpSession, bool) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the Mcp-Session-Id header is required")
		return nil, false
	}
	sess := h.useSession(w, r, sid, principal)
	return sess, sess != nil
}

// useSession finds the session sid names and marks it busy. An id that is
// not visible ASCII gets 400 and is never looked up. A session that another
// principal opened is not told apart from an unknown one: both get 404, and
// the request can neither use nor end it. It answers the request itself and
// returns nil when there is no such session. With a SessionStore the
// handler's cluster finds it: a session not held here is loaded from the
// store, and one held here is touched there now and then.
func (h *httpHandler) useSession(w http.ResponseWriter, r *http.Request, sid, principal string) *httpSession {
	if !validSessionID(sid) {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: a session id is visible ASCII only")
		return nil
	}
	sess := h.session(sid)
	if h.cluster != nil {
		return h.cluster.useSession(w, r, sess, sid, principal)
	}
	if sess == nil || sess.principal != principal || !sess.begin() {
		refuseUnknownSession(w)
		return nil
	}
	return sess
}

// refuseUnknownSession answers a request that names no session it may
// use: 404, which tells the client to start a new one.
func refuseUnknownSession(w http.ResponseWriter) {
	writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: unknown or expired session; start a new one with initialize")
}

// validSessionID reports whether id is one the spec allows: visible ASCII,
// 0x21 to 0x7E, and not empty.
func validSessionID(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return id != ""
}

func (h *httpHandler) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

var (
	errTooManySessions          = errors.New("the server holds as many sessions as it may; try again later")
	errTooManyPrincipalSessions = errors.New("this principal holds as many sessions as it may; end one or try again later")
	errHandlerStopped           = errors.New("the server is shutting down")
)

// sessionRetryAfter is the Retry-After, in seconds, of an initialize
// refused by a session cap.
const sessionRetryAfter = "30"

// refuseSession answers the initialize (id) that newSession refused with
// err: a session cap's 503 asks the client to come back later.
func refuseSession(w http.ResponseWriter, id ID, err error) {
	if err == errHandlerStopped {
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: "+err.Error())
		return
	}
	w.Header().Set("Retry-After", sessionRetryAfter)
	writeHTTPError(w, http.StatusServiceUnavailable, CodeOverloaded, id, "Service Unavailable: "+err.Error())
}

// reserveSession counts a session of principal about to be created, or
// reports the cap it would exceed; nothing is made for a refused one. At
// the handler's cap it evicts the idle session used least recently
// (evictIdle), having taken the place that frees already, so that no other
// initialize takes it meanwhile; a principal at its own cap evicts nothing.
func (h *httpHandler) reserveSession(principal string) error {
	full, err := h.tryReserveSession(principal)
	if err != nil || !full || h.evictIdle() {
		return err
	}
	h.mu.Lock()
	h.releaseSessionLocked(principal)
	h.mu.Unlock()
	return errTooManySessions
}

// tryReserveSession counts a session of principal unless a cap refuses it;
// full reports that it was counted beyond the handler's cap, which an
// eviction must make up for.
func (h *httpHandler) tryReserveSession(principal string) (full bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false, errHandlerStopped
	}
	held := h.perPrincipal[principal]
	if n := h.cfg.maxPerUser; principal != "" && n > 0 && held >= n {
		return false, errTooManyPrincipalSessions
	}
	if principal != "" {
		putEntry(&h.perPrincipal, principal, held+1)
	}
	h.sessionsLive++
	return h.cfg.maxSessions > 0 && h.sessionsLive > h.cfg.maxSessions, nil
}

// releaseSessionLocked gives back what reserveSession counted.
func (h *httpHandler) releaseSessionLocked(principal string) {
	h.sessionsLive--
	if principal == "" {
		return
	}
	if n := h.perPrincipal[principal] - 1; n > 0 {
		h.perPrincipal[principal] = n
	} else {
		delete(h.perPrincipal, principal)
	}
}

// newSession creates and registers a legacy session of principal: a
// connection in push mode, so that it holds no goroutine while idle, and an
// expiry timer. Beyond a session cap it creates nothing.
func (h *httpHandler) newSession(principal string) (*httpSession, error) {
	if err := h.reserveSession(principal); err != nil {
		return nil, err
	}
	s := h.makeSession(rand.Text(), principal, false)
	if err := s.replica.join(); err != nil {
		h.mu.Lock()
		h.releaseSessionLocked(principal)
		h.mu.Unlock()
		s.conn.close(err)
		return nil, err
	}
	h.mu.Lock()
	if h.stopped {
		h.releaseSessionLocked(principal)
		h.mu.Unlock()
		s.conn.close(errors.New("the HTTP handler shut down"))
		return nil, errHandlerStopped
	}
	h.registerLocked(s)
	h.mu.Unlock()
	// Not yet among the server's sessions: broadcasts reach it once it has
	// a standalone stream (standaloneStream).
	return s, nil
}

// makeSession makes a legacy session of principal: a connection in push
// mode, so that it holds no goroutine while idle, and an expiry timer. With
// a SessionStore it is shared with the other instances; restored says that
// another instance made it (the cluster then restores its state). It is
// not registered yet.
func (h *httpHandler) makeSession(id, principal string, restored bool) *httpSession {
	s := &httpSession{h: h, id: id, principal: principal}
	if restored {
		s.uses = 1 // its initialize was served elsewhere: it counts as used from its first request here
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.storeHolds.Store(1) // the session's own, until it closes
	t := &streamTransport{sess: s}
	if h.cluster != nil {
		s.streamPrefix = h.cluster.streamPrefix()
		s.replica, s.ss, s.conn = h.cluster.open(s, t)
	} else {
		s.ss, s.conn = h.srv.pushSession(t, 0, principal, id)
	}
	if d := h.cfg.sessionTimeout; d > 0 {
		s.expiry = time.AfterFunc(d, s.expire)
	}
	return s
}

// registerLocked puts s in the session map, whose peak size forget watches.
func (h *httpHandler) registerLocked(s *httpSession) {
	h.sessions[s.id] = s
	h.sessionsPeak = max(h.sessionsPeak, len(h.sessions))
}

func (h *httpHandler) forget(s *httpSession) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
		h.releaseSessionLocked(s.principal)
		// A Go map keeps its peak size, and so does its maps.Clone: after a
		// burst of sessions has ended, copy the few left into new maps of
		// their size.
		if n := len(h.sessions); h.sessionsPeak > 1024 && n < h.sessionsPeak/4 {
			h.sessions = resized(h.sessions)
			h.perPrincipal = resized(h.perPrincipal)
			h.sessionsPeak = n
		}
	}
	h.mu.Unlock()
	h.srv.removeSession(s.ss)
}

// resized copies m into a new map made for its present size.
func resized[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	c := make(map[K]V, len(m))
	maps.Copy(c, m)
	return c
}

// httpSession is a legacy session: one connection in push mode whose
// messages are routed onto the streams of its HTTP requests.
type httpSession struct {
	h         *httpHandler
	id        string
	principal string // who opened it (WithAuthorizer); empty: anonymous
	ss        *serverSession
	conn      pushConn

	mu         sync.Mutex
	streams    map[string]*httpStream // POST streams that may still be resumed
	delivered  []string               // ids of retained delivered streams, oldest first
	standalone *httpStream
	nextStream int64
	active     int // HTTP requests in progress
	uses       int // HTTP requests begun, the initialize included
	evicted    bool
	lastActive time.Time
	expiry     *time.Timer
	closed     bool

	// ctx ends with the session: the event store's calls use it.
	ctx    context.Context
	cancel context.CancelFunc
	// storeHolds counts the session itself and its event store calls in
	// flight: the last to go tells the store that the session closed.
	storeHolds atomic.Int32

	// streamPrefix starts the ids of the session's streams here: with a
	// SessionStore, this instance's name.
	streamPrefix string
	// replica is the copy here of a session shared with other instances
	// (WithSessionStore, cluster_seam.go); nil otherwise.
	replica *sessionReplica

	// The session's place among the idle ones, while it has no request in
	// progress (http_session_evict.go); guarded by h.idle.mu.
	idlePrev, idleNext *httpSession
	idleIn             *sessionList
}

// close ends the session; the connection's transport calls it when the
// connection closes.
func (s *httpSession) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	streams := make([]*httpStream, 0, len(s.streams)+1)
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	if s.standalone != nil {
		streams = append(streams, s.standalone)
	}
	s.streams = nil
	s.h.idle.drop(s)
	if s.expiry != nil {
		s.expiry.Stop()
	}
	stopRelay := s.replica.stopLocked()
	s.mu.Unlock()
	if stopRelay != nil {
		stopRelay()
	}
	s.h.forget(s)
	for _, st := range streams {
		st.close()
	}
	s.cancel()
	s.releaseStore()
}

// holdStore keeps the session's end from reaching the event store until
// releaseStore; it reports false when the store heard of it already.
func (s *httpSession) holdStore() bool {
	for n := s.storeHolds.Load(); n > 0; n = s.storeHolds.Load() {
		if s.storeHolds.CompareAndSwap(n, n+1) {
			return true
		}
	}
	return false
}

func (s *httpSession) releaseStore() {
	if s.storeHolds.Add(-1) > 0 {
		return
	}
	// A copy of a shared session that ends here alone leaves its events to
	// the instances that still serve it.
	if store := s.h.cfg.store; store != nil && !s.replica.othersServe() {
		// The session's context has ended; this call must still be made.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), sharedCallTimeout)
		defer cancel()
		if err := store.SessionClosed(ctx, s.id); err != nil {
			s.h.log.Warn("the event store failed to drop a closed session's events", "session", s.id, "err", err)
		}
	}
}

// begin marks the session busy with one more HTTP request; it reports false
// when the session has ended.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.evicted {
		return false
	}
	if s.active == 0 {
		s.h.idle.drop(s)
	}
	s.active++
	s.uses++
	return true
}

// end marks one HTTP request of the session done and restarts the idle
// clock when it was the last.
func (s *httpSession) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.lastActive = time.Now()
	if s.active > 0 || s.closed {
		return
	}
	s.h.idle.add(s, s.uses > 1)
	if s.expiry != nil {
		s.expiry.Reset(s.h.cfg.sessionTimeout)
	}
}

// expire runs when the idle timer fires: a session that is still idle ends.
func (s *httpSession) expire() {
	s.mu.Lock()
	if s.closed || s.active > 0 {
		s.mu.Unlock()
		return
	}
	if idle := time.Since(s.lastActive); !s.lastActive.IsZero() && idle < s.h.cfg.sessionTimeout {
		s.expiry.Reset(s.h.cfg.sessionTimeout - idle)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.h.log.Debug("ending an idle HTTP session", "session", s.id)
	s.conn.close(errors.New("the session expired"))
}

// primes reports whether the session's SSE streams start with a priming
// event (2025-11-25, SEP-1699), which only helps when events are stored.
func (s *httpSession) primes() bool {
	if s.h.cfg.store == nil {
		return false
	}
	s.ss.mu.Lock()
	defer s.ss.mu.Unlock()
	return s.ss.version >= Version20251125
}

// newStream creates the stream of a POST that awaits the responses to ids.
func (s *httpSession) newStream(ids []ID) *httpStream {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	var retired []*httpStream
	if len(s.streams) >= maxRetainedStreams {
		retired = s.retireStreamsLocked()
	}
	s.nextStream++
	st := newHTTPStream(s, s.streamPrefix+strconv.FormatInt(s.nextStream, 10), ids, s.h.log)
	putEntry(&s.streams, st.id, st)
	s.mu.Unlock()
	for _, old := range retired {
		old.forget()
	}
	return st
}

// maxRetainedStreams bounds the POST streams a session keeps; past it,
// finished streams nobody resumed are forgotten first.
const maxRetainedStreams = 64

func (s *httpSession) retireStreamsLocked() (retired []*httpStream) {
	for id, st := range s.streams {
		if st.abandoned() {
			delete(s.streams, id)
			s.delivered = slices.DeleteFunc(s.delivered, func(d string) bool { return d == id })
			retired = append(retired, st)
		}
	}
	return retired
}

// retainedStreams is how many delivered SSE streams a session keeps
// resumable, in case the last events were lost with their connection.
const retainedStreams = 4

// retainStream keeps a delivered SSE stream resumable until newer ones push
// it out.
func (s *httpSession) retainStream(st *httpStream) {
	s.mu.Lock()
	if s.closed || s.streams[st.id] != st || slices.Contains(s.delivered, st.id) {
		s.mu.Unlock()
		return
	}
	s.delivered = append(s.delivered, st.id)
	var old *httpStream
	if len(s.delivered) > retainedStreams {
		old = s.streams[s.delivered[0]]
		delete(s.streams, s.delivered[0])
		s.delivered = slices.Delete(s.delivered, 0, 1)
	}
	s.mu.Unlock()
	if old != nil {
		old.forget()
	}
}

// removeStream forgets a stream whose every event reached the client.
func (s *httpSession) removeStream(st *httpStream) {
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
	st.forget()
}

// standaloneStreamID is the stream id of the session's GET stream, after
// the session's streamPrefix.
const standaloneStreamID = "0"

// standaloneStream returns the session's GET stream, creating it on first
// use: when the client opens it, or subscribes to a resource. Only then
// does the session join the server's sessions that broadcasts reach, and
// hold a backlog of what waits for the GET (see [Server.broadcast]). nil
// when the session ended or the handler offers no such stream.
func (s *httpSession) standaloneStream() *httpStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.h.cfg.noStandalone {
		return nil
	}
	if s.standalone == nil {
		s.standalone = newHTTPStream(s, s.streamPrefix+standaloneStreamID, nil, s.h.log)
		s.standalone.standalone = true
		s.standalone.backlog = new(standaloneBacklog)
		s.standalone.attached = false
		s.standalone.sse = true
		// Under the lock, so that close, which comes after, removes it.
		s.h.srv.addSession(s.ss)
	}
	return s.standalone
}

// errNoStandalone is the error of a message that belongs to no request
// when the session has no standalone stream to carry it.
var errNoStandalone = fmt.Errorf("%w: the session has no standalone GET stream", ErrStreamClosed)

// unsolicitedStream returns the stream for a message that belongs to no
// request: the session's GET stream if it has one, or nil.
func (s *httpSession) unsolicitedStream() *httpStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.standalone
}

// sessionChanged tells a shared session's copies, through the store and
// the relay, that its state changed; nothing to do on a single instance.
func (t *streamTransport) sessionChanged(change sessionChange) error {
	if t.sess == nil {
		return nil
	}
	return t.sess.replica.keepChange(change)
}

// callCtx is the context of a call to a shared store or the broadcaster
// that the session makes on its own behalf: it ends with the session, and
// after sharedCallTimeout.
func (s *httpSession) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, sharedCallTimeout)
}

// subscribed gives a legacy HTTP session its standalone stream, so that it
// receives broadcasts before it opens the GET: the client asked for them by
// subscribing.
func (t *streamTransport) subscribed() {
	if t.sess != nil {
		t.sess.standaloneStream()
	}
}

func (s *httpSession) stream(id string) *httpStream {
	if id == s.streamPrefix+standaloneStreamID {
		return s.standaloneStream()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// noteCancel ends the POST stream of a request the client cancelled: the
// engine answers a cancelled request with nothing, so its stream would
// otherwise wait forever. A user handler of notifications/cancelled decides
// for itself, so then the stream waits for the response.
func (s *httpSession) noteCancel(params json.RawMessage) {
	if s.h.srv.cfg.notifications["notifications/cancelled"] != nil {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if id, ok := parseID(p.RequestID); ok {
		s.settleCancelled(id)
	}
}

// settleCancelled ends the POST stream that awaits the response to the
// cancelled request id, if one does.
func (s *httpSession) settleCancelled(id ID) {
	s.mu.Lock()
	streams := make([]*httpStream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	for _, st := range streams {
		if st.settle(id) {
			return
		}
	}
}
