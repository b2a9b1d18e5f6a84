package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
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
	// DefaultKeepAlive is the keep-alive interval of idle SSE streams; see
	// [WithKeepAlive].
	DefaultKeepAlive = 30 * time.Second
	// DefaultEventStoreBytes bounds the events the default [EventStore]
	// keeps for resumption, across all sessions of a handler.
	DefaultEventStoreBytes = 16 << 20
	// DefaultCloseTimeout bounds the DELETE a client transport sends when
	// it closes; see [WithCloseTimeout].
	DefaultCloseTimeout = 5 * time.Second
	// DefaultReconnectAttempts bounds the attempts to resume a lost SSE
	// stream; see [WithReconnectAttempts].
	DefaultReconnectAttempts = 5
)

// streamBacklog is how many unwritten bytes a stream may hold for a client
// that reads too slowly before the handler gives up on that connection
// (the client may resume it from the event store).
const streamBacklog = 8 << 20

// standaloneBacklog bounds the messages held for a legacy session's GET
// stream while none is open; the oldest go first.
const standaloneBacklog = 1 << 20

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
	statelessOnly  bool
	store          EventStore
	storeSet       bool
	allowedOrigins []string
	allowedHosts   []string
	maxBodyBytes   int64
	authorize      func(*http.Request) error
	writeTimeout   time.Duration
	keepAlive      time.Duration
	// hostAllowed is the last Host header a loopback server found allowed
	// (a loopback name or address, or listed), which is allowed on any
	// server: a client sends the same Host with every request, which then
	// costs a comparison.
	hostAllowed atomic.Pointer[string]

	client       *http.Client
	header       http.Header
	closeTimeout time.Duration
	reconnects   int
}

func newHTTPConfig() *httpConfig {
	c := &httpConfig{
		sessionTimeout: DefaultSessionTimeout,
		maxBodyBytes:   DefaultMaxBodyBytes,
		writeTimeout:   DefaultWriteTimeout,
		keepAlive:      DefaultKeepAlive,
		closeTimeout:   DefaultCloseTimeout,
		reconnects:     DefaultReconnectAttempts,
		header:         make(http.Header),
	}
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

// WithStatelessOnly makes the handler serve protocol revision 2026-07-28
// only: it keeps no sessions, answers GET and DELETE with 405 and judges
// every POST by the 2026-07-28 rules. Handler only.
func WithStatelessOnly() HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.statelessOnly = true })
}

// WithEventStore sets where the handler keeps the SSE events of legacy
// sessions so that a client that lost a stream can resume it with
// Last-Event-ID (default: a [NewMemoryEventStore] of DefaultEventStoreBytes
// per handler). nil turns resumption off: events carry no ids and a message
// whose stream is gone is dropped. Handler only.
func WithEventStore(store EventStore) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.store, c.storeSet = store, true })
}

// WithAllowedOrigins lists the browser origins, like
// "https://app.example.com", allowed to call the handler besides its own;
// "*" allows any. A request whose Origin header names another origin gets
// 403, so that a web page cannot drive a server on the user's machine.
// Handler only.
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

// WithAuthorizer makes the handler call authorize with every request before
// reading it. A non-nil error refuses the request with 401 Unauthorized and
// a "WWW-Authenticate: Bearer" challenge; the error's text is the reason
// given. Use it to check bearer tokens. Handler only.
func WithAuthorizer(authorize func(*http.Request) error) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) { c.authorize = authorize })
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

// WithKeepAlive sets how often the handler writes an SSE comment on a
// stream that has been quiet, so that proxies keep it open and a client
// that went away is noticed (default 30s; 0 disables). Handler only.
func WithKeepAlive(d time.Duration) HTTPHandlerOption {
	return httpHandlerOption(func(c *httpConfig) {
		if d >= 0 {
			c.keepAlive = d
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
// session expiry; an idle session holds no goroutine. See the HTTPOptions
// for each.
//
// A slow client is the http.Server's to cut off; these timeouts suit the
// handler:
//
//	&http.Server{
//		Handler:           handler,
//		ReadHeaderTimeout: 10 * time.Second,  // headers that trickle in (slowloris)
//		ReadTimeout:       time.Minute,       // a whole request, body included
//		IdleTimeout:       2 * time.Minute,   // keep-alive connections between requests
//		MaxHeaderBytes:    64 << 10,
//	}
//
// ReadTimeout does not cut SSE answers: net/http lifts it once the body is
// read. Leave WriteTimeout 0: it would cut every SSE stream that outlives
// it, while the handler already bounds each write with [WithWriteTimeout].
// A body over the cap is refused with 413 without being read when its
// length is announced.
func NewHTTPHandler(s *Server, opts ...HTTPHandlerOption) http.Handler {
	h := &httpHandler{srv: s, cfg: handlerConfig(opts), log: s.cfg.logger, sessions: make(map[string]*httpSession)}
	if !h.cfg.storeSet {
		h.cfg.store = NewMemoryEventStore(DefaultEventStoreBytes)
	}
	if h.cfg.ctx != nil {
		context.AfterFunc(h.cfg.ctx, h.shutdown)
	}
	return h
}

type httpHandler struct {
	srv *Server
	cfg *httpConfig
	log *slog.Logger

	mu           sync.Mutex
	sessions     map[string]*httpSession
	sessionsPeak int // the most sessions since the map was last rebuilt
	stopped      bool

	modernInFlight atomic.Int64
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !admitRequest(h.cfg, w, r, h.isStopped()) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r)
	case http.MethodGet:
		h.serveGET(w, r)
	case http.MethodDelete:
		h.serveDELETE(w, r)
	default:
		h.methodNotAllowed(w)
	}
}

func (h *httpHandler) methodNotAllowed(w http.ResponseWriter) {
	if h.cfg.statelessOnly {
		w.Header().Set("Allow", "POST")
	} else {
		w.Header().Set("Allow", "GET, POST, DELETE")
	}
	writeHTTPError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, ID{}, "Method Not Allowed")
}

func (h *httpHandler) isStopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

// shutdown ends every session; WithContext calls it.
func (h *httpHandler) shutdown() {
	h.mu.Lock()
	h.stopped = true
	sessions := make([]*httpSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		s.conn.close(errors.New("the HTTP handler shut down"))
	}
}

// checkSource refuses requests from web pages that may not call us: a
// foreign Origin, or a non-loopback Host on a loopback listener (DNS
// rebinding).
// admitRequest applies the checks every request to an MCP endpoint passes
// first: where it comes from, whether it is authorized, and whether the
// server is shutting down. It reports false when it has answered the
// request itself.
func admitRequest(cfg *httpConfig, w http.ResponseWriter, r *http.Request, stopped bool) bool {
	if status, msg := checkSource(cfg, r); status != 0 {
		writeHTTPError(w, status, CodeInvalidRequest, ID{}, msg)
		return false
	}
	if cfg.authorize != nil {
		if err := cfg.authorize(r); err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeHTTPError(w, http.StatusUnauthorized, CodeInvalidRequest, ID{}, "Unauthorized: "+err.Error())
			return false
		}
	}
	if stopped {
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the server is shutting down")
		return false
	}
	return true
}

