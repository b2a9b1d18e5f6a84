package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Webhook delivery of events (events/subscribe, events/unsubscribe): the
// client registers an https URL and a secret under a TTL it refreshes, and
// the server POSTs each occurrence there, signed as Standard Webhooks
// sign. This room holds the options, the two methods and the checks of
// what a peer sends; events_webhook_delivery.go delivers, and
// events_webhook_store.go keeps the subscriptions. None of it is linked
// into a server that does not call WithWebhooks: the events core reaches
// it only through the hook that option installs (serverEvents.webhooks).

// Error codes of the Events extension besides CodeNotFound. Both sides.
const (
	// CodeForbidden: the principal may not do this; events/subscribe
	// without an authenticated principal.
	CodeForbidden = -32024
	// CodeResourceExhausted: a server limit was reached; data.limit names
	// it ("subscriptions"), data.max gives it.
	CodeResourceExhausted = -32025
	// CodeCallbackEndpointError: the webhook endpoint failed verification
	// or could not be reached; data.reason is a WebhookStatus.LastError
	// category.
	CodeCallbackEndpointError = -32027
)

// Defaults of [WebhookOptions]. Server only.
const (
	DefaultWebhookTTL             = time.Hour
	DefaultWebhookMinTTL          = time.Minute
	DefaultWebhookMaxTTL          = 24 * time.Hour
	DefaultWebhooksPerPrincipal   = 100
	DefaultWebhookAttempts        = 5
	DefaultWebhookRetryWindow     = 15 * time.Minute
	DefaultWebhookFirstRetry      = 30 * time.Second
	DefaultWebhookTimeout         = 5 * time.Second
	DefaultWebhookRescan          = 5 * time.Second
	DefaultWebhookLease           = 30 * time.Second
	DefaultWebhookSuspendAfter    = 3
	DefaultWebhookConcurrent      = 64
	DefaultWebhookHeld            = DefaultWebhookStoreSize
	DefaultWebhookVerificationTTL = 24 * time.Hour
)

// Bounds on what a client sends to events/subscribe.
const (
	maxWebhookURLBytes    = 2048
	maxWebhookSecretBytes = 6 + 88 // "whsec_" and the base64 of 64 bytes
	// webhookRotationGrace is how long a replaced secret still signs.
	webhookRotationGrace = 5 * time.Minute
	// maxWebhookVerified bounds the verification cache.
	maxWebhookVerified = 10_000
	// maxWebhookResponseBytes is what is read of an endpoint's answer.
	maxWebhookResponseBytes = 4 << 10
	// webhookChallenges bounds the verification POSTs to one host per
	// minute, so that subscribing cannot be used to flood a host.
	webhookChallenges = 10
	// maxWebhookChallengeHosts bounds the hosts that count is kept for.
	maxWebhookChallengeHosts = 10_000
)

// WebhookOptions configure webhook delivery; see [WithWebhooks]. Server
// only. The zero value is the defaults.
type WebhookOptions struct {
	// Context bounds delivery: once it ends the delivery loop stops and
	// gives up its leases (the subscriptions stay in the store). Nil:
	// delivery runs while any subscription is left.
	Context context.Context
	// Store keeps the subscriptions; nil: NewMemoryWebhookStore(0).
	Store WebhookStore
	// Client makes the deliveries; nil: one that refuses to connect to
	// loopback, private, link-local and unspecified addresses, follows
	// no redirect and times out (see NewWebhookHTTPClient).
	Client *http.Client
	// TTL is the lifetime granted when the client suggests none; MinTTL
	// and MaxTTL clamp a suggestion. A request for no expiry is granted
	// MaxTTL: this package keeps no subscription beyond a finite grant.
	TTL, MinTTL, MaxTTL time.Duration
	// PerPrincipal bounds one principal's subscriptions.
	PerPrincipal int
	// Attempts bounds the attempts to deliver one occurrence, and
	// RetryWindow the time they may take; the first retry comes after
	// FirstRetry, each next one twice as late.
	Attempts    int
	RetryWindow time.Duration
	FirstRetry  time.Duration
	// Timeout bounds one POST, answer included.
	Timeout time.Duration
	// SuspendAfter suspends delivery to a subscription after that many
	// occurrences in a row were given up on; a refresh resumes it from
	// the last of them.
	SuspendAfter int
	// Rescan is how often delivery reads the log without being woken, to
	// find what other instances appended.
	Rescan time.Duration
	// Lease is how long an instance holds a subscription it delivers
	// without renewing it.
	Lease time.Duration
	// Concurrent bounds the POSTs one instance has under way at once.
	Concurrent int
	// Held bounds the subscriptions one instance delivers (holds the
	// leases of), each with its worker.
	Held int
	// VerificationTTL is how long a verified (principal, URL) needs no
	// new challenge.
	VerificationTTL time.Duration
}

