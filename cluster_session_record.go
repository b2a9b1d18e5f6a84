package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// This file holds a shared session's record in the SessionStore: finding
// or restoring a session another instance made, saving each change of its
// state (merging it with another instance's when both saved at once),
// touching it while it is used, and deleting it.

// sessionTouchFraction: a cached session is touched in the store at most
// once per this fraction of the session timeout, and its record lives that
// much past the timeout, so that the store keeps it at least as long as the
// idle timer of the instance that last served it.
const sessionTouchFraction = 4

// sharedSessionTimeout is the session timeout a shared session's record
// lives by: the handler's, or the default when idle sessions are kept
// (WithSessionTimeout(0)), since a record nobody touches must end.
func (c *clusterMember) sharedSessionTimeout() time.Duration {
	if d := c.h.cfg.sessionTimeout; d > 0 {
		return d
	}
	return DefaultSessionTimeout
}

// sessionTTL is how long a record lives past its last Save or Touch.
func (c *clusterMember) sessionTTL() time.Duration {
	d := c.sharedSessionTimeout()
	return d + d/sessionTouchFraction
}

// savedState is what a copy of a shared session keeps of the session's
// record in the store, so that its Saves build on one another; the
// session's mu guards it.
type savedState struct {
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
}

// errSessionUnknown: the store holds no such session for this principal.
var errSessionUnknown = errors.New("unknown session")

