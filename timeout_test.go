package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// rawServerPeer connects a client (pinned to 2025-11-25 unless opts say
// otherwise) to a raw peer that plays the server, answering the handshake.
func rawServerPeer(t testing.TB, opts ...ClientOption) (*Client, *rawPeer) {
	t.Helper()
	ct, st := NewInMemoryTransports()
	return rawServerPeerOver(t, ct, st, opts...)
}

func rawServerPeerOver(t testing.TB, ct, st Transport, opts ...ClientOption) (*Client, *rawPeer) {
	t.Helper()
	cl, p, _ := rawServerPeerInit(t, ct, st, opts...)
	return cl, p
}

// rawServerPeerInit is rawServerPeerOver that also returns the client's
// initialize request.
func rawServerPeerInit(t testing.TB, ct, st Transport, opts ...ClientOption) (*Client, *rawPeer, string) {
	t.Helper()
	p := newRawPeer(t, st.(*IOTransport))
	opts = append([]ClientOption{WithProtocolVersion(Version20251125)}, opts...)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, opts...)
	connected := make(chan error, 1)
	go func() { connected <- cl.Connect(context.Background(), ct) }()
	init := p.recv()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`, field(t, init, "id")))
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	p.recv() // notifications/initialized
	t.Cleanup(func() { cl.Close() })
	return cl, p, init
}

// waitExpired waits on the deadline as a call does and returns the bound
// that elapsed and when.
func waitExpired(d *deadline) (TimeoutBound, time.Duration) {
	for range d.C() {
		if bound, elapsed, ok := d.expired(); ok {
			return bound, elapsed
		}
	}
	return "", 0
}

// TestDeadline pins the two-bound deadline on its own (RequestDeadlineTest).
func TestDeadline(t *testing.T) {
	t.Run("fires after the idle timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			d := armDeadline(time.Second, 10*time.Second, &armed)
			defer d.release()
			start := time.Now()
			if bound, elapsed := waitExpired(d); bound != BoundIdle || elapsed != time.Second || time.Since(start) != time.Second {
				t.Fatalf("%s %v after %v", bound, elapsed, time.Since(start))
			}
		})
	})
	t.Run("extend restarts the idle timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			d := armDeadline(time.Second, 0, &armed)
			defer d.release()
			start := time.Now()
			time.Sleep(900 * time.Millisecond)
			d.extend()
			waitExpired(d)
			if got := time.Since(start); got != 1900*time.Millisecond {
				t.Fatalf("fired after %v", got)
			}
		})
	})
	t.Run("the ceiling fires however often idle is extended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			d := armDeadline(time.Second, 3*time.Second, &armed)
			defer d.release()
			start := time.Now()
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
						d.extend()
					}
				}
			}()
			bound, elapsed := waitExpired(d)
			close(stop)
			if bound != BoundCeiling || elapsed != 3*time.Second || time.Since(start) != 3*time.Second {
				t.Fatalf("%s %v after %v", bound, elapsed, time.Since(start))
			}
		})
	})
	t.Run("a ceiling nearer than the idle timeout cannot preempt it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			d := armDeadline(2*time.Second, time.Second, &armed)
			defer d.release()
			start := time.Now()
			if bound, elapsed := waitExpired(d); bound != BoundIdle || elapsed != 2*time.Second || time.Since(start) != 2*time.Second {
				t.Fatalf("%s %v after %v", bound, elapsed, time.Since(start))
			}
		})
	})
	t.Run("release disarms and is counted, at no goroutine's cost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			before := runtime.NumGoroutine()
			d := armDeadline(time.Second, 2*time.Second, &armed)
			if armed.Load() != 1 {
				t.Fatal("not counted as armed")
			}
			if runtime.NumGoroutine() != before {
				t.Fatal("an armed deadline costs a goroutine")
			}
			d.release()
			d.release()
			if armed.Load() != 0 {
				t.Fatalf("armed = %d after release", armed.Load())
			}
			time.Sleep(5 * time.Second)
			select {
			case <-d.C():
				t.Fatal("fired after release")
			default:
			}
		})
	})
	t.Run("no ceiling never fires while extended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var armed deadlines
			d := armDeadline(time.Second, 0, &armed)
			defer d.release()
			for range 100 {
				time.Sleep(900 * time.Millisecond)
				d.extend()
				select {
				case <-d.C():
					if _, _, ok := d.expired(); ok {
						t.Fatal("expired although extended")
					}
				default:
				}
			}
		})
	})
	t.Run("idle 0 disables both bounds", func(t *testing.T) {
		var armed deadlines
		if d := armDeadline(0, time.Second, &armed); d != nil || armed.Load() != 0 {
			t.Fatal("a deadline was armed")
		}
	})
}

// TestARequestThatGoesUnansweredTimesOut: the call fails with a
// RequestTimeoutError naming id, method and bound, and the next message on
// the wire is notifications/cancelled with the same id and the reason.
func TestARequestThatGoesUnansweredTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(50*time.Millisecond))
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil)
			errc <- err
		}()
		req := p.recv()
		err := <-errc
		if time.Since(start) != 50*time.Millisecond {
			t.Fatalf("timed out after %v", time.Since(start))
		}
		var te *RequestTimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("err = %v", err)
		}
		if te.ID.String() != "2" || te.Method != "tools/call" || te.Bound != BoundIdle || te.Timeout != 50*time.Millisecond {
			t.Fatalf("%+v", te)
		}
		if te.Error() != "request 2 (tools/call) went unanswered for 50ms" {
			t.Fatalf("message %q", te.Error())
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("a timeout should match context.DeadlineExceeded")
		}
		cancel := p.recv()
		if field(t, cancel, "method") != "notifications/cancelled" || field(t, cancel, "params.requestId") != field(t, req, "id") ||
			field(t, cancel, "params.reason") != "The request timed out." {
			t.Fatalf("cancel = %s", cancel)
		}
	})
}

func TestTimeoutMessageInWholeSeconds(t *testing.T) {
	e := &RequestTimeoutError{ID: Int64ID(7), Method: "tools/call", Timeout: 60 * time.Second}
	if e.Error() != "request 7 (tools/call) went unanswered for 60s" {
		t.Fatal(e.Error())
	}
	e = &RequestTimeoutError{ID: StringID("a"), Method: "x", Timeout: 1500 * time.Millisecond}
	if e.Error() != `request "a" (x) went unanswered for 1.5s` {
		t.Fatal(e.Error())
	}
}

// TestTimeoutMessageSaysWhichBoundFired: the text names the bound, and how
// much progress the call had reported, so that a ceiling is not mistaken
// for a silent peer.
func TestTimeoutMessageSaysWhichBoundFired(t *testing.T) {
	for _, tc := range []struct {
		bound   TimeoutBound
		timeout time.Duration
		reports int
		want    string
	}{
		{BoundIdle, time.Minute, 0, "request 7 (tools/call) went unanswered for 60s"},
		{BoundIdle, time.Minute, 1, "request 7 (tools/call) went silent for 60s after 1 progress report"},
		{BoundIdle, time.Minute, 3, "request 7 (tools/call) went silent for 60s after 3 progress reports"},
		{BoundCeiling, 10 * time.Minute, 42, "request 7 (tools/call) reached its 600s ceiling after 42 progress reports"},
		{BoundCeiling, 500 * time.Millisecond, 0, "request 7 (tools/call) reached its 500ms ceiling"},
	} {
		e := &RequestTimeoutError{ID: Int64ID(7), Method: "tools/call", Bound: tc.bound, Timeout: tc.timeout, ProgressReports: tc.reports}
		if got := e.Error(); got != tc.want {
			t.Errorf("%s bound, %d reports: %q, want %q", tc.bound, tc.reports, got, tc.want)
		}
	}
}

// TestATimedOutRequestReleasesItsCorrelationSlot: the late reply is an
// orphan, logged once, delivered to nobody.
func TestATimedOutRequestReleasesItsCorrelationSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		cl, p := rawServerPeer(t, WithRequestTimeout(time.Second), WithLogger(slog.New(rec)))
		errc := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil)
			errc <- err
		}()
		req := p.recv()
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) {
			t.Fatal(err)
		}
		p.recv() // the cancellation
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
		// A later call gets its own answer, not the late one.
		go func() {
			res, err := cl.CallTool(context.Background(), "next", nil)
			if err == nil && res.Content[0].Text != "mine" {
				err = fmt.Errorf("got %q", res.Content[0].Text)
			}
			errc <- err
		}()
		next := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"mine"}]}}`, field(t, next, "id")))
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if n := rec.count("orphan success"); n != 1 {
			t.Fatalf("%d orphan warnings", n)
		}
		if cl.conn.pendingCount() != 0 {
			t.Fatal("pending entries left")
		}
	})
}