// WithWebhooks offers webhook delivery of events (events/subscribe and
// events/unsubscribe) with the given options: event types then list
// "webhook" among their delivery modes. Only a principal that the HTTP
// handler's Authorizer named may subscribe. It configures a server
// (NewServer).
func WithWebhooks(o WebhookOptions) ServerOption {
	return serverOption(func(c *config) {
		c.server.eventWebhooks = func(s *Server, ev *serverEvents) eventWebhooks { return newWebhookServer(s, ev, o) }
	})
}

// withDefaults fills in the zero fields.
func (o WebhookOptions) withDefaults() WebhookOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.TTL, DefaultWebhookTTL)
	def(&o.MinTTL, DefaultWebhookMinTTL)
	def(&o.MaxTTL, DefaultWebhookMaxTTL)
	o.MaxTTL = max(o.MaxTTL, o.MinTTL)
	o.TTL = min(max(o.TTL, o.MinTTL), o.MaxTTL)
	def(&o.RetryWindow, DefaultWebhookRetryWindow)
	def(&o.FirstRetry, DefaultWebhookFirstRetry)
	def(&o.Timeout, DefaultWebhookTimeout)
	def(&o.Rescan, DefaultWebhookRescan)
	def(&o.Lease, DefaultWebhookLease)
	def(&o.VerificationTTL, DefaultWebhookVerificationTTL)
	if o.PerPrincipal <= 0 {
		o.PerPrincipal = DefaultWebhooksPerPrincipal
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultWebhookAttempts
	}
	if o.SuspendAfter <= 0 {
		o.SuspendAfter = DefaultWebhookSuspendAfter
	}
	if o.Concurrent <= 0 {
		o.Concurrent = DefaultWebhookConcurrent
	}
	if o.Held <= 0 {
		o.Held = DefaultWebhookHeld
	}
	if o.Store == nil {
		o.Store = NewMemoryWebhookStore(0)
	}
	if o.Client == nil {
		o.Client = NewWebhookHTTPClient(o.Timeout)
	}
	return o
}

// webhookServer is a server's webhook delivery: the methods, the
// verification cache, and the delivery loop with its workers.
type webhookServer struct {
	srv   *Server
	ev    *serverEvents
	o     WebhookOptions
	owner string        // this instance, as leases name it
	slots chan struct{} // one per POST under way (Concurrent)

	mu        sync.Mutex
	running   bool          // the delivery loop runs
	lastStart time.Time     // when it last started
	stops     uint64        // counts the workers stopped by unsubscribing
	kick      chan struct{} // wakes the loop; holds one wake-up
	workers   map[string]*webhookWorker
	verified  map[string]time.Time // principal "\x00" URL → until
	// challenges counts the verification POSTs per host in the current
	// minute, which started at challengeMinute.
	challenges      map[string]int
	challengeMinute time.Time
}

