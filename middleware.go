package mcp

import (
	"bytes"
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
	// ProtocolVersion is the revision the message travels under: on a
	// server, the one the request is served under. Empty before one is
	// negotiated (initialize, and a client's server/discover), for a
	// request refused before one applied (an unsupported revision), and
	// for a 2026-07-28 server's own messages, which carry none.
	ProtocolVersion string
	// SessionID is the HTTP session the message belongs to (the
	// Mcp-Session-Id of 2025-11-25 and older, or the HTTP+SSE transport's
	// session); empty without one.
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
// and its notification handlers, a server's every method. A notification
// passes it even when no handler takes it. On 2026-07-28 a server's asks
// come inside the result of the client's call, not as requests: they pass
// the client's outbound middleware as part of that call. The first
// middleware given is the outermost. It runs on the goroutine that serves
// the message, never on the connection's reader. Notifications the engine
// routes itself (progress of this peer's own calls, cancellations) do not
// pass through it. It configures either peer; options add to each other.
func WithInboundMiddleware(mw ...Middleware) Option {
	return bothOption(func(c *config) { c.inbound = append(c.inbound, mw...) })
}

// WithOutboundMiddleware wraps every request and notification the peer
// sends: a client's calls (a call with input rounds on 2026-07-28 once, the
// rounds inside), a server's asks and notifications. What a handler sends
// through its gateway gets the context the inbound middleware gave the
// handler; other notifications the connection's. The first middleware
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

// describe returns the revision and HTTP session of c's messages.
func (c *conn) describe() (version, sessionID string) { return c.disp.describe() }

// describe returns the revision the session negotiated (empty on 2026-07-28,
// where each request names its own) and its HTTP session.
func (ss *serverSession) describe() (version, sessionID string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.version, ss.sessionID
}

// describe returns the revision agreed with the server and the HTTP
// session the transport holds, if any.
func (c *Client) describe() (version, sessionID string) {
	c.mu.Lock()
	version, conn := c.version, c.conn
	c.mu.Unlock()
	if conn != nil {
		if t, ok := conn.t.(interface{ session() string }); ok {
			sessionID = t.session()
		}
	}
	return version, sessionID
}

// session returns the Mcp-Session-Id the server gave, if any.
func (t *HTTPTransport) session() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID
}

// serveThrough serves a prepared request through the inbound middleware.
// prepared is the error prepare found, which the innermost handler returns
// so that middleware sees every request. env is a copy, so that the
// caller's stays on its stack. The innermost handler marshals
// the result, so that the middleware sees it as JSON.
func (ss *serverSession) serveThrough(ctx context.Context, info *RequestInfo, env requestEnvelope, prepared error) (any, error) {
	t := &inboundTurn{ss: ss, info: info, env: env, prepared: prepared}
	t.r = Request{Method: info.method, ID: info.id, Params: info.params, ProtocolVersion: info.version, SessionID: ss.sessionID, Info: info}
	return rawAnswer(chain(ss.srv.cfg.inbound, t.serve)(ctx, &t.r))
}

// inboundTurn is one request on its way through a server's inbound
// middleware, in one allocation.
type inboundTurn struct {
	r        Request
	ss       *serverSession
	info     *RequestInfo
	env      requestEnvelope
	prepared error
}

// serve is the innermost handler: the answer prepare found, or the
// request served and its result marshalled.
func (t *inboundTurn) serve(ctx context.Context, _ *Request) (json.RawMessage, error) {
	if t.prepared != nil {
		return nil, t.prepared
	}
	t.info.ctx = ctx
	result, err := t.ss.serve(ctx, t.info, &t.env)
	if err != nil {
		return nil, err
	}
	return t.ss.conn.marshalAnswer(t.info.method, result)
}

// marshalAnswer marshals a handler's result as answerRequest would.
func (c *conn) marshalAnswer(method string, result any) (json.RawMessage, error) {
	raw, err := marshalResult(result)
	if err != nil {
		c.log.Error("cannot encode a result", attrMethod, method, "err", err)
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: cannot encode the result"}
	}
	return raw, nil
}

