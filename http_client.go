package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// HTTPTransport is the client side of Streamable HTTP, for both protocol
// eras: give it to [Client.Connect]. Each message is POSTed on its own;
// the answers, read from JSON or SSE responses, come back in order per
// stream. On the older revisions it keeps the session id the server issued,
// sends the negotiated MCP-Protocol-Version, opens the standalone GET
// stream when the server offers one, resumes a lost SSE stream with
// Last-Event-ID and ends the session with DELETE when closed. On 2026-07-28
// it sends the Mcp-Method, Mcp-Name and Mcp-Param-* headers, and cancels a
// call by closing its stream.
type HTTPTransport struct {
	url    string
	cfg    *httpConfig
	post0  *http.Request // a POST to url without context, body or headers
	urlErr error         // why url does not parse, if it does not
	client *http.Client
	log    *slog.Logger
	maxMsg int

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	clientInbox
	closeOnce sync.Once

	jobs        chan postJob // idle POST workers wait here
	idleWorkers atomic.Int32 // how many wait there

	// push hands a message to the engine on the goroutine that read it
	// (set by the connection before any traffic); nil: the inbox.
	push func(data []byte)
	// failCall ends a pending call of the engine's with a Go error,
	// which then reaches its caller as it is (set with push).
	failCall func(id ID, err error)

	mu          sync.Mutex
	closed      bool
	sessionID   string
	version     string // negotiated by initialize
	exchanges   map[ID]*exchange
	toolHeaders map[string][]paramHeader
	getStarted  bool
	// modern: the client's last request was a 2026-07-28 one, and so it
	// sends no responses (see queueAnswerLocked).
	modern bool
	// answers wait here for one of at most cfg.answerPosts answer workers;
	// owed counts the answers queued or being POSTed.
	answers       []postJob
	answerWorkers int
	owed          int

	// legacyHeader is the header map every message of the older revisions
	// shares, built for legacySession and legacyVersion; read-only.
	legacyHeader                 http.Header
	legacySession, legacyVersion string
	// modernHeaders are the header maps of 2026-07-28 messages, by what
	// they mirror (headerLocked); read-only.
	modernHeaders map[modernHeaderKey]http.Header
}

// defaultHTTPClient is the client of the transports given none: a clone of
// http.DefaultTransport (proxy settings, TLS, HTTP/2 as net/http does them)
// that keeps enough idle connections for many concurrent calls to one
// server: DefaultTransport keeps 2 per host, so each call past the second
// would dial, and close, a connection.
func defaultHTTPClient() *http.Client {
	defaultClientOnce.Do(func() {
		defaultClient = &http.Client{} // the program replaced DefaultTransport: use what it gave
		if base, ok := http.DefaultTransport.(*http.Transport); ok {
			tr := base.Clone()
			tr.MaxIdleConns = max(tr.MaxIdleConns, 2*maxIdleConnsPerHost)
			tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
			defaultClient.Transport = tr
		}
	})
	return defaultClient
}

// defaultClient is built on first use, not at init, so that a program that
// never makes an HTTP client does not link net/http's client.
var (
	defaultClientOnce sync.Once
	defaultClient     *http.Client
)

// exchange is one request's POST in flight, with a context of its own that
// abort ends.
type exchange struct {
	mu          sync.Mutex
	cancel      context.CancelFunc // the POST's context, once it has one
	interrupted bool
}

// abort ends the exchange's POST, now or as soon as it starts.
func (ex *exchange) abort() {
	ex.mu.Lock()
	ex.interrupted = true
	ex.mu.Unlock()
	ex.end()
}

// withContext returns a context of ctx's for the exchange's POST, which
// abort ends (at once if it has already been called).
func (ex *exchange) withContext(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	ex.mu.Lock()
	prev := ex.cancel
	ex.cancel = cancel
	interrupted := ex.interrupted
	ex.mu.Unlock()
	if prev != nil {
		prev()
	}
	if interrupted {
		cancel()
	}
	return ctx
}

