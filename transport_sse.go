package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// NewSSEHandler returns an http.Handler that serves s over the HTTP+SSE
// transport of protocol revision 2024-11-05, for old clients: a GET opens
// a session's event stream, whose first event, "endpoint", names the URL
// to POST messages to; every server message is a "message" event on that
// stream. The session lives as long as the GET. New deployments want
// [NewHTTPHandler]; mount both on different paths to serve old and new
// clients. It reads the same safety options (origins, hosts, body cap,
// authorizer, write timeout, keep-alive, context).
func NewSSEHandler(s *Server, opts ...HTTPHandlerOption) http.Handler {
	s.serving.Store(true)
	cfg := handlerConfig(opts)
	cfg.store = nil
	h := &sseHandler{httpHandler: httpHandler{srv: s, cfg: cfg, log: s.cfg.logger}, sessions: make(map[string]*sseSession)}
	if cfg.ctx != nil {
		context.AfterFunc(cfg.ctx, h.shutdown)
	}
	return h
}

type sseHandler struct {
	httpHandler
	sessions map[string]*sseSession // guarded by httpHandler.mu
}

// sseSession is one 2024-11-05 session: a connection in push mode whose
// every message goes on the GET stream. It belongs to the principal that
// opened it.
type sseSession struct {
	stream    *httpStream
	conn      pushConn
	principal string
}

func (h *sseHandler) shutdown() {
	h.mu.Lock()
	h.stopped = true
	streams := make([]*httpStream, 0, len(h.sessions))
	for _, s := range h.sessions {
		streams = append(streams, s.stream)
	}
	h.mu.Unlock()
	for _, st := range streams {
		st.close()
	}
}

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, token, ok := admitRequest(h.cfg, w, r, h.isStopped())
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.serveEvents(w, r, principal)
	case http.MethodPost:
		h.serveMessage(w, r, principal, token)
	default:
		w.Header().Set("Allow", "GET, POST")
		writeHTTPError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, ID{}, "Method Not Allowed")
	}
}

// serveEvents runs a session for as long as its GET stream is open.
func (h *sseHandler) serveEvents(w http.ResponseWriter, r *http.Request, principal string) {
	if !accepts(r, "text/event-stream", "text/*") {
		writeHTTPError(w, http.StatusNotAcceptable, CodeInvalidRequest, ID{}, "Not Acceptable: the event stream is text/event-stream")
		return
	}
	id := rand.Text()
	// The stream never finishes: it carries every message of the session.
	st := newHTTPStream(nil, "", nil, h.log)
	ss, c := h.srv.pushSession(&streamTransport{stream: st}, 0, principal, id)
	sess := &sseSession{stream: st, conn: c, principal: principal}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		c.close(errors.New("the HTTP handler shut down"))
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the server is shutting down")
		return
	}
	h.sessions[id] = sess
	h.mu.Unlock()
	h.srv.addSession(ss)
	defer func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
		h.srv.removeSession(ss)
		c.close(errEventStreamClosed)
	}()
	endpoint := (&url.URL{Path: r.URL.Path, RawQuery: "sessionId=" + url.QueryEscape(id)}).String()
	gen := st.writer()
	h.serveStream(w, r, st, gen, streamMode{sse: true, event: "message", intro: []byte("event: endpoint\ndata: " + endpoint + "\n\n")})
}

