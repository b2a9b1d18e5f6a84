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

// TestEventStoreBatch: AppendBatch stores its events as that many Appends
// would, in one round trip, and carries the deletion of the session's
// done streams; past the bound on deferred deletions, StreamDone deletes
// at once. Another session's done streams wait for their own Append.
func TestEventStoreBatch(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	tc := &tripCounter{}
	c.AddHook(tc)
	ctx := context.Background()
	s := NewEventStore(c)
	for _, sid := range []string{"s", "t"} {
		if err := s.AppendBatch(ctx, sid, "1", 1, [][]byte{[]byte("a"), []byte("b")}); err != nil {
			t.Fatal(err)
		}
	}
	start := tc.trips.Load()
	want := [][]byte{[]byte("c"), {0, '\n', 0xff}, []byte("")}
	if err := s.AppendBatch(ctx, "s", "1", 3, want); err != nil {
		t.Fatal(err)
	}
	if n := tc.trips.Load() - start; n != 1 {
		t.Fatalf("AppendBatch of %d events took %d round trips", len(want), n)
	}
	if got, ok, err := s.After(ctx, "s", "1", 2); !ok || err != nil || !equalEvents(got, want) {
		t.Fatalf("After(2): %q, %v, %v", got, ok, err)
	}
	// A batch that skips ahead drops what came before, as Append does.
	if err := s.AppendBatch(ctx, "s", "1", 9, [][]byte{[]byte("i")}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.After(ctx, "s", "1", 2); ok {
		t.Fatal("a resume across a gap was not refused")
	}

	start = tc.trips.Load()
	for _, sid := range []string{"s", "t"} {
		if err := s.StreamDone(ctx, sid, "1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := tc.trips.Load() - start; n != 0 {
		t.Fatalf("StreamDone took %d round trips", n)
	}
	if got, ok, err := s.After(ctx, "s", "1", 0); !ok || err != nil || len(got) != 0 {
		t.Fatalf("After on a done stream: %q, %v, %v", got, ok, err)
	}
	if err := s.Append(ctx, "s", "2", 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if c.Exists(ctx, "mcp:stream:{s}:1").Val() != 0 || c.SIsMember(ctx, "mcp:streams:{s}", "1").Val() {
		t.Fatal("the session's next Append did not delete its done stream")
	}
	if c.Exists(ctx, "mcp:stream:{t}:1").Val() != 1 {
		t.Fatal("another session's Append deleted a done stream of t")
	}
	if err := s.SessionClosed(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if c.Exists(ctx, "mcp:stream:{t}:1").Val() != 0 {
		t.Fatal("SessionClosed left a done stream")
	}

	s.maxDone = 1
	s.Append(ctx, "u", "1", 1, []byte("x"))
	s.Append(ctx, "u", "2", 1, []byte("x"))
	s.StreamDone(ctx, "u", "1") // deferred: the one allowed
	s.StreamDone(ctx, "u", "2") // past the bound: at once
	if c.Exists(ctx, "mcp:stream:{u}:1").Val() != 1 || c.Exists(ctx, "mcp:stream:{u}:2").Val() != 0 {
		t.Fatal("StreamDone past the bound did not delete at once, or the deferred one went early")
	}
}
