package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run delivery in a synctest bubble: the endpoint is a
// handler called in process (no network, so the bubble's clock moves),
// and events/subscribe is called as the core calls it, for a principal.

// handlerTransport carries a request to a handler in process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// scriptedEndpoint answers event deliveries with the statuses of its
// script in turn (2xx ones go on to the receiver), then passes them all
// to the receiver; it records when each event attempt came.
type scriptedEndpoint struct {
	receiver *WebhookReceiver
	got      []WebhookMessage

	mu       sync.Mutex
	script   []int
	attempts []time.Time
	sigs     []string // the webhook-signature of each event attempt
}

func newScriptedEndpoint(script ...int) *scriptedEndpoint {
	e := &scriptedEndpoint{script: script}
	e.receiver = NewWebhookReceiver(func(_ context.Context, m WebhookMessage) error {
		e.mu.Lock()
		e.got = append(e.got, m)
		e.mu.Unlock()
		return nil
	})
	return e
}

func (e *scriptedEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("webhook-id"), "evt_") {
		e.mu.Lock()
		e.attempts = append(e.attempts, time.Now())
		e.sigs = append(e.sigs, r.Header.Get("webhook-signature"))
		status := 0
		if len(e.script) > 0 {
			status, e.script = e.script[0], e.script[1:]
		}
		e.mu.Unlock()
		if status != 0 && status/100 != 2 {
			w.WriteHeader(status)
			return
		}
	}
	e.receiver.ServeHTTP(w, r)
}

// subscriptionsFrom returns the subscriptions of the messages handed to
// the receiver's callback, from the i-th on.
func (e *scriptedEndpoint) subscriptionsFrom(i int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var to []string
	for _, m := range e.got[i:] {
		to = append(to, m.SubscriptionID)
	}
	return to
}

// messages returns the tickets handed to the receiver's callback.
func (e *scriptedEndpoint) tickets(t *testing.T) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var events []EventOccurrence
	for _, m := range e.got {
		if m.Event != nil {
			events = append(events, *m.Event)
		}
	}
	return ticketIDs(t, events)
}

// bubbleServer returns a server whose webhooks reach e in process.
func bubbleServer(ctx context.Context, e *scriptedEndpoint, opts func(*WebhookOptions), more ...ServerOption) (*Server, *EventTopic[ticket]) {
	o := WebhookOptions{Context: ctx, Client: &http.Client{Transport: handlerTransport{e}}, FirstRetry: time.Second}
	if opts != nil {
		opts(&o)
	}
	return eventsServer(append(more, WithWebhooks(o))...)
}

// subscribeAs calls events/subscribe (or unsubscribe) as principal.
func subscribeAs(t *testing.T, s *Server, method, principal string, params map[string]any) (*EventSubscribeResult, error) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	info := &RequestInfo{session: &serverSession{srv: s, principal: principal}}
	res, err := s.eventsOn().webhooks.serve(context.Background(), method, raw, info)
	if err != nil {
		return nil, err
	}
	r, _ := res.(*EventSubscribeResult)
	return r, nil
}

// hookParams are the params of a subscription of ticket.created to
// https://hooks.example/path with secret.
func hookParams(path, secret string, ttl time.Duration) map[string]any {
	p := map[string]any{"name": "ticket.created", "delivery": map[string]any{"url": "https://hooks.example" + path, "secret": secret}}
	if ttl > 0 {
		p["ttlMs"] = ttl.Milliseconds()
	}
	return p
}

