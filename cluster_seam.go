package mcp

// The seam of the many-instance wing: the code that matters only when
// several instances of a server share legacy HTTP sessions (2025-03-26 …
// 2025-11-25) through a SessionStore and a Broadcaster, the other
// cluster_*.go files. This file declares all the single-instance HTTP rooms
// may call of it: the handler's clusterMember and each session's
// sessionReplica, both nil without a SessionStore, whose methods here do
// nothing (or the single-instance thing) on nil. It also declares what the
// wing needs of the engine: making a shared session, restoring one from its
// record, and reading, changing and adopting its state.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clusterConfig is what the handler's options say about sharing its legacy
// sessions with other instances (WithSessionStore, WithSessionSaveRetries).
type clusterConfig struct {
	store       SessionStore // nil: sessions live in this handler only
	saveRetries int
	retriesSet  bool // saveRetries was given; else DefaultSessionSaveRetries
}

// clusterMember is the handler's part in sharing legacy sessions with the
// other instances of the server: its name among them, the store and how
// often a conflicting Save is tried again. nil on a handler with no
// SessionStore.
type clusterMember struct {
	h           *httpHandler
	store       SessionStore
	instance    string // names this handler among the instances (newInstanceID)
	saveRetries int    // WithSessionSaveRetries

	// restoring holds the copies being made here from the store, by
	// session id and principal, so that requests arriving at once for a
	// session this instance does not hold make one copy from one Load.
	mu        sync.Mutex
	restoring map[restoreKey]*restore
}

// newClusterMember returns the cluster part of handler h, or nil when
// its options give no SessionStore: a single instance.
func newClusterMember(h *httpHandler) *clusterMember {
	cfg := h.cfg.cluster
	if cfg.store == nil {
		return nil
	}
	c := &clusterMember{h: h, store: cfg.store, instance: newInstanceID(), saveRetries: DefaultSessionSaveRetries}
	if cfg.retriesSet {
		c.saveRetries = cfg.saveRetries
	}
	return c
}

// sessionReplica is this instance's copy of a shared legacy session: what
// it keeps of the session's record in the store (savedState) and what the
// copies tell each other on the session's channel (relayState). The
// session holds one, nil when sessions are not shared; the session's mu
// guards its state.
type sessionReplica struct {
	s       *httpSession
	cluster *clusterMember
	savedState
	channelState
	// deleted: the session ended everywhere (DELETE), not only its copy
	// here, so the event store may drop its events.
	deleted atomic.Bool
}

// streamPrefix starts the ids of a session's streams on this instance, so
// that a stream id names the instance that wrote it; "" on a single
// instance.
func (c *clusterMember) streamPrefix() string {
	if c == nil {
		return ""
	}
	return c.instance + "-"
}

// open makes the engine's side of session s, shared: its replica, the
// server session and its connection, fresh (restoreSession then fills it
// from the record when it was made elsewhere).
func (c *clusterMember) open(s *httpSession, t *streamTransport) (*sessionReplica, *serverSession, pushConn) {
	// Not due for a touch: a new session's record is saved by its
	// initialize, and a Touch before that finds nothing and would end it
	// (a keep-alive comment of its initialize's stream did).
	sr := &sessionReplica{s: s, cluster: c}
	sr.lastTouch = time.Now()
	ss, conn := c.h.srv.pushSharedSession(t, s.principal, s.id, c.streamPrefix())
	return sr, ss, conn
}

// useSession finds session sid of principal among the shared ones and
// marks it busy, as the handler's useSession does for its own: a copy held
// here is touched in the store when due, and one not held here is loaded
// from the store. It answers the request itself and returns nil when there
// is no such session.
func (c *clusterMember) useSession(w http.ResponseWriter, r *http.Request, sess *httpSession, sid, principal string) *httpSession {
	var ok bool
	if sess, ok = c.sharedSession(w, r, sess, sid, principal); !ok {
		return nil
	}
	if sess != nil && sess.principal == principal {
		if sess.begin() {
			return sess
		}
		if !sess.replica.deleted.Load() {
			// The copy here ended on its own (idle here, or dropped) as
			// this request came; the session may live on in the store.
			c.h.forget(sess)
			if sess, ok = c.sharedSession(w, r, nil, sid, principal); !ok {
				return nil
			}
		}
	}
	if sess == nil || sess.principal != principal || !sess.begin() {
		refuseUnknownSession(w)
		return nil
	}
	return sess
}