func checkSource(cfg *httpConfig, r *http.Request) (int, string) {
	if last := cfg.hostAllowed.Load(); last != nil && *last == r.Host {
		// Allowed by itself, on any server: the check below found it so.
	} else if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopbackAddr(addr) {
		host := hostname(r.Host)
		if !isLoopbackHost(host) && !listed(cfg.allowedHosts, host) {
			return http.StatusForbidden, "Forbidden: host " + strconv.Quote(host) + " is not allowed on a loopback server (DNS rebinding protection)"
		}
		allowed := strings.Clone(r.Host) // not the request's memory
		cfg.hostAllowed.Store(&allowed)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(cfg, origin, r.Host) {
		return http.StatusForbidden, "Forbidden: origin " + strconv.Quote(origin) + " is not allowed"
	}
	return 0, ""
}

func isLoopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostname returns the host of a Host header or URL host, without port or
// brackets.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host) // no allocation, unlike net.ParseIP
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

func listed(list []string, s string) bool {
	for _, v := range list {
		if v == "*" || strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// originAllowed accepts the server's own origin (the same host and port;
// loopback names count as one host), and the listed ones.
func originAllowed(cfg *httpConfig, origin, host string) bool {
	if listed(cfg.allowedOrigins, strings.TrimSuffix(origin, "/")) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	return isLoopbackHost(hostname(u.Host)) && isLoopbackHost(hostname(host)) && u.Port() == portOf(host)
}

func portOf(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return p
	}
	return ""
}

// writeHTTPError answers with an HTTP error status and a JSON-RPC error
// body, which carries id when the request's id is known.
func writeHTTPError(w http.ResponseWriter, status, code int, id ID, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(encodeErrorOrAnonymous(id, &Error{Code: code, Message: message}))
}

// encodeErrorOrAnonymous writes an error response; without a known id it
// leaves the id out, as 2026-07-28 asks, rather than writing null.
func encodeErrorOrAnonymous(id ID, e *Error) []byte {
	if id.IsValid() {
		return encodeError(id, e)
	}
	body, _ := json.Marshal(e)
	return append(append([]byte(`{"jsonrpc":"2.0","error":`), body...), '}')
}

// acceptsBoth reports whether an Accept header lists both JSON and SSE, as
// Streamable HTTP asks of every POST; wildcards count.
func acceptsBoth(r *http.Request) bool {
	if v := r.Header["Accept"]; len(v) == 1 && (v[0] == "application/json, text/event-stream" || v[0] == "text/event-stream, application/json") {
		return true // what clients send, ours included
	}
	return accepts(r, "application/json", "application/*") && accepts(r, "text/event-stream", "text/*")
}

// accepts reports whether r's Accept header lists mediaType, its
// wildcard (major/*) or */*.
func accepts(r *http.Request, mediaType, wildcard string) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			t, _, _ := strings.Cut(part, ";")
			t = strings.TrimSpace(t)
			if strings.EqualFold(t, mediaType) || t == "*/*" || strings.EqualFold(t, wildcard) {
				return true
			}
		}
	}
	return false
}

func mediaTypeOf(contentType string) string {
	// The common values, without a parse.
	switch contentType {
	case "application/json", "text/event-stream":
		return contentType
	}
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return t
}

// readBody reads a POST body under the size cap; it answers the request
// itself and returns nil when the body is refused.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) []byte {
	if mediaTypeOf(r.Header.Get("Content-Type")) != "application/json" {
		writeHTTPError(w, http.StatusUnsupportedMediaType, CodeInvalidRequest, ID{}, "Unsupported Media Type: the body must be application/json")
		return nil
	}
	if !acceptsBoth(r) {
		writeHTTPError(w, http.StatusNotAcceptable, CodeInvalidRequest, ID{}, "Not Acceptable: the client must accept both application/json and text/event-stream")
		return nil
	}
	if r.ContentLength > h.cfg.maxBodyBytes {
		// Refused before reading: a client that announces too much need
		// not be waited for.
		writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, ID{}, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes", h.cfg.maxBodyBytes))
		return nil
	}
	from := r.Body
	if r.ContentLength < 0 {
		// A body of announced length is cut off there by net/http.
		from = http.MaxBytesReader(w, r.Body, h.cfg.maxBodyBytes)
	}
	body, err := readLimited(from, r.ContentLength, h.cfg.maxBodyBytes)
	if err != nil {
		// Reading may have taken long (a slow client, cut off by
		// http.Server.ReadTimeout): the answer gets a write bound of its
		// own, like every write of the handler.
		if h.cfg.writeTimeout > 0 {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.cfg.writeTimeout))
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, ID{}, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes", h.cfg.maxBodyBytes))
			return nil
		}
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: cannot read the body: "+err.Error())
		return nil
	}
	// Read to its end: closed, net/http does not look for more of it with
	// a discarding copy of its own before the answer (an allocation and a
	// read a request).
	r.Body.Close()
	return body
}

func (h *httpHandler) servePOST(w http.ResponseWriter, r *http.Request) {
	body := h.readBody(w, r)
	if body == nil {
		return
	}
	if !utf8.Valid(body) {
		writeHTTPError(w, http.StatusBadRequest, CodeParseError, ID{}, "Parse error: the body is not valid UTF-8")
		return
	}
	msgs, batch, ok, one := readPOSTBody(body)
	defer one.release()
	if !ok {
		writeHTTPError(w, http.StatusBadRequest, CodeParseError, ID{}, "Parse error: the body is not valid JSON: "+jsonSyntaxError(body))
		return
	}
	if batch && len(msgs) == 0 {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Invalid Request: empty batch")
		return
	}
	if h.isModern(r, msgs, batch) {
		h.serveModernPOST(w, r, body, msgs, batch, one)
		return
	}
	h.serveLegacyPOST(w, r, body, msgs, batch, one)
}