// TestASettledRequestLeavesNoTimerArmed: every way out releases the deadline.
func TestASettledRequestLeavesNoTimerArmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := pair(t, newTestServer())
		ctx := context.Background()
		cl.CallTool(ctx, "echo", nil)                                                                 // result
		cl.CallTool(ctx, "nope", nil)                                                                 // error reply
		cl.CallTool(ctx, "block", nil, WithTimeout(time.Second))                                      // timeout
		cctx, cancel := context.WithCancel(ctx)                                                       //
		time.AfterFunc(time.Second, cancel)                                                           //
		cl.CallTool(cctx, "block", nil)                                                               // caller cancel
		cl.CallTool(ctx, "progress", map[string]int{"steps": 3}, WithProgress(func(Progress) {}))     // progress
		if _, err := cl.CallTool(ctx, "x", make(chan int)); err == nil || cl.conn.armed.Load() != 0 { // fails before dispatch
			t.Fatalf("err %v armed %d", err, cl.conn.armed.Load())
		}
		if n := cl.conn.armed.Load(); n != 0 {
			t.Fatalf("%d deadlines still armed", n)
		}
	})
}

// TestACallThatFailsBeforeDispatchLeavesNoTimerArmed: a send on a closed
// connection fails after the deadline was armed, and releases it.
func TestACallThatFailsBeforeDispatchLeavesNoTimerArmed(t *testing.T) {
	cl := pair(t, newTestServer())
	c := cl.conn
	c.close(errors.New("gone"))
	if _, err := cl.CallTool(context.Background(), "echo", nil, WithProgress(func(Progress) {})); !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
	if c.armed.Load() != 0 || len(c.progress) != 0 || len(c.pending) != 0 {
		t.Fatalf("armed %d progress %d pending %d", c.armed.Load(), len(c.progress), len(c.pending))
	}
}

