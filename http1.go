package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// http1Transport is the http.RoundTripper of the client transports given
// no http.Client of the user's: plain-text HTTP/1.1 on the caller's own
// goroutine, over a pool of kept-alive connections. net/http's Transport
// writes each request on one goroutine of the connection's and reads its
// response on another, and hands both across to the caller: three
// goroutines, and on a small machine two cross-CPU wake-ups, per call. An
// MCP call is one small request and one small response on a loopback or
// LAN connection, where those hand-offs cost more than the exchange.
//
// It takes only what it can do exactly as net/http would: http:// URLs the
// environment does not send through a proxy, with a body of known length.
// Everything else (https, proxies, bodies of unknown length, CONNECT,
// requests that ask to close their connection) goes to fallback.
type http1Transport struct {
	fallback       http.RoundTripper
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy          func(*http.Request) (*url.URL, error)
	maxIdlePerHost int
	idleTimeout    time.Duration
	maxHeaderBytes int

	mu      sync.Mutex
	idle    map[string][]*http1Conn // by host:port, the most recently used last
	proxied map[string]bool         // by host: does proxy send it elsewhere
}

// Limits of http1Transport, as net/http's defaults have them.
const (
	http1IdleTimeout    = 90 * time.Second // an idle connection is closed after this
	http1MaxHeaderBytes = 1 << 20          // a response head larger than this fails
	http1DialTimeout    = 30 * time.Second
)

// newHTTP1Transport returns an http1Transport that keeps up to
// maxIdlePerHost idle connections to each server and sends what it does
// not take to fallback, whose dialer and proxy settings it shares when
// fallback is an *http.Transport.
func newHTTP1Transport(fallback http.RoundTripper, maxIdlePerHost int) *http1Transport {
	t := &http1Transport{
		fallback: fallback, maxIdlePerHost: maxIdlePerHost,
		idleTimeout: http1IdleTimeout, maxHeaderBytes: http1MaxHeaderBytes,
		idle: make(map[string][]*http1Conn), proxied: make(map[string]bool),
	}
	if tr, ok := fallback.(*http.Transport); ok {
		t.dial, t.proxy = tr.DialContext, tr.Proxy
	}
	if t.dial == nil {
		d := &net.Dialer{Timeout: http1DialTimeout, KeepAlive: 30 * time.Second}
		t.dial = d.DialContext
	}
	return t
}

// RoundTrip sends req and returns the response head; the body is read from
// the connection as the caller reads it, and the connection goes back to
// the pool when the body has been read to its end.
func (t *http1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.takes(req) {
		return t.fallback.RoundTrip(req)
	}
	r := &h1Request{method: req.Method, url: req.URL, host: req.Host, header: req.Header}
	body := req.Body
	if body != nil && body != http.NoBody {
		r.from, r.length = body, req.ContentLength
	}
	rewind := func() error {
		if r.from == nil {
			return nil
		}
		if req.GetBody == nil {
			return errors.New("mcp: the connection closed before the request was sent, and its body cannot be sent again")
		}
		b, err := req.GetBody()
		if err != nil {
			return err
		}
		body.Close()
		body, r.from = b, b
		return nil
	}
	resp, err := t.send(req.Context(), r, rewind)
	if body != nil {
		body.Close()
	}
	if err != nil {
		return nil, err
	}
	resp.Request = req
	return resp, nil
}

// h1Request is a request for http1Transport: a body of length bytes, read
// from from, or body when from is nil.
type h1Request struct {
	method string
	url    *url.URL
	host   string // the Host header; url.Host when empty
	header http.Header
	body   []byte
	from   io.Reader
	length int64
	hook   *connHook   // interrupts the exchange instead of its context; may be nil
	into   *h1Response // where the response goes; a new one when nil
}

// h1Response is the storage of one response: its head, its body and the
// array its header values share. The direct POST path takes them from a
// pool and gives them back when done with the response (recycle), which
// spares four allocations, about 750 B, a call.
type h1Response struct {
	resp http.Response
	body http1Body
	vals []string
}