// isModern judges a POST's era: 2026-07-28 when the body carries its _meta
// or the header names it (or names no revision we know, so that the answer
// is -32022 rather than a legacy 400), and for server/discover.
func (h *httpHandler) isModern(r *http.Request, msgs []*httpMessage, batch bool) bool {
	if h.cfg.statelessOnly {
		return true
	}
	if batch {
		return false
	}
	m := msgs[0]
	if m.hasVersion || m.method == "server/discover" {
		return true
	}
	v := r.Header.Get(headerProtocolVersion)
	if isModernVersion(v) {
		return true
	}
	return v != "" && !isSupportedVersion(v) && r.Header.Get(headerSessionID) == ""
}

// serveModernPOST serves one 2026-07-28 POST: its own connection, its own
// session state, cancelled when the client closes the stream.
func (h *httpHandler) serveModernPOST(w http.ResponseWriter, r *http.Request, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage) {
	if batch {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Invalid Request: protocol revision 2026-07-28 has no batches")
		return
	}
	m := msgs[0]
	switch m.kind {
	case kindNotification:
		// The core defines no client notification over HTTP; there is no
		// state for one to change.
		w.WriteHeader(http.StatusAccepted)
		return
	case kindResponse:
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Invalid Request: clients send no responses on protocol revision 2026-07-28")
		return
	case kindInvalid:
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, m.id, "Invalid Request: "+m.invalid)
		return
	}
	if m.method == "initialize" && !m.hasVersion {
		// Only WithStatelessOnly routes a legacy handshake here: name the
		// revisions served, so that the client knows what to speak.
		var p initializeParams
		json.Unmarshal(m.params, &p)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(encodeError(m.id, NewError(CodeUnsupportedProtocolVersion, "Unsupported protocol version: this server speaks only the stateless revisions",
			map[string]any{"supported": h.srv.modernVersions(), "requested": p.ProtocolVersion})))
		return
	}
	if status, e := h.checkModernHeaders(r, m); e != nil {
		writeHTTPError(w, status, e.Code, m.id, e.Message)
		return
	}
	if limit := int64(h.srv.cfg.maxInFlight); limit > 0 {
		if h.modernInFlight.Add(1) > limit {
			h.modernInFlight.Add(-1)
			w.Header().Set("Retry-After", "1")
			writeHTTPError(w, http.StatusServiceUnavailable, CodeOverloaded, m.id, "overloaded")
			return
		}
		defer h.modernInFlight.Add(-1)
	}
	st := newHTTPStream(nil, "", []ID{m.id}, h.log)
	_, c := h.srv.newSession(&postTransport{stream: st})
	c.oneRequest = true // the POST's one message (no batches on 2026-07-28)
	c.start(r.Context())
	if h.cfg.ctx != nil {
		// At shutdown the handler is asked to finish, not cancelled: its
		// answer (a listen's closing result) still goes out.
		stop := context.AfterFunc(h.cfg.ctx, func() { c.cancelBase(errShuttingDown) })
		defer stop()
	}
	// On 2026-07-28 closing the stream is the cancellation. (gone may run
	// after this returns, when m is back in its pool: it keeps the id.)
	id := m.id
	gone := func() {
		c.mu.Lock()
		c.cancelInboundLocked(id, "the client closed the HTTP stream")
		c.mu.Unlock()
	}
	complete := h.deliverAndServe(w, r, c, body, msgs, false, one, st, streamMode{sse: m.method == "subscriptions/listen", modern: true}, gone)
	if !complete {
		gone()
	}
	c.close(errHTTPExchangeDone)
}

// deliverAndServe hands a POST's body to the engine and writes the stream
// of its answers; it reports whether every answer was written (see
// serveStream). A single request runs on this goroutine, which would
// otherwise only wait for it, and its answer is then written here; unless
// something must go out before the answer (progress, a log, an ask), which
// starts a writer goroutine that this one waits for. gone, if set, runs
// when the client goes away while the request runs.
//
// one is the POST's pooled storage, which holds the inline writer; nil for
// a batch.
func (h *httpHandler) deliverAndServe(w http.ResponseWriter, r *http.Request, c *conn, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage, st *httpStream, mode streamMode, gone func()) bool {
	gen := st.writer()
	m := msgs[0]
	if batch || one == nil || mode.sse || !m.decoded || m.kind != kindRequest {
		deliverPOST(c, body, msgs, batch, st)
		st.frameDone()
		return h.serveStream(w, r, st, gen, mode)
	}
	iw := &one.iw // pooled with the POST's message: no allocation
	*iw = inlineWriter{h: h, w: w, r: r, gen: gen, modern: mode.modern, prime: mode.prime}
	st.beginInline(iw)
	if gone != nil {
		stop := context.AfterFunc(r.Context(), gone)
		defer stop()
	}
	c.handleMessage(&m.wire, st)
	started := st.endInline()
	st.frameDone()
	if started {
		<-iw.done
		return iw.complete
	}
	return h.serveStream(w, r, st, gen, mode)
}

// inlineWriter is the writer a stream starts on its own goroutine when a
// message must go out while the request runs on the HTTP goroutine.
type inlineWriter struct {
	// serveStream's arguments: the stream's, and of its mode what a
	// single request's stream may have (not SSE from the start, no batch)
	h             *httpHandler
	w             http.ResponseWriter
	r             *http.Request
	gen           int64
	done          chan struct{}
	modern, prime bool
	complete      bool // serveStream's result, once done is closed
}

// start runs the writer of s on a goroutine of its own.
func (iw *inlineWriter) start(s *httpStream) {
	iw.done = make(chan struct{})
	go func() {
		defer close(iw.done)
		iw.complete = iw.h.serveStream(iw.w, iw.r, s, iw.gen, streamMode{modern: iw.modern, prime: iw.prime})
	}()
}

// deliverPOST hands a POST body to the engine: a single message as the
// envelope already decoded, anything else (a batch, a message the engine
// must answer with an error) as the body.
func deliverPOST(c *conn, body []byte, msgs []*httpMessage, batch bool, route any) {
	if !batch && msgs[0].decoded {
		c.handleMessage(&msgs[0].wire, route)
		return
	}
	c.handleFrame(body, route)
}

