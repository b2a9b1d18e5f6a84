package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recordingHandler records the JSON-RPC methods POSTed through it.
type recordingHandler struct {
	next    http.Handler
	mu      sync.Mutex
	methods []string
}

func (h *recordingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		h.mu.Lock()
		h.methods = append(h.methods, m.Method)
		h.mu.Unlock()
	}
	h.next.ServeHTTP(w, r)
}

func (h *recordingHandler) sent(method string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.methods, method)
}

// TestHTTPTimeoutAbortsExchange: a call that times out closes its POST.
// On 2026-07-28 that alone cancels the handler (its cause says so) and no
// notifications/cancelled is sent; on the older revisions the dropped
// connection is no cancellation and the client POSTs
// notifications/cancelled. It holds for POSTs through the default client
// and through a user's http.Client (cancelled through their request's
// context).
func TestHTTPTimeoutAbortsExchange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []HTTPTransportOption
	}{
		{"default client", nil},
		{"user client", []HTTPTransportOption{WithHTTPClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()})}},
	} {
		for _, v := range eras {
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				testHTTPTimeoutAbortsExchange(t, v, tc.opts)
			})
		}
	}
}

func testHTTPTimeoutAbortsExchange(t *testing.T, v string, opts []HTTPTransportOption) {
	srv, started, cancelled := blockingServer()
	rec := &recordingHandler{next: NewHTTPHandler(srv)}
	ts := httptest.NewServer(rec)
	defer ts.Close()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
	tr := NewHTTPTransport(ts.URL, opts...)
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := cl.CallTool(context.Background(), "wait", nil, WithTimeout(50*time.Millisecond))
		errc <- err
	}()
	<-started
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool = %v", err)
	}
	var cause error
	select {
	case cause = <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was never cancelled: the POST stayed open")
	}
	var peer *CancelledError
	if !errors.As(cause, &peer) {
		t.Fatalf("handler cancelled with %v, want a CancelledError", cause)
	}
	if isModernVersion(v) {
		if !strings.Contains(peer.Reason, "closed the HTTP stream") {
			t.Fatalf("cause %v", cause)
		}
		if rec.sent("notifications/cancelled") {
			t.Fatal("notifications/cancelled POSTed on 2026-07-28")
		}
	} else if !rec.sent("notifications/cancelled") || !strings.Contains(peer.Reason, "timed out") {
		t.Fatalf("legacy cancellation: sent=%v cause %v", rec.sent("notifications/cancelled"), cause)
	}
}

// TestHTTPClientFallsBackToInitialize: against servers that do not speak
// 2026-07-28 the client's probe fails over HTTP one way or another and it
// falls back to initialize.
func TestHTTPClientFallsBackToInitialize(t *testing.T) {
	t.Parallel()
	t.Run("-32022 in a 400", func(t *testing.T) {
		t.Parallel()
		cl := connectHTTP(t, newTestServer(WithProtocolVersion(Version20250618)))
		if v := cl.ProtocolVersion(); v != Version20250618 {
			t.Fatalf("negotiated %s", v)
		}
	})
	t.Run("plain 400", func(t *testing.T) {
		t.Parallel()
		h := NewHTTPHandler(newTestServer())
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") != "" || r.Header.Get("MCP-Protocol-Version") == Version20260728 {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
				return
			}
			h.ServeHTTP(w, r)
		}))
		defer ts.Close()
		cl := NewClient(Implementation{Name: "c", Version: "1"})
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if v := cl.ProtocolVersion(); v != LatestLegacyVersion {
			t.Fatalf("negotiated %s", v)
		}
	})
	t.Run("a 2026-07-28-only server refuses initialize", func(t *testing.T) {
		t.Parallel()
		ts := serveHTTP(t, newTestServer(WithProtocolVersion(Version20260728)))
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); rpcCode(err) != CodeUnsupportedProtocolVersion || !strings.Contains(err.Error(), Version20260728) {
			t.Fatalf("initialize on a stateless-only server: %v", err)
		}
		for _, method := range []string{"GET", "DELETE"} {
			if r := doHTTP(t, method, ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": "x"}); r.status != 405 {
				t.Errorf("%s on a stateless-only server: %d", method, r.status)
			}
		}
		modern := NewClient(Implementation{Name: "c", Version: "1"})
		if err := modern.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil || modern.ProtocolVersion() != Version20260728 {
			t.Fatalf("Connect = %v, version %s", err, modern.ProtocolVersion())
		}
		modern.Close()
	})
}

