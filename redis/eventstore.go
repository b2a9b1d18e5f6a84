package mcpredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// EventStore is an [mcp.EventStore] on Redis: one Redis stream per
// (session, stream), bounded in length ([WithMaxStreamEvents]) and
// expiring [WithEventTTL] after its last Append, and one set per session
// naming its streams so that SessionClosed finds them. Event i is the
// stream's entry "i-1" (i in the id's first part; a stream's ids start
// above 0-0, hence the 1). Server side.
type EventStore struct{ client }

var _ mcp.EventStore = (*EventStore)(nil)

// NewEventStore returns an EventStore on rdb. Server side.
func NewEventStore(rdb *redis.Client, opts ...Option) *EventStore {
	return &EventStore{newClient(rdb, opts, "EventStore")}
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

// appendScript adds one event. An index that does not follow the stream's
// last one drops the stream's older events first, as a resume across the
// gap cannot be served. KEYS: stream, session's set. ARGV: entry id, data,
// max length, ttl in milliseconds, stream id, the previous entry's id.
var appendScript = redis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 and last[1][1] ~= ARGV[6] then
  redis.call('DEL', KEYS[1])
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], ARGV[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
`)

// Append implements mcp.EventStore.
func (s *EventStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	key := s.streamKey(sessionID, streamID)
	if index < 0 {
		return fail("EventStore.Append", key, fmt.Errorf("negative event index %d", index))
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	err := appendScript.Run(ctx, s.rdb, []string{key, s.streamsKey(sessionID)},
		entryID(index), data, s.cfg.maxEvents, s.cfg.eventTTL.Milliseconds(), streamID, entryID(index-1)).Err()
	return fail("EventStore.Append", key, err)
}

// After implements mcp.EventStore. A stream it does not hold (never
// appended to, done, or expired) has nothing to replay.
func (s *EventStore) After(ctx context.Context, sessionID, streamID string, index int64) ([][]byte, bool, error) {
	key := s.streamKey(sessionID, streamID)
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

// StreamDone implements mcp.EventStore.
func (s *EventStore) StreamDone(ctx context.Context, sessionID, streamID string) error {
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
	key := s.streamsKey(sessionID)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	err := closeScript.Run(ctx, s.rdb, []string{key}, s.streamKey(sessionID, "")).Err()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return fail("EventStore.SessionClosed", key, err)
}