var h1ResponsePool = sync.Pool{New: func() any { return new(h1Response) }}

// clearHead empties r's response, keeping its header map for the next.
func (r *h1Response) clearHead() {
	h := r.resp.Header
	clear(h)
	r.resp = http.Response{Header: h}
}

// recycle gives r, whose response nothing uses any more, back to the pool.
func (r *h1Response) recycle() {
	if r == nil {
		return
	}
	r.clearHead()
	r.body.reset(nil, nil)
	clear(r.vals)
	r.vals = r.vals[:0]
	h1ResponsePool.Put(r)
}

// post sends a POST of body to u. Ending ctx does not interrupt the
// exchange: interrupting hook does, which whoever ends ctx calls too. (A
// context.AfterFunc per request would do it alone, at the cost of about
// 500 B allocated per call.) The response is in storage of the pool's:
// the caller gives it back with recycle once done with the response; the
// error is nil exactly when r is not.
func (t *http1Transport) post(ctx context.Context, u *url.URL, header http.Header, body []byte, hook *connHook) (r *h1Response, err error) {
	r = h1ResponsePool.Get().(*h1Response)
	if _, err = t.send(ctx, &h1Request{method: http.MethodPost, url: u, header: header, body: body, length: int64(len(body)), hook: hook, into: r}, nil); err != nil {
		r.recycle()
		return nil, err
	}
	return r, nil
}

// connHook lets whoever ends a request interrupt the connection that
// carries it, if any.
type connHook struct {
	mu          sync.Mutex
	nc          net.Conn // the connection carrying the request, while one does
	interrupted bool
}

// attach makes nc the request's connection; it reports false, and does not,
// when the request was interrupted already.
func (h *connHook) attach(nc net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.interrupted {
		return false
	}
	h.nc = nc
	return true
}

// detach ends the request's use of its connection; it reports whether the
// connection is sound, not interrupted.
func (h *connHook) detach() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nc = nil
	return !h.interrupted
}

// interrupt breaks off the I/O of the request's connection, now and when
// one is attached later.
func (h *connHook) interrupt() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.interrupted = true
	if h.nc != nil {
		h.nc.SetDeadline(aLongTimeAgo)
	}
}