// TestHTTPClientSessionExpired: when the server no longer knows the
// session (404), the connection ends with ErrSessionExpired.
func TestHTTPClientSessionExpired(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	tr := NewHTTPTransport(ts.URL)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tr.mu.Lock()
	sid := tr.sessionID
	tr.mu.Unlock()
	if r := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	_, err := cl.CallTool(context.Background(), "echo", nil)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrSessionExpired) || !strings.Contains(err.Error(), "the HTTP session expired") {
		t.Fatalf("CallTool on an expired session = %v", err)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHTTPClientPOSTsAreIndependent: each POST is a request of its own,
// whole for a retry (GetBody) and with its own URL, so that a RoundTripper
// that edits one request (against its contract, but it happens) cannot
// redirect the next.
func TestHTTPClientPOSTsAreIndependent(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	var mu sync.Mutex
	var paths []string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.Method == http.MethodPost {
			if r.GetBody == nil || r.ContentLength <= 0 {
				return nil, fmt.Errorf("POST without GetBody or length: %v %d", r.GetBody == nil, r.ContentLength)
			}
			again, _ := r.GetBody()
			first, _ := io.ReadAll(again)
			body, _ := io.ReadAll(r.Body)
			if !bytes.Equal(first, body) {
				return nil, fmt.Errorf("GetBody gave %q, the body is %q", first, body)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		r.URL.Path = "/edited"
		return resp, err
	})}
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL+"/mcp", WithHTTPClient(hc), WithoutStandaloneStream())); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 3 {
		if _, err := cl.CallTool(context.Background(), "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) < 5 {
		t.Fatalf("only %d requests", len(paths))
	}
	for i, p := range paths {
		if p != "/mcp" {
			t.Fatalf("request %d went to %q, want /mcp (all: %q)", i, p, paths)
		}
	}
}

// TestHTTPClientBadEndpointURL: a URL that does not parse fails Connect
// with the parse error, instead of a timeout.
func TestHTTPClientBadEndpointURL(t *testing.T) {
	t.Parallel()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithRequestTimeout(5*time.Second))
	err := cl.Connect(context.Background(), NewHTTPTransport("http://[::1:80/mcp"))
	if err == nil || !strings.Contains(err.Error(), "bad endpoint URL") {
		t.Fatalf("Connect = %v, want the bad endpoint URL", err)
	}
}

