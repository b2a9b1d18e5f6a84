package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// dispatcher is the layer above the engine: the Client or a Server session.
type dispatcher interface {
	// newRequest returns a new record of an inbound request, inside what
	// the layer keeps of one (a server's RequestInfo): one allocation for
	// both.
	newRequest() request
	// handleRequest serves one inbound request, which newRequest made. The
	// result is marshalled unless it is a json.RawMessage.
	handleRequest(ctx context.Context, r request) (any, error)
	// notificationHandler returns the built-in handler for method, or nil.
	notificationHandler(method string) NotificationHandler
	// takeNotification hands a notification to the layer on the read path,
	// ahead of the dispatch cap: it must be cheap and never wait. It
	// reports whether the layer took it (a client's open event stream
	// takes its notifications, which a cap must not shed).
	takeNotification(method string, params json.RawMessage) bool
	// acceptNotification reports whether a notification should be handled
	// at all (a client drops those of a listen stream it has replaced).
	acceptNotification(method string, params json.RawMessage) bool
	// describe returns the revision and HTTP session the peer's messages
	// travel under, for middleware.
	describe() (version, sessionID string)
	// isClient reports whether the layer is a client: what a client
	// answers of a malformed message differs (see ignoresMalformed).
	isClient() bool
}

// inboundRequest is the engine's record of a request the peer sent us.
type inboundRequest struct {
	id     ID
	method string
	params json.RawMessage
	conn   *conn
	route  msgRoute // how messages about it travel back (HTTP streams)
	call   inboundCall
}

// request is an inbound request as the layer above the engine keeps it:
// the engine's record, and whatever the layer adds.
type request interface {
	record() *inboundRequest
}

func (r *inboundRequest) record() *inboundRequest { return r }

// inboundCall is the engine's state of an inbound request in flight.
type inboundCall struct {
	cancel    context.CancelCauseFunc
	cancelled bool
	// served, when set (initialize), is closed once the request is
	// answered: the reader waits for it before reading on.
	served chan struct{}
	// released: cancelled, it gave its slot back and counts in lingering
	// until its holds (its handler, a user cancel handler) are done.
	released bool
	holds    int8
	// detached: a long-lived request its own bound admitted, which gave
	// its slot back (detachInbound) and holds none.
	detached bool
}

// outgoing is one queued write.
type outgoing struct {
	data []byte
	// related is the inbound request this message answers or belongs to;
	// HTTP routes it onto that request's stream.
	related ID
	final   bool // data is the response to related
	route   msgRoute
}

// ownable returns a message buffer to hand to a transport that keeps it (a
// pushTransport, an exchangeTransport): the buffer itself, or an exact copy
// when it is a pooled buffer with room to spare (the pool then gets it back,
// where a buffer kept would leave the next message to make a new one).
func ownable(msg []byte) []byte {
	if cap(msg) <= maxPooledMessage && cap(msg) > len(msg) {
		own := bytes.Clone(msg)
		recycleMessage(msg)
		return own
	}
	return msg
}

// conn is the engine: one peer over one Transport.
type conn struct {
	t    Transport
	push pushTransport // t, when it is one: no reader, no writer goroutine
	cfg  *config
	disp dispatcher
	log  *slog.Logger

	// baseCtx is the parent of every handler's context.
	baseCtx    context.Context
	cancelBase context.CancelCauseFunc
	oneRequest bool           // see connMode
	notifying  bool           // under mu
	closed     bool           // under mu
	batchOK    atomic.Bool    // see batchesAllowed
	done       chan struct{}  // closed by close (see doneChan)
	wg         sync.WaitGroup // the engine's goroutines and running handlers

	mu sync.Mutex // guards the call tables, the dispatch slots and the end
	// The call tables: our calls waiting for answers, and the peer's
	// requests in flight.
	nextID   int64
	pending  map[ID]*pendingCall
	progress map[ID]*pendingCall // progress token → waiting call
	// The peer's requests in flight: the first in sole, the others in
	// inbound, so that a connection that serves one request at a time (a
	// 2026-07-28 POST's, most sessions) never makes the map.
	sole    *inboundRequest
	inbound map[ID]*inboundCall
	// The dispatch slots, taken by requests and queued notifications.
	occupied    int
	notifyQueue []queuedNotification
	// lingering counts the cancelled requests that gave their slot back
	// and whose handlers have not all returned (conn_cancel.go).
	lingering int
	// logs orders the peer's log messages, queued and handled
	// (conn_logs.go); made with the first.
	logs     *logOrder
	shed     int64
	closeErr error
	// handling counts the requests and notifications taken in and not yet
	// answered; ending says endOfInput waits for it to reach zero.
	handling atomic.Int32
	ending   atomic.Bool

	// connLoops is the writer and the workers of a connection that runs
	// its own reader; nil for a push transport's.
	*connLoops
	// armed are the deadlines of our calls armed and not yet released, and
	// free ones; a push transport's connection, which seldom calls, makes
	// them on first use (armedDeadlines).
	armed *deadlines

	// callPrefix, set before the first call, makes our request ids strings
	// that start with it: unique across the instances of a server that
	// share a session (pushSharedSession).
	callPrefix string
	// onClose, when set, hears once why the connection closed
	// (WithSessionEndHandler).
	onClose func(cause error)
}

