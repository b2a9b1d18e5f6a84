package mcp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemoryWebhookStore: what the WebhookStore contract says, on the
// memory store: upserts keep the delivery's half, rotate secrets and
// reactivate; the per-principal and total bounds; one owner at a time,
// a lapsed lease claimed by another; Progress refused to a non-owner;
// lapsed records dropped by Claim.
func TestMemoryWebhookStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := NewMemoryWebhookStore(3)
	now := time.Now()
	rec := WebhookRecord{ID: "sub_a", Principal: "alice", URL: "https://h/a", Name: "n", Secret: "s1", Cursor: "c0", Expires: now.Add(time.Hour)}
	got, _, created, err := st.Upsert(ctx, rec, 2)
	if err != nil || !created || !got.Status.Active || got.Cursor != "c0" {
		t.Fatalf("create: %+v %v %v", got, created, err)
	}

	held, total, err := st.Claim(ctx, "one", now, now.Add(time.Minute), 10)
	if err != nil || len(held) != 1 || total != 1 || held[0].LeaseOwner != "one" {
		t.Fatalf("claim: %+v %d %v", held, total, err)
	}
	if held, _, _ := st.Claim(ctx, "two", now, now.Add(time.Minute), 10); len(held) != 0 {
		t.Fatalf("a second owner claimed a held record: %+v", held)
	}
	if err := st.Progress(ctx, "sub_a", "two", "c9", WebhookStatus{Active: true}); !errors.Is(err, ErrWebhookLeaseLost) {
		t.Fatalf("progress by a non-owner: %v", err)
	}
	if err := st.Progress(ctx, "sub_a", "one", "c5", WebhookStatus{Active: false, LastError: "http_5xx"}); err != nil {
		t.Fatal(err)
	}

	// A refresh with a new secret: the old one signs for the grace
	// window, the cursor stays, delivery is active again.
	rec.Secret, rec.Cursor, rec.PreviousUntil = "s2", "c1", now.Add(time.Minute)
	got, before, created, err := st.Upsert(ctx, rec, 2)
	if err != nil || created || got.Cursor != "c5" || got.Secret != "s2" || got.PreviousSecret != "s1" || !got.Status.Active || before.Active || before.LastError != "http_5xx" || got.LeaseOwner != "one" {
		t.Fatalf("refresh: %+v before %+v created %v %v", got, before, created, err)
	}
	if err := st.Progress(ctx, "sub_a", "one", "c6", WebhookStatus{Active: true}); err != nil {
		t.Fatal(err)
	}

	// The lease lapses: another owner claims the record at its cursor.
	later := now.Add(2 * time.Minute)
	held, _, _ = st.Claim(ctx, "two", later, later.Add(time.Minute), 10)
	if len(held) != 1 || held[0].Cursor != "c6" || held[0].LeaseOwner != "two" {
		t.Fatalf("after the lease lapsed: %+v", held)
	}
	if err := st.Release(ctx, "sub_a", "two"); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := st.Claim(ctx, "one", later, later.Add(time.Minute), 10); len(held) != 1 {
		t.Fatalf("a released record was not claimed: %+v", held)
	}

	// Bounds: two per principal, three in all.
	if _, _, _, err := st.Upsert(ctx, WebhookRecord{ID: "sub_b", Principal: "alice", Expires: now.Add(time.Hour)}, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.Upsert(ctx, WebhookRecord{ID: "sub_c", Principal: "alice", Expires: now.Add(time.Hour)}, 2); !errors.Is(err, ErrWebhookLimit) {
		t.Fatalf("a third for alice: %v", err)
	}
	if _, _, _, err := st.Upsert(ctx, WebhookRecord{ID: "sub_d", Principal: "bob", Expires: now.Add(time.Second)}, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.Upsert(ctx, WebhookRecord{ID: "sub_e", Principal: "carol", Expires: now.Add(time.Hour)}, 2); !errors.Is(err, ErrWebhookLimit) {
		t.Fatalf("a fourth in all: %v", err)
	}

	// Claim drops what lapsed; Delete what is asked.
	if _, total, _ := st.Claim(ctx, "one", now.Add(2*time.Second), now.Add(time.Minute), 0); total != 2 {
		t.Fatalf("after bob's lapsed: %d records", total)
	}
	if found, err := st.Delete(ctx, "sub_b"); !found || err != nil {
		t.Fatalf("delete: %v %v", found, err)
	}
	if found, _ := st.Delete(ctx, "sub_b"); found {
		t.Fatal("deleted twice")
	}
	if _, _, _, err := st.Upsert(ctx, WebhookRecord{ID: "sub_c", Principal: "alice", Expires: now.Add(time.Hour)}, 2); err != nil {
		t.Fatalf("alice after a delete: %v", err)
	}
}
