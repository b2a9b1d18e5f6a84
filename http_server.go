package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

type httpHandler struct {
	srv *Server
	cfg *httpConfig
	log *slog.Logger

	mu           sync.Mutex
	sessions     map[string]*httpSession
	sessionsPeak int // the most sessions since the map was last rebuilt
	// sessionsLive counts the sessions registered or being created, and
	// perPrincipal those of each principal: what the session caps count.
	sessionsLive int
	perPrincipal map[string]int
	stopped      bool
	// idle orders the sessions with no request in progress for eviction
	// at the session cap.
	idle idleSessions
	// backlog bounds what all the standalone streams hold.
	backlog backlogBudget

	// cluster shares the legacy sessions with the other instances of the
	// server (WithSessionStore, cluster_seam.go); nil without a store.
	cluster *clusterMember

	modernInFlight atomic.Int64
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, token, ok := admitRequest(h.cfg, w, r, h.isStopped())
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r, principal, token)
	case http.MethodGet:
		h.serveGET(w, r, principal)
	case http.MethodDelete:
		h.serveDELETE(w, r, principal)
	default:
		h.methodNotAllowed(w, isModernVersion(r.Header.Get(headerProtocolVersion)))
	}
}

// methodNotAllowed answers 405, naming the methods the client may use:
// only POST for a handler pinned to 2026-07-28 or a request of that
// revision, which has no GET stream and no DELETE.
func (h *httpHandler) methodNotAllowed(w http.ResponseWriter, modern bool) {
	if h.cfg.statelessOnly || modern {
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

// admitRequest applies the checks every request to an MCP endpoint passes
// first: where it comes from, whether it is authorized, and whether the
// server is shutting down; a CORS preflight is answered after the first.
// It returns the principal the authorizer named (empty without one) and
// the bearer token it verified (a BearerAuth), and ok false when it has
// answered the request itself.
func admitRequest(cfg *httpConfig, w http.ResponseWriter, r *http.Request, stopped bool) (principal string, token *TokenInfo, ok bool) {
	if status, msg := checkSource(cfg, r); status != 0 {
		writeHTTPError(w, status, CodeInvalidRequest, ID{}, msg)
		return "", nil, false
	}
	if serveCORS(cfg, w, r) {
		return "", nil, false // a preflight carries no credentials to check
	}
	if cfg.authorize != nil {
		if !readBeforeAuthorizing(w, r) {
			return "", nil, false
		}
		var err error
		if principal, token, err = cfg.authorize(w, r); err != nil {
			var refusal *authRefusal
			if errors.As(err, &refusal) {
				refusal.write(w)
				return "", nil, false
			}
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeHTTPError(w, http.StatusUnauthorized, CodeInvalidRequest, ID{}, "Unauthorized: "+err.Error())
			return "", nil, false
		}
	}
	if stopped {
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the server is shutting down")
		return "", nil, false
	}
	return principal, token, true
}

// readBeforeAuthorizing reads a POST body that fits in one chunk before
// the authorizer runs. net/http notices that a client left only once the
// body is read, so without this a slow token check (introspection) would
// go on for a client long gone. A larger body is read after the check, so
// an unauthorized client cannot make the server hold it. It answers the
// request itself and reports false when the body cannot be read.
func readBeforeAuthorizing(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.ContentLength <= 0 || r.ContentLength > bodyChunkSize {
		return true
	}
	body, err := readArriving(r.Body, r.ContentLength, r.ContentLength)
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: cannot read the body: "+err.Error())
		return false
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// checkSource refuses requests from web pages that may not call us: a
// foreign Origin, or a non-loopback Host on a loopback listener (DNS
// rebinding).
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
	if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(cfg, origin, r) {
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

// originAllowed accepts the listed origins and the server's own: an http
// or https origin naming the request's host and port (loopback names count
// as one host, with the scheme of the connection: a page of a loopback
// server is never https over a plain connection). An origin is
// scheme://host[:port]: one with userinfo is refused whatever is listed,
// and one with a path, a query or another scheme is not the server's own;
// no browser sends those.
func originAllowed(cfg *httpConfig, origin string, r *http.Request) bool {
	if strings.Contains(origin, "@") {
		return false // userinfo: a host cannot contain "@"
	}
	origin = strings.TrimSuffix(origin, "/")
	if listed(cfg.allowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" || u.Path != "" || strings.ContainsAny(origin, "?#") {
		return false
	}
	scheme, tls := strings.ToLower(u.Scheme), r.TLS != nil
	if scheme != "https" && (scheme != "http" || tls) {
		return false // another scheme, or a plain page of a TLS server
	}
	if strings.EqualFold(u.Host, r.Host) {
		// Behind a proxy that ends TLS an https page reaches a plain
		// connection: the same host is enough.
		return true
	}
	return (scheme == "https") == tls && isLoopbackHost(hostname(u.Host)) && isLoopbackHost(hostname(r.Host)) && u.Port() == portOf(r.Host)
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
	// Read as it arrives: a client that announces a large body and sends
	// little of it holds only what it sent.
	body, err := readArriving(from, r.ContentLength, h.cfg.maxBodyBytes)
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
	// http.Server.ReadTimeout bounds the request, not the answer: an SSE
	// answer may last far longer. (net/http lifts the deadline itself when
	// it sees the body end; this does not depend on it. A recorder does
	// not support deadlines, which is fine.)
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return body
}

func (h *httpHandler) servePOST(w http.ResponseWriter, r *http.Request, principal string, token *TokenInfo) {
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
	if h.cfg.scopes != nil {
		// The scopes of each message's method and tool, checked before
		// anything of the POST is dispatched.
		if refusal := h.cfg.scopes.checkMessages(token, msgs); refusal != nil {
			refusal.write(w)
			return
		}
	}
	if h.isModern(r, msgs, batch) {
		h.serveModernPOST(w, r, body, msgs, batch, one, principal, token)
		return
	}
	h.serveLegacyPOST(w, r, body, msgs, batch, one, principal, token)
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
func (h *httpHandler) serveModernPOST(w http.ResponseWriter, r *http.Request, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage, principal string, token *TokenInfo) {
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
		// Only a server pinned to 2026-07-28 routes a legacy handshake here: name the
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
	held := false
	if limit := int64(h.srv.cfg.maxInFlight); limit > 0 {
		if h.modernInFlight.Add(1) > limit {
			h.modernInFlight.Add(-1)
			w.Header().Set("Retry-After", "1")
			writeHTTPError(w, http.StatusServiceUnavailable, CodeOverloaded, m.id, "overloaded")
			return
		}
		held = true
	}
	st := newHTTPStream(nil, "", []ID{m.id}, h.log)
	st.token = token
	t := &streamTransport{stream: st}
	if principal == "" {
		t.peerHost = r.RemoteAddr
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			t.peerHost = host
		}
	}
	if held {
		// A long-lived request its own bound admitted gives its place
		// back early (streamTransport.detached), so idle streams lock no
		// one out.
		t.inFlight = &h.modernInFlight
		defer t.release()
	}
	// The POST's one message (no batches on 2026-07-28).
	_, c := h.srv.pushSession(t, oneRequest, principal, "")
	if h.cfg.ctx != nil {
		// At shutdown the handler is asked to finish, not cancelled: its
		// answer (a listen's closing result) still goes out.
		stop := context.AfterFunc(h.cfg.ctx, func() { c.cancelHandlers(errShuttingDown) })
		defer stop()
	}
	// On 2026-07-28 closing the stream is the cancellation. (gone may run
	// after this returns, when m is back in its pool: it keeps the id.)
	id := m.id
	gone := func() { c.cancelInbound(id, "the client closed the HTTP stream") }
	complete := h.serveMessages(w, r, c, body, msgs, false, one, st, streamMode{sse: m.method == "subscriptions/listen" || m.method == "events/stream", modern: true}, gone)
	if !complete {
		gone()
	}
	c.close(errHTTPExchangeDone)
}

// serveMessages hands a POST's body to the engine and writes the stream
// of its answers; it reports whether every answer was written (see
// serveStream). A single request runs on this goroutine, which would
// otherwise only wait for it, and its answer is then written here; unless
// something must go out before the answer (progress, a log, an ask), which
// starts a writer goroutine that this one waits for. gone, if set, runs
// when the client goes away while the request runs.
//
// one is the POST's pooled storage, which holds the inline writer; nil for
// a batch.
func (h *httpHandler) serveMessages(w http.ResponseWriter, r *http.Request, c pushConn, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage, st *httpStream, mode streamMode, gone func()) bool {
	gen := st.writer()
	if d := h.cfg.keepAlive; d > 0 && !mode.sse {
		// A POST quiet this long turns to SSE with a comment (a timer,
		// no goroutine, while the request runs).
		t := time.AfterFunc(d, st.keepAliveDue)
		defer t.Stop()
	}
	m := msgs[0]
	if batch || one == nil || mode.sse || !m.decoded || m.kind != kindRequest {
		pushBody(c, body, msgs, batch, st)
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
	c.handleMessage(&m.wire, st, true)
	started := st.endInline()
	st.frameDone()
	if started {
		<-iw.done
		return iw.complete
	}
	return h.serveStream(w, r, st, gen, mode)
}

// pushBody hands a POST body to the engine: a single message as the
// envelope already decoded, anything else (a batch, a message the engine
// must answer with an error) as the body.
func pushBody(c pushConn, body []byte, msgs []*httpMessage, batch bool, route msgRoute) {
	if !batch && msgs[0].decoded {
		c.handleMessage(&msgs[0].wire, route, false)
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

// streamTransport is the transport of a server connection over HTTP: a
// 2026-07-28 POST's, a 2024-11-05 event stream's or a legacy session's. It
// puts each message on the stream of the request it relates to, and any
// other on stream, or, for a legacy session, on the session's GET stream.
type streamTransport struct {
	stream *httpStream
	sess   *httpSession
	// inFlight counts the 2026-07-28 POSTs under the handler-wide
	// in-flight cap, in which this one holds a place until released; nil
	// when it holds none.
	inFlight *atomic.Int64
	released atomic.Bool
	// peerHost is where an anonymous 2026-07-28 POST came from (peer).
	peerHost string
}

func (t *streamTransport) peer() string { return t.peerHost }

// detached gives the POST's in-flight place back: its request, a
// long-lived one, is bounded by its own limit now.
func (t *streamTransport) detached() { t.release() }

// release gives the POST's in-flight place back, once.
func (t *streamTransport) release() {
	if t.inFlight != nil && t.released.CompareAndSwap(false, true) {
		t.inFlight.Add(-1)
	}
}

func (t *streamTransport) ReadMessage() ([]byte, error) { return nil, io.EOF }
func (t *streamTransport) WriteMessage(msg []byte) error {
	return t.writeRouted(outgoing{data: bytes.Clone(msg)}) // msg stays the caller's
}

// Close ends the stream, or the session; the connection calls it when it
// closes.
func (t *streamTransport) Close() error {
	if t.sess != nil {
		t.sess.close()
	} else {
		t.stream.close()
	}
	return nil
}

// writeRouted puts a message on its stream. It never blocks.
func (t *streamTransport) writeRouted(o outgoing) error {
	st := routeStream(o.route)
	if st == nil {
		st = t.stream
	}
	if st == nil {
		if routed, err := t.sess.replica.routeUnsolicited(o); routed {
			return err
		}
		if st = t.sess.unsolicitedStream(); st == nil {
			t.sess.h.log.Debug("dropping a message that belongs to no request: the session has no standalone stream", "session", t.sess.id)
			return errNoStandalone
		}
	}
	return st.push(o)
}

// serveLegacyPOST serves a POST of a legacy session: initialize creates the
// session; notifications and responses are accepted with 202; requests are
// answered on this POST's response, JSON or SSE. A session belongs to the
// principal that opened it.
func (h *httpHandler) serveLegacyPOST(w http.ResponseWriter, r *http.Request, body []byte, msgs []*httpMessage, batch bool, one *onePOSTMessage, principal string, token *TokenInfo) {
	sid := r.Header.Get(headerSessionID)
	var sess *httpSession
	created := false
	if sid == "" {
		if batch || msgs[0].kind != kindRequest || msgs[0].method != "initialize" {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the Mcp-Session-Id header is required; start a session with initialize")
			return
		}
		var err error
		if sess, err = h.newSession(principal); err != nil {
			refuseSession(w, msgs[0].id, err)
			return
		}
		created = true
		if !sess.begin() {
			writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
			return
		}
	} else if sess = h.useSession(w, r, sid, principal); sess == nil {
		return
	}
	defer sess.end()
	if v := r.Header.Get(headerProtocolVersion); v != "" && !created && (!isSupportedVersion(v) || isModernVersion(v)) {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: unsupported MCP-Protocol-Version "+strconv.Quote(v))
		return
	}
	if batch && !sess.conn.batchesAllowed() {
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
		local, ok := sess.replica.relayPOST(w, body, msgs, batch)
		if !ok {
			return
		}
		if len(local) == len(msgs) {
			pushBody(sess.conn, body, msgs, batch, nil)
		} else {
			for _, m := range local { // decoded: in a body of no requests, none is malformed
				sess.conn.handleMessage(&m.wire, nil, false)
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := sess.newStream(ids)
	if st == nil {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
		return
	}
	st.token = token
	if created {
		w.Header().Set(headerSessionID, sess.id)
	}
	complete := h.serveMessages(w, r, sess.conn, body, msgs, batch, one, st, streamMode{batch: batch, prime: sess.primes()}, nil)
	if created && (!complete || st.failed()) {
		if !st.failed() {
			// Saved, when shared, then lost with its answer: nobody will
			// use it.
			sess.replica.deleteEverywhere(context.WithoutCancel(r.Context()))
		}
		sess.conn.close(errors.New("initialize failed"))
	}
}

func (h *httpHandler) serveGET(w http.ResponseWriter, r *http.Request, principal string) {
	if modern := isModernVersion(r.Header.Get(headerProtocolVersion)); h.cfg.statelessOnly || modern {
		h.methodNotAllowed(w, modern)
		return
	}
	if !accepts(r, "text/event-stream", "text/*") {
		writeHTTPError(w, http.StatusNotAcceptable, CodeInvalidRequest, ID{}, "Not Acceptable: a GET must accept text/event-stream")
		return
	}
	sess, ok := h.requestSession(w, r, principal)
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
		if st == nil && ok && sess.replica.resumesElsewhere(streamID) {
			sess.replica.resumeElsewhere(w, r, streamID, index)
			return
		}
		if st == nil {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: Last-Event-ID "+strconv.Quote(last)+" names no stream of this session")
			return
		}
		replay, gen, ok := st.resume(r.Context(), index)
		if !ok {
			writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the events after "+strconv.Quote(last)+" are no longer available")
			return
		}
		if st.standalone {
			sess.replica.hold(r.Context(), st, st.id)
			defer sess.replica.release()
			sess.replica.takeOver(st, index, replay)
		}
		h.serveStream(w, r, st, gen, streamMode{sse: true, replay: replay})
		return
	}
	st, gen, ok := h.attachStandalone(w, r, sess)
	if !ok {
		return
	}
	sess.replica.hold(r.Context(), st, "")
	defer sess.replica.release()
	sess.replica.takeOver(st, 0, nil)
	h.serveStream(w, r, st, gen, streamMode{sse: true, prime: sess.primes()})
}

// attachStandalone attaches a GET to the session's standalone stream. It
// answers the request itself and reports false when it cannot.
func (h *httpHandler) attachStandalone(w http.ResponseWriter, r *http.Request, sess *httpSession) (*httpStream, int64, bool) {
	if h.cfg.noStandalone {
		h.methodNotAllowed(w, false)
		return nil, 0, false
	}
	st := sess.standaloneStream()
	if st == nil {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
		return nil, 0, false
	}
	gen, ok := st.attachFresh()
	if !ok {
		writeHTTPError(w, http.StatusConflict, CodeInvalidRequest, ID{}, "Conflict: the session's GET stream is already open")
		return nil, 0, false
	}
	// What other instances announce from now on reaches the stream, as a
	// copy of a shared session made for this GET may have just joined.
	if err := h.srv.awaitBroadcasts(r.Context(), sess.ss); err != nil {
		h.log.Warn("a GET stream may miss what other instances announce", "session", sess.id, "err", err)
	}
	return st, gen, true
}

func (h *httpHandler) serveDELETE(w http.ResponseWriter, r *http.Request, principal string) {
	if modern := isModernVersion(r.Header.Get(headerProtocolVersion)); h.cfg.statelessOnly || modern {
		h.methodNotAllowed(w, modern)
		return
	}
	sess, ok := h.requestSession(w, r, principal)
	if !ok {
		return
	}
	if err := sess.replica.deleteEverywhere(r.Context()); err != nil {
		sess.end()
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the session store failed: "+err.Error())
		return
	}
	sess.end()
	sess.conn.close(errSessionDeleted)
	w.WriteHeader(http.StatusNoContent)
}