// connLoops is what only a connection that runs its own reader and writer
// goroutines needs, kept apart so that a push transport's connection (one a
// 2026-07-28 POST) does not carry it.
type connLoops struct {
	w    writer       // the serialised writer (conn_write.go)
	jobs chan job     // hands a request to a parked worker
	idle atomic.Int32 // workers parked on jobs
	// inputEnded is set when the peer's input ended (endOfInput): nothing
	// more is read and no call may be sent, but the connection stays open
	// until the handlers' answers are written. drained is closed when the
	// last handler returns then. Both under the connection's mu.
	inputEnded error
	drained    chan struct{}
}

// connMode configures a connection when it is made.
type connMode uint8

const (
	// oneRequest: the connection exists for one inbound request (a
	// 2026-07-28 POST's), which takes baseCtx as its own context rather
	// than a child of it: a context, its Done channel and its parent's
	// map of children fewer a request.
	oneRequest connMode = 1 << iota
)

// newConn makes a connection over t. Its tables are made on first use. A
// push transport's connection is ready at once, with no reader, no writer
// and no writer channels: a 2026-07-28 HTTP POST makes a connection for one
// request, which should cost little.
func newConn(t Transport, cfg *config, disp dispatcher, mode connMode) *conn {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &conn{
		t:          t,
		cfg:        cfg,
		disp:       disp,
		log:        cfg.logger,
		baseCtx:    ctx,
		cancelBase: cancel,
		oneRequest: mode&oneRequest != 0,
	}
	if p, ok := t.(pushTransport); ok {
		c.push = p // done is made when first needed (doneChan)
	} else {
		c.done = make(chan struct{})
		c.connLoops = &connLoops{jobs: make(chan job)}
		c.w.wake = make(chan struct{}, 1)
		c.w.space = make(chan struct{})
		c.armed = new(deadlines)
	}
	return c
}

// armedDeadlines returns the connection's deadlines, made on first use on
// a push transport's connection.
func (c *conn) armedDeadlines() *deadlines {
	if c.push == nil {
		return c.armed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed == nil {
		c.armed = new(deadlines)
	}
	return c.armed
}

// start launches the reader and the writer of a connection whose transport
// is not a push transport.
func (c *conn) start(ctx context.Context) error {
	if s, ok := c.t.(starter); ok {
		if err := s.start(ctx, c.log, c.cfg.maxMessageSize); err != nil {
			return err
		}
	}
	if x, ok := c.t.(exchangeTransport); ok {
		x.pushInto(func(data []byte) { c.readFrame(data, true) }, c.failCall)
	}
	c.wg.Add(2)
	go c.run(job{read: true})
	go c.writeLoop()
	return nil
}

// readFrame is handleFrame for a frame the transport read. owned: data is
// the engine's to keep, and the message is sliced from it, not from a
// copy.
func (c *conn) readFrame(data []byte, owned bool) {
	var m wireMessage
	if !decodeSingle(data, owned, &m) {
		c.handleFrame(data, nil) // a batch, or an error to answer
		return
	}
	c.handleMessage(&m, nil, false)
}

// handleFrame decodes one frame: a message, or a batch where allowed. route
// says how answers travel back (an HTTP stream); nil for stream transports.
func (c *conn) handleFrame(data []byte, route msgRoute) {
	if !utf8.Valid(data) {
		c.queueError(ID{}, &Error{Code: CodeParseError, Message: "Parse error: message is not valid UTF-8"}, route)
		return
	}
	if first := trimJSONSpace(data); len(first) > 0 && first[0] == '[' {
		c.handleBatch(data, route)
		return
	}
	var m wireMessage
	if err := decodeEnvelope(data, &m); err != nil {
		if err == errEnvelopeShape {
			if c.ignoresMalformed(data) {
				return
			}
			c.queueError(idOf(data), &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}, route)
			return
		}
		c.queueError(ID{}, &Error{Code: CodeParseError, Message: "Parse error: " + err.Error()}, route)
		return
	}
	c.handleMessage(&m, route, false)
}