// end ends the exchange's context, if it has one: once its POST is done,
// or aborted.
func (ex *exchange) end() {
	ex.mu.Lock()
	cancel := ex.cancel
	ex.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// aborted reports whether the exchange was aborted.
func (ex *exchange) aborted() bool {
	if ex == nil {
		return false
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.interrupted
}

// send POSTs body through the client, on the exchange's context when it
// has one; t.url must parse. The request is a copy of post0, so the URL is
// not parsed again, with its own URL (a RoundTripper that edits one cannot
// reach the next), body and header.
func (t *HTTPTransport) send(ctx context.Context, ex *exchange, body []byte, header http.Header) (*http.Response, error) {
	if ex != nil {
		ctx = ex.withContext(ctx)
	}
	req := t.post0.WithContext(ctx)
	if !t.cfg.plainClient {
		// A RoundTripper of the caller's may edit the request it is given
		// (against its contract): it must not redirect the next POST.
		u := *req.URL
		req.URL = &u
	}
	req.Header = header
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.client.Do(req)
}

func (t *HTTPTransport) start(_ context.Context, log *slog.Logger, maxMessageSize int) error {
	t.log, t.maxMsg = log, maxMessageSize
	return nil
}

// clientInbox is where a client HTTP transport's streams queue the
// messages ReadMessage returns, and how the connection fails.
type clientInbox struct {
	inbox    chan []byte
	failed   chan struct{}
	failErr  error
	failOnce sync.Once
}

func newClientInbox() clientInbox {
	return clientInbox{inbox: make(chan []byte, 64), failed: make(chan struct{})}
}

// next returns the next queued message; queued messages win over a
// failure or the end of the connection (done).
func (b *clientInbox) next(done <-chan struct{}) ([]byte, error) {
	select {
	case msg := <-b.inbox:
		return msg, nil
	default:
	}
	select {
	case msg := <-b.inbox:
		return msg, nil
	case <-b.failed:
		return nil, b.failErr
	case <-done:
		// A failure ends the transport too: it wins over the end.
		select {
		case <-b.failed:
			return nil, b.failErr
		default:
		}
		return nil, io.EOF
	}
}

// fail ends the connection: ReadMessage returns err.
func (b *clientInbox) fail(err error) {
	b.failOnce.Do(func() {
		b.failErr = err
		close(b.failed)
	})
}

// ErrTooManyAnswers is wrapped by the error that ends a client connection
// over Streamable HTTP whose server made it owe more answers (responses to
// its requests, error replies to its malformed messages) than the client
// POSTs at once and queues behind them; see [WithMaxAnswerPosts]. Client
// only.
var ErrTooManyAnswers = errors.New("mcp: the server sent more messages needing an answer than the client could answer")

// ErrSessionExpired is wrapped by the error that ends a client connection
// whose Streamable HTTP session the server no longer knows (404): start
// over with a new Client.Connect.
var ErrSessionExpired = errors.New("mcp: the HTTP session expired or was ended by the server")

// ReadMessage returns the next message the server sent, on any stream.
func (t *HTTPTransport) ReadMessage() ([]byte, error) {
	return t.next(t.ctx.Done())
}

// pushInto makes the transport hand each message it reads to push, inline
// on the goroutine that read it, rather than queue it for ReadMessage: a
// response then wakes its caller with no hop between. ReadMessage still
// reports the end of the connection. A request whose POST failed with an *AuthError ends through fail, so
// that the caller gets that error and can find it with errors.As, rather
// than its text in a JSON-RPC error.
func (t *HTTPTransport) pushInto(push func(data []byte), fail func(id ID, err error)) {
	t.push, t.failCall = push, fail
}

// receive hands a message read to the engine or queues it for ReadMessage;
// it gives up when ctx ends.
func (t *HTTPTransport) receive(ctx context.Context, msg []byte) bool {
	if t.push != nil {
		// ctx.Err, not ctx.Done: a context's Done channel is made on first
		// use, and no one waits on it here.
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-t.failed:
			return false
		default:
		}
		t.push(msg)
		return true
	}
	select {
	case t.inbox <- msg:
		return true
	case <-ctx.Done():
	case <-t.failed:
	}
	return false
}

// answer hands the engine an error response to request id on the server's
// behalf: the HTTP exchange failed before a JSON-RPC answer came.
func (t *HTTPTransport) answer(ctx context.Context, id ID, e *Error) {
	t.receive(ctx, encodeError(id, e))
}

// WriteMessage POSTs msg; it returns at once and the POST runs on its own
// goroutine until its response has been read. notifications/initialized
// also opens the session's standalone GET stream, and waits (at most the
// close timeout) for its answer, so that what the server sends outside a
// request from then on has a stream to go on.
func (t *HTTPTransport) WriteMessage(msg []byte) error {
	return t.writeOwned(bytes.Clone(msg))
}

// writeOwned is WriteMessage for a message the transport may keep: the
// engine's own, whose buffer it then never reuses (net/http may still read
// a body after its response came, so it is left to the collector).
func (t *HTTPTransport) writeOwned(body []byte) error {
	var m httpMessage // on the stack: only what the POST needs is kept
	sniffMessage(body, &m)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	if m.kind == kindNotification && m.hasVersion && m.method == "notifications/cancelled" {
		// On 2026-07-28 closing the request's stream (abortExchange) is
		// the cancellation; the notification has no place over HTTP.
		t.mu.Unlock()
		return nil
	}
	job := postJob{ctx: t.ctx, m: m.sent(), body: body, header: t.headerLocked(&m)}
	if m.kind == kindResponse {
		err := t.queueAnswerLocked(job)
		t.mu.Unlock()
		return err
	}
	if m.kind == kindRequest {
		t.modern = m.hasVersion
		job.ex = exchangePool.Get().(*exchange)
		t.exchanges[m.id] = job.ex
	}
	select {
	case t.jobs <- job: // an idle worker took it
	default:
		t.wg.Add(1)
		go t.postWorker(job)
	}
	var opened chan struct{}
	if m.kind == kindNotification && m.method == "notifications/initialized" && !t.getStarted && !t.cfg.noStandalone {
		t.getStarted = true
		opened = make(chan struct{})
		t.wg.Add(1)
		go t.standalone(opened)
	}
	t.mu.Unlock()
	if opened != nil {
		wait := time.NewTimer(t.cfg.closeTimeout)
		defer wait.Stop()
		select {
		case <-opened:
		case <-wait.C:
			t.log.Debug("the standalone SSE stream is slow to open; going on without waiting")
		case <-t.ctx.Done():
		}
	}
	return nil
}

// answersPerPost is how many answers may wait for each answer POST
// allowed at once.
const answersPerPost = 64

// queueAnswerLocked queues a response of the client's for one of the
// answer workers, of which at most cfg.answerPosts run at once, so that
// whatever a server sends, the client has only so many answers in flight.
// When the client already owes as many answers as may be in flight and
// wait, the server sends faster than it reads them: the transport fails
// with ErrTooManyAnswers and closes its exchanges.
//
// On 2026-07-28 a client sends no responses (servers send no requests, and
// a POST body is a request or a notification): one is dropped with a log
// line, whatever it answers.
func (t *HTTPTransport) queueAnswerLocked(job postJob) error {
	if t.modern {
		t.log.Debug("dropping a response: on 2026-07-28 a client sends none", "id", job.m.id.String())
		return nil
	}
	limit := t.cfg.answerPosts
	if t.owed >= limit*(1+answersPerPost) {
		err := fmt.Errorf("%w: %d answers were in flight or waiting", ErrTooManyAnswers, t.owed)
		t.log.Warn("closing the connection: the server sends more than the client can answer", "owed", t.owed)
		t.fail(err)
		t.cancel()
		return err
	}
	t.owed++
	t.answers = append(t.answers, job)
	if t.answerWorkers < limit {
		t.answerWorkers++
		t.wg.Add(1)
		go t.answerWorker()
	}
	return nil
}

// answerWorker POSTs queued answers, one at a time, until none waits or
// the transport closes.
func (t *HTTPTransport) answerWorker() {
	defer t.wg.Done()
	for {
		t.mu.Lock()
		if len(t.answers) == 0 || t.ctx.Err() != nil {
			t.owed -= len(t.answers)
			clear(t.answers)
			t.answers = t.answers[:0]
			t.answerWorkers--
			t.mu.Unlock()
			return
		}
		job := t.answers[0]
		t.answers[0] = postJob{}
		t.answers = t.answers[1:]
		t.mu.Unlock()
		t.post(job.ctx, nil, &job.m, job.body, job.header)
		t.mu.Lock()
		t.owed--
		t.mu.Unlock()
	}
}

// postJob is one POST for a worker to send.
type postJob struct {
	ctx    context.Context
	ex     *exchange // nil unless the message is a request
	m      sentMessage
	body   []byte
	header http.Header
}

// postWorkerIdle is how long a POST worker waits for the next POST before
// it ends: as long as net/http's default transport keeps an idle
// connection (IdleConnTimeout), so that calls that come in bursts with
// pauses between them find the workers of the last burst.
const postWorkerIdle = 90 * time.Second

// maxIdleConnsPerHost is how many idle connections to one server the
// default client keeps.
const maxIdleConnsPerHost = 128

// maxIdlePOSTWorkers bounds the POST workers that wait at once, as the
// default client bounds the idle connections to one server.
const maxIdlePOSTWorkers = maxIdleConnsPerHost

// postWorker sends job, then the POSTs WriteMessage hands it while it is
// idle, until it has been idle for postWorkerIdle, more than
// maxIdlePOSTWorkers others wait, or the transport closes.
func (t *HTTPTransport) postWorker(job postJob) {
	defer t.wg.Done()
	var idle *time.Timer
	for {
		t.post(job.ctx, job.ex, &job.m, job.body, job.header)
		job = postJob{}
		if t.idleWorkers.Add(1) > maxIdlePOSTWorkers {
			t.idleWorkers.Add(-1)
			if idle != nil {
				idle.Stop()
			}
			return
		}
		if idle == nil {
			idle = time.NewTimer(postWorkerIdle)
		} else {
			idle.Reset(postWorkerIdle)
		}
		select {
		case job = <-t.jobs:
			t.idleWorkers.Add(-1)
		case <-idle.C:
			t.idleWorkers.Add(-1)
			return
		case <-t.ctx.Done():
			t.idleWorkers.Add(-1)
			idle.Stop()
			return
		}
	}
}

// abortExchange abandons request id's POST: its stream is closed and
// nothing more is read from it. On 2026-07-28 that is the cancellation.
// Exchanges are aborted only under t.mu, found in t.exchanges: once
// endExchange has taken one out, nothing else reaches it, and it goes back
// to the pool.
func (t *HTTPTransport) abortExchange(id ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ex := t.exchanges[id]; ex != nil {
		delete(t.exchanges, id)
		ex.abort()
	}
}

func (t *HTTPTransport) endExchange(id ID, ex *exchange) {
	if ex == nil {
		return
	}
	t.mu.Lock()
	if t.exchanges[id] == ex {
		delete(t.exchanges, id)
	}
	t.mu.Unlock()
	ex.end()
	*ex = exchange{}
	exchangePool.Put(ex)
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

// clientStream is what a reader knows of one SSE stream of the client.
type clientStream struct {
	want     ID     // the request whose response ends the stream; zero for the GET stream
	method   string // want's method
	modern   bool
	lastID   string
	retry    time.Duration
	done     bool // want's response arrived
	progress bool // something arrived since the last (re)connection
}

func (t *HTTPTransport) post(ctx context.Context, ex *exchange, m *sentMessage, body []byte, header http.Header) {
	defer t.endExchange(m.id, ex)
	isRequest := m.kind == kindRequest
	if t.urlErr != nil {
		t.fail(errorf("bad endpoint URL: %w", t.urlErr))
		return
	}
	resp, err := t.send(ctx, ex, body, header)
	if err != nil {
		if ctx.Err() != nil || ex.aborted() {
			return // closed or aborted
		}
		t.log.Warn("HTTP POST failed", "url", t.url, "err", err)
		var authErr *AuthError
		if isRequest && t.failCall != nil && errors.As(err, &authErr) {
			t.failCall(m.id, err)
		} else if isRequest {
			t.answer(ctx, m.id, &Error{Code: CodeInternalError, Message: "HTTP POST failed: " + err.Error()})
		}
		return
	}
	t.takeResponse(ctx, ex, m, resp, header)
	resp.Body.Close()
}

// takeResponse acts on the response to a POST of m's.
func (t *HTTPTransport) takeResponse(ctx context.Context, ex *exchange, m *sentMessage, resp *http.Response, header http.Header) {
	isRequest := m.kind == kindRequest
	if sid := resp.Header.Get(headerSessionID); sid != "" && m.method == "initialize" {
		t.mu.Lock()
		t.sessionID = sid
		t.mu.Unlock()
	}
	if resp.StatusCode == http.StatusNotFound && header.Get(headerSessionID) != "" {
		t.fail(fmt.Errorf("%w (HTTP 404 to %s)", ErrSessionExpired, m.method))
		return
	}
	if resp.StatusCode/100 != 2 {
		t.httpFailure(ctx, m, resp)
		return
	}
	if !isRequest {
		return
	}
	switch mediaTypeOf(resp.Header.Get("Content-Type")) {
	case "text/event-stream":
		st := &clientStream{want: m.id, method: m.method, modern: m.modern}
		t.readEvents(ctx, resp.Body, st)
		if st.done || ctx.Err() != nil || ex.aborted() {
			return
		}
		if st.lastID != "" && !st.modern {
			if ex != nil {
				ctx = ex.withContext(ctx) // which aborting ends
			}
			t.reconnect(ctx, st)
			return
		}
		t.answer(ctx, m.id, &Error{Code: CodeInternalError, Message: "the server ended the HTTP stream of request " + m.id.String() + " before answering it"})
	case "application/json":
		// Read as it arrives: a server that announces a large body and
		// sends nothing costs no buffer of the announced size.
		data, err := readArriving(resp.Body, resp.ContentLength, int64(t.maxMsg))
		if err != nil && (ctx.Err() != nil || ex.aborted()) {
			return
		}
		if err != nil {
			msg := "reading the response: " + err.Error()
			var tooLong *http.MaxBytesError
			if errors.As(err, &tooLong) {
				msg = fmt.Sprintf("the response exceeds %d bytes", t.maxMsg)
			}
			t.answer(ctx, m.id, &Error{Code: CodeInternalError, Message: msg})
			return
		}
		t.readJSON(ctx, data, m)
	default:
		if resp.StatusCode == http.StatusAccepted {
			return // the answer comes on the GET stream
		}
		t.answer(ctx, m.id, &Error{Code: CodeInternalError, Message: fmt.Sprintf("HTTP %s with content type %q: no JSON-RPC answer", resp.Status, resp.Header.Get("Content-Type"))})
	}
}

// readJSON reads a JSON response body, one message or a batch; a
// body that does not answer the request is answered on its behalf, so that
// the call fails now rather than at its timeout.
func (t *HTTPTransport) readJSON(ctx context.Context, data []byte, m *sentMessage) {
	st := &clientStream{want: m.id, method: m.method, modern: m.modern}
	if data = trimJSONSpace(data); len(data) > 0 && data[0] == '[' {
		var items []json.RawMessage
		json.Unmarshal(data, &items)
		for _, item := range items {
			if len(item) > 0 && !t.refused(item, st) && !t.receive(ctx, t.inspect(item, st)) {
				return
			}
		}
	} else if len(data) > 0 && !t.refused(data, st) && !t.receive(ctx, t.inspect(data, st)) {
		return
	}
	if !st.done {
		t.answer(ctx, m.id, &Error{Code: CodeInternalError, Message: "the server's JSON response does not answer request " + m.id.String()})
	}
}

// httpFailure turns an HTTP error status into the JSON-RPC error of the
// request: the body's own, when it has one (a 400 with -32022 says the
// server speaks 2026-07-28 but not this revision), else one naming the
// status.
func (t *HTTPTransport) httpFailure(ctx context.Context, m *sentMessage, resp *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if m.kind != kindRequest {
		t.log.Warn("the server refused a message", "method", m.method, "status", httpStatusText(resp, data))
		return
	}
	var w wireMessage
	if json.Unmarshal(data, &w) == nil && w.Error != nil {
		t.answer(ctx, m.id, w.Error)
		return
	}
	t.answer(ctx, m.id, NewError(CodeInternalError, httpStatusText(resp, data), map[string]int{"httpStatus": resp.StatusCode}))
}

// httpStatusText says in one line what an HTTP error answer without a
// JSON-RPC error in it was: the status, and a short excerpt of the body's
// text. A proxy's error page (HTML) gives its title or its text without
// the markup, and nothing when that only repeats the status.
func httpStatusText(resp *http.Response, body []byte) string {
	const most = 120 // bytes of excerpt
	text := body
	if mediaTypeOf(resp.Header.Get("Content-Type")) == "text/html" || bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		text = htmlText(body)
	}
	excerpt := strings.Join(strings.Fields(strings.ToValidUTF8(string(text), "")), " ")
	excerpt = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, excerpt)
	if len(excerpt) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(excerpt[cut]) {
			cut--
		}
		excerpt = excerpt[:cut] + "…"
	}
	msg := "HTTP " + resp.Status
	if excerpt != "" && !strings.Contains(msg, excerpt) {
		msg += ": " + excerpt
	}
	return msg
}

