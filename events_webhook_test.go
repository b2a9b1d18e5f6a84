package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// principalHeader names the principal of the test servers' requests.
const principalHeader = "X-Test-Principal"

// webhookSink is a TLS receiver on 127.0.0.1 whose messages arrive on a
// channel, with the client a server must use to reach it.
type webhookSink struct {
	ts       *httptest.Server
	receiver *WebhookReceiver
	got      chan WebhookMessage
}

func newWebhookSink(t *testing.T) *webhookSink {
	return newWrappedWebhookSink(t, nil)
}

// newWrappedWebhookSink is newWebhookSink with the receiver inside wrap.
func newWrappedWebhookSink(t *testing.T, wrap func(http.Handler) http.Handler) *webhookSink {
	t.Helper()
	k := &webhookSink{got: make(chan WebhookMessage, 100)}
	k.receiver = NewWebhookReceiver(func(_ context.Context, m WebhookMessage) error {
		k.got <- m
		return nil
	})
	var h http.Handler = k.receiver
	if wrap != nil {
		h = wrap(k.receiver)
	}
	k.ts = httptest.NewTLSServer(h)
	t.Cleanup(k.ts.Close)
	return k
}

// subscribe makes a secret, tells the receiver, and subscribes sub to
// the sink's path.
func (k *webhookSink) subscribe(t *testing.T, cl *Client, sub EventSubscription, path string, ttl time.Duration) (*EventSubscribeResult, WebhookDelivery) {
	t.Helper()
	d := WebhookDelivery{URL: k.ts.URL + path, Secret: NewWebhookSecret()}
	if err := k.receiver.AddSecret(d.Secret); err != nil {
		t.Fatal(err)
	}
	res, err := cl.SubscribeEvents(context.Background(), sub, d, ttl)
	if err != nil {
		t.Fatalf("SubscribeEvents: %v", err)
	}
	return res, d
}

// next returns the next message, failing the test after a while.
func (k *webhookSink) next(t *testing.T) WebhookMessage {
	t.Helper()
	select {
	case m := <-k.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery arrived")
		return WebhookMessage{}
	}
}

// webhookServer returns the test events server offering webhooks that
// reach the sink; opts adjust the options.
func webhookTestServer(t *testing.T, k *webhookSink, opts func(*WebhookOptions)) (*Server, *EventTopic[ticket]) {
	t.Helper()
	o := WebhookOptions{Context: t.Context(), Client: k.ts.Client(), FirstRetry: 10 * time.Millisecond}
	if opts != nil {
		opts(&o)
	}
	return eventsServer(WithWebhooks(o))
}

// connectAs serves s over HTTP with the principal a request names in
// principalHeader, and connects a client on revision v acting for
// principal ("" for none).
func connectAs(t *testing.T, s *Server, v, principal string) *Client {
	t.Helper()
	ts := serveHTTP(t, s, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
		return r.Header.Get(principalHeader), nil
	})))
	var topts []HTTPTransportOption
	if principal != "" {
		topts = append(topts, WithHeader(principalHeader, principal))
	}
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, WithProtocolVersion(v))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, topts...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// eachWebhookEra runs fn on both eras over HTTP.
func eachWebhookEra(t *testing.T, fn func(t *testing.T, v string)) {
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			fn(t, v)
		})
	}
}

// wantCode fails unless err is an *Error with code (and, when kind is
// not empty, data naming it under key).
func wantCode(t *testing.T, err error, code int, key, value string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
	if key != "" {
		var data map[string]any
		if json.Unmarshal(e.Data, &data) != nil || data[key] != value {
			t.Fatalf("error data %s, want %s %q", e.Data, key, value)
		}
	}
}

