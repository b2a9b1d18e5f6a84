package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Webhook delivery: one loop per server claims subscriptions from the
// store under a lease and runs a worker for each it holds; a worker reads
// the event log from the subscription's cursor and POSTs each occurrence
// in order, one at a time, which is what keeps the order: an occurrence
// goes out only once the one before it was acknowledged or given up on, so
// the cursor it carries is a safe watermark. PublishEvent wakes the
// workers of its type; each also reads the log every Rescan, for what
// other instances appended. The loop starts with the first subscription
// and ends when the store has none left, or when WebhookOptions.Context
// ends.
//
// Retries: a non-2xx answer or no answer is retried after FirstRetry, then
// twice as late each time, up to Attempts attempts within RetryWindow;
// then the occurrence is given up on. 410 and 413 are never retried.
// Suspension is kept simple: after SuspendAfter occurrences in a row were
// given up on, delivery stops at the last of them (status active false)
// until the client's next refresh resumes it from there.

// webhookBatch is how many occurrences a worker reads at a time.
const webhookBatch = 100

// webhookWorker delivers one subscription.
type webhookWorker struct {
	id   string
	name string
	wake chan struct{} // holds one wake-up
	stop context.CancelFunc

	mu  sync.Mutex
	rec WebhookRecord // the latest copy, which the loop and refreshes replace
}

func (wk *webhookWorker) record() WebhookRecord {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	return wk.rec
}

func (wk *webhookWorker) setRecord(rec WebhookRecord) {
	wk.mu.Lock()
	wk.rec = rec
	wk.mu.Unlock()
}

func (wk *webhookWorker) poke() {
	select {
	case wk.wake <- struct{}{}:
	default:
	}
}

// wake wakes the workers of event type name: PublishEvent's hook. When
// the loop does not run it starts it, at most once a Rescan, so that an
// instance that shares its store delivers the subscriptions another
// instance made (and takes over those whose lease lapsed).
func (w *webhookServer) wake(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wk := range w.workers {
		if wk.name == name {
			wk.poke()
		}
	}
	if now := time.Now(); !w.running && now.Sub(w.lastStart) >= w.o.Rescan {
		w.startLocked()
	}
}

// refreshed takes a subscription the client just made or refreshed: a
// worker here gets the new record, and the loop runs and looks again.
func (w *webhookServer) refreshed(rec WebhookRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk := w.workers[rec.ID]; wk != nil {
		wk.setRecord(rec)
		wk.poke()
	}
	w.startLocked()
}

