package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// An Option configures either peer: it may be given to [NewClient] and to
// [NewServer]. Both are peers over the same engine, so the engine's options
// (timeouts, limits, logging) apply to either.
type Option interface {
	ClientOption
	ServerOption
}

// A ClientOption configures a client: it may be given to [NewClient]. An
// option that only a server uses is not a ClientOption, so giving it to a
// client does not compile.
type ClientOption interface {
	applyClient(*config)
}

// A ServerOption configures a server: it may be given to [NewServer]. An
// option that only a client uses is not a ServerOption.
type ServerOption interface {
	applyServer(*config)
}

// bothOption, clientOption and serverOption are the options of each side.
type (
	bothOption   func(*config)
	clientOption func(*config)
	serverOption func(*config)
)

func (o bothOption) applyClient(c *config)   { o(c) }
func (o bothOption) applyServer(c *config)   { o(c) }
func (o clientOption) applyClient(c *config) { o(c) }
func (o serverOption) applyServer(c *config) { o(c) }

// NotificationHandler handles one inbound notification. Handlers of one
// connection run one at a time, in arrival order, never on the reader.
type NotificationHandler func(ctx context.Context, params json.RawMessage)

// DefaultMaxInFlight is the default cap on concurrently dispatched inbound
// requests and notification handlers; see [WithMaxInFlight].
const DefaultMaxInFlight = 1024

type config struct {
	logger            *slog.Logger
	loggerSet         bool // WithLogger was given: panics go to logger too
	requestTimeout    time.Duration
	maxRequestTimeout time.Duration
	maxInFlight       int
	maxMessageSize    int
	writeBacklog      int
	notifications     map[string]NotificationHandler
	protocolVersion   string
	extensions        map[string]json.RawMessage
	inbound           []Middleware     // WithInboundMiddleware; nil: none, no cost
	outbound          []Middleware     // WithOutboundMiddleware
	sessionEnd        func(SessionEnd) // WithSessionEndHandler; nil: none

	client clientConfig
	server serverConfig
}

// newConfig returns the engine's settings before any option; NewClient and
// NewServer add the defaults of their own side.
func newConfig() *config {
	return &config{
		logger:            slog.New(slog.DiscardHandler),
		requestTimeout:    DefaultRequestTimeout,
		maxRequestTimeout: DefaultMaxRequestTimeout,
		maxInFlight:       DefaultMaxInFlight,
		maxMessageSize:    DefaultMaxMessageSize,
		writeBacklog:      DefaultWriteBacklog,
	}
}

// WithLogger sets the logger for the engine's own diagnostics: orphan
// responses, shed notifications, failed sends, a child's standard error.
// The default discards everything except a panic recovered from a handler
// (of a tool, prompt, resource, notification, middleware, or a client's
// handler of a server's request), which goes with its stack to
// slog.Default, as net/http logs its handlers' panics.
//
// At debug level the engine also logs each request it serves ("served a
// request") and each it sends ("sent a request") once it is answered. Its
// records name things with these attributes, those of the OpenTelemetry
// semantic conventions for MCP where they have one:
//
//   - "mcp.method.name": the JSON-RPC method
//   - "jsonrpc.request.id": the request's id
//   - "mcp.session.id": the HTTP session, when there is one
//   - "duration": how long the request took, a time.Duration
//   - "outcome": "ok", "error", "cancelled" or "timeout"
//   - "error.type": with "error", the JSON-RPC error code, or "tool_error"
//     for a tool result with isError set
//
// Whether the logger takes debug records is asked once a request; when it
// does not, the logging costs nothing more.
// It configures either peer (NewClient or NewServer).
func WithLogger(l *slog.Logger) Option {
	return bothOption(func(c *config) {
		if l != nil {
			c.logger, c.loggerSet = l, true
		}
	})
}