// htmlText is the text of an HTML page for an error message: its title if
// it has one, else its text without tags.
func htmlText(page []byte) []byte {
	lower := bytes.ToLower(page)
	if i := bytes.Index(lower, []byte("<title")); i >= 0 {
		if j := bytes.IndexByte(lower[i:], '>'); j >= 0 {
			start := i + j + 1
			if end := bytes.Index(lower[start:], []byte("</title")); end >= 0 {
				return page[start : start+end]
			}
		}
	}
	var text []byte
	inTag := false
	for _, c := range page {
		switch {
		case c == '<':
			inTag = true
			text = append(text, ' ')
		case c == '>' && inTag:
			inTag = false
		case !inTag:
			text = append(text, c)
		}
	}
	return text
}

// readEvents reads the messages of an SSE body until it ends, want's
// response arrives, or ctx ends.
func (t *HTTPTransport) readEvents(ctx context.Context, body io.Reader, st *clientStream) {
	p := newSSEParser(body, t.maxMsg)
	for {
		ev, err := p.next()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				t.log.Debug("an SSE stream broke", "err", err)
			}
			return
		}
		if ev.hasID && ev.id != st.lastID {
			st.lastID, st.progress = ev.id, true
		}
		if ev.hasRetry {
			st.retry = ev.retry
		}
		if ev.tooLarge {
			t.log.Warn("dropping a server message larger than the limit", "limit", t.maxMsg)
			continue
		}
		if len(ev.data) == 0 || (ev.event != "" && ev.event != "message") {
			continue
		}
		st.progress = true
		if t.refused(ev.data, st) {
			continue
		}
		if !t.receive(ctx, t.inspect(ev.data, st)) {
			return
		}
		if st.done {
			return
		}
	}
}