// decodeSingle decodes data into m when it is one well-formed message
// object; it reports false for a batch and for anything handleFrame must
// answer with an error. owned: m may slice data itself.
func decodeSingle(data []byte, owned bool, m *wireMessage) bool {
	if first := trimJSONSpace(data); len(first) == 0 || first[0] != '{' || !utf8.Valid(data) {
		return false
	}
	if owned {
		return decodeOwnedEnvelope(data, m) == nil
	}
	return decodeEnvelope(data, m) == nil
}

// idOf recovers the id of a message that failed to decode, if it has one.
func idOf(data []byte) ID {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &probe) == nil {
		if id, ok := parseID(probe.ID); ok {
			return id
		}
	}
	return ID{}
}

func (c *conn) handleBatch(data []byte, route msgRoute) {
	if !c.batchesAllowed() {
		c.queueError(ID{}, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: JSON-RPC batches are accepted only on protocol revision 2025-03-26"}, route)
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		c.queueError(ID{}, &Error{Code: CodeParseError, Message: "Parse error: " + err.Error()}, route)
		return
	}
	if len(items) == 0 {
		c.queueError(ID{}, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: empty batch"}, route)
		return
	}
	for _, item := range items {
		var m wireMessage
		if err := decodeEnvelope(item, &m); err != nil {
			if c.ignoresMalformed(item) {
				continue
			}
			c.queueError(idOf(item), &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}, route)
			continue
		}
		if m.Method == "initialize" {
			c.queueError(idOf(item), &Error{Code: CodeInvalidRequest, Message: "Invalid Request: initialize must not be batched"}, route)
			continue
		}
		c.handleMessage(&m, route, false)
	}
}

// handleMessage routes one decoded message. inline: a request runs on the
// calling goroutine, a push transport's, which waits for its answer anyway
// (see dispatchRequest).
func (c *conn) handleMessage(m *wireMessage, route msgRoute, inline bool) {
	kind, why := m.kind()
	switch kind {
	case kindResponse:
		c.routeResponse(m)
	case kindRequest:
		id, ok := parseID(m.ID)
		if !ok {
			c.queueError(ID{}, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: the id must be a string or an integer"}, route)
			return
		}
		c.dispatchRequest(id, m.Method, m.Params, route, inline)
	case kindNotification:
		c.routeNotification(m.Method, m.Params)
	default:
		id, _ := parseID(m.ID)
		if m.Method == "" && ((len(m.ID) == 0 && m.JSONRPC == "2.0") || c.isClient()) {
			c.log.Debug("ignoring a message that is neither request nor response")
			return
		}
		c.queueError(id, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + why}, route)
	}
}

// isClient reports whether c is a client's connection.
func (c *conn) isClient() bool { return c.disp.isClient() }

// ignoresMalformed reports whether a malformed message (valid JSON of the
// wrong shape) goes unanswered, and logs it if so. JSON-RPC 2.0 asks for a
// reply only to a call: a client is the JSON-RPC server only of messages
// that carry a method, so it answers one of those that is malformed with
// Invalid Request, while anything else it gets (a malformed response, a
// bare value, {}) is the JSON-RPC client's to handle, which answers
// nothing. A server answers every malformed message, as the JSON-RPC
// server of all its client sends. Text that is not JSON at all is a parse
// error, and a batch where none is allowed is refused: both sides answer
// those. An empty method name reads as none.
func (c *conn) ignoresMalformed(data []byte) bool {
	if !c.isClient() || hasMember(data, "method") {
		return false
	}
	c.log.Debug("ignoring a malformed message that is no request")
	return true
}

// routeResponse hands a response to the call waiting for it. A response
// nobody waits for (the call timed out, was cancelled, or never existed) is
// an orphan: logged and dropped.
func (c *conn) routeResponse(m *wireMessage) {
	id, ok := parseID(m.ID)
	if !ok {
		if m.Error != nil {
			c.log.Warn("discarding an error response without a usable id", "code", m.Error.Code, "message", m.Error.Message)
		} else {
			c.log.Warn("discarding a response without a usable id")
		}
		return
	}
	call := c.takePending(id)
	if call == nil {
		if c.isClosed() {
			// Closing let go of every call; a peer that answers one as it
			// sees the connection end is not misbehaving.
			c.log.Debug("discarding a response that came after the connection closed", attrRequestID, id.String())
			return
		}
		if m.Error != nil {
			c.log.Warn("discarding orphan error response for unknown request id", attrRequestID, id.String(), "code", m.Error.Code)
		} else {
			c.log.Warn("discarding orphan success response for unknown request id", attrRequestID, id.String())
		}
		return
	}
	if m.Error != nil {
		call.finish(nil, m.Error)
	} else {
		call.finish(m.Result, nil)
	}
}

// dispatchRequest admits an inbound request past the cap and the duplicate
// check, then runs it one of three ways: on the calling goroutine when
// inline says it is a push transport's own (an HTTP handler, which would
// otherwise only wait for the answer), else on a parked worker or a new
// goroutine. Never on a reader.
//
// initialize is served before anything after it is read, so that the
// lifecycle takes effect in the order the peer sent it: a request that
// follows initialize on the wire finds the session initialized, and its
// answer is queued after initialize's. It takes the road of any request;
// the caller waits for its answer before it reads on.
func (c *conn) dispatchRequest(id ID, method string, params json.RawMessage, route msgRoute, inline bool) {
	ctx, r := c.claimRequest(id, method, params, route)
	if r == nil {
		return
	}
	if inline && c.push != nil {
		c.serveRequest(ctx, r)
		return
	}
	if method != "initialize" {
		c.scheduleRequest(ctx, r)
		return
	}
	served := make(chan struct{})
	r.record().call.served = served
	c.scheduleRequest(ctx, r)
	select {
	case <-served:
	case <-c.done:
	}
}

// claimRequest claims a slot and the id of an inbound request, or answers
// it with an error and returns a nil request.
func (c *conn) claimRequest(id ID, method string, params json.RawMessage, route msgRoute) (context.Context, request) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil
	}
	if c.atCapLocked() {
		c.noteShedLocked(method)
		c.mu.Unlock()
		// Answered before the id is claimed: the request left no trace and
		// a retry is not a duplicate.
		c.queueWrite(outgoing{data: encodeError(id, &Error{Code: CodeOverloaded, Message: "overloaded"}), related: id, final: true, route: route}, mustQueue)
		return nil, nil
	}
	if c.inboundLocked(id) != nil {
		c.mu.Unlock()
		c.queueWrite(outgoing{data: encodeError(id, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: request id " + id.String() + " is already in flight"}), related: id, final: true, route: route}, mustQueue)
		return nil, nil
	}
	ctx, cancel := c.baseCtx, c.cancelBase
	if c.oneRequest {
		c.oneRequest = false // a second one, which does not come, gets a child
	} else {
		ctx, cancel = context.WithCancelCause(c.baseCtx)
	}
	r := c.disp.newRequest()
	req := r.record()
	*req = inboundRequest{id: id, method: method, params: params, conn: c, route: route, call: inboundCall{cancel: cancel}}
	c.addInboundLocked(req)
	c.occupied++
	c.handling.Add(1)
	c.wg.Add(1)
	c.mu.Unlock()
	return ctx, r
}

// inboundLocked returns the peer's request id in flight, or nil.
func (c *conn) inboundLocked(id ID) *inboundCall {
	if r := c.sole; r != nil && r.id == id {
		return &r.call
	}
	return c.inbound[id]
}

// addInboundLocked records a request in flight: the first in the sole
// slot, so that a connection that serves one request at a time (a
// 2026-07-28 POST's) never makes the map.
func (c *conn) addInboundLocked(req *inboundRequest) {
	if c.sole == nil {
		c.sole = req
		return
	}
	putEntry(&c.inbound, req.id, &req.call)
}

func (c *conn) removeInboundLocked(id ID) {
	if r := c.sole; r != nil && r.id == id {
		c.sole = nil
		return
	}
	delete(c.inbound, id)
}

func (c *conn) atCapLocked() bool {
	return c.cfg.maxInFlight > 0 && c.occupied >= c.cfg.maxInFlight
}

// noteShedLocked logs shedding with a throttle: the first, then every 100th.
func (c *conn) noteShedLocked(method string) {
	c.shed++
	if c.shed == 1 || c.shed%100 == 0 {
		c.log.Warn("in-flight cap reached: shedding", attrMethod, method, "shed_so_far", c.shed, "cap", c.cfg.maxInFlight)
	}
}

func (c *conn) serveRequest(ctx context.Context, r request) {
	// Done even when the handler ends its goroutine (runtime.Goexit, as
	// t.FailNow does), which skips the answer.
	defer c.wg.Done()
	defer c.handled()
	req := r.record()
	if req.call.served != nil {
		defer close(req.call.served)
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		c.serveLogged(ctx, r)
		return
	}
	result, err := c.runHandler(ctx, r)
	c.answerRequest(req, result, err)
}

// answerRequest sends the response to req, whose handler returned result
// and err, unless it was cancelled, and frees its slot. It returns the
// request's error as answered: err, or the failure of a result that
// writes itself (resultAppender) to encode.
func (c *conn) answerRequest(req *inboundRequest, result any, err error) error {
	in := &req.call
	c.mu.Lock()
	c.removeInboundLocked(req.id)
	if in.released {
		c.unlingerLocked(in)
	} else if !in.detached {
		c.occupied--
	}
	cancelled := in.cancelled
	c.mu.Unlock()
	in.cancel(nil)
	if cancelled {
		c.log.Debug("dropping the response to a cancelled request", attrRequestID, req.id.String(), attrMethod, req.method)
		if c.push != nil {
			// No response, but a stream waiting on one must still end.
			c.queueWrite(outgoing{related: req.id, final: true, route: req.route}, mayWait)
		}
		return err
	}
	var data []byte
	if ra, ok := result.(resultAppender); ok && err == nil {
		// Its encoding failure is the request's error, as a handler's is.
		data, err = encodeAppendedResult(req.id, ra)
	}
	switch {
	case data != nil:
	case err != nil:
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &Error{Code: CodeInternalError, Message: untitledText(err)}
		}
		data = encodeError(req.id, rpcErr)
	default:
		raw, merr := marshalResult(result)
		if merr != nil {
			data = encodeError(req.id, &Error{Code: CodeInternalError, Message: "Internal error: cannot encode the result"})
			c.log.Error("cannot encode a result", attrMethod, req.method, "err", merr)
		} else {
			data = encodeResult(req.id, raw)
		}
	}
	c.queueWrite(outgoing{data: data, related: req.id, final: true, route: req.route}, mayWait)
	return err
}

// runHandler calls the dispatcher, turning a panic into an internal error.
func (c *conn) runHandler(ctx context.Context, r request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.logPanic("handler panicked", r.record().method, p)
			result, err = nil, &Error{Code: CodeInternalError, Message: "Internal error"}
		}
	}()
	return c.disp.handleRequest(ctx, r)
}