// The attribute names of the engine's log records: those of the
// OpenTelemetry semantic conventions for MCP where they have one. They are
// listed, for users, on WithLogger.
const (
	attrMethod    = "mcp.method.name"
	attrRequestID = "jsonrpc.request.id"
	attrSession   = "mcp.session.id"
	attrDuration  = "duration"
	attrOutcome   = "outcome"
	attrErrorType = "error.type"
)

// panicLogger is where a recovered panic is logged: the logger given, or
// slog.Default at the time of the panic.
func (c *config) panicLogger() *slog.Logger {
	if c.loggerSet {
		return c.logger
	}
	return slog.Default()
}

// WithMaxInFlight caps the inbound requests and notification handlers that
// run at once (default 1024; 0 = unlimited). A request over the cap is
// answered at once with a CodeOverloaded error and never started; a
// notification over the cap is dropped, except that notifications/cancelled
// still cancels the request it names.
//
// A request the peer cancels gives its slot back at once, so a request the
// peer sends after the cancel is admitted. Its handler may still be running;
// such handlers are bounded by an allowance of their own, as large as the
// cap, so a connection never runs more than twice the cap of handlers.
// Once that allowance is used up, a cancel still cancels, but its slot comes
// free only when its handler returns. On Streamable HTTP at 2026-07-28 the
// cancel is the client closing the request's stream, which the server
// notices in its own time, not in order with the client's next POST.
// It configures either peer (NewClient or NewServer).
func WithMaxInFlight(n int) Option {
	return bothOption(func(c *config) {
		if n >= 0 {
			c.maxInFlight = n
		}
	})
}

// WithMaxMessageSize limits the size of one incoming message (default
// 16 MiB). A larger message is discarded and answered with an error; the
// connection keeps working.
// It configures either peer (NewClient or NewServer).
func WithMaxMessageSize(n int) Option {
	return bothOption(func(c *config) {
		if n > 0 {
			c.maxMessageSize = n
		}
	})
}

// DefaultWriteBacklog is the default limit on what a connection holds for a
// peer that is not reading; see [WithWriteBacklog].
const DefaultWriteBacklog = 8 << 20

// WithWriteBacklog limits the bytes a connection holds queued for a peer
// that does not read them (default 8 MiB; n <= 0 keeps the default). They
// are counted by the buffers that hold them, which may be larger than the
// messages. Past the limit a handler's message waits until the peer reads
// (one larger than the limit waits for an empty queue); a message the
// engine sends without waiting (an error reply to bad input, an overloaded
// request, a cancellation) that would take the backlog past the limit means
// the peer is not reading: the connection is closed, the reason is logged
// and Serve returns it as its error. It does not apply to Streamable HTTP
// servers, whose streams have limits of their own.
// It configures either peer (NewClient or NewServer).
func WithWriteBacklog(n int) Option {
	return bothOption(func(c *config) {
		if n > 0 {
			c.writeBacklog = n
		}
	})
}

// WithNotificationHandler handles notifications of the given method. For
// notifications/cancelled it replaces the default handling (cancelling the
// named request) below the in-flight cap; at the cap the engine cancels the
// request itself and then runs h. For notifications/progress it receives the
// progress whose token no call is waiting on.
// It configures either peer (NewClient or NewServer).
func WithNotificationHandler(method string, h NotificationHandler) Option {
	return bothOption(func(c *config) {
		putEntry(&c.notifications, method, h)
	})
}

// WithProtocolVersion pins the protocol revision: a client speaks only that
// one, a server accepts only that one. A server pinned to 2026-07-28
// refuses initialize, and one pinned to an older revision refuses a
// 2026-07-28 request, each with CodeUnsupportedProtocolVersion naming the
// revision it speaks; over HTTP a server pinned to 2026-07-28 keeps no
// sessions: it answers GET and DELETE with 405 and judges every POST by the
// 2026-07-28 rules.
// It configures either peer (NewClient or NewServer).
func WithProtocolVersion(v string) Option {
	return bothOption(func(c *config) { c.protocolVersion = v })
}
