package mcp

import (
	"context"
	"sync"
)

// The many-instance wing's subscription holder: one subscription per
// broadcaster channel (mcp:server, mcp:task:<id>), made as its first local
// user comes and ended as its last leaves, so that an instance listens to
// a channel only while something here needs it. The server channel's
// messages are in cluster_announce.go, a task's in cluster_tasks.go.

// fanout holds a server's subscriptions to its broadcaster's channels,
// each shared by the local users of the channel.
type fanout struct {
	b   Broadcaster
	srv *Server // for its logger

	mu    sync.Mutex
	feeds map[string]*feed
}

// feed is one channel's subscription and its local users. Its state moves
// idle → subscribing → active, and back to idle when the last user leaves
// or the subscription fails.
type feed struct {
	fan     *fanout
	channel string
	deliver func([]byte)

	// Guarded by fanout.mu.
	users   int
	state   feedState
	stop    func()
	ready   chan struct{} // closed when the current attempt to subscribe ends
	err     error         // of the last attempt
	changed chan struct{} // closed, and replaced, on every delivered message
}

// feedState is where a feed's subscription stands.
type feedState int

const (
	feedIdle feedState = iota
	feedSubscribing
	feedActive
)

// newFanout returns the subscription holder of s's broadcaster b, which
// holds nothing yet.
func newFanout(s *Server, b Broadcaster) *fanout {
	return &fanout{b: b, srv: s, feeds: make(map[string]*feed)}
}

// hold counts one more user of channel and starts subscribing to it if
// nothing does; it calls nothing else and may be called with locks held.
// wait says when the subscription is active; release undoes hold.
func (f *fanout) hold(channel string, deliver func([]byte)) *feed {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.feeds[channel]
	if fd == nil {
		fd = &feed{fan: f, channel: channel, deliver: deliver, changed: make(chan struct{})}
		f.feeds[channel] = fd
	}
	fd.users++
	if fd.state == feedIdle {
		f.subscribeLocked(fd)
	}
	return fd
}

// subscribeLocked starts subscribing to fd's channel on a goroutine of its
// own, which ends once Subscribe returns: the caller may hold locks.
func (f *fanout) subscribeLocked(fd *feed) {
	fd.state, fd.ready = feedSubscribing, make(chan struct{})
	go f.subscribe(fd)
}

// subscribe is the subscribing goroutine of subscribeLocked: it records
// the outcome in fd, and stops a subscription made for users who left.
func (f *fanout) subscribe(fd *feed) {
	// The broadcaster bounds its own calls, and the context only the
	// subscribing; nothing here waits on it longer than the callers of
	// wait choose to.
	ctx, cancel := storeCtx()
	defer cancel()
	stop, err := f.b.Subscribe(ctx, fd.channel, func(msg []byte) {
		f.mu.Lock()
		close(fd.changed)
		fd.changed = make(chan struct{})
		f.mu.Unlock()
		fd.deliver(msg)
	})
	f.mu.Lock()
	var unused func()
	switch {
	case err != nil:
		fd.state, fd.err = feedIdle, err
		f.forgetLocked(fd)
	case fd.users == 0:
		fd.state, unused = feedIdle, stop
		f.forgetLocked(fd)
	default:
		fd.state, fd.stop, fd.err = feedActive, stop, nil
	}
	close(fd.ready)
	f.mu.Unlock()
	if err != nil {
		f.srv.cfg.logger.Warn("cannot subscribe to a broadcaster channel", "channel", fd.channel, "err", err)
	}
	if unused != nil {
		unused()
	}
}

// forgetLocked drops fd once nothing uses it.
func (f *fanout) forgetLocked(fd *feed) {
	if fd.users == 0 && f.feeds[fd.channel] == fd {
		delete(f.feeds, fd.channel)
	}
}

// wait returns once fd's subscription is active, so that every message
// published from then on is delivered; it subscribes again if an earlier
// attempt failed. It fails when the subscription does, or ctx ends.
func (f *fanout) wait(ctx context.Context, fd *feed) error {
	retried := false
	for {
		f.mu.Lock()
		switch fd.state {
		case feedActive:
			f.mu.Unlock()
			return nil
		case feedIdle:
			if retried {
				err := fd.err
				f.mu.Unlock()
				return &subscribeError{channel: fd.channel, err: err}
			}
			retried = true
			f.subscribeLocked(fd)
		}
		ready := fd.ready
		f.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return &subscribeError{channel: fd.channel, err: context.Cause(ctx)}
		}
	}
}

// changed returns what is closed at fd's next delivered message.
func (f *fanout) changed(fd *feed) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fd.changed
}

// release counts one user of fd fewer and ends the subscription with the
// last; it calls the broadcaster, so no lock may be held.
func (f *fanout) release(fd *feed) {
	if stop := f.drop(fd); stop != nil {
		stop()
	}
}

// drop is release for a caller that holds a lock: it returns the
// subscription's stop, to call once the lock is released, or nil.
func (f *fanout) drop(fd *feed) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd.users--
	if fd.users > 0 || fd.state == feedSubscribing {
		return nil // a subscription under way ends itself with no users
	}
	if fd.state == feedActive {
		stop = fd.stop
		fd.state, fd.stop = feedIdle, nil
	}
	f.forgetLocked(fd)
	return stop
}

// subscribeError is the failure to subscribe to a broadcaster channel
// that a request needed.
type subscribeError struct {
	channel string
	err     error
}

// Error says which channel could not be subscribed to, and why.
func (e *subscribeError) Error() string {
	reason := "unknown error"
	if e.err != nil {
		reason = e.err.Error()
	}
	return "mcp: cannot subscribe to the broadcaster channel " + e.channel + ": " + reason
}

// Unwrap returns the broadcaster's reason.
func (e *subscribeError) Unwrap() error { return e.err }

// wait is fanout.wait for fd, the core's way to wait on a channel it holds
// (channelHold).
func (fd *feed) wait(ctx context.Context) error { return fd.fan.wait(ctx, fd) }

// release is fanout.release for fd (channelHold).
func (fd *feed) release() { fd.fan.release(fd) }
