package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// ticket is the payload of the test servers' "ticket.created" events.
type ticket struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

// eventsServer returns a server with the event types ticket.created
// (typed) and build.finished (raw, arguments need a branch), and the topic
// of the first.
func eventsServer(opts ...ServerOption) (*Server, *EventTopic[ticket]) {
	s := NewServer(Implementation{Name: "events", Version: "1"}, opts...)
	topic := AddEventType[ticket](s, "ticket.created", "A ticket was opened.")
	s.AddEventType(EventType{
		Name:        "build.finished",
		Description: "A build ended.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"branch":{"type":"string"}},"required":["branch"]}`),
	})
	return s, topic
}

// eachEventsCase runs fn on both eras over memory and HTTP.
func eachEventsCase(t *testing.T, fn func(t *testing.T, connect func(*Server) *Client)) {
	for _, v := range eras {
		for _, carrier := range []string{"memory", "http"} {
			t.Run(v+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				fn(t, func(s *Server) *Client {
					if carrier == "http" {
						return connectHTTP(t, s, WithProtocolVersion(v))
					}
					return pair(t, s, WithProtocolVersion(v))
				})
			})
		}
	}
}

func publishTickets(t *testing.T, topic *EventTopic[ticket], from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := topic.Publish(context.Background(), ticket{ID: i, Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
}

func ticketIDs(t *testing.T, events []EventOccurrence) []int {
	t.Helper()
	var ids []int
	for _, e := range events {
		var tk ticket
		if err := json.Unmarshal(e.Data, &tk); err != nil {
			t.Fatalf("data %s: %v", e.Data, err)
		}
		ids = append(ids, tk.ID)
	}
	return ids
}

// TestEventsListAndPoll: the extension is declared, events/list lists the
// types with their schemas, a poll from now returns nothing and a cursor,
// later polls return what was published in order, a page at a time, and a
// poll from an older cursor replays.
func TestEventsListAndPoll(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, topic := eventsServer()
		cl := connect(s)
		ctx := context.Background()
		if _, ok := cl.ServerCapabilities().Extensions[EventsExtension]; !ok {
			t.Fatalf("extensions %v lack %s", cl.ServerCapabilities().Extensions, EventsExtension)
		}
		var names []string
		for et, err := range cl.EventTypes(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, et.Name)
			if strings.Join(et.Delivery, ",") != "poll,push" || len(et.InputSchema) == 0 {
				t.Errorf("%s: delivery %v, input schema %s", et.Name, et.Delivery, et.InputSchema)
			}
			if et.Name == "ticket.created" && !strings.Contains(string(et.PayloadSchema), `"title"`) {
				t.Errorf("payload schema %s", et.PayloadSchema)
			}
		}
		if strings.Join(names, ",") != "ticket.created,build.finished" {
			t.Fatalf("event types %v", names)
		}

		sub := EventSubscription{Name: "ticket.created"}
		first, err := cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Events) != 0 || first.Cursor == "" || first.Truncated || first.HasMore || first.NextPollMs != DefaultEventPollInterval.Milliseconds() {
			t.Fatalf("first poll %+v", first)
		}
		publishTickets(t, topic, 0, 5)
		sub.Cursor, sub.MaxEvents = first.Cursor, 3
		page, err := cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if got := ticketIDs(t, page.Events); len(got) != 3 || got[0] != 0 || got[2] != 2 || !page.HasMore || page.NextPollMs != 0 {
			t.Fatalf("page 1: %v %+v", got, page)
		}
		e := page.Events[0]
		if e.Name != "ticket.created" || !strings.HasPrefix(e.EventID, "evt_") || e.Timestamp.IsZero() || e.Cursor != "" {
			t.Fatalf("occurrence %+v", e)
		}
		sub.Cursor = page.Cursor
		page, err = cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if got := ticketIDs(t, page.Events); len(got) != 2 || got[0] != 3 || got[1] != 4 || page.HasMore {
			t.Fatalf("page 2: %v %+v", got, page)
		}
		// Replay: the first cursor again reads it all again.
		sub.Cursor, sub.MaxEvents = first.Cursor, 0
		page, err = cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if got := ticketIDs(t, page.Events); len(got) != 5 || page.Truncated {
			t.Fatalf("replay: %v %+v", got, page)
		}
	})
}