// TestWebhookDelivery: on both eras, event types list webhook; a
// subscription is verified, answers its id, grant and cursor, and gets
// each occurrence once, in order, signed (the receiver checked), with its
// cursor; a refresh keeps the id, extends the grant and reports delivery
// status; after unsubscribing, deliveries stop while another
// subscription still gets them.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	eachWebhookEra(t, func(t *testing.T, v string) {
		k := newWebhookSink(t)
		s, topic := webhookTestServer(t, k, nil)
		cl := connectAs(t, s, v, "alice")
		ctx := context.Background()
		for et, err := range cl.EventTypes(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(et.Delivery, ",") != "poll,push,webhook" {
				t.Fatalf("%s: delivery %v", et.Name, et.Delivery)
			}
		}
		sub := EventSubscription{Name: "ticket.created"}
		before := time.Now()
		res, d := k.subscribe(t, cl, sub, "/a", 2*time.Hour)
		if !strings.HasPrefix(res.ID, "sub_") || res.Cursor == "" || res.Truncated || res.RefreshBefore == nil || res.DeliveryStatus != nil {
			t.Fatalf("subscribe: %+v", res)
		}
		// Clamped to the default MaxTTL of a day? No: two hours is within it.
		if got := res.RefreshBefore.Sub(before); got < 2*time.Hour-time.Minute || got > 2*time.Hour+time.Minute {
			t.Fatalf("granted %v, want two hours", got)
		}
		publishTickets(t, topic, 0, 5)
		var last string
		for i := range 5 {
			m := k.next(t)
			if m.SubscriptionID != res.ID || m.Type != "" || m.Event == nil {
				t.Fatalf("message %d: %+v", i, m)
			}
			if got := ticketIDs(t, []EventOccurrence{*m.Event}); got[0] != i {
				t.Fatalf("message %d carries ticket %d", i, got[0])
			}
			if m.Cursor == "" || m.Cursor == last {
				t.Fatalf("message %d cursor %q after %q", i, m.Cursor, last)
			}
			last = m.Cursor
		}

		sub.Cursor = last
		again, err := cl.SubscribeEvents(ctx, sub, d, 3*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		st := again.DeliveryStatus
		if again.ID != res.ID || !again.RefreshBefore.After(*res.RefreshBefore) || st == nil || !st.Active || st.LastDeliveryAt == nil || st.LastError != "" {
			t.Fatalf("refresh: %+v status %+v", again, st)
		}

		// A second subscription, to another path, then the first one ends.
		other, _ := k.subscribe(t, cl, EventSubscription{Name: "ticket.created"}, "/b", 0)
		if other.ID == res.ID {
			t.Fatal("two URLs share an id")
		}
		if err := cl.UnsubscribeEvents(ctx, sub, d.URL); err != nil {
			t.Fatal(err)
		}
		err = cl.UnsubscribeEvents(ctx, sub, d.URL)
		wantCode(t, err, CodeNotFound, "kind", "subscription")
		publishTickets(t, topic, 5, 6)
		m := k.next(t)
		if m.SubscriptionID != other.ID {
			t.Fatalf("after unsubscribing, %s got a delivery", m.SubscriptionID)
		}
		select {
		case m := <-k.got:
			t.Fatalf("unexpected delivery %+v", m)
		default:
		}
	})
}

