package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Webhook subscriptions live behind WebhookStore, so that instances that
// share one (the redis/ module's, later) share the subscriptions too. A
// record has two halves: what the client sets with events/subscribe (the
// key, the secrets, the expiry), which Upsert writes, and what delivery
// keeps (the watermark cursor and the delivery status), which Progress
// writes under a lease. The lease says which instance delivers: exactly one
// at a time, and when its lease lapses (the instance died) another claims
// the record and resumes from the stored cursor.

// WebhookRecord is a webhook subscription as a [WebhookStore] keeps it.
// Server only.
type WebhookRecord struct {
	// ID is derived from the key (Principal, URL, Name, Arguments).
	ID        string
	Principal string
	URL       string
	Name      string
	// Arguments are the subscription's arguments, canonical JSON.
	Arguments json.RawMessage
	// Secret signs deliveries ("whsec_…"). PreviousSecret, until
	// PreviousUntil, signs them too: the grace window of a rotation.
	Secret         string
	PreviousSecret string
	PreviousUntil  time.Time
	// Expires is when the subscription lapses; zero: never.
	Expires time.Time
	// Floor, when not zero, skips occurrences older than it (maxAgeMs).
	Floor time.Time
	// Cursor is the watermark: every occurrence at or before it was
	// acknowledged or given up on.
	Cursor string
	// Status is the delivery status events/subscribe reports.
	Status WebhookStatus
	// LeaseOwner delivers the subscription until LeaseUntil.
	LeaseOwner string
	LeaseUntil time.Time
}

// expired reports whether the record lapsed at now.
func (r *WebhookRecord) expired(now time.Time) bool {
	return !r.Expires.IsZero() && !now.Before(r.Expires)
}

// WebhookStatus is how delivery to a subscription fares. Both sides: the
// store keeps it, and events/subscribe reports it on a refresh as
// deliveryStatus.
type WebhookStatus struct {
	// Active is false while delivery is suspended after repeated
	// failures; a refresh makes it true again.
	Active         bool       `json:"active"`
	LastDeliveryAt *time.Time `json:"lastDeliveryAt,omitempty"`
	// LastError is a category: connection_refused, timeout, tls_error,
	// http_4xx, http_5xx or challenge_failed; empty when the last
	// attempt succeeded.
	LastError   string     `json:"lastError,omitempty"`
	FailedSince *time.Time `json:"failedSince,omitempty"`
}

// WebhookStore keeps a server's webhook subscriptions. Server only: see
// [WebhookOptions]. Its methods must be safe for concurrent use and bound
// their own work by ctx; the server holds no lock while calling them.
type WebhookStore interface {
	// Upsert stores a subscription the client made or refreshed. A new
	// ID (or one whose record lapsed) is created with rec as it is, unless
	// rec.Principal already has max records: then ErrWebhookLimit. An
	// existing one gets rec's Secret (the old one, if different, moves to
	// PreviousSecret until rec.PreviousUntil), Expires and Floor, and
	// Status.Active set, and keeps its cursor, status and lease. It
	// returns the record as stored, the status it had before, and whether
	// it was created.
	Upsert(ctx context.Context, rec WebhookRecord, max int) (stored WebhookRecord, before WebhookStatus, created bool, err error)
	// Delete removes a subscription; it reports whether there was one.
	Delete(ctx context.Context, id string) (bool, error)
	// Claim drops the records that lapsed by now, leases to owner until
	// until those that no other owner holds (so that owner holds at most
	// max), renews owner's own leases, and returns every record owner
	// holds, and how many records the store has in all.
	Claim(ctx context.Context, owner string, now, until time.Time, max int) (held []WebhookRecord, total int, err error)
	// Progress stores the watermark and status of a record owner holds,
	// or ErrWebhookLeaseLost when owner no longer holds it (or it is
	// gone). Status.Active false suspends delivery; true leaves it as it
	// is, so that a refresh that reactivated it is not undone.
	Progress(ctx context.Context, id, owner, cursor string, status WebhookStatus) error
	// Release ends owner's lease of a record, if owner holds it.
	Release(ctx context.Context, id, owner string) error
}