// TestEventsErrors: an unknown event type is CodeNotFound with data kind
// event; a cursor the log never minted, a cursor too long and arguments
// that break the input schema are -32602; webhooks are not offered; a
// server with no event type has no events/* methods.
func TestEventsErrors(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, _ := eventsServer()
		cl := connect(s)
		ctx := context.Background()
		cases := []struct {
			name string
			sub  EventSubscription
			code int
		}{
			{"unknown type", EventSubscription{Name: "nope"}, CodeNotFound},
			{"forged cursor", EventSubscription{Name: "ticket.created", Cursor: "forged"}, CodeInvalidParams},
			{"cursor too long", EventSubscription{Name: "ticket.created", Cursor: strings.Repeat("x", 1000)}, CodeInvalidParams},
			{"bad arguments", EventSubscription{Name: "build.finished", Arguments: map[string]any{"branch": 7}}, CodeInvalidParams},
		}
		for _, tc := range cases {
			_, err := cl.PollEvents(ctx, tc.sub)
			var rpcErr *Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != tc.code {
				t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
				continue
			}
			if tc.code == CodeNotFound && !strings.Contains(string(rpcErr.Data), `"kind":"event"`) {
				t.Errorf("%s: data %s", tc.name, rpcErr.Data)
			}
			// events/stream refuses the same way, before any stream.
			_, err = cl.StreamEvents(ctx, tc.sub, 0, func(EventOccurrence) { t.Error("an event on a refused stream") })
			if !errors.As(err, &rpcErr) || rpcErr.Code != tc.code {
				t.Errorf("%s: stream: %v, want code %d", tc.name, err, tc.code)
			}
		}
		if _, err := cl.PollEvents(ctx, EventSubscription{Name: "build.finished", Arguments: map[string]any{"branch": "main"}}); err != nil {
			t.Errorf("valid arguments: %v", err)
		}
		err := cl.SendRequest(ctx, "events/subscribe", map[string]any{"name": "ticket.created"}, nil)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeMethodNotFound {
			t.Errorf("events/subscribe: %v", err)
		}

		plain := connect(newTestServer())
		if _, ok := plain.ServerCapabilities().Extensions[EventsExtension]; ok {
			t.Error("a server with no event type declares the extension")
		}
		_, err = plain.ListEventTypes(ctx, "")
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeMethodNotFound {
			t.Errorf("events/list without events: %v", err)
		}
	})
}

// TestPublishEventRefuses: an undeclared type, a payload that is not an
// object, or one too big is not published.
func TestPublishEventRefuses(t *testing.T) {
	t.Parallel()
	s, _ := eventsServer()
	ctx := context.Background()
	for name, e := range map[string]EventOccurrence{
		"undeclared": {Name: "nope"},
		"array":      {Name: "ticket.created", Data: json.RawMessage(`[1]`)},
		"too big":    {Name: "ticket.created", Data: json.RawMessage(`{"x":"` + strings.Repeat("a", MaxEventBytes) + `"}`)},
		"long id":    {Name: "ticket.created", EventID: strings.Repeat("i", 300)},
	} {
		if _, err := s.PublishEvent(ctx, e); err == nil {
			t.Errorf("%s: published", name)
		}
	}
	e, err := s.PublishEvent(ctx, EventOccurrence{Name: "ticket.created", EventID: "upstream-1"})
	if err != nil || e.EventID != "upstream-1" || string(e.Data) != "{}" {
		t.Errorf("published %+v, %v", e, err)
	}
}

