package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

func occurrence(name string, i int, at time.Time) mcp.EventOccurrence {
	return mcp.EventOccurrence{EventID: fmt.Sprintf("e%d", i), Name: name, Timestamp: at.UTC(), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
}

func appendN(t *testing.T, l mcp.EventLog, name string, from, to int, at time.Time) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := l.Append(context.Background(), occurrence(name, i, at)); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, l mcp.EventLog, q mcp.EventQuery) mcp.EventPage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := l.Read(ctx, q)
	if err != nil {
		t.Fatalf("Read %+v: %v", q, err)
	}
	return p
}

func ids(events []mcp.EventOccurrence) string {
	var b []string
	for _, e := range events {
		b = append(b, e.EventID)
	}
	return strings.Join(b, ",")
}

// eventLogChecks is the contract of mcp.EventLog (events_log.go), which
// the memory log and ours must both keep.
var eventLogChecks = []check[mcp.EventLog]{
	{"an empty cursor is now, reads are exclusive and in order", func(t *testing.T, l mcp.EventLog) {
		appendN(t, l, "a", 0, 2, time.Now())
		now := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 10})
		if len(now.Events) != 0 || now.Cursor == "" || now.From != now.Cursor || now.Truncated || now.HasMore {
			t.Fatalf("Read from now: %+v", now)
		}
		appendN(t, l, "a", 2, 5, time.Now())
		appendN(t, l, "b", 100, 101, time.Now())
		p := read(t, l, mcp.EventQuery{Name: "a", Cursor: now.Cursor, MaxEvents: 10})
		if ids(p.Events) != "e2,e3,e4" || p.HasMore || p.Truncated || p.From != now.Cursor {
			t.Fatalf("Read: %s %+v", ids(p.Events), p)
		}
		if string(p.Events[0].Data) != `{"i":2}` || p.Events[0].Name != "a" || p.Events[0].Timestamp.IsZero() {
			t.Fatalf("occurrence: %+v", p.Events[0])
		}
		after := read(t, l, mcp.EventQuery{Name: "a", Cursor: p.Events[0].Cursor, MaxEvents: 10})
		if ids(after.Events) != "e3,e4" {
			t.Fatalf("Read after the first: %s", ids(after.Events))
		}
		end := read(t, l, mcp.EventQuery{Name: "a", Cursor: p.Cursor, MaxEvents: 10})
		if len(end.Events) != 0 || end.Cursor != p.Cursor {
			t.Fatalf("Read at the end: %+v (cursor was %s)", end, p.Cursor)
		}
	}},
	{"MaxEvents pages with HasMore", func(t *testing.T, l mcp.EventLog) {
		start := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 1})
		appendN(t, l, "a", 0, 5, time.Now())
		cursor, got := start.Cursor, ""
		for pages := 0; ; pages++ {
			if pages > 3 {
				t.Fatal("too many pages")
			}
			p := read(t, l, mcp.EventQuery{Name: "a", Cursor: cursor, MaxEvents: 2})
			got += ids(p.Events) + ";"
			cursor = p.Cursor
			if !p.HasMore {
				break
			}
		}
		if got != "e0,e1;e2,e3;e4;" {
			t.Fatalf("pages: %s", got)
		}
	}},
	{"Since skips older occurrences, Truncated", func(t *testing.T, l mcp.EventLog) {
		start := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 1})
		appendN(t, l, "a", 0, 3, time.Now().Add(-time.Hour))
		appendN(t, l, "a", 3, 5, time.Now())
		p := read(t, l, mcp.EventQuery{Name: "a", Cursor: start.Cursor, MaxEvents: 10, Since: time.Now().Add(-time.Minute)})
		if ids(p.Events) != "e3,e4" || !p.Truncated {
			t.Fatalf("Read since a minute ago: %s %+v", ids(p.Events), p)
		}
	}},
	{"a cursor it did not mint is ErrInvalidEventCursor", func(t *testing.T, l mcp.EventLog) {
		for _, c := range []string{"x", "..", "not.a.cursor", strings.Repeat("9", 300), "abc.1-1"} {
			if _, err := l.Read(context.Background(), mcp.EventQuery{Name: "a", Cursor: c, MaxEvents: 1}); !errors.Is(err, mcp.ErrInvalidEventCursor) {
				t.Errorf("cursor %.20q: %v", c, err)
			}
		}
	}},
	{"a cursor past retention reads from the oldest kept, Truncated", func(t *testing.T, l mcp.EventLog) {
		start := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 1})
		appendN(t, l, "a", 0, 400, time.Now())
		p := read(t, l, mcp.EventQuery{Name: "a", Cursor: start.Cursor, MaxEvents: 1000})
		if !p.Truncated || len(p.Events) == 0 || len(p.Events) >= 400 || p.Events[len(p.Events)-1].EventID != "e399" {
			t.Fatalf("Read past retention: %d occurrences, %+v", len(p.Events), p.Truncated)
		}
		again := read(t, l, mcp.EventQuery{Name: "a", Cursor: p.From, MaxEvents: 1000})
		if again.Truncated || ids(again.Events) != ids(p.Events) {
			t.Fatalf("Read from where it reset: %d occurrences, truncated %v", len(again.Events), again.Truncated)
		}
	}},
}