func newWebhookServer(s *Server, ev *serverEvents, o WebhookOptions) *webhookServer {
	o = o.withDefaults()
	return &webhookServer{
		srv: s, ev: ev, o: o, owner: "wh_" + randomID()[:16], slots: make(chan struct{}, o.Concurrent),
		kick: make(chan struct{}, 1), workers: make(map[string]*webhookWorker), verified: make(map[string]time.Time),
		challenges: make(map[string]int),
	}
}

// serve serves events/subscribe and events/unsubscribe.
func (w *webhookServer) serve(ctx context.Context, method string, params json.RawMessage, info *RequestInfo) (any, error) {
	principal := info.Principal()
	if principal == "" {
		return nil, NewError(CodeForbidden, "Forbidden: webhook subscriptions need an authenticated principal", nil)
	}
	switch method {
	case "events/subscribe":
		return w.subscribe(ctx, principal, params)
	case "events/unsubscribe":
		return w.unsubscribe(ctx, principal, params)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

// webhookSubscribeParams is the params of events/subscribe and
// events/unsubscribe.
type webhookSubscribeParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Delivery  struct {
		Mode   string `json:"mode,omitempty"`
		URL    string `json:"url"`
		Secret string `json:"secret,omitempty"`
	} `json:"delivery"`
	Cursor   *string         `json:"cursor,omitempty"`
	MaxAgeMs *int64          `json:"maxAgeMs,omitempty"`
	TTLMs    json.RawMessage `json:"ttlMs,omitempty"` // absent: default; null: no expiry
}

// EventSubscribeResult is the result of events/subscribe. Both sides: a
// server answers it; [Client.SubscribeEvents] returns it.
type EventSubscribeResult struct {
	// ID is the subscription's id, derived from its key; deliveries
	// carry it in X-MCP-Subscription-Id.
	ID string `json:"id"`
	// RefreshBefore is when the subscription lapses unless refreshed;
	// nil: never.
	RefreshBefore *time.Time `json:"refreshBefore"`
	// Cursor is the watermark, safe to persist and pass on the next
	// refresh.
	Cursor string `json:"cursor,omitempty"`
	// Truncated: delivery starts later than the cursor given.
	Truncated bool `json:"truncated"`
	// DeliveryStatus is how delivery fared, on a refresh.
	DeliveryStatus *WebhookStatus `json:"deliveryStatus,omitempty"`
}

// key decodes and checks the params; it returns the subscription's id and
// canonical arguments.
func (w *webhookServer) key(principal string, params json.RawMessage, p *webhookSubscribeParams) (string, json.RawMessage, error) {
	if err := decodeParams(params, p); err != nil {
		return "", nil, err
	}
	if p.Delivery.Mode != "" && p.Delivery.Mode != EventDeliveryWebhook {
		return "", nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: delivery.mode must be webhook"}
	}
	sub := eventSubscription{Name: p.Name, Arguments: p.Arguments, Cursor: p.Cursor}
	if err := w.ev.check(&sub); err != nil {
		return "", nil, err
	}
	u, err := checkWebhookURL(p.Delivery.URL)
	if err != nil {
		return "", nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: delivery.url " + err.Error()}
	}
	p.Delivery.URL = u
	args := json.RawMessage("{}")
	if a := trimJSONSpace(p.Arguments); len(a) > 0 && string(a) != "null" {
		if args, err = webhookArguments(a); err != nil {
			return "", nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: arguments: " + err.Error()}
		}
	}
	return webhookID(principal, u, p.Name, args), args, nil
}

// webhookArguments spells a subscription's arguments the one way its key
// compares them, the SEP's canonical JSON (RFC 8785): members sorted, no
// insignificant space, each number as a float64 spells it (as JavaScript
// does), so 5, 5.0 and 0.5e1 are all 5. The event type's Filter gets them
// so too.
func webhookArguments(raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// webhookID derives a subscription's id from its key: a truncated SHA-256
// of the key's parts, each quoted so that none can run into the next.
func webhookID(principal, url, name string, args []byte) string {
	h := sha256.New()
	for _, s := range []string{principal, url, name, string(args)} {
		h.Write([]byte(strconv.Quote(s)))
		h.Write([]byte{'\n'})
	}
	return "sub_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// subscribe serves events/subscribe: an idempotent upsert of the
// subscription, after verifying a (principal, URL) not verified yet.
func (w *webhookServer) subscribe(ctx context.Context, principal string, params json.RawMessage) (any, error) {
	var p webhookSubscribeParams
	id, args, err := w.key(principal, params, &p)
	if err != nil {
		return nil, err
	}
	if _, err := webhookSecretKey(p.Delivery.Secret); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: delivery.secret " + err.Error()}
	}
	now := time.Now()
	rec := WebhookRecord{
		ID: id, Principal: principal, URL: p.Delivery.URL, Name: p.Name, Arguments: args,
		Secret: p.Delivery.Secret, PreviousUntil: now.Add(webhookRotationGrace),
	}
	ttl, err := w.grant(p.TTLMs)
	if err != nil {
		return nil, err
	}
	rec.Expires = now.Add(ttl)
	// Where delivery starts, if the subscription is new: the log says,
	// and whether that is later than the client asked.
	q := EventQuery{Name: p.Name, MaxEvents: 1}
	if p.Cursor != nil {
		q.Cursor = *p.Cursor
		if p.MaxAgeMs != nil && *p.MaxAgeMs >= 0 {
			rec.Floor = now.Add(-peerDuration(*p.MaxAgeMs, time.Millisecond))
			q.Since = rec.Floor
		}
	}
	rctx, cancel := storeCallCtx(ctx)
	page, err := w.ev.log.Read(rctx, q)
	cancel()
	if err != nil {
		return nil, eventLogError(err)
	}
	rec.Cursor = page.From
	if !w.isVerified(principal, rec.URL, now) {
		if !w.mayChallenge(rec.URL, now) {
			return nil, NewError(CodeResourceExhausted, "Resource exhausted: too many verifications of this host; try again later", map[string]any{"limit": "verifications", "max": webhookChallenges})
		}
		if err := w.verify(ctx, &rec); err != nil {
			return nil, err
		}
		w.setVerified(principal, rec.URL, now)
	}
	sctx, cancel := storeCallCtx(ctx)
	stored, before, created, err := w.o.Store.Upsert(sctx, rec, w.o.PerPrincipal)
	cancel()
	if errors.Is(err, ErrWebhookLimit) {
		return nil, NewError(CodeResourceExhausted, "Resource exhausted: too many webhook subscriptions", map[string]any{"limit": "subscriptions", "max": w.o.PerPrincipal})
	}
	if err != nil {
		return nil, internalError(err)
	}
	w.refreshed(stored)
	expires := stored.Expires
	res := &EventSubscribeResult{ID: id, RefreshBefore: &expires, Cursor: stored.Cursor}
	if created {
		res.Truncated = page.Truncated
	} else {
		res.DeliveryStatus = &before
	}
	return res, nil
}

// grant is the TTL granted for a suggestion: absent, the default; null
// (no expiry), the longest; else the suggestion clamped.
func (w *webhookServer) grant(raw json.RawMessage) (time.Duration, error) {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return w.o.TTL, nil
	}
	if string(raw) == "null" {
		return w.o.MaxTTL, nil
	}
	var ms json.Number
	if json.Unmarshal(raw, &ms) != nil {
		return 0, &Error{Code: CodeInvalidParams, Message: "Invalid params: ttlMs must be an integer or null"}
	}
	n, err := ms.Int64()
	if err != nil {
		if strings.ContainsAny(string(ms), ".eE") || ms[0] == '-' {
			return 0, &Error{Code: CodeInvalidParams, Message: "Invalid params: ttlMs must be an integer or null"}
		}
		n = math.MaxInt64 // an integer too large: as long as may be
	}
	return min(max(peerDuration(n, time.Millisecond), w.o.MinTTL), w.o.MaxTTL), nil
}

// unsubscribe serves events/unsubscribe.
func (w *webhookServer) unsubscribe(ctx context.Context, principal string, params json.RawMessage) (any, error) {
	var p webhookSubscribeParams
	id, _, err := w.key(principal, params, &p)
	if err != nil {
		return nil, err
	}
	sctx, cancel := storeCallCtx(ctx)
	found, err := w.o.Store.Delete(sctx, id)
	cancel()
	if err != nil {
		return nil, internalError(err)
	}
	w.stopWorker(id)
	if !found {
		return nil, NewError(CodeNotFound, "Subscription not found", map[string]any{"kind": "subscription"})
	}
	return json.RawMessage("{}"), nil
}

// storeCallCtx bounds a store call made for a request.
func storeCallCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, sharedCallTimeout)
}

