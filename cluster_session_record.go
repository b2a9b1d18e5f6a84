package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// WithSessionStore shares the handler's legacy sessions (2025-03-26 …
// 2025-11-25) with the other instances of the server through store, so that
// any instance serves a session's next request: initialize saves the
// session, logging/setLevel and resources/subscribe save it again, DELETE
// deletes it, and a request naming a session this instance does not hold
// loads it. Sessions stay cached where they were used; a cached one is
// touched in the store at most once per quarter of the session timeout. A
// record lives a quarter of the timeout past its last Save or Touch; an
// instance's idle timer drops only its own copy, since the client may be
// busy on another, and so does an eviction at the session cap
// ([WithMaxSessions]), a cap of this instance.
// Give every instance the same store, a shared [EventStore] and, on the
// Server, a shared [Broadcaster] ([WithBroadcaster]) for the parts of a
// session that live on one instance: its GET stream and the asks its
// handlers wait on. Default: none, sessions live in this handler only.
// Server side.
func WithSessionStore(store SessionStore) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.sessions = store })
}

// DefaultSessionSaveRetries bounds the Saves of a legacy session tried
// again after another instance saved it meanwhile; see
// [WithSessionSaveRetries]. Server side.
const DefaultSessionSaveRetries = 5

// WithSessionSaveRetries bounds how many times a change of a shared legacy
// session (logging/setLevel, resources/subscribe and unsubscribe) is saved
// again when its Save finds that another instance saved the session since
// this one last read it ([ErrSessionConflict]): each time the handler
// loads the record, makes its change on it and saves it (default 5; 0
// tries no more, a negative n is ignored). Conflicts in a row need changes
// of one session made on several instances at the same moment, so a
// change that meets one at every try is answered with an error naming it;
// the session serves on. Server side.
func WithSessionSaveRetries(n int) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if n >= 0 {
			c.saveRetries = n
		}
	})
}

// sessionTouchFraction: a cached session is touched in the store at most
// once per this fraction of the session timeout, and its record lives that
// much past the timeout, so that the store keeps it at least as long as the
// idle timer of the instance that last served it.
const sessionTouchFraction = 4

// sharedSessionTimeout is the session timeout a shared session's record
// lives by: the handler's, or the default when idle sessions are kept
// (WithSessionTimeout(0)), since a record nobody touches must end.
func (h *httpHandler) sharedSessionTimeout() time.Duration {
	if d := h.cfg.sessionTimeout; d > 0 {
		return d
	}
	return DefaultSessionTimeout
}

// sessionTTL is how long a record lives past its last Save or Touch.
func (h *httpHandler) sessionTTL() time.Duration {
	d := h.sharedSessionTimeout()
	return d + d/sessionTouchFraction
}

// newInstanceID names a handler among the instances of a server: short,
// random, and without the '_' that ends a stream id in an SSE event id.
func newInstanceID() string {
	return rand.Text()[:12]
}

// sharedState is what a legacy session shared through a SessionStore keeps
// of it; the session's mu guards it.
type sharedState struct {
	lastTouch time.Time // the last Save or Touch
	// revision is that of the record this copy last saved or loaded, the
	// one its next Save is based on; pending are the changes made here
	// that no Save has kept yet, in order, which merge makes again on a
	// record another instance saved.
	revision int64
	pending  []sessionChange
	// Saves come one at a time, each of the state as it is when it starts:
	// saveGen counts the changes asked to be saved, savedGen the last one
	// saved, and saveDone is closed when the Save under way ends.
	saving   bool
	saveGen  int64
	savedGen int64
	saveDone chan struct{}
	// stopRelay ends the subscription to the session's channel.
	stopRelay func()
	// catchingUp: the copy is being made and loads its record once more
	// (catchUp); the changes its channel brings meanwhile wait in changes.
	catchingUp bool
	changes    []sessionChange
	// holder is the instance that holds the session's GET stream, when
	// another does ("": this one, or none known).
	holder string
	// unconfirmed are the messages that came while holder held the stream
	// and that it has not said it stored: the server-wide ones, which it
	// has too, and the session's own made here and handed to it. Should it
	// die without a word, the copy that takes the stream over gets them
	// (relayKept). early are the ids it confirmed before they came here.
	// Both are bounded by WithSessionBacklog's count.
	unconfirmed []keptMessage
	early       []string
	// holding: this copy holds the GET stream, and confirms what messages
	// with an id it stores on it (confirms, while confirming). delivered
	// are the ids of those on it since it took the stream, so that each
	// goes once, live, replayed or handed over, at most twice
	// WithSessionBacklog's count of them.
	holding    bool
	confirms   []string
	confirming bool
	delivered  recentIDs
	// handover is the rest of what the relay keeps (http_session_relay.go).
	handover handoverState
}

