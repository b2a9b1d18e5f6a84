package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// streamInto runs StreamEvents for sub in a goroutine, sending what it
// delivers to the returned channel; the stream ends when stop is called,
// which returns StreamEvents' cursor and error.
func streamInto(cl *Client, sub EventSubscription) (<-chan EventOccurrence, func() (string, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan EventOccurrence, 1024)
	type end struct {
		cursor string
		err    error
	}
	done := make(chan end, 1)
	go func() {
		c, err := cl.StreamEvents(ctx, sub, 0, func(e EventOccurrence) { got <- e })
		done <- end{c, err}
	}()
	return got, func() (string, error) {
		cancel()
		e := <-done
		return e.cursor, e.err
	}
}

func receive(t *testing.T, got <-chan EventOccurrence, n int) []EventOccurrence {
	t.Helper()
	var out []EventOccurrence
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e := <-got:
			out = append(out, e)
		case <-timeout:
			t.Fatalf("%d of %d occurrences arrived", len(out), n)
		}
	}
	return out
}

// TestEventsStreamOrderUnderConcurrentPublishers: a push stream delivers
// every occurrence that concurrent publishers publish, each publisher's in
// its order and all in the log's order, on both eras over memory and
// HTTP; the stream ends with its context and the goroutines settle.
func TestEventsStreamOrderUnderConcurrentPublishers(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, _ := eventsServer()
		cl := connect(s)
		ctx := context.Background()
		start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		got, stop := streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
		const publishers, each = 4, 50
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for i := range each {
					data, _ := json.Marshal(ticket{ID: p*1000 + i})
					if _, err := s.PublishEvent(ctx, EventOccurrence{Name: "ticket.created", Data: data}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		events := receive(t, got, publishers*each)
		// The log's order: a poll from the same cursor reads it.
		var logged []EventOccurrence
		sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor, MaxEvents: 1000}
		for {
			page, err := cl.PollEvents(ctx, sub)
			if err != nil {
				t.Fatal(err)
			}
			logged = append(logged, page.Events...)
			sub.Cursor = page.Cursor
			if !page.HasMore {
				break
			}
		}
		last := map[int]int{}
		for i, e := range events {
			if e.EventID != logged[i].EventID {
				t.Fatalf("occurrence %d is %s, the log has %s", i, e.EventID, logged[i].EventID)
			}
			if e.Cursor == "" {
				t.Fatalf("occurrence %d has no cursor", i)
			}
			var tk ticket
			json.Unmarshal(e.Data, &tk)
			p, n := tk.ID/1000, tk.ID%1000
			if prev, ok := last[p]; ok && n != prev+1 {
				t.Fatalf("publisher %d: %d after %d", p, n, prev)
			}
			last[p] = n
		}
		select {
		case e := <-got:
			t.Fatalf("an extra occurrence %s", e.EventID)
		case <-time.After(20 * time.Millisecond):
		}
		cursor, err := stop()
		if !errors.Is(err, context.Canceled) || cursor != events[len(events)-1].Cursor {
			t.Fatalf("StreamEvents returned %q, %v; the last cursor is %q", cursor, err, events[len(events)-1].Cursor)
		}
	})
}

// TestEventsStreamGoroutinesSettle: once streams end, and then their
// connections, no goroutine of theirs is left (not parallel: it counts
// the process's goroutines).
func TestEventsStreamGoroutinesSettle(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, v := range eras {
		for _, carrier := range []string{"memory", "http"} {
			t.Run(v+"/"+carrier, func(t *testing.T) {
				s, topic := eventsServer()
				var cl *Client
				if carrier == "http" {
					cl = connectHTTP(t, s, WithProtocolVersion(v))
				} else {
					cl = pair(t, s, WithProtocolVersion(v))
				}
				start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
				if err != nil {
					t.Fatal(err)
				}
				var stops []func() (string, error)
				var gots []<-chan EventOccurrence
				for range 3 {
					got, stop := streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
					stops, gots = append(stops, stop), append(gots, got)
				}
				publishTickets(t, topic, 0, 2)
				for i, stop := range stops {
					receive(t, gots[i], 2)
					if _, err := stop(); !errors.Is(err, context.Canceled) {
						t.Errorf("StreamEvents: %v", err)
					}
				}
			})
		}
	}
	if n := goroutinesLeftAfter(before, 5*time.Second); n > 0 {
		t.Errorf("%d goroutines more than before the streams", n)
	}
}

// TestEventsStreamResumesFromCursor: a stream ended and opened again from
// the cursor StreamEvents returned gets what was published in between,
// none twice, none lost; a stream whose cursor fell out of retention says
// so (OnTruncated) and delivers what is kept.
func TestEventsStreamResumesFromCursor(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, topic := eventsServer(WithEvents(EventOptions{Log: NewMemoryEventLog(5, 0)}))
		cl := connect(s)
		start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		got, stop := streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
		publishTickets(t, topic, 0, 3)
		first := receive(t, got, 3)
		cursor, _ := stop()
		publishTickets(t, topic, 3, 5)
		got, stop = streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: cursor})
		second := receive(t, got, 2)
		if ids := ticketIDs(t, append(first, second...)); len(ids) != 5 || ids[3] != 3 || ids[4] != 4 {
			t.Fatalf("resumed: %v", ids)
		}
		cursor, _ = stop()

		publishTickets(t, topic, 5, 11) // the log keeps 5: ticket 5 is gone
		var truncated []string
		var mu sync.Mutex
		got, stop = streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: cursor, OnTruncated: func(c string) {
			mu.Lock()
			truncated = append(truncated, c)
			mu.Unlock()
		}})
		kept := receive(t, got, 5)
		stop()
		if ids := ticketIDs(t, kept); ids[0] != 6 || ids[4] != 10 {
			t.Fatalf("after truncation: %v", ids)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(truncated) != 1 || truncated[0] == cursor {
			t.Fatalf("OnTruncated calls: %q (cursor was %q)", truncated, cursor)
		}
	})
}