// logPanic logs a panic recovered from user code with its stack: to the
// logger of WithLogger, or to slog.Default when none was given, so that an
// operator sees it as net/http shows a handler's panic.
func (c *conn) logPanic(msg, method string, p any) {
	c.cfg.panicLogger().Error(msg, attrMethod, method, "panic", p, "stack", string(debug.Stack()))
}

func marshalResult(v any) (json.RawMessage, error) {
	switch r := v.(type) {
	case json.RawMessage:
		if len(r) == 0 {
			return json.RawMessage("{}"), nil
		}
		return r, nil
	case nil:
		return json.RawMessage("{}"), nil
	case *CallToolResult:
		return json.Marshal(r.withTexts())
	}
	return json.Marshal(v)
}

// routeNotification routes progress and cancellation itself, hands the layer
// what it takes on the read path, and queues every other notification that
// has a handler behind the cap.
func (c *conn) routeNotification(method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		if c.routeProgress(params) {
			return
		}
	case "notifications/cancelled":
		c.routeCancelled(params)
		return
	}
	if !c.disp.acceptNotification(method, params) || c.disp.takeNotification(method, params) {
		return
	}
	h := c.cfg.notifications[method]
	if h == nil {
		h = c.disp.notificationHandler(method)
	}
	if h == nil && c.cfg.inbound == nil {
		return // costs nothing: no handler
	}
	c.mu.Lock()
	if c.atCapLocked() {
		c.noteShedLocked(method)
		c.mu.Unlock()
		return
	}
	ctx := c.baseCtx
	if method == "notifications/message" {
		ctx = c.logContextLocked()
	}
	if c.cfg.inbound != nil {
		c.enqueueNotificationLocked(c.notificationThrough(ctx, method, params, h), method, nil)
	} else {
		c.enqueueNotificationLocked(func() { h(ctx, params) }, method, nil)
	}
	c.mu.Unlock()
}

