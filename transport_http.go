package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// Defaults of the Streamable HTTP options.
const (
	// DefaultSessionTimeout is how long an idle legacy session lives; see
	// [WithSessionTimeout].
	DefaultSessionTimeout = 10 * time.Minute
	// DefaultMaxBodyBytes caps a POST body; see [WithMaxBodyBytes].
	DefaultMaxBodyBytes = 4 << 20
	// DefaultWriteTimeout bounds each write to an HTTP client; see
	// [WithWriteTimeout].
	DefaultWriteTimeout = 30 * time.Second
	// DefaultKeepAlive is how long a response may stay silent before the
	// handler sends an SSE comment; see [WithKeepAlive]. It is well under
	// the minute proxies such as nginx wait for a byte by default.
	DefaultKeepAlive = 25 * time.Second
	// DefaultEventStoreBytes bounds the events the default [EventStore]
	// keeps for resumption, across all sessions of a handler.
	DefaultEventStoreBytes = 16 << 20
	// DefaultCloseTimeout bounds the DELETE a client transport sends when
	// it closes; see [WithCloseTimeout].
	DefaultCloseTimeout = 5 * time.Second
	// DefaultReconnectAttempts bounds the attempts to resume a lost SSE
	// stream; see [WithReconnectAttempts].
	DefaultReconnectAttempts = 5
	// DefaultSessionBacklogBytes and DefaultSessionBacklogMessages bound
	// what a legacy session holds for its standalone GET stream; see
	// [WithSessionBacklog].
	DefaultSessionBacklogBytes    = 256 << 10
	DefaultSessionBacklogMessages = 256
	// DefaultSessionBacklogBudget bounds what the standalone GET streams of
	// all legacy sessions hold together; see [WithSessionBacklogBudget].
	DefaultSessionBacklogBudget = 64 << 20
	// DefaultMaxAnswerPosts bounds the answers to the server a client
	// transport POSTs at once; see [WithMaxAnswerPosts].
	DefaultMaxAnswerPosts = 4
	// DefaultMaxSessions bounds the live legacy sessions of a handler; see
	// [WithMaxSessions].
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerPrincipal bounds the live legacy sessions of one
	// principal; see [WithMaxSessionsPerPrincipal].
	DefaultMaxSessionsPerPrincipal = 1000
)

// An HTTPOption configures both the server's HTTP handlers and the
// client's HTTP transports.
type HTTPOption interface {
	HTTPHandlerOption
	HTTPTransportOption
}

// An HTTPHandlerOption configures, on the server, the Streamable HTTP
// handler ([NewHTTPHandler]) or the 2024-11-05 one ([NewSSEHandler]). An
// option of the client transports is not one, so giving it to a handler
// does not compile.
type HTTPHandlerOption interface {
	applyHandler(*httpConfig)
}

// An HTTPTransportOption configures, on the client, the Streamable HTTP
// transport ([NewHTTPTransport]) or the 2024-11-05 one ([NewSSETransport]).
type HTTPTransportOption interface {
	applyTransport(*httpConfig)
}

type (
	httpBothOption      func(*httpConfig)
	httpHandlerOption   func(*httpConfig)
	httpTransportOption func(*httpConfig)
)

func (o httpBothOption) applyHandler(c *httpConfig)        { o(c) }
func (o httpBothOption) applyTransport(c *httpConfig)      { o(c) }
func (o httpHandlerOption) applyHandler(c *httpConfig)     { o(c) }
func (o httpTransportOption) applyTransport(c *httpConfig) { o(c) }

