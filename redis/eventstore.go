package mcpredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// EventStore is an [mcp.EventStore] on Redis: one Redis stream per
// (session, stream), bounded in length ([WithMaxStreamEvents]) and
// expiring [WithEventTTL] after its last Append, and one set per session
// naming its streams so that SessionClosed finds them. Event i is the
// stream's entry "i-1" (i in the id's first part; a stream's ids start
// above 0-0, hence the 1). It stores a batch of events in one round trip
// ([mcp.EventBatchStore]), and drops a done stream's events with the
// session's next Append rather than in a trip of their own. Server side.
type EventStore struct {
	client

	mu sync.Mutex
	// done holds, by session, the streams StreamDone reported that were
	// not deleted yet; deferred counts them, at most maxDeferredDone.
	done     map[string][]string
	deferred int
	maxDone  int // maxDeferredDone, smaller in tests
}

var (
	_ mcp.EventStore      = (*EventStore)(nil)
	_ mcp.EventBatchStore = (*EventStore)(nil)
)

// maxDeferredDone bounds the done streams whose deletion waits for their
// session's next Append; past it, StreamDone deletes at once. A stream
// whose session appends nothing more expires with its TTL meanwhile.
const maxDeferredDone = 4096

// NewEventStore returns an EventStore on rdb. Server side.
func NewEventStore(rdb *redis.Client, opts ...Option) *EventStore {
	return &EventStore{client: newClient(rdb, opts, "EventStore"), done: map[string][]string{}, maxDone: maxDeferredDone}
}

// streamKey is the Redis stream of one SSE stream. The session id sits in
// a hash tag so that a session's keys share a cluster slot.
func (s *EventStore) streamKey(sessionID, streamID string) string {
	return s.cfg.prefix + "stream:{" + sessionID + "}:" + streamID
}

// streamsKey is the set of a session's stream ids.
func (s *EventStore) streamsKey(sessionID string) string {
	return s.cfg.prefix + "streams:{" + sessionID + "}"
}

// appendScript adds events to a stream, first deleting the session's done
// streams. An index that does not follow the stream's last one drops the
// stream's older events first, as a resume across the gap cannot be
// served. KEYS: stream, session's set, the done streams. ARGV: max length,
// ttl in milliseconds, stream id, the entry id before the first event,
// how many done streams, their ids, then each event's entry id and data.
var appendScript = redis.NewScript(`
local d = tonumber(ARGV[5])
if d > 0 then
  redis.call('DEL', unpack(KEYS, 3, 2 + d))
  redis.call('SREM', KEYS[2], unpack(ARGV, 6, 5 + d))
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 and last[1][1] ~= ARGV[4] then
  redis.call('DEL', KEYS[1])
end
for i = 6 + d, #ARGV, 2 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[i], 'd', ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`)

// Append implements mcp.EventStore.
func (s *EventStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	return s.appendEvents(ctx, "EventStore.Append", sessionID, streamID, index, [][]byte{data})
}

// AppendBatch implements mcp.EventBatchStore: the events go in one
// script, one round trip.
func (s *EventStore) AppendBatch(ctx context.Context, sessionID, streamID string, first int64, data [][]byte) error {
	return s.appendEvents(ctx, "EventStore.AppendBatch", sessionID, streamID, first, data)
}

func (s *EventStore) appendEvents(ctx context.Context, op, sessionID, streamID string, first int64, data [][]byte) error {
	key := s.streamKey(sessionID, streamID)
	if first < 0 {
		return fail(op, key, fmt.Errorf("negative event index %d", first))
	}
	if len(data) == 0 {
		return nil
	}
	s.mu.Lock()
	done := s.done[sessionID]
	delete(s.done, sessionID)
	s.deferred -= len(done)
	s.mu.Unlock()
	keys := make([]string, 0, 2+len(done))
	keys = append(keys, key, s.streamsKey(sessionID))
	args := make([]any, 0, 5+len(done)+2*len(data))
	args = append(args, s.cfg.maxEvents, s.cfg.eventTTL.Milliseconds(), streamID, entryID(first-1), len(done))
	for _, id := range done {
		keys = append(keys, s.streamKey(sessionID, id))
		args = append(args, id)
	}
	for i, d := range data {
		args = append(args, entryID(first+int64(i)), d)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	// A failure leaves the done streams to their TTL.
	err := appendScript.Run(ctx, s.rdb, keys, args...).Err()
	return fail(op, key, err)
}

// After implements mcp.EventStore. A stream it does not hold (never
// appended to, done, or expired) has nothing to replay.
func (s *EventStore) After(ctx context.Context, sessionID, streamID string, index int64) ([][]byte, bool, error) {
	key := s.streamKey(sessionID, streamID)
	if s.isDone(sessionID, streamID) {
		return nil, true, nil // its deletion waits for the next Append
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	start := "-"
	if index >= 0 {
		start = strconv.FormatInt(index+1, 10)
	}
	entries, err := s.rdb.XRange(ctx, key, start, "+").Result()
	if err != nil {
		return nil, false, fail("EventStore.After", key, err)
	}
	events := make([][]byte, 0, len(entries))
	want := index + 1
	for _, e := range entries {
		i, err := entryIndex(e.ID)
		if err != nil {
			return nil, false, fail("EventStore.After", key, err)
		}
		if i != want {
			return nil, false, nil // trimmed, or a gap
		}
		d, ok := e.Values["d"].(string)
		if !ok {
			return nil, false, fail("EventStore.After", key, fmt.Errorf("entry %s has no event data", e.ID))
		}
		events = append(events, []byte(d))
		want++
	}
	return events, true, nil
}

// isDone reports whether a stream is done, its deletion deferred.
func (s *EventStore) isDone(sessionID, streamID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.done[sessionID], streamID)
}

// entryID is the stream entry id of event index.
func entryID(index int64) string { return strconv.FormatInt(index, 10) + "-1" }

// entryIndex reads the event index out of a stream entry id.
func entryIndex(id string) (int64, error) {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok || seq != "1" {
		return 0, fmt.Errorf("entry id %q is not one this store made", id)
	}
	i, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("entry id %q is not one this store made", id)
	}
	return i, nil
}

// StreamDone implements mcp.EventStore. The stream's events go with the
// session's next Append, or at once when too many wait already.
func (s *EventStore) StreamDone(ctx context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	if s.deferred < s.maxDone {
		s.done[sessionID] = append(s.done[sessionID], streamID)
		s.deferred++
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	key := s.streamKey(sessionID, streamID)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.SRem(ctx, s.streamsKey(sessionID), streamID)
		return nil
	})
	return fail("EventStore.StreamDone", key, err)
}

// closeScript deletes a session's streams and their set. KEYS: the set.
// ARGV: the prefix of the session's stream keys.
var closeScript = redis.NewScript(`
local ids = redis.call('SMEMBERS', KEYS[1])
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[1] .. id)
end
redis.call('DEL', KEYS[1])
return #ids
`)

// SessionClosed implements mcp.EventStore.
func (s *EventStore) SessionClosed(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	s.deferred -= len(s.done[sessionID])
	delete(s.done, sessionID) // the script deletes them with the rest
	s.mu.Unlock()
	key := s.streamsKey(sessionID)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	err := closeScript.Run(ctx, s.rdb, []string{key}, s.streamKey(sessionID, "")).Err()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return fail("EventStore.SessionClosed", key, err)
}