// rawAnswer returns what a chain returned as a handler's result: JSON
// already, which answerRequest writes as it is.
func rawAnswer(raw json.RawMessage, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// answerThrough serves a server's request to the client through the
// inbound middleware.
func (c *Client) answerThrough(ctx context.Context, req *inboundRequest) (any, error) {
	version, session := c.describe()
	r := &Request{Method: req.method, ID: req.id, Params: req.params, ProtocolVersion: version, SessionID: session}
	h := chain(c.cfg.inbound, func(ctx context.Context, _ *Request) (json.RawMessage, error) {
		result, err := c.serveAsk(ctx, req)
		if err != nil {
			return nil, err
		}
		return req.conn.marshalAnswer(req.method, result)
	})
	return rawAnswer(h(ctx, r))
}

// notificationThrough returns the queued run of an inbound notification
// through the inbound middleware; h, the notification's handler, may be
// nil, when the innermost handler does nothing. A middleware's error is
// logged: a notification has no answer.
func (c *conn) notificationThrough(ctx context.Context, method string, params json.RawMessage, h NotificationHandler) func() {
	return func() {
		version, session := c.describe()
		r := &Request{Method: method, Params: params, ProtocolVersion: version, SessionID: session}
		next := chain(c.cfg.inbound, func(ctx context.Context, r *Request) (json.RawMessage, error) {
			if h != nil {
				h(ctx, r.Params)
			}
			return nil, nil
		})
		if _, err := next(ctx, r); err != nil {
			c.log.Debug("inbound middleware refused a notification", attrMethod, method, "err", err)
		}
	}
}

// callThrough makes an outbound call through the outbound middleware, once
// for a logical call: inner makes it, with the params the chain passes on,
// and the sends inside it are not wrapped again. The request's id is taken
// now, so that the middleware sees the id the first send uses; the
// engine's own _meta members are merged into the params at each send.
// inner gets a copy of o, so that o itself stays on its caller's stack
// when there is no middleware.
func (c *conn) callThrough(ctx context.Context, method string, params json.RawMessage, o *callOptions, inner func(context.Context, string, json.RawMessage, *callOptions) (json.RawMessage, error)) (json.RawMessage, error) {
	t := &outboundCall{method: method, o: *o, inner: inner}
	t.o.wrapped = true
	if !t.o.id.IsValid() {
		c.mu.Lock()
		t.o.id = c.nextIDLocked()
		c.mu.Unlock()
	}
	version, session := c.describe()
	t.r = Request{Method: method, ID: t.o.id, Params: params, ProtocolVersion: version, SessionID: session}
	return chain(c.cfg.outbound, t.send)(ctx, &t.r)
}

// outboundCall is one call on its way through the outbound middleware, in
// one allocation.
type outboundCall struct {
	r      Request
	method string
	o      callOptions
	inner  func(context.Context, string, json.RawMessage, *callOptions) (json.RawMessage, error)
}

// send is the innermost handler: the call made with the params the chain
// passed on.
func (t *outboundCall) send(ctx context.Context, r *Request) (json.RawMessage, error) {
	return t.inner(ctx, t.method, r.Params, &t.o)
}

// notifyThrough sends a notification through the outbound middleware with
// ctx: the handler's, for what a handler sends, else the connection's.
func (c *conn) notifyThrough(ctx context.Context, method string, params any, related ID, route msgRoute) error {
	raw, err := marshalObject(params)
	if err != nil {
		return errorf("the params of %s: %w", method, err)
	}
	version, session := c.describe()
	r := &Request{Method: method, Params: raw, ProtocolVersion: version, SessionID: session}
	h := chain(c.cfg.outbound, func(_ context.Context, r *Request) (json.RawMessage, error) {
		return nil, c.queueWrite(outgoing{data: encodeRequest(ID{}, method, r.Params), related: related, route: route}, mayWait)
	})
	_, err = h(ctx, r)
	return err
}

// notifyBuilt sends a notification the caller built whole, msg, through
// the outbound middleware: its params are cut out of it.
func (c *conn) notifyBuilt(ctx context.Context, msg []byte, method string, related ID, route msgRoute) error {
	var m wireMessage
	if err := decodeEnvelope(msg, &m); err != nil {
		recycleMessage(msg)
		return errorf("the params of %s: %w", method, err)
	}
	params := bytes.Clone(m.Params)
	recycleMessage(msg)
	return c.notifyThrough(ctx, method, json.RawMessage(params), related, route)
}