// TestHTTPClientClose: Close ends the session with DELETE, and is bounded
// by the close timeout when the server does not answer.
func TestHTTPClientClose(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	tr := NewHTTPTransport(ts.URL)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	sid := tr.sessionID
	cl.Close()
	if r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != 404 {
		t.Fatalf("the session outlived Close: %d", r.status)
	}

	h := NewHTTPHandler(newTestServer())
	hang := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			<-hang
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer stuck.Close()
	defer close(hang)
	cl = NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(stuck.URL, WithCloseTimeout(100*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cl.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v against a server that never answers DELETE", d)
	}
}

// handlerRoundTripper serves each request with h on the calling goroutine,
// without a network: a client over it runs whole in a synctest bubble.
type handlerRoundTripper struct{ h http.Handler }

func (rt handlerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rt.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// TestHTTPPOSTWorkersOutlastAPause: the goroutines that sent a burst of
// parallel calls wait for the next burst as long as an idle connection is
// kept, then end; no more than
// maxIdlePOSTWorkers wait at once, and none outlives Close.
func TestHTTPPOSTWorkersOutlastAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHTTPHandler(newTestServer(), WithoutStandaloneStream())
		tr := NewHTTPTransport("http://mcp.test/mcp", WithHTTPClient(&http.Client{Transport: handlerRoundTripper{h}}), WithoutStandaloneStream())
		cl := NewClient(Implementation{Name: "c", Version: "1"})
		if err := cl.Connect(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		workers := func() int {
			synctest.Wait()
			return bubbleGoroutines("mcp.(*HTTPTransport).postWorker(")
		}
		burst := func(n int) {
			t.Helper()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if _, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": 1, "delayMs": 10}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
		}
		burst(16)
		if n := workers(); n < 16 {
			t.Fatalf("%d POST workers after 16 parallel calls, want at least 16", n)
		}
		was := workers()
		time.Sleep(postWorkerIdle - time.Second)
		if n := workers(); n != was {
			t.Fatalf("%d POST workers left after a pause shorter than an idle connection is kept, want %d", n, was)
		}
		burst(16) // takes 16 of the waiting workers, whose count starts again
		time.Sleep(postWorkerIdle - time.Second)
		// The first burst may have started a worker more than it had calls
		// (a POST of the session's own, at the same time); one that the
		// second burst did not take has now idled past its time.
		if n := workers(); n < 16 || n > was {
			t.Fatalf("%d POST workers after a second burst and a pause, want the 16 it took, and at most the %d of the first", n, was)
		}
		time.Sleep(2 * time.Second)
		if n := workers(); n != 0 {
			t.Fatalf("%d POST workers idle for longer than an idle connection is kept, want 0", n)
		}
		burst(maxIdlePOSTWorkers + 40)
		if n := workers(); n != maxIdlePOSTWorkers {
			t.Fatalf("%d POST workers after %d parallel calls, want maxIdlePOSTWorkers (%d)", n, maxIdlePOSTWorkers+40, maxIdlePOSTWorkers)
		}
		cl.Close()
		if n := workers(); n != 0 {
			t.Fatalf("%d POST workers outlived Close", n)
		}
	})
}

// closeRecorder is a request body that remembers being closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestHTTPPOSTBodyIsClosedOnceRead: the handler closes a POST's body once
// it has read all of it, so that net/http does not try to read on before
// answering (a discarding copy, an allocation a request); a body it could
// not read whole is left to net/http.
func TestHTTPPOSTBodyIsClosedOnceRead(t *testing.T) {
	h := NewHTTPHandler(NewServer(Implementation{Name: "s", Version: "1"}))
	post := func(body string, length int64) (*closeRecorder, int) {
		rb := &closeRecorder{Reader: strings.NewReader(body)}
		r := httptest.NewRequest("POST", "http://127.0.0.1/", rb)
		r.ContentLength = length
		for k, v := range modernHeaders("server/discover") {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return rb, w.Code
	}
	discover := modernRequest("1", "server/discover", "")
	if rb, code := post(discover, int64(len(discover))); code != 200 || !rb.closed {
		t.Errorf("a request of announced length: status %d, body closed %v", code, rb.closed)
	}
	if rb, code := post(discover[:10], int64(len(discover))); code != 400 || rb.closed {
		t.Errorf("a body shorter than announced: status %d, body closed %v", code, rb.closed)
	}
}

// hostileServer serves a real server over Streamable HTTP, except where it
// is hostile: it answers every tools/call with an SSE stream of what
// events writes, floods the standalone GET stream the same way once a call
// is under way, and counts the answers the client POSTs (bodies without a
// method), holding each until the client goes away when hold is set.
type hostileServer struct {
	next   http.Handler
	hold   bool
	events func(n int) string // the event data of the n-th event; "" ends the stream
	// floodGET: the standalone stream floods too.
	floodGET bool

	calling              chan struct{} // closed when the first tools/call arrives
	callingOnce          sync.Once
	inFlight, maxFlight  atomic.Int64
	answers, conns, sent atomic.Int64
}

func newHostileServer(srv *Server) *hostileServer {
	return &hostileServer{next: NewHTTPHandler(srv), calling: make(chan struct{})}
}

func (h *hostileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if !h.floodGET {
			h.next.ServeHTTP(w, r)
			return
		}
		h.flood(w, r, nil)
		return
	case http.MethodPost:
	default:
		h.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &m)
	switch {
	case m.Method == "":
		h.answers.Add(1)
		n := h.inFlight.Add(1)
		for {
			old := h.maxFlight.Load()
			if n <= old || h.maxFlight.CompareAndSwap(old, n) {
				break
			}
		}
		if h.hold {
			<-r.Context().Done()
		} else {
			w.WriteHeader(http.StatusAccepted)
		}
		h.inFlight.Add(-1)
	case m.Method == "tools/call":
		h.callingOnce.Do(func() { close(h.calling) })
		h.flood(w, r, m.ID)
	default:
		h.next.ServeHTTP(w, r)
	}
}