// serveMessage hands a POSTed message to its session; answers go on the
// session's event stream. Another principal's session is unknown to it.
func (h *sseHandler) serveMessage(w http.ResponseWriter, r *http.Request, principal string, token *TokenInfo) {
	id := r.URL.Query().Get("sessionId")
	h.mu.Lock()
	sess := h.sessions[id]
	h.mu.Unlock()
	if sess == nil || sess.principal != principal {
		writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: unknown session; open the event stream first")
		return
	}
	if mediaTypeOf(r.Header.Get("Content-Type")) != "application/json" {
		writeHTTPError(w, http.StatusUnsupportedMediaType, CodeInvalidRequest, ID{}, "Unsupported Media Type: the body must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.maxBodyBytes))
	if err != nil {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, ID{}, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes", h.cfg.maxBodyBytes))
		return
	}
	if h.cfg.scopes != nil {
		msgs, _, _, one := readPOSTBody(body)
		refusal := h.cfg.scopes.checkMessages(token, msgs)
		one.release()
		if refusal != nil {
			refusal.write(w)
			return
		}
	}
	sess.conn.handleFrame(body, nil)
	w.WriteHeader(http.StatusAccepted)
}

// SSETransport is the client side of the HTTP+SSE transport of protocol
// revision 2024-11-05, for old servers: it opens the server's event
// stream, POSTs messages to the endpoint the stream names, and reads every
// answer from the stream. The stream's end ends the connection.
type SSETransport struct {
	url    string
	cfg    *httpConfig
	client *http.Client
	log    *slog.Logger
	maxMsg int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	clientInbox
	endpoint string
}

// NewSSETransport returns a client Transport for the 2024-11-05 HTTP+SSE
// server whose event stream is at url. Connect opens the stream and waits,
// bounded by its context, for the endpoint event.
func NewSSETransport(url string, opts ...HTTPTransportOption) *SSETransport {
	cfg := transportConfig(opts)
	ctx, cancel := context.WithCancel(context.Background())
	cfg.wrapOAuth(url, ctx)
	return &SSETransport{url: url, cfg: cfg, client: cfg.client, log: slog.New(slog.DiscardHandler), maxMsg: DefaultMaxMessageSize,
		ctx: ctx, cancel: cancel, clientInbox: newClientInbox()}
}

// start opens the event stream and waits for the endpoint event.
func (t *SSETransport) start(ctx context.Context, log *slog.Logger, maxMessageSize int) error {
	t.log, t.maxMsg = log, maxMessageSize
	req, err := http.NewRequestWithContext(t.ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return err
	}
	for k, v := range t.cfg.header {
		req.Header[k] = slices.Clone(v)
	}
	req.Header.Set("Accept", "text/event-stream")
	stop := context.AfterFunc(ctx, t.cancel)
	defer stop()
	resp, err := t.client.Do(req)
	if err != nil {
		return errorf("opening the event stream: %w", err)
	}
	if resp.StatusCode/100 != 2 || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		resp.Body.Close()
		return errorf("opening the event stream: HTTP %s, %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	p := newSSEParser(resp.Body, t.maxMsg)
	for {
		ev, err := p.next()
		if err != nil {
			resp.Body.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errorf("the event stream ended before the endpoint event: %w", err)
		}
		if ev.event != "endpoint" {
			continue
		}
		endpoint, err := sameOriginURL(t.url, string(ev.data))
		if err != nil {
			resp.Body.Close()
			return err
		}
		t.endpoint = endpoint
		break
	}
	t.wg.Add(1)
	go t.read(resp.Body, p)
	return nil
}

// sameOriginURL resolves the endpoint event against the stream's URL and
// refuses one on another origin: a server may not send our messages
// elsewhere.
func sameOriginURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u, err := b.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", errorf("bad endpoint %q: %w", ref, err)
	}
	if u.Scheme != b.Scheme || u.Host != b.Host {
		return "", errorf("the endpoint %q is not on the event stream's origin", ref)
	}
	return u.String(), nil
}

func (t *SSETransport) read(body io.ReadCloser, p *sseParser) {
	defer t.wg.Done()
	defer body.Close()
	for {
		ev, err := p.next()
		if err != nil {
			t.fail(fmt.Errorf("the event stream ended: %w", err))
			return
		}
		if ev.tooLarge {
			t.log.Warn("dropping a server message larger than the limit", "limit", t.maxMsg)
			continue
		}
		if len(ev.data) == 0 || (ev.event != "" && ev.event != "message") {
			continue
		}
		select {
		case t.inbox <- ev.data:
		case <-t.ctx.Done():
			return
		}
	}
}

// ReadMessage returns the next message of the event stream.
func (t *SSETransport) ReadMessage() ([]byte, error) {
	return t.next(t.ctx.Done())
}

// WriteMessage POSTs msg to the session's endpoint. A refused request is
// answered, on the server's behalf, with an error naming the HTTP status.
func (t *SSETransport) WriteMessage(msg []byte) error {
	if t.endpoint == "" {
		return errors.New("mcp: SSETransport not started")
	}
	req, err := http.NewRequestWithContext(t.ctx, http.MethodPost, t.endpoint, bytes.NewReader(bytes.Clone(msg)))
	if err != nil {
		return err
	}
	for k, v := range t.cfg.header {
		req.Header[k] = slices.Clone(v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m httpMessage
	sniffMessage(msg, &m)
	if m.kind != kindRequest {
		t.log.Warn("the server refused a message", "method", m.method, "status", httpStatusText(resp, data))
		return nil
	}
	e := NewError(CodeInternalError, httpStatusText(resp, data), map[string]int{"httpStatus": resp.StatusCode})
	select {
	case t.inbox <- encodeError(m.id, e):
	case <-t.ctx.Done():
	}
	return nil
}

// Close ends the event stream, which ends the session, and returns once
// the transport's reader has ended.
func (t *SSETransport) Close() error {
	t.cancel()
	t.wg.Wait()
	return nil
}
