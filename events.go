package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Events (SEP-3415, io.modelcontextprotocol/events): a server declares event
// types and publishes their occurrences; a client lists the types, polls
// them with an opaque cursor (events/poll) or holds a push stream open
// (events/stream, notifications/events/*). Webhooks (events/subscribe) are
// offered only by a server made WithWebhooks (events_webhook.go), through
// the hook it installs (serverEvents.webhooks). Nothing here is linked into
// a server that declares no event type: the core reaches it only through
// the hook AddEventType installs (Server.serveEvents).
//
// Retention sits behind EventLog, whose methods take a context and return
// errors, and which alone mints and reads cursors. The server keeps nothing
// else per subscription: a poll is one Read, and a push stream is a loop of
// Reads woken by PublishEvent on this instance. So a shared log (the redis/
// module's, on a Redis stream per event type, cursors the stream's ids)
// serves every instance as it is; what it adds is the wake-up of streams on
// other instances, which the log offers as an EventWatcher (events_watch.go).

// EventsExtension is the id of the Events extension under
// capabilities.extensions. Both sides: a server that declared an event type
// with [Server.AddEventType] declares it; a client may declare it.
const EventsExtension = "io.modelcontextprotocol/events"

// CodeNotFound answers a request that names something that does not exist;
// Events: an unknown event type, with data {"kind":"event"}. Both sides.
const CodeNotFound = -32023

// Delivery modes of an event type, in [EventType.Delivery]. Both sides.
const (
	EventDeliveryPoll    = "poll"
	EventDeliveryPush    = "push"
	EventDeliveryWebhook = "webhook"
)

// Bounds on what a server accepts.
const (
	// MaxEventBytes bounds the payload of one occurrence. Server:
	// PublishEvent refuses a bigger one.
	MaxEventBytes = 256 << 10
	// maxEventNameBytes bounds an event type's name and an occurrence's id.
	maxEventNameBytes = 256
	// maxEventCursorBytes bounds a cursor a peer sends.
	maxEventCursorBytes = 256
	// defaultPollEvents and maxPollEvents: what one poll returns.
	defaultPollEvents = 100
	maxPollEvents     = 1000
)

// DefaultEventPollInterval is the nextPollMs a server suggests when a poll
// leaves nothing more to read; see [EventOptions]. Server only.
const DefaultEventPollInterval = 5 * time.Second

// DefaultEventHeartbeat is how often a push stream carries a heartbeat; see
// [EventOptions]. Both sides: a server sends them this often, and a client's
// [Client.StreamEvents] by default waits twice this long before it reopens
// a quiet stream.
const DefaultEventHeartbeat = 30 * time.Second

// EventType describes an event type, as events/list lists it. Both sides: a
// server declares one with [Server.AddEventType] or [AddEventType]; a client
// lists them with [Client.ListEventTypes].
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Delivery lists the modes the type supports. A server fills it in:
	// poll and push, and webhook when made WithWebhooks.
	Delivery []string `json:"delivery"`
	// InputSchema is the JSON Schema of a subscription's arguments; empty
	// means {"type":"object"}. A server validates arguments against it.
	InputSchema json.RawMessage `json:"inputSchema"`
	// PayloadSchema is the JSON Schema of an occurrence's data.
	PayloadSchema json.RawMessage `json:"payloadSchema,omitempty"`
	Meta          Meta            `json:"_meta,omitempty"`
	// Filter, when set, gives what a subscription made with args (its
	// arguments, checked against InputSchema; {} when none) gets of
	// occurrence e: false skips it (arguments as filters), and the
	// occurrence returned may carry other Data or Meta (arguments as
	// transforms; the rest stays as published). Polls, streams and
	// webhooks apply it, their cursors moving past what it skips. It runs
	// on the server's goroutines, once per subscription and occurrence
	// read; a panic in it, or Data that is not JSON, skips the occurrence,
	// logged. Nil: every subscription gets every occurrence as published.
	// Server only; see also [EventTopic.Filter].
	Filter func(args json.RawMessage, e EventOccurrence) (EventOccurrence, bool) `json:"-"`
}

