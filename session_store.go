package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// ErrSessionNotFound is returned by a SessionStore that holds no live
// session under an id. Server side.
var ErrSessionNotFound = errors.New("mcp: session not found")

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
}

// SessionStore keeps the legacy HTTP sessions of a server that runs as
// several instances, so that a request may land on any of them. A record
// lives until Delete or until ttl passes with no Save or Touch. Every
// method takes a context and may fail; the handler answers a request that
// needs a failed call with an error, and never calls the store with a lock
// held. Server side; see [WithSessionStore].
type SessionStore interface {
	// Save stores rec under rec.ID, replacing what was there, to live
	// ttl from now.
	Save(ctx context.Context, rec *SessionRecord, ttl time.Duration) error
	// Load returns a copy of the session id, or ErrSessionNotFound.
	Load(ctx context.Context, id string) (*SessionRecord, error)
	// Touch extends the session's life to ttl from now;
	// ErrSessionNotFound when it is gone.
	Touch(ctx context.Context, id string, ttl time.Duration) error
	// Delete ends the session; deleting an unknown one is no error.
	Delete(ctx context.Context, id string) error
}

// MemorySessionStore is a SessionStore in one process's memory: for tests
// and for several handlers in one process. Its records expire when read
// after their time. Server side.
type MemorySessionStore struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]memorySession
}

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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[rec.ID] = memorySession{rec: c, expires: s.now().Add(ttl)}
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
