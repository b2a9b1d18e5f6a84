package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEventsStreamBound: with MaxStreams 3 and WithMaxInFlight(2), a
// client holds exactly 3 streams open (more than the in-flight cap), a
// 4th is refused with CodeOverloaded, ordinary tools/call still runs
// beside the 3, and once one stream ends another is admitted; on both
// eras over memory and HTTP.
func TestEventsStreamBound(t *testing.T) {
	t.Parallel()
	eachEventsCase(t, func(t *testing.T, connect func(*Server) *Client) {
		s, topic := eventsServer(WithMaxInFlight(2), WithEvents(EventOptions{MaxStreams: 3}))
		s.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("echo")}}, nil
		})
		cl := connect(s)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
		if err != nil {
			t.Fatal(err)
		}
		sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor}
		var stops []func() (string, error)
		var gots []<-chan EventOccurrence
		for range 3 {
			got, stop := streamInto(cl, sub)
			stops, gots = append(stops, stop), append(gots, got)
		}
		defer func() {
			for _, stop := range stops {
				stop()
			}
		}()
		// Each stream delivers what follows: all three are open.
		publishTickets(t, topic, 0, 1)
		for _, got := range gots {
			receive(t, got, 1)
		}
		refusedCtx, cancelRefused := context.WithTimeout(ctx, 10*time.Second)
		defer cancelRefused()
		_, err = cl.StreamEvents(refusedCtx, sub, 0, func(EventOccurrence) { t.Error("the refused stream delivered") })
		var rpcErr *Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeOverloaded {
			t.Fatalf("a 4th stream: %v, want CodeOverloaded", err)
		}
		for i := range 3 {
			res, err := cl.CallTool(ctx, "echo", nil)
			if err != nil || res.IsError {
				t.Fatalf("tools/call %d beside 3 streams under WithMaxInFlight(2): %+v, %v", i, res, err)
			}
		}
		if _, err := stops[0](); !errors.Is(err, context.Canceled) {
			t.Fatalf("ending a stream: %v", err)
		}
		// The server learns that the stream ended in its own time (on HTTP
		// when it sees the connection close): until then a new one may be
		// refused. Open one until it is admitted and delivers.
		for i := 1; ; i++ {
			got, stop := streamInto(cl, sub)
			publishTickets(t, topic, i, i+1)
			select {
			case <-got:
				stops[0] = stop
				return
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("no stream was admitted after one ended")
			}
			if _, err := stop(); !errors.As(err, &rpcErr) && !errors.Is(err, context.Canceled) {
				t.Fatalf("a stream opened after one ended: %v", err)
			}
		}
	})
}

// TestEventsStreamBoundPerHost: anonymous 2026-07-28 callers, which carry
// nothing else that tells them apart, are bounded by the host they came
// from, so one cannot hold every stream a server allows.
func TestEventsStreamBoundPerHost(t *testing.T) {
	t.Parallel()
	s, topic := eventsServer(WithEvents(EventOptions{MaxStreams: 1}))
	h := NewHTTPHandler(s)
	// The test's hosts are all 127.0.0.1: a header says which to be.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-Host") + ":4242"
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	connect := func(host string) *Client {
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20260728))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHeader("X-Test-Host", host))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	a, b := connect("192.0.2.1"), connect("192.0.2.2")
	start, err := a.PollEvents(context.Background(), EventSubscription{Name: "ticket.created"})
	if err != nil {
		t.Fatal(err)
	}
	sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor}
	gotA, stopA := streamInto(a, sub)
	defer stopA()
	publishTickets(t, topic, 0, 1)
	receive(t, gotA, 1) // a's stream is open
	gotB, stopB := streamInto(b, sub)
	defer stopB()
	publishTickets(t, topic, 1, 2)
	receive(t, gotB, 1) // and b's beside it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = a.StreamEvents(ctx, sub, 0, func(EventOccurrence) { t.Error("a's second stream delivered") })
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeOverloaded {
		t.Fatalf("a second stream from a's host: %v, want CodeOverloaded", err)
	}
}

// watchLog is a memory EventLog that is an EventWatcher too, as a shared
// log would be: wake tells its watchers, as another instance's Append
// would.
type watchLog struct {
	EventLog
	mu       sync.Mutex
	watchers map[*func(string)]struct{}
	watches  atomic.Int32 // Watch calls
}