// batchesAllowed reports whether the peer may send JSON-RPC batches: only
// on protocol revision 2025-03-26.
func (c *conn) batchesAllowed() bool { return c.batchOK.Load() }

// queuedNotification is a notification handler waiting to run.
type queuedNotification struct {
	run func()
	log bool // a log message (conn_logs.go)
	// on: the cancelled request on whose allowance it runs (see
	// routeCancelled); nil when it occupies a slot.
	on *inboundCall
}

// enqueueNotificationLocked queues a notification handler. It occupies a
// dispatch slot until it has run, or a hold on the cancelled request on;
// handlers run one at a time, in order, on a goroutine that exists only
// while the queue is non-empty.
func (c *conn) enqueueNotificationLocked(run func(), method string, on *inboundCall) {
	if c.closed {
		if on != nil {
			c.unlingerLocked(on)
		}
		return
	}
	if on == nil {
		c.occupied++
	}
	c.handling.Add(1)
	log := method == "notifications/message"
	if log {
		if c.logs == nil {
			c.logs = new(logOrder)
		}
		c.logs.queued++
	}
	c.notifyQueue = append(c.notifyQueue, queuedNotification{on: on, log: log, run: func() {
		defer func() {
			if p := recover(); p != nil {
				c.logPanic("notification handler panicked", method, p)
			}
		}()
		run()
	}})
	if !c.notifying {
		c.notifying = true
		c.wg.Add(1)
		go c.runNotifications()
	}
}