// Errors of a [WebhookStore]. Server only.
var (
	// ErrWebhookLimit: the principal has as many subscriptions as it may.
	ErrWebhookLimit = errors.New("mcp: too many webhook subscriptions")
	// ErrWebhookLeaseLost: the instance no longer holds the subscription.
	ErrWebhookLeaseLost = errors.New("mcp: the webhook subscription is not leased to this instance")
)

// DefaultWebhookStoreSize bounds the records of [NewMemoryWebhookStore]
// when given 0. Server only.
const DefaultWebhookStoreSize = 10_000

// NewMemoryWebhookStore returns a WebhookStore in memory that keeps at
// most max records (0: DefaultWebhookStoreSize); past it a new one is
// ErrWebhookLimit. Server only.
func NewMemoryWebhookStore(max int) WebhookStore {
	if max <= 0 {
		max = DefaultWebhookStoreSize
	}
	return &memoryWebhookStore{max: max, recs: make(map[string]*WebhookRecord), per: make(map[string]int)}
}

type memoryWebhookStore struct {
	max int

	mu   sync.Mutex
	recs map[string]*WebhookRecord
	per  map[string]int // records per principal
}

func (m *memoryWebhookStore) Upsert(ctx context.Context, rec WebhookRecord, max int) (WebhookRecord, WebhookStatus, bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.recs[rec.ID]; old != nil && !old.expired(now) {
		before := old.Status
		if old.Secret != rec.Secret {
			old.PreviousSecret, old.PreviousUntil = old.Secret, rec.PreviousUntil
			old.Secret = rec.Secret
		}
		old.Expires, old.Floor = rec.Expires, rec.Floor
		old.Status.Active = true
		return *old, before, false, nil
	} else if old != nil {
		m.removeLocked(old)
	}
	if m.per[rec.Principal] >= max || len(m.recs) >= m.max {
		return WebhookRecord{}, WebhookStatus{}, false, ErrWebhookLimit
	}
	r := rec
	r.Status.Active = true
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	m.recs[r.ID] = &r
	m.per[r.Principal]++
	return r, WebhookStatus{}, true, nil
}

func (m *memoryWebhookStore) removeLocked(r *WebhookRecord) {
	delete(m.recs, r.ID)
	if m.per[r.Principal]--; m.per[r.Principal] <= 0 {
		delete(m.per, r.Principal)
	}
}

func (m *memoryWebhookStore) Delete(ctx context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[id]
	if r == nil {
		return false, nil
	}
	m.removeLocked(r)
	return true, nil
}

func (m *memoryWebhookStore) Claim(ctx context.Context, owner string, now, until time.Time, max int) ([]WebhookRecord, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := 0
	for _, r := range m.recs {
		if r.expired(now) {
			m.removeLocked(r)
		} else if r.LeaseOwner == owner && now.Before(r.LeaseUntil) {
			held++
		}
	}
	var out []WebhookRecord
	for _, r := range m.recs {
		mine := r.LeaseOwner == owner && now.Before(r.LeaseUntil)
		free := r.LeaseOwner == "" || !now.Before(r.LeaseUntil)
		if !mine && !(free && held < max) {
			continue
		}
		if !mine {
			held++
		}
		r.LeaseOwner, r.LeaseUntil = owner, until
		out = append(out, *r)
	}
	return out, len(m.recs), nil
}

func (m *memoryWebhookStore) Progress(ctx context.Context, id, owner, cursor string, status WebhookStatus) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[id]
	if r == nil || r.LeaseOwner != owner {
		return ErrWebhookLeaseLost
	}
	r.Cursor = cursor
	active := r.Status.Active && status.Active
	r.Status = status
	r.Status.Active = active
	return nil
}

func (m *memoryWebhookStore) Release(ctx context.Context, id, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.recs[id]; r != nil && r.LeaseOwner == owner {
		r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	}
	return nil
}