// TestWebhookRetries: failures are retried after FirstRetry and then
// twice as late each time, and an occurrence is delivered once the
// endpoint takes it; 410 and 413 are not retried and the next occurrence
// still goes out; an occurrence whose attempts run out is given up on and
// the next one goes out.
func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		script   []int
		attempts int   // attempts of the first occurrence
		tickets  []int // what the receiver got
	}{
		{"500 then success", []int{500, 502, 200}, 3, []int{0, 1}},
		{"410 not retried", []int{410}, 1, []int{1}},
		{"413 not retried", []int{413}, 1, []int{1}},
		{"given up", []int{500, 500, 500}, 3, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e := newScriptedEndpoint(tc.script...)
				s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Attempts = 3 })
				secret := NewWebhookSecret()
				e.receiver.AddSecret(secret)
				if _, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/h", secret, 0)); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				publishTickets(t, topic, 0, 2)
				time.Sleep(time.Minute)
				synctest.Wait()
				e.mu.Lock()
				attempts := e.attempts
				e.mu.Unlock()
				if len(attempts) != tc.attempts+1 {
					t.Fatalf("%d attempts, want %d and one for the next occurrence", len(attempts), tc.attempts)
				}
				for i := 1; i < tc.attempts; i++ {
					if got, want := attempts[i].Sub(attempts[i-1]), time.Second<<(i-1); got != want {
						t.Fatalf("retry %d came after %v, want %v", i, got, want)
					}
				}
				if attempts[0] != start {
					t.Fatalf("the first attempt came after %v", attempts[0].Sub(start))
				}
				if got := e.tickets(t); len(got) != len(tc.tickets) || got[len(got)-1] != 1 {
					t.Fatalf("the receiver got tickets %v, want %v", got, tc.tickets)
				}
			})
		})
	}
}

// TestWebhookExpiry: a subscription that is not refreshed gets nothing
// once its TTL ran out and is dropped from the store; one refreshed in
// time still gets deliveries; the grant is clamped to MinTTL.
func TestWebhookExpiry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		store := NewMemoryWebhookStore(0)
		s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Store, o.MinTTL = store, time.Minute })
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		lapsing, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/lapsing", secret, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := lapsing.RefreshBefore.Sub(time.Now()); got != time.Minute {
			t.Fatalf("a one-second suggestion was granted %v, want the minimum", got)
		}
		kept, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/kept", secret, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 1)
		synctest.Wait()
		if got := len(e.got); got != 2 {
			t.Fatalf("%d deliveries before expiry, want one to each", got)
		}

		time.Sleep(40 * time.Second)
		again, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/kept", secret, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != kept.ID || !again.RefreshBefore.After(*kept.RefreshBefore) {
			t.Fatalf("refresh %+v after %+v", again, kept)
		}
		time.Sleep(30 * time.Second) // the first lapsed, the refreshed one did not
		synctest.Wait()
		publishTickets(t, topic, 1, 2)
		synctest.Wait()
		if to := e.subscriptionsFrom(2); len(to) != 1 || to[0] != kept.ID {
			t.Fatalf("after expiry, deliveries went to %v, want only %s", to, kept.ID)
		}
		_, total, err := store.Claim(context.Background(), "nobody", time.Now(), time.Now(), 0)
		if err != nil || total != 1 {
			t.Fatalf("the store holds %d subscriptions (%v), want the refreshed one", total, err)
		}
	})
}

// TestWebhookSuspension: after SuspendAfter occurrences in a row were
// given up on, delivery stops (later occurrences wait); the refresh
// reports active false and resumes from the occurrence it stopped at.
func TestWebhookSuspension(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint(500, 500)
		s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Attempts, o.SuspendAfter = 1, 2 })
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		params := hookParams("/h", secret, 0)
		if _, err := subscribeAs(t, s, "events/subscribe", "alice", params); err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 3)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := e.tickets(t); len(got) != 0 {
			t.Fatalf("while suspended the receiver got %v", got)
		}
		res, err := subscribeAs(t, s, "events/subscribe", "alice", params)
		if err != nil {
			t.Fatal(err)
		}
		if st := res.DeliveryStatus; st == nil || st.Active || st.LastError != "http_5xx" || st.FailedSince == nil {
			t.Fatalf("status after suspension %+v", res.DeliveryStatus)
		}
		synctest.Wait()
		// Ticket 0 was given up on; delivery stopped at ticket 1.
		if got := e.tickets(t); len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Fatalf("after the refresh the receiver got %v, want [1 2]", got)
		}
	})
}

// keepLeases is a WebhookStore whose Release does nothing: an instance
// that stops through it leaves its leases to lapse, as one that died.
type keepLeases struct{ WebhookStore }

func (keepLeases) Release(context.Context, string, string) error { return nil }