// TestEventsStreamWire: the exact messages of a stream on a 2025-11-25
// stdio session: notifications/events/active first, then each event, each
// with the request's id as its subscription id; a heartbeat carries the
// cursor on quiet; notifications/cancelled ends it.
func TestEventsStreamWire(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, topic := eventsServer(WithEvents(EventOptions{Heartbeat: time.Second}))
		p := rawServer(t, s)
		p.initialize(Version20251125)
		p.send(`{"jsonrpc":"2.0","id":"s1","method":"events/stream","params":{"name":"ticket.created"}}`)
		active := p.recv()
		if field(t, active, "method") != "notifications/events/active" || !strings.Contains(active, `"_meta":{"io.modelcontextprotocol/subscriptionId":"s1"}`) {
			t.Fatalf("first: %s", active)
		}
		cursor, _ := field(t, active, "params.cursor").(string)
		if cursor == "" || field(t, active, "params.truncated") != false {
			t.Fatalf("active: %s", active)
		}
		synctest.Wait()
		if _, err := topic.Publish(context.Background(), ticket{ID: 1, Title: "one"}); err != nil {
			t.Fatal(err)
		}
		ev := p.recv()
		var n struct {
			Method string `json:"method"`
			Params struct {
				EventOccurrence
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(ev), &n); err != nil || n.Method != "notifications/events/event" || n.Params.Name != "ticket.created" ||
			string(n.Params.Data) != `{"id":1,"title":"one"}` || n.Params.Cursor == "" || n.Params.Cursor == cursor || n.Params.Meta[metaSubscriptionID] != "s1" ||
			!strings.HasSuffix(n.Params.Timestamp.Format(time.RFC3339Nano), "Z") {
			t.Fatalf("event: %s (%v)", ev, err)
		}
		// Occurrences of another type move the heartbeat's cursor on.
		s.PublishEvent(context.Background(), EventOccurrence{Name: "build.finished"})
		time.Sleep(1500 * time.Millisecond)
		hb := p.recv()
		if field(t, hb, "method") != "notifications/events/heartbeat" || field(t, hb, "params.cursor") == n.Params.Cursor {
			t.Fatalf("heartbeat: %s", hb)
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`)
		synctest.Wait()
		p.w.Close()
	})
}

// TestEventsStreamReopensWhenQuiet: a stream that stays quiet longer than
// its liveness is reopened from its cursor: what is published after comes
// once, nothing before it again.
func TestEventsStreamReopensWhenQuiet(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, topic := eventsServer(WithEvents(EventOptions{Heartbeat: time.Hour}))
				logs := &logRecorder{}
				cl := pair(t, s, WithProtocolVersion(v), WithLogger(slogOf(logs)))
				start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var got []EventOccurrence
				done := make(chan error, 1)
				go func() {
					_, err := cl.StreamEvents(ctx, EventSubscription{Name: "ticket.created", Cursor: start.Cursor}, time.Second, func(e EventOccurrence) { got = append(got, e) })
					done <- err
				}()
				publishTickets(t, topic, 0, 2)
				time.Sleep(2500 * time.Millisecond) // past the liveness, and the back-off
				synctest.Wait()
				publishTickets(t, topic, 2, 4)
				synctest.Wait()
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("StreamEvents: %v", err)
				}
				if ids := ticketIDs(t, got); len(ids) != 4 || ids[0] != 0 || ids[3] != 3 {
					t.Fatalf("delivered %v", ids)
				}
				if logs.count("reopening the event stream") == 0 {
					t.Fatal("the quiet stream was not reopened")
				}
			})
		})
	}
}

// TestEventsStreamNotShedAtTheDispatchCap: a client whose dispatch slots
// are all taken by a notification handler that does not return still gets
// every occurrence of its event stream, in order: the stream's
// notifications go to it on the read path, not behind the cap, which would
// shed them (TestEventsFleet/2025-11-25 lost occurrences that way under
// load).
func TestEventsStreamNotShedAtTheDispatchCap(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		for _, carrier := range []string{"memory", "http"} {
			t.Run(v+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				s, topic := eventsServer()
				s.AddTool(Tool{Name: "hold"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
					return &CallToolResult{}, req.Gateway().Notify("notifications/test/hold", nil)
				})
				held, release := make(chan struct{}, 1), make(chan struct{})
				defer close(release)
				opts := []ClientOption{WithProtocolVersion(v), WithMaxInFlight(1),
					WithNotificationHandler("notifications/test/hold", func(context.Context, json.RawMessage) {
						held <- struct{}{}
						<-release
					})}
				var cl *Client
				if carrier == "http" {
					cl = connectHTTP(t, s, opts...)
				} else {
					cl = pair(t, s, opts...)
				}
				if _, err := cl.CallTool(context.Background(), "hold", nil); err != nil {
					t.Fatal(err)
				}
				<-held // the one slot is taken until the test ends
				start, err := cl.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
				if err != nil {
					t.Fatal(err)
				}
				got, stop := streamInto(cl, EventSubscription{Name: "ticket.created", Cursor: start.Cursor})
				const n = 50
				publishTickets(t, topic, 0, n)
				ids := ticketIDs(t, receive(t, got, n))
				for i, id := range ids {
					if id != i {
						t.Fatalf("occurrences %v, want 0 through %d in order", ids, n-1)
					}
				}
				if _, err := stop(); !errors.Is(err, context.Canceled) {
					t.Errorf("StreamEvents: %v", err)
				}
			})
		}
	}
}
