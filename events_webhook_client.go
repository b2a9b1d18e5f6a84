package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The client's side of webhooks: events/subscribe and events/unsubscribe,
// a loop that keeps a subscription refreshed, and WebhookReceiver, the
// http.Handler at the callback URL that verifies what the server POSTs and
// hands it on. Nothing here is linked into a client that does not use it.

// WebhookDelivery is where a webhook subscription delivers. Client only.
type WebhookDelivery struct {
	// URL is the https callback URL.
	URL string
	// Secret signs the deliveries: "whsec_" and the base64 of 24 to 64
	// random bytes; see NewWebhookSecret.
	Secret string
}

// NewWebhookSecret returns a fresh Standard Webhooks secret of 32 random
// bytes, for [WebhookDelivery.Secret]. Client only.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// webhookParams returns the params of events/subscribe (secret and ttl
// given) or events/unsubscribe.
func (sub *EventSubscription) webhookParams(delivery WebhookDelivery, ttl time.Duration, subscribe bool) (json.RawMessage, error) {
	args, err := marshalObject(sub.Arguments)
	if err != nil {
		return nil, errorf("the arguments of event %s: %w", sub.Name, err)
	}
	p := webhookSubscribeParams{Name: sub.Name, Arguments: args}
	p.Delivery.URL = delivery.URL
	if subscribe {
		p.Delivery.Mode, p.Delivery.Secret = EventDeliveryWebhook, delivery.Secret
		if sub.Cursor != "" {
			p.Cursor = &sub.Cursor
		}
		if sub.MaxAge > 0 {
			ms := sub.MaxAge.Milliseconds()
			p.MaxAgeMs = &ms
		}
		switch {
		case ttl < 0:
			p.TTLMs = json.RawMessage("null")
		case ttl > 0:
			p.TTLMs = json.RawMessage(strconv.FormatInt(max(ttl.Milliseconds(), 1), 10))
		}
	}
	return json.Marshal(&p)
}

// SubscribeEvents sends events/subscribe: the server is to POST the
// occurrences of sub (from sub.Cursor, or from now) to delivery.URL,
// signed with delivery.Secret, until the subscription lapses. ttl is the
// lifetime suggested: 0 lets the server choose, a negative ttl asks for no
// expiry; the server's grant is the result's RefreshBefore. Calling it
// again with the same name, arguments and URL refreshes the subscription;
// pass the last cursor received. The server verifies a new URL first by
// POSTing a challenge to it, which a [WebhookReceiver] that knows the
// secret answers. Client only.
func (c *Client) SubscribeEvents(ctx context.Context, sub EventSubscription, delivery WebhookDelivery, ttl time.Duration, opts ...CallOption) (*EventSubscribeResult, error) {
	params, err := sub.webhookParams(delivery, ttl, true)
	if err != nil {
		return nil, err
	}
	return requestAs[EventSubscribeResult](ctx, c, "events/subscribe", params, opts)
}

// UnsubscribeEvents sends events/unsubscribe: deliveries of the
// subscription of sub's name and arguments to url stop. A subscription the
// server does not know is a CodeNotFound *Error. Client only.
func (c *Client) UnsubscribeEvents(ctx context.Context, sub EventSubscription, url string, opts ...CallOption) error {
	params, err := sub.webhookParams(WebhookDelivery{URL: url}, 0, false)
	if err != nil {
		return err
	}
	return c.SendRequest(ctx, "events/unsubscribe", params, nil, opts...)
}