// TestWebhookLeaseHandover: two instances share the store and the log; the
// one that delivered a subscription stops without giving up its lease;
// once the lease lapsed, the other resumes from the stored cursor, so the
// endpoint gets every occurrence once, in order.
func TestWebhookLeaseHandover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		store, log := keepLeases{NewMemoryWebhookStore(0)}, NewMemoryEventLog(0, 0)
		ctxA, stopA := context.WithCancel(t.Context())
		opts := func(o *WebhookOptions) { o.Store, o.Lease = store, 30*time.Second }
		a, topicA := bubbleServer(ctxA, e, opts, WithEvents(EventOptions{Log: log}))
		_, topicB := bubbleServer(t.Context(), e, opts, WithEvents(EventOptions{Log: log}))
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		if _, err := subscribeAs(t, a, "events/subscribe", "alice", hookParams("/h", secret, 0)); err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topicA, 0, 2)
		synctest.Wait()
		stopA()
		synctest.Wait()
		publishTickets(t, topicB, 2, 4) // b's loop starts, but a's lease holds
		synctest.Wait()
		if got := e.tickets(t); len(got) != 2 {
			t.Fatalf("while a's lease holds the endpoint got %v", got)
		}
		time.Sleep(40 * time.Second)
		synctest.Wait()
		if got := e.tickets(t); len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
			t.Fatalf("the endpoint got %v, want [0 1 2 3]", got)
		}
		if len(e.got) != 4 {
			t.Fatalf("the endpoint got %d messages, want the four occurrences and no gap", len(e.got))
		}
	})
}

// TestWebhookMoreSubscriptionsThanSlots: Concurrent bounds the POSTs under
// way, not the subscriptions delivered: with one slot, three
// subscriptions each get the occurrence.
func TestWebhookMoreSubscriptionsThanSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Concurrent = 1 })
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		for _, path := range []string{"/a", "/b", "/c"} {
			if _, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams(path, secret, 0)); err != nil {
				t.Fatal(err)
			}
		}
		publishTickets(t, topic, 0, 1)
		synctest.Wait()
		to := map[string]bool{}
		for _, m := range e.got {
			to[m.SubscriptionID] = true
		}
		if len(to) != 3 {
			t.Fatalf("the occurrence reached %d subscriptions, want 3", len(to))
		}
	})
}

// TestWebhookSecretRotation: a refresh with a new secret replaces it; for
// a grace window deliveries carry both signatures, so that the receiver
// verifies them with either, and after it only the new one's.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		s, topic := bubbleServer(t.Context(), e, nil)
		old, next := NewWebhookSecret(), NewWebhookSecret()
		e.receiver.AddSecret(old)
		if _, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/h", old, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/h", next, 0)); err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 1)
		synctest.Wait()
		time.Sleep(webhookRotationGrace)
		publishTickets(t, topic, 1, 2)
		synctest.Wait()
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.sigs) != 2 || len(strings.Fields(e.sigs[0])) != 2 || len(strings.Fields(e.sigs[1])) != 1 {
			t.Fatalf("signatures %q, want two during the grace window and one after", e.sigs)
		}
		if len(e.got) != 1 {
			t.Fatalf("the receiver, which knows only the old secret, took %d deliveries; want the one signed with both", len(e.got))
		}
	})
}

// TestWebhookReplayAndGap: a subscription made with an older cursor gets
// what followed it; when the log drops occurrences the subscription had
// not reached yet (here, while the endpoint was failing), the endpoint
// gets a gap envelope with the fresh cursor, then what the log still has.
func TestWebhookReplayAndGap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint(200, 200, 500, 500, 500)
		log := NewMemoryEventLog(3, 0)
		s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Attempts = 10 }, WithEvents(EventOptions{Log: log}))
		start, err := log.Read(context.Background(), EventQuery{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 2)
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		params := hookParams("/h", secret, 0)
		params["cursor"] = start.Cursor
		res, err := subscribeAs(t, s, "events/subscribe", "alice", params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Truncated || res.Cursor != start.Cursor {
			t.Fatalf("subscribe from an older cursor: %+v", res)
		}
		synctest.Wait()
		if got := e.tickets(t); len(got) != 2 || got[0] != 0 || got[1] != 1 {
			t.Fatalf("replayed %v, want [0 1]", got)
		}
		publishTickets(t, topic, 2, 3) // its delivery fails, and is retried
		synctest.Wait()
		publishTickets(t, topic, 3, 7) // the log keeps 3: tickets 2 and 3 go
		time.Sleep(time.Hour)
		synctest.Wait()
		e.mu.Lock()
		var kinds []string
		for _, m := range e.got[2:] {
			if m.Type == "gap" {
				kinds = append(kinds, "gap")
				if m.Cursor == "" {
					t.Error("a gap without a cursor")
				}
			} else {
				kinds = append(kinds, strconv.Itoa(ticketIDs(t, []EventOccurrence{*m.Event})[0]))
			}
		}
		e.mu.Unlock()
		if strings.Join(kinds, ",") != "2,gap,4,5,6" {
			t.Fatalf("after the drop the endpoint got %v, want 2, a gap, 4, 5, 6", kinds)
		}
	})
}

