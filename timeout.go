package mcp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Default request bounds; see [WithRequestTimeout] and [WithMaxRequestTimeout].
const (
	DefaultRequestTimeout    = 60 * time.Second
	DefaultMaxRequestTimeout = 600 * time.Second
)

// WithRequestTimeout sets the idle bound of every outgoing request (default
// 60s): the longest the peer may stay silent. Each progress notification of
// a call that asked for progress ([WithProgress]) restarts it, so a long call
// that reports progress lives on, up to the ceiling. 0 disables both bounds.
// It configures either peer (NewClient or NewServer).
func WithRequestTimeout(d time.Duration) Option {
	return bothOption(func(c *config) {
		if d >= 0 {
			c.requestTimeout = d
		}
	})
}

// WithMaxRequestTimeout sets the ceiling of every outgoing request (default
// 600s): the longest it may run however much progress it reports. The
// ceiling never cuts a request short of its own idle bound: it fires at the
// later of the two. 0 removes only the ceiling.
// It configures either peer (NewClient or NewServer).
func WithMaxRequestTimeout(d time.Duration) Option {
	return bothOption(func(c *config) {
		if d >= 0 {
			c.maxRequestTimeout = d
		}
	})
}

// WithTimeout replaces the idle bound for one call. It may exceed the
// client's ceiling, which then widens to match; it is the way to give a long
// call that reports no progress the time it needs. 0 disables both bounds for
// the call.
func WithTimeout(d time.Duration) CallOption {
	return func(o *callOptions) {
		o.timeout = d
		o.timeoutSet = true
	}
}

// TimeoutBound names which bound of a request's deadline fired.
type TimeoutBound string

// The bounds of a request's deadline.
const (
	// BoundIdle is the idle timeout: the peer was silent too long.
	BoundIdle TimeoutBound = "idle"
	// BoundCeiling is the ceiling: the request ran too long in total.
	BoundCeiling TimeoutBound = "ceiling"
)

// RequestTimeoutError reports a request abandoned because a bound of its
// deadline elapsed. The peer was told with notifications/cancelled and a late
// reply is dropped. It matches context.DeadlineExceeded with errors.Is.
type RequestTimeoutError struct {
	// ID is the abandoned request's id.
	ID ID
	// Method is the abandoned request's method.
	Method string
	// Bound is the bound that fired.
	Bound TimeoutBound
	// Timeout is that bound's duration.
	Timeout time.Duration
	// ProgressReports counts the progress notifications the call received
	// before the bound fired.
	ProgressReports int
}

// Error says which bound fired, reading like "request 7 (tools/call) went
// unanswered for 60s", "request 7 (tools/call) went silent for 60s after 3
// progress reports" or "request 7 (tools/call) reached its 600s ceiling
// after 42 progress reports".
func (e *RequestTimeoutError) Error() string {
	head := fmt.Sprintf("request %s (%s) ", e.ID, e.Method)
	after := ""
	switch e.ProgressReports {
	case 0:
	case 1:
		after = " after 1 progress report"
	default:
		after = fmt.Sprintf(" after %d progress reports", e.ProgressReports)
	}
	switch {
	case e.Bound == BoundCeiling:
		return head + "reached its " + formatDuration(e.Timeout) + " ceiling" + after
	case e.ProgressReports > 0:
		return head + "went silent for " + formatDuration(e.Timeout) + after
	}
	return head + "went unanswered for " + formatDuration(e.Timeout)
}