var (
	errHTTPExchangeDone = errors.New("the HTTP exchange ended")
	errShuttingDown     = errors.New("the HTTP handler is shutting down")
)

// modernVersions lists the stateless revisions s serves.
func (s *Server) modernVersions() []string {
	var vs []string
	for _, v := range s.supportedVersions() {
		if isModernVersion(v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// modernStatus maps the JSON-RPC error of a 2026-07-28 JSON response to its
// HTTP status.
func modernStatus(code int) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeHeaderMismatch, CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion, CodeParseError, CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// postTransport is the transport of one 2026-07-28 POST: every message the
// connection writes goes on that POST's stream.
type postTransport struct{ stream *httpStream }

func (t *postTransport) ReadMessage() ([]byte, error) { return nil, io.EOF }
func (t *postTransport) WriteMessage(msg []byte) error {
	return t.writeRouted(outgoing{data: bytes.Clone(msg)}) // msg stays the caller's
}
func (t *postTransport) Close() error    { t.stream.close(); return nil }
func (t *postTransport) pushesMessages() {}
func (t *postTransport) writeRouted(o outgoing) error {
	t.stream.push(o)
	return nil
}

// serveLegacyPOST serves a POST of a legacy session: initialize creates the
// session; notifications and responses are accepted with 202; requests are
// answered on this POST's response, JSON or SSE.
func (h *httpHandler) serveLegacyPOST(w http.ResponseWriter, r *http.Request, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage) {
	sid := r.Header.Get(headerSessionID)
	var sess *httpSession
	created := false
	if sid == "" {
		if batch || msgs[0].kind != kindRequest || msgs[0].method != "initialize" {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the Mcp-Session-Id header is required; start a session with initialize")
			return
		}
		if sess = h.newSession(); sess == nil {
			writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the server is shutting down")
			return
		}
		created = true
	} else if sess = h.session(sid); sess == nil {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: unknown or expired session; start a new one with initialize")
		return
	}
	if !sess.begin() {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
		return
	}
	defer sess.end()
	if v := r.Header.Get(headerProtocolVersion); v != "" && !created && (!isSupportedVersion(v) || isModernVersion(v)) {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: unsupported MCP-Protocol-Version "+strconv.Quote(v))
		return
	}
	if batch && !sess.conn.batchOK.Load() {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Invalid Request: JSON-RPC batches are accepted only on protocol revision 2025-03-26")
		return
	}
	if m := msgs[0]; !batch && m.kind == kindInvalid {
		// Input the server cannot accept is refused with an HTTP error
		// (in a batch, each item is answered on its own).
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, m.id, "Invalid Request: "+m.invalid)
		return
	}
	var ids []ID
	answered := false
	for _, m := range msgs {
		switch m.kind {
		case kindRequest:
			answered = true
			if m.id.IsValid() {
				ids = append(ids, m.id)
			}
		case kindNotification:
			if m.method == "notifications/cancelled" {
				sess.noteCancel(m.params)
			}
		case kindResponse:
		default:
			answered = true
		}
	}
	if !answered {
		deliverPOST(sess.conn, body, msgs, batch, nil)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := sess.newStream(ids)
	if st == nil {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
		return
	}
	if created {
		w.Header().Set(headerSessionID, sess.id)
	}
	complete := h.deliverAndServe(w, r, sess.conn, body, msgs, batch, one, st, streamMode{batch: batch, prime: sess.primes()}, nil)
	if created && (!complete || st.failed()) {
		sess.conn.close(errors.New("initialize failed"))
	}
}

func (h *httpHandler) serveGET(w http.ResponseWriter, r *http.Request) {
	if h.cfg.statelessOnly || isModernVersion(r.Header.Get(headerProtocolVersion)) {
		h.methodNotAllowed(w)
		return
	}
	if !accepts(r, "text/event-stream", "text/*") {
		writeHTTPError(w, http.StatusNotAcceptable, CodeInvalidRequest, ID{}, "Not Acceptable: a GET must accept text/event-stream")
		return
	}
	sess, ok := h.requestSession(w, r)
	if !ok {
		return
	}
	defer sess.end()
	if last := r.Header.Get(headerLastEventID); last != "" && h.cfg.store != nil {
		streamID, index, ok := parseEventID(last)
		var st *httpStream
		if ok {
			st = sess.stream(streamID)
		}
		if st == nil {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: Last-Event-ID "+strconv.Quote(last)+" names no stream of this session")
			return
		}
		replay, gen, ok := st.resume(index)
		if !ok {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the events after "+strconv.Quote(last)+" are no longer available")
			return
		}
		h.serveStream(w, r, st, gen, streamMode{sse: true, replay: replay})
		return
	}
	if h.cfg.noStandalone {
		h.methodNotAllowed(w)
		return
	}
	st := sess.standaloneStream()
	if st == nil {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
		return
	}
	gen, ok := st.attachFresh()
	if !ok {
		writeHTTPError(w, http.StatusConflict, CodeInvalidRequest, ID{}, "Conflict: the session's GET stream is already open")
		return
	}
	h.serveStream(w, r, st, gen, streamMode{sse: true, prime: sess.primes()})
}

func (h *httpHandler) serveDELETE(w http.ResponseWriter, r *http.Request) {
	if h.cfg.statelessOnly || isModernVersion(r.Header.Get(headerProtocolVersion)) {
		h.methodNotAllowed(w)
		return
	}
	sess, ok := h.requestSession(w, r)
	if !ok {
		return
	}
	sess.end()
	sess.conn.close(errors.New("the client ended the session"))
	w.WriteHeader(http.StatusNoContent)
}

// requestSession finds the session a GET or DELETE names and marks it busy;
// it answers the request itself when there is none.
func (h *httpHandler) requestSession(w http.ResponseWriter, r *http.Request) (*httpSession, bool) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the Mcp-Session-Id header is required")
		return nil, false
	}
	sess := h.session(sid)
	if sess == nil || !sess.begin() {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: unknown or expired session; start a new one with initialize")
		return nil, false
	}
	return sess, true
}

func (h *httpHandler) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// newSession creates and registers a legacy session: a connection in push
// mode, so that it holds no goroutine while idle, and an expiry timer.
func (h *httpHandler) newSession() *httpSession {
	s := &httpSession{h: h, id: rand.Text()}
	s.ss, s.conn = h.srv.newSession(s)
	s.conn.start(context.Background())
	if d := h.cfg.sessionTimeout; d > 0 {
		s.expiry = time.AfterFunc(d, s.expire)
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		s.conn.close(errors.New("the HTTP handler shut down"))
		return nil
	}
	h.sessions[s.id] = s
	h.sessionsPeak = max(h.sessionsPeak, len(h.sessions))
	h.mu.Unlock()
	h.srv.addSession(s.ss)
	return s
}

func (h *httpHandler) forget(s *httpSession) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
		// A Go map keeps its peak size: after a burst of sessions has
		// ended, copy the few left into a map of their size.
		if n := len(h.sessions); h.sessionsPeak > 1024 && n < h.sessionsPeak/4 {
			h.sessions = maps.Clone(h.sessions)
			h.sessionsPeak = n
		}
	}
	h.mu.Unlock()
	h.srv.removeSession(s.ss)
}

