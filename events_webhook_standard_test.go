package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhookSignaturesMatchStandardWebhooks runs the Standard Webhooks
// reference library (npm standardwebhooks, testdata/webhooks/check.mjs)
// beside ours: it verifies the deliveries our server signs, a rotated
// subscription's (two signatures) under either secret, and refuses one
// whose body was changed; our receiver accepts what the library signs and
// refuses it changed. Without node or the package (npm ci in
// testdata/webhooks) the test is skipped, unless CI is set.
func TestWebhookSignaturesMatchStandardWebhooks(t *testing.T) {
	t.Parallel()
	node, dir := testNode(t, "the Standard Webhooks test", "webhooks", "standardwebhooks")

	type delivery struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var mu sync.Mutex
	var arrived []delivery
	k := newWrappedWebhookSink(t, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			arrived = append(arrived, delivery{Body: string(body), Headers: map[string]string{
				"webhook-id":        r.Header.Get("webhook-id"),
				"webhook-timestamp": r.Header.Get("webhook-timestamp"),
				"webhook-signature": r.Header.Get("webhook-signature"),
			}})
			mu.Unlock()
			inner.ServeHTTP(w, r)
		})
	})
	s, topic := webhookTestServer(t, k, nil)
	cl := connectAs(t, s, Version20251125, "alice")
	sub := EventSubscription{Name: "ticket.created"}
	_, first := k.subscribe(t, cl, sub, "/hook", 0)
	publishTickets(t, topic, 0, 1)
	k.next(t)
	// The same subscription with a new secret: deliveries carry both
	// signatures for the grace window.
	_, second := k.subscribe(t, cl, sub, "/hook", 0)
	publishTickets(t, topic, 1, 2)
	k.next(t)

	mu.Lock()
	// The occurrences' deliveries, not the verifications; a retry of one
	// (the same webhook-id) counts once.
	var events []delivery
	for _, d := range arrived {
		id := d.Headers["webhook-id"]
		if !strings.HasPrefix(id, "msg_verification_") && !slices.ContainsFunc(events, func(e delivery) bool { return e.Headers["webhook-id"] == id }) {
			events = append(events, d)
		}
	}
	mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("%d occurrence deliveries arrived, want 2", len(events))
	}
	if n := strings.Count(events[1].Headers["webhook-signature"], "v1,"); n != 2 {
		t.Fatalf("the rotated subscription's delivery carries %d signatures, want 2: %q", n, events[1].Headers["webhook-signature"])
	}
	withSecret := func(d delivery, secret string) delivery {
		d.Secret = secret
		return d
	}
	changed := withSecret(events[0], first.Secret)
	changed.Body = strings.Replace(changed.Body, `"t"`, `"T"`, 1)
	verify := []delivery{
		withSecret(events[0], first.Secret),
		withSecret(events[1], second.Secret),
		withSecret(events[1], first.Secret),
		changed,
	}

	// What the library signs, for our receiver.
	type signing struct {
		Secret    string `json:"secret"`
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"`
		Body      string `json:"body"`
	}
	now := time.Now().Unix()
	sign := []signing{{Secret: first.Secret, ID: "evt_standard", Timestamp: now, Body: testOccurrence}}

	input, _ := json.Marshal(map[string]any{"verify": verify, "sign": sign})
	cmd := exec.Command(node, "check.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		Verified   []string `json:"verified"`
		Signatures []string `json:"signatures"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Verified) != len(verify) || len(res.Signatures) != len(sign) {
		t.Fatalf("check.mjs answered %s (%v)", out, err)
	}
	for i, want := range []string{"ok", "ok", "ok", "No matching signature found"} {
		if res.Verified[i] != want {
			t.Errorf("the library on delivery %d (%s): %q, want %q", i, verify[i].Headers["webhook-id"], res.Verified[i], want)
		}
	}

	receiver := NewWebhookReceiver(func(_ context.Context, m WebhookMessage) error { return nil })
	if err := receiver.AddSecret(first.Secret); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{testOccurrence, strings.Replace(testOccurrence, `"id":1`, `"id":2`, 1)} {
		r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("webhook-id", sign[0].ID)
		r.Header.Set("webhook-timestamp", strconv.FormatInt(sign[0].Timestamp, 10))
		r.Header.Set("webhook-signature", res.Signatures[0])
		r.Header.Set("X-MCP-Subscription-Id", "sub_standard")
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, r)
		want := http.StatusOK
		if body != testOccurrence {
			want = http.StatusUnauthorized
		}
		if w.Code != want {
			t.Errorf("our receiver answered %d to the library's signature over %s, want %d", w.Code, body, want)
		}
	}
}