// EventOccurrence is one occurrence of an event type. Both sides: a server
// publishes it with [Server.PublishEvent]; a client receives it from a poll
// or a stream.
type EventOccurrence struct {
	// EventID identifies the occurrence for deduplication; the server makes
	// one when the publisher gives none.
	EventID string `json:"eventId"`
	Name    string `json:"name"`
	// Timestamp is when it occurred; the server takes the time of
	// publication when the publisher gives none.
	Timestamp time.Time `json:"timestamp"`
	// Data is the payload, a JSON object.
	Data json.RawMessage `json:"data"`
	// Cursor is the subscription's position after this occurrence (push
	// only; a poll carries its cursor in the result). Empty: none.
	Cursor string `json:"cursor,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// EventOptions configure a server's events; see [WithEvents]. Server only.
// The zero value is the defaults.
type EventOptions struct {
	// Log keeps the occurrences; nil: an in-memory log with the
	// MemoryEventLog defaults.
	Log EventLog
	// PollInterval is the nextPollMs the server suggests; 0:
	// DefaultEventPollInterval.
	PollInterval time.Duration
	// Heartbeat is how often a push stream carries a heartbeat with its
	// cursor; 0: DefaultEventHeartbeat.
	Heartbeat time.Duration
	// MaxStreams bounds the push streams one principal holds open on this
	// server (without one: its session; anonymous 2026-07-28 requests,
	// the host they came from), past which events/stream is refused with
	// CodeOverloaded; open streams do not count against WithMaxInFlight.
	// 0: DefaultEventMaxStreams, negative: no bound.
	MaxStreams int
}

// WithEvents configures the server's events (the log that keeps them, the
// poll interval it suggests, the heartbeat of push streams). Events are
// served only once an event type is declared with [Server.AddEventType].
// It configures a server (NewServer).
func WithEvents(o EventOptions) ServerOption {
	return serverOption(func(c *config) { c.server.events = o })
}

// serverEvents is a server's events: the declared types, the log, and the
// push streams that wait for new occurrences.
type serverEvents struct {
	opts   EventOptions // defaults filled in
	log    EventLog
	logger *slog.Logger

	mu      sync.RWMutex
	types   map[string]*eventTypeEntry
	order   []string // names in declaration order, for events/list
	streams map[*eventStream]struct{}
	watch   eventWatch // wake-ups from other instances (events_watch.go)

	// webhooks serves events/subscribe and delivers to webhooks; nil
	// unless the server was made WithWebhooks.
	webhooks eventWebhooks
}

// eventWebhooks is what WithWebhooks adds to a server's events.
type eventWebhooks interface {
	// serve serves events/subscribe and events/unsubscribe.
	serve(ctx context.Context, method string, params json.RawMessage, info *RequestInfo) (any, error)
	// wake tells delivery that an occurrence of name was published.
	wake(name string)
}

// eventTypeEntry is a declared type with its compiled input schema.
type eventTypeEntry struct {
	desc  EventType
	input *Schema
}

// AddEventType declares an event type, replacing one of the same name, and
// turns on the Events extension: the server declares it and serves
// events/list, events/poll and events/stream. It panics if t has no name or
// a schema that is not JSON. Server only.
func (s *Server) AddEventType(t EventType) {
	if t.Name == "" || len(t.Name) > maxEventNameBytes || !utf8.ValidString(t.Name) {
		panic("mcp: AddEventType: an event type needs a name of at most 256 bytes")
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var input Schema
	if err := json.Unmarshal(t.InputSchema, &input); err != nil {
		panic("mcp: AddEventType: the input schema of " + t.Name + ": " + err.Error())
	}
	if len(t.PayloadSchema) > 0 && !json.Valid(t.PayloadSchema) {
		panic("mcp: AddEventType: the payload schema of " + t.Name + " is not JSON")
	}
	ev := s.eventsOn()
	t.Delivery = []string{EventDeliveryPoll, EventDeliveryPush}
	if ev.webhooks != nil {
		t.Delivery = append(t.Delivery, EventDeliveryWebhook)
	}
	ev.mu.Lock()
	if _, ok := ev.types[t.Name]; !ok {
		ev.order = append(ev.order, t.Name)
	}
	ev.types[t.Name] = &eventTypeEntry{desc: t, input: &input}
	ev.mu.Unlock()
	s.listChanged("events")
}

// RemoveEventType stops offering the event type name and reports whether
// it was declared. Its push streams end with notifications/events/terminated
// and its webhook subscriptions get a terminated envelope and are dropped,
// both with the error a poll of it now gets (CodeNotFound, kind "event");
// clients that asked are told the list changed. Occurrences published
// before stay in the log. Server only.
func (s *Server) RemoveEventType(name string) bool {
	s.mu.RLock()
	ev := s.events
	s.mu.RUnlock()
	if ev == nil {
		return false
	}
	ev.mu.Lock()
	_, ok := ev.types[name]
	if ok {
		delete(ev.types, name)
		ev.order = slices.DeleteFunc(ev.order, func(n string) bool { return n == name })
	}
	ev.mu.Unlock()
	if !ok {
		return false
	}
	ev.wake(name) // its streams see it gone
	if ev.webhooks != nil {
		ev.webhooks.wake(name)
	}
	s.listChanged("events")
	return true
}

// errEventTypeGone is what a subscription of a removed or unknown type
// gets.
func errEventTypeGone(name string) *Error {
	return NewError(CodeNotFound, "Event type not found: "+truncateForMessage(name), map[string]any{"kind": "event"})
}

// eventsOn returns the server's events, made and hooked into the core on
// first use.
func (s *Server) eventsOn() *serverEvents {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events != nil {
		return s.events
	}
	o := s.cfg.server.events
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultEventPollInterval
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultEventHeartbeat
	}
	log := o.Log
	if log == nil {
		log = NewMemoryEventLog(0, 0)
	}
	s.events = &serverEvents{opts: o, log: log, logger: s.cfg.logger, types: make(map[string]*eventTypeEntry), streams: make(map[*eventStream]struct{})}
	if newWebhooks := s.cfg.server.eventWebhooks; newWebhooks != nil {
		s.events.webhooks = newWebhooks(s, s.events)
	}
	s.serveEvents = s.events.serve
	return s.events
}

// EventTopic is a declared event type whose payloads are Ts. Server only:
// [AddEventType] returns it; its Publish is PublishEvent with T's JSON.
type EventTopic[T any] struct {
	srv  *Server
	name string
}

// AddEventType declares an event type named name whose payload is a T,
// with the payload schema inferred from T (see [SchemaFor]) and arguments
// of any object, and returns the topic to publish it on. It panics if T has
// no schema. Server only.
func AddEventType[T any](s *Server, name, description string) *EventTopic[T] {
	schema, err := SchemaFor[T]()
	if err != nil {
		panic("mcp: AddEventType " + name + ": " + err.Error())
	}
	payload, err := json.Marshal(schema)
	if err != nil {
		panic("mcp: AddEventType " + name + ": " + err.Error())
	}
	s.AddEventType(EventType{Name: name, Description: description, PayloadSchema: payload})
	return &EventTopic[T]{srv: s, name: name}
}

// Publish publishes an occurrence with payload data, now, under a new id,
// and returns it. It is safe for concurrent use. Server only.
func (t *EventTopic[T]) Publish(ctx context.Context, data T) (EventOccurrence, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return EventOccurrence{}, errorf("event %s: %w", t.name, err)
	}
	return t.srv.PublishEvent(ctx, EventOccurrence{Name: t.name, Data: raw})
}

// PublishEvent records an occurrence of a declared event type in the log
// and wakes the push streams that deliver it. An empty EventID gets a new
// random one, a zero Timestamp the time now, and empty Data {}. It is safe
// for concurrent use, from a handler or any goroutine; occurrences
// published one after another are delivered in that order. Server only.
func (s *Server) PublishEvent(ctx context.Context, e EventOccurrence) (EventOccurrence, error) {
	s.mu.RLock()
	ev := s.events
	s.mu.RUnlock()
	if ev == nil || !ev.declared(e.Name) {
		return EventOccurrence{}, errorf("event %q is not declared", e.Name)
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	if len(e.Data) > MaxEventBytes {
		return EventOccurrence{}, errorf("event %s: the payload has %d bytes, more than %d", e.Name, len(e.Data), MaxEventBytes)
	}
	if d := trimJSONSpace(e.Data); len(d) == 0 || d[0] != '{' || !json.Valid(d) {
		return EventOccurrence{}, errorf("event %s: the payload is not a JSON object", e.Name)
	}
	if e.EventID == "" {
		e.EventID = "evt_" + randomID()
	}
	if len(e.EventID) > maxEventNameBytes {
		return EventOccurrence{}, errorf("event %s: the id has more than %d bytes", e.Name, maxEventNameBytes)
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = time.Now()
	}
	e.Timestamp = e.Timestamp.UTC()
	e.Cursor = ""
	if err := ev.log.Append(ctx, e); err != nil {
		return EventOccurrence{}, err
	}
	ev.wake(e.Name)
	if ev.webhooks != nil {
		ev.webhooks.wake(e.Name)
	}
	return e, nil
}

// declared reports whether name is a declared event type.
func (ev *serverEvents) declared(name string) bool {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	_, ok := ev.types[name]
	return ok
}

// serve serves an events/* request: the hook the core calls.
func (ev *serverEvents) serve(ctx context.Context, ss *serverSession, req *inboundRequest, info *RequestInfo) (any, error) {
	switch req.method {
	case "events/list":
		return ev.list(req.params, ss.srv.cfg.server.pageSize)
	case "events/poll":
		return ev.poll(ctx, req.params)
	case "events/stream":
		return ev.stream(ctx, info)
	case "events/subscribe", "events/unsubscribe":
		if ev.webhooks != nil {
			return ev.webhooks.serve(ctx, req.method, req.params, info)
		}
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method}
}

// eventListResult is the result of events/list.
type eventListResult struct {
	Events     []EventType `json:"events"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// list serves events/list, a page at a time; the page cursor is the index
// of the next type.
func (ev *serverEvents) list(params json.RawMessage, pageSize int) (any, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	start := 0
	if p.Cursor != "" {
		n, ok := parseSmallInt(p.Cursor)
		if !ok || n > len(ev.order) {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown cursor"}
		}
		start = n
	}
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	end := min(start+pageSize, len(ev.order))
	res := &eventListResult{Events: make([]EventType, 0, end-start)}
	for _, name := range ev.order[start:end] {
		res.Events = append(res.Events, ev.types[name].desc)
	}
	if end < len(ev.order) {
		res.NextCursor = strconv.Itoa(end)
	}
	return res, nil
}

// eventSubscription is what events/poll and events/stream name: a type,
// its arguments, and where to start.
type eventSubscription struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Cursor    *string         `json:"cursor"`
	MaxAgeMs  *int64          `json:"maxAgeMs,omitempty"`
	MaxEvents *int64          `json:"maxEvents,omitempty"`
}