// flood writes events as an SSE stream until they end or the client goes
// away; then, for a call (id set), the call's answer.
func (h *hostileServer) flood(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	if id == nil {
		// The GET stream floods once a call is under way.
		select {
		case <-h.calling:
		case <-r.Context().Done():
			return
		}
	}
	var buf []byte
	for n := 0; ; n++ {
		data := h.events(n)
		if data != "" {
			buf = append(buf, "data: "+data+"\n\n"...)
		}
		if len(buf) > 0 && (data == "" || n%64 == 63) {
			if _, err := w.Write(buf); err != nil {
				return
			}
			fl.Flush()
			buf = buf[:0]
		}
		if data == "" {
			break
		}
		h.sent.Add(1)
	}
	if id != nil && r.Context().Err() == nil {
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[],\"resultType\":\"complete\"}}\n\n", id)
		fl.Flush()
	}
}

// garbage is the n-th of 100,000 hostile events: shapes that need no
// answer and some that do (requests, a parse error, an invalid request).
func garbage(n int) string {
	if n >= 100_000 {
		return ""
	}
	switch n % 8 {
	case 0:
		return `{}`
	case 1:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, 1_000_000+n) // an unknown id
	case 2:
		return `{"jsonrpc":"2.0","method":"notifications/whatever"}`
	case 3:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, n)
	case 4:
		return `not json`
	case 5:
		return `[1]`
	case 6:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d}`, n)
	default:
		return fmt.Sprintf(`{"id":%d,"method":7}`, n)
	}
}

// TestHTTPClientHostileFlood: a server that answers a call with 100,000
// garbage events, and floods the standalone GET stream the same way, never
// has more than the client's cap of answer POSTs in flight (it holds each
// one), and the client ends with ErrTooManyAnswers, from the call and from
// its methods after, leaving no goroutine behind.
func TestHTTPClientHostileFlood(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHostileServer(newTestServer())
	h.hold, h.floodGET, h.events = true, true, garbage
	ts := httptest.NewServer(h)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHTTPClient(hc))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := cl.CallTool(ctx, "echo", nil)
	if !errors.Is(err, ErrTooManyAnswers) || !strings.Contains(err.Error(), "more messages needing an answer than the client could answer") {
		t.Fatalf("CallTool = %v, want ErrTooManyAnswers", err)
	}
	if err := cl.Ping(ctx); !errors.Is(err, ErrTooManyAnswers) {
		t.Fatalf("Ping after = %v, want ErrTooManyAnswers", err)
	}
	cl.Close()
	ts.Close()
	hc.CloseIdleConnections()
	if m := h.maxFlight.Load(); m > DefaultMaxAnswerPosts {
		t.Fatalf("%d answer POSTs in flight at once, want at most %d", m, DefaultMaxAnswerPosts)
	}
	if n := h.answers.Load(); n > DefaultMaxAnswerPosts {
		t.Fatalf("%d answer POSTs, want at most %d (each held)", n, DefaultMaxAnswerPosts)
	}
	t.Logf("%d events sent, %d answer POSTs, at most %d at once", h.sent.Load(), h.answers.Load(), h.maxFlight.Load())
	settleGoroutines(t, before)
}

// TestHTTPClientOpenEndedRequests: a server that answers a call with an
// endless stream of pings, and each answer POST at once, gets at most the
// client's cap of answer POSTs at once over a bounded number of
// connections; the call ends with an error and no goroutine is left.
func TestHTTPClientOpenEndedRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHostileServer(newTestServer())
	h.events = func(n int) string {
		if n >= 100_000 {
			return "" // a bound for the test; the client gives up long before
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, n)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}
	ts.Start()
	const limit = 2
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHTTPClient(hc), WithMaxAnswerPosts(limit), WithoutStandaloneStream())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := cl.CallTool(ctx, "echo", nil)
	if err == nil {
		t.Fatal("CallTool succeeded")
	}
	cl.Close()
	ts.Close()
	hc.CloseIdleConnections()
	if m := h.maxFlight.Load(); m > limit {
		t.Fatalf("%d answer POSTs in flight at once, want at most %d", m, limit)
	}
	// initialize, notifications/initialized and the call, then the answers,
	// and Close's DELETE, which finds no idle connection when Close took
	// the others down with their exchanges (seen once, under load).
	if c := h.conns.Load(); c > limit+4 {
		t.Fatalf("%d connections, want at most %d", c, limit+4)
	}
	t.Logf("%d pings sent, %d answer POSTs, at most %d at once, %d connections; the call: %v", h.sent.Load(), h.answers.Load(), h.maxFlight.Load(), h.conns.Load(), err)
	settleGoroutines(t, before)
}

// TestHTTPAnswerPostsAtLimit: the transport POSTs at most its cap of
// answers at once and queues 64 more per allowed POST; one answer more
// than that fails the transport with ErrTooManyAnswers.
func TestHTTPAnswerPostsAtLimit(t *testing.T) {
	t.Parallel()
	const limit = 2
	var inFlight, maxFlight atomic.Int64
	arrived := make(chan struct{}, limit+1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that net/http notices the client going
		n := inFlight.Add(1)
		for old := maxFlight.Load(); n > old && !maxFlight.CompareAndSwap(old, n); old = maxFlight.Load() {
		}
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done() // held until the transport closes
		inFlight.Add(-1)
	}))
	defer ts.Close()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer hc.CloseIdleConnections()
	tr := NewHTTPTransport(ts.URL, WithHTTPClient(hc), WithMaxAnswerPosts(limit))
	defer tr.Close()
	for i := range limit * (1 + 64) {
		if err := tr.WriteMessage(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{}}`, i)); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	for range limit {
		<-arrived
	}
	err := tr.WriteMessage([]byte(`{"jsonrpc":"2.0","id":"one more","result":{}}`))
	if !errors.Is(err, ErrTooManyAnswers) {
		t.Fatalf("the answer past the limit: %v, want ErrTooManyAnswers", err)
	}
	if _, err := tr.ReadMessage(); !errors.Is(err, ErrTooManyAnswers) {
		t.Fatalf("ReadMessage = %v, want ErrTooManyAnswers", err)
	}
	tr.Close()
	if m := maxFlight.Load(); m != limit {
		t.Fatalf("%d answer POSTs at once, want %d", m, limit)
	}
}