type httpConfig struct {
	ctx            context.Context
	sessionTimeout time.Duration
	noStandalone   bool
	statelessOnly  bool // the server is pinned to 2026-07-28 (WithProtocolVersion): no sessions
	store          EventStore
	storeSet       bool
	cluster        clusterConfig // WithSessionStore, WithSessionSaveRetries
	allowedOrigins []string      // WithAllowedOrigins, which are also CORS origins
	allowedHosts   []string
	maxBodyBytes   int64
	// authorize checks a request's credentials (WithAuthorizer); an
	// *authRefusal error says how to answer, any other gets 401 with a
	// bare Bearer challenge. scopes, set when the Authorizer is a
	// BearerAuth, checks the scopes each message of a POST needs.
	authorize    func(w http.ResponseWriter, r *http.Request) (principal string, token *TokenInfo, err error)
	scopes       *BearerAuth
	maxSessions  int
	maxPerUser   int
	writeTimeout time.Duration
	keepAlive    time.Duration
	storeDelay   time.Duration // WithEventStoreDelay
	// backlogBytes and backlogMessages bound a session's standalone
	// stream backlog (WithSessionBacklog).
	backlogBytes    int
	backlogMessages int
	backlogBudget   int // WithSessionBacklogBudget
	// hostAllowed is the last Host header a loopback server found allowed
	// (a loopback name or address, or listed), which is allowed on any
	// server: a client sends the same Host with every request, which then
	// costs a comparison.
	hostAllowed atomic.Pointer[string]

	client *http.Client
	// plainClient: client's RoundTripper is net/http's own (or the OAuth
	// one over it, which clones what it changes), which never edits a
	// request it is given; another one might.
	plainClient  bool
	header       http.Header
	closeTimeout time.Duration
	reconnects   int
	answerPosts  int
	oauth        *OAuthConfig // WithOAuth
}

func newHTTPConfig() *httpConfig {
	c := &httpConfig{
		sessionTimeout: DefaultSessionTimeout,
		maxBodyBytes:   DefaultMaxBodyBytes,
		writeTimeout:   DefaultWriteTimeout,
		keepAlive:      DefaultKeepAlive,
		storeDelay:     DefaultEventStoreDelay,
		closeTimeout:   DefaultCloseTimeout,
		reconnects:     DefaultReconnectAttempts,
		answerPosts:    DefaultMaxAnswerPosts,
		maxSessions:    DefaultMaxSessions,
		maxPerUser:     DefaultMaxSessionsPerPrincipal,
		header:         make(http.Header),
	}
	c.backlogBytes, c.backlogMessages = DefaultSessionBacklogBytes, DefaultSessionBacklogMessages
	c.backlogBudget = DefaultSessionBacklogBudget
	return c
}

// handlerConfig is the configuration of a handler given opts.
func handlerConfig(opts []HTTPHandlerOption) *httpConfig {
	c := newHTTPConfig()
	for _, o := range opts {
		o.applyHandler(c)
	}
	return c
}

// transportConfig is the configuration of a client transport given opts.
func transportConfig(opts []HTTPTransportOption) *httpConfig {
	c := newHTTPConfig()
	for _, o := range opts {
		o.applyTransport(c)
	}
	if c.client == nil {
		c.client = defaultHTTPClient()
	}
	switch c.client.Transport.(type) {
	case nil, *http.Transport:
		c.plainClient = true
	}
	return c
}

// WithSessionTimeout sets how long a legacy session may stay idle (no
// request in progress, no stream open) before the handler ends it and frees
// all it holds (default 10 minutes; 0 keeps idle sessions until the client
// deletes them). Handler only.
func WithSessionTimeout(d time.Duration) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if d >= 0 {
			c.sessionTimeout = d
		}
	})
}

// WithoutStandaloneStream turns off the standalone GET stream of legacy
// sessions: the handler answers such a GET with 405 and drops the messages
// that belong to no request, and the client transport does not open one.
func WithoutStandaloneStream() HTTPOption {
	return httpBothOption(func(c *httpConfig) { c.noStandalone = true })
}

// WithEventStore sets where the handler keeps the SSE events of legacy
// sessions so that a client that lost a stream can resume it with
// Last-Event-ID (default: a [NewMemoryEventStore] of DefaultEventStoreBytes
// per handler). nil turns resumption off: events carry no ids and a message
// whose stream is gone is dropped. Handler only.
func WithEventStore(store EventStore) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.store, c.storeSet = store, true })
}

// WithAllowedOrigins lets web pages of the given origins, like
// "https://app.example.com", call the handler from a browser, besides
// pages of its own origin: it answers their CORS preflight (OPTIONS) and
// lets them read the answers and the Mcp-Session-Id, WWW-Authenticate and
// Retry-After headers. A request whose Origin header names another origin
// gets 403, so that a web page cannot drive a server on the user's
// machine. "*" lets any origin in, and so turns the Origin check off. The
// handler's own origin is an http or https origin of the request's host
// and port; an origin with userinfo is always refused. Without the option
// only the own origin is served, and OPTIONS gets 405. Handler only.
func WithAllowedOrigins(origins ...string) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.allowedOrigins = append(c.allowedOrigins, origins...) })
}