// httpSession is a legacy session: one connection in push mode whose
// messages are routed onto the streams of its HTTP requests. It is the
// connection's transport.
type httpSession struct {
	h    *httpHandler
	id   string
	ss   *serverSession
	conn *conn

	mu         sync.Mutex
	streams    map[string]*httpStream // POST streams that may still be resumed
	delivered  []string               // ids of retained delivered streams, oldest first
	standalone *httpStream
	nextStream int64
	active     int // HTTP requests in progress
	lastActive time.Time
	expiry     *time.Timer
	closed     bool
}

func (s *httpSession) ReadMessage() ([]byte, error) { return nil, io.EOF }
func (s *httpSession) WriteMessage(msg []byte) error {
	return s.writeRouted(outgoing{data: bytes.Clone(msg)}) // msg stays the caller's
}
func (s *httpSession) pushesMessages() {}

// Close ends the session; the connection calls it when it closes.
func (s *httpSession) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	streams := make([]*httpStream, 0, len(s.streams)+1)
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	if s.standalone != nil {
		streams = append(streams, s.standalone)
	}
	s.streams = nil
	if s.expiry != nil {
		s.expiry.Stop()
	}
	s.mu.Unlock()
	s.h.forget(s)
	for _, st := range streams {
		st.close()
	}
	if store := s.h.cfg.store; store != nil {
		store.SessionClosed(s.id)
	}
	return nil
}

// writeRouted puts a message on the stream of the request it belongs to,
// or, if none, on the standalone GET stream. It never blocks.
func (s *httpSession) writeRouted(o outgoing) error {
	st, _ := o.route.(*httpStream)
	if st == nil {
		if st = s.standaloneStream(); st == nil {
			s.h.log.Debug("dropping a message that belongs to no request: the session has no standalone stream", "session", s.id)
			return nil
		}
	}
	st.push(o)
	return nil
}

// begin marks the session busy with one more HTTP request; it reports false
// when the session has ended.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active++
	return true
}

// end marks one HTTP request of the session done and restarts the idle
// clock when it was the last.
func (s *httpSession) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.lastActive = time.Now()
	if s.active == 0 && s.expiry != nil && !s.closed {
		s.expiry.Reset(s.h.cfg.sessionTimeout)
	}
}

// expire runs when the idle timer fires: a session that is still idle ends.
func (s *httpSession) expire() {
	s.mu.Lock()
	if s.closed || s.active > 0 {
		s.mu.Unlock()
		return
	}
	if idle := time.Since(s.lastActive); !s.lastActive.IsZero() && idle < s.h.cfg.sessionTimeout {
		s.expiry.Reset(s.h.cfg.sessionTimeout - idle)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.h.log.Debug("ending an idle HTTP session", "session", s.id)
	s.conn.close(errors.New("the session expired"))
}

// primes reports whether the session's SSE streams start with a priming
// event (2025-11-25, SEP-1699), which only helps when events are stored.
func (s *httpSession) primes() bool {
	if s.h.cfg.store == nil {
		return false
	}
	s.ss.mu.Lock()
	defer s.ss.mu.Unlock()
	return s.ss.version >= Version20251125
}

// newStream creates the stream of a POST that awaits the responses to ids.
func (s *httpSession) newStream(ids []ID) *httpStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if len(s.streams) >= maxRetainedStreams {
		s.retireStreamsLocked()
	}
	s.nextStream++
	st := newHTTPStream(s, strconv.FormatInt(s.nextStream, 10), ids, s.h.log)
	if s.streams == nil {
		s.streams = make(map[string]*httpStream)
	}
	s.streams[st.id] = st
	return st
}

// maxRetainedStreams bounds the POST streams a session keeps; past it,
// finished streams nobody resumed are forgotten first.
const maxRetainedStreams = 64

func (s *httpSession) retireStreamsLocked() {
	for id, st := range s.streams {
		if st.abandoned() {
			delete(s.streams, id)
			s.delivered = slices.DeleteFunc(s.delivered, func(d string) bool { return d == id })
			if store := s.h.cfg.store; store != nil {
				store.StreamDone(s.id, id)
			}
		}
	}
}

// retainedStreams is how many delivered SSE streams a session keeps
// resumable, in case the last events were lost with their connection.
const retainedStreams = 4

// retainStream keeps a delivered SSE stream resumable until newer ones push
// it out.
func (s *httpSession) retainStream(st *httpStream) {
	s.mu.Lock()
	if s.closed || s.streams[st.id] != st || slices.Contains(s.delivered, st.id) {
		s.mu.Unlock()
		return
	}
	s.delivered = append(s.delivered, st.id)
	var old string
	if len(s.delivered) > retainedStreams {
		old = s.delivered[0]
		s.delivered = slices.Delete(s.delivered, 0, 1)
		delete(s.streams, old)
	}
	s.mu.Unlock()
	if store := s.h.cfg.store; store != nil && old != "" {
		store.StreamDone(s.id, old)
	}
}

// removeStream forgets a stream whose every event reached the client;
// stored says whether the event store holds any of them.
func (s *httpSession) removeStream(st *httpStream, stored bool) {
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
	if store := s.h.cfg.store; store != nil && stored {
		store.StreamDone(s.id, st.id)
	}
}

// standaloneStreamID is the stream id of the session's GET stream.
const standaloneStreamID = "0"