// refused reports whether a message of st's stream is a server's request
// on 2026-07-28, where servers send none (they ask inside input_required
// results): it is dropped with a log line, unanswered and unseen by the
// client's handlers.
func (t *HTTPTransport) refused(data []byte, st *clientStream) bool {
	if !st.modern || !bytes.Contains(data, []byte(`"method"`)) {
		return false
	}
	var probe wireMessage
	if !scanEnvelope(data, &probe, false) || probe.Method == "" || len(probe.ID) == 0 || string(probe.ID) == "null" {
		return false
	}
	t.log.Debug("dropping a server request: on 2026-07-28 servers send none", "method", probe.Method)
	return true
}

// inspect watches the messages of want's stream for want's response: it
// ends the stream, and the results of initialize and tools/list teach the
// transport the negotiated revision and the tools' x-mcp-header arguments.
func (t *HTTPTransport) inspect(data []byte, st *clientStream) []byte {
	if !st.want.IsValid() {
		return data
	}
	if !bytes.Contains(data, []byte(`"id"`)) && bytes.IndexByte(data, '\\') < 0 {
		return data // a notification, without looking further
	}
	// A scan, not a decode: the engine decodes the message next.
	var probe wireMessage
	if !scanEnvelope(data, &probe, false) || probe.Method != "" {
		return data
	}
	if id, ok := parseID(probe.ID); !ok || id != st.want {
		return data
	}
	st.done = true
	if len(probe.Result) == 0 {
		return data
	}
	switch {
	case st.method == "initialize":
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(probe.Result, &res) == nil && isSupportedVersion(res.ProtocolVersion) {
			t.mu.Lock()
			t.version = res.ProtocolVersion
			t.mu.Unlock()
		}
	case st.method == "tools/list" && st.modern:
		return t.learnTools(data, probe.Result)
	}
	return data
}

