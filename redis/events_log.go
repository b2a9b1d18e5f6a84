package mcpredis

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// EventLog is an [mcp.EventLog] on Redis, shared by every instance of a
// server: a Redis stream per event type, trimmed to about
// [WithMaxStreamEvents] entries (approximate trimming: Redis keeps a few
// more, never fewer) and, with [WithMaxEventAge], of entries older than
// that. An Append also publishes the event type's name on a Redis channel,
// so that the instances' push streams wake at once ([mcp.EventWatcher]).
//
// A cursor is "tag.epoch.id": tag names the log's key prefix and the
// event type, so that a cursor of another log or type is
// mcp.ErrInvalidEventCursor; epoch names the log's history, kept in Redis
// and made anew when Redis lost it, so that a cursor from before reads
// from the oldest entry kept, Truncated; id is the stream entry it follows.
// A cursor older than the oldest kept entry reads from that entry,
// Truncated: entries are numbered in the stream (the second part of their
// id), so the newest trimmed is the one before the oldest kept. Server
// side.
type EventLog struct {
	client
}

var (
	_ mcp.EventLog     = (*EventLog)(nil)
	_ mcp.EventWatcher = (*EventLog)(nil)
)

// NewEventLog returns an EventLog on rdb. Server side.
func NewEventLog(rdb *redis.Client, opts ...Option) *EventLog {
	return &EventLog{newClient(rdb, opts, "EventLog")}
}

// WithMaxEventAge trims an EventLog's entries older than d, by the time
// Redis appended them, with each Append (exactly, where the length bound
// is approximate). Zero or less: no age bound, the default. Server side;
// EventLog.
func WithMaxEventAge(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.maxEventAge = d
		}
	}
}

func (l *EventLog) streamKey(name string) string { return l.cfg.prefix + "events:" + name }
func (l *EventLog) metaKey(name string) string   { return l.cfg.prefix + "events-meta:" + name }
func (l *EventLog) epochKey() string             { return l.cfg.prefix + "events-epoch" }
func (l *EventLog) wakeChannel() string          { return l.cfg.prefix + "events-wake" }

// tag is the cursor's first part: the log and the event type it belongs to.
func (l *EventLog) tag(name string) string {
	sum := sha256.Sum256([]byte(l.cfg.prefix + "\x00" + name))
	return hex.EncodeToString(sum[:6])
}

// Cursor bounds: a tag, an epoch, and an entry id of two uint64s.
const (
	tagLen         = 12
	epochLen       = 12
	maxCursorBytes = tagLen + 1 + epochLen + 1 + 20 + 1 + 20
)

// newEpoch is a fresh history's name.
func newEpoch() string {
	b := make([]byte, epochLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// appendLogScript appends an occurrence, trims, and wakes the instances.
// An entry's id is "ms-n": when Redis appended it (never before the
// previous one) and its number in the stream, so that the newest entry
// trimmed is the one before the oldest kept. KEYS: stream, its meta hash
// (the last entry's ms and n), epoch. ARGV: max length, the oldest entry
// ms to keep ("" for no age bound), the entry, wake channel, name, a new
// epoch.
var appendLogScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('SET', KEYS[3], ARGV[6])
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = tonumber(redis.call('HGET', KEYS[2], 'ms') or '0')
if ms < last then
  ms = last
end
local n = redis.call('HINCRBY', KEYS[2], 'n', 1)
redis.call('HSET', KEYS[2], 'ms', string.format('%d', ms))
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], string.format('%d-%d', ms, n), 'e', ARGV[3])
if ARGV[2] ~= '' then
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2])
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return id
`)

// Append implements mcp.EventLog.
func (l *EventLog) Append(ctx context.Context, e mcp.EventOccurrence) error {
	key := l.streamKey(e.Name)
	e.Cursor = ""
	entry, err := json.Marshal(&e)
	if err != nil {
		return fail("EventLog.Append", key, err)
	}
	minID := ""
	if l.cfg.maxEventAge > 0 {
		minID = strconv.FormatInt(time.Now().Add(-l.cfg.maxEventAge).UnixMilli(), 10)
	}
	ctx, cancel := l.cfg.call(ctx)
	defer cancel()
	err = appendLogScript.Run(ctx, l.rdb, []string{key, l.metaKey(e.Name), l.epochKey()},
		l.cfg.maxEvents, minID, entry, l.wakeChannel(), e.Name, newEpoch()).Err()
	return fail("EventLog.Append", key, err)
}

// readLogScript reads the log's epoch (made if Redis has none), the
// stream's newest entry id, the position before its oldest kept entry
// (whose number is that of the newest trimmed), and up to COUNT entries
// after a start. KEYS: stream, meta, epoch. ARGV: a new
// epoch, the start entry id ("" for none), the cursor's epoch, count.
var readLogScript = redis.NewScript(`
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  epoch = ARGV[1]
  redis.call('SET', KEYS[3], epoch)
