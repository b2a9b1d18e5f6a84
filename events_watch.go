package mcp

import (
	"context"
	"strconv"
	"sync"
)

// Two things a push stream needs beyond its loop of Reads (events_stream.go):
//
// Wake-ups from other instances. PublishEvent wakes the streams of this
// instance only; a log shared by several instances (the redis/ module's)
// also says when any of them appended, through the optional EventWatcher.
// The server watches while at least one of its streams is open, with one
// Watch shared by them all, so a server without streams, or whose log is
// not a watcher, holds nothing. A wake-up that is lost (the log's
// connection dropped) delays delivery to the stream's next heartbeat, when
// it reads the log anyway; nothing is skipped, as the cursor is the truth.
//
// A bound of their own. A stream is a request held open for as long as
// the client likes, so it must not sit under WithMaxInFlight, or idle
// subscribers would lock everyone else out. Once a stream is admitted
// under EventOptions.MaxStreams, per principal, it gives its in-flight slot
// back (conn.detachInbound); until then it counts like any request, so a
// flood of events/stream meets the cap first.

// EventWatcher is an [EventLog] shared by several instances of a server
// that can tell each of them when any appended an occurrence, so that
// their push streams wake at once rather than at their next heartbeat.
// Server only: the server checks its log for it. Watch calls woke with
// the name of each occurrence appended from the time Watch returns until
// stop is called; woke must not block for long. ctx bounds Watch itself,
// not the watch. Wake-ups are best effort: one lost costs a heartbeat's
// delay, never an occurrence.
type EventWatcher interface {
	Watch(ctx context.Context, woke func(name string)) (stop func(), err error)
}

// DefaultEventMaxStreams is how many push streams one principal (or
// session) may hold open on one server; see [EventOptions.MaxStreams].
// Server only.
const DefaultEventMaxStreams = 16

// eventWatch is a server's one watch of its log, held by its open streams.
type eventWatch struct {
	mu  sync.Mutex
	cur *watchRun // nil while no stream holds it
}

// watchRun is one Watch, from its start by the first stream to its stop
// by the last.
type watchRun struct {
	users int
	ready chan struct{} // closed once Watch returned; err says how
	err   error
	stop  func()
}

// holdWatch makes sure the log's wake-ups reach this server's streams
// from now until release, starting the watch for the first stream; a log
// that is not an EventWatcher needs nothing. Watch is called with no lock
// held.
func (ev *serverEvents) holdWatch(ctx context.Context) (release func(), err error) {
	watcher, ok := ev.log.(EventWatcher)
	if !ok {
		return func() {}, nil
	}
	w := &ev.watch
	w.mu.Lock()
	run, first := w.cur, w.cur == nil
	if first {
		run = &watchRun{ready: make(chan struct{})}
		w.cur = run
	}
	run.users++
	w.mu.Unlock()
	release = func() {
		w.mu.Lock()
		run.users--
		var stop func()
		if run.users == 0 {
			stop = run.stop
			if w.cur == run {
				w.cur = nil
			}
		}
		w.mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	if first {
		stop, err := watcher.Watch(ctx, ev.wake)
		w.mu.Lock()
		run.stop, run.err = stop, err
		if err != nil && w.cur == run {
			w.cur = nil // the next stream tries again
		}
		w.mu.Unlock()
		close(run.ready)
	}
	select {
	case <-run.ready:
	case <-ctx.Done():
		release()
		return nil, context.Cause(ctx)
	}
	if run.err != nil {
		release()
		return nil, run.err
	}
	return release, nil
}

// maxStreams is the bound on one principal's open streams; 0 for none.
func (ev *serverEvents) maxStreams() int {
	return perCallerBound(ev.opts.MaxStreams, DefaultEventMaxStreams)
}

// admit registers st unless its owner holds the most streams allowed
// already, which it answers with the error to return.
func (ev *serverEvents) admit(st *eventStream) error {
	limit := ev.maxStreams()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if limit > 0 {
		n := 0
		for o := range ev.streams {
			if o.owner == st.owner {
				n++
			}
		}
		if n >= limit {
			return &Error{Code: CodeOverloaded, Message: "too many event streams open (at most " + strconv.Itoa(limit) + " per principal)"}
		}
	}
	ev.streams[st] = struct{}{}
	return nil
}