// send sends r on a kept-alive connection to its server, or a new one. A
// kept-alive connection the server closed may take the request and fail
// to send it; it was not sent, so it goes again, once, on a fresh
// connection (after rewind, for a body read from a reader), as net/http
// does.
func (t *http1Transport) send(ctx context.Context, r *h1Request, rewind func() error) (*http.Response, error) {
	if err := r.validate(); err != nil {
		return nil, err // before a connection is taken, as net/http does
	}
	addr := r.url.Host
	if r.url.Port() == "" {
		addr = net.JoinHostPort(r.url.Hostname(), "80")
	}
	for retried := false; ; retried = true {
		c, err := t.conn(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, err := c.roundTrip(ctx, r)
		if err == nil {
			return resp, nil
		}
		var unsent *unsentError
		var unanswered *unansweredError
		again := errors.As(err, &unsent) || (errors.As(err, &unanswered) && c.reused && r.idempotent())
		if retried || !again || ctx.Err() != nil {
			return nil, err
		}
		if rewind != nil {
			if err := rewind(); err != nil {
				return nil, err
			}
		}
	}
}

// takes reports whether RoundTrip sends req itself.
func (t *http1Transport) takes(req *http.Request) bool {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" || req.Method == http.MethodConnect || req.Close ||
		len(req.TransferEncoding) > 0 || req.Trailer != nil {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength <= 0 {
		return false // unknown length: net/http chunks it
	}
	if t.proxy == nil {
		return true
	}
	t.mu.Lock()
	proxied, known := t.proxied[u.Host]
	t.mu.Unlock()
	if !known {
		// The environment's proxy settings are read once per process, and
		// depend on the host only.
		p, err := t.proxy(req)
		proxied = err != nil || p != nil
		t.mu.Lock()
		t.proxied[u.Host] = proxied
		t.mu.Unlock()
	}
	return !proxied
}

// conn returns an idle connection to addr that the server has not closed,
// or a new one.
func (t *http1Transport) conn(ctx context.Context, addr string) (*http1Conn, error) {
	t.mu.Lock()
	for {
		list := t.idle[addr]
		if len(list) == 0 {
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		c.idleTimer.Stop()
		t.mu.Unlock()
		if c.br.Buffered() == 0 && c.peekAlive() {
			c.reused = true
			return c, nil
		}
		c.nc.Close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	nc, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &http1Conn{t: t, addr: addr, nc: nc, br: bufio.NewReaderSize(nc, 4096)}
	c.bw = bufio.NewWriterSize(sentCounter{c}, 4096)
	return c, nil
}

// put keeps c for the next request to its server, or closes it.
func (t *http1Transport) put(c *http1Conn) {
	t.mu.Lock()
	list := t.idle[c.addr]
	if len(list) >= t.maxIdlePerHost {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	t.idle[c.addr] = append(list, c)
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(t.idleTimeout, func() { t.expire(c) })
	} else {
		c.idleTimer.Reset(t.idleTimeout)
	}
	t.mu.Unlock()
}

// expire closes c if it is still idle.
func (t *http1Transport) expire(c *http1Conn) {
	t.mu.Lock()
	list := t.idle[c.addr]
	for i, idle := range list {
		if idle == c {
			t.idle[c.addr] = append(list[:i], list[i+1:]...)
			list[len(list)-1] = nil
			t.mu.Unlock()
			c.nc.Close()
			return
		}
	}
	t.mu.Unlock()
}

// CloseIdleConnections closes the connections no request uses, here and in
// fallback; http.Client.CloseIdleConnections calls it.
func (t *http1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = make(map[string][]*http1Conn)
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.idleTimer.Stop()
			c.nc.Close()
		}
	}
	if f, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// http1Conn is one connection of an http1Transport; one request at a time
// uses it.
type http1Conn struct {
	t         *http1Transport
	addr      string
	nc        net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	reused    bool        // it served a request before this one
	sent      int         // bytes of the current request that went out
	idleTimer *time.Timer // closes it when idle too long; set on its first put
	probe     aliveProbe  // how peekAlive looks at it while idle
	digits    [20]byte    // where writeRequest formats the Content-Length

	lastValues [8]string // the header values of its last response, by line
}

// sentCounter writes to its connection and counts what went out.
type sentCounter struct{ c *http1Conn }

func (w sentCounter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	w.c.sent += n
	return n, err
}

// unansweredError is a connection's end, or reset, before the first byte
// of the response: a server closing a kept-alive connection as the request
// arrived. An idempotent request may go again, as net/http has it.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

// idempotent reports whether r may be sent twice: its method says so, or
// its Idempotency-Key header does, as net/http has it.
func (r *h1Request) idempotent() bool {
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return r.from == nil && len(r.body) == 0
	}
	_, key := r.header["Idempotency-Key"]
	_, xkey := r.header["X-Idempotency-Key"]
	return key || xkey
}

// bodyError is a failure of a request's own body: its reader's, or a
// length other than its ContentLength. Sending it again would not help.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// unsentError is a failure to send a request on a kept-alive connection
// before any of it went out: the server never saw the request.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// aLongTimeAgo is a deadline in the past: setting it interrupts I/O.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip sends req on c and reads the response head. While the body is
// unread, a cancelled request context interrupts the connection.
func (c *http1Conn) roundTrip(ctx context.Context, req *h1Request) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		c.t.put(c)
		return nil, err
	}
	var stop func() bool
	if req.hook != nil {
		if !req.hook.attach(c.nc) {
			c.t.put(c)
			return nil, context.Canceled
		}
	} else if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	}
	c.sent = 0
	if err := c.writeRequest(req); err != nil {
		var bad *bodyError
		if errors.As(err, &bad) {
			return c.fail(ctx, req, stop, err)
		}
		// A server may answer before it has read the whole request (413,
		// say) and close the connection: its answer is the outcome, when
		// it came, as net/http has it.
		c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
		if resp, rerr := c.readResponse(ctx, req); rerr == nil {
			c.nc.SetReadDeadline(time.Time{})
			if ctx.Err() != nil {
				// Ended while the deadline was ours: the interruption's
				// deadline may be gone with it.
				return c.fail(ctx, req, stop, ctx.Err())
			}
			resp.Body.(*http1Body).keep, resp.Close = false, true
			return c.handOver(resp, req, stop), nil
		}
		if c.reused && c.sent == 0 {
			err = &unsentError{err}
		}
		return c.fail(ctx, req, stop, err)
	}
	return c.readHead(ctx, req, stop)
}

