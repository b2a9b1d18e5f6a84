package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// Push delivery: events/stream holds the request open and sends the
// subscription's notifications/events/* with it (on HTTP, on its response
// stream; on stdio, on stdout), each naming the request's id as its
// subscription id. The stream keeps only its cursor: PublishEvent wakes it
// and it reads the log from there, so occurrences go out in the log's
// order and none is skipped unless the log dropped it first, which the
// stream says with a fresh notifications/events/active {truncated: true}.

// eventStreamBatch is how many occurrences a stream reads at a time.
const eventStreamBatch = 100

// eventStream is one events/stream in progress.
type eventStream struct {
	name  string
	owner string        // whose bound it counts against (streamOwner)
	wake  chan struct{} // holds a wake-up while one is pending
}

// wake wakes the streams of event type name.
func (ev *serverEvents) wake(name string) {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for st := range ev.streams {
		if st.name != name {
			continue
		}
		select {
		case st.wake <- struct{}{}:
		default: // a wake-up is already pending: it reads this one too
		}
	}
}

// eventStreamNote is the params of notifications/events/active and
// notifications/events/heartbeat.
type eventStreamNote struct {
	Cursor    *string `json:"cursor"`
	Truncated *bool   `json:"truncated,omitempty"`
}

// stream serves events/stream until the client ends it.
func (ev *serverEvents) stream(ctx context.Context, info *RequestInfo) (any, error) {
	sub, cursor, err := ev.subscription(info.params)
	if err != nil {
		return nil, err
	}
	st := &eventStream{name: sub.Name, owner: info.streamOwner(), wake: make(chan struct{}, 1)}
	if err := ev.admit(st); err != nil {
		return nil, err
	}
	defer func() {
		ev.mu.Lock()
		delete(ev.streams, st)
		ev.mu.Unlock()
	}()
	// Admitted under its own bound, the stream holds no in-flight slot.
	info.conn.detachInbound(info.id)
	// Wake-ups from other instances, before the first read: none is
	// missed between the two.
	release, err := ev.holdWatch(ctx)
	if err != nil {
		return nil, internalError(err)
	}
	defer release()
	meta := []metaEntry{{key: metaSubscriptionID, value: info.id.appendJSON(nil)}}
	send := func(method string, params any) error {
		raw, err := json.Marshal(params)
		if err != nil {
			return err
		}
		return info.conn.notify(method, withMeta(raw, meta), info.id, info.route)
	}
	// The first read says where the stream starts, and whether that is
	// later than the client asked.
	page, err := ev.log.Read(ctx, sub.query(cursor, eventStreamBatch, time.Now()))
	if err != nil {
		return nil, eventLogError(err)
	}
	from, truncated := page.From, page.Truncated
	if err := send("notifications/events/active", eventStreamNote{Cursor: &from, Truncated: &truncated}); err != nil {
		return nil, err
	}
	// Once the client ended the stream, sending stops.
	heartbeat := time.NewTicker(ev.opts.Heartbeat)
	defer heartbeat.Stop()
	first, beat := true, false
	for {
		if !first {
			page, err = ev.log.Read(ctx, sub.query(cursor, eventStreamBatch, time.Time{}))
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				ev.sendError(send, err)
				page = EventPage{Cursor: cursor}
			} else if page.Truncated {
				from, truncated := page.From, true
				if send("notifications/events/active", eventStreamNote{Cursor: &from, Truncated: &truncated}) != nil {
					break
				}
			}
		}
		first = false
		if !ev.deliver(ctx, send, ev.filter(sub.Name, sub.Arguments, page.Events)) {
			break
		}
		cursor = page.Cursor
		if page.HasMore {
			continue
		}
		if beat {
			// Read up to now first: the cursor moves on in quiet times.
			beat = false
			c := cursor
			if send("notifications/events/heartbeat", eventStreamNote{Cursor: &c}) != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-st.wake:
			if !ev.declared(sub.Name) {
				// The type was removed: the stream ends, saying why.
				send("notifications/events/terminated", eventTerminatedNote{Error: errEventTypeGone(sub.Name)})
				break
			}
			continue
		case <-heartbeat.C:
			beat = true
			continue
		}
		break
	}
	return withMeta(json.RawMessage("{}"), meta), nil
}

// eventTerminatedNote is the params of notifications/events/terminated.
type eventTerminatedNote struct {
	Error *Error `json:"error"`
}

// deliver sends events in order; it reports whether all went out.
func (ev *serverEvents) deliver(ctx context.Context, send func(string, any) error, events []EventOccurrence) bool {
	for _, e := range events {
		if ctx.Err() != nil || send("notifications/events/event", e) != nil {
			return false
		}
	}
	return true
}

// sendError tells the stream of a read that failed; it stays open and
// reads again on the next wake-up or heartbeat.
func (ev *serverEvents) sendError(send func(string, any) error, err error) {
	e := eventLogError(err).(*Error)
	_ = send("notifications/events/error", map[string]any{"error": e})
}