// failingTransport lets writes fail on demand.
type failingTransport struct {
	Transport
	fail atomic.Bool
}

func (f *failingTransport) WriteMessage(msg []byte) error {
	if f.fail.Load() {
		return errors.New("broken pipe")
	}
	return f.Transport.WriteMessage(msg)
}

// TestATimeoutIsReportedEvenWhenTheCancellationCannotBeSent.
func TestATimeoutIsReportedEvenWhenTheCancellationCannotBeSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		ct, st := NewInMemoryTransports()
		ft := &failingTransport{Transport: ct}
		cl, p := rawServerPeerOver(t, ft, st, WithRequestTimeout(time.Second), WithLogger(slog.New(rec)))
		errc := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil)
			errc <- err
		}()
		p.recv()
		ft.fail.Store(true)
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) {
			t.Fatalf("err = %v", err)
		}
		synctest.Wait()
		if rec.count("write failed") != 1 {
			t.Fatalf("the failed send was not logged: %v", rec.msgs)
		}
		// Once the connection is gone, a cancellation that cannot be queued
		// is logged too.
		if err := cl.Ping(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("ping: %v", err)
		}
	})
}

// TestATimeoutCanBeDisabled: idle 0 disables both bounds; a reply hours
// later is accepted and no cancellation is ever sent.
func TestATimeoutCanBeDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(0), WithMaxRequestTimeout(time.Second))
		errc := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil)
			errc <- err
		}()
		req := p.recv()
		time.Sleep(3 * time.Hour)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-p.lines:
			t.Fatalf("unexpected message %s", l)
		default:
		}
	})
}

// TestSendRequestTimeoutOverridesTheClientDefault.
func TestSendRequestTimeoutOverridesTheClientDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(10*time.Second))
		errc := make(chan error, 1)
		go func() {
			errc <- cl.SendRequest(context.Background(), "tools/call", map[string]string{"name": "x"}, nil, WithTimeout(50*time.Millisecond))
		}()
		p.recv()
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) || te.Timeout != 50*time.Millisecond || !strings.HasSuffix(te.Error(), "50ms") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestSendRequestTimeoutWidensTheCeilingItExceeds.
func TestSendRequestTimeoutWidensTheCeilingItExceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(10*time.Millisecond), WithMaxRequestTimeout(50*time.Millisecond))
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			errc <- cl.SendRequest(context.Background(), "tools/call", nil, nil, WithTimeout(200*time.Millisecond))
		}()
		p.recv()
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) || te.Timeout != 200*time.Millisecond {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) != 200*time.Millisecond {
			t.Fatalf("after %v", time.Since(start))
		}
	})
}