// TestMemoryEventLogRetention: a cursor keeps every occurrence while the
// log holds at most its bound after it, and is truncated one past it, by
// count and by bytes; a cursor of another log instance starts at the
// oldest kept, truncated; one ahead of the newest is clamped; maxAgeMs
// skips old occurrences, truncated.
func TestMemoryEventLogRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	size := eventOverhead + len("a") + len("id-00") + len(`{}`)
	cases := []struct {
		name                string
		maxEvents, maxBytes int
		bound               int // occurrences the bound keeps
	}{
		{"count", 4, 0, 4},
		{"bytes", 0, 4 * size, 4},
	}
	for _, tc := range cases {
		for _, extra := range []int{0, 1} {
			log := NewMemoryEventLog(tc.maxEvents, tc.maxBytes)
			start, err := log.Read(ctx, EventQuery{Name: "a"})
			if err != nil {
				t.Fatal(err)
			}
			n := tc.bound + extra
			for i := range n {
				e := EventOccurrence{EventID: "id-" + string(rune('0'+i/10)) + string(rune('0'+i%10)), Name: "a", Data: json.RawMessage(`{}`)}
				if err := log.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			page, err := log.Read(ctx, EventQuery{Name: "a", Cursor: start.Cursor, MaxEvents: 100})
			if err != nil {
				t.Fatal(err)
			}
			if page.Truncated != (extra == 1) || len(page.Events) != tc.bound || page.Events[0].EventID != "id-0"+string(rune('0'+extra)) {
				t.Errorf("%s, %d published: truncated %v, %d events from %s", tc.name, n, page.Truncated, len(page.Events), page.Events[0].EventID)
			}
			if extra == 1 && page.From == start.Cursor {
				t.Errorf("%s: a truncated page starts at the cursor given", tc.name)
			}
		}
	}

	log := NewMemoryEventLog(0, 0)
	for range 3 {
		log.Append(ctx, EventOccurrence{EventID: "x", Name: "a", Data: json.RawMessage(`{}`), Timestamp: time.Now()})
	}
	other, _ := NewMemoryEventLog(0, 0).Read(ctx, EventQuery{Name: "a"})
	page, err := log.Read(ctx, EventQuery{Name: "a", Cursor: other.Cursor, MaxEvents: 10})
	if err != nil || !page.Truncated || len(page.Events) != 3 {
		t.Errorf("another instance's cursor: %+v, %v", page, err)
	}
	head, _ := log.Read(ctx, EventQuery{Name: "a"})
	epoch, _, _ := strings.Cut(head.Cursor, ".")
	page, err = log.Read(ctx, EventQuery{Name: "a", Cursor: epoch + ".999999", MaxEvents: 10})
	if err != nil || page.Truncated || len(page.Events) != 0 || page.Cursor != head.Cursor {
		t.Errorf("a cursor ahead: %+v, %v", page, err)
	}
	for _, bad := range []string{"x", epoch + ".-1", epoch + ".1.2", "." + epoch} {
		if _, err := log.Read(ctx, EventQuery{Name: "a", Cursor: bad}); !errors.Is(err, ErrInvalidEventCursor) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	page, err = log.Read(ctx, EventQuery{Name: "a", Cursor: epoch + ".0", MaxEvents: 10, Since: time.Now().Add(time.Hour)})
	if err != nil || !page.Truncated || len(page.Events) != 0 {
		t.Errorf("maxAge: %+v, %v", page, err)
	}
	// Another type's occurrences dropped do not truncate this one's.
	small := NewMemoryEventLog(2, 0)
	c, _ := small.Read(ctx, EventQuery{Name: "a"})
	small.Append(ctx, EventOccurrence{Name: "b", Data: json.RawMessage(`{}`)})
	small.Append(ctx, EventOccurrence{Name: "b", Data: json.RawMessage(`{}`)})
	small.Append(ctx, EventOccurrence{Name: "a", Data: json.RawMessage(`{}`)})
	if page, _ := small.Read(ctx, EventQuery{Name: "a", Cursor: c.Cursor, MaxEvents: 10}); page.Truncated || len(page.Events) != 1 {
		t.Errorf("other type dropped: %+v", page)
	}
}

// TestEventsPollTruncated: over the wire, a poll whose cursor fell out of
// the retention bound is truncated and resumes at the oldest kept.
func TestEventsPollTruncated(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, topic := eventsServer(WithEvents(EventOptions{Log: NewMemoryEventLog(3, 0)}))
		cl := connect(s)
		ctx := context.Background()
		sub := EventSubscription{Name: "ticket.created"}
		first, err := cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 3)
		sub.Cursor = first.Cursor
		if page, err := cl.PollEvents(ctx, sub); err != nil || page.Truncated || len(page.Events) != 3 {
			t.Fatalf("at the bound: %+v, %v", page, err)
		}
		publishTickets(t, topic, 3, 4)
		page, err := cl.PollEvents(ctx, sub)
		if err != nil || !page.Truncated {
			t.Fatalf("one past the bound: %+v, %v", page, err)
		}
		if got := ticketIDs(t, page.Events); len(got) != 3 || got[0] != 1 {
			t.Fatalf("one past the bound: %v", got)
		}
	})
}

// TestPolledEvents: the poll iterator reads page after page while the
// server has more, pauses for nextPollMs when it has not, marks the last
// occurrence of each poll with the cursor to resume from, and ends with
// ctx.
func TestPolledEvents(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, topic := eventsServer(WithEvents(EventOptions{PollInterval: 2 * time.Second}))
				cl := pair(t, s, WithProtocolVersion(v))
				start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
				if err != nil {
					t.Fatal(err)
				}
				publishTickets(t, topic, 0, 5)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					time.Sleep(time.Second)
					publishTickets(t, topic, 5, 7)
				}()
				began := time.Now()
				var ids []int
				var marked []bool
				for e, err := range cl.PolledEvents(ctx, EventSubscription{Name: "ticket.created", Cursor: start.Cursor, MaxEvents: 2}) {
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, ticketIDs(t, []EventOccurrence{e})...)
					marked = append(marked, e.Cursor != "")
					if len(ids) == 5 && time.Since(began) != 0 {
						t.Fatalf("the first five took %v: pages with more follow at once", time.Since(began))
					}
					if len(ids) == 6 && time.Since(began) != 2*time.Second {
						t.Fatalf("the sixth came after %v, want the 2s the server asked", time.Since(began))
					}
					if len(ids) == 7 {
						break
					}
				}
				if fmt.Sprint(ids) != "[0 1 2 3 4 5 6]" {
					t.Fatalf("occurrences %v", ids)
				}
				// Pages of two: [0 1] [2 3] [4] [5 6].
				if fmt.Sprint(marked) != "[false true false true true false true]" {
					t.Fatalf("cursors on %v", marked)
				}
				cancel()
				for _, err := range cl.PolledEvents(ctx, EventSubscription{Name: "ticket.created"}) {
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("after cancel: %v", err)
					}
				}
			})
		})
	}
}