// WithAllowedHosts lists host names (without port) that a handler serving a
// loopback address accepts in the Host header besides localhost and the
// loopback addresses; "*" accepts any. Requests to a loopback listener that
// name another host are refused with 403: they come from DNS rebinding.
// Behind a local reverse proxy that passes the public Host on, list it
// here. Handler only.
func WithAllowedHosts(hosts ...string) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.allowedHosts = append(c.allowedHosts, hosts...) })
}

// WithMaxBodyBytes caps the size of a POST body (default 4 MiB); a larger
// one is refused with 413. Handler only.
func WithMaxBodyBytes(n int64) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if n > 0 {
			c.maxBodyBytes = n
		}
	})
}

// An Authorizer checks, on the server, a request before the handler reads
// it and returns the principal it acts for: who sent it, like the subject
// of a bearer token. A non-nil error refuses the request with 401
// Unauthorized and a "WWW-Authenticate: Bearer" challenge; the error's
// text is the reason given. An empty principal with a nil error lets the
// request through as anonymous. [BearerAuth] is the Authorizer of an OAuth
// resource server; [AuthorizerFunc] makes one of a function.
type Authorizer interface {
	Authorize(r *http.Request) (principal string, err error)
}

// AuthorizerFunc is an [Authorizer] that is a function: f.Authorize(r)
// calls f(r). Server side.
type AuthorizerFunc func(r *http.Request) (principal string, err error)

// Authorize calls f(r).
func (f AuthorizerFunc) Authorize(r *http.Request) (string, error) { return f(r) }

// WithAuthorizer makes the handler check every request with a before
// reading it. A legacy session belongs to the principal whose initialize
// opened it: a request of another principal that names it gets 404, as
// for an unknown session, and can neither use nor end it; a 2026-07-28
// requestState minted for one principal is refused for another. Handlers
// learn the principal from RequestInfo.Principal. Given a [BearerAuth] (or
// a *BearerAuth), the handler does all it describes: its challenges, the
// scopes of each method and tool, RequestInfo.Token; it panics if the
// BearerAuth has no Verifier. Any other Authorizer names the principal
// only (a BearerAuth it calls keeps its challenges). It panics if a is
// nil. Handler only.
func WithAuthorizer(a Authorizer) HTTPHandlerOption {
	if p, ok := a.(*BearerAuth); ok && p != nil {
		a = *p // a copy: later changes to *p do not reach the handler
	} else if a == nil || ok {
		panic("mcp: WithAuthorizer: the Authorizer is nil")
	}
	if b, ok := a.(BearerAuth); ok {
		if b.Verifier == nil {
			panic("mcp: WithAuthorizer: BearerAuth.Verifier is nil")
		}
		return httpHandlerOption(func(c *httpConfig) { c.authorize, c.scopes = b.authenticate, &b })
	}
	return httpHandlerOption(func(c *httpConfig) {
		c.authorize = func(_ http.ResponseWriter, r *http.Request) (string, *TokenInfo, error) {
			p, err := a.Authorize(r)
			return p, nil, err
		}
		c.scopes = nil
	})
}

// WithMaxSessions caps the live legacy sessions (2025-03-26 … 2025-11-25)
// of a [NewHTTPHandler] (default 10,000; 0 means no cap, a negative n is
// ignored). At the cap an initialize evicts the idle session used least
// recently, one with no request in progress and no open stream, those
// that served nothing after their initialize first, so that a flood of
// initialize cannot lock out a client that uses its session; the evicted
// session's client gets 404 on its next request and starts a new one. With
// a [SessionStore] only this instance's copy is evicted: the record stays,
// and the session's next request loads it again. When every session is
// busy, an initialize creates nothing and gets 503 Service Unavailable with
// a JSON-RPC error and a Retry-After header; a session also frees its
// place when the client deletes it or it expires (see
// [WithSessionTimeout]). 2026-07-28 requests keep no session and are not
// counted, nor are the sessions of [NewSSEHandler], which live only as long
// as their GET stream. Handler only.
func WithMaxSessions(n int) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if n >= 0 {
			c.maxSessions = n
		}
	})
}