// TestWebhookExpiryEras: on both eras, through the client and the HTTP
// handler (on the in-memory network, so that the bubble's clock runs the
// TTL), a subscription its client stops refreshing gets nothing once its
// grant ran out, while one refreshed in time still gets each occurrence.
func TestWebhookExpiryEras(t *testing.T) {
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e := newScriptedEndpoint()
				s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.MinTTL = time.Second })
				h := NewHTTPHandler(s, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
					return r.Header.Get(principalHeader), nil
				})))
				_, hc := servePipe(t, &http.Server{Handler: h})
				cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
				if err := cl.Connect(context.Background(), NewHTTPTransport(pipeURL, WithHTTPClient(hc), WithHeader(principalHeader, "alice"))); err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				secret := NewWebhookSecret()
				e.receiver.AddSecret(secret)
				sub := EventSubscription{Name: "ticket.created"}
				lapsing, err := cl.SubscribeEvents(context.Background(), sub, WebhookDelivery{URL: "https://hooks.example/lapsing", Secret: secret}, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				kept, err := cl.SubscribeEvents(context.Background(), sub, WebhookDelivery{URL: "https://hooks.example/kept", Secret: secret}, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if got := lapsing.RefreshBefore.Sub(time.Now()); got != 10*time.Second {
					t.Fatalf("granted %v, want the 10s asked", got)
				}
				publishTickets(t, topic, 0, 1)
				synctest.Wait()
				if n := len(e.tickets(t)); n != 2 {
					t.Fatalf("%d deliveries before expiry, want one to each", n)
				}
				time.Sleep(8 * time.Second)
				if _, err := cl.SubscribeEvents(context.Background(), sub, WebhookDelivery{URL: "https://hooks.example/kept", Secret: secret}, 10*time.Second); err != nil {
					t.Fatal(err)
				}
				time.Sleep(4 * time.Second) // lapsing's grant ran out; kept's runs 6s more
				synctest.Wait()
				publishTickets(t, topic, 1, 2)
				synctest.Wait()
				if to := e.subscriptionsFrom(2); len(to) != 1 || to[0] != kept.ID {
					t.Fatalf("after expiry, deliveries went to %v, want only %s", to, kept.ID)
				}
			})
		})
	}
}

// TestWebhookEventTypeRemoved: a subscription to an event type the server
// removes gets a terminated envelope with the CodeNotFound error of kind
// "event", and is dropped from the store.
func TestWebhookEventTypeRemoved(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		store := NewMemoryWebhookStore(0)
		s, topic := bubbleServer(t.Context(), e, func(o *WebhookOptions) { o.Store = store })
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		if _, err := subscribeAs(t, s, "events/subscribe", "alice", hookParams("/h", secret, 0)); err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 1)
		synctest.Wait()
		s.RemoveEventType("ticket.created")
		synctest.Wait()
		e.mu.Lock()
		got := slices.Clone(e.got)
		e.mu.Unlock()
		if len(got) != 2 || got[0].Event == nil || got[1].Type != "terminated" || got[1].Error == nil || got[1].Error.Code != CodeNotFound {
			t.Fatalf("handed on %+v", got)
		}
		if _, total, err := store.Claim(context.Background(), "nobody", time.Now(), time.Now(), 0); err != nil || total != 0 {
			t.Fatalf("the store holds %d subscriptions (%v)", total, err)
		}
	})
}
