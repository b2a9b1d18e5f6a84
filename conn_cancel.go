package mcp

import (
	"context"
	"encoding/json"
)

// Inbound cancellation. A request the peer cancels gives its dispatch slot
// back at once, before the next message is read, so that messages take
// effect in the order the peer sent them: a request sent after a cancel at
// the cap is admitted. Its handler may still run for a while; such
// handlers are bounded by an allowance of their own (lingerLimit), so that
// pairs of request and cancel cannot start goroutines without bound. When
// that allowance is spent, a cancel still cancels but the slot comes free
// only when the handler returns.

// routeCancelled performs inbound cancellation. Below the cap a user handler
// replaces the default; at the cap the engine cancels the named request
// itself, and only a cancel that took effect admits the notification past
// the cap (each request can push at most one cancellation through): the
// user's handler then runs on the cancelled request's allowance, not in a
// slot, so the slot the cancel freed stays free.
func (c *conn) routeCancelled(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(params, &p) != nil {
		c.log.Debug("ignoring a malformed notifications/cancelled")
		return
	}
	id, ok := parseID(p.RequestID)
	if !ok {
		c.log.Debug("ignoring a notifications/cancelled without a usable requestId")
		return
	}
	user := c.cfg.notifications["notifications/cancelled"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.atCapLocked() {
		in := c.inboundLocked(id)
		if !c.cancelInboundLocked(id, p.Reason) {
			c.noteShedLocked("notifications/cancelled")
			return
		}
		if user != nil {
			var on *inboundCall
			if in.released {
				on = in
				in.holds++
			}
			c.enqueueNotificationLocked(func() { user(c.baseCtx, params) }, "notifications/cancelled", on)
		}
		return
	}
	if user != nil {
		c.enqueueNotificationLocked(func() { user(c.baseCtx, params) }, "notifications/cancelled", nil)
		return
	}
	if !c.cancelInboundLocked(id, p.Reason) {
		c.log.Debug("ignoring a cancellation naming a request that is not in flight or is already cancelled", attrRequestID, id.String())
	}
}

// CancelledError is the cause of a handler context cancelled by the peer's
// notifications/cancelled; read it with context.Cause. Both peers.
type CancelledError struct {
	// Reason is the peer's reason, possibly empty.
	Reason string
}

// Error implements the error interface.
func (e *CancelledError) Error() string {
	if e.Reason == "" {
		return "mcp: request cancelled by the peer"
	}
	return "mcp: request cancelled by the peer: " + e.Reason
}

// Is makes a CancelledError match context.Canceled.
func (e *CancelledError) Is(target error) bool { return target == context.Canceled }

// cancelInboundLocked cancels an in-flight inbound request and gives its
// slot back if the allowance of cancelled handlers has room; it reports
// whether this call did it (false for unknown, finished or already
// cancelled ids).
func (c *conn) cancelInboundLocked(id ID, reason string) bool {
	in := c.inboundLocked(id)
	if in == nil || in.cancelled {
		return false
	}
	in.cancelled = true
	in.cancel(&CancelledError{Reason: reason})
	if !in.detached && c.cfg.maxInFlight > 0 && c.lingering < c.lingerLimit() {
		in.released, in.holds = true, 1
		c.occupied--
		c.lingering++
	}
	return true
}

// detachInbound gives back the dispatch slot of inbound request id, a
// long-lived request (events/stream) that a bound of its own admitted, so
// that idle streams do not lock ordinary requests out of WithMaxInFlight;
// a push transport is told too, for the bound it keeps in front of the
// engine. The request is still in flight, and still cancellable.
func (c *conn) detachInbound(id ID) {
	c.mu.Lock()
	in := c.inboundLocked(id)
	ok := in != nil && !in.released && !in.detached
	if ok {
		in.detached = true
		c.occupied--
	}
	c.mu.Unlock()
	if ok && c.push != nil {
		c.push.detached()
	}
}

// lingerLimit is how many cancelled requests may hold no slot while their
// handlers finish: as many as the cap, so that a connection runs at most
// twice the cap of handlers.
func (c *conn) lingerLimit() int { return c.cfg.maxInFlight }

// unlingerLocked drops one hold on a cancelled request that gave its slot
// back (its handler's, or its user cancel handler's); the last one frees
// its place in the allowance.
func (c *conn) unlingerLocked(in *inboundCall) {
	if in.holds--; in.holds == 0 {
		c.lingering--
	}
}

// cancelInbound is cancelInboundLocked for a caller without the lock.
func (c *conn) cancelInbound(id ID, reason string) {
	c.mu.Lock()
	c.cancelInboundLocked(id, reason)
	c.mu.Unlock()
}

// cancelHandlers cancels the context of every handler, running or to come,
// and leaves the connection open: what the handlers answer is still written.
func (c *conn) cancelHandlers(cause error) { c.cancelBase(cause) }