// WithMaxSessionsPerPrincipal caps the live legacy sessions that one
// principal, as named by the [Authorizer] of [WithAuthorizer], may hold
// (default 1,000, so that no principal takes more than a tenth of the
// default total; 0 means no cap, a negative n is ignored). Anonymous
// requests (an empty principal) count only against [WithMaxSessions]. An
// initialize beyond the cap is answered as beyond WithMaxSessions. Handler
// only.
func WithMaxSessionsPerPrincipal(n int) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if n >= 0 {
			c.maxPerUser = n
		}
	})
}

// WithWriteTimeout bounds each write to a client (default 30s; 0 leaves
// http.Server's own timeouts alone). The bound is set afresh before every
// write, so a long SSE stream that keeps moving is never cut, whatever
// http.Server.WriteTimeout says, while a client that stops reading is.
// Handler only.
func WithWriteTimeout(d time.Duration) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if d >= 0 {
			c.writeTimeout = d
		}
	})
}

// WithKeepAlive sets how long a response may stay silent before the
// handler writes an SSE comment on it, so that a proxy between it and the
// client, which gives up on a response that sends nothing for a while,
// keeps it open, and a client that went away is noticed (default
// DefaultKeepAlive; 0 disables). It applies to the standalone GET stream,
// a 2026-07-28 listen stream and every POST: a request still running
// after this long with nothing sent yet gets its answer as SSE, started
// then with a comment, rather than as the JSON that would have come at
// its end (every Streamable HTTP client accepts both). Handler only.
func WithKeepAlive(d time.Duration) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if d >= 0 {
			c.keepAlive = d
		}
	})
}

// WithSessionBacklog bounds what a legacy session holds for its standalone
// GET stream while no client reads it: the messages that belong to no
// request (list changes, resource updates, whatever the server sends
// outside a request), waiting for the GET to be written or opened again
// (default DefaultSessionBacklogBytes and DefaultSessionBacklogMessages; a
// bound of 0 or less keeps its default). When a message would pass either
// bound the oldest ones are dropped, and how many is logged once the
// backlog is delivered or the session ends; the newest message is always
// kept. A client that resumes the stream with Last-Event-ID still gets
// every event the event store kept. Handler only.
func WithSessionBacklog(maxBytes, maxMessages int) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if maxBytes > 0 {
			c.backlogBytes = maxBytes
		}
		if maxMessages > 0 {
			c.backlogMessages = maxMessages
		}
	})
}

// WithSessionBacklogBudget bounds what the backlogs of [WithSessionBacklog]
// hold together, over all the legacy sessions of a handler (default
// DefaultSessionBacklogBudget; 0 or less keeps the default): a server-wide
// message goes to every session that ever opened a GET stream, so the
// per-session bound alone grows with the sessions. Past the budget the
// oldest messages of any session are dropped first, and each session's
// count is logged as WithSessionBacklog's are. Handler only.
func WithSessionBacklogBudget(maxBytes int) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if maxBytes > 0 {
			c.backlogBudget = maxBytes
		}
	})
}

// WithContext ties the handler's lifetime to ctx: when ctx is done every
// session ends, every stream closes, so that http.Server.Shutdown can
// return, and new requests get 503. Handler only.
func WithContext(ctx context.Context) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.ctx = ctx })
}

// WithHTTPClient sets the http.Client the client transport sends with:
// give one for TLS settings, a proxy of your own, an authenticating
// RoundTripper, HTTP/2, or anything else net/http does. Its Timeout, if
// any, also cuts long SSE responses; leave it 0 and let the MCP request
// timeouts bound each call. Client only.
//
// The default is a client shared by the package's transports: a clone of
// http.DefaultTransport that keeps up to 128 idle connections per host.
func WithHTTPClient(client *http.Client) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) { c.client = client })
}

// WithHeader adds a header to every HTTP request the client transport
// sends, like an Authorization header. Client only.
func WithHeader(key, value string) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) { c.header.Add(key, value) })
}

// WithCloseTimeout bounds the DELETE that ends the session when the client
// transport closes, and how long connecting waits for the session's
// standalone GET stream to open (default 5s). Client only.
func WithCloseTimeout(d time.Duration) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) {
		if d > 0 {
			c.closeTimeout = d
		}
	})
}