// KeepEventsSubscribed subscribes as SubscribeEvents does and refreshes
// the subscription halfway to each RefreshBefore, until ctx ends or the
// server refuses (an *Error), calling refreshed with each result. cursor,
// when not nil, gives the latest cursor to pass on each refresh (what the
// receiver last persisted); else the last result's cursor is passed. A
// refresh that fails otherwise is tried again sooner. It returns ctx's
// error or the server's refusal. Client only.
func (c *Client) KeepEventsSubscribed(ctx context.Context, sub EventSubscription, delivery WebhookDelivery, ttl time.Duration, cursor func() string, refreshed func(*EventSubscribeResult)) error {
	var deadline time.Time
	for {
		if cursor != nil {
			if cur := cursor(); cur != "" {
				sub.Cursor = cur
			}
		}
		res, err := c.SubscribeEvents(ctx, sub, delivery, ttl)
		wait := time.Second
		var rpcErr *Error
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &rpcErr), errors.Is(err, ErrClosed):
			return err
		case err != nil:
			if !deadline.IsZero() {
				wait = max(time.Until(deadline)/4, time.Second)
			}
		default:
			if res.Cursor != "" {
				sub.Cursor = res.Cursor
			}
			if refreshed != nil {
				refreshed(res)
			}
			if res.RefreshBefore == nil {
				<-ctx.Done()
				return ctx.Err()
			}
			deadline = *res.RefreshBefore
			wait = max(time.Until(deadline)/2, time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// WebhookMessage is what a [WebhookReceiver] hands on: an occurrence, or
// a gap or terminated envelope. Client only.
type WebhookMessage struct {
	// SubscriptionID is the subscription it was delivered for.
	SubscriptionID string
	// Type is "" for an occurrence, else "gap" or "terminated".
	Type string
	// Event is the occurrence (Type "").
	Event *EventOccurrence
	// Cursor is the position to persist and pass on the next refresh:
	// the occurrence's watermark, or a gap's fresh cursor (events were
	// skipped: treat it as truncated).
	Cursor string
	// Error says why the subscription ended (Type "terminated").
	Error *Error
}

// Bounds of a WebhookReceiver.
const (
	// maxWebhookBodyBytes bounds a delivery's body: an occurrence's
	// payload and room for the rest of it.
	maxWebhookBodyBytes = MaxEventBytes + 64<<10
	// webhookTolerance is how far a delivery's timestamp may be off.
	webhookTolerance = 5 * time.Minute
	// maxWebhookSignatures bounds the signatures checked of one delivery.
	maxWebhookSignatures = 8
	// maxWebhookPending bounds the secrets that await an id, and
	// maxWebhookBound the ids a receiver ties secrets to (past it a
	// pending secret still verifies, it is just not tied to a new id).
	maxWebhookPending = 256
	maxWebhookBound   = 100_000
	// webhookSeen is how many delivery ids are remembered to drop
	// duplicates.
	webhookSeen = 4096
)

// WebhookReceiver is the http.Handler at a webhook callback URL. Client
// only. It verifies each POST's Standard Webhooks signature against the
// secrets of its subscription (any of several "v1," signatures; a
// timestamp more than five minutes off is refused), drops a delivery id it
// has seen, answers the server's verification challenge, and hands
// occurrences and gap and terminated envelopes to its callback. It serves
// many subscriptions: secrets are found by the X-MCP-Subscription-Id
// header. A secret added with AddSecret is not tied to an id yet (a
// subscription being made); the first delivery it verifies ties it to
// that delivery's id.
type WebhookReceiver struct {
	handle func(context.Context, WebhookMessage) error
	now    func() time.Time

	mu      sync.Mutex
	bound   map[string][][]byte // subscription id → keys, newest last
	pending [][]byte
	seen    recentIDs
}

// NewWebhookReceiver returns a receiver that calls handle with each
// verified message, one delivery at a time per request. A nil error from
// handle acknowledges the delivery (200); an error answers 500, and the
// server delivers it again later. Client only.
func NewWebhookReceiver(handle func(context.Context, WebhookMessage) error) *WebhookReceiver {
	return &WebhookReceiver{handle: handle, now: time.Now, bound: make(map[string][][]byte)}
}

// AddSecret adds the secret of a subscription about to be made (or of a
// rotation), before its id is known. Client only.
func (r *WebhookReceiver) AddSecret(secret string) error {
	key, err := webhookSecretKey(secret)
	if err != nil {
		return errorf("webhook secret: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) >= maxWebhookPending {
		r.pending = r.pending[1:]
	}
	r.pending = append(r.pending, key)
	return nil
}

// Bind ties secret to subscription id, as SubscribeEvents returned it;
// the id keeps its two newest secrets. It fails when the receiver already
// serves 100,000 ids. Client only.
func (r *WebhookReceiver) Bind(id, secret string) error {
	key, err := webhookSecretKey(secret)
	if err != nil {
		return errorf("webhook secret: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.bindLocked(id, key) {
		return errorf("webhook receiver: more than %d subscriptions", maxWebhookBound)
	}
	return nil
}

// bindLocked ties key to id; it reports false when the receiver has as
// many ids as it may.
func (r *WebhookReceiver) bindLocked(id string, key []byte) bool {
	keys, ok := r.bound[id]
	if !ok && len(r.bound) >= maxWebhookBound {
		return false
	}
	for _, k := range keys {
		if hmac.Equal(k, key) {
			return true
		}
	}
	if len(keys) >= 2 {
		keys = keys[len(keys)-1:]
	}
	r.bound[id] = append(keys, key)
	return true
}

// Remove forgets subscription id: its deliveries are answered 503 from now
// on. Client only.
func (r *WebhookReceiver) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bound, id)
}

// ServeHTTP receives one delivery. Client only.
func (r *WebhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	msgID, ts, sigs, subID := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), req.Header.Get("X-MCP-Subscription-Id")
	if msgID == "" || ts == "" || sigs == "" || subID == "" || len(msgID) > maxEventNameBytes || len(subID) > maxEventNameBytes || len(sigs) > 2048 {
		http.Error(w, "missing or oversized webhook headers", http.StatusBadRequest)
		return
	}
	if !freshWebhookTimestamp(ts, r.now()) {
		http.Error(w, "webhook-timestamp is not within five minutes", http.StatusBadRequest)
		return
	}
	body, err := readBounded(w, req)
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	switch r.check(subID, msgID, ts, sigs, body) {
	case webhookUnknown:
		http.Error(w, "unknown subscription", http.StatusServiceUnavailable)
		return
	case webhookForged:
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var head struct {
		Type      *string `json:"type"`
		Challenge string  `json:"challenge"`
		Cursor    string  `json:"cursor"`
		Error     *Error  `json:"error"`
	}
	if d := trimJSONSpace(body); len(d) == 0 || d[0] != '{' || json.Unmarshal(d, &head) != nil {
		http.Error(w, "the body is not a JSON object", http.StatusBadRequest)
		return
	}
	msg := WebhookMessage{SubscriptionID: subID}
	if head.Type != nil {
		msg.Type = *head.Type
	}
	switch msg.Type {
	case "verification":
		// Consumed here: the echo proves that this endpoint wants the
		// deliveries.
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": head.Challenge})
		return
	case "gap":
		msg.Cursor = head.Cursor
	case "terminated":
		msg.Error = head.Error
		if msg.Error == nil {
			msg.Error = &Error{Code: CodeInternalError, Message: "the subscription was terminated"}
		}
	case "":
		var e EventOccurrence
		if json.Unmarshal(body, &e) != nil || e.EventID == "" || e.Name == "" {
			http.Error(w, "the body is not an event occurrence", http.StatusBadRequest)
			return
		}
		msg.Event, msg.Cursor = &e, e.Cursor
	default:
		http.Error(w, "unknown envelope type", http.StatusBadRequest)
		return
	}
	seenKey := subID + "\x00" + msgID
	r.mu.Lock()
	dup := r.seen.set[seenKey]
	r.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusOK) // delivered before: acknowledged again
		return
	}
	if err := r.handle(req.Context(), msg); err != nil {
		http.Error(w, "not accepted", http.StatusInternalServerError)
		return
	}
	r.mu.Lock()
	r.seen.add(seenKey, webhookSeen)
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// readBounded reads a request body of at most maxWebhookBodyBytes.
func readBounded(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, req.Body, maxWebhookBodyBytes)
	defer body.Close()
	return io.ReadAll(body)
}