// checkWebhookURL checks a callback URL: https, bounded, with a host and
// no user info; it returns it as parsed and spelled again.
func checkWebhookURL(s string) (string, error) {
	if len(s) > maxWebhookURLBytes {
		return "", errorf("is longer than %d bytes", maxWebhookURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", errorf("is not a URL")
	}
	switch {
	case u.Scheme != "https":
		return "", errorf("must be https")
	case u.Hostname() == "" || u.Opaque != "":
		return "", errorf("has no host")
	case u.User != nil:
		return "", errorf("must not carry user info")
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// webhookSecretKey decodes a Standard Webhooks secret, "whsec_" and the
// base64 of 24 to 64 bytes, into the HMAC key.
func webhookSecretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok || len(secret) > maxWebhookSecretBytes {
		return nil, errorf("must be whsec_ and the base64 of 24 to 64 random bytes")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, errorf("must be whsec_ and the base64 of 24 to 64 random bytes")
	}
	return key, nil
}

// signWebhook is the Standard Webhooks signature of a message, base64.
func signWebhook(key []byte, id, timestamp string, body []byte) string {
	return base64.StdEncoding.EncodeToString(webhookMAC(key, id, timestamp, body))
}

// webhookMAC is HMAC-SHA256(key, id "." timestamp "." body).
func webhookMAC(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// isVerified reports whether principal verified url lately.
func (w *webhookServer) isVerified(principal, url string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.verified[principal+"\x00"+url]
	return ok && now.Before(until)
}

// setVerified records a verification, dropping lapsed ones (and, when the
// cache is full of live ones, any one) to keep it bounded.
func (w *webhookServer) setVerified(principal, url string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.verified) >= maxWebhookVerified {
		for k, until := range w.verified {
			if !now.Before(until) || len(w.verified) >= maxWebhookVerified {
				delete(w.verified, k)
			}
		}
	}
	w.verified[principal+"\x00"+url] = now.Add(w.o.VerificationTTL)
}

// mayChallenge counts a verification POST to rawURL's host, and reports
// whether the host has had fewer than webhookChallenges this minute.
func (w *webhookServer) mayChallenge(rawURL string, now time.Time) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.challengeMinute) >= time.Minute || len(w.challenges) >= maxWebhookChallengeHosts {
		clear(w.challenges)
		w.challengeMinute = now
	}
	if w.challenges[host] >= webhookChallenges {
		return false
	}
	w.challenges[host]++
	return true
}