// WithReconnectAttempts bounds how many times in a row the client
// transport tries to resume a lost SSE stream without receiving anything
// (default 5). The first attempt waits for the server's retry hint, or
// 250ms without one, and each failed attempt doubles the wait. Client only.
func WithReconnectAttempts(n int) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) {
		if n >= 0 {
			c.reconnects = n
		}
	})
}

// WithMaxAnswerPosts bounds how many answers the Streamable HTTP client
// transport POSTs at once (default 4): its responses to the server's requests and its error
// replies to what the server sent malformed. Up to 64 more per allowed POST
// wait their turn; a server that makes the client owe more answers than
// that ends the connection with [ErrTooManyAnswers]. The client's own
// requests and notifications are not counted. Client only.
func WithMaxAnswerPosts(n int) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) {
		if n > 0 {
			c.answerPosts = n
		}
	})
}

// NewHTTPHandler returns an http.Handler that serves s over Streamable HTTP
// on one endpoint, for every protocol revision at once. Each POST is judged
// on its own: one whose params carry the 2026-07-28 _meta (or whose
// MCP-Protocol-Version header names 2026-07-28) is served statelessly, with
// a short-lived connection of its own; any other belongs to a legacy
// session (2025-03-26 … 2025-11-25) that initialize creates, with its
// standalone GET stream, resumable SSE streams and DELETE.
//
// It is safe by default: Origin validation, a Host check against DNS
// rebinding when it serves a loopback address, a body cap, Content-Type and
// Accept checks, a write timeout that never cuts a moving stream, idle
// session expiry and caps on live sessions; an idle session holds no
// goroutine. See the HTTPOptions for each.
//
// A slow client is the http.Server's to cut off: serve the handler with
// [NewHTTPServer], whose timeouts suit it. A body over the cap is refused
// with 413 without being read when its length is announced; any other is
// read as it arrives, so that a client holds only as much memory as it has
// sent.
func NewHTTPHandler(s *Server, opts ...HTTPHandlerOption) http.Handler {
	s.serving.Store(true)
	h := &httpHandler{srv: s, cfg: handlerConfig(opts), log: s.cfg.logger, sessions: make(map[string]*httpSession)}
	h.cfg.statelessOnly = h.cfg.statelessOnly || isModernVersion(s.cfg.protocolVersion) // pinned: no sessions
	if !h.cfg.storeSet {
		h.cfg.store = NewMemoryEventStore(DefaultEventStoreBytes)
	}
	h.cluster = newClusterMember(h) // nil without a SessionStore
	if h.cfg.ctx != nil {
		context.AfterFunc(h.cfg.ctx, h.shutdown)
	}
	return h
}

// NewHTTPServer returns an http.Server that serves handler (a
// [NewHTTPHandler], alone or in a mux) on addr, with timeouts that cut off
// clients that send too slowly and never an MCP stream. Server side.
//
// ReadHeaderTimeout ends a connection whose headers trickle in (slowloris),
// ReadTimeout one whose body does, and IdleTimeout a kept-alive connection
// that carries no request; MaxHeaderBytes caps the headers. ReadTimeout does
// not cut SSE answers or GET streams: the MCP handler lifts the read
// deadline once a body is read (a GET has none). WriteTimeout stays 0, as it
// would cut every stream that outlives it; the handler bounds each write
// itself ([WithWriteTimeout]). The fields may be changed before serving.
func NewHTTPServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// NewHTTPTransport returns a client Transport for the Streamable HTTP
// endpoint at url.
func NewHTTPTransport(url string, opts ...HTTPTransportOption) *HTTPTransport {
	cfg := transportConfig(opts)
	ctx, cancel := context.WithCancel(context.Background())
	cfg.wrapOAuth(url, ctx)
	// The URL is parsed once: each POST starts from this request.
	post0, urlErr := http.NewRequest(http.MethodPost, url, nil)
	t := &HTTPTransport{
		url: url, cfg: cfg, client: cfg.client, post0: post0, urlErr: urlErr, log: slog.New(slog.DiscardHandler), maxMsg: DefaultMaxMessageSize,
		ctx: ctx, cancel: cancel, clientInbox: newClientInbox(), jobs: make(chan postJob),
		exchanges: make(map[ID]*exchange), toolHeaders: make(map[string][]paramHeader),
	}
	return t
}