// reconnect resumes a lost SSE stream with GET and Last-Event-ID, waiting
// the server's retry hint (or a backoff) before each attempt, until the
// stream's response arrives or too many attempts in a row brought nothing.
// For the standalone stream (no want) it also reconnects after a clean end.
func (t *HTTPTransport) reconnect(ctx context.Context, st *clientStream) {
	for failures := 0; failures < t.cfg.reconnects; {
		if waitFor(ctx.Done(), reconnectDelay(st.retry, failures)) {
			return
		}
		resp, err := t.get(ctx, st.lastID)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			t.log.Debug("resuming an SSE stream failed", "err", err)
			failures++
			continue
		}
		if resp.StatusCode/100 != 2 || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
			resp.Body.Close()
			t.log.Debug("the server refused to resume an SSE stream", "status", resp.Status)
			if resp.StatusCode == http.StatusConflict || resp.StatusCode/100 == 5 {
				failures++
				continue
			}
			break
		}
		st.progress = false
		t.readEvents(ctx, resp.Body, st)
		resp.Body.Close()
		if st.done || ctx.Err() != nil {
			return
		}
		if st.progress {
			failures = 0
		} else {
			failures++
		}
	}
	if st.want.IsValid() {
		t.answer(ctx, st.want, &Error{Code: CodeInternalError, Message: "lost the HTTP stream of request " + st.want.String() + " and could not resume it"})
	}
}

