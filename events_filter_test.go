package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// filterArgs are the arguments of the test's filtered subscriptions: the
// smallest ticket id wanted, and whether titles come in capitals.
type filterArgs struct {
	MinID int  `json:"minID"`
	Upper bool `json:"upper"`
}

// filterTickets gives topic a Filter that keeps tickets from args.minID
// on, their titles in capitals when args.upper; ticket 13 makes it panic.
func filterTickets(topic *EventTopic[ticket]) {
	topic.Filter(func(args json.RawMessage, tk ticket) (ticket, bool) {
		var a filterArgs
		json.Unmarshal(args, &a)
		if tk.ID == 13 {
			panic("thirteen")
		}
		if a.Upper {
			tk.Title = strings.ToUpper(tk.Title)
		}
		return tk, tk.ID >= a.MinID
	})
}

// TestEventFilter: an event type's Filter decides what each subscription
// gets, by its arguments, on polls and streams of both eras over memory
// and HTTP: occurrences it skips are left out with the cursor moving past
// them, the ones it changes arrive changed, a subscription without
// arguments gets what {} selects, and a panic in it skips the occurrence
// and leaves the server serving.
func TestEventFilter(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		logs := &logRecorder{}
		s, topic := eventsServer(WithLogger(slogOf(logs)))
		filterTickets(topic)
		cl := connect(s)
		ctx := context.Background()
		start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor, Arguments: filterArgs{MinID: 11, Upper: true}}
		got, stop := streamInto(cl, sub)
		defer stop()
		publishTickets(t, topic, 0, 1) // below minID
		publishTickets(t, topic, 10, 16)
		streamed := receive(t, got, 4)
		if ids := ticketIDs(t, streamed); fmt.Sprint(ids) != "[11 12 14 15]" {
			t.Fatalf("streamed %v", ids)
		}
		var tk ticket
		json.Unmarshal(streamed[0].Data, &tk)
		if tk.Title != "T" {
			t.Fatalf("title %q, want it in capitals", tk.Title)
		}
		page, err := cl.PollEvents(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if ids := ticketIDs(t, page.Events); fmt.Sprint(ids) != "[11 12 14 15]" || page.HasMore {
			t.Fatalf("polled %v %+v", ids, page)
		}
		// Past what it skipped: the next poll starts after ticket 15.
		publishTickets(t, topic, 16, 17)
		sub.Cursor = page.Cursor
		if page, err = cl.PollEvents(ctx, sub); err != nil || fmt.Sprint(ticketIDs(t, page.Events)) != "[16]" {
			t.Fatalf("the next poll: %+v %v", page, err)
		}
		// No arguments: minID 0, titles as published; 13 still panics.
		all, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
		if err != nil {
			t.Fatal(err)
		}
		if ids := ticketIDs(t, all.Events); fmt.Sprint(ids) != "[0 10 11 12 14 15 16]" {
			t.Fatalf("without arguments: %v", ids)
		}
		if n := logs.count("Filter panicked"); n == 0 {
			t.Fatal("the panic was not logged")
		}
	})
}

// TestEventFilterWebhook: webhook delivery applies the Filter too, and a
// page it skips whole moves the watermark past it rather than reading it
// again.
func TestEventFilterWebhook(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newScriptedEndpoint()
		s, topic := bubbleServer(t.Context(), e, nil)
		filterTickets(topic)
		secret := NewWebhookSecret()
		e.receiver.AddSecret(secret)
		params := hookParams("/h", secret, 0)
		params["arguments"] = map[string]any{"minID": 5}
		if _, err := subscribeAs(t, s, "events/subscribe", "alice", params); err != nil {
			t.Fatal(err)
		}
		publishTickets(t, topic, 0, 3) // skipped whole
		synctest.Wait()
		publishTickets(t, topic, 3, 7)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := e.tickets(t); fmt.Sprint(got) != "[5 6]" {
			t.Fatalf("delivered %v", got)
		}
		e.mu.Lock()
		attempts := len(e.attempts)
		e.mu.Unlock()
		if attempts != 2 {
			t.Fatalf("%d delivery attempts, want 2", attempts)
		}
	})
}
