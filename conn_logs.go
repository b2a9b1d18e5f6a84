package mcp

import "context"

// The peer's log messages (notifications/message) are handled by the
// notification runner, in order, off the reader. A response read after a
// log message is delivered only once that log message has been handled:
// the caller waits for it, so that what a handler logged before it
// returned has reached the log handler when the call returns, as its
// progress has. Other notifications are not waited for: their handlers may
// well make calls of their own.

// logOrder counts the log messages queued and handled.
type logOrder struct {
	queued uint64        // log messages queued so far
	done   uint64        // of those, handled
	tick   chan struct{} // closed when done advances; nil while nobody waits
	// ctx is the log handlers' context, made on first use: a call made
	// with it (or a context under it) does not wait for the log handlers,
	// one of which is its caller.
	ctx context.Context
}

// logHandlerKey marks the context of a connection's log handlers.
type logHandlerKey struct{}

// logContextLocked returns the context log handlers get.
func (c *conn) logContextLocked() context.Context {
	if c.logs == nil {
		c.logs = new(logOrder)
	}
	if c.logs.ctx == nil {
		c.logs.ctx = context.WithValue(c.baseCtx, logHandlerKey{}, c)
	}
	return c.logs.ctx
}

// loggedLocked counts a log message handled and wakes the callers waiting.
func (c *conn) loggedLocked() {
	c.logs.done++
	if c.logs.tick != nil {
		close(c.logs.tick)
		c.logs.tick = nil
	}
}

// awaitLogs waits until the first n log messages have been handled: those
// read before call's response. It gives up when ctx ends or the
// connection closes, and never waits inside a log handler.
func (c *conn) awaitLogs(ctx context.Context, call *pendingCall) {
	n := call.logsBefore
	if n == 0 {
		return
	}
	for first := true; ; first = false {
		c.mu.Lock()
		if c.logs.done >= n {
			c.mu.Unlock()
			return
		}
		if first && ctx.Value(logHandlerKey{}) == c {
			c.mu.Unlock()
			return
		}
		if c.logs.tick == nil {
			c.logs.tick = make(chan struct{})
		}
		tick := c.logs.tick
		c.mu.Unlock()
		select {
		case <-tick:
		case <-ctx.Done():
			return
		case <-c.doneChan():
			return
		}
	}
}