// earlyAnswerWait is how long a request that failed to go out waits for an
// answer the server may have sent before it stopped reading.
const earlyAnswerWait = 100 * time.Millisecond

// readHead reads the head of req's response; the body is the caller's to
// read.
func (c *http1Conn) readHead(ctx context.Context, req *h1Request, stop func() bool) (*http.Response, error) {
	resp, err := c.readResponse(ctx, req)
	if err != nil {
		return c.fail(ctx, req, stop, err)
	}
	return c.handOver(resp, req, stop), nil
}

// handOver gives resp's body what interrupts req, or releases the
// connection at once when the body is empty.
func (c *http1Conn) handOver(resp *http.Response, req *h1Request, stop func() bool) *http.Response {
	b := resp.Body.(*http1Body)
	b.stop, b.hook = stop, req.hook
	if b.remain == 0 {
		resp.Body = http.NoBody
		b.release()
	}
	return resp
}

// fail closes c after req failed on it; a request whose context ended
// fails with the context's error.
func (c *http1Conn) fail(ctx context.Context, req *h1Request, stop func() bool, err error) (*http.Response, error) {
	if stop != nil {
		stop()
	}
	if req.hook != nil {
		req.hook.detach()
	}
	c.nc.Close()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	return nil, err
}

// validate checks what writeRequest would write verbatim: the Host and
// the header names and values.
func (r *h1Request) validate() error {
	host := r.host
	if host == "" {
		host = r.url.Host
	}
	if !validHeaderValue(host) {
		return fmt.Errorf("mcp: invalid Host %q", host)
	}
	for key, values := range r.header {
		if !isHTTPToken(key) {
			return fmt.Errorf("mcp: invalid header name %q", key)
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return fmt.Errorf("mcp: invalid value of header %s", key)
			}
		}
	}
	return nil
}

// writeRequest writes req's head and body, as net/http's client does;
// validate has checked its header.
func (c *http1Conn) writeRequest(req *h1Request) error {
	w := c.bw
	w.WriteString(req.method)
	w.WriteByte(' ')
	if u := req.url; u.Opaque != "" {
		w.WriteString(u.RequestURI())
	} else {
		if p := u.EscapedPath(); p != "" {
			w.WriteString(p)
		} else {
			w.WriteByte('/')
		}
		if u.ForceQuery || u.RawQuery != "" {
			w.WriteByte('?')
			w.WriteString(u.RawQuery)
		}
	}
	w.WriteString(" HTTP/1.1\r\nHost: ")
	host := req.host
	if host == "" {
		host = req.url.Host
	}
	w.WriteString(host)
	w.WriteString("\r\n")
	if ua, ok := req.header["User-Agent"]; !ok {
		w.WriteString("User-Agent: Go-http-client/1.1\r\n")
	} else if len(ua) > 0 && ua[0] != "" {
		w.WriteString("User-Agent: ")
		w.WriteString(strings.TrimSpace(ua[0]))
		w.WriteString("\r\n")
	}
	for key, values := range req.header {
		switch key {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "User-Agent":
			continue // written from the request's fields, above, or not at all
		}
		for _, v := range values {
			w.WriteString(key)
			w.WriteString(": ")
			w.WriteString(strings.TrimSpace(v))
			w.WriteString("\r\n")
		}
	}
	if req.length > 0 || req.method == http.MethodPost || req.method == http.MethodPut || req.method == http.MethodPatch {
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(c.digits[:0], req.length, 10)) // a local array would escape
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	if req.from != nil {
		// ContentLength bytes and no more: what followed would reach the
		// server as a request of its own. A body of another length fails
		// the request, before the flush when the body is small.
		n, err := io.CopyN(w, bodyReader{req.from}, req.length)
		var bad *bodyError
		if errors.As(err, &bad) && !errors.Is(err, io.EOF) {
			return err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err // the connection's
		}
		if n != req.length {
			return &bodyError{fmt.Errorf("mcp: the request body has %d bytes, not its ContentLength %d", n, req.length)}
		}
		var more [1]byte
		if m, _ := io.ReadFull(req.from, more[:]); m > 0 {
			return &bodyError{fmt.Errorf("mcp: the request body is longer than its ContentLength %d", req.length)}
		}
	} else {
		w.Write(req.body)
	}
	return w.Flush()
}

