package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// This file holds the public API of shared legacy sessions: the
// SessionStore a server's instances share them through, its record and
// errors, the in-memory store, and the handler options that turn sharing
// on.

// ErrSessionNotFound is returned by a SessionStore that holds no live
// session under an id. Server side.
var ErrSessionNotFound = errors.New("mcp: session not found")

// ErrSessionConflict is returned by a SessionStore's Save when the record
// stored for the session is not the one the saved record was based on:
// another instance saved the session meanwhile. The handler then loads the
// session again, makes its change on what it finds and saves once more.
// Server side.
var ErrSessionConflict = errors.New("mcp: the session was changed on another instance")

// SessionRecord is what a legacy HTTP session (2025-03-26 … 2025-11-25)
// needs so that any instance of a server can serve its next request: the
// revision it negotiated, who the client is and what it can do, its log
// level, its subscriptions and the principal it belongs to. Server side.
type SessionRecord struct {
	ID                 string          `json:"id"`
	Principal          string          `json:"principal,omitempty"`
	ProtocolVersion    string          `json:"protocolVersion"`
	ClientInfo         Implementation  `json:"clientInfo"`
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	LogLevel           string          `json:"logLevel,omitempty"`
	// Subscriptions are the URIs of the session's resources/subscribe.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Revision counts the Saves of the record (the protocol revision is
	// ProtocolVersion): zero for a record never saved, one after the first
	// Save, and one more after each. A record
	// is saved only over the revision it was based on (see
	// [SessionStore]), so that two instances that change one session at
	// once cannot both write and lose one of the changes.
	Revision int64 `json:"revision,omitempty"`
}

// SessionStore keeps the legacy HTTP sessions of a server that runs as
// several instances, so that a request may land on any of them. A record
// lives until Delete or until ttl passes with no Save or Touch. Every
// method takes a context and may fail; the handler answers a request that
// needs a failed call with an error, and never calls the store with a lock
// held.
//
// Saves compare and set: a record replaces only the revision it was based
// on, checked and written as one step, so that of two instances saving
// changes of one session at once one wins and the other learns it lost
// ([ErrSessionConflict]) and tries again on what won. Server side; see
// [WithSessionStore].
type SessionStore interface {
	// Save stores rec under rec.ID, to live ttl from now, when the
	// record stored there is at rec.Revision, or when none is and
	// rec.Revision is zero; the record stored is then rec at the next
	// revision, and rec.Revision is set to it. It returns
	// ErrSessionConflict, storing nothing, when a record of another
	// revision is stored (a first save included), and ErrSessionNotFound
	// when rec.Revision is not zero and none is (the session was deleted
	// or expired).
	Save(ctx context.Context, rec *SessionRecord, ttl time.Duration) error
	// Load returns a copy of the session id, or ErrSessionNotFound.
	Load(ctx context.Context, id string) (*SessionRecord, error)
	// Touch extends the session's life to ttl from now;
	// ErrSessionNotFound when it is gone.
	Touch(ctx context.Context, id string, ttl time.Duration) error
	// Delete ends the session; deleting an unknown one is no error.
	Delete(ctx context.Context, id string) error
}

// sessionStoreError is a failed call to the SessionStore or the
// Broadcaster for a session: which step, which session, why.
type sessionStoreError struct {
	step string // "load", "save", "touch", "delete", "subscribe to the channel of"
	id   string
	err  error
}

// Error says which step failed for which session, and why.
func (e *sessionStoreError) Error() string {
	return "cannot " + e.step + " session " + e.id + ": " + e.err.Error()
}

// Unwrap returns the store's or the Broadcaster's own error.
func (e *sessionStoreError) Unwrap() error { return e.err }

// MemorySessionStore is a SessionStore in one process's memory: for tests
// and for several handlers in one process. Its records expire when read
// after their time. Server side.
type MemorySessionStore struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]memorySession
}

// memorySession is a record as MemorySessionStore keeps it, with when it
// expires.
type memorySession struct {
	rec     SessionRecord
	expires time.Time
}

// NewMemorySessionStore returns an empty MemorySessionStore. Server side.
func NewMemorySessionStore() *MemorySessionStore {
	return &MemorySessionStore{now: time.Now, sessions: make(map[string]memorySession)}
}

// Save implements SessionStore.
func (s *MemorySessionStore) Save(_ context.Context, rec *SessionRecord, ttl time.Duration) error {
	c := *rec
	c.ClientCapabilities = append(json.RawMessage(nil), rec.ClientCapabilities...)
	c.Subscriptions = append([]string(nil), rec.Subscriptions...)
	c.Revision++
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.live(rec.ID)
	switch {
	case ok && m.rec.Revision != rec.Revision:
		return ErrSessionConflict
	case !ok && rec.Revision != 0:
		return ErrSessionNotFound
	}
	s.sessions[rec.ID] = memorySession{rec: c, expires: s.now().Add(ttl)}
	rec.Revision = c.Revision
	return nil
}

// Load implements SessionStore.
func (s *MemorySessionStore) Load(_ context.Context, id string) (*SessionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.live(id)
	if !ok {
		return nil, ErrSessionNotFound
	}
	c := m.rec
	c.ClientCapabilities = append(json.RawMessage(nil), m.rec.ClientCapabilities...)
	c.Subscriptions = append([]string(nil), m.rec.Subscriptions...)
	return &c, nil
}

// Touch implements SessionStore.
func (s *MemorySessionStore) Touch(_ context.Context, id string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.live(id)
	if !ok {
		return ErrSessionNotFound
	}
	m.expires = s.now().Add(ttl)
	s.sessions[id] = m
	return nil
}

// Delete implements SessionStore.
func (s *MemorySessionStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
	return nil
}

// live returns the session id if it has not expired, deleting it if it
// has. s.mu is held.
func (s *MemorySessionStore) live(id string) (memorySession, bool) {
	m, ok := s.sessions[id]
	if ok && !s.now().Before(m.expires) {
		delete(s.sessions, id)
		return memorySession{}, false
	}
	return m, ok
}

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
	return httpHandlerOption(func(c *httpConfig) { c.cluster.store = store })
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
			c.cluster.saveRetries, c.cluster.retriesSet = n, true
		}
	})
}