// standaloneStream returns the session's GET stream, creating it on first
// use; nil when the session ended or has none.
func (s *httpSession) standaloneStream() *httpStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.h.cfg.noStandalone {
		return nil
	}
	if s.standalone == nil {
		s.standalone = newHTTPStream(s, standaloneStreamID, nil, s.h.log)
		s.standalone.standalone = true
		s.standalone.attached = false
		s.standalone.sse = true
	}
	return s.standalone
}

func (s *httpSession) stream(id string) *httpStream {
	if id == standaloneStreamID {
		return s.standaloneStream()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// noteCancel ends the POST stream of a request the client cancelled: the
// engine answers a cancelled request with nothing, so its stream would
// otherwise wait forever. A user handler of notifications/cancelled decides
// for itself, so then the stream waits for the response.
func (s *httpSession) noteCancel(params json.RawMessage) {
	if s.h.srv.cfg.notifications["notifications/cancelled"] != nil {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, ok := parseID(p.RequestID)
	if !ok {
		return
	}
	s.mu.Lock()
	streams := make([]*httpStream, 0, len(s.streams))
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	for _, st := range streams {
		if st.settle(id) {
			return
		}
	}
}

// streamEvent is one message of a stream, numbered for SSE event ids.
type streamEvent struct {
	index int64
	data  []byte
	final bool
	// pooled: data is the engine's pooled buffer, which goes back to the
	// pool once written (as a JSON answer); events that are stored or may
	// wait long get a compact copy instead (compact).
	pooled bool
}

// compact gives ev a buffer of its own, fit to its length, to keep.
func (ev *streamEvent) compact() {
	if ev.pooled {
		ev.data, ev.pooled = ownable(ev.data), false
	}
}

// httpStream is one response stream: a POST's (JSON or SSE), or a legacy
// session's standalone GET stream. The engine pushes messages into it from
// any goroutine without blocking; one HTTP handler goroutine at a time, the
// attached writer, writes them out.
type httpStream struct {
	sess *httpSession // nil for a 2026-07-28 POST
	id   string
	log  *slog.Logger

	mu sync.Mutex
	// inline is set while the stream's request runs on the goroutine that
	// will write the stream: the first message to go out before the answer
	// starts a writer (inlineStarted).
	inline        *inlineWriter // (its storage is the POST's, pooled)
	pending       []streamEvent // pushed, not yet taken by the writer
	pendBytes     int
	wake          chan struct{} // the attached writer's signal
	gen           int64         // the attached writer's generation
	awaiting      []ID          // requests whose responses are still to come
	retry         time.Duration
	next          int64 // the last index assigned
	written       int64 // the last index written to a client
	standalone    bool
	attached      bool
	dispatched    bool // every request of the POST was dispatched
	finished      bool // every response was pushed
	closed        bool // the session or exchange ended
	closeReq      bool // the handler asked to end the SSE stream early
	sse           bool // the stream is (or was) written as SSE: its events are stored
	hasErr        bool // a response was an error (a failed initialize)
	inlineStarted bool
}

func newHTTPStream(sess *httpSession, id string, awaiting []ID, log *slog.Logger) *httpStream {
	// wake is made when the first writer must wait (take): a request
	// answered before its stream is written never needs one.
	return &httpStream{sess: sess, id: id, awaiting: awaiting, log: log, gen: 1, attached: true}
}

// writer returns the generation of the stream's current writer.
func (s *httpStream) writer() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func (s *httpStream) store() EventStore {
	if s.sess == nil {
		return nil
	}
	return s.sess.h.cfg.store
}

func (s *httpStream) signalLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push adds a message to the stream; the engine calls it from any goroutine
// and it never blocks.
func (s *httpStream) push(o outgoing) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (s.finished && !s.standalone) {
		s.log.Debug("dropping a message for a stream that has ended", "stream", s.id)
		return
	}
	if len(o.data) == 0 {
		// The engine's word that a cancelled request will not be answered:
		// the stream stops waiting for it, and nothing is sent.
		if o.final {
			s.settleLocked(o.related)
			s.signalLocked()
		}
		return
	}
	s.next++
	ev := streamEvent{index: s.next, data: o.data, final: o.final, pooled: true}
	if s.sse || s.standalone {
		ev.compact() // it will be stored, or may wait long
	}
	// Only an SSE stream can be resumed: events of a stream that may still
	// be answered with JSON are stored when, and if, it turns to SSE.
	store := s.store()
	if store != nil && s.sse {
		store.Append(s.sess.id, s.id, ev.index, ev.data)
	}
	if o.final {
		if _, isErr := errorCodeOf(ev.data); isErr { // not o.data: compact may have recycled it
			s.hasErr = true
		}
		s.settleLocked(o.related)
	}
	switch {
	case s.attached && s.pendBytes+len(ev.data) > streamBacklog && !s.standalone:
		// The client reads too slowly: let the connection go rather than
		// hold an unbounded backlog. It may resume from the store.
		s.log.Warn("an HTTP client reads too slowly; dropping its stream", "stream", s.id, "backlog", s.pendBytes)
		s.detachLocked()
	case s.attached || s.standalone:
		for s.standalone && len(s.pending) > 0 && s.pendBytes+len(ev.data) > standaloneBacklog {
			s.log.Warn("dropping an undelivered message of the standalone stream", "session", s.sess.id)
			s.pendBytes -= len(s.pending[0].data)
			s.pending = s.pending[1:]
		}
		s.pending = append(s.pending, ev)
		s.pendBytes += len(ev.data)
	case store == nil || !s.sse:
		s.log.Debug("dropping a message whose client stream is gone and cannot be resumed", "stream", s.id)
	}
	if !o.final {
		s.startWriterLocked()
	}
	s.signalLocked()
}

// beginInline records that the stream's request is about to run on the
// goroutine that would write the stream; iw starts a writer should one be
// needed meanwhile.
func (s *httpStream) beginInline(iw *inlineWriter) {
	s.mu.Lock()
	s.inline, s.inlineStarted = iw, false
	s.mu.Unlock()
}

// runsInline tells the engine to run the stream's request on the goroutine
// that delivers it.
func (s *httpStream) runsInline() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inline != nil
}

// endInline records that the request ran; it reports whether a writer
// goroutine was started meanwhile.
func (s *httpStream) endInline() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := s.inlineStarted
	s.inline, s.inlineStarted = nil, false
	return started
}

