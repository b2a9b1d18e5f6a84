package mcp

import (
	"context"
	"errors"
)

// The client's side of a 2026-07-28 listen stream that broke: the client
// reopens it with the same subscriptions, and tells the application that
// what changed meanwhile was not announced.

// DefaultListenResumeAttempts bounds the attempts in a row to reopen a
// broken listen stream; see [WithListenResumeAttempts]. Client only.
const DefaultListenResumeAttempts = 5

// ListenGap tells a 2026-07-28 client's application that its
// subscriptions/listen stream broke without the client ending it (the
// server ended it, or the connection to the instance holding it failed):
// what changed between the break and a new stream was not announced.
// Client only; see [WithListenGapHandler].
type ListenGap struct {
	// Cause is why the stream broke.
	Cause error
	// Err is nil once a new stream carries the client's subscriptions
	// again. Otherwise the client gave up: nothing is listened for until
	// the next Subscribe or Unsubscribe, and Err says why.
	Err error
	// Subscriptions is what the new stream carries, which may be less than
	// the broken one did if the server no longer honours a subscription.
	Subscriptions SubscriptionFilter
}

// WithListenGapHandler calls h once for each break of a 2026-07-28 client's
// subscriptions/listen stream, when the client reopened it or gave up (see
// [ListenGap]). Updates and list changes may have been missed in between:
// h should read again the resources and lists that matter. h runs on its
// own goroutine, not in order with the notification handlers, and may call
// Subscribe. A connection that closes is no gap: [WithSessionEndHandler]
// tells of it.
// It configures a client (NewClient).
func WithListenGapHandler(h func(ctx context.Context, gap ListenGap)) ClientOption {
	return clientOption(func(c *config) { c.client.listenGap = h })
}

// WithListenResumeAttempts bounds how many times in a row a 2026-07-28
// client tries to reopen a broken listen stream with the same
// subscriptions (default 5); 0 never tries. The first attempt waits 250ms,
// and each failed one doubles the wait.
// It configures a client (NewClient).
func WithListenResumeAttempts(n int) ClientOption {
	return clientOption(func(c *config) {
		if n >= 0 {
			c.client.listenResumes = n
		}
	})
}

// listenBroke is called, under subs.mu, once the open listen stream ended
// without the client ending it: unless the connection went, it starts
// reopening it.
func (c *Client) listenBroke(call *listenCall, err error) {
	if errors.Is(err, ErrClosed) {
		c.cfg.logger.Debug("the subscriptions/listen stream ended", "err", err)
		return
	}
	if err == nil {
		err = errors.New("mcp: the server ended the subscriptions/listen stream")
	}
	c.cfg.logger.Warn("the subscriptions/listen stream broke; reopening it", "err", err)
	go c.resumeListen(call.conn, c.subs.gen, err)
}

// resumeListen reopens the broken listen stream with the subscriptions it
// carried, waiting longer before each attempt, until one is acknowledged,
// the attempts run out, another stream replaced it, or the connection
// ended; then it tells the application of the gap.
func (c *Client) resumeListen(conn *conn, gen uint64, cause error) {
	var err error
	for n := range c.cfg.client.listenResumes {
		if waitFor(conn.done, reconnectDelay(0, n)) {
			return
		}
		var (
			honoured SubscriptionFilter
			open     bool
		)
		honoured, open, err = c.relisten(conn, gen)
		if err == nil {
			if open {
				c.cfg.logger.Info("the subscriptions/listen stream is open again")
				c.tellGap(conn, ListenGap{Cause: cause, Subscriptions: honoured})
			}
			return
		}
		if conn.baseCtx.Err() != nil {
			return
		}
		c.cfg.logger.Debug("reopening the subscriptions/listen stream failed", "attempt", n+1, "err", err)
	}
	if err == nil {
		err = errors.New("mcp: reopening the subscriptions/listen stream is disabled")
	} else {
		err = errorf("cannot reopen the subscriptions/listen stream: %w", err)
	}
	c.cfg.logger.Warn("gave up reopening the subscriptions/listen stream", "err", err)
	c.tellGap(conn, ListenGap{Cause: cause, Err: err})
}

// relisten opens a listen stream with the subscriptions of the one that
// broke, unless a Subscribe or Unsubscribe has replaced it since (gen
// moved on), and returns what the open stream carries and whether one is
// open. The acknowledgement is awaited as long as a request's answer.
func (c *Client) relisten(conn *conn, gen uint64) (SubscriptionFilter, bool, error) {
	subs := &c.subs
	subs.changing.Lock()
	defer subs.changing.Unlock()
	subs.mu.Lock()
	replaced, open, wants := subs.gen != gen, subs.current != nil, subs.wants
	subs.mu.Unlock()
	if replaced {
		// A stream that replaced it and broke too is that one's to reopen.
		return wants, open, nil
	}
	if err := conn.baseCtx.Err(); err != nil {
		return SubscriptionFilter{}, false, err // not on a connection made since
	}
	ctx := conn.baseCtx
	if d := c.cfg.requestTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	honoured, err := c.listen(ctx, subs.uris, nil)
	return honoured, err == nil, err
}

// tellGap hands gap to the application's handler, unless the connection
// ended meanwhile.
func (c *Client) tellGap(conn *conn, gap ListenGap) {
	c.cache.drop("", "") // changes announced meanwhile are lost
	h := c.cfg.client.listenGap
	if h == nil || conn.baseCtx.Err() != nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			conn.logPanic("listen gap handler panicked", "subscriptions/listen", p)
		}
	}()
	h(conn.baseCtx, gap)
}
