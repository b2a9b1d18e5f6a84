package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// webhookRecord is a subscription of principal's to url, expiring in ttl
// (0: never).
func webhookRecord(principal, url string, ttl time.Duration) mcp.WebhookRecord {
	r := mcp.WebhookRecord{
		ID: fmt.Sprintf("sub_%x", principal+url), Principal: principal, URL: url, Name: "ticket.created",
		Arguments: json.RawMessage(`{"queue":"ops"}`), Secret: "whsec_one", Cursor: "c0",
	}
	if ttl > 0 {
		r.Expires = time.Now().Add(ttl)
	}
	return r
}

// webhookStoreChecks are what every mcp.WebhookStore does, run against the
// library's memory store and against ours.
var webhookStoreChecks = []check[mcp.WebhookStore]{
	{"a subscription is made once and refreshed after", func(t *testing.T, s mcp.WebhookStore) {
		ctx := context.Background()
		rec := webhookRecord("alice", "https://a.example/hook", time.Hour)
		stored, before, created, err := s.Upsert(ctx, rec, 10)
		if err != nil || !created || stored.ID != rec.ID || stored.URL != rec.URL || string(stored.Arguments) != string(rec.Arguments) || !stored.Status.Active {
			t.Fatalf("first: %+v %+v %v %v", stored, before, created, err)
		}
		// Delivery moves the watermark; a refresh keeps it, rotates the
		// secret and moves the expiry.
		if held, _, err := s.Claim(ctx, "i1", time.Now(), time.Now().Add(time.Minute), 10); err != nil || len(held) != 1 {
			t.Fatalf("claim: %v %v", held, err)
		}
		now := time.Now().Truncate(time.Millisecond)
		if err := s.Progress(ctx, rec.ID, "i1", "c7", mcp.WebhookStatus{Active: true, LastDeliveryAt: &now}); err != nil {
			t.Fatal(err)
		}
		rec.Secret, rec.PreviousUntil = "whsec_two", time.Now().Add(time.Minute)
		rec.Expires = time.Now().Add(2 * time.Hour)
		stored, before, created, err = s.Upsert(ctx, rec, 10)
		if err != nil || created {
			t.Fatalf("refresh: %v %v", created, err)
		}
		if stored.Cursor != "c7" || stored.Secret != "whsec_two" || stored.PreviousSecret != "whsec_one" ||
			stored.Expires.UnixMilli() != rec.Expires.UnixMilli() || stored.LeaseOwner != "i1" {
			t.Fatalf("refreshed: %+v", stored)
		}
		if !before.Active || before.LastDeliveryAt == nil || !before.LastDeliveryAt.Equal(now) {
			t.Fatalf("status before the refresh: %+v", before)
		}
	}},
	{"a principal holds at most max subscriptions, others theirs", func(t *testing.T, s mcp.WebhookStore) {
		ctx := context.Background()
		for i := range 3 {
			_, _, _, err := s.Upsert(ctx, webhookRecord("alice", fmt.Sprintf("https://a.example/%d", i), time.Hour), 3)
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
		}
		if _, _, _, err := s.Upsert(ctx, webhookRecord("alice", "https://a.example/3", time.Hour), 3); !errors.Is(err, mcp.ErrWebhookLimit) {
			t.Fatalf("one past the bound: %v", err)
		}
		// A refresh of one held is not a new one.
		if _, _, created, err := s.Upsert(ctx, webhookRecord("alice", "https://a.example/0", time.Hour), 3); err != nil || created {
			t.Fatalf("refresh at the bound: %v %v", created, err)
		}
		if _, _, _, err := s.Upsert(ctx, webhookRecord("bob", "https://a.example/0", time.Hour), 3); err != nil {
			t.Fatalf("another principal: %v", err)
		}
		if ok, err := s.Delete(ctx, webhookRecord("alice", "https://a.example/1", 0).ID); err != nil || !ok {
			t.Fatalf("delete: %v %v", ok, err)
		}
		if ok, err := s.Delete(ctx, webhookRecord("alice", "https://a.example/1", 0).ID); err != nil || ok {
			t.Fatalf("delete again: %v %v", ok, err)
		}
		if _, _, _, err := s.Upsert(ctx, webhookRecord("alice", "https://a.example/3", time.Hour), 3); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
	}},
	{"one owner at a time, until its lease lapses or it lets go", func(t *testing.T, s mcp.WebhookStore) {
		ctx := context.Background()
		for i := range 4 {
			if _, _, _, err := s.Upsert(ctx, webhookRecord("alice", fmt.Sprintf("https://a.example/%d", i), 0), 10); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now()
		held, total, err := s.Claim(ctx, "i1", now, now.Add(time.Minute), 3)
		if err != nil || len(held) != 3 || total != 4 {
			t.Fatalf("i1 at most 3: %d of %d, %v", len(held), total, err)
		}
		held2, _, err := s.Claim(ctx, "i2", now, now.Add(time.Minute), 10)
		if err != nil || len(held2) != 1 {
			t.Fatalf("i2 gets the fourth only: %d, %v", len(held2), err)
		}
		if err := s.Progress(ctx, held2[0].ID, "i1", "x", mcp.WebhookStatus{Active: true}); !errors.Is(err, mcp.ErrWebhookLeaseLost) {
			t.Fatalf("progress by another owner: %v", err)
		}
		// i1 renews; a minute later i2's lease has lapsed and i1 takes it.
		if again, _, err := s.Claim(ctx, "i1", now, now.Add(time.Minute), 3); err != nil || len(again) != 3 {
			t.Fatalf("renewal: %d, %v", len(again), err)
		}
		later := now.Add(time.Minute + time.Second)
		all, _, err := s.Claim(ctx, "i1", later, later.Add(time.Minute), 10)
		if err != nil || len(all) != 4 {
			t.Fatalf("after the leases lapsed: %d, %v", len(all), err)
		}
		if err := s.Release(ctx, all[0].ID, "i1"); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Claim(ctx, "i2", later, later.Add(time.Minute), 10)
		if err != nil || len(got) != 1 || got[0].ID != all[0].ID {
			t.Fatalf("a released one goes to the next claim: %v, %v", got, err)
		}
	}},
	{"delivery suspended stays so until a refresh", func(t *testing.T, s mcp.WebhookStore) {
		ctx := context.Background()
		rec := webhookRecord("alice", "https://a.example/hook", 0)
		s.Upsert(ctx, rec, 10)
		s.Claim(ctx, "i1", time.Now(), time.Now().Add(time.Minute), 10)
		if err := s.Progress(ctx, rec.ID, "i1", "c1", mcp.WebhookStatus{Active: false, LastError: "http_5xx"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Progress(ctx, rec.ID, "i1", "c1", mcp.WebhookStatus{Active: true, LastError: "http_5xx"}); err != nil {
			t.Fatal(err)
		}
		held, _, _ := s.Claim(ctx, "i1", time.Now(), time.Now().Add(time.Minute), 10)
		if len(held) != 1 || held[0].Status.Active || held[0].Status.LastError != "http_5xx" {
			t.Fatalf("suspended: %+v", held)
		}
		stored, before, _, err := s.Upsert(ctx, rec, 10)
		if err != nil || before.Active || !stored.Status.Active {
			t.Fatalf("refresh: %+v %+v %v", stored.Status, before, err)
		}
	}},
	{"a lapsed subscription is gone, and its key makes a new one", func(t *testing.T, s mcp.WebhookStore) {
		ctx := context.Background()
		rec := webhookRecord("alice", "https://a.example/hook", time.Hour)
		rec.Expires = time.Now().Add(-time.Second) // lapsed as it is stored
		if _, _, _, err := s.Upsert(ctx, rec, 1); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		held, total, err := s.Claim(ctx, "i1", now, now.Add(time.Minute), 10)
		if err != nil || len(held) != 0 || total != 0 {
			t.Fatalf("after expiry: %v %d %v", held, total, err)
		}
		rec.Expires = time.Now().Add(time.Hour)
		if _, _, created, err := s.Upsert(ctx, rec, 1); err != nil || !created {
			t.Fatalf("the same key again: %v %v", created, err)
		}
	}},
}

func TestWebhookStore(t *testing.T) {
	runChecks(t, webhookStoreChecks,
		func() mcp.WebhookStore { return mcp.NewMemoryWebhookStore(0) },
		func(r *redisServer, o Option) mcp.WebhookStore { return NewWebhookStore(r.client(), 0, o) })
}

// TestWebhookStoreBound: the store as a whole holds at most its max,
// whoever asks.
func TestWebhookStoreBound(t *testing.T) {
	r := startRedis(t)
	s := NewWebhookStore(r.client(), 5, WithKeyPrefix("bound:"))
	ctx := context.Background()
	for i := range 5 {
		if _, _, _, err := s.Upsert(ctx, webhookRecord(fmt.Sprint("p", i), "https://a.example/hook", time.Hour), 10); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	if _, _, _, err := s.Upsert(ctx, webhookRecord("p5", "https://a.example/hook", time.Hour), 10); !errors.Is(err, mcp.ErrWebhookLimit) {
		t.Fatalf("the sixth: %v", err)
	}
}