// reconnectDelay is the wait before attempt n to resume a stream: the
// server's retry hint, or 250ms, doubled for each failed attempt, at most
// 30s. The hint is capped before it is doubled, so a huge one cannot
// overflow into no wait at all.
func reconnectDelay(retry time.Duration, n int) time.Duration {
	const most = 30 * time.Second
	if retry <= 0 {
		retry = 250 * time.Millisecond
	}
	d := min(retry, most)
	for range min(n, 16) {
		if d >= most {
			break
		}
		d *= 2
	}
	return min(d, most)
}

// get opens a GET stream, resuming after lastID when it is set.
func (t *HTTPTransport) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	for k, v := range t.cfg.header {
		req.Header[k] = slices.Clone(v)
	}
	if t.sessionID != "" {
		req.Header.Set(headerSessionID, t.sessionID)
	}
	if t.version != "" {
		req.Header.Set(headerProtocolVersion, t.version)
	}
	t.mu.Unlock()
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	return t.client.Do(req)
}

// standalone reads the session's GET stream, for the server's messages
// that belong to no request; it closes opened once the server answered the
// GET, or it failed. The stream is optional: a server that offers none
// (405), or any failure, leaves the rest of the connection alone.
func (t *HTTPTransport) standalone(opened chan struct{}) {
	defer t.wg.Done()
	resp, err := t.get(t.ctx, "")
	close(opened)
	if err != nil {
		t.log.Debug("cannot open the standalone SSE stream", "err", err)
		return
	}
	if resp.StatusCode/100 != 2 || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		resp.Body.Close()
		t.log.Debug("the server offers no standalone SSE stream", "status", resp.Status)
		return
	}
	st := &clientStream{}
	t.readEvents(t.ctx, resp.Body, st)
	resp.Body.Close()
	t.reconnect(t.ctx, st)
}