// startWriterLocked starts the writer of a stream whose request runs
// inline, once: something must go out before the answer.
func (s *httpStream) startWriterLocked() {
	if s.inline != nil && !s.inlineStarted {
		s.inlineStarted = true
		s.inline.start(s)
	}
}

// startSSE records that the stream's writer answers with SSE: from now on
// its events are stored for resumption, starting with those the writer
// took (held, in order) and those still pending, which come after them.
func (s *httpStream) startSSE(held []streamEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sse {
		return
	}
	s.sse = true
	for i := range held {
		held[i].compact()
	}
	for i := range s.pending {
		s.pending[i].compact()
	}
	store := s.store()
	if store == nil {
		return
	}
	for _, ev := range held {
		store.Append(s.sess.id, s.id, ev.index, ev.data)
	}
	for _, ev := range s.pending {
		store.Append(s.sess.id, s.id, ev.index, ev.data)
	}
}

// settle counts the response to id as sent (or, for a cancelled request,
// as never coming); it reports whether the stream awaited it.
func (s *httpStream) settle(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.settleLocked(id)
	if ok {
		s.signalLocked()
	}
	return ok
}

func (s *httpStream) settleLocked(id ID) bool {
	i := slices.Index(s.awaiting, id)
	if i < 0 {
		return false
	}
	s.awaiting = slices.Delete(s.awaiting, i, i+1)
	if s.dispatched && len(s.awaiting) == 0 {
		s.finished = true
	}
	return true
}

// frameDone records that the POST body was handed to the engine: the
// responses it will produce are those still awaited.
func (s *httpStream) frameDone() {
	s.mu.Lock()
	s.dispatched = true
	if len(s.awaiting) == 0 {
		s.finished = true
	}
	s.signalLocked()
	s.mu.Unlock()
}

func (s *httpStream) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasErr
}

func (s *httpStream) close() {
	s.mu.Lock()
	s.closed = true
	s.signalLocked()
	s.mu.Unlock()
}

// requestClose asks the writer to end the SSE stream now, with a retry
// hint; the client resumes it from the event store.
func (s *httpStream) requestClose(retry time.Duration) {
	s.mu.Lock()
	s.closeReq, s.retry = true, retry
	s.startWriterLocked()
	s.signalLocked()
	s.mu.Unlock()
}

// abandoned reports whether the stream is finished with no writer: only a
// resumption could still want it.
func (s *httpStream) abandoned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished && !s.attached
}

// streamState is what the writer learns from the stream at each turn.
type streamState struct {
	superseded bool // another writer took the stream over
	finished   bool
	closed     bool
	closeReq   bool
	retry      time.Duration
	wake       chan struct{} // the writer's signal, while it may wait
}

// take hands the writer of generation gen everything pushed since its last
// turn.
func (s *httpStream) take(gen int64) ([]streamEvent, streamState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || !s.attached {
		return nil, streamState{superseded: true}
	}
	evs := s.pending
	s.pending, s.pendBytes = nil, 0
	st := streamState{finished: s.finished && !s.standalone, closed: s.closed, closeReq: s.closeReq, retry: s.retry}
	s.closeReq = false
	if !st.finished && !st.closed {
		// The writer may wait for what comes next: made under the lock
		// that pushes take, so that no signal is lost.
		if s.wake == nil {
			s.wake = make(chan struct{}, 1)
		}
		st.wake = s.wake
	}
	return evs, st
}

func (s *httpStream) markWritten(gen, index int64) {
	s.mu.Lock()
	if s.gen == gen && index > s.written {
		s.written = index
	}
	s.mu.Unlock()
}

func (s *httpStream) writtenIndex() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// detach lets the writer of generation gen go: its client is gone or too
// slow. What it had not written stays in the event store, if any.
func (s *httpStream) detach(gen int64) {
	s.mu.Lock()
	if s.gen == gen {
		s.detachLocked()
	}
	s.mu.Unlock()
}

func (s *httpStream) detachLocked() {
	s.attached = false
	if !s.standalone {
		s.pending, s.pendBytes = nil, 0
	}
	s.signalLocked()
}

// attachLocked makes a new writer the stream's; the previous one, if any,
// notices that it was superseded (signalled on its own channel) and
// returns; the new one gets a channel of its own when it first waits.
func (s *httpStream) attachLocked() int64 {
	s.signalLocked()
	s.gen++
	s.wake = nil
	s.attached = true
	return s.gen
}

// attachFresh attaches a new GET to the standalone stream unless one is
// attached already.
func (s *httpStream) attachFresh() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached || s.closed {
		return 0, false
	}
	return s.attachLocked(), true
}

// resume attaches a resuming GET to the stream and returns the events after
// index to replay first; ok is false when the store no longer has them all.
func (s *httpStream) resume(index int64) ([]streamEvent, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	store := s.store()
	if s.closed || store == nil || index > s.next {
		return nil, 0, false
	}
	data, ok := store.After(s.sess.id, s.id, index)
	if !ok || int64(len(data)) != s.next-index {
		return nil, 0, false
	}
	replay := make([]streamEvent, len(data))
	for i, d := range data {
		replay[i] = streamEvent{index: index + 1 + int64(i), data: d}
	}
	s.pending, s.pendBytes = nil, 0 // all of it is in the replay
	return replay, s.attachLocked(), true
}

// complete is called by a writer that wrote the stream's last response.
// A written response may still be lost with a connection whose end the
// server has not noticed yet, so a resumable (SSE) stream stays resumable
// for a while; a JSON answer cannot be resumed and goes at once.
func (s *httpStream) complete(gen int64, resumable bool) {
	s.mu.Lock()
	mine := s.gen == gen
	if mine {
		s.attached = false
	}
	stored := s.sse
	s.mu.Unlock()
	if !mine || s.sess == nil {
		return
	}
	if resumable {
		s.sess.retainStream(s)
	} else {
		s.sess.removeStream(s, stored)
	}
}

// streamMode says how a writer serves a stream.
type streamMode struct {
	sse    bool          // SSE from the start: GET, subscriptions/listen, resumption
	batch  bool          // a JSON answer is an array
	modern bool          // a JSON error answer gets its 2026-07-28 HTTP status
	prime  bool          // start SSE with a priming event (2025-11-25)
	event  string        // the SSE event name, for the 2024-11-05 transport
	intro  []byte        // written right after the headers: the 2024-11-05 endpoint event
	replay []streamEvent // events to write first, when resuming
}