end
local meta = redis.call('HMGET', KEYS[2], 'ms', 'n')
local ms, n = meta[1] or '0', meta[2] or '0'
local trimmed = ms .. '-' .. n
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first > 0 then
  local fms, fn = string.match(first[1][1], '^(%d+)-(%d+)$')
  trimmed = fms .. '-' .. string.format('%d', tonumber(fn) - 1)
end
local entries = {}
if ARGV[2] ~= '' then
  local start = '(' .. ARGV[2]
  if ARGV[3] ~= epoch then
    start = '-'
  end
  entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[4])
end
return {epoch, ms .. '-' .. n, trimmed, entries}
`)

// streamID is a Redis stream entry id.
type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool {
	return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq
}

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

// parseStreamID reads "ms-seq", each part at most 20 digits.
func parseStreamID(s string) (streamID, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || a == "" || b == "" || len(a) > 20 || len(b) > 20 {
		return streamID{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID{ms, seq}, err1 == nil && err2 == nil
}

// maxNameBytes bounds an event type's name on the wake channel, as the
// server bounds the names it declares.
const maxNameBytes = 256

// readBatch is how many entries one round trip reads at most, and
// pageBytes about how many bytes of entries a page holds (it ends early,
// with HasMore): a poll may ask for a thousand occurrences of up to
// mcp.MaxEventBytes each.
const (
	readBatch = 100
	pageBytes = 16 * mcp.MaxEventBytes
)

// Read implements mcp.EventLog.
func (l *EventLog) Read(ctx context.Context, q mcp.EventQuery) (mcp.EventPage, error) {
	key := l.streamKey(q.Name)
	tag := l.tag(q.Name)
	var epoch string
	var after streamID
	if q.Cursor != "" {
		var ok bool
		epoch, after, ok = l.parseCursor(tag, q.Cursor)
		if !ok {
			return mcp.EventPage{}, mcp.ErrInvalidEventCursor
		}
	}
	ctx, cancel := l.cfg.call(ctx)
	defer cancel()
	limit := max(q.MaxEvents, 1)
	var page mcp.EventPage
	var pos streamID // where the page has read to
	size := 0        // the bytes of the entries read
	for first := true; ; first = false {
		start := ""
		if q.Cursor != "" {
			start = after.String()
		}
		count := min(limit+1-len(page.Events), readBatch)
		res, err := readLogScript.Run(ctx, l.rdb, []string{key, l.metaKey(q.Name), l.epochKey()}, newEpoch(), start, epoch, count).Slice()
		if err != nil {
			return mcp.EventPage{}, fail("EventLog.Read", key, err)
		}
		head, entries, err := readHead(res)
		if err != nil {
			return mcp.EventPage{}, fail("EventLog.Read", key, err)
		}
		cursor := func(id streamID) string { return tag + "." + head.epoch + "." + id.String() }
		if q.Cursor == "" {
			c := cursor(head.last)
			return mcp.EventPage{From: c, Cursor: c}, nil
		}
		if first {
			page.From = q.Cursor
			switch {
			case epoch != head.epoch:
				// A history Redis lost: what followed the cursor is gone.
				after, page.Truncated = streamID{}, true
				page.From = cursor(head.trimmed)
				epoch = head.epoch
			case head.last.less(after):
				after = head.last // clamped: nothing is after the newest
				page.From = cursor(after)
			case after.seq < head.trimmed.seq:
				// Entries after the cursor were trimmed: read from the
				// oldest kept, which is where XRANGE started.
				page.Truncated = true
				page.From = cursor(head.trimmed)
			}
			pos = after
		}
		for _, en := range entries {
			if len(page.Events) == limit || len(page.Events) > 0 && size >= pageBytes {
				page.HasMore = true
				page.Cursor = cursor(pos)
				return page, nil
			}
			id, ok := parseStreamID(en.ID)
			raw, isString := en.Values["e"].(string)
			if !ok || !isString {
				return mcp.EventPage{}, fail("EventLog.Read", key, fmt.Errorf("entry %q is not one this log made", en.ID))
			}
			size += len(raw)
			var e mcp.EventOccurrence
			if err := json.Unmarshal([]byte(raw), &e); err != nil {
				return mcp.EventPage{}, fail("EventLog.Read", key, fmt.Errorf("entry %s: %w", en.ID, err))
			}
			pos, after = id, id
			if !q.Since.IsZero() && e.Timestamp.Before(q.Since) {
				page.Truncated = true
				continue
			}
			e.Cursor = cursor(id)
			page.Events = append(page.Events, e)
		}
		if len(entries) < count {
			// Nothing more in this snapshot: the newest position.
			if pos.less(head.last) {
				pos = head.last
			}
			page.Cursor = cursor(pos)
			return page, nil
		}
	}
}

// parseCursor checks a cursor this log minted for the event type of tag,
// strictly: bounded, three parts, the tag, an epoch of hex digits, an
// entry id.
func (l *EventLog) parseCursor(tag, c string) (epoch string, after streamID, ok bool) {
	if len(c) > maxCursorBytes {
		return "", streamID{}, false
	}
	t, rest, ok1 := strings.Cut(c, ".")
	epoch, id, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || t != tag || len(epoch) != epochLen || !isHex(epoch) {
		return "", streamID{}, false
	}
	after, ok = parseStreamID(id)
	return epoch, after, ok
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// logHead is what readLogScript says of the log besides its entries.
type logHead struct {
	epoch string
	last  streamID
	// trimmed is the position before the oldest entry kept; its number
	// is the newest entry's trimmed (0: none).
	trimmed streamID
}

var errBadReply = errors.New("an unexpected reply from the read script")

// readHead decodes readLogScript's reply.
func readHead(res []any) (logHead, []redis.XMessage, error) {
	if len(res) != 4 {
		return logHead{}, nil, errBadReply
	}
	epoch, ok1 := res[0].(string)
	last, ok2 := res[1].(string)
	trimmed, ok3 := res[2].(string)
	raw, ok4 := res[3].([]any)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(epoch) != epochLen {
		return logHead{}, nil, errBadReply
	}
	h := logHead{epoch: epoch}
	var ok bool
	if h.last, ok = parseStreamID(last); !ok {
		return logHead{}, nil, errBadReply
	}
	if h.trimmed, ok = parseStreamID(trimmed); !ok {
		return logHead{}, nil, errBadReply
	}
	entries := make([]redis.XMessage, 0, len(raw))
	for _, r := range raw {
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 {
			return logHead{}, nil, errBadReply
		}
		id, ok1 := pair[0].(string)
		fields, ok2 := pair[1].([]any)
		if !ok1 || !ok2 || len(fields)%2 != 0 {
			return logHead{}, nil, errBadReply
		}
		values := make(map[string]any, len(fields)/2)
		for i := 0; i < len(fields); i += 2 {
			k, _ := fields[i].(string)
			values[k] = fields[i+1]
		}
		entries = append(entries, redis.XMessage{ID: id, Values: values})
	}
	return h, entries, nil
}

// Watch implements mcp.EventWatcher on a Redis subscription of the log's
// wake channel, on a connection of its own, read by a goroutine until
// stop. It returns once Redis confirmed the subscription. The connection
// comes back by itself after Redis restarts; what was appended meanwhile
// wakes no one, and streams read it at their next heartbeat.
func (l *EventLog) Watch(ctx context.Context, woke func(name string)) (func(), error) {
	ch := l.wakeChannel()
	ctx, cancel := l.cfg.call(ctx)
	defer cancel()
	ps := l.rdb.Subscribe(ctx, ch)
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		ps.Close()
		return nil, fail("EventLog.Watch", ch, err)
	}
	msgs := ps.Channel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			if len(m.Payload) <= maxNameBytes {
				woke(m.Payload)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			ps.Close() // closes msgs
			<-done
		})
	}, nil
}