// TestEventLogContract: the memory log and ours keep the EventLog
// contract alike. Both are bounded to about 100 occurrences (Redis trims
// whole nodes of 100 entries, so it keeps more).
func TestEventLogContract(t *testing.T) {
	runChecks(t, eventLogChecks,
		func() mcp.EventLog { return mcp.NewMemoryEventLog(100, 0) },
		func(r *redisServer, prefix Option) mcp.EventLog {
			return NewEventLog(r.client(), prefix, WithMaxStreamEvents(100))
		})
}

// TestEventLogCursors: our cursors are bounded and name the log (its key
// prefix) and the event type, so another's is ErrInvalidEventCursor; one
// from a history Redis lost reads from the oldest entry, Truncated.
func TestEventLogCursors(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	l := NewEventLog(c, WithKeyPrefix("one:"))
	other := NewEventLog(c, WithKeyPrefix("two:"))
	appendN(t, l, "a", 0, 1, time.Now())
	appendN(t, other, "a", 0, 1, time.Now())
	mine := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 1}).Cursor
	theirs := read(t, other, mcp.EventQuery{Name: "a", MaxEvents: 1}).Cursor
	ofB := read(t, l, mcp.EventQuery{Name: "b", MaxEvents: 1}).Cursor
	if len(mine) > maxCursorBytes {
		t.Fatalf("cursor %q is longer than %d", mine, maxCursorBytes)
	}
	tag, epoch, id := strings.Split(mine, ".")[0], strings.Split(mine, ".")[1], strings.Split(mine, ".")[2]
	for _, bad := range []string{
		theirs, ofB,
		tag + "." + epoch + ".1",
		tag + "." + epoch + ".-1",
		tag + "." + epoch + ".1-x",
		tag + "." + epoch + "." + strings.Repeat("1", 21) + "-0",
		tag + ".ZZZZZZZZZZZZ." + id,
		tag + "." + epoch[:6] + "." + id,
		mine + ".1",
		mine + strings.Repeat("0", 50),
	} {
		if _, err := l.Read(context.Background(), mcp.EventQuery{Name: "a", Cursor: bad, MaxEvents: 1}); !errors.Is(err, mcp.ErrInvalidEventCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	// Redis lost everything: the cursor's history is gone.
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "a", 1, 3, time.Now())
	p := read(t, l, mcp.EventQuery{Name: "a", Cursor: mine, MaxEvents: 10})
	if !p.Truncated || ids(p.Events) != "e1,e2" || strings.Split(p.Cursor, ".")[1] == epoch {
		t.Fatalf("Read with a lost history's cursor: %s %+v", ids(p.Events), p)
	}
	// A cancelled context fails the call at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Read(ctx, mcp.EventQuery{Name: "a", Cursor: p.Cursor, MaxEvents: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context: %v", err)
	}
	if err := l.Append(ctx, occurrence("a", 9, time.Now())); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
}