// TestHTTPModernClientSendsNoResponses: on 2026-07-28 a server request is a
// protocol violation: the client drops it unanswered (its roots handler
// never runs), answers nothing else it cannot parse, and its call still
// gets its answer.
func TestHTTPModernClientSendsNoResponses(t *testing.T) {
	t.Parallel()
	h := newHostileServer(newTestServer())
	h.events = func(n int) string {
		return [...]string{`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`, `{"jsonrpc":"2.0","id":"s2","method":"ping"}`, `not json`, `{"id":3,"method":7}`, ""}[n]
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	listed := make(chan struct{}, 1)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20260728),
		WithRootsHandler(func(context.Context) ([]Root, error) {
			listed <- struct{}{}
			return nil, nil
		}))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if n := h.answers.Load(); n != 0 {
		t.Fatalf("the client POSTed %d responses on 2026-07-28", n)
	}
	select {
	case <-listed:
		t.Fatal("the roots handler ran for a 2026-07-28 server request")
	default:
	}
}

// signalBody reports its first Read on reading, then reads on.
type signalBody struct {
	io.ReadCloser
	once    sync.Once
	reading chan<- struct{}
}

func (b *signalBody) Read(p []byte) (int, error) {
	b.once.Do(func() { b.reading <- struct{}{} })
	return b.ReadCloser.Read(p)
}