// bodyReader marks the errors of a request body's reader as its own, not
// the connection's.
type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyError{err}
	}
	return n, err
}

// validHeaderValue reports whether v may be a header value: no control
// characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// errMalformedResponse is the error of a response that is not HTTP/1.x.
var errMalformedResponse = errors.New("mcp: malformed HTTP response")

// readResponse reads the head of req's response (into req.into, when
// set); informational (1xx) responses are skipped.
func (c *http1Conn) readResponse(ctx context.Context, req *h1Request) (*http.Response, error) {
	budget := c.t.maxHeaderBytes
	r := req.into
	if r == nil {
		r = new(h1Response)
	}
	for first := true; ; first = false {
		line, err := c.readLine(&budget)
		if err != nil {
			if first && budget == c.t.maxHeaderBytes {
				err = &unansweredError{err}
			}
			return nil, err
		}
		r.clearHead()
		resp := &r.resp
		if !parseStatusLine(line, resp) {
			return nil, fmt.Errorf("%w: status line %q", errMalformedResponse, line)
		}
		if err = c.readHeader(&budget, r); err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("mcp: the server switched protocols")
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		return resp, c.frameBody(ctx, req.method, r)
	}
}

// readLine reads one line of a response head, without its line ending,
// charging it to budget; it is valid until the next read.
func (c *http1Conn) readLine(budget *int) ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line: gather it.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= *budget {
			line, err = c.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, errors.New("mcp: the HTTP response head is too large")
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseStatusLine reads "HTTP/1.x NNN reason" into resp.
func parseStatusLine(line []byte, resp *http.Response) bool {
	if string(line) == "HTTP/1.1 200 OK" { // nearly every response: no copy of the line
		resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
		resp.Status, resp.StatusCode = "200 OK", http.StatusOK
		return true
	}
	proto, rest, ok := strings.Cut(string(line), " ")
	if !ok || (proto != "HTTP/1.1" && proto != "HTTP/1.0") {
		return false
	}
	code, _, _ := strings.Cut(rest, " ")
	if len(code) != 3 {
		return false
	}
	n, err := strconv.Atoi(code)
	if err != nil || n < 100 {
		return false
	}
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = proto, 1, int(proto[7]-'0')
	resp.Status, resp.StatusCode = rest, n
	return true
}

// readHeader reads header lines up to the blank line that ends them into
// r.resp.Header. The values share one array, r.vals.
func (c *http1Conn) readHeader(budget *int, r *h1Response) error {
	h := r.resp.Header
	if h == nil {
		h = make(http.Header, 8)
		r.resp.Header = h
	}
	vals := r.vals[:0]
	defer func() { r.vals = vals }()
	for i := 0; ; i++ {
		line, err := c.readLine(budget)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		colon := -1
		for i, b := range line {
			if b == ':' {
				colon = i
				break
			}
		}
		if colon <= 0 || line[0] == ' ' || line[0] == '\t' {
			return fmt.Errorf("%w: header line %q", errMalformedResponse, line)
		}
		key := headerKey(line[:colon])
		if !isHTTPToken(key) {
			return fmt.Errorf("%w: header name %q", errMalformedResponse, key)
		}
		if vals == nil {
			vals = make([]string, 0, 8)
		}
		vals = append(vals, c.headerValue(i, trimOWS(line[colon+1:])))
		n := len(vals)
		if prev, ok := h[key]; ok {
			h[key] = append(prev, vals[n-1])
		} else {
			h[key] = vals[n-1 : n : n]
		}
	}
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// headerKey is the canonical form of a header name; the names MCP
// servers send come without an allocation.
func headerKey(b []byte) string {
	switch string(b) {
	case "Content-Type":
		return "Content-Type"
	case "Content-Length":
		return "Content-Length"
	case "Date":
		return "Date"
	case "Mcp-Session-Id":
		return headerSessionID
	case "Transfer-Encoding":
		return "Transfer-Encoding"
	case "Connection":
		return "Connection"
	case "Cache-Control":
		return "Cache-Control"
	}
	return textproto.CanonicalMIMEHeaderKey(string(b))
}

// headerValue is string(b), the value of the i-th header line; the values
// MCP servers send most come without an allocation, as does one equal to
// the value of the i-th line of the connection's last response (a server
// writes its headers in the same order each time: its session ID, the
// date within a second).
func (c *http1Conn) headerValue(i int, b []byte) string {
	if i < len(c.lastValues) && string(b) == c.lastValues[i] {
		return c.lastValues[i]
	}
	v := headerValue(b)
	if i < len(c.lastValues) {
		c.lastValues[i] = v
	}
	return v
}

// headerValue is string(b); the values MCP servers send most come without
// an allocation.
func headerValue(b []byte) string {
	switch string(b) {
	case "application/json":
		return "application/json"
	case "text/event-stream":
		return "text/event-stream"
	case "chunked":
		return "chunked"
	case "no-cache":
		return "no-cache"
	case "keep-alive":
		return "keep-alive"
	case "close":
		return "close"
	}
	return string(b)
}

// frameBody works out how resp's body is delimited, as RFC 9112 §6.3 has
// it, and whether the connection serves another request after it.
func (c *http1Conn) frameBody(ctx context.Context, method string, r *h1Response) error {
	resp, b := &r.resp, &r.body
	b.reset(c, ctx)
	resp.Body = b
	resp.ContentLength = -1
	b.keep = resp.ProtoMinor == 1 && !headerHasToken(resp.Header["Connection"], "close")
	resp.Close = !b.keep
	if te := resp.Header["Transfer-Encoding"]; len(te) > 0 {
		if !strings.EqualFold(strings.TrimSpace(te[len(te)-1]), "chunked") || len(te) > 1 {
			return fmt.Errorf("%w: unsupported Transfer-Encoding %q", errMalformedResponse, te)
		}
		delete(resp.Header, "Transfer-Encoding")
		delete(resp.Header, "Content-Length")
		resp.TransferEncoding = []string{"chunked"}
		b.chunked = httputil.NewChunkedReader(c.br)
	}
	switch code := resp.StatusCode; {
	case method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified:
		b.remain, b.chunked = 0, nil
		resp.ContentLength = 0
		if cl := resp.Header["Content-Length"]; method == http.MethodHead && len(cl) > 0 {
			// The length a GET would have had, as net/http reports it.
			resp.ContentLength = -1
			if n, err := parseContentLength(strings.TrimSpace(cl[0])); err == nil {
				resp.ContentLength = n
			}
		} else if method == http.MethodHead {
			resp.ContentLength = -1
		}
		return nil
	case b.chunked != nil:
		return nil
	}
	if cl := resp.Header["Content-Length"]; len(cl) > 0 {
		n, err := parseContentLength(strings.TrimSpace(cl[0]))
		for _, v := range cl[1:] {
			if strings.TrimSpace(v) != strings.TrimSpace(cl[0]) {
				err = errors.New("differing values")
			}
		}
		if err != nil || n < 0 {
			return fmt.Errorf("%w: Content-Length %q", errMalformedResponse, cl)
		}
		b.remain, resp.ContentLength = n, n
		return nil
	}
	b.keep = false // the body ends when the server closes the connection
	resp.Close = true
	return nil
}

// parseContentLength parses a Content-Length: digits only, no sign.
func parseContentLength(v string) (int64, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, errors.New("not a length")
	}
	return strconv.ParseInt(v, 10, 64)
}

// headerHasToken reports whether a comma-separated header has token.
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// http1Body is a response body read from its connection. Reading it to its
// end gives the connection back to the pool; closing it before closes the
// connection. Close may be called while a Read waits.
type http1Body struct {
	c       *http1Conn
	ctx     context.Context // the request's
	remain  int64           // bytes left of a Content-Length body; -1 otherwise
	chunked io.Reader       // the dechunking reader of a chunked body
	keep    bool            // the connection serves another request after the body
	stop    func() bool     // ends the context.AfterFunc that interrupts it, if any
	hook    *connHook       // or the hook that does
	err     error           // what every further Read returns
	state   atomic.Int32    // bodyReading, then bodyReleased or bodyClosed
}

const (
	bodyReading = iota
	bodyReleased
	bodyClosed
)

// reset makes b the unread body of a response on c.
func (b *http1Body) reset(c *http1Conn, ctx context.Context) {
	b.c, b.ctx, b.remain, b.chunked, b.keep, b.stop, b.hook, b.err = c, ctx, -1, nil, false, nil, nil, nil
	b.state.Store(bodyReading)
}

// Read reads the body; a failure is final, and after the end the
// connection belongs to the pool.
func (b *http1Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.state.Load() == bodyClosed {
		b.err = errors.New("mcp: read on a closed response body")
		return 0, b.err
	}
	var n int
	var err error
	switch {
	case b.remain == 0:
		err = io.EOF
	case b.remain > 0:
		if int64(len(p)) > b.remain {
			p = p[:b.remain]
		}
		n, err = b.c.br.Read(p)
		b.remain -= int64(n)
		if b.remain == 0 {
			err = io.EOF
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	case b.chunked != nil:
		n, err = b.chunked.Read(p)
		if err == io.EOF {
			err = b.readTrailer()
		}
	default:
		n, err = b.c.br.Read(p)
	}
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.release()
	} else {
		if b.state.Load() == bodyClosed {
			err = errors.New("mcp: read on a closed response body")
		} else if ctxErr := b.ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		b.abandon()
	}
	b.err = err
	return n, err
}

// readTrailer reads what follows the last chunk: trailer fields, which are
// dropped, and the blank line. It returns io.EOF when all is well.
func (b *http1Body) readTrailer() error {
	budget := b.c.t.maxHeaderBytes
	for {
		line, err := b.c.readLine(&budget)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return io.EOF
		}
	}
}

// release hands the connection, read to the end of the body, to the pool;
// or closes it, when it cannot serve another request.
func (b *http1Body) release() {
	if !b.state.CompareAndSwap(bodyReading, bodyReleased) {
		return
	}
	if !b.unhook() {
		// The request was interrupted: the connection's deadline is broken.
		b.c.nc.Close()
		return
	}
	if b.keep {
		b.c.t.put(b.c)
	} else {
		b.c.nc.Close()
	}
}

// abandon closes the connection of a body that cannot be read to its end.
func (b *http1Body) abandon() {
	if b.state.CompareAndSwap(bodyReading, bodyClosed) {
		b.unhook()
		b.c.nc.Close()
	}
}

// unhook ends what interrupts the body's request; it reports whether the
// connection is sound, not interrupted.
func (b *http1Body) unhook() bool {
	sound := true
	if b.stop != nil {
		sound = b.stop()
	}
	if b.hook != nil {
		sound = b.hook.detach() && sound
	}
	return sound
}

// Close closes the connection unless the body was read to its end.
func (b *http1Body) Close() error {
	b.abandon()
	return nil
}