// keptMessage is a message a copy of a shared session hands to the
// holder of its GET stream, or keeps for it until it says it stored it;
// as JSON, a relayEvent or an element of relayKept. Wide: a server-wide
// message, which every copy has; else one of the session's own, made on
// one instance and named there. For names the holder a relayEvent is
// for.
type keptMessage struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"message"`
	Wide bool            `json:"wide,omitempty"`
	For  string          `json:"for,omitempty"`
}

// sessionStoreError is a failed call to the SessionStore or the
// Broadcaster for a session: which step, which session, why.
type sessionStoreError struct {
	step string // "load", "save", "touch", "delete", "subscribe to the channel of"
	id   string
	err  error
}

func (e *sessionStoreError) Error() string {
	return "cannot " + e.step + " session " + e.id + ": " + e.err.Error()
}

func (e *sessionStoreError) Unwrap() error { return e.err }

// errSessionUnknown: the store holds no such session for this principal.
var errSessionUnknown = errors.New("unknown session")

// sharedSession finds session sid of principal when sessions are shared:
// sess, the copy held here, is touched in the store when it is due; with
// none here the session is loaded from the store and a copy made. It
// answers the request itself and reports false when the session cannot be
// loaded (503 when the store fails), and returns nil for a session the
// store does not hold for principal. A failed touch is logged; the copy
// here serves on.
func (h *httpHandler) sharedSession(w http.ResponseWriter, r *http.Request, sess *httpSession, sid, principal string) (*httpSession, bool) {
	var err error
	switch {
	case sess == nil:
		sess, err = h.restoreSession(r.Context(), sid, principal)
	case sess.principal == principal:
		if err := sess.touch(r.Context()); errors.Is(err, ErrSessionNotFound) {
			// Ended elsewhere, or expired in the store: drop the copy.
			sess.conn.close(errors.New("the session is no longer in the session store"))
			return nil, true
		} else if err != nil {
			// The copy here serves on; the next touch is due a fraction
			// of the timeout later, well before the record expires.
			h.log.Warn("cannot touch a legacy session in the session store", "session", sid, "err", err)
		}
	}
	switch {
	case err == nil:
		return sess, true
	case errors.Is(err, errSessionUnknown):
		return nil, true
	case errors.Is(err, errTooManySessions), errors.Is(err, errTooManyPrincipalSessions), errors.Is(err, errHandlerStopped):
		refuseSession(w, ID{}, err)
		return nil, false
	}
	h.log.Warn("a legacy session is unavailable: the session store failed", "session", sid, "err", err)
	writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the session store failed: "+err.Error())
	return nil, false
}

// restoreSession makes a copy here of session sid, which another instance
// created, from its record in the store, and registers it; principal must
// be the one that opened it (else errSessionUnknown, as for a session the
// store does not hold). Two requests that restore the same session at once
// end up with one copy.
func (h *httpHandler) restoreSession(ctx context.Context, sid, principal string) (*httpSession, error) {
	ctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	defer cancel()
	rec, err := h.cfg.sessions.Load(ctx, sid)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, errSessionUnknown
	}
	if err != nil {
		return nil, &sessionStoreError{"load", sid, err}
	}
	if rec.Principal != principal || (rec.ID != "" && rec.ID != sid) {
		return nil, errSessionUnknown
	}
	if err := h.reserveSession(principal); err != nil {
		return nil, err
	}
	s := h.makeSession(sid, principal, rec)
	s.shared.lastTouch = time.Now() // Load proved it live
	s.shared.revision = rec.Revision
	s.shared.catchingUp = true
	err = s.joinRelay()
	subscribed := false
	if err == nil {
		subscribed, err = s.catchUp(ctx)
	}
	h.mu.Lock()
	held := h.sessions[sid]
	if err != nil || held != nil || h.stopped {
		h.releaseSessionLocked(principal)
		h.mu.Unlock()
		s.conn.close(errors.New("the session's copy was not needed"))
		switch {
		case err != nil:
			return nil, err
		case held == nil:
			return nil, errHandlerStopped
		}
		return held, nil
	}
	h.registerLocked(s)
	h.mu.Unlock()
	h.log.Debug("serving a legacy session created on another instance", "session", sid)
	s.publish(ctx, relayJoin, nil) // the holder of its GET stream, if any, says so
	if len(rec.Subscriptions) > 0 || subscribed {
		s.standaloneStream() // its resource updates need somewhere to wait
	}
	return s, nil
}

// catchUp loads the record of a copy being made once more, now that the
// copy hears the session's channel. Another instance saves a change before
// it publishes it, so a change saved after the first Load is either in
// this record or heard on the channel; without the second Load, one saved
// and published in between was lost (a subscription, whose updates this
// copy then dropped). What the channel brought meanwhile is made again on
// the record, in order: each change sets or clears one thing, so the last
// word wins whichever of the two saw it first. It reports whether the copy
// gained a subscription.
func (s *httpSession) catchUp(ctx context.Context) (subscribed bool, err error) {
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	rec, err := s.h.cfg.sessions.Load(callCtx, s.id)
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	changes := s.shared.changes
	s.shared.catchingUp, s.shared.changes = false, nil
	switch {
	case errors.Is(err, ErrSessionNotFound):
		return false, errSessionUnknown
	case err != nil:
		return false, &sessionStoreError{"load", s.id, err}
	}
	subscribed = s.ss.adopt(rec)
	s.shared.revision = max(s.shared.revision, rec.Revision)
	for _, c := range changes {
		subscribed = s.ss.apply(c) || subscribed
	}
	return subscribed, nil
}

// save makes change (none for initialize) to the session's state and saves
// that state in the store, outside every lock, and returns once a Save that
// started after the call succeeded: a change is kept before it is
// answered, and Saves of one session never overtake one another. Each Save
// is based on the revision this copy last saved or loaded; when another
// instance saved the session since, merge saves again on what it saved.
func (s *httpSession) save(change sessionChange) error {
	s.mu.Lock()
	if change != (sessionChange{}) {
		// Made here again under the session's lock, so that the copy's
		// state and its pending changes agree for merge, whatever it did
		// since the request made it.
		s.shared.pending = append(s.shared.pending, change)
		s.ss.apply(change)
	}
	s.shared.saveGen++
	want := s.shared.saveGen
	for s.shared.savedGen < want {
		if s.shared.saving {
			if s.shared.saveDone == nil {
				s.shared.saveDone = make(chan struct{})
			}
			done := s.shared.saveDone
			s.mu.Unlock()
			<-done
			s.mu.Lock()
			continue
		}
		s.shared.saving = true
		gen, base, n := s.shared.saveGen, s.shared.revision, len(s.shared.pending)
		s.mu.Unlock()
		rec := s.ss.record(s.id)
		rec.Revision = base
		ctx, cancel := s.callCtx()
		err := s.h.cfg.sessions.Save(ctx, rec, s.h.sessionTTL())
		cancel()
		merged := n
		if errors.Is(err, ErrSessionConflict) && base != 0 {
			rec, merged, err = s.merge()
		}
		s.mu.Lock()
		s.shared.saving = false
		if s.shared.saveDone != nil {
			close(s.shared.saveDone)
			s.shared.saveDone = nil
		}
		if err != nil {
			// The changes this Save was for are answered with the error;
			// those made since stay pending for their own Save.
			s.shared.pending = slices.Delete(s.shared.pending, 0, n)
			if errors.Is(err, ErrSessionNotFound) {
				// Ended elsewhere, or expired: the next request's touch
				// finds it gone and drops the copy.
				s.shared.lastTouch = time.Time{}
			}
			s.mu.Unlock()
			s.h.log.Warn("the session store failed to save a session", "session", s.id, "err", err)
			return &sessionStoreError{"save", s.id, err}
		}
		s.shared.pending = slices.Delete(s.shared.pending, 0, merged)
		s.shared.revision = rec.Revision
		s.shared.savedGen = max(s.shared.savedGen, gen)
		s.shared.lastTouch = time.Now()
	}
	s.mu.Unlock()
	return nil
}

// merge saves the session after a Save found that another instance saved
// it since this copy's revision: it loads the record stored, makes this
// copy's pending changes on it, saves that, and takes it as the copy's
// state, so that the copy learns what the others changed even before
// their word reaches it on the relay. It tries again, up to
// WithSessionSaveRetries times in all, while the record keeps changing
// under it, and returns the record saved and how many pending changes it
// holds.
func (s *httpSession) merge() (*SessionRecord, int, error) {
	store := s.h.cfg.sessions
	for range s.h.cfg.saveRetries {
		ctx, cancel := s.callCtx()
		rec, err := store.Load(ctx, s.id)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("loading it again after another instance changed it: %w", err)
		}
		rec.ID = s.id // a store may leave it out, as restoreSession allows
		s.mu.Lock()
		n := len(s.shared.pending)
		for _, c := range s.shared.pending {
			c.applyTo(rec)
		}
		subscribed := s.ss.adopt(rec)
		s.mu.Unlock()
		if subscribed {
			s.standaloneStream() // the new subscription's updates need somewhere to wait
		}
		ctx, cancel = s.callCtx()
		err = store.Save(ctx, rec, s.h.sessionTTL())
		cancel()
		if !errors.Is(err, ErrSessionConflict) {
			return rec, n, err
		}
	}
	return nil, 0, fmt.Errorf("%w, at each try (%d in all)", ErrSessionConflict, s.h.cfg.saveRetries+1)
}

// applyTo makes the change on a session's record.
func (c sessionChange) applyTo(rec *SessionRecord) {
	if c.Subscribe != "" && !slices.Contains(rec.Subscriptions, c.Subscribe) {
		rec.Subscriptions = append(rec.Subscriptions, c.Subscribe)
		slices.Sort(rec.Subscriptions)
	}
	if c.Unsubscribe != "" {
		rec.Subscriptions = slices.DeleteFunc(rec.Subscriptions, func(uri string) bool { return uri == c.Unsubscribe })
	}
	if c.LogLevel != "" {
		rec.LogLevel = c.LogLevel
	}
}

// touch extends the session's life in the store unless it was saved or
// touched (or tried to be) within the last fraction of its timeout: most
// requests make no store call at all, and none while a touch is under way.
// It returns ErrSessionNotFound when the store no longer holds the session.
func (s *httpSession) touch(ctx context.Context) error {
	every := s.h.sharedSessionTimeout() / sessionTouchFraction
	now := time.Now()
	s.mu.Lock()
	if now.Sub(s.shared.lastTouch) < every {
		s.mu.Unlock()
		return nil
	}
	s.shared.lastTouch = now // the requests meanwhile need not touch it too
	s.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	err := s.h.cfg.sessions.Touch(callCtx, s.id, s.h.sessionTTL())
	cancel()
	if err == nil || errors.Is(err, ErrSessionNotFound) {
		return err
	}
	return &sessionStoreError{"touch", s.id, err}
}

// keepShared touches a session whose stream stays open, when it is due;
// a session the store no longer holds ends here too.
func (s *httpSession) keepShared(ctx context.Context) {
	err := s.touch(ctx)
	switch {
	case errors.Is(err, ErrSessionNotFound):
		s.conn.close(errors.New("the session is no longer in the session store"))
	case err != nil && ctx.Err() == nil:
		s.h.log.Warn("cannot keep a legacy session alive in the session store", "session", s.id, "err", err)
	}
}

// deleteShared ends a shared session everywhere: the store forgets it and
// the other instances drop their copies (or find out at their next touch,
// should the broadcast fail). The copy here is the caller's to close.
func (s *httpSession) deleteShared(ctx context.Context) error {
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	defer cancel()
	if err := s.h.cfg.sessions.Delete(callCtx, s.id); err != nil {
		s.h.log.Warn("the session store failed to delete a session", "session", s.id, "err", err)
		return &sessionStoreError{"delete", s.id, err}
	}
	s.deleted.Store(true)
	s.publish(ctx, relayDelete, nil)
	return nil
}

// sessionChanged saves a legacy session's state when sessions are shared,
// then tells the other copies of the session what changed, so that the one
// holding the GET stream delivers by the session's present state. A failed
// publication is logged: the copies made from now on load the saved state.
func (t *streamTransport) sessionChanged(change sessionChange) error {
	if t.sess == nil || t.sess.h.cfg.sessions == nil {
		return nil
	}
	if err := t.sess.save(change); err != nil {
		return err
	}
	if change != (sessionChange{}) {
		data, _ := json.Marshal(change)
		t.sess.publish(t.sess.ctx, relayState, data)
	}
	return nil
}
