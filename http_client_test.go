package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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
		ts := serveHTTP(t, newTestServer(), WithStatelessOnly())
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
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), ErrSessionExpired.Error()) {
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
		burst(16) // takes the waiting workers, and their count starts again
		time.Sleep(postWorkerIdle - time.Second)
		if n := workers(); n != was {
			t.Fatalf("%d POST workers after a second burst and a pause, want the %d of the first", n, was)
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