// TestWebhookSubscribeRefused: what events/subscribe refuses, and why.
func TestWebhookSubscribeRefused(t *testing.T) {
	t.Parallel()
	eachWebhookEra(t, func(t *testing.T, v string) {
		k := newWebhookSink(t)
		s, _ := webhookTestServer(t, k, nil)
		alice := connectAs(t, s, v, "alice")
		anonymous := connectAs(t, s, v, "")
		ctx := context.Background()
		good := WebhookDelivery{URL: k.ts.URL + "/hook", Secret: NewWebhookSecret()}
		if err := k.receiver.AddSecret(good.Secret); err != nil {
			t.Fatal(err)
		}
		tickets := EventSubscription{Name: "ticket.created"}

		_, err := anonymous.SubscribeEvents(ctx, tickets, good, 0)
		wantCode(t, err, CodeForbidden, "", "")
		_, err = pair(t, s, WithProtocolVersion(v)).SubscribeEvents(ctx, tickets, good, 0) // in memory: no principal
		wantCode(t, err, CodeForbidden, "", "")
		err = anonymous.UnsubscribeEvents(ctx, tickets, good.URL)
		wantCode(t, err, CodeForbidden, "", "")

		_, err = alice.SubscribeEvents(ctx, EventSubscription{Name: "no.such"}, good, 0)
		wantCode(t, err, CodeNotFound, "kind", "event")
		_, err = alice.SubscribeEvents(ctx, EventSubscription{Name: "build.finished"}, good, 0)
		wantCode(t, err, CodeInvalidParams, "", "") // branch is required
		for _, d := range []WebhookDelivery{
			{URL: strings.Replace(good.URL, "https:", "http:", 1), Secret: good.Secret},
			{URL: "https://", Secret: good.Secret},
			{URL: "https://user:pw@example.com/hook", Secret: good.Secret},
			{URL: "https://example.com/" + strings.Repeat("a", maxWebhookURLBytes), Secret: good.Secret},
			{URL: good.URL, Secret: ""},
			{URL: good.URL, Secret: "whsec_c2hvcnQ="},                          // 5 bytes
			{URL: good.URL, Secret: strings.TrimPrefix(good.Secret, "whsec_")}, // no prefix
		} {
			_, err = alice.SubscribeEvents(ctx, tickets, d, 0)
			wantCode(t, err, CodeInvalidParams, "", "")
		}
		err = alice.UnsubscribeEvents(ctx, tickets, good.URL)
		wantCode(t, err, CodeNotFound, "kind", "subscription")

		// An endpoint that does not echo the challenge is not verified.
		mute := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"challenge":"not it"}`))
		}))
		defer mute.Close()
		s2, _ := webhookTestServer(t, k, func(o *WebhookOptions) { o.Client = mute.Client() })
		_, err = connectAs(t, s2, v, "alice").SubscribeEvents(ctx, tickets, WebhookDelivery{URL: mute.URL, Secret: good.Secret}, 0)
		wantCode(t, err, CodeCallbackEndpointError, "reason", "challenge_failed")

		// A client that does not trust the endpoint's certificate.
		s4, _ := webhookTestServer(t, k, func(o *WebhookOptions) { o.Client = &http.Client{Transport: &http.Transport{}} })
		_, err = connectAs(t, s4, v, "alice").SubscribeEvents(ctx, tickets, good, 0)
		wantCode(t, err, CodeCallbackEndpointError, "reason", "tls_error")

		// The default client refuses loopback, so the sink cannot be
		// verified by a server that uses it.
		s3 := NewServer(Implementation{Name: "events", Version: "1"}, WithWebhooks(WebhookOptions{Context: t.Context()}))
		AddEventType[ticket](s3, "ticket.created", "")
		_, err = connectAs(t, s3, v, "alice").SubscribeEvents(ctx, tickets, good, 0)
		wantCode(t, err, CodeCallbackEndpointError, "reason", "connection_refused")
	})
}

// TestWebhookPerPrincipalLimit: a principal may hold exactly PerPrincipal
// subscriptions; one more is ResourceExhausted, while refreshing one it
// holds and another principal's subscriptions still succeed.
func TestWebhookPerPrincipalLimit(t *testing.T) {
	t.Parallel()
	k := newWebhookSink(t)
	s, _ := webhookTestServer(t, k, func(o *WebhookOptions) { o.PerPrincipal = 2 })
	alice := connectAs(t, s, Version20260728, "alice")
	bob := connectAs(t, s, Version20260728, "bob")
	ctx := context.Background()
	d := WebhookDelivery{URL: k.ts.URL + "/hook", Secret: NewWebhookSecret()}
	if err := k.receiver.AddSecret(d.Secret); err != nil {
		t.Fatal(err)
	}
	build := func(branch string) EventSubscription {
		return EventSubscription{Name: "build.finished", Arguments: map[string]string{"branch": branch}}
	}
	for _, b := range []string{"main", "dev"} {
		if _, err := alice.SubscribeEvents(ctx, build(b), d, 0); err != nil {
			t.Fatalf("subscription %s: %v", b, err)
		}
	}
	_, err := alice.SubscribeEvents(ctx, build("next"), d, 0)
	wantCode(t, err, CodeResourceExhausted, "limit", "subscriptions")
	if _, err := alice.SubscribeEvents(ctx, build("main"), d, 0); err != nil {
		t.Fatalf("refresh at the limit: %v", err)
	}
	if _, err := bob.SubscribeEvents(ctx, build("next"), d, 0); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	if err := alice.UnsubscribeEvents(ctx, build("dev"), d.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SubscribeEvents(ctx, build("next"), d, 0); err != nil {
		t.Fatalf("after unsubscribing one: %v", err)
	}
}

// tamperOnce is a RoundTripper that changes the body of the first event
// delivery it carries, then carries the rest as they are.
type tamperOnce struct {
	base http.RoundTripper
	mu   sync.Mutex
	done bool
}

func (tr *tamperOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tamper := !tr.done && strings.HasPrefix(r.Header.Get("webhook-id"), "evt_")
	tr.done = tr.done || tamper
	tr.mu.Unlock()
	if tamper {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		body = []byte(strings.Replace(string(body), `"t"`, `"T"`, 1))
		r = r.Clone(r.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	return tr.base.RoundTrip(r)
}

// TestWebhookTamperedRefused: a delivery whose body was changed on the
// way fails the receiver's signature check (401), never reaches the
// callback, and the server's retry delivers the true one; on both eras.
func TestWebhookTamperedRefused(t *testing.T) {
	t.Parallel()
	eachWebhookEra(t, func(t *testing.T, v string) {
		refused := 0
		var mu sync.Mutex
		k := newWrappedWebhookSink(t, func(inner http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rw := &statusRecorder{ResponseWriter: w}
				inner.ServeHTTP(rw, r)
				if rw.status == http.StatusUnauthorized {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			})
		})
		tr := &tamperOnce{base: k.ts.Client().Transport}
		s, topic := webhookTestServer(t, k, func(o *WebhookOptions) { o.Client = &http.Client{Transport: tr} })
		cl := connectAs(t, s, v, "alice")
		k.subscribe(t, cl, EventSubscription{Name: "ticket.created"}, "/hook", 0)
		publishTickets(t, topic, 0, 1)
		m := k.next(t)
		var tk ticket
		if err := json.Unmarshal(m.Event.Data, &tk); err != nil || tk.Title != "t" {
			t.Fatalf("delivered %s", m.Event.Data)
		}
		mu.Lock()
		defer mu.Unlock()
		if refused != 1 {
			t.Fatalf("the receiver refused %d deliveries, want the tampered one", refused)
		}
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// TestEventsWithoutWebhooksLinksNone: a server that declares an event
// type but is not made WithWebhooks links no code of the webhook rooms;
// one made WithWebhooks does, so the check sees what it looks for.
func TestEventsWithoutWebhooksLinksNone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	const program = `package main

import (
	"context"
	"log"

	"github.com/e6ac58cb/mcp"
)

func main() {
	srv := mcp.NewServer(mcp.Implementation{Name: "events", Version: "1.0.0"}%s)
	srv.AddEventType(mcp.EventType{Name: "ticket.created"})
	log.Fatal(srv.Serve(context.Background(), mcp.StdioTransport()))
}
`
	webhookRooms := func(bin string) []string {
		var found []string
		for _, r := range linkedRooms(t, bin) {
			if strings.HasPrefix(r, "events_webhook") {
				found = append(found, r)
			}
		}
		return found
	}
	if rooms := webhookRooms(buildUserProgram(t, fmt.Sprintf(program, ""))); len(rooms) > 0 {
		t.Errorf("a server without webhooks links:\n%s", strings.Join(rooms, "\n"))
	}
	if rooms := webhookRooms(buildUserProgram(t, fmt.Sprintf(program, ", mcp.WithWebhooks(mcp.WebhookOptions{})"))); len(rooms) == 0 {
		t.Error("a server made WithWebhooks links no webhook code; the check sees nothing")
	}
}

// TestKeepEventsSubscribed: the loop subscribes, then refreshes halfway to
// each grant, keeping the id, until its context ends.
func TestKeepEventsSubscribed(t *testing.T) {
	t.Parallel()
	k := newWebhookSink(t)
	s, _ := webhookTestServer(t, k, func(o *WebhookOptions) { o.MinTTL, o.MaxTTL = 2*time.Second, 2*time.Second })
	cl := connectAs(t, s, Version20260728, "alice")
	d := WebhookDelivery{URL: k.ts.URL + "/hook", Secret: NewWebhookSecret()}
	k.receiver.AddSecret(d.Secret)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	var results []*EventSubscribeResult
	err := cl.KeepEventsSubscribed(ctx, EventSubscription{Name: "ticket.created"}, d, time.Hour, nil, func(r *EventSubscribeResult) {
		results = append(results, r)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("KeepEventsSubscribed returned %v", err)
	}
	if len(results) < 2 {
		t.Fatalf("%d subscribe calls in 2.5s of a 2s grant, want a refresh", len(results))
	}
	for _, r := range results[1:] {
		if r.ID != results[0].ID || r.DeliveryStatus == nil || !r.RefreshBefore.After(*results[0].RefreshBefore) {
			t.Fatalf("refresh %+v after %+v", r, results[0])
		}
	}
}

// TestWebhookChallengeLimit: a host gets at most webhookChallenges
// verification POSTs a minute, whatever the path; other hosts are not
// held back, and the next minute the count starts again.
func TestWebhookChallengeLimit(t *testing.T) {
	t.Parallel()
	s, _ := eventsServer(WithWebhooks(WebhookOptions{Context: t.Context()}))
	w := s.eventsOn().webhooks.(*webhookServer)
	now := time.Now()
	for i := range webhookChallenges {
		if !w.mayChallenge("https://victim.example/p"+fmt.Sprint(i), now) {
			t.Fatalf("challenge %d refused", i)
		}
	}
	if w.mayChallenge("https://VICTIM.example/other", now) {
		t.Fatal("one challenge over the limit allowed")
	}
	if !w.mayChallenge("https://other.example/", now) {
		t.Fatal("another host held back")
	}
	if !w.mayChallenge("https://victim.example/p", now.Add(time.Minute)) {
		t.Fatal("the next minute still refused")
	}
}

// TestWebhookPublicAddress: the default client's dialer refuses what is
// not globally routable and lets the rest through.
func TestWebhookPublicAddress(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:443": false, "[::1]:443": false, "10.1.2.3:443": false, "172.16.0.1:443": false,
		"192.168.1.1:443": false, "169.254.169.254:80": false, "0.0.0.0:443": false, "[::]:443": false,
		"[fe80::1]:443": false, "[fc00::1]:443": false, "[::ffff:127.0.0.1]:443": false, "100.64.0.1:443": false,
		"[64:ff9b::a00:1]:443": false, "255.255.255.255:443": false, "224.0.0.1:443": false, "not-an-ip:443": false,
		"93.184.216.34:443": true, "[2606:4700::1111]:443": true, "8.8.8.8:53": true,
	} {
		if got := refusePrivateAddress("tcp", addr, nil) == nil; got != want {
			t.Errorf("%s: allowed %v, want %v", addr, got, want)
		}
	}
}

// TestWebhookArgumentsCanonical: arguments that say the same thing make
// the same key, spelled as RFC 8785 does, which the Filter gets too.
func TestWebhookArgumentsCanonical(t *testing.T) {
	t.Parallel()
	want := `{"a":"<x>","b":5,"c":[1.5,true,null]}`
	for _, in := range []string{
		`{"b":5,"a":"<x>","c":[1.5,true,null]}`,
		` { "c" : [ 15e-1 , true , null ] , "b" : 5.0 , "a" : "\u003cx>" } `,
		`{"a":"<x>","b":0.5e1,"c":[1.50,true,null]}`,
	} {
		got, err := webhookArguments(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := webhookArguments(json.RawMessage(`{"a":`)); err == nil {
		t.Error("broken JSON was spelled")
	}
}
