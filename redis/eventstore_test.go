package mcpredis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// eventStoreChecks are what every mcp.EventStore does, run against the
// library's MemoryEventStore and against ours.
var eventStoreChecks = []check[eventStores]{
	{"After returns the later events, in order, as appended", func(t *testing.T, st eventStores) {
		s := st.s
		ctx := context.Background()
		want := [][]byte{[]byte("one"), {0, '\n', 0xff}, []byte("")}
		for i, d := range want {
			if err := s.Append(ctx, "s", "1", int64(i+1), d); err != nil {
				t.Fatal(err)
			}
		}
		for index := range int64(4) {
			got, ok, err := s.After(ctx, "s", "1", index)
			if err != nil || !ok || !equalEvents(got, want[index:]) {
				t.Fatalf("After(%d): %q, %v, %v", index, got, ok, err)
			}
		}
	}},
	{"a stream nothing was appended to has nothing to replay", func(t *testing.T, st eventStores) {
		s := st.s
		got, ok, err := s.After(context.Background(), "s", "9", 0)
		if err != nil || !ok || len(got) != 0 {
			t.Fatalf("After: %q, %v, %v", got, ok, err)
		}
	}},
	{"an index that skips ahead drops the events before it", func(t *testing.T, st eventStores) {
		s := st.s
		ctx := context.Background()
		for _, i := range []int64{1, 2, 3, 7} {
			s.Append(ctx, "s", "1", i, []byte(fmt.Sprint(i)))
		}
		if _, ok, err := s.After(ctx, "s", "1", 0); ok || err != nil {
			t.Fatalf("After(0) across a gap: %v, %v", ok, err)
		}
		if got, ok, err := s.After(ctx, "s", "1", 6); !ok || err != nil || !equalEvents(got, [][]byte{[]byte("7")}) {
			t.Fatalf("After(6): %q, %v, %v", got, ok, err)
		}
	}},
	{"an index that starts over replaces the stream", func(t *testing.T, st eventStores) {
		s := st.s
		ctx := context.Background()
		for i := range int64(3) {
			s.Append(ctx, "s", "1", i+1, []byte("old"))
		}
		s.Append(ctx, "s", "1", 1, []byte("new"))
		if got, ok, err := s.After(ctx, "s", "1", 0); !ok || err != nil || !equalEvents(got, [][]byte{[]byte("new")}) {
			t.Fatalf("After(0): %q, %v, %v", got, ok, err)
		}
	}},
	{"a resume that needs trimmed events is refused", func(t *testing.T, st eventStores) {
		small := st.small
		ctx := context.Background()
		for i := range int64(500) {
			if err := small.Append(ctx, "s", "1", i+1, []byte("0123456789")); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := small.After(ctx, "s", "1", 0); ok || err != nil {
			t.Fatalf("After(0): %v, %v", ok, err)
		}
		if got, ok, err := small.After(ctx, "s", "1", 499); !ok || err != nil || len(got) != 1 {
			t.Fatalf("After(499): %d events, %v, %v", len(got), ok, err)
		}
	}},
	{"StreamDone and SessionClosed drop what they name, only that", func(t *testing.T, st eventStores) {
		s := st.s
		ctx := context.Background()
		for _, sid := range []string{"s", "t"} {
			for _, stream := range []string{"1", "2", "3"} {
				s.Append(ctx, sid, stream, 1, []byte(sid+stream))
			}
		}
		if err := s.StreamDone(ctx, "s", "1"); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.After(ctx, "s", "1", 0); len(got) != 0 {
			t.Fatalf("a done stream kept %q", got)
		}
		if got, _, _ := s.After(ctx, "s", "2", 0); !equalEvents(got, [][]byte{[]byte("s2")}) {
			t.Fatalf("another stream after StreamDone: %q", got)
		}
		if err := s.SessionClosed(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"2", "3"} {
			if got, _, _ := s.After(ctx, "s", stream, 0); len(got) != 0 {
				t.Fatalf("a closed session's stream %s kept %q", stream, got)
			}
		}
		if got, _, _ := s.After(ctx, "t", "3", 0); !equalEvents(got, [][]byte{[]byte("t3")}) {
			t.Fatalf("another session after SessionClosed: %q", got)
		}
		if err := s.SessionClosed(ctx, "nope"); err != nil {
			t.Fatalf("SessionClosed of an unknown session: %v", err)
		}
	}},
}

func equalEvents(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}

// eventStores are a store and one that keeps only the last few of a
// stream's events (ten or so).
type eventStores struct{ s, small mcp.EventStore }

// TestEventStoreChecks runs the shared checks on both stores.
func TestEventStoreChecks(t *testing.T) {
	runChecks(t, eventStoreChecks,
		func() eventStores { return eventStores{mcp.NewMemoryEventStore(1 << 20), mcp.NewMemoryEventStore(100)} },
		func(r *redisServer, prefix Option) eventStores {
			return eventStores{NewEventStore(r.client(), prefix), NewEventStore(r.client(), prefix, WithMaxStreamEvents(10))}
		})
}

// TestEventStoreKeys: a stream and its session's set expire with the TTL
// after the last Append; once the session closed, none of its keys are
// left; a trimmed stream stays near its bound.
func TestEventStoreKeys(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	ctx := context.Background()
	s := NewEventStore(c, WithEventTTL(time.Hour), WithMaxStreamEvents(10))
	for i := range int64(1000) {
		s.Append(ctx, "s", "1", i+1, []byte("x"))
	}
	s.Append(ctx, "s", "2", 1, []byte("x"))
	for _, key := range []string{"mcp:stream:{s}:1", "mcp:stream:{s}:2", "mcp:streams:{s}"} {
		if ttl := c.PTTL(ctx, key).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Fatalf("%s: ttl %v", key, ttl)
		}
	}
	if n := c.XLen(ctx, "mcp:stream:{s}:1").Val(); n < 10 || n > 200 {
		t.Fatalf("a stream bounded to about ten events holds %d", n)
	}
	s.SessionClosed(ctx, "s")
	if keys, _, _ := c.Scan(ctx, 0, "mcp:*", 1000).Result(); len(keys) != 0 {
		t.Fatalf("left after SessionClosed: %v", keys)
	}

	short := NewEventStore(c, WithEventTTL(20*time.Millisecond))
	expired := r.awaitExpiry("mcp:stream:{s}:1")
	short.Append(ctx, "s", "1", 1, []byte("x"))
	expired()
	if got, _, err := short.After(ctx, "s", "1", 0); len(got) != 0 || err != nil {
		t.Fatalf("After on an expired stream: %q, %v", got, err)
	}
}