// respondAfterProgress plays a server that sends n progress notifications,
// gap apart, then (if respond) the result.
func respondAfterProgress(p *rawPeer, req string, n int, gap time.Duration, respond bool) {
	token := field(p.t, req, "params._meta.progressToken")
	tok := fmt.Sprint(token)
	if s, ok := token.(string); ok {
		tok = fmt.Sprintf("%q", s)
	}
	for i := 1; i <= n; i++ {
		time.Sleep(gap)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d}}`, tok, i, n))
	}
	if respond {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"done"}]}}`, field(p.t, req, "id")))
	}
}

// TestProgressKeepsALongCallAlivePastTheIdleTimeout.
func TestProgressKeepsALongCallAlivePastTheIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(100*time.Millisecond))
		errc := make(chan error, 1)
		var got []Progress
		go func() {
			_, err := cl.CallTool(context.Background(), "reindex", nil, WithProgress(func(pr Progress) { got = append(got, pr) }))
			errc <- err
		}()
		req := p.recv()
		respondAfterProgress(p, req, 10, 80*time.Millisecond, true) // 800ms in all, 8x the idle bound
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if len(got) != 10 {
			t.Fatalf("%d progress reports", len(got))
		}
	})
}

// TestTheCeilingAbandonsACallThatKeepsReportingProgress.
func TestTheCeilingAbandonsACallThatKeepsReportingProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(100*time.Millisecond), WithMaxRequestTimeout(150*time.Millisecond))
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := cl.CallTool(context.Background(), "reindex", nil, WithProgress(func(Progress) {}))
			errc <- err
		}()
		req := p.recv()
		reported := make(chan struct{})
		go func() {
			respondAfterProgress(p, req, 10, 50*time.Millisecond, false)
			close(reported)
		}()
		var te *RequestTimeoutError
		err := <-errc
		if !errors.As(err, &te) || te.Bound != BoundCeiling || te.Timeout != 150*time.Millisecond {
			t.Fatalf("err = %v", err)
		}
		// Reports came at 50 and 100 ms; the one at 150 ms may come first.
		if n := te.ProgressReports; n < 2 || n > 3 || err.Error() != fmt.Sprintf("request %v (tools/call) reached its 150ms ceiling after %d progress reports", field(t, req, "id"), n) {
			t.Fatalf("err = %q after %d reports, want it to name the ceiling and the reports", err, n)
		}
		if time.Since(start) != 150*time.Millisecond {
			t.Fatalf("after %v", time.Since(start))
		}
		<-reported
	})
}

// TestProgressOfAnotherCallDoesNotExtend: only the call's own token restarts
// its idle bound.
func TestProgressOfAnotherCallDoesNotExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(100*time.Millisecond))
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := cl.CallTool(context.Background(), "x", nil, WithProgress(func(Progress) {}))
			errc <- err
		}()
		p.recv()
		time.Sleep(60 * time.Millisecond)
		p.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progress":1}}`)
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
}

// abortRecorder is a transport that records aborted exchanges.
type abortRecorder struct {
	Transport
	mu      sync.Mutex
	aborted []ID
}

func (a *abortRecorder) abortExchange(id ID) {
	a.mu.Lock()
	a.aborted = append(a.aborted, id)
	a.mu.Unlock()
}

// The rest of an exchangeTransport: writes as the transport does, and
// messages read come through ReadMessage.
func (a *abortRecorder) writeOwned(msg []byte) error            { return a.WriteMessage(msg) }
func (a *abortRecorder) pushInto(func([]byte), func(ID, error)) {}

// TestATimedOutRequestAbortsItsExchange.
func TestATimedOutRequestAbortsItsExchange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct, st := NewInMemoryTransports()
		ar := &abortRecorder{Transport: ct}
		cl, p := rawServerPeerOver(t, ar, st, WithRequestTimeout(time.Second))
		errc := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil)
			errc <- err
		}()
		req := p.recv()
		<-errc
		ar.mu.Lock()
		defer ar.mu.Unlock()
		if len(ar.aborted) != 1 || ar.aborted[0].String() != fmt.Sprint(field(t, req, "id")) {
			t.Fatalf("aborted %v", ar.aborted)
		}
	})
}

