package mcp

import (
	"context"
	"encoding/json"
)

// Request is one JSON-RPC request or notification on its way through
// middleware, inbound or outbound. Both sides.
type Request struct {
	// Method is the JSON-RPC method.
	Method string
	// ID is the request's id; the zero ID for a notification. An outbound
	// call answered with input_required (2026-07-28) is sent again under
	// new ids: ID is the first.
	ID ID
	// Params are the message's params as JSON; nil when it has none. An
	// outbound middleware may pass changed params on to the next handler
	// (trace context in _meta, say); an inbound one sees them as they came.
	Params json.RawMessage
	// ProtocolVersion is the revision the message travels under; empty
	// before it is negotiated (initialize, server/discover).
	ProtocolVersion string
	// SessionID is the HTTP session the message belongs to (the
	// Mcp-Session-Id of 2025-11-25 and older); empty without one.
	SessionID string
	// Info is, on the server, what an inbound request's handler sees of it:
	// its principal, token and gateway. Nil for notifications, outbound
	// messages and on the client.
	Info *RequestInfo
}

// IsNotification reports whether r is a notification: it has no id and
// gets no answer.
func (r *Request) IsNotification() bool { return !r.ID.IsValid() }

// MethodHandler handles one message: it returns the result of a request as
// JSON, or an error, which the peer answers as the protocol says (an
// [*Error] as it is, any other error as an internal error). A
// notification's result is nil, and its error is only logged. Both sides.
type MethodHandler func(ctx context.Context, req *Request) (json.RawMessage, error)

// Middleware wraps a MethodHandler: it may look at the request, change its
// context, answer it itself (short-circuit) or call next, and look at what
// next returns. Both sides.
type Middleware func(next MethodHandler) MethodHandler

// WithInboundMiddleware wraps the handling of every request and
// notification the peer receives: a client's answers to the server's asks
// and its notification handlers, a server's every method. The first
// middleware given is the outermost. It runs on the goroutine that serves
// the message, never on the connection's reader. Notifications the engine
// routes itself (progress of this peer's own calls, cancellations) do not
// pass through it. It configures either peer; options add to each other.
func WithInboundMiddleware(mw ...Middleware) Option {
	return bothOption(func(c *config) { c.inbound = append(c.inbound, mw...) })
}

// WithOutboundMiddleware wraps every request and notification the peer
// sends: a client's calls (a call with input rounds on 2026-07-28 once, the
// rounds inside), a server's asks and notifications. The first middleware
// given is the outermost; it runs on the sender's goroutine. It configures
// either peer; options add to each other.
func WithOutboundMiddleware(mw ...Middleware) Option {
	return bothOption(func(c *config) { c.outbound = append(c.outbound, mw...) })
}

// chain returns h wrapped in mw, mw[0] outermost.
func chain(mw []Middleware, h MethodHandler) MethodHandler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