// verify POSTs the verification envelope to a new subscription's URL and
// checks that the endpoint echoes the challenge; a failure is the
// CallbackEndpointError the client gets.
func (w *webhookServer) verify(ctx context.Context, rec *WebhookRecord) error {
	challenge := randomID()
	body, _ := json.Marshal(map[string]string{"type": "verification", "challenge": challenge})
	status, answer, reason := w.post(ctx, rec, "msg_verification_"+randomID()[:16], body, true)
	if reason == "" && (status < 200 || status > 299) {
		reason = httpStatusCategory(status)
	}
	if reason == "" {
		var echo struct {
			Challenge string `json:"challenge"`
		}
		if json.Unmarshal(answer, &echo) != nil || subtle.ConstantTimeCompare([]byte(echo.Challenge), []byte(challenge)) != 1 {
			reason = "challenge_failed"
		}
	}
	if reason != "" {
		return NewError(CodeCallbackEndpointError, "Callback endpoint error: "+reason, map[string]any{"reason": reason})
	}
	return nil
}

// post makes one signed POST of body to rec's URL, bounded by the
// options' Timeout; it returns the status, what was read of the answer
// (when keep), and the failure's category ("" when an answer came).
func (w *webhookServer) post(ctx context.Context, rec *WebhookRecord, msgID string, body []byte, keep bool) (int, []byte, string) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, "connection_refused"
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sigs := make([]string, 0, 2)
	for _, secret := range rec.signingSecrets(time.Now()) {
		if key, err := webhookSecretKey(secret); err == nil {
			sigs = append(sigs, "v1,"+signWebhook(key, msgID, ts, body))
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", strings.Join(sigs, " "))
	req.Header.Set("X-MCP-Subscription-Id", rec.ID)
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return 0, nil, transportCategory(err)
	}
	defer resp.Body.Close()
	var answer []byte
	if keep {
		answer, _ = io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponseBytes))
	} else {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxWebhookResponseBytes))
	}
	return resp.StatusCode, answer, ""
}