// Close ends every exchange, ends the session with a DELETE bounded by the
// close timeout, and returns once every goroutine of the transport ended.
func (t *HTTPTransport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		sid, version := t.sessionID, t.version
		for _, ex := range t.exchanges {
			ex.abort() // under t.mu: see abortExchange
		}
		t.mu.Unlock()
		t.cancel()
		if sid != "" {
			t.endSession(sid, version)
		}
		t.wg.Wait()
	})
	return nil
}

// endSession ends the session with a DELETE bounded by the close timeout.
// A DELETE that fails for a reason not its own is sent once more: the
// connection it was to go on may be one the exchanges just aborted took
// down, which net/http reports as a cancellation.
func (t *HTTPTransport) endSession(sid, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.closeTimeout)
	defer cancel()
	for try := 1; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
		if err != nil {
			return
		}
		for k, v := range t.cfg.header {
			req.Header[k] = slices.Clone(v)
		}
		req.Header.Set(headerSessionID, sid)
		if version != "" {
			req.Header.Set(headerProtocolVersion, version)
		}
		resp, err := t.client.Do(req)
		if err == nil {
			resp.Body.Close()
			return
		}
		if try == 2 || ctx.Err() != nil {
			t.log.Debug("ending the HTTP session failed", "err", err)
			return
		}
	}
}
