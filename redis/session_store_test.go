package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// sessionStoreChecks are what every mcp.SessionStore does, run against
// the library's MemorySessionStore and against ours.
var sessionStoreChecks = []check[mcp.SessionStore]{
	{"a record is kept as saved, a copy", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		rec := &mcp.SessionRecord{ID: "s1", Principal: "alice", ProtocolVersion: "2025-11-25",
			ClientInfo:         mcp.Implementation{Name: "c", Version: "1"},
			ClientCapabilities: json.RawMessage(`{"roots":{}}`), LogLevel: "debug", Subscriptions: []string{"file:///a"}}
		want := *rec
		want.Subscriptions = []string{"file:///a"}
		if err := s.Save(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		rec.Subscriptions[0] = "changed"
		got, err := s.Load(ctx, "s1")
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Fatalf("Load: %+v, %v; want %+v", got, err, want)
		}
		got.Subscriptions[0] = "changed"
		if again, _ := s.Load(ctx, "s1"); again.Subscriptions[0] != "file:///a" {
			t.Fatal("a change to a loaded record reached the store")
		}
	}},
	{"a second Save replaces the first", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1", LogLevel: "debug"}, time.Minute)
		s.Save(ctx, &mcp.SessionRecord{ID: "s1", LogLevel: "error"}, time.Minute)
		if got, err := s.Load(ctx, "s1"); err != nil || got.LogLevel != "error" {
			t.Fatalf("Load: %+v, %v", got, err)
		}
	}},
	{"an unknown session is not found", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		if _, err := s.Load(ctx, "nope"); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Load: %v", err)
		}
		if err := s.Touch(ctx, "nope", time.Minute); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Touch: %v", err)
		}
		if err := s.Delete(ctx, "nope"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}},
	{"a deleted session is gone", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, time.Minute)
		if err := s.Delete(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, "s1"); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Load: %v", err)
		}
	}},
	{"a ttl of zero ends the session at once", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, 0)
		if _, err := s.Load(ctx, "s1"); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Load after Save with no ttl: %v", err)
		}
		s.Save(ctx, &mcp.SessionRecord{ID: "s2"}, time.Minute)
		if err := s.Touch(ctx, "s2", 0); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if _, err := s.Load(ctx, "s2"); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Load after Touch with no ttl: %v", err)
		}
	}},
}

// TestSessionStoreChecks runs the shared checks on both stores.
func TestSessionStoreChecks(t *testing.T) {
	runChecks(t, sessionStoreChecks,
		func() mcp.SessionStore { return mcp.NewMemorySessionStore() },
		func(r *redisServer, prefix Option) mcp.SessionStore { return NewSessionStore(r.client(), prefix) })
}

// TestSessionStoreTTL: a session lives ttl from its last Save or Touch,
// counted by Redis; then it is gone and Touch says so.
func TestSessionStoreTTL(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	s := NewSessionStore(c)
	ctx := context.Background()
	if err := s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "mcp:session:s1").Val(); ttl <= 50*time.Second || ttl > time.Minute {
		t.Fatalf("ttl after Save: %v", ttl)
	}
	if err := s.Touch(ctx, "s1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, "mcp:session:s1").Val(); ttl <= time.Minute {
		t.Fatalf("ttl after Touch: %v", ttl)
	}
	expired := r.awaitExpiry("mcp:session:s1")
	if err := s.Touch(ctx, "s1", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	expired()
	if _, err := s.Load(ctx, "s1"); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Fatalf("Load of an expired session: %v", err)
	}
	if err := s.Touch(ctx, "s1", time.Minute); !errors.Is(err, mcp.ErrSessionNotFound) {
		t.Fatalf("Touch of an expired session: %v", err)
	}
}

// TestSessionStoreBadRecord: a key that does not hold a record is an
// error naming it, not a panic.
func TestSessionStoreBadRecord(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	ctx := context.Background()
	c.Set(ctx, "mcp:session:bad", "{not json", 0)
	_, err := NewSessionStore(c).Load(ctx, "bad")
	var re *Error
	if !errors.As(err, &re) || re.Op != "SessionStore.Load" || re.Key != "mcp:session:bad" {
		t.Fatalf("Load of a bad record: %v", err)
	}
}