// subscription decodes the params of events/poll or events/stream and
// checks them against the declared types; it returns the cursor given, ""
// for none.
func (ev *serverEvents) subscription(params json.RawMessage) (*eventSubscription, string, error) {
	var sub eventSubscription
	if err := decodeParams(params, &sub); err != nil {
		return nil, "", err
	}
	if err := ev.check(&sub); err != nil {
		return nil, "", err
	}
	if sub.Cursor == nil {
		return &sub, "", nil
	}
	return &sub, *sub.Cursor, nil
}

// check checks a subscription against the declared types: -32602 for a
// bad request, CodeNotFound for an unknown type.
func (ev *serverEvents) check(sub *eventSubscription) error {
	if sub.Cursor != nil && len(*sub.Cursor) > maxEventCursorBytes {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: the cursor is too long"}
	}
	ev.mu.RLock()
	t, ok := ev.types[sub.Name]
	ev.mu.RUnlock()
	if !ok {
		return errEventTypeGone(sub.Name)
	}
	if _, err := validateArguments(t.input, sub.Arguments); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return nil
}

// query is the log query of a subscription at cursor.
func (sub *eventSubscription) query(cursor string, max int, now time.Time) EventQuery {
	q := EventQuery{Name: sub.Name, Cursor: cursor, MaxEvents: max}
	if sub.MaxAgeMs != nil && *sub.MaxAgeMs >= 0 {
		q.Since = now.Add(-peerDuration(*sub.MaxAgeMs, time.Millisecond))
	}
	return q
}

