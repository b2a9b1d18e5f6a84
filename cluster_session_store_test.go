package mcp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemorySessionStore: a record is kept as saved (a copy), lives ttl
// from its last Save or Touch, and is gone after Delete. The checks it
// shares with the Redis store, revisions among them, are in
// redis/session_store_test.go.
func TestMemorySessionStore(t *testing.T) {
	ctx := context.Background()
	s := NewMemorySessionStore()
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	rec := &SessionRecord{ID: "s1", Principal: "alice", ProtocolVersion: "2025-11-25", Subscriptions: []string{"file:///a"}}
	if err := s.Save(ctx, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	rec.Subscriptions[0] = "changed"
	got, err := s.Load(ctx, "s1")
	if err != nil || got.Principal != "alice" || got.Subscriptions[0] != "file:///a" {
		t.Fatalf("Load: %+v, %v", got, err)
	}
	now = now.Add(50 * time.Second)
	if err := s.Touch(ctx, "s1", time.Minute); err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Second) // 100 s after Save, 50 s after Touch
	if _, err := s.Load(ctx, "s1"); err != nil {
		t.Fatalf("a touched session expired: %v", err)
	}
	now = now.Add(10 * time.Second)
	if _, err := s.Load(ctx, "s1"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("an expired session: %v", err)
	}
	if err := s.Touch(ctx, "s1", time.Minute); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Touch of an expired session: %v", err)
	}
	rec.Revision = 0 // a session of that id made afresh
	if err := s.Save(ctx, rec, time.Minute); err != nil {
		t.Fatalf("Save over an expired session: %v", err)
	}
	s.Delete(ctx, "s1")
	if _, err := s.Load(ctx, "s1"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("a deleted session: %v", err)
	}
}