// serveStream writes stream s to w as its writer of generation gen, until
// every response was written (it reports true), or the client went away,
// was too slow, or another writer took over (false). It answers with JSON
// when the responses come before anything else, and with SSE otherwise.
func (h *httpHandler) serveStream(w http.ResponseWriter, r *http.Request, s *httpStream, gen int64, m streamMode) bool {
	out := &sseWriter{w: w, rc: *http.NewResponseController(w), timeout: h.cfg.writeTimeout, event: m.event, ids: s.store() != nil, streamID: s.id}
	var held []streamEvent
	var keepAlive *time.Timer
	var keepAliveC <-chan time.Time
	defer func() {
		if keepAlive != nil {
			keepAlive.Stop()
		}
	}()
	started := false
	start := func(taken []streamEvent) error {
		started = true
		s.startSSE(taken)
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if h.cfg.keepAlive > 0 {
			keepAlive = time.NewTimer(h.cfg.keepAlive)
			keepAliveC = keepAlive.C
		}
		if len(m.intro) > 0 {
			return out.write(m.intro)
		}
		if m.prime && out.ids {
			return out.prime(s.writtenIndex())
		}
		return out.flush()
	}
	fail := func(err error) bool {
		h.log.Debug("lost an HTTP client while writing its stream", "stream", s.id, "err", err)
		s.detach(gen)
		return false
	}
	if m.sse {
		if err := start(nil); err != nil {
			return fail(err)
		}
		if len(m.replay) > 0 {
			if err := out.events(m.replay); err != nil {
				return fail(err)
			}
			s.markWritten(gen, m.replay[len(m.replay)-1].index)
		}
	}
	for {
		evs, st := s.take(gen)
		if st.superseded {
			return false
		}
		wake := st.wake // set whenever the writer may wait
		if !started && !st.closeReq && !slices.ContainsFunc(evs, func(e streamEvent) bool { return !e.final }) {
			if held == nil {
				held = evs // take hands the slice over
			} else {
				held = append(held, evs...)
			}
			evs = nil
			switch {
			case st.finished:
				h.writeJSON(w, out, s, held, m)
				s.complete(gen, false)
				return true
			case st.closed:
				writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
				return false
			}
		} else {
			if !started {
				evs = append(held, evs...)
				held = nil
				if err := start(evs); err != nil {
					return fail(err)
				}
			}
			if len(evs) > 0 {
				if err := out.events(evs); err != nil {
					return fail(err)
				}
				s.markWritten(gen, evs[len(evs)-1].index)
				if keepAlive != nil {
					keepAlive.Reset(h.cfg.keepAlive)
				}
			}
			switch {
			case st.finished:
				s.complete(gen, out.ids)
				return true
			case st.closed:
				return false
			case st.closeReq:
				out.retryHint(st.retry)
				s.detach(gen)
				return false
			}
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			s.detach(gen)
			return false
		case <-keepAliveC:
			if err := out.comment(); err != nil {
				return fail(err)
			}
			keepAlive.Reset(h.cfg.keepAlive)
		}
	}
}

// writeJSON answers a POST whose responses all came before anything else:
// one JSON object, or an array for a batch; 202 when there is nothing to
// say.
func (h *httpHandler) writeJSON(w http.ResponseWriter, out *sseWriter, s *httpStream, held []streamEvent, m streamMode) {
	if len(held) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var body []byte
	if m.batch {
		body = append(body, '[')
		for i, ev := range held {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, ev.data...)
		}
		body = append(body, ']')
	} else {
		body = held[0].data
		for _, ev := range held[1:] {
			h.log.Warn("dropping an extra response to a single request", "stream", s.id, "message", string(ev.data))
		}
	}
	status := http.StatusOK
	if m.modern {
		if code, isErr := errorCodeOf(held[0].data); isErr {
			status = modernStatus(code)
		}
	}
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	if len(body) > 2048 {
		// Below net/http's chunking buffer it counts the length itself.
		hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	// No flush: net/http sends the headers and the body in one write when
	// the handler returns.
	out.setDeadline()
	w.Write(body) // copies body, or writes it through
	for _, ev := range held {
		if ev.pooled {
			recycleMessage(ev.data)
		}
	}
}

// jsonContentType is the Content-Type of JSON answers, shared: a header
// value is only ever replaced, never modified in place.
var jsonContentType = []string{"application/json"}

// errorCodeOf reads the error code of an error response. It stops at the
// first of result and error, so a large result is skipped over, not
// scanned for an error it cannot hold.
func errorCodeOf(data []byte) (int, bool) {
	var errVal []byte
	walkObject(data, func(key, val []byte) bool {
		if string(key) == "error" {
			errVal = val
		}
		return string(key) != "error" && string(key) != "result"
	})
	if errVal == nil || string(errVal) == "null" {
		return 0, false
	}
	e, ok := decodeError(errVal)
	if !ok {
		return 0, false
	}
	return e.Code, true
}

// CloseStream ends the SSE stream that carries this request's messages
// without ending the request, telling the client to come back after retry:
// the 2025-11-25 polling pattern (SEP-1699), which frees the connection
// during a long call. Everything sent meanwhile is kept and delivered when
// the client resumes the stream. It does nothing unless the request came
// over Streamable HTTP on revision 2025-11-25 with an event store.
func (r *RequestInfo) CloseStream(retry time.Duration) {
	s, ok := r.route.(*httpStream)
	if !ok || s.sess == nil || s.store() == nil || r.modern || r.version < Version20251125 {
		return
	}
	s.requestClose(retry)
}

// NewHTTPTransport returns a client Transport for the Streamable HTTP
// endpoint at url.
func NewHTTPTransport(url string, opts ...HTTPTransportOption) *HTTPTransport {
	cfg := transportConfig(opts)
	client := cfg.client
	if client == nil {
		client = defaultHTTPClient()
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The URL is parsed once: each POST starts from this request.
	post0, urlErr := http.NewRequest(http.MethodPost, url, nil)
	t := &HTTPTransport{
		url: url, cfg: cfg, client: client, post0: post0, urlErr: urlErr, log: slog.New(slog.DiscardHandler), maxMsg: DefaultMaxMessageSize,
		ctx: ctx, cancel: cancel, clientInbox: newClientInbox(), jobs: make(chan postJob),
		exchanges: make(map[ID]*exchange), toolHeaders: make(map[string][]paramHeader),
	}
	return t
}