// handled counts a request or notification done, its answer queued, and
// tells endOfInput when it was the last.
func (c *conn) handled() {
	if c.handling.Add(-1) == 0 && c.ending.Load() {
		c.endDrain()
	}
}

func (c *conn) endDrain() {
	c.mu.Lock()
	if c.connLoops != nil && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

func (c *conn) runNotifications() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if len(c.notifyQueue) == 0 {
			c.notifying = false
			c.notifyQueue = nil
			c.mu.Unlock()
			return
		}
		next := c.notifyQueue[0]
		c.notifyQueue[0] = queuedNotification{}
		c.notifyQueue = c.notifyQueue[1:]
		c.mu.Unlock()
		next.run()
		c.mu.Lock()
		if next.on != nil {
			c.unlingerLocked(next.on)
		} else {
			c.occupied--
		}
		if next.log {
			c.loggedLocked()
		}
		c.mu.Unlock()
		c.handled()
	}
}

// queueError queues an error response from the reader.
func (c *conn) queueError(id ID, e *Error, route msgRoute) {
	c.queueWrite(outgoing{data: encodeError(id, e), related: id, final: true, route: route}, mustQueue)
}

// notify sends a notification. related names the inbound request it belongs
// to (zero for none).
func (c *conn) notify(method string, params any, related ID, route msgRoute) error {
	if c.cfg.outbound != nil {
		return c.notifyThrough(c.baseCtx, method, params, related, route)
	}
	if _, ok := rawJSONOf(params); ok || params == nil {
		raw, err := marshalObject(params)
		if err != nil {
			return errorf("the params of %s: %w", method, err)
		}
		return c.queueWrite(outgoing{data: encodeRequest(ID{}, method, raw), related: related, route: route}, mayWait)
	}
	// The params are encoded into the message itself, not into a copy.
	b := appendRequestHead(messageBuffer(len(method)+128), ID{}, method)
	b = append(b, `,"params":`...)
	start := len(b)
	b, err := appendJSON(b, params)
	if err == nil {
		err = checkObject(params, b[start:])
	}
	if err != nil {
		recycleMessage(b)
		return errorf("the params of %s: %w", method, err)
	}
	return c.queueWrite(outgoing{data: append(b, '}'), related: related, route: route}, mayWait)
}

// takePending removes the pending call id from the tables and returns it,
// or nil when no call waits for id.
func (c *conn) takePending(id ID) *pendingCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.pending[id]
	if call != nil {
		delete(c.pending, id)
		if call.progress != nil && c.progress[call.id] == call {
			delete(c.progress, call.id)
		}
		if c.logs != nil {
			call.logsBefore = c.logs.queued
		}
	}
	return call
}

// awaits reports whether one of our calls waits for a response to id.
func (c *conn) awaits(id ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[id] != nil
}

// busy reports whether a request or notification of the peer is still
// being handled.
func (c *conn) busy() bool { return c.handling.Load() > 0 }

