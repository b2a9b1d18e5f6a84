package mcp

import (
	"context"
	"slices"
	"sync"
	"time"
)

// EventStore keeps the SSE events of legacy sessions (2025-03-26 …
// 2025-11-25) so that a client that lost a stream can resume it with
// Last-Event-ID and miss nothing. It is used by the server's HTTP handler,
// which never holds a lock while calling it, so a store may sit across the
// network. Its methods must be safe for concurrent use; ctx ends with the
// session, or for After with the resuming request. The handler logs the
// errors they return.
type EventStore interface {
	// Append stores data as event index of a session's stream. A stream's
	// Appends come one at a time, in increasing order of index; data is
	// never modified, so the store may keep it without copying. A resume
	// that needs an event whose Append failed is refused.
	Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error
	// After returns the stream's events with an index above index, in
	// order, among them every event whose Append succeeded before the call;
	// ok is false when the store no longer holds all of them. The resume
	// is refused when ok is false or err is not nil.
	After(ctx context.Context, sessionID, streamID string, index int64) (events [][]byte, ok bool, err error)
	// StreamDone reports, after the stream's last Append, that no client
	// will resume it: its events may go.
	StreamDone(ctx context.Context, sessionID, streamID string) error
	// SessionClosed reports, once and after the session's last Append,
	// that the session ended: all its events may go.
	SessionClosed(ctx context.Context, sessionID string) error
}

// EventBatchStore is an [EventStore] that can store several consecutive
// events of a stream at once, in one trip to a store across the network.
// The server's HTTP handler hands it, when it implements this, the events
// of a stream it holds unstored together. Server side.
type EventBatchStore interface {
	EventStore
	// AppendBatch stores data[i] as event first+i of a session's stream,
	// as that many Appends in order would; an error means none of them
	// may be counted on.
	AppendBatch(ctx context.Context, sessionID, streamID string, first int64, data [][]byte) error
}

// DefaultEventStoreDelay is how long the events a POST's SSE stream wrote
// to its client may wait to be stored (WithEventStoreDelay).
const DefaultEventStoreDelay = time.Second

// WithEventStoreDelay sets how long the events a legacy POST's SSE stream
// wrote to its client may wait before they are stored in the event store
// (default DefaultEventStoreDelay; 0 stores each as it comes). The events
// of a call that ends within it go to the store together, when its stream
// ends, in one call of an [EventBatchStore]: one trip to a store across
// the network rather than one per event. Events are stored at once when
// the client went away, and before a resume on this instance replays
// them; a resume on another instance finds those written within the delay
// only once they are stored. Handler only.
func WithEventStoreDelay(d time.Duration) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if d >= 0 {
			c.storeDelay = d
		}
	})
}

// MemoryEventStore is an [EventStore] in memory, bounded in bytes across
// all sessions: when full it drops the oldest events, and a stream that
// needs them can no longer be resumed.
type MemoryEventStore struct {
	max int

	mu       sync.Mutex
	size     int
	count    int
	sessions map[string]map[string]*storedStream
	order    []storedRef // events in the order they came, for eviction
	head     int
}

type storedStream struct {
	first  int64 // index of events[0]
	events [][]byte
	size   int
}

type storedRef struct {
	session, stream string
	index           int64
}

// NewMemoryEventStore returns an empty MemoryEventStore holding at most
// maxBytes of event data.
func NewMemoryEventStore(maxBytes int) *MemoryEventStore {
	return &MemoryEventStore{max: maxBytes, sessions: make(map[string]map[string]*storedStream)}
}

// Append implements EventStore.
func (m *MemoryEventStore) Append(_ context.Context, sessionID, streamID string, index int64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	streams := m.sessions[sessionID]
	if streams == nil {
		streams = make(map[string]*storedStream)
		m.sessions[sessionID] = streams
	}
	st := streams[streamID]
	if st == nil {
		st = &storedStream{first: index}
		streams[streamID] = st
	}
	if len(st.events) == 0 || index != st.first+int64(len(st.events)) {
		m.dropLocked(st)
		st.first = index
	}
	st.events = append(st.events, data)
	st.size += len(data)
	m.size += len(data)
	m.count++
	m.order = append(m.order, storedRef{sessionID, streamID, index})
	for m.size > m.max && m.head < len(m.order) {
		m.evictLocked(m.order[m.head])
		m.order[m.head] = storedRef{}
		m.head++
	}
	m.compactIfSparseLocked()
	return nil
}

// compactIfSparseLocked compacts the eviction queue once most of it names
// events that are gone.
func (m *MemoryEventStore) compactIfSparseLocked() {
	if m.head > 1024 && m.head > len(m.order)/2 || len(m.order)-m.head > 2*m.count+1024 {
		m.compactLocked()
	}
}

func (m *MemoryEventStore) evictLocked(ref storedRef) {
	st := m.sessions[ref.session][ref.stream]
	if st == nil || len(st.events) == 0 || st.first != ref.index {
		return // already gone
	}
	n := len(st.events[0])
	st.events[0] = nil
	st.events = st.events[1:]
	st.first++
	st.size -= n
	m.size -= n
	m.count--
}

func (m *MemoryEventStore) dropLocked(st *storedStream) {
	m.size -= st.size
	m.count -= len(st.events)
	st.events, st.size = nil, 0
}

// compactLocked drops the eviction queue's entries for events that are
// gone already.
func (m *MemoryEventStore) compactLocked() {
	live := make([]storedRef, 0, m.count)
	for _, ref := range m.order[m.head:] {
		st := m.sessions[ref.session][ref.stream]
		if st != nil && ref.index >= st.first && ref.index < st.first+int64(len(st.events)) {
			live = append(live, ref)
		}
	}
	m.order, m.head = live, 0
}

// After implements EventStore.
func (m *MemoryEventStore) After(_ context.Context, sessionID, streamID string, index int64) ([][]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.sessions[sessionID][streamID]
	if st == nil || len(st.events) == 0 {
		return nil, st == nil || index >= st.first-1, nil
	}
	if index+1 < st.first {
		return nil, false, nil
	}
	end := st.first + int64(len(st.events))
	if index >= end {
		return nil, true, nil
	}
	return slices.Clone(st.events[index+1-st.first:]), true, nil
}

// StreamDone implements EventStore.
func (m *MemoryEventStore) StreamDone(_ context.Context, sessionID, streamID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	streams := m.sessions[sessionID]
	if st := streams[streamID]; st != nil {
		m.dropLocked(st)
		delete(streams, streamID)
		if len(streams) == 0 {
			delete(m.sessions, sessionID)
		}
		m.compactIfSparseLocked()
	}
	return nil
}

// SessionClosed implements EventStore.
func (m *MemoryEventStore) SessionClosed(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.sessions[sessionID] {
		m.dropLocked(st)
	}
	delete(m.sessions, sessionID)
	m.compactIfSparseLocked()
	return nil
}