// sharedSession finds session sid of principal when sessions are shared:
// sess, the copy held here, is touched in the store when it is due; with
// none here the session is loaded from the store and a copy made. It
// answers the request itself and reports false when the session cannot be
// loaded (503 when the store fails), and returns nil for a session the
// store does not hold for principal. A failed touch is logged; the copy
// here serves on.
func (c *clusterMember) sharedSession(w http.ResponseWriter, r *http.Request, sess *httpSession, sid, principal string) (*httpSession, bool) {
	var err error
	switch {
	case sess == nil:
		sess, err = c.restoreSession(r.Context(), sid, principal)
	case sess.principal == principal:
		if err := sess.replica.touch(r.Context()); errors.Is(err, ErrSessionNotFound) {
			// Ended elsewhere, or expired in the store: drop the copy.
			sess.conn.close(errors.New("the session is no longer in the session store"))
			return nil, true
		} else if err != nil {
			// The copy here serves on; the next touch is due a fraction
			// of the timeout later, well before the record expires.
			c.h.log.Warn("cannot touch a legacy session in the session store", "session", sid, "err", err)
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
	c.h.log.Warn("a legacy session is unavailable: the session store failed", "session", sid, "err", err)
	writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the session store failed: "+err.Error())
	return nil, false
}

// restoreKey names a copy being made: the session and the principal that
// asks for it, so that a request naming someone else's session neither
// waits on nor spoils the owner's.
type restoreKey struct{ sid, principal string }

// restore is a copy being made; done is closed when s and err are set.
type restore struct {
	done chan struct{}
	s    *httpSession
	err  error
}

// restoreSession makes a copy here of session sid, which another instance
// created, from its record in the store, and registers it; principal must
// be the one that opened it (else errSessionUnknown, as for a session the
// store does not hold). Requests that come for the same session and
// principal while it is being made wait for that copy rather than load
// the record again; the copy is made whatever becomes of the request that
// started it, within sharedCallTimeout.
func (c *clusterMember) restoreSession(ctx context.Context, sid, principal string) (*httpSession, error) {
	key := restoreKey{sid, principal}
	c.mu.Lock()
	if r := c.restoring[key]; r != nil {
		c.mu.Unlock()
		select {
		case <-r.done:
			return r.s, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := &restore{done: make(chan struct{})}
	putEntry(&c.restoring, key, r)
	c.mu.Unlock()
	r.s, r.err = c.restoreOnce(context.WithoutCancel(ctx), sid, principal)
	c.mu.Lock()
	delete(c.restoring, key)
	c.mu.Unlock()
	close(r.done)
	return r.s, r.err
}

// restoreOnce is restoreSession's work; should a copy of the session be
// registered here meanwhile, it returns that one.
func (c *clusterMember) restoreOnce(ctx context.Context, sid, principal string) (*httpSession, error) {
	ctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	defer cancel()
	rec, err := c.store.Load(ctx, sid)
	if errors.Is(err, ErrSessionNotFound) {
		return nil, errSessionUnknown
	}
	if err != nil {
		return nil, &sessionStoreError{"load", sid, err}
	}
	if rec.Principal != principal || (rec.ID != "" && rec.ID != sid) {
		return nil, errSessionUnknown
	}
	if err := c.h.reserveSession(principal); err != nil {
		return nil, err
	}
	s := c.h.makeSession(sid, principal, true)
	s.ss.restore(rec)
	sr := s.replica
	sr.lastTouch = time.Now() // Load proved it live
	sr.revision = rec.Revision
	sr.catchingUp = true
	err = sr.joinRelay()
	subscribed := false
	if err == nil {
		subscribed, err = sr.catchUp(ctx)
	}
	c.h.mu.Lock()
	held := c.h.sessions[sid]
	if err != nil || held != nil || c.h.stopped {
		c.h.releaseSessionLocked(principal)
		c.h.mu.Unlock()
		s.conn.close(errors.New("the session's copy was not needed"))
		switch {
		case err != nil:
			return nil, err
		case held == nil:
			return nil, errHandlerStopped
		}
		return held, nil
	}
	c.h.registerLocked(s)
	c.h.mu.Unlock()
	c.h.log.Debug("serving a legacy session created on another instance", "session", sid)
	sr.publish(ctx, relayJoin, nil) // the holder of its GET stream, if any, says so
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
func (sr *sessionReplica) catchUp(ctx context.Context) (subscribed bool, err error) {
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	rec, err := sr.cluster.store.Load(callCtx, sr.s.id)
	cancel()
	sr.s.mu.Lock()
	defer sr.s.mu.Unlock()
	changes := sr.changes
	sr.catchingUp, sr.changes = false, nil
	switch {
	case errors.Is(err, ErrSessionNotFound):
		return false, errSessionUnknown
	case err != nil:
		return false, &sessionStoreError{"load", sr.s.id, err}
	}
	subscribed = sr.s.ss.adopt(rec)
	sr.revision = max(sr.revision, rec.Revision)
	for _, c := range changes {
		subscribed = sr.s.ss.apply(c) || subscribed
	}
	return subscribed, nil
}

// save makes change (none for initialize) to the session's state and saves
// that state in the store, outside every lock, and returns once a Save that
// started after the call succeeded: a change is kept before it is
// answered, and Saves of one session never overtake one another. Each Save
// is based on the revision this copy last saved or loaded; when another
// instance saved the session since, merge saves again on what it saved.
func (sr *sessionReplica) save(change sessionChange) error {
	sr.s.mu.Lock()
	if change != (sessionChange{}) {
		// Made here again under the session's lock, so that the copy's
		// state and its pending changes agree for merge, whatever it did
		// since the request made it.
		sr.pending = append(sr.pending, change)
		sr.s.ss.apply(change)
	}
	sr.saveGen++
	want := sr.saveGen
	for sr.savedGen < want {
		if sr.saving {
			if sr.saveDone == nil {
				sr.saveDone = make(chan struct{})
			}
			done := sr.saveDone
			sr.s.mu.Unlock()
			<-done
			sr.s.mu.Lock()
			continue
		}
		sr.saving = true
		gen, base, n := sr.saveGen, sr.revision, len(sr.pending)
		sr.s.mu.Unlock()
		rec := sr.s.ss.record(sr.s.id)
		rec.Revision = base
		ctx, cancel := sr.s.callCtx()
		err := sr.cluster.store.Save(ctx, rec, sr.cluster.sessionTTL())
		cancel()
		merged := n
		if errors.Is(err, ErrSessionConflict) && base != 0 {
			rec, merged, err = sr.merge()
		}
		sr.s.mu.Lock()
		sr.saving = false
		if sr.saveDone != nil {
			close(sr.saveDone)
			sr.saveDone = nil
		}
		if err != nil {
			// The changes this Save was for are answered with the error;
			// those made since stay pending for their own Save.
			sr.pending = slices.Delete(sr.pending, 0, n)
			if errors.Is(err, ErrSessionNotFound) {
				// Ended elsewhere, or expired: the next request's touch
				// finds it gone and drops the copy.
				sr.lastTouch = time.Time{}
			}
			sr.s.mu.Unlock()
			sr.s.h.log.Warn("the session store failed to save a session", "session", sr.s.id, "err", err)
			return &sessionStoreError{"save", sr.s.id, err}
		}
		sr.pending = slices.Delete(sr.pending, 0, merged)
		sr.revision = rec.Revision
		sr.savedGen = max(sr.savedGen, gen)
		sr.lastTouch = time.Now()
	}
	sr.s.mu.Unlock()
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
func (sr *sessionReplica) merge() (*SessionRecord, int, error) {
	store := sr.cluster.store
	for range sr.cluster.saveRetries {
		ctx, cancel := sr.s.callCtx()
		rec, err := store.Load(ctx, sr.s.id)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("loading it again after another instance changed it: %w", err)
		}
		rec.ID = sr.s.id // a store may leave it out, as restoreSession allows
		sr.s.mu.Lock()
		n := len(sr.pending)
		for _, c := range sr.pending {
			c.applyTo(rec)
		}
		subscribed := sr.s.ss.adopt(rec)
		sr.s.mu.Unlock()
		if subscribed {
			sr.s.standaloneStream() // the new subscription's updates need somewhere to wait
		}
		ctx, cancel = sr.s.callCtx()
		err = store.Save(ctx, rec, sr.cluster.sessionTTL())
		cancel()
		if !errors.Is(err, ErrSessionConflict) {
			return rec, n, err
		}
	}
	return nil, 0, fmt.Errorf("%w, at each try (%d in all)", ErrSessionConflict, sr.cluster.saveRetries+1)
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
func (sr *sessionReplica) touch(ctx context.Context) error {
	every := sr.cluster.sharedSessionTimeout() / sessionTouchFraction
	now := time.Now()
	sr.s.mu.Lock()
	if now.Sub(sr.lastTouch) < every {
		sr.s.mu.Unlock()
		return nil
	}
	sr.lastTouch = now // the requests meanwhile need not touch it too
	sr.s.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	err := sr.cluster.store.Touch(callCtx, sr.s.id, sr.cluster.sessionTTL())
	cancel()
	if err == nil || errors.Is(err, ErrSessionNotFound) {
		return err
	}
	return &sessionStoreError{"touch", sr.s.id, err}
}

// keepShared touches a session whose stream stays open, when it is due;
// a session the store no longer holds ends here too.
func (sr *sessionReplica) keepShared(ctx context.Context) {
	err := sr.touch(ctx)
	switch {
	case errors.Is(err, ErrSessionNotFound):
		sr.s.conn.close(errors.New("the session is no longer in the session store"))
	case err != nil && ctx.Err() == nil:
		sr.s.h.log.Warn("cannot keep a legacy session alive in the session store", "session", sr.s.id, "err", err)
	}
}

// deleteShared ends a shared session everywhere: the store forgets it and
// the other instances drop their copies (or find out at their next touch,
// should the broadcast fail). The copy here is the caller's to close.
func (sr *sessionReplica) deleteShared(ctx context.Context) error {
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	defer cancel()
	if err := sr.cluster.store.Delete(callCtx, sr.s.id); err != nil {
		sr.s.h.log.Warn("the session store failed to delete a session", "session", sr.s.id, "err", err)
		return &sessionStoreError{"delete", sr.s.id, err}
	}
	sr.deleted.Store(true)
	sr.publish(ctx, relayDelete, nil)
	return nil
}

// shareChange saves a shared session's state, with change made (none for
// initialize), then tells the other copies of the session what changed, so
// that the one holding the GET stream delivers by the session's present
// state. A failed publication is logged: the copies made from now on load
// the saved state.
func (sr *sessionReplica) shareChange(change sessionChange) error {
	if err := sr.save(change); err != nil {
		return err
	}
	if change != (sessionChange{}) {
		data, _ := json.Marshal(change)
		sr.publish(sr.s.ctx, relayState, data)
	}
	return nil
}