// failCall ends the pending call id with err, if it still waits.
func (c *conn) failCall(id ID, err error) {
	if call := c.takePending(id); call != nil {
		call.finish(nil, err)
	}
}

// closedError is ErrClosed with the reason the connection ended; it reads
// as fmt.Errorf("%w: %w", ErrClosed, cause) would, without formatting
// anything until asked.
type closedError struct{ cause error }

func (e *closedError) Error() string   { return ErrClosed.Error() + ": " + untitledText(e.cause) }
func (e *closedError) Unwrap() []error { return []error{ErrClosed, e.cause} }

// closedErr is the error of a call on a closed connection; nil while the
// connection is open.
func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return nil
	}
	return &closedError{c.closeErr}
}

// close ends the connection once: every pending call fails with an error
// wrapping ErrClosed, every handler's context is cancelled, the writer stops
// and the transport is closed.
func (c *conn) close(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if cause == nil {
		cause = errors.New("closed")
	}
	c.closeErr = cause
	pending := c.pending
	c.pending = nil
	clear(c.progress)
	done := c.done
	c.mu.Unlock()

	if c.connLoops != nil {
		c.w.mu.Lock()
		c.w.closed = true
		// Nothing queued is written now: let it go rather than keep a
		// backlog until the connection is collected.
		clear(c.w.queue)
		c.w.queue, c.w.bytes = nil, 0
		c.w.mu.Unlock()
	}

	err := &closedError{cause}
	for _, call := range pending {
		call.finish(nil, err)
	}
	c.cancelBase(err)
	if done != nil {
		close(done)
	}
	c.t.Close()
	if c.onClose != nil {
		c.onClose(cause)
	}
}

// endOfInput ends a connection whose peer will send nothing more: every
// call waiting for an answer fails and every handler's context is
// cancelled, as on close, but what the handlers answer is still written
// before the connection closes, so that each request the peer sent before
// its input ended is answered (a shell pipe writes its requests and closes
// at once). Closing the connection meanwhile ends the wait. Only a
// connection that runs its own reader (connLoops) sees its input end.
func (c *conn) endOfInput(cause error) {
	err := &closedError{cause}
	c.mu.Lock()
	if c.closed || c.inputEnded != nil {
		c.mu.Unlock()
		return
	}
	c.inputEnded = err
	pending := c.pending
	c.pending = nil
	clear(c.progress)
	drained := make(chan struct{})
	c.drained = drained
	c.mu.Unlock()
	c.ending.Store(true)
	if c.handling.Load() == 0 {
		c.endDrain()
	}
	for _, call := range pending {
		call.finish(nil, err)
	}
	c.cancelBase(err)
	select {
	case <-drained:
	case <-c.doneChan():
		return
	}
	c.flushWrites()
	c.close(cause)
}

// doneChan returns done, which close closes. A push transport's
// connection (a 2026-07-28 POST's, which seldom needs it) makes it on
// first use.
func (c *conn) doneChan() <-chan struct{} {
	if c.push == nil {
		return c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.closed {
			close(c.done)
		}
	}
	return c.done
}

// closeAndWait closes the connection and waits for every goroutine it
// started, handlers included, to return.
// isClosed reports whether close has begun.
func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *conn) closeAndWait(cause error) {
	c.close(cause)
	c.wg.Wait()
}

// call sends a request and waits for its response, its deadline, ctx, or the
// end of the connection, whichever comes first.
func (c *conn) call(ctx context.Context, method string, params json.RawMessage, o *callOptions) (json.RawMessage, error) {
	if c.cfg.outbound != nil && !o.wrapped {
		return c.callThrough(ctx, method, params, o, c.call)
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		return c.callLogged(ctx, method, params, o)
	}
	return c.roundTrip(ctx, method, params, o)
}

// roundTrip is call past the middleware and the logging.
func (c *conn) roundTrip(ctx context.Context, method string, params json.RawMessage, o *callOptions) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dl := o.dl
	if dl == nil {
		idle := c.cfg.requestTimeout
		if o.timeoutSet {
			idle = o.timeout
		}
		dl = armDeadline(idle, c.cfg.maxRequestTimeout, c.armedDeadlines())
		defer dl.release()
	}
	call, err := c.send(method, params, o, dl)
	if err != nil {
		return nil, err
	}
	return c.await(ctx, call, o)
}