// TestPolledEventsPauseIsBounded: a server that asks for polls a
// millisecond apart gets them at most every 100 ms.
func TestPolledEventsPauseIsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, topic := eventsServer(WithEvents(EventOptions{PollInterval: time.Millisecond}))
		cl := pair(t, s)
		go func() {
			time.Sleep(50 * time.Millisecond)
			publishTickets(t, topic, 0, 1)
		}()
		began := time.Now()
		start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range cl.PolledEvents(context.Background(), EventSubscription{Name: "ticket.created", Cursor: start.Cursor}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if d := time.Since(began); d != minEventPollPause {
			t.Fatalf("the occurrence came after %v, want %v", d, minEventPollPause)
		}
	})
}

// TestRemoveEventType: on both eras over memory and HTTP, a removed event
// type's push stream ends with notifications/events/terminated, which
// StreamEvents returns as a CodeNotFound error of kind "event"; polls get
// the same; the list no longer has it; the server says it sends
// list_changed.
func TestRemoveEventType(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, topic := eventsServer()
		cl := connect(s)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if got := string(cl.ServerCapabilities().Extensions[EventsExtension]); got != `{"listChanged":true}` {
			t.Fatalf("the extension's settings: %s", got)
		}
		start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan EventOccurrence, 8)
		ended := make(chan error, 1)
		go func() {
			_, err := cl.StreamEvents(ctx, EventSubscription{Name: "ticket.created", Cursor: start.Cursor}, 0, func(e EventOccurrence) { got <- e })
			ended <- err
		}()
		publishTickets(t, topic, 0, 1)
		receive(t, got, 1)
		if !s.RemoveEventType("ticket.created") || s.RemoveEventType("ticket.created") {
			t.Fatal("RemoveEventType did not report the type, then its absence")
		}
		select {
		case err := <-ended:
			wantCode(t, err, CodeNotFound, "kind", "event")
		case <-ctx.Done():
			t.Fatal("the stream of a removed type did not end")
		}
		_, err = cl.PollEvents(ctx, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
		wantCode(t, err, CodeNotFound, "kind", "event")
		var names []string
		for et, err := range cl.EventTypes(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, et.Name)
		}
		if fmt.Sprint(names) != "[build.finished]" {
			t.Fatalf("event types after the removal: %v", names)
		}
	})
}

// TestEventsListChanged: a 2026-07-28 listen stream that asks for
// eventsListChanged gets it acknowledged and is told of each event type
// added or removed once the server serves; a 2025-11-25 session is told
// only if its client declared the extension.
func TestEventsListChanged(t *testing.T) {
	t.Parallel()
	t.Run("listen", func(t *testing.T) {
		t.Parallel()
		s, _ := eventsServer()
		p := rawServer(t, s)
		p.send(`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"eventsListChanged":true},` + modernMeta + `}}`)
		p.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"eventsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"l"}}}`)
		s.AddEventType(EventType{Name: "added"})
		if msg := p.recv(); !strings.Contains(msg, `"notifications/events/list_changed"`) {
			t.Fatalf("after AddEventType: %s", msg)
		}
		s.RemoveEventType("added")
		if msg := p.recv(); !strings.Contains(msg, `"notifications/events/list_changed"`) {
			t.Fatalf("after RemoveEventType: %s", msg)
		}
	})
	t.Run("legacy", func(t *testing.T) {
		t.Parallel()
		s, _ := eventsServer()
		told := make(chan struct{}, 4)
		note := WithNotificationHandler("notifications/events/list_changed", func(context.Context, json.RawMessage) { told <- struct{}{} })
		with := pair(t, s, WithProtocolVersion(Version20251125), WithExtension(EventsExtension, struct{}{}), note)
		without := pair(t, s, WithProtocolVersion(Version20251125), WithNotificationHandler("notifications/events/list_changed", func(context.Context, json.RawMessage) { t.Error("told a client that did not declare the extension") }))
		s.AddEventType(EventType{Name: "added"})
		select {
		case <-told:
		case <-time.After(10 * time.Second):
			t.Fatal("the client that declared the extension was not told")
		}
		// A round trip on the other session: a notification sent to it
		// would have come first.
		if _, err := without.ListEventTypes(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		_ = with
	})
}
