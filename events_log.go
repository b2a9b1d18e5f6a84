package mcp

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EventLog keeps a server's event occurrences for polls and push streams,
// and alone mints and reads their cursors, which the client holds opaque.
// Server only: see [EventOptions]. Its methods must be safe for concurrent
// use; the server holds no lock while calling them, so a log may sit
// across the network.
type EventLog interface {
	// Append stores e, which has its id, name, timestamp and data. The
	// Appends of one server come in the order their occurrences were
	// published; Reads see an occurrence once its Append returned.
	Append(ctx context.Context, e EventOccurrence) error
	// Read returns the occurrences of q.Name after q.Cursor, oldest first,
	// each with the cursor after it. An empty q.Cursor means now: no
	// occurrences, and the cursor of the newest position. A cursor the log
	// did not mint is ErrInvalidEventCursor; one it minted but can no
	// longer serve (a previous process's, say) starts at the oldest it
	// keeps, with Truncated set.
	Read(ctx context.Context, q EventQuery) (EventPage, error)
}

// EventQuery is what [EventLog.Read] reads. Server only.
type EventQuery struct {
	Name   string
	Cursor string
	// MaxEvents bounds the occurrences returned (at least 1).
	MaxEvents int
	// Since, when not zero, skips occurrences older than it (maxAgeMs),
	// with Truncated set if any were skipped.
	Since time.Time
}

// EventPage is what [EventLog.Read] returns. Server only.
type EventPage struct {
	Events []EventOccurrence
	// From is where the page starts: the query's cursor, or, when
	// Truncated, the position the log reset to.
	From string
	// Cursor is where the next Read starts: after the last occurrence
	// returned, or the newest position when none is left.
	Cursor string
	// Truncated: occurrences after the query's cursor are gone.
	Truncated bool
	// HasMore: more occurrences follow Cursor.
	HasMore bool
}

// ErrInvalidEventCursor is the error of an [EventLog.Read] given a cursor
// the log did not mint; the server answers it with -32602. Server only.
var ErrInvalidEventCursor = errors.New("mcp: invalid event cursor")

// Defaults of [NewMemoryEventLog]. Server only.
const (
	DefaultEventLogEvents = 10_000
	DefaultEventLogBytes  = 16 << 20
)

// eventOverhead is counted per kept occurrence besides its strings, so
// that tiny occurrences cannot outgrow the byte bound.
const eventOverhead = 128

// NewMemoryEventLog returns an in-memory EventLog that keeps at most
// maxEvents occurrences of maxBytes in all, dropping the oldest first (0:
// DefaultEventLogEvents, DefaultEventLogBytes). Its cursors name the log
// instance, so that a cursor from before a restart is told apart from a
// forged one. Server only.
func NewMemoryEventLog(maxEvents, maxBytes int) EventLog {
	if maxEvents <= 0 {
		maxEvents = DefaultEventLogEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultEventLogBytes
	}
	return &memoryEventLog{epoch: randomID()[:12], maxEvents: maxEvents, maxBytes: maxBytes, dropped: make(map[string]uint64)}
}

// memoryEventLog is NewMemoryEventLog's log: occurrences numbered from 1
// in order of Append, a cursor "epoch.n" the position after occurrence n.
type memoryEventLog struct {
	epoch               string
	maxEvents, maxBytes int

	mu      sync.Mutex
	kept    []loggedEvent // oldest first; kept[0] is at start
	start   int           // dropped entries at the front of kept not yet compacted
	bytes   int
	last    uint64            // the number of the newest occurrence
	dropped map[string]uint64 // per name, the number of the newest dropped
}

type loggedEvent struct {
	n    uint64
	e    EventOccurrence
	size int
}

func (l *memoryEventLog) Append(ctx context.Context, e EventOccurrence) error {
	size := eventOverhead + len(e.Name) + len(e.EventID) + len(e.Data)
	if size > l.maxBytes {
		return errorf("event %s: %d bytes do not fit the log's %d", e.Name, size, l.maxBytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	l.kept = append(l.kept, loggedEvent{n: l.last, e: e, size: size})
	l.bytes += size
	for len(l.kept)-l.start > l.maxEvents || l.bytes > l.maxBytes {
		old := &l.kept[l.start]
		l.dropped[old.e.Name] = old.n
		l.bytes -= old.size
		*old = loggedEvent{}
		l.start++
	}
	if l.start > len(l.kept)/2 {
		l.kept = append(l.kept[:0:0], l.kept[l.start:]...)
		l.start = 0
	}
	return nil
}

func (l *memoryEventLog) cursor(n uint64) string {
	return l.epoch + "." + strconv.FormatUint(n, 10)
}

func (l *memoryEventLog) Read(ctx context.Context, q EventQuery) (EventPage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q.Cursor == "" {
		c := l.cursor(l.last)
		return EventPage{From: c, Cursor: c}, nil
	}
	epoch, num, ok := strings.Cut(q.Cursor, ".")
	after, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || len(epoch) != len(l.epoch) {
		return EventPage{}, ErrInvalidEventCursor
	}
	page := EventPage{From: q.Cursor}
	switch {
	case epoch != l.epoch:
		// Minted before a restart: what happened since is lost.
		after, page.Truncated = l.oldest()-1, true
		page.From = l.cursor(after)
	case after > l.last:
		after = l.last // clamped: nothing is after the newest
		page.From = l.cursor(after)
	case l.dropped[q.Name] > after:
		after, page.Truncated = l.oldest()-1, true
		page.From = l.cursor(after)
	}
	limit := max(q.MaxEvents, 1)
	kept := l.kept[l.start:]
	i := sort.Search(len(kept), func(i int) bool { return kept[i].n > after })
	next, lastN := l.last, after
	for ; i < len(kept); i++ {
		le := &kept[i]
		if le.e.Name != q.Name {
			continue
		}
		if !q.Since.IsZero() && le.e.Timestamp.Before(q.Since) {
			page.Truncated = true
			continue
		}
		if len(page.Events) == limit {
			page.HasMore, next = true, lastN
			break
		}
		e := le.e
		e.Cursor = l.cursor(le.n)
		page.Events = append(page.Events, e)
		lastN = le.n
	}
	page.Cursor = l.cursor(next)
	return page, nil
}

// oldest returns the number of the oldest kept occurrence (last+1 when
// none is kept).
func (l *memoryEventLog) oldest() uint64 {
	if l.start < len(l.kept) {
		return l.kept[l.start].n
	}
	return l.last + 1
}