// TestCallerCancellationCancelsOnTheWire: ctx cancellation frees the slot,
// tells the server, and returns the ctx error.
func TestCallerCancellationCancelsOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(ctx, "slow", nil)
			errc <- err
		}()
		req := p.recv()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		c := p.recv()
		if field(t, c, "params.requestId") != field(t, req, "id") || !strings.Contains(fmt.Sprint(field(t, c, "params.reason")), "cancelled by the caller") {
			t.Fatalf("cancel = %s", c)
		}
	})
}

// TestInitializeIsNeverCancelled: a timed-out initialize sends no
// notifications/cancelled.
func TestInitializeIsNeverCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct, st := NewInMemoryTransports()
		p := newRawPeer(t, st.(*IOTransport))
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125), WithRequestTimeout(time.Second))
		errc := make(chan error, 1)
		go func() { errc <- cl.Connect(context.Background(), ct) }()
		p.recv()
		var te *RequestTimeoutError
		if err := <-errc; !errors.As(err, &te) || te.Method != "initialize" {
			t.Fatalf("err = %v", err)
		}
		synctest.Wait()
		select {
		case l, ok := <-p.lines:
			if ok {
				t.Fatalf("sent %s", l)
			}
		default:
		}
	})
}

// TestManyAbandonedCallsLeaveNothingBehind: 10,000 calls that time out or
// are cancelled leave no pending entry, no armed timer and no goroutine.
func TestManyAbandonedCallsLeaveNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := pair(t, newTestServer())
		before := runtime.NumGoroutine()
		const total, batch = 10_000, 200
		var timeouts, cancels atomic.Int64
		for i := 0; i < total; i += batch {
			var wg sync.WaitGroup
			for j := range batch {
				wg.Go(func() {
					if j%2 == 0 {
						_, err := cl.CallTool(context.Background(), "block", nil, WithTimeout(time.Millisecond), WithProgress(func(Progress) {}))
						var te *RequestTimeoutError
						if errors.As(err, &te) {
							timeouts.Add(1)
						}
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					defer cancel()
					if _, err := cl.CallTool(ctx, "block", nil); errors.Is(err, context.DeadlineExceeded) {
						cancels.Add(1)
					}
				})
			}
			wg.Wait()
		}
		synctest.Wait()
		if timeouts.Load()+cancels.Load() != total {
			t.Fatalf("timeouts %d cancels %d", timeouts.Load(), cancels.Load())
		}
		c := cl.conn
		c.mu.Lock()
		pending, progress := len(c.pending), len(c.progress)
		c.mu.Unlock()
		if pending != 0 || progress != 0 || c.armed.Load() != 0 {
			t.Fatalf("pending %d progress %d armed %d", pending, progress, c.armed.Load())
		}
		// The server keeps up to maxIdleWorkers handler goroutines parked
		// for its next requests; nothing else may be left.
		parked := parkedWorkers()
		if n := runtime.NumGoroutine(); parked > maxIdleWorkers || n > before+parked {
			t.Fatalf("%d goroutines, started with %d (+%d parked workers, at most %d)", n, before, parked, maxIdleWorkers)
		}
	})
}

// TestReleasedDeadlinesAreReused: a connection's released deadlines serve
// its next calls, timer included, without allocating, and a reused one
// keeps none of its previous bounds or fired state.
func TestReleasedDeadlinesAreReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ds deadlines
		d := armDeadline(time.Second, 2*time.Second, &ds)
		if bound, _ := waitExpired(d); bound != BoundIdle {
			t.Fatalf("first use expired on %q", bound)
		}
		d.release()
		time.Sleep(5 * time.Second) // a reuse must not see the old start
		again := armDeadline(3*time.Second, 0, &ds)
		if again != d {
			t.Fatal("a released deadline was not reused")
		}
		start := time.Now()
		if bound, elapsed := waitExpired(again); bound != BoundIdle || elapsed != 3*time.Second || time.Since(start) != 3*time.Second {
			t.Fatalf("reused deadline: %s %v after %v", bound, elapsed, time.Since(start))
		}
		again.release()
		if n := ds.Load(); n != 0 {
			t.Fatalf("armed = %d", n)
		}
	})
	var ds deadlines
	armDeadline(time.Minute, time.Hour, &ds).release()
	if n := testing.AllocsPerRun(100, func() { armDeadline(time.Minute, time.Hour, &ds).release() }); n != 0 {
		t.Fatalf("arming a reused deadline allocates %v times", n)
	}
}