func (l *watchLog) Watch(ctx context.Context, woke func(string)) (func(), error) {
	l.watches.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	key := &woke
	l.watchers[key] = struct{}{}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.watchers, key)
	}, nil
}

func (l *watchLog) wake(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.watchers {
		(*w)(name)
	}
	return len(l.watchers)
}

// TestEventsStreamWokenByWatcher: two servers share one log; an
// occurrence the first appends reaches a stream on the second as soon as
// the log's watch says so, with a heartbeat far away. The second server
// watches once for its streams, and stops when the last ends.
func TestEventsStreamWokenByWatcher(t *testing.T) {
	t.Parallel()
	log := &watchLog{EventLog: NewMemoryEventLog(0, 0), watchers: map[*func(string)]struct{}{}}
	opts := WithEvents(EventOptions{Log: log, Heartbeat: time.Hour})
	_, topic := eventsServer(opts)
	b, _ := eventsServer(opts)
	cl := pair(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
	if err != nil {
		t.Fatal(err)
	}
	sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor}
	got1, stop1 := streamInto(cl, sub)
	got2, stop2 := streamInto(cl, sub)
	next := func(what string) {
		t.Helper()
		for _, got := range []<-chan EventOccurrence{got1, got2} {
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal(what)
			}
		}
	}
	// Published on b: both streams are open and wait once it arrived.
	if _, err := b.PublishEvent(ctx, EventOccurrence{Name: "ticket.created"}); err != nil {
		t.Fatal(err)
	}
	next("the streams did not open")
	// Published on a, which wakes only its own streams; b's wake when the
	// log's watch tells them, a heartbeat being an hour away.
	publishTickets(t, topic, 0, 1)
	if n := log.wake("ticket.created"); n != 1 {
		t.Fatalf("%d watchers of the log, want 1 (one for b's two streams)", n)
	}
	next("a stream on the other server was not woken")
	stop1()
	stop2()
	for {
		log.mu.Lock()
		n := len(log.watchers)
		log.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d watchers left after the streams ended", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := log.watches.Load(); n != 1 {
		t.Errorf("%d watches for two streams, want 1", n)
	}
}

// deafLog is a shared log whose watch never wakes (its connection lost
// every wake-up), or fails while fail is set.
type deafLog struct {
	EventLog
	fail atomic.Bool
}

func (l *deafLog) Watch(ctx context.Context, woke func(string)) (func(), error) {
	if l.fail.Load() {
		return nil, errors.New("the watch failed")
	}
	return func() {}, nil
}

// TestEventsStreamWakeupLost: when the log's wake-ups are lost, a stream
// on another server still delivers what was appended, at its next
// heartbeat; a watch that fails refuses the stream with an internal error
// (which StreamEvents takes as a break) until it works again.
func TestEventsStreamWakeupLost(t *testing.T) {
	t.Parallel()
	log := &deafLog{EventLog: NewMemoryEventLog(0, 0)}
	opts := WithEvents(EventOptions{Log: log, Heartbeat: 50 * time.Millisecond})
	_, topic := eventsServer(opts)
	b, _ := eventsServer(opts)
	cl := pair(t, b, WithListenResumeAttempts(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start, err := cl.PollEvents(ctx, EventSubscription{Name: "ticket.created"})
	if err != nil {
		t.Fatal(err)
	}
	sub := EventSubscription{Name: "ticket.created", Cursor: start.Cursor}

	log.fail.Store(true)
	_, err = cl.StreamEvents(ctx, sub, 0, func(EventOccurrence) {})
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInternalError || !strings.Contains(err.Error(), "cannot reopen") {
		t.Fatalf("a stream whose watch fails: %v", err)
	}
	log.fail.Store(false)

	got, stop := streamInto(cl, sub)
	defer stop()
	// Published on b: the stream is open and waits once it arrived.
	if _, err := b.PublishEvent(ctx, EventOccurrence{Name: "ticket.created", Data: []byte(`{"id":100}`)}); err != nil {
		t.Fatal(err)
	}
	receive(t, got, 1)
	publishTickets(t, topic, 0, 3)
	if ids := ticketIDs(t, receive(t, got, 3)); len(ids) != 3 || ids[0] != 0 || ids[2] != 2 {
		t.Fatalf("delivered at the heartbeat: %v", ids)
	}
}
