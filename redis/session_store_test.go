package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
		want.Revision = 1
		if err := s.Save(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		if rec.Revision != 1 {
			t.Fatalf("the first Save left the record at revision %d, want 1", rec.Revision)
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
	{"a Save based on the stored record replaces it", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		rec := &mcp.SessionRecord{ID: "s1", LogLevel: "debug"}
		if err := s.Save(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		rec.LogLevel = "error"
		if err := s.Save(ctx, rec, time.Minute); err != nil || rec.Revision != 2 {
			t.Fatalf("second Save: %v, revision %d", err, rec.Revision)
		}
		loaded, err := s.Load(ctx, "s1")
		if err != nil || loaded.LogLevel != "error" || loaded.Revision != 2 {
			t.Fatalf("Load: %+v, %v", loaded, err)
		}
		loaded.LogLevel = "info"
		if err := s.Save(ctx, loaded, time.Minute); err != nil || loaded.Revision != 3 {
			t.Fatalf("Save of a loaded record: %v, revision %d", err, loaded.Revision)
		}
	}},
	{"a Save based on an older revision conflicts and stores nothing", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1", LogLevel: "debug"}, time.Minute)
		mine, _ := s.Load(ctx, "s1")
		theirs, _ := s.Load(ctx, "s1")
		theirs.Subscriptions = []string{"file:///theirs"}
		if err := s.Save(ctx, theirs, time.Minute); err != nil {
			t.Fatal(err)
		}
		mine.LogLevel = "error"
		if err := s.Save(ctx, mine, time.Minute); !errors.Is(err, mcp.ErrSessionConflict) {
			t.Fatalf("Save over a newer revision: %v, want ErrSessionConflict", err)
		}
		if mine.Revision != 1 {
			t.Fatalf("a Save that conflicted moved the record to revision %d", mine.Revision)
		}
		got, err := s.Load(ctx, "s1")
		if err != nil || got.LogLevel != "debug" || len(got.Subscriptions) != 1 || got.Revision != 2 {
			t.Fatalf("Load after the conflict: %+v, %v", got, err)
		}
	}},
	{"a first Save over a stored session conflicts", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1", Principal: "alice"}, time.Minute)
		if err := s.Save(ctx, &mcp.SessionRecord{ID: "s1", Principal: "mallory"}, time.Minute); !errors.Is(err, mcp.ErrSessionConflict) {
			t.Fatalf("a second first Save: %v, want ErrSessionConflict", err)
		}
		if got, _ := s.Load(ctx, "s1"); got.Principal != "alice" {
			t.Fatalf("the stored session was replaced: %+v", got)
		}
	}},
	{"a Save based on a deleted session does not bring it back", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		rec := &mcp.SessionRecord{ID: "s1"}
		s.Save(ctx, rec, time.Minute)
		s.Delete(ctx, "s1")
		if err := s.Save(ctx, rec, time.Minute); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Save after Delete: %v, want ErrSessionNotFound", err)
		}
		if _, err := s.Load(ctx, "s1"); !errors.Is(err, mcp.ErrSessionNotFound) {
			t.Fatalf("Load: %v", err)
		}
	}},
	{"of Saves at once based on one revision, one wins", func(t *testing.T, s mcp.SessionStore) {
		ctx := context.Background()
		s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, time.Minute)
		const n = 8
		errs := make(chan error, n)
		for i := range n {
			go func() {
				rec := &mcp.SessionRecord{ID: "s1", LogLevel: fmt.Sprint(i), Revision: 1}
				errs <- s.Save(ctx, rec, time.Minute)
			}()
		}
		won := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				won++
			case !errors.Is(err, mcp.ErrSessionConflict):
				t.Fatalf("Save: %v", err)
			}
		}
		if got, err := s.Load(ctx, "s1"); won != 1 || err != nil || got.Revision != 2 {
			t.Fatalf("%d Saves won, want 1; the record: %+v, %v", won, got, err)
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
		if err := s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, time.Minute); err != nil {
			t.Fatalf("a first Save after one with no ttl: %v", err)
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
// counted by Redis, a Save that conflicted left out; then it is gone and
// Touch says so.
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
	if err := s.Save(ctx, &mcp.SessionRecord{ID: "s1"}, time.Hour); !errors.Is(err, mcp.ErrSessionConflict) {
		t.Fatalf("a first Save over a stored session: %v", err)
	}
	if ttl := c.PTTL(ctx, "mcp:session:s1").Val(); ttl <= 50*time.Second || ttl > time.Minute {
		t.Fatalf("ttl after a Save that conflicted: %v", ttl)
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
	err = NewSessionStore(c).Save(ctx, &mcp.SessionRecord{ID: "bad", Revision: 1}, time.Minute)
	if !errors.As(err, &re) || re.Op != "SessionStore.Save" || re.Key != "mcp:session:bad" || !strings.Contains(err.Error(), "no session record") {
		t.Fatalf("Save over a bad record: %v", err)
	}
	if got := c.Get(ctx, "mcp:session:bad").Val(); got != "{not json" {
		t.Fatalf("Save over a bad record wrote %q", got)
	}
}