// Is makes a RequestTimeoutError match context.DeadlineExceeded.
func (e *RequestTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// formatDuration prints whole seconds as "60s" rather than time's "1m0s".
func formatDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// deadline is the two-bound deadline of one outgoing request: an idle bound
// that progress restarts and a ceiling that nothing extends. One timer serves
// both: progress only records the time (no timer work on the reader's
// path), and when the timer fires the deadline checks which bound, if any,
// has really elapsed and re-arms itself otherwise. A nil *deadline is a
// request with no bounds.
type deadline struct {
	idleFor    time.Duration
	ceilingFor time.Duration // 0: no ceiling
	start      time.Time
	timer      *time.Timer
	armed      *deadlines
	lastActive atomic.Int64 // unix nanoseconds of the last progress

	mu       sync.Mutex
	released bool
}

// deadlines counts a connection's armed deadlines and keeps released ones,
// timer included, for its next calls, so that arming one allocates nothing.
type deadlines struct {
	atomic.Int64 // armed and not yet released

	mu   sync.Mutex
	free []*deadline
}

// maxFreeDeadlines bounds the released deadlines a connection keeps.
const maxFreeDeadlines = 64

// armDeadline starts a deadline counted in ds. An idle bound of 0 means no
// deadline at all: the ceiling is ignored too. A ceiling nearer than the
// idle bound is widened to it.
func armDeadline(idle, ceiling time.Duration, ds *deadlines) *deadline {
	if idle <= 0 {
		return nil
	}
	var d *deadline
	ds.mu.Lock()
	if n := len(ds.free); n > 0 {
		d = ds.free[n-1]
		ds.free[n-1] = nil
		ds.free = ds.free[:n-1]
	}
	ds.mu.Unlock()
	now := time.Now()
	if d == nil {
		d = &deadline{armed: ds, timer: time.NewTimer(idle)}
	} else {
		d.timer.Reset(idle)
	}
	d.idleFor, d.ceilingFor, d.start = idle, 0, now
	if ceiling > 0 {
		d.ceilingFor = max(ceiling, idle)
	}
	d.lastActive.Store(now.UnixNano())
	d.mu.Lock()
	d.released = false
	d.mu.Unlock()
	ds.Add(1)
	return d
}

// C fires when a bound may have elapsed; call expired to find out.
func (d *deadline) C() <-chan time.Time {
	if d == nil {
		return nil
	}
	return d.timer.C
}

// expired reports which bound has elapsed, if any, and re-arms the timer
// for the nearer remaining bound otherwise. When both have elapsed the idle
// bound is the one named.
func (d *deadline) expired() (TimeoutBound, time.Duration, bool) {
	now := time.Now()
	idleAt, ceilingAt := d.bounds()
	if !now.Before(idleAt) {
		return BoundIdle, d.idleFor, true
	}
	if !ceilingAt.IsZero() && !now.Before(ceilingAt) {
		return BoundCeiling, d.ceilingFor, true
	}
	d.mu.Lock()
	if !d.released {
		d.timer.Reset(nearer(idleAt, ceilingAt).Sub(now))
	}
	d.mu.Unlock()
	return "", 0, false
}

// bounds says when the idle bound (counted from the last progress) and the
// ceiling (zero: none) elapse, as things stand.
func (d *deadline) bounds() (idleAt, ceilingAt time.Time) {
	idleAt = time.Unix(0, d.lastActive.Load()).Add(d.idleFor)
	if d.ceilingFor > 0 {
		ceilingAt = d.start.Add(d.ceilingFor)
	}
	return idleAt, ceilingAt
}

// next is the earliest the deadline can expire as things stand.
func (d *deadline) next() time.Time { return nearer(d.bounds()) }

// nearer is the earlier of an idle bound and a ceiling (zero: none).
func nearer(idleAt, ceilingAt time.Time) time.Time {
	if !ceilingAt.IsZero() && ceilingAt.Before(idleAt) {
		return ceilingAt
	}
	return idleAt
}

// extend restarts the idle bound; the ceiling keeps running.
func (d *deadline) extend() {
	if d != nil {
		d.lastActive.Store(time.Now().UnixNano())
	}
}

// release disarms the deadline and hands it back for reuse: its owner calls
// it exactly once and drops the deadline.
func (d *deadline) release() {
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.released {
		d.mu.Unlock()
		return
	}
	d.released = true
	d.timer.Stop()
	d.mu.Unlock()
	ds := d.armed
	ds.Add(-1)
	ds.mu.Lock()
	if len(ds.free) < maxFreeDeadlines {
		ds.free = append(ds.free, d)
	}
	ds.mu.Unlock()
}