// join subscribes a new copy to its session's channel, until it closes.
func (sr *sessionReplica) join() error {
	if sr == nil {
		return nil
	}
	return sr.joinRelay()
}

// stopLocked returns what ends the copy's subscription to its session's
// channel, for the closing session to call once it let go of its lock
// (nil: nothing to end); the session's mu is held.
func (sr *sessionReplica) stopLocked() func() {
	if sr == nil {
		return nil
	}
	stop := sr.stopRelay
	sr.stopRelay = nil
	return stop
}

// othersServe reports whether other instances may serve the session still,
// its copy here having closed, so that its events must stay in the event
// store: a shared session not deleted.
func (sr *sessionReplica) othersServe() bool {
	return sr != nil && !sr.deleted.Load()
}

// relaying reports whether the copies of the session talk on its channel:
// it is shared and the server has a Broadcaster.
func (sr *sessionReplica) relaying() bool {
	return sr != nil && sr.cluster.relay() != nil
}

// routeUnsolicited puts a message that belongs to no request where the
// copies of the session agree it goes (pushShared) and reports true; with
// no relay it does nothing and reports false, and the message goes on the
// GET stream here.
func (sr *sessionReplica) routeUnsolicited(o outgoing) (bool, error) {
	if !sr.relaying() {
		return false, nil
	}
	return true, sr.pushShared(o)
}

// relayPOST hands on to the other copies what a POST of no request
// carries for them (handOnPOST) and returns the messages left for the
// engine here: all of them with no relay. ok is false when the answer is
// written.
func (sr *sessionReplica) relayPOST(w http.ResponseWriter, body []byte, msgs []*httpMessage, batch bool) (local []*httpMessage, ok bool) {
	if !sr.relaying() {
		return msgs, true
	}
	return sr.handOnPOST(w, body, msgs, batch)
}

// deleteEverywhere ends a shared session in the store and on the other
// instances (deleteShared); nothing to do on a single instance.
func (sr *sessionReplica) deleteEverywhere(ctx context.Context) error {
	if sr == nil {
		return nil
	}
	return sr.deleteShared(ctx)
}

// resumesElsewhere reports whether streamID, which no stream here has, is
// one another instance wrote, for resumeElsewhere to serve.
func (sr *sessionReplica) resumesElsewhere(streamID string) bool {
	return sr != nil && !strings.HasPrefix(streamID, sr.cluster.streamPrefix())
}

// resumeElsewhere serves a GET that resumes, after index, a stream another
// instance wrote (serveResumeElsewhere); only when resumesElsewhere said so.
func (sr *sessionReplica) resumeElsewhere(w http.ResponseWriter, r *http.Request, streamID string, index int64) {
	sr.serveResumeElsewhere(w, r, streamID, index)
}

// hold tells the other copies that this one holds the session's GET stream
// st from now on, resuming stream or opened fresh ("") (holdStream).
func (sr *sessionReplica) hold(ctx context.Context, st *httpStream, stream string) {
	if sr.relaying() {
		sr.holdStream(ctx, st, stream)
	}
}

// takeOver ends what hold began, once the replay of the resumed stream
// after index is read (takeStream).
func (sr *sessionReplica) takeOver(st *httpStream, index int64, replay []streamEvent) {
	if sr.relaying() {
		sr.takeStream(st, index, replay)
	}
}

// release tells the other copies that this one let the GET stream go
// (releaseStream).
func (sr *sessionReplica) release() {
	if sr.relaying() {
		sr.releaseStream()
	}
}