// startLocked starts the loop unless it runs, and wakes it. The wake-up is
// given under the lock so that a loop about to end sees it.
func (w *webhookServer) startLocked() {
	if ctx := w.o.Context; ctx != nil && ctx.Err() != nil {
		return
	}
	if !w.running {
		w.running, w.lastStart = true, time.Now()
		go w.loop()
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stopWorker stops the worker of a subscription, if one runs here.
func (w *webhookServer) stopWorker(id string) {
	w.mu.Lock()
	wk := w.workers[id]
	delete(w.workers, id)
	w.stops++
	w.mu.Unlock()
	if wk != nil {
		wk.stop()
	}
}

// loop claims subscriptions and keeps their workers running, until the
// store has none or the options' Context ends.
func (w *webhookServer) loop() {
	base := w.o.Context
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	tick := time.NewTicker(min(w.o.Rescan, w.o.Lease/3))
	defer tick.Stop()
	for {
		w.mu.Lock()
		stops := w.stops
		w.mu.Unlock()
		now := time.Now()
		sctx, scancel := context.WithTimeout(ctx, min(sharedCallTimeout, w.o.Lease/3))
		held, total, err := w.o.Store.Claim(sctx, w.owner, now, now.Add(w.o.Lease), w.o.Held)
		scancel()
		if err != nil && ctx.Err() == nil {
			w.srv.cfg.logger.Warn("cannot claim webhook subscriptions", "err", err)
		} else if err == nil {
			w.adopt(ctx, held, stops)
		}
		w.mu.Lock()
		if ctx.Err() != nil || (err == nil && total == 0 && len(w.workers) == 0) {
			select {
			case <-w.kick:
				if ctx.Err() == nil {
					w.mu.Unlock()
					continue // a subscription came meanwhile
				}
			default:
			}
			w.running = false
			workers := w.workers
			w.workers = make(map[string]*webhookWorker)
			w.mu.Unlock()
			for _, wk := range workers {
				wk.stop()
			}
			return
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-w.kick:
		case <-tick.C:
		}
	}
}

// adopt runs a worker for each record held and stops those of records no
// longer held (unsubscribed, lapsed, or claimed by another instance). If a
// worker was stopped since the claim (stops moved on), what was claimed
// may be stale: an unsubscribed record would get a worker again, so none
// is started this round, and the loop claims again at once.
func (w *webhookServer) adopt(ctx context.Context, held []WebhookRecord, stops uint64) {
	keep := make(map[string]bool, len(held))
	w.mu.Lock()
	defer w.mu.Unlock()
	stale := w.stops != stops
	if stale {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	for _, rec := range held {
		keep[rec.ID] = true
		if wk := w.workers[rec.ID]; wk != nil {
			wk.setRecord(rec)
			if rec.Status.Active {
				wk.poke()
			}
			continue
		}
		if stale {
			continue
		}
		wctx, stop := context.WithCancel(ctx)
		wk := &webhookWorker{id: rec.ID, name: rec.Name, wake: make(chan struct{}, 1), stop: stop, rec: rec}
		w.workers[rec.ID] = wk
		go w.run(wctx, wk)
	}
	for id, wk := range w.workers {
		if !keep[id] && !stale {
			delete(w.workers, id)
			wk.stop()
		}
	}
}

// webhookOutcome is how the delivery of one message ended.
type webhookOutcome int

const (
	webhookAcked   webhookOutcome = iota // 2xx
	webhookRefused                       // 410 or 413: not retried
	webhookGivenUp                       // retries exhausted
	webhookStopped                       // the worker stopped, or the subscription lapsed
)

// run is a worker: it delivers its subscription from the stored cursor
// until stopped or until the subscription lapses.
func (w *webhookServer) run(ctx context.Context, wk *webhookWorker) {
	defer func() {
		w.mu.Lock()
		if w.workers[wk.id] == wk {
			delete(w.workers, wk.id)
		}
		w.mu.Unlock()
		wk.stop()
		rctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
		_ = w.o.Store.Release(rctx, wk.id, w.owner)
		cancel()
	}()
	rec := wk.record()
	cursor, status := rec.Cursor, rec.Status
	givenUp := 0
	lost := false // the log refused the cursor: a gap to tell
	save := func() bool {
		sctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
		defer cancel()
		err := w.o.Store.Progress(sctx, wk.id, w.owner, cursor, status)
		if errors.Is(err, ErrWebhookLeaseLost) {
			return false
		}
		if err != nil && ctx.Err() == nil {
			w.srv.cfg.logger.Warn("cannot store a webhook subscription's progress", "subscription", wk.id, "err", err)
		}
		return ctx.Err() == nil
	}
	for ctx.Err() == nil {
		rec = wk.record()
		if rec.expired(time.Now()) {
			w.reclaim(wk.id)
			return
		}
		if !w.ev.declared(rec.Name) {
			// The type was removed: the subscription ends, saying why.
			body, _ := json.Marshal(map[string]any{"type": "terminated", "error": errEventTypeGone(rec.Name)})
			if w.deliver(ctx, wk, "msg_terminated_"+randomID()[:16], body, &status) != webhookStopped {
				w.reclaim(wk.id)
			}
			return
		}
		if !rec.Status.Active {
			if !w.idle(ctx, wk, &rec) {
				return
			}
			givenUp = 0
			status.Active = wk.record().Status.Active
			continue
		}
		status.Active = true
		rctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
		page, err := w.ev.log.Read(rctx, EventQuery{Name: rec.Name, Cursor: cursor, MaxEvents: webhookBatch, Since: rec.Floor})
		cancel()
		if errors.Is(err, ErrInvalidEventCursor) && cursor != "" {
			cursor, lost = "", true // a cursor the log no longer takes: start from now
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				w.srv.cfg.logger.Warn("cannot read the event log for a webhook", "subscription", wk.id, "err", err)
			}
			if !w.idle(ctx, wk, &rec) {
				return
			}
			continue
		}
		if lost || (page.Truncated && page.From != cursor && cursor != "") {
			// The log dropped what followed the cursor: say so first.
			lost = false
			body, _ := json.Marshal(map[string]string{"type": "gap", "cursor": page.From})
			if w.deliver(ctx, wk, "msg_gap_"+randomID()[:16], body, &status) == webhookStopped {
				return
			}
		}
		if len(page.Events) == 0 {
			if page.Cursor != cursor || cursor == "" {
				cursor = page.Cursor
				if !save() {
					return
				}
			}
			if !w.idle(ctx, wk, &rec) {
				return
			}
			continue
		}
		if page.Truncated && page.From != cursor {
			cursor = page.From
		}
		events := w.ev.filter(rec.Name, rec.Arguments, page.Events)
		if len(events) == 0 {
			// The subscription gets none of these: move past them.
			cursor = page.Cursor
			if !save() {
				return
			}
			continue
		}
		for _, e := range events {
			body, err := json.Marshal(e)
			if err != nil {
				continue
			}
			out := w.deliver(ctx, wk, e.EventID, body, &status)
			if out == webhookStopped {
				return
			}
			if out == webhookGivenUp {
				if givenUp++; givenUp >= w.o.SuspendAfter {
					// Suspended at e: a refresh resumes from it.
					status.Active = false
					save()
					r := wk.record()
					r.Status.Active = false
					wk.setRecord(r)
					break
				}
			} else {
				givenUp = 0
			}
			cursor = e.Cursor
			if !save() {
				return
			}
		}
	}
}

// idle waits for a wake-up, the next rescan or the subscription's expiry;
// it reports false when the worker is to stop.
func (w *webhookServer) idle(ctx context.Context, wk *webhookWorker, rec *WebhookRecord) bool {
	wait := w.o.Rescan
	if !rec.Expires.IsZero() {
		wait = min(wait, max(time.Until(rec.Expires), 0))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wk.wake:
	case <-t.C:
	}
	return true
}

// reclaim drops a lapsed subscription from the store.
func (w *webhookServer) reclaim(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	if _, err := w.o.Store.Delete(ctx, id); err != nil {
		w.srv.cfg.logger.Warn("cannot drop a lapsed webhook subscription", "subscription", id, "err", err)
	}
}

// deliver POSTs one message, retrying as the options say, and records
// how it went in status.
func (w *webhookServer) deliver(ctx context.Context, wk *webhookWorker, msgID string, body []byte, status *WebhookStatus) webhookOutcome {
	first := time.Now()
	delay := w.o.FirstRetry
	for attempt := 1; ; attempt++ {
		rec := wk.record() // a refresh may have rotated the secret
		if ctx.Err() != nil {
			return webhookStopped
		}
		if rec.expired(time.Now()) {
			return webhookStopped
		}
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return webhookStopped
		}
		code, _, reason := w.post(ctx, &rec, msgID, body, false)
		<-w.slots
		now := time.Now()
		switch {
		case reason == "" && code >= 200 && code <= 299:
			status.LastDeliveryAt, status.LastError, status.FailedSince = &now, "", nil
			return webhookAcked
		case reason == "":
			reason = httpStatusCategory(code)
		}
		if ctx.Err() != nil {
			return webhookStopped
		}
		status.LastError = reason
		if status.FailedSince == nil {
			status.FailedSince = &now
		}
		if code == 410 || code == 413 {
			return webhookRefused
		}
		if attempt >= w.o.Attempts || now.Add(delay).Sub(first) > w.o.RetryWindow {
			return webhookGivenUp
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return webhookStopped
		case <-t.C:
		}
		delay *= 2
	}
}