// TestHTTPClientAnnouncedResponsesCostNothing: a server that answers calls
// with headers announcing a body of the client's whole message cap and then
// sends nothing costs the client no buffer of that size: the body is read
// as it arrives.
func TestHTTPClientAnnouncedResponsesCostNothing(t *testing.T) {
	const calls = 20
	real := NewHTTPHandler(newTestServer())
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "" {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(DefaultMaxMessageSize))
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		real.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer close(release)
	reading := make(chan struct{}, calls)
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && resp.ContentLength == DefaultMaxMessageSize {
			resp.Body = &signalBody{ReadCloser: resp.Body, reading: reading}
		}
		return resp, err
	})}
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHTTPClient(hc), WithoutStandaloneStream())); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { cl.CallTool(ctx, "echo", map[string]any{"text": "x"}) })
	}
	for range calls {
		<-reading
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	cancel()
	wg.Wait()
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Fatalf("%d responses announcing %d bytes and sending none grew the heap by %d bytes", calls, DefaultMaxMessageSize, grew)
	}
}

// A server's SSE retry hint is at most 2^31-1 ms; doubled for each failed
// reconnect it once overflowed into a negative wait, and the client
// reconnected in a tight loop.
func TestReconnectDelayBounded(t *testing.T) {
	for _, retry := range []time.Duration{0, -time.Second, time.Millisecond, (1<<31 - 1) * time.Millisecond} {
		prev := time.Duration(0)
		for n := range 40 {
			d := reconnectDelay(retry, n)
			if d <= 0 || d > 30*time.Second || d < prev {
				t.Fatalf("reconnectDelay(%v, %d) = %v after %v: want a wait in (0, 30s] that never shrinks", retry, n, d, prev)
			}
			prev = d
		}
	}
}

// TestHTTPErrorStatusOneLine: an HTTP error answer that carries no JSON-RPC
// error, like a proxy's error page, fails the call with one short line:
// the status and at most a plain excerpt, never the page; a JSON-RPC error
// body is still the call's error.
func TestHTTPErrorStatusOneLine(t *testing.T) {
	t.Parallel()
	nginxPage := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n" + strings.Repeat("<!-- padding -->\r\n", 6)
	for _, tc := range []struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		{502, "text/html", nginxPage, ": HTTP 502 Bad Gateway (code -32603"},
		{504, "text/html", "<html><body><h1>Gateway\n  Timeout</h1><p>The upstream\tserver did not answer in time.</p></body></html>", ": HTTP 504 Gateway Timeout: Gateway Timeout The upstream server did not answer in time. (code -32603"},
		{503, "text/plain", "overloaded,\nretry later\n" + strings.Repeat("x", 500), ": HTTP 503 Service Unavailable: overloaded, retry later " + strings.Repeat("x", 120-len("overloaded, retry later ")) + "… (code -32603"},
		{400, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad arguments"}}`, ": bad arguments (code -32602)"},
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.contentType)
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}))
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20260728))
		err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL))
		cl.Close()
		ts.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\r\n<") || len(err.Error()) > 300 {
			t.Errorf("HTTP %d with %s: %v, want one line with %q", tc.status, tc.contentType, err, tc.want)
		}
	}
}