// TestEventLogAgeBound: WithMaxEventAge trims what Redis appended longer
// ago, and a cursor before it reads Truncated.
func TestEventLogAgeBound(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	l := NewEventLog(c, WithMaxEventAge(time.Hour))
	start := read(t, l, mcp.EventQuery{Name: "a", MaxEvents: 1})
	// Entries "appended" two hours ago, by their ids, numbered 1 to 3.
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	for i := range 3 {
		e := occurrence("a", i, time.Now())
		raw, _ := json.Marshal(&e)
		if err := c.XAdd(context.Background(), &redis.XAddArgs{Stream: l.streamKey("a"), ID: fmt.Sprintf("%d-%d", old, i+1), Values: []string{"e", string(raw)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.HSet(context.Background(), l.metaKey("a"), "ms", old, "n", 3)
	appendN(t, l, "a", 3, 4, time.Now())
	p := read(t, l, mcp.EventQuery{Name: "a", Cursor: start.Cursor, MaxEvents: 10})
	if ids(p.Events) != "e3" || !p.Truncated {
		t.Fatalf("Read after the age bound trimmed: %s %+v", ids(p.Events), p)
	}
}

// TestEventLogWatch: an Append on one instance's log wakes the watch of
// another's with the event type's name; stop ends the watch and its
// goroutine.
func TestEventLogWatch(t *testing.T) {
	r := startRedis(t)
	a, b := NewEventLog(r.client()), NewEventLog(r.client())
	woke := make(chan string, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop, err := b.Watch(ctx, func(name string) { woke <- name })
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, a, "build.finished", 0, 1, time.Now())
	select {
	case name := <-woke:
		if name != "build.finished" {
			t.Fatalf("woke with %q", name)
		}
	case <-ctx.Done():
		t.Fatal("the watch was not woken")
	}
	stop()
	stop() // twice is fine
	appendN(t, a, "build.finished", 1, 2, time.Now())
	// Nothing arrives after stop: a ping of Redis orders us after the publish.
	if err := r.client().Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-woke:
		t.Fatalf("woke with %q after stop", name)
	default:
	}
}

// TestEventLogPageBytes: a page ends early, with HasMore, once it holds
// about pageBytes of occurrences; the next page goes on from there.
func TestEventLogPageBytes(t *testing.T) {
	r := startRedis(t)
	l := NewEventLog(r.client())
	start := read(t, l, mcp.EventQuery{Name: "big", MaxEvents: 1})
	big := `{"pad":"` + strings.Repeat("x", mcp.MaxEventBytes-100) + `"}`
	const n = 20
	for i := range n {
		e := mcp.EventOccurrence{EventID: fmt.Sprintf("e%d", i), Name: "big", Timestamp: time.Now(), Data: json.RawMessage(big)}
		if err := l.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	first := read(t, l, mcp.EventQuery{Name: "big", Cursor: start.Cursor, MaxEvents: 1000})
	if !first.HasMore || len(first.Events) == 0 || len(first.Events) >= n {
		t.Fatalf("the first page: %d occurrences, HasMore %v", len(first.Events), first.HasMore)
	}
	rest := read(t, l, mcp.EventQuery{Name: "big", Cursor: first.Cursor, MaxEvents: 1000})
	if got := ids(first.Events) + "," + ids(rest.Events); got != ids(func() []mcp.EventOccurrence {
		var all []mcp.EventOccurrence
		for i := range n {
			all = append(all, mcp.EventOccurrence{EventID: fmt.Sprintf("e%d", i)})
		}
		return all
	}()) || rest.HasMore {
		t.Fatalf("the pages: %s (HasMore %v)", got, rest.HasMore)
	}
}