// freshWebhookTimestamp reports whether a webhook-timestamp (Unix
// seconds) is within webhookTolerance of now.
func freshWebhookTimestamp(ts string, now time.Time) bool {
	if len(ts) > 12 {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := now.Unix() - sec
	return d <= int64(webhookTolerance/time.Second) && d >= -int64(webhookTolerance/time.Second)
}

// webhookCheck is the outcome of checking a delivery's signature.
type webhookCheck int

const (
	webhookVerified webhookCheck = iota
	webhookUnknown               // no secret of the subscription, none pending that verifies
	webhookForged                // the subscription's secrets do not verify it
)

// check verifies a delivery against its subscription's secrets, then the
// pending ones; a pending one that verifies is tied to the id.
func (r *WebhookReceiver) check(subID, msgID, ts, header string, body []byte) webhookCheck {
	r.mu.Lock()
	keys := r.bound[subID]
	pending := r.pending
	r.mu.Unlock()
	if verifyWebhookSignature(keys, msgID, ts, body, header) != nil {
		return webhookVerified
	}
	if key := verifyWebhookSignature(pending, msgID, ts, body, header); key != nil {
		r.mu.Lock()
		r.bindLocked(subID, key)
		r.mu.Unlock()
		return webhookVerified
	}
	if len(keys) == 0 {
		return webhookUnknown
	}
	return webhookForged
}

// verifyWebhookSignature returns the key among keys that one of the
// header's "v1," signatures verifies, compared in constant time; nil when
// none does.
func verifyWebhookSignature(keys [][]byte, msgID, ts string, body []byte, header string) []byte {
	if len(keys) == 0 {
		return nil
	}
	var sigs [][]byte
	for _, f := range strings.Fields(header) {
		if len(sigs) == maxWebhookSignatures {
			break
		}
		b64, ok := strings.CutPrefix(f, "v1,")
		if !ok {
			continue // another scheme (v1a, say)
		}
		if sig, err := base64.StdEncoding.DecodeString(b64); err == nil {
			sigs = append(sigs, sig)
		}
	}
	for _, key := range keys {
		want := webhookMAC(key, msgID, ts, body)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return key
			}
		}
	}
	return nil
}
