package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"sync"
	"time"
)

// The client's side of Events: events/list, events/poll, and events/stream
// held open, its notifications routed by their subscription id to the
// StreamEvents call that opened it, which reopens it from its cursor when
// it breaks. Nothing here is linked into a client that never calls these
// methods: the core reaches the streams only through Client.eventNotes.

// ListEventTypesResult is a page of events/list. Client only.
type ListEventTypesResult struct {
	Events     []*EventType `json:"events"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// ListEventTypes fetches one page of the server's event types. Client only.
func (c *Client) ListEventTypes(ctx context.Context, cursor string, opts ...CallOption) (*ListEventTypesResult, error) {
	return requestAs[ListEventTypesResult](ctx, c, "events/list", cursorParams(cursor), opts)
}

// EventTypes iterates over the server's event types; see [Client.Tools].
// Client only.
func (c *Client) EventTypes(ctx context.Context, opts ...CallOption) iter.Seq2[*EventType, error] {
	return pages(ctx, c, opts, c.ListEventTypes, func(r *ListEventTypesResult) ([]*EventType, string) { return r.Events, r.NextCursor })
}

// EventSubscription names what [Client.PollEvents] and [Client.StreamEvents]
// read. Client only.
type EventSubscription struct {
	// Name is the event type.
	Name string
	// Arguments are the subscription's arguments (any JSON object; nil:
	// none).
	Arguments any
	// Cursor is where to start: a cursor the server gave, to replay what
	// followed it; empty: from now.
	Cursor string
	// MaxAge, when positive, skips occurrences older than it (maxAgeMs).
	MaxAge time.Duration
	// MaxEvents bounds the occurrences of one poll (0: the server's
	// default).
	MaxEvents int
	// OnTruncated is called with the fresh cursor when the server says
	// that occurrences after the stream's cursor are gone (a stream's
	// truncated notifications/events/active). Optional.
	OnTruncated func(cursor string)
}

// params returns the request's params for sub at cursor.
func (sub *EventSubscription) params(cursor string, poll bool) (json.RawMessage, error) {
	args, err := marshalObject(sub.Arguments)
	if err != nil {
		return nil, errorf("the arguments of event %s: %w", sub.Name, err)
	}
	p := eventSubscription{Name: sub.Name, Arguments: args}
	if cursor != "" {
		p.Cursor = &cursor
	}
	if sub.MaxAge > 0 {
		ms := sub.MaxAge.Milliseconds()
		p.MaxAgeMs = &ms
	}
	if poll && sub.MaxEvents > 0 {
		n := int64(sub.MaxEvents)
		p.MaxEvents = &n
	}
	return json.Marshal(&p)
}

// PollEvents sends one events/poll: the occurrences of sub after
// sub.Cursor, and the cursor to pass next. Poll again at once when HasMore
// is set, else after NextPollMs. A cursor the server does not know is a
// -32602 *Error, an unknown event type a CodeNotFound one. Client only.
func (c *Client) PollEvents(ctx context.Context, sub EventSubscription, opts ...CallOption) (*EventPollResult, error) {
	params, err := sub.params(sub.Cursor, true)
	if err != nil {
		return nil, err
	}
	res, err := requestAs[EventPollResult](ctx, c, "events/poll", params, opts)
	if err != nil {
		return nil, err
	}
	if len(res.Events) > maxPollEvents {
		return nil, errorf("events/poll returned %d occurrences, more than %d", len(res.Events), maxPollEvents)
	}
	return res, nil
}

// eventStreamQueue bounds the notifications a stream holds for its
// handler; past it the stream is reopened from the last cursor handled.
const eventStreamQueue = 4096

// clientEventStreams routes notifications/events/* to the stream whose
// request id they carry.
type clientEventStreams struct {
	mu   sync.Mutex
	byID map[string]*clientEventStream
}

// clientEventStream is one events/stream request's queue of notifications.
type clientEventStream struct {
	mu       sync.Mutex
	queue    []eventNote
	overflow bool
	signal   chan struct{}
}

type eventNote struct {
	method string
	params json.RawMessage
}

// eventStreamsOn returns the client's stream table, made and hooked into
// the core on first use.
func (c *Client) eventStreamsOn() *clientEventStreams {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.eventStreams; t != nil {
		return t
	}
	t := &clientEventStreams{byID: make(map[string]*clientEventStream)}
	c.eventStreams = t
	hook := t.route
	c.eventNotes.Store(&hook)
	return t
}

// route queues a notification for its stream; it reports false for one of
// no open stream (a stream already ended), which goes the way of any other
// notification.
func (t *clientEventStreams) route(method string, params json.RawMessage) bool {
	id := subscriptionIDOf(params)
	t.mu.Lock()
	st := t.byID[id]
	t.mu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	if len(st.queue) >= eventStreamQueue {
		st.overflow = true
	} else {
		st.queue = append(st.queue, eventNote{method: method, params: params})
	}
	st.mu.Unlock()
	select {
	case st.signal <- struct{}{}:
	default:
	}
	return true
}

// errEventStreamStalled ends a stream whose handler fell behind or whose
// server went quiet; it is reopened from its cursor.
var errEventStreamStalled = errors.New("mcp: the event stream stalled")

// StreamEvents holds an events/stream open for sub and calls handle with
// each occurrence, in the server's order, one at a time on the calling
// goroutine. It returns when ctx ends (with ctx's error), when the server
// refuses or terminates the subscription (an *Error), or when reopening
// the stream failed; with the last cursor it saw, to resume from later.
// A stream that breaks (the connection, a handler that fell far behind, no
// event or heartbeat for liveness) is reopened from that cursor, up to
// [WithListenResumeAttempts] times in a row. liveness is how long the
// stream may stay quiet (0: twice DefaultEventHeartbeat). An internal
// error (-32603) counts as a break, not a refusal. Client only.
func (c *Client) StreamEvents(ctx context.Context, sub EventSubscription, liveness time.Duration, handle func(EventOccurrence)) (string, error) {
	if liveness <= 0 {
		liveness = 2 * DefaultEventHeartbeat
	}
	table := c.eventStreamsOn()
	cursor := sub.Cursor
	failures := 0
	for {
		active, err := c.streamOnce(ctx, table, &sub, &cursor, liveness, handle)
		if ctx.Err() != nil {
			return cursor, ctx.Err()
		}
		// The server's refusal ends it; an internal error may be the
		// transport's word for a stream cut off (the instance that held it
		// died) or a log that failed for a while: reopened, as a break.
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr.Code != CodeInternalError || errors.Is(err, ErrClosed) || errors.Is(err, ErrNotConnected) {
			return cursor, err
		}
		if active {
			failures = 0
		}
		failures++
		if failures > c.cfg.client.listenResumes {
			if err == nil {
				err = errors.New("mcp: the server ended the event stream")
			}
			return cursor, errorf("cannot reopen the event stream: %w", err)
		}
		c.cfg.logger.Debug("reopening the event stream", "event", sub.Name, "err", err)
		backoff := time.NewTimer(min(time.Duration(failures)*100*time.Millisecond, 2*time.Second))
		select {
		case <-ctx.Done():
			backoff.Stop()
			return cursor, ctx.Err()
		case <-backoff.C:
		}
	}
}

// streamOnce runs one events/stream request until it ends; active reports
// whether the server confirmed it.
func (c *Client) streamOnce(ctx context.Context, table *clientEventStreams, sub *EventSubscription, cursor *string, liveness time.Duration, handle func(EventOccurrence)) (active bool, err error) {
	conn, _, err := c.session()
	if err != nil {
		return false, err
	}
	params, err := sub.params(*cursor, false)
	if err != nil {
		return false, &Error{Code: CodeInvalidParams, Message: err.Error()}
	}
	conn.mu.Lock()
	id := conn.nextIDLocked()
	conn.mu.Unlock()
	key := string(id.appendJSON(nil))
	st := &clientEventStream{signal: make(chan struct{}, 1)}
	table.mu.Lock()
	table.byID[key] = st
	table.mu.Unlock()
	defer func() {
		table.mu.Lock()
		delete(table.byID, key)
		table.mu.Unlock()
	}()
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- c.SendRequest(callCtx, "events/stream", params, nil, WithTimeout(0), func(o *callOptions) { o.id = id })
	}()
	quiet := time.NewTimer(liveness)
	defer quiet.Stop()
	var callErr error
	ended := false
	for {
		// Handle what is queued before looking at the call's end: what
		// the server sent before its result comes first.
		st.mu.Lock()
		notes, overflow := st.queue, st.overflow
		st.queue = nil
		st.mu.Unlock()
		for _, n := range notes {
			if !quiet.Stop() {
				select {
				case <-quiet.C:
				default:
				}
			}
			quiet.Reset(liveness)
			switch n.method {
			case "notifications/events/active":
				var p struct {
					Cursor    *string `json:"cursor"`
					Truncated bool    `json:"truncated"`
				}
				if json.Unmarshal(n.params, &p) == nil {
					active = true
					if p.Cursor != nil {
						*cursor = *p.Cursor
					}
					if p.Truncated && sub.OnTruncated != nil {
						sub.OnTruncated(*cursor)
					}
				}
			case "notifications/events/event":
				var e EventOccurrence
				if json.Unmarshal(n.params, &e) != nil {
					continue
				}
				e.Meta = nil
				if e.Cursor != "" {
					*cursor = e.Cursor
				}
				handle(e)
			case "notifications/events/heartbeat":
				var p struct {
					Cursor *string `json:"cursor"`
				}
				if json.Unmarshal(n.params, &p) == nil && p.Cursor != nil {
					*cursor = *p.Cursor
				}
			case "notifications/events/terminated":
				var p struct {
					Error *Error `json:"error"`
				}
				stop()
				if !ended { // else its end was taken already
					<-done
				}
				if json.Unmarshal(n.params, &p) == nil && p.Error != nil {
					return active, p.Error
				}
				return active, &Error{Code: CodeInternalError, Message: "the server terminated the event stream"}
			case "notifications/events/error":
				c.cfg.logger.Debug("event stream error", "event", sub.Name, "params", string(n.params))
			}
		}
		if overflow {
			stop()
			if !ended {
				<-done
			}
			return active, errEventStreamStalled
		}
		if ended {
			return active, callErr
		}
		select {
		case <-st.signal:
		case callErr = <-done:
			// Notifications sent before the result are queued by now
			// (the read path queues them as they arrive); handle them.
			ended = true
		case <-quiet.C:
			stop()
			<-done
			return active, errEventStreamStalled
		case <-ctx.Done():
			stop()
			<-done
			return active, ctx.Err()
		}
	}
}

// Bounds on the pause between two polls of [Client.PolledEvents], whatever
// nextPollMs the server suggests: a server cannot make the client spin, nor
// leave it asleep for long.
const (
	minEventPollPause = 100 * time.Millisecond
	maxEventPollPause = 5 * time.Minute
)

// PolledEvents polls sub until ctx ends or the loop stops, yielding each
// occurrence in order: it polls again at once while the server has more,
// else after the server's nextPollMs (clamped to 100 ms through 5 min). The
// last occurrence of each poll carries in Cursor where the next poll
// starts, the position to persist to resume after it; sub.OnTruncated, if
// set, learns of occurrences dropped before they could be read. It ends
// with the first error, which it yields (ctx's when ctx ends). Client only.
func (c *Client) PolledEvents(ctx context.Context, sub EventSubscription, opts ...CallOption) iter.Seq2[EventOccurrence, error] {
	return func(yield func(EventOccurrence, error) bool) {
		var pause *time.Timer
		defer func() {
			if pause != nil {
				pause.Stop()
			}
		}()
		for {
			res, err := c.PollEvents(ctx, sub, opts...)
			if err != nil {
				yield(EventOccurrence{}, err)
				return
			}
			if res.Truncated && sub.OnTruncated != nil {
				sub.OnTruncated(res.Cursor)
			}
			for i, e := range res.Events {
				e.Cursor = ""
				if i == len(res.Events)-1 {
					e.Cursor = res.Cursor
				}
				if !yield(e, nil) {
					return
				}
			}
			if res.Cursor != "" {
				sub.Cursor = res.Cursor
			}
			wait := time.Duration(0)
			if !res.HasMore || len(res.Events) == 0 {
				// An empty page that claims more is paused on too.
				wait = min(max(peerDuration(res.NextPollMs, time.Millisecond), minEventPollPause), maxEventPollPause)
			}
			if wait == 0 {
				continue
			}
			if pause == nil {
				pause = time.NewTimer(wait)
			} else {
				pause.Reset(wait)
			}
			select {
			case <-pause.C:
			case <-ctx.Done():
				yield(EventOccurrence{}, ctx.Err())
				return
			}
		}
	}
}