// send registers a call and queues its request. The progress token is the
// request's own id, which is unique among our outstanding requests.
func (c *conn) send(method string, params json.RawMessage, o *callOptions, dl *deadline) (*pendingCall, error) {
	call := &pendingCall{method: method, done: make(chan struct{}), deadline: dl}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, c.closedErr()
	}
	if c.connLoops != nil && c.inputEnded != nil {
		c.mu.Unlock()
		return nil, c.inputEnded
	}
	if call.id, o.id = o.id, (ID{}); !call.id.IsValid() {
		call.id = c.nextIDLocked()
	}
	meta := o.meta
	if o.progress != nil {
		call.progress = &callProgress{fn: o.progress, signal: make(chan struct{}, 1)}
		putEntry(&c.progress, call.id, call) // the progress token is the call's id
		meta = append(meta[:len(meta):len(meta)], metaEntry{key: "progressToken", value: call.id.appendJSON(nil)})
	}
	putEntry(&c.pending, call.id, call)
	c.mu.Unlock()
	data := encodeRequestMeta(call.id, method, params, meta)
	if err := c.queueWrite(outgoing{data: data, related: o.related, route: o.route}, mayWait); err != nil {
		c.forget(call)
		return nil, err
	}
	return call, nil
}

// nextIDLocked returns the id of our next request.
func (c *conn) nextIDLocked() ID {
	c.nextID++
	if c.callPrefix != "" {
		return StringID(c.callPrefix + strconv.FormatInt(c.nextID, 10))
	}
	return Int64ID(c.nextID)
}

// forget removes a call from the tables; it reports whether the call was
// still pending, that is, whether the caller now owns its outcome.
func (c *conn) forget(call *pendingCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[call.id] != call {
		return false
	}
	delete(c.pending, call.id)
	if call.progress != nil && c.progress[call.id] == call {
		delete(c.progress, call.id)
	}
	return true
}

func (c *conn) await(ctx context.Context, call *pendingCall, o *callOptions) (json.RawMessage, error) {
	dl := call.deadline
	for {
		var bound TimeoutBound
		var elapsed time.Duration
		select {
		case <-call.done:
			call.runProgress()
			c.awaitLogs(ctx, call)
			if call.err != nil {
				return nil, call.err
			}
			return call.result, nil
		case <-call.progressSignal():
			call.runProgress()
			continue
		case <-dl.C():
			var ok bool
			if bound, elapsed, ok = dl.expired(); !ok {
				continue
			}
		case <-ctx.Done():
		}
		if !c.forget(call) {
			// The response won the race; take it.
			<-call.done
			call.runProgress()
			c.awaitLogs(ctx, call)
			if call.err != nil {
				return nil, call.err
			}
			return call.result, nil
		}
		if bound != "" {
			c.abandon(call, o, "The request timed out.")
			return nil, &RequestTimeoutError{ID: call.id, Method: call.method, Bound: bound, Timeout: elapsed, ProgressReports: call.progressReports()}
		}
		cause := context.Cause(ctx)
		c.abandon(call, o, "The request was cancelled by the caller: "+cause.Error())
		if cause != ctx.Err() {
			return nil, errorf("request %s (%s) abandoned: %w (%w)", call.id, call.method, ctx.Err(), cause)
		}
		return nil, errorf("request %s (%s) abandoned: %w", call.id, call.method, ctx.Err())
	}
}

// abandon tells the peer that a call it may still be working on is dropped,
// after the call's slot was freed: abort its exchange where the transport
// has one, then send notifications/cancelled. The send is queued, never
// awaited; if it cannot be queued it is only logged. initialize is never
// cancelled.
func (c *conn) abandon(call *pendingCall, o *callOptions, reason string) {
	if x, ok := c.t.(exchangeTransport); ok {
		if o.drain > 0 {
			// Read on until the peer ends it, for a while.
			time.AfterFunc(o.drain, func() { x.abortExchange(call.id) })
		} else {
			x.abortExchange(call.id)
		}
	}
	if call.method == "initialize" {
		return
	}
	params := make([]byte, 0, 64+len(reason))
	params = append(params, `{"requestId":`...)
	params = call.id.appendJSON(params)
	params = append(params, `,"reason":`...)
	params = appendJSONString(params, reason)
	params = append(params, '}')
	data := encodeRequest(ID{}, "notifications/cancelled", withMeta(params, o.meta))
	if err := c.queueWrite(outgoing{data: data, related: o.related, route: o.route}, mayDrop); err != nil {
		c.log.Warn("could not tell the peer that a request was abandoned", attrRequestID, call.id.String(), "err", err)
	}
}