// EventPollResult is the result of events/poll. Both sides: a server
// answers it; [Client.PollEvents] returns it.
type EventPollResult struct {
	Events []EventOccurrence `json:"events"`
	// Cursor is where the next poll starts; empty (null on the wire) when
	// the type has no replay.
	Cursor string `json:"cursor,omitempty"`
	// Truncated: occurrences after the given cursor were dropped before
	// they could be read (retention, or maxAgeMs).
	Truncated bool `json:"truncated"`
	// HasMore: poll again at once.
	HasMore bool `json:"hasMore"`
	// NextPollMs is when to poll next, when HasMore is false.
	NextPollMs int64 `json:"nextPollMs"`
}

// poll serves events/poll: one Read of the log.
func (ev *serverEvents) poll(ctx context.Context, params json.RawMessage) (any, error) {
	sub, cursor, err := ev.subscription(params)
	if err != nil {
		return nil, err
	}
	limit := defaultPollEvents
	if sub.MaxEvents != nil {
		limit = int(min(max(*sub.MaxEvents, 1), maxPollEvents))
	}
	page, err := ev.log.Read(ctx, sub.query(cursor, limit, time.Now()))
	if err != nil {
		return nil, eventLogError(err)
	}
	res := &EventPollResult{Events: ev.filter(sub.Name, sub.Arguments, page.Events), Cursor: page.Cursor, Truncated: page.Truncated, HasMore: page.HasMore}
	if res.Events == nil {
		res.Events = []EventOccurrence{}
	}
	for i := range res.Events {
		res.Events[i].Cursor = "" // a poll carries its cursor in the result
	}
	if !res.HasMore {
		res.NextPollMs = ev.opts.PollInterval.Milliseconds()
	}
	return res, nil
}

// eventLogError is the answer to a request whose Read failed: -32602 for a
// cursor the log does not know, else an internal error.
func eventLogError(err error) error {
	if errors.Is(err, ErrInvalidEventCursor) {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return internalError(err)
}

// parseSmallInt parses a decimal int of at most 9 digits.
func parseSmallInt(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// truncateForMessage bounds a peer's string quoted in an error message.
func truncateForMessage(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "") + "…"
}