// signingSecrets are the secrets that sign a delivery at now: the current
// one, and the one it replaced during its grace window.
func (r *WebhookRecord) signingSecrets(now time.Time) []string {
	if r.PreviousSecret != "" && now.Before(r.PreviousUntil) {
		return []string{r.Secret, r.PreviousSecret}
	}
	return []string{r.Secret}
}

// httpStatusCategory is the lastError category of a non-2xx answer.
func httpStatusCategory(status int) string {
	if status >= 500 {
		return "http_5xx"
	}
	return "http_4xx"
}

// transportCategory is the lastError category of a POST that got no
// answer. It never carries the error's text: that could serve as an
// oracle on attacker-chosen URLs.
func transportCategory(err error) string {
	var (
		netErr     net.Error
		verifyErr  *tls.CertificateVerificationError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		unknownErr x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return "timeout"
	case errors.As(err, &verifyErr), errors.As(err, &recordErr), errors.As(err, &alertErr),
		errors.As(err, &unknownErr), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return "tls_error"
	}
	return "connection_refused"
}

// NewWebhookHTTPClient returns the client webhook delivery uses by
// default: it connects only to globally routable addresses (the check runs
// on the address dialled, after DNS, so rebinding cannot get around it),
// ignores proxies, follows no redirect, and bounds each request by
// timeout (0: DefaultWebhookTimeout). Server only.
func NewWebhookHTTPClient(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	dialer := &net.Dialer{Timeout: timeout, Control: refusePrivateAddress}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 16 << 10,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
			ForceAttemptHTTP2:      true,
		},
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// errPrivateAddress refuses a connection to an address that is not
// globally routable.
var errPrivateAddress = errors.New("mcp: webhook delivery to a non-public address is refused")

// refusePrivateAddress is a dialer's Control: it refuses loopback,
// private, link-local, unspecified, multicast and shared (CGNAT)
// addresses.
func refusePrivateAddress(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return errPrivateAddress
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return errPrivateAddress
	}
	if !publicAddress(ip) {
		return errPrivateAddress
	}
	return nil
}

// specialPrefixes are ranges that are not globally routable beyond what
// netip's predicates cover: this network, shared (CGNAT) space, IETF
// protocol assignments, benchmarking, reserved, and NAT64, whose addresses
// embed an IPv4 address that may be private.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// publicAddress reports whether ip is globally routable, as far as the
// common special-purpose ranges go.
func publicAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsLoopback(), ip.IsPrivate(), ip.IsUnspecified(),
		ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip.IsMulticast():
		return false
	}
	for _, p := range specialPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