// keepAlive touches a shared session whose stream stays open, when it is
// due (keepShared).
func (sr *sessionReplica) keepAlive(ctx context.Context) {
	if sr != nil {
		sr.keepShared(ctx)
	}
}

// keepChange saves a change of the session's state (none for initialize)
// in the store and tells the other copies (shareChange); its error is the
// request's. Nothing to do on a single instance.
func (sr *sessionReplica) keepChange(change sessionChange) error {
	if sr == nil {
		return nil
	}
	return sr.shareChange(change)
}

// The engine's side: what the wing may do to a server session.

// sessionRelay is the Broadcaster the copies of a shared session talk
// through: the server's (WithBroadcaster), nil for none.
func (s *Server) sessionRelay() Broadcaster {
	return s.cfg.server.broadcaster
}

// pushSharedSession makes a legacy session whose state a SessionStore
// shares between instances, fresh (restore fills one made elsewhere). Its
// calls to the client get ids that start with callPrefix, unique to this
// instance, so that an answer relayed from another instance reaches no
// other waiter. sessionID is the session's id.
func (s *Server) pushSharedSession(t *streamTransport, principal, sessionID, callPrefix string) (*serverSession, pushConn) {
	ss, c := s.newSession(t, 0)
	ss.principal, ss.sessionID = principal, sessionID
	c.callPrefix = callPrefix
	return ss, c
}

// restore puts a session just made by pushSharedSession in the state rec
// keeps, initialized with no initialize, as another instance left it.
func (ss *serverSession) restore(rec *SessionRecord) {
	ss.mu.Lock()
	ss.initialized = true
	ss.version = rec.ProtocolVersion
	info := rec.ClientInfo
	ss.clientInfo = &info
	if len(rec.ClientCapabilities) > 0 {
		ss.clientCaps = newCapabilitySet(slices.Clone(rec.ClientCapabilities))
	}
	ss.logLevel = rec.LogLevel
	for _, uri := range rec.Subscriptions {
		putEntry(&ss.subscriptions, uri, true)
	}
	ss.mu.Unlock()
	ss.conn.batchOK.Store(rec.ProtocolVersion == Version20250326)
}

// record is the session's state as a SessionStore keeps it.
func (ss *serverSession) record(id string) *SessionRecord {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	rec := &SessionRecord{ID: id, Principal: ss.principal, ProtocolVersion: ss.version, LogLevel: ss.logLevel}
	if ss.clientInfo != nil {
		rec.ClientInfo = *ss.clientInfo
	}
	if ss.clientCaps != nil {
		rec.ClientCapabilities = slices.Clone(ss.clientCaps.raw)
	}
	for uri := range ss.subscriptions {
		rec.Subscriptions = append(rec.Subscriptions, uri)
	}
	slices.Sort(rec.Subscriptions)
	return rec
}

// apply makes a change that another instance's copy of the session made;
// it reports whether the change is a new subscription.
func (ss *serverSession) apply(c sessionChange) (subscribed bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if c.Subscribe != "" {
		putEntry(&ss.subscriptions, c.Subscribe, true)
	}
	if c.Unsubscribe != "" {
		delete(ss.subscriptions, c.Unsubscribe)
	}
	if c.LogLevel != "" && validLevel(LoggingLevel(c.LogLevel)) {
		ss.logLevel = c.LogLevel
	}
	return c.Subscribe != ""
}

// adopt takes the log level and subscriptions of rec, the session's state
// as another instance left it in the store; it reports whether that added
// a subscription.
func (ss *serverSession) adopt(rec *SessionRecord) (subscribed bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if validLevel(LoggingLevel(rec.LogLevel)) || rec.LogLevel == "" {
		ss.logLevel = rec.LogLevel
	}
	for uri := range ss.subscriptions {
		if !slices.Contains(rec.Subscriptions, uri) {
			delete(ss.subscriptions, uri)
		}
	}
	for _, uri := range rec.Subscriptions {
		if _, ok := ss.subscriptions[uri]; !ok {
			putEntry(&ss.subscriptions, uri, true)
			subscribed = true
		}
	}
	return subscribed
}
