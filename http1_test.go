package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The tests of http1Transport, the HTTP/1.1 client of the default
// http.Client. Most talk to a real server on 127.0.0.1: an httptest server
// whose listener counts the connections it accepts (h1Serve), or a raw TCP
// server that answers with bytes written by hand (h1RawServer).

// h1Listener counts the connections its server accepts.
type h1Listener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *h1Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// h1Serve serves h on 127.0.0.1 until the test ends, counting the
// connections accepted.
func h1Serve(t testing.TB, h http.Handler) (*httptest.Server, *h1Listener) {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ln := &h1Listener{Listener: ts.Listener}
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, ln
}

// h1NoFallback is a fallback that must not be used: the request should
// have gone over the transport's own connections.
type h1NoFallback struct{ t testing.TB }

func (f h1NoFallback) RoundTrip(req *http.Request) (*http.Response, error) {
	f.t.Errorf("%s %s went to the fallback", req.Method, req.URL)
	return nil, errors.New("no fallback in this test")
}

// h1New returns an http1Transport with no usable fallback; its idle
// connections are closed when the test ends, before its servers are.
func h1New(t testing.TB) *http1Transport {
	tr := newHTTP1Transport(h1NoFallback{t}, 64)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// h1Do sends method url with body through rt and returns the response and
// its whole body, closed.
func h1Do(t testing.TB, rt http.RoundTripper, method, url, body string) (*http.Response, string) {
	t.Helper()
	return h1DoCtx(context.Background(), t, rt, method, url, body)
}

// h1Guard is a context that ends a request after 10 s: a failure guard for
// tests where a wrong framing of a response would wait for bytes that
// never come.
func h1Guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// h1DoCtx is h1Do with a request context.
func h1DoCtx(ctx context.Context, t testing.TB, rt http.RoundTripper, method, url, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp, string(b)
}

// h1Wait receives from ch, failing the test after 10 s.
func h1Wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// h1Got is a request as a raw server read it.
type h1Got struct {
	req  *http.Request
	body string
	raw  string // the request's bytes on the wire, head and body
}

// h1Raw is a TCP server on 127.0.0.1 that answers each request with the
// bytes its reply function returns, written as they are.
type h1Raw struct {
	url      string
	accepted atomic.Int32
	requests atomic.Int32  // read whole
	hungUp   chan struct{} // a value each time it closed a connection after a reply
	ends     chan error    // a value each time a client's connection ended: why reading stopped
}

// h1RawServer starts an h1Raw that answers each request with reply's
// answer, and closes the connection after it when hangUp. It stops when
// the test ends.
func h1RawServer(t testing.TB, reply func(got h1Got) (answer string, hangUp bool)) *h1Raw {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1Raw{url: "http://" + ln.Addr().String(), hungUp: make(chan struct{}, 256), ends: make(chan error, 256)}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	serve := func(c net.Conn) {
		defer wg.Done()
		defer c.Close()
		var wire bytes.Buffer
		br := bufio.NewReader(io.TeeReader(c, &wire))
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				s.ends <- err
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				s.ends <- err
				return
			}
			s.requests.Add(1)
			// The client sends nothing more before the answer: what was
			// read is this request.
			answer, hangUp := reply(h1Got{req: req, body: string(body), raw: wire.String()})
			wire.Reset()
			if answer != "" {
				if _, err := io.WriteString(c, answer); err != nil {
					s.ends <- err
					return
				}
			}
			if hangUp {
				c.Close()
				s.hungUp <- struct{}{}
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// h1OK is a small kept-alive response.
const h1OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// h1Conn is a client connection that reports whether the transport closed
// it. It hides the socket, so that the transport cannot peek at it to see
// that the server closed it: the transport's own decision to keep it or
// not is what counts.
type h1Conn struct {
	net.Conn
	closed     atomic.Bool
	failWrites atomic.Bool // writes fail, and nothing goes out
}

func (c *h1Conn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (c *h1Conn) Write(p []byte) (int, error) {
	if c.failWrites.Load() {
		return 0, errors.New("write: connection reset by peer (h1Conn)")
	}
	return c.Conn.Write(p)
}

// h1Dialer replaces a transport's dial, keeping the connections it made.
type h1Dialer struct {
	mu    sync.Mutex
	conns []*h1Conn
}

func (d *h1Dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &h1Conn{Conn: nc}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

func (d *h1Dialer) dialed() []*h1Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.conns)
}

// h1EchoHandler answers a request with its body, or its query when it has
// none, with a Content-Length.
func h1EchoHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) == 0 {
		body = []byte(r.URL.RawQuery)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// TestHTTP1KeepsTheConnectionAlive: sequential GETs and POSTs, small and
// larger than the transport's buffers, come back whole over one
// connection; so do responses of Content-Length: 0, 204 No Content and
// HEAD, which have no body to read.
func TestHTTP1KeepsTheConnectionAlive(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", h1EchoHandler)
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/head", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "12345") // and no body: it answers HEAD
	})
	ts, ln := h1Serve(t, mux)
	tr := h1New(t)
	client := &http.Client{Transport: tr}

	for i := range 30 {
		if i%3 == 0 {
			q := fmt.Sprintf("get=%d", i)
			if _, got := h1Do(t, tr, "GET", ts.URL+"/echo?"+q, ""); got != q {
				t.Fatalf("GET %d: body %q, want %q", i, got, q)
			}
			continue
		}
		body := fmt.Sprintf("post %d:", i) + strings.Repeat(string(rune('a'+i%26)), i*i*37) // up to 31 KB
		resp, err := client.Post(ts.URL+"/echo", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != body || resp.ContentLength != int64(len(body)) {
			t.Fatalf("POST %d: %d bytes (ContentLength %d), %v; want the %d sent", i, len(got), resp.ContentLength, err, len(body))
		}
	}
	for range 3 {
		resp, body := h1Do(t, tr, "GET", ts.URL+"/empty", "")
		if resp.StatusCode != 200 || body != "" || resp.ContentLength != 0 {
			t.Fatalf("/empty: %d %q ContentLength %d", resp.StatusCode, body, resp.ContentLength)
		}
		resp, body = h1Do(t, tr, "POST", ts.URL+"/nocontent", "x")
		if resp.StatusCode != http.StatusNoContent || body != "" {
			t.Fatalf("/nocontent: %d %q", resp.StatusCode, body)
		}
		resp, body = h1Do(t, tr, "HEAD", ts.URL+"/head", "")
		if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != "12345" {
			t.Fatalf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
		}
	}
	if _, got := h1Do(t, tr, "GET", ts.URL+"/echo?last", ""); got != "last" {
		t.Fatalf("last GET: %q", got)
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Fatalf("%d connections dialed, want 1", n)
	}
}

// TestHTTP1ReadsChunkedBodies: a chunked body flushed in pieces (one
// larger than the transport's buffer) and one with a trailer are read
// whole, and the connection serves the next requests.
func TestHTTP1ReadsChunkedBodies(t *testing.T) {
	t.Parallel()
	pieces := []string{"first,", strings.Repeat("b", 10000) + ",", "", "third,", "last"}
	mux := http.NewServeMux()
	mux.HandleFunc("/flushed", func(w http.ResponseWriter, r *http.Request) {
		for _, p := range pieces {
			io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/trailer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "with a trailer")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Checksum", "abc123")
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })
	ts, ln := h1Serve(t, mux)
	tr := h1New(t)
	for i := range 3 {
		resp, body := h1Do(t, tr, "GET", ts.URL+"/flushed", "")
		if body != strings.Join(pieces, "") {
			t.Fatalf("%d: /flushed: %d bytes, want %d", i, len(body), len(strings.Join(pieces, "")))
		}
		if !slices.Equal(resp.TransferEncoding, []string{"chunked"}) || resp.ContentLength != -1 {
			t.Fatalf("%d: /flushed: TransferEncoding %q, ContentLength %d: not read as chunked", i, resp.TransferEncoding, resp.ContentLength)
		}
		resp, body = h1Do(t, tr, "GET", ts.URL+"/trailer", "")
		if body != "with a trailer" || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
			t.Fatalf("%d: /trailer: %q, TransferEncoding %q", i, body, resp.TransferEncoding)
		}
		if _, body = h1Do(t, tr, "GET", ts.URL+"/plain", ""); body != "plain" {
			t.Fatalf("%d: /plain after chunked bodies: %q", i, body)
		}
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Fatalf("%d connections dialed, want 1", n)
	}
}

// TestHTTP1RedialsWhenTheServerClosedAnIdleConnection: a kept-alive
// connection the server has closed since its last response is not used:
// the next request goes on a new connection and succeeds, and each POST
// reaches its handler exactly once.
func TestHTTP1RedialsWhenTheServerClosedAnIdleConnection(t *testing.T) {
	t.Parallel()
	t.Run("httptest CloseClientConnections", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		seen := map[string]int{}
		ts, ln := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen[string(body)]++
			mu.Unlock()
			w.Write(body)
		}))
		tr := h1New(t)
		for i := range 5 {
			body := fmt.Sprintf("post %d", i)
			if _, got := h1Do(t, tr, "POST", ts.URL, body); got != body {
				t.Fatalf("POST %d: %q", i, got)
			}
			ts.CloseClientConnections()
		}
		if n := ln.accepted.Load(); n != 5 {
			t.Errorf("%d connections dialed for 5 requests with the server closing each, want 5", n)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range 5 {
			if n := seen[fmt.Sprintf("post %d", i)]; n != 1 {
				t.Errorf("POST %d reached the handler %d times, want 1", i, n)
			}
		}
	})
	t.Run("server hangs up after each response", func(t *testing.T) {
		t.Parallel()
		srv := h1RawServer(t, func(got h1Got) (string, bool) {
			return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(got.body)) + "\r\n\r\n" + got.body, true
		})
		tr := h1New(t)
		for i := range 5 {
			body := fmt.Sprintf("post %d", i)
			if _, got := h1Do(t, tr, "POST", srv.url, body); got != body {
				t.Fatalf("POST %d: %q", i, got)
			}
			h1Wait(t, srv.hungUp, "the server to hang up")
		}
		if n, m := srv.accepted.Load(), srv.requests.Load(); n != 5 || m != 5 {
			t.Errorf("%d connections, %d requests received; want 5 and 5", n, m)
		}
	})
}

// TestHTTP1DoesNotResendAnUnansweredPOST: a POST the server read and then
// closed the connection on, without a response, fails and is not sent
// again, on a new connection as on a kept-alive one.
func TestHTTP1DoesNotResendAnUnansweredPOST(t *testing.T) {
	t.Parallel()
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprint("kept-alive=", warm), func(t *testing.T) {
			t.Parallel()
			var posts atomic.Int32
			srv := h1RawServer(t, func(got h1Got) (string, bool) {
				if got.req.Method == "POST" {
					posts.Add(1)
					return "", true // no response
				}
				return h1OK, false
			})
			tr := h1New(t)
			if warm {
				h1Do(t, tr, "GET", srv.url, "")
			}
			req, _ := http.NewRequest("POST", srv.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("a POST answered by a closed connection succeeded: %d", resp.StatusCode)
			}
			if n := posts.Load(); n != 1 {
				t.Fatalf("the POST reached the server %d times, want 1 (err %v)", n, err)
			}
			if n := srv.accepted.Load(); n != 1 {
				t.Fatalf("%d connections, want 1", n)
			}
		})
	}
}

// TestHTTP1ResendsWhatAKeptAliveConnectionFailedToSend: a request that a
// kept-alive connection fails to take, none of it written, goes once more
// on a new connection, its body read again through GetBody, and reaches
// the server once; one whose body cannot be read again fails, and reaches
// it not at all.
func TestHTTP1ResendsWhatAKeptAliveConnectionFailedToSend(t *testing.T) {
	t.Parallel()
	for _, rewindable := range []bool{true, false} {
		t.Run(fmt.Sprint("GetBody=", rewindable), func(t *testing.T) {
			t.Parallel()
			var posts atomic.Int32
			srv := h1RawServer(t, func(got h1Got) (string, bool) {
				if got.req.Method == "POST" {
					posts.Add(1)
				}
				return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(got.body)) + "\r\n\r\n" + got.body, false
			})
			tr := h1New(t)
			var d h1Dialer
			tr.dial = d.dial
			h1Do(t, tr, "GET", srv.url, "")
			d.dialed()[0].failWrites.Store(true) // as if the server had reset it
			req, _ := http.NewRequestWithContext(h1Guard(t), "POST", srv.url, strings.NewReader("payload"))
			if !rewindable {
				req.GetBody = nil
			}
			resp, err := tr.RoundTrip(req)
			if rewindable {
				if err != nil {
					t.Fatalf("not sent again: %v", err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "payload" || err != nil {
					t.Fatalf("the server got %q (%v), want the whole body", b, err)
				}
			} else if err == nil {
				resp.Body.Close()
				t.Fatalf("a body that cannot be read again was sent again: %d", resp.StatusCode)
			}
			want := int32(0)
			if rewindable {
				want = 1
			}
			if n := posts.Load(); n != want {
				t.Fatalf("the POST reached the server %d times, want %d", n, want)
			}
			if n := len(d.dialed()); n != 1+int(want) {
				t.Fatalf("%d connections dialed, want %d", n, 1+want)
			}
		})
	}
}

// TestHTTP1DoesNotResendAPartlySentPOST: a POST whose head reached the
// server before the connection broke under its body (the server read the
// head and closed, resetting the rest) fails and is not sent again, even
// from a kept-alive connection: only a request none of which went out may
// go again, as with net/http.
func TestHTTP1DoesNotResendAPartlySentPOST(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var heads atomic.Int32
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.Method == "POST" {
						heads.Add(1)
						return // the body unread: the close resets it
					}
					io.WriteString(c, h1OK)
				}
			})
		}
	})
	tr := h1New(t) // closes its connections before the server waits for them
	url := "http://" + ln.Addr().String()
	h1Do(t, tr, "GET", url, "")
	// More than the sockets' buffers hold: the write fails.
	req, _ := http.NewRequestWithContext(h1Guard(t), "POST", url, bytes.NewReader(make([]byte, 32<<20)))
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a POST the server reset: %d, no error", resp.StatusCode)
	}
	if n := heads.Load(); n != 1 {
		t.Fatalf("the POST reached the server %d times, want 1", n)
	}
}

// TestHTTP1CancelUnblocks: cancelling a request's context ends it promptly
// with context.Canceled, while the server has not answered and while a
// never-ending (SSE) body is being read; its connection is not used again.
func TestHTTP1CancelUnblocks(t *testing.T) {
	t.Parallel()
	newServer := func(t *testing.T) (*httptest.Server, *h1Listener, chan struct{}) {
		arrived := make(chan struct{}, 1)
		quit := make(chan struct{}) // lets the handlers end when the test failed
		wait := func(r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-quit:
			}
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body) // so that net/http watches for the client's close
			arrived <- struct{}{}
			wait(r)
		})
		mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			wait(r)
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		ts, ln := h1Serve(t, mux)
		t.Cleanup(func() { close(quit) }) // before ts.Close
		return ts, ln, arrived
	}
	// After the cancelled request, a request must dial: the cancelled one
	// reused the first connection and must have dropped it.
	checkRedial := func(t *testing.T, tr *http1Transport, ts *httptest.Server, ln *h1Listener) {
		t.Helper()
		if _, body := h1Do(t, tr, "GET", ts.URL, ""); body != "ok" {
			t.Fatalf("after the cancelled request: %q", body)
		}
		if n := ln.accepted.Load(); n != 2 {
			t.Fatalf("%d connections dialed, want 2: one before the cancelled request, one after", n)
		}
	}
	t.Run("waiting for the response", func(t *testing.T) {
		t.Parallel()
		ts, ln, arrived := newServer(t)
		tr := h1New(t)
		h1Do(t, tr, "GET", ts.URL, "")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/hang", strings.NewReader("call"))
		errc := make(chan error, 1)
		go func() {
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("a response: %d", resp.StatusCode)
			}
			errc <- err
		}()
		h1Wait(t, arrived, "the request to reach the handler")
		cancel()
		if err := h1Wait(t, errc, "the cancelled request to return"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request: %v, want context.Canceled", err)
		}
		checkRedial(t, tr, ts, ln)
	})
	t.Run("reading an endless body", func(t *testing.T) {
		t.Parallel()
		ts, ln, _ := newServer(t)
		tr := h1New(t)
		h1Do(t, tr, "GET", ts.URL, "")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/stream", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); line != "data: one\n" || err != nil {
			t.Fatalf("first event: %q %v", line, err)
		}
		br.ReadString('\n')
		errc := make(chan error, 1)
		go func() {
			_, err := br.ReadString('\n')
			errc <- err
		}()
		cancel()
		if err := h1Wait(t, errc, "the read to end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("read after cancel: %v, want context.Canceled", err)
		}
		resp.Body.Close()
		checkRedial(t, tr, ts, ln)
	})
}

// TestHTTP1ClosingABodyEarlyDropsTheConnection: a body closed before its
// end, with a Content-Length or chunked, takes its connection with it: the
// transport closes it, and the next request dials; a body read to its end
// leaves it for the next request.
func TestHTTP1ClosingABodyEarlyDropsTheConnection(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KB
	mux := http.NewServeMux()
	mux.HandleFunc("/length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		io.WriteString(w, big)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(big); i += 32 << 10 {
			io.WriteString(w, big[i:i+32<<10])
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	for _, path := range []string{"/length", "/chunked"} {
		for _, whole := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s read whole=%v", path, whole), func(t *testing.T) {
				t.Parallel()
				ts, ln := h1Serve(t, mux)
				tr := h1New(t)
				var d h1Dialer
				tr.dial = d.dial
				req, _ := http.NewRequest("GET", ts.URL+path, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if whole {
					if b, err := io.ReadAll(resp.Body); string(b) != big || err != nil {
						t.Fatalf("%d bytes, %v", len(b), err)
					}
				} else {
					if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
						t.Fatal(err)
					}
				}
				resp.Body.Close()
				if closed := d.dialed()[0].closed.Load(); closed == whole {
					t.Errorf("connection closed by the transport: %v, want %v", closed, !whole)
				}
				if _, body := h1Do(t, tr, "GET", ts.URL, ""); body != "ok" {
					t.Fatalf("next request: %q", body)
				}
				want := int32(1)
				if !whole {
					want = 2
				}
				if n := ln.accepted.Load(); n != want {
					t.Fatalf("%d connections dialed, want %d", n, want)
				}
			})
		}
	}
}

// TestHTTP1ConnectionsNotKept: a body delimited by the end of the
// connection is read to that end; it, a response with Connection: close
// and an HTTP/1.0 response close their connection once read, and the next
// request dials a new one; a plain HTTP/1.1 response keeps it.
func TestHTTP1ConnectionsNotKept(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path, answer string
		hangUp       bool
		body         string
		keep         bool
	}{
		{"/keep", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkeep", false, "keep", true},
		{"/until-close", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the server closes", true, "read until the server closes", false},
		{"/connection-close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nclose", false, "close", false},
		{"/connection-close-list", "HTTP/1.1 200 OK\r\nConnection: x-other, Close\r\nContent-Length: 5\r\n\r\nclose", false, "close", false},
		{"/http10", "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhttp10", false, "http10", false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			srv := h1RawServer(t, func(got h1Got) (string, bool) {
				if got.req.URL.Path == c.path {
					return c.answer, c.hangUp
				}
				return "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext", false
			})
			tr := h1New(t)
			var d h1Dialer
			tr.dial = d.dial
			resp, body := h1DoCtx(h1Guard(t), t, tr, "GET", srv.url+c.path, "")
			if body != c.body {
				t.Fatalf("body %q, want %q", body, c.body)
			}
			if resp.Close == c.keep {
				t.Errorf("resp.Close = %v, want %v", resp.Close, !c.keep)
			}
			if closed := d.dialed()[0].closed.Load(); closed == c.keep {
				t.Errorf("connection closed by the transport after the body: %v, want %v", closed, !c.keep)
			}
			if _, body := h1Do(t, tr, "GET", srv.url+"/next", ""); body != "next" {
				t.Fatalf("next request: %q", body)
			}
			want := 2
			if c.keep {
				want = 1
			}
			if n := len(d.dialed()); n != want {
				t.Fatalf("%d connections dialed, want %d", n, want)
			}
		})
	}
}

// TestHTTP1SkipsInformationalResponses: 100 Continue and 103 Early Hints
// before the response are passed over, their headers with them, and the
// connection is kept; 101 Switching Protocols is an error, after which the
// transport still works.
func TestHTTP1SkipsInformationalResponses(t *testing.T) {
	t.Parallel()
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		switch got.req.URL.Path {
		case "/informational":
			return "HTTP/1.1 100 Continue\r\n\r\n" +
				"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nX-Final: yes\r\nContent-Length: 5\r\n\r\nfinal", false
		case "/switch":
			// What follows is another protocol's, whatever it looks like.
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n" + h1OK, false
		}
		return h1OK, false
	})
	tr := h1New(t)
	ctx := h1Guard(t)
	for range 2 {
		resp, body := h1DoCtx(ctx, t, tr, "POST", srv.url+"/informational", "x")
		if resp.StatusCode != 200 || body != "final" || resp.Header.Get("X-Final") != "yes" || resp.Header.Get("Link") != "" {
			t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.url+"/switch", nil)
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("101 Switching Protocols: %d, no error", resp.StatusCode)
	}
	if _, body := h1Do(t, tr, "GET", srv.url+"/", ""); body != "ok" {
		t.Fatalf("after 101: %q", body)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: the one 101 came on is not used again", n)
	}
}

// TestHTTP1RejectsMalformedResponses: a response that is not well-formed
// HTTP/1.1 (status line, header lines, a head over maxHeaderBytes,
// Content-Length, Transfer-Encoding, a truncated head) fails its request,
// or the read of its body, and its connection is dropped; the transport
// serves the next request on a new connection. A header line longer than
// the transport's buffer but within maxHeaderBytes is fine.
func TestHTTP1RejectsMalformedResponses(t *testing.T) {
	t.Parallel()
	const maxHead = 8 << 10
	hints := "HTTP/1.1 103 Early Hints\r\nLink: " + strings.Repeat("l", 3<<10) + "\r\n\r\n"
	cases := []struct {
		name, answer string
		hangUp       bool
		inBody       bool // the head is fine, reading the body fails
		resent       bool // the GET goes again, on a new connection, as net/http does
	}{
		{name: "not HTTP", answer: "SSH-2.0-OpenSSH_9.6\r\n\r\n"},
		{name: "HTTP/2.0", answer: "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{name: "no status code", answer: "HTTP/1.1 OK\r\nContent-Length: 2\r\n\r\nok"},
		{name: "status code not a number", answer: "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok"},
		{name: "status code of 4 digits", answer: "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"},
		{name: "status code under 100", answer: "HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok"},
		{name: "header line without colon", answer: "HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nok"},
		{name: "space before the colon", answer: "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok"},
		{name: "empty header name", answer: "HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 2\r\n\r\nok"},
		{name: "folded header line", answer: "HTTP/1.1 200 OK\r\nX-A: 1\r\n  continued\r\nContent-Length: 2\r\n\r\nok"},
		{name: "head over maxHeaderBytes", answer: "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", maxHead) + "\r\nContent-Length: 2\r\n\r\nok"},
		{name: "heads over maxHeaderBytes with 1xx", answer: hints + hints + hints + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{name: "Content-Length not a number", answer: "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok"},
		{name: "negative Content-Length", answer: "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok"},
		{name: "empty Content-Length", answer: "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nok"},
		{name: "Content-Length list", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok"},
		{name: "conflicting Content-Lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"},
		{name: "Transfer-Encoding gzip", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok"},
		{name: "Transfer-Encoding gzip, chunked", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
		{name: "Transfer-Encoding twice", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"},
		{name: "Transfer-Encoding identity", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok"},
		{name: "head cut short", answer: "HTTP/1.1 200 OK\r\nContent-Le", hangUp: true},
		{name: "no response", hangUp: true, resent: true},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", inBody: true},
		{name: "body cut short", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", hangUp: true, inBody: true},
		{name: "chunked body cut short", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nshort\r\n", hangUp: true, inBody: true},
	}
	byName := map[string]int{}
	for i, c := range cases {
		byName[c.name] = i
	}
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		if name := got.req.URL.Query().Get("case"); name != "" {
			c := cases[byName[name]]
			return c.answer, c.hangUp
		}
		if got.req.URL.Path == "/long-header" {
			return "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("y", 6<<10) + "\r\nContent-Length: 2\r\n\r\nok", false
		}
		return h1OK, false
	})
	tr := h1New(t)
	tr.maxHeaderBytes = maxHead
	// Connections that hide their socket: the transport cannot see that
	// one has bytes left over, it has to know not to use it again.
	var d h1Dialer
	tr.dial = d.dial
	ctx := h1Guard(t)
	resp, _ := h1DoCtx(ctx, t, tr, "GET", srv.url+"/long-header", "")
	if len(resp.Header.Get("X-Long")) != 6<<10 {
		t.Fatalf("a 6 KB header line within maxHeaderBytes: %d bytes", len(resp.Header.Get("X-Long")))
	}
	// Sequential: each case takes the idle connection of the request
	// before, and must leave the next request to dial.
	for _, c := range cases {
		accepted := srv.accepted.Load()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.url+"/?case="+url.QueryEscape(c.name), nil)
		resp, err := tr.RoundTrip(req)
		if c.inBody {
			if err != nil {
				t.Errorf("%s: %v, want the head read", c.name, err)
				continue
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				t.Errorf("%s: body %q read without error", c.name, b)
			}
		} else if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: no error: %d %v %q", c.name, resp.StatusCode, resp.Header, b)
		}
		if _, body := h1DoCtx(ctx, t, tr, "GET", srv.url+"/after", ""); body != "ok" {
			t.Fatalf("%s: the next request: %q", c.name, body)
		}
		want := int32(1)
		if c.resent {
			want = 2
		}
		if n := srv.accepted.Load(); n != accepted+want {
			t.Errorf("%s: %d connections dialed for it and the next request, want %d: the broken one is not used again", c.name, n-accepted, want)
		}
	}
}

// h1Recorder is a fallback that answers 299 to every request and keeps
// them.
type h1Recorder struct {
	mu        sync.Mutex
	reqs      []*http.Request
	closeIdle int // calls of CloseIdleConnections
}

func (f *h1Recorder) CloseIdleConnections() {
	f.mu.Lock()
	f.closeIdle++
	f.mu.Unlock()
}

func (f *h1Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return &http.Response{StatusCode: 299, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestHTTP1SendsWhatItCannotCarryToTheFallback: https, bodies of unknown
// length, requests asking to close their connection, CONNECT, chunked
// request bodies and trailers, and hosts the proxy function sends through
// a proxy (or fails for) go to the fallback and never to the network; a
// plain request to a host without a proxy does not. CloseIdleConnections
// reaches the fallback too.
func TestHTTP1SendsWhatItCannotCarryToTheFallback(t *testing.T) {
	t.Parallel()
	ts, ln := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	direct := ts.Listener.Addr().String()
	var fallback h1Recorder
	tr := newHTTP1Transport(&fallback, 4)
	t.Cleanup(tr.CloseIdleConnections)
	tr.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != direct {
			t.Errorf("dialed %s", addr)
			return nil, errors.New("no network in this test")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr.proxy = func(req *http.Request) (*url.URL, error) {
		switch req.URL.Hostname() {
		case "proxied.example":
			return url.Parse("http://proxy.example:3128")
		case "misconfigured.example":
			return nil, errors.New("bad proxy setting")
		}
		return nil, nil
	}
	newReq := func(method, u string, body io.Reader) *http.Request {
		req, err := http.NewRequest(method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	unknownLength := newReq("POST", "http://direct.example/", io.NopCloser(strings.NewReader("abc")))
	unknownLength.ContentLength = -1
	zeroWithBody := newReq("POST", "http://direct.example/", io.NopCloser(strings.NewReader("abc")))
	zeroWithBody.ContentLength = 0
	closing := newReq("GET", "http://direct.example/", nil)
	closing.Close = true
	chunked := newReq("POST", "http://direct.example/", strings.NewReader("abc"))
	chunked.TransferEncoding = []string{"chunked"}
	trailer := newReq("POST", "http://direct.example/", strings.NewReader("abc"))
	trailer.Trailer = http.Header{"X-Sum": nil}
	for name, req := range map[string]*http.Request{
		"https":                      newReq("POST", "https://direct.example/mcp", strings.NewReader("{}")),
		"unknown body length":        unknownLength,
		"body of ContentLength 0":    zeroWithBody,
		"req.Close":                  closing,
		"CONNECT":                    newReq("CONNECT", "http://direct.example:443", nil),
		"chunked request body":       chunked,
		"request trailer":            trailer,
		"host behind a proxy":        newReq("POST", "http://proxied.example/mcp", strings.NewReader("{}")),
		"proxy function fails":       newReq("GET", "http://misconfigured.example/", nil),
		"host behind a proxy, again": newReq("GET", "http://proxied.example/other", nil),
	} {
		fallback.mu.Lock()
		before := len(fallback.reqs)
		fallback.mu.Unlock()
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 299 {
			t.Errorf("%s: %v %v, want the fallback's 299", name, resp, err)
			continue
		}
		fallback.mu.Lock()
		if len(fallback.reqs) != before+1 || fallback.reqs[before] != req {
			t.Errorf("%s: the fallback did not get the request", name)
		}
		fallback.mu.Unlock()
	}
	if _, body := h1Do(t, tr, "GET", ts.URL, ""); body != "direct" || ln.accepted.Load() != 1 {
		t.Fatalf("a host without a proxy: %q over %d connections", body, ln.accepted.Load())
	}
	tr.CloseIdleConnections()
	fallback.mu.Lock()
	defer fallback.mu.Unlock()
	if n := len(fallback.reqs); n != 10 {
		t.Fatalf("the fallback got %d requests, want 10", n)
	}
	if fallback.closeIdle == 0 {
		t.Fatal("CloseIdleConnections did not reach the fallback")
	}
}

// TestHTTP1SharesTheFallbacksDialerAndProxy: given an *http.Transport as
// fallback, the transport dials with its DialContext, and requests to a
// host its Proxy names a proxy for go through that proxy.
func TestHTTP1SharesTheFallbacksDialerAndProxy(t *testing.T) {
	t.Parallel()
	t.Run("DialContext", func(t *testing.T) {
		t.Parallel()
		ts, ln := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host "+r.Host) }))
		var dials atomic.Int32
		fallback := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != "mcp.invalid:80" {
				t.Errorf("dialing %s", addr)
			}
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, ts.Listener.Addr().String())
		}}
		tr := newHTTP1Transport(fallback, 4)
		t.Cleanup(tr.CloseIdleConnections)
		for range 3 {
			if _, body := h1Do(t, tr, "POST", "http://mcp.invalid/mcp", "{}"); body != "host mcp.invalid" {
				t.Fatalf("got %q", body)
			}
		}
		if d, a := dials.Load(), ln.accepted.Load(); d != 1 || a != 1 {
			t.Fatalf("%d dials, %d connections accepted; want 1 and 1", d, a)
		}
	})
	t.Run("Proxy", func(t *testing.T) {
		t.Parallel()
		proxy, _ := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "proxied "+r.RequestURI)
		}))
		pu, _ := url.Parse(proxy.URL)
		fallback := &http.Transport{Proxy: http.ProxyURL(pu)}
		tr := newHTTP1Transport(fallback, 4)
		t.Cleanup(tr.CloseIdleConnections)
		if _, body := h1Do(t, tr, "GET", "http://behind-proxy.invalid/x?y=1", ""); body != "proxied http://behind-proxy.invalid/x?y=1" {
			t.Fatalf("got %q", body)
		}
	})
}

// h1PipeServer serves one end of a net.Pipe: each request gets h1OK; when
// the client's end closes, what the read ended with goes to end.
func h1PipeServer(c net.Conn, end chan<- error) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			end <- err
			return
		}
		io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, h1OK); err != nil {
			end <- err
			return
		}
	}
}

// TestHTTP1ClosesIdleConnections: in a bubble of fake time, an idle
// connection is kept for idleTimeout after its last response, each use
// starting the count again, and then closed; the next request dials.
// CloseIdleConnections closes idle connections at once.
func TestHTTP1ClosesIdleConnections(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		tr := newHTTP1Transport(h1NoFallback{t}, 4)
		tr.idleTimeout = idle
		var ends []chan error // per connection dialed
		tr.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			end := make(chan error, 1)
			ends = append(ends, end)
			go h1PipeServer(server, end)
			return client, nil
		}
		get := func() {
			t.Helper()
			if _, body := h1Do(t, tr, "GET", "http://mcp.test/", ""); body != "ok" {
				t.Fatalf("got %q", body)
			}
		}
		// open reports whether the server's end of connection i still
		// waits for a request.
		open := func(i int) bool {
			t.Helper()
			synctest.Wait()
			select {
			case err := <-ends[i]:
				if err != io.EOF {
					t.Errorf("connection %d ended with %v, want io.EOF: it closed mid-request", i, err)
				}
				return false
			default:
				return true
			}
		}

		get()
		time.Sleep(idle - time.Second)
		if !open(0) {
			t.Fatal("the connection closed before idleTimeout")
		}
		get() // the same connection; the count starts again
		time.Sleep(idle - time.Second)
		if !open(0) || len(ends) != 1 {
			t.Fatalf("%d dials; used again, the connection was closed idleTimeout after its first use", len(ends))
		}
		time.Sleep(2 * time.Second)
		if open(0) {
			t.Fatal("the connection was still open after idleTimeout")
		}
		get()
		if len(ends) != 2 {
			t.Fatalf("%d dials after the idle connection closed, want 2", len(ends))
		}
		time.Sleep(idle + time.Second) // used once
		if open(1) {
			t.Fatal("a connection used once was still open after idleTimeout")
		}

		get()
		if len(ends) != 3 {
			t.Fatalf("%d dials, want 3", len(ends))
		}
		tr.CloseIdleConnections()
		if open(2) {
			t.Fatal("CloseIdleConnections left the idle connection open")
		}
		get()
		if len(ends) != 4 {
			t.Fatalf("%d dials after CloseIdleConnections, want 4", len(ends))
		}
		tr.CloseIdleConnections()
		if open(3) {
			t.Fatal("CloseIdleConnections left the idle connection open")
		}
	})
}

// TestHTTP1ConcurrentRequests: 32 goroutines of 20 POSTs each get their
// own answers, over no more connections than requests in flight; idle
// connections cost the client no goroutine, and nothing is left once they
// and the server are closed. Not parallel: it counts goroutines.
func TestHTTP1ConcurrentRequests(t *testing.T) {
	const workers, each = 32, 20
	base := runtime.NumGoroutine()
	ts, ln := h1Serve(t, http.HandlerFunc(h1EchoHandler))
	tr := h1New(t)
	client := &http.Client{Transport: tr}
	withServer := runtime.NumGoroutine()

	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("%d/%d:", g, i) + strings.Repeat(string(rune('a'+g%26)), (g*each+i)*7%5000)
				resp, err := client.Post(ts.URL, "text/plain", strings.NewReader(body))
				if err != nil {
					t.Errorf("worker %d, POST %d: %v", g, i, err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != body {
					t.Errorf("worker %d, POST %d: %q... (%d bytes), %v; want %q... (%d bytes)", g, i, got[:min(len(got), 12)], len(got), err, body[:min(len(body), 12)], len(body))
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	conns := int(ln.accepted.Load())
	if conns < 1 || conns > workers {
		t.Fatalf("%d connections dialed for %d requests at most %d at a time", conns, workers*each, workers)
	}
	// The server has a goroutine per connection; the client none.
	settleGoroutines(t, withServer+conns)
	tr.CloseIdleConnections()
	ts.Close()
	settleGoroutines(t, base)
}

// TestHTTP1WritesTheRequest: the request line, Host (the URL's, or
// req.Host), User-Agent (Go-http-client/1.1 unless set), every header
// value, and Content-Length (0 for a POST without body; from
// ContentLength, not from the header map) go out as net/http writes them;
// headers the transport owns are not copied from the header map.
func TestHTTP1WritesTheRequest(t *testing.T) {
	t.Parallel()
	got := make(chan h1Got, 1)
	srv := h1RawServer(t, func(g h1Got) (string, bool) {
		got <- g
		return h1OK, false
	})
	tr := h1New(t)
	host := strings.TrimPrefix(srv.url, "http://")
	send := func(req *http.Request) (lines []string, body string) {
		t.Helper()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		g := h1Wait(t, got, "the request")
		head, body, ok := strings.Cut(g.raw, "\r\n\r\n")
		if !ok {
			t.Fatalf("no end of head in %q", g.raw)
		}
		return strings.Split(head, "\r\n"), body
	}
	// has checks that head has exactly the lines of name want.
	has := func(lines []string, name string, want ...string) {
		t.Helper()
		var values []string
		for _, l := range lines[1:] {
			if k, v, _ := strings.Cut(l, ": "); strings.EqualFold(k, name) {
				values = append(values, v)
			}
		}
		if !slices.Equal(values, want) {
			t.Errorf("%s: %q, want %q, in\n%s", name, values, want, strings.Join(lines, "\n"))
		}
	}

	req, _ := http.NewRequest("POST", srv.url+"/p/a%20th?x=1&y=2", nil)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	lines, body := send(req)
	if lines[0] != "POST /p/a%20th?x=1&y=2 HTTP/1.1" {
		t.Errorf("request line %q", lines[0])
	}
	has(lines, "Host", host)
	has(lines, "User-Agent", "Go-http-client/1.1")
	has(lines, "Content-Length", "0")
	has(lines, "Accept", "application/json, text/event-stream")
	has(lines, "X-Multi", "a", "b")
	has(lines, "Transfer-Encoding")
	if body != "" {
		t.Errorf("body %q", body)
	}

	req, _ = http.NewRequest("GET", srv.url, nil)
	req.Host = "virtual.example"
	req.Header.Set("User-Agent", "mcp-test/1")
	lines, _ = send(req)
	if lines[0] != "GET / HTTP/1.1" {
		t.Errorf("request line %q", lines[0])
	}
	has(lines, "Host", "virtual.example")
	has(lines, "User-Agent", "mcp-test/1")
	has(lines, "Content-Length")

	req, _ = http.NewRequest("POST", srv.url+"/mcp", strings.NewReader("hello"))
	req.Header.Set("Content-Length", "99")
	req.Header.Set("Transfer-Encoding", "chunked")
	req.Header.Set("Connection", "close")
	req.Header.Set("Host", "elsewhere.example")
	lines, body = send(req)
	has(lines, "Content-Length", "5")
	has(lines, "Transfer-Encoding")
	has(lines, "Connection")
	has(lines, "Host", host)
	if body != "hello" {
		t.Errorf("body %q", body)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestHTTP1RefusesInvalidHeaders: a header value with CR or LF (or another
// control character), a header name that is not a token, or a Host with a
// line break fails the request before any of it is written: the server
// reads nothing, on any connection, and the transport works on.
func TestHTTP1RefusesInvalidHeaders(t *testing.T) {
	t.Parallel()
	var injected atomic.Bool
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		if strings.Contains(got.raw, "Injected") {
			injected.Store(true)
		}
		return h1OK, false
	})
	tr := h1New(t)
	h1Do(t, tr, "GET", srv.url, "") // a kept-alive connection for the first bad request
	for name, edit := range map[string]func(*http.Request){
		"CR LF in a value":  func(r *http.Request) { r.Header["X-Token"] = []string{"abc\r\nX-Injected: 1"} },
		"LF in a value":     func(r *http.Request) { r.Header["X-Token"] = []string{"abc\nX-Injected: 1"} },
		"NUL in a value":    func(r *http.Request) { r.Header["X-Token"] = []string{"abc\x00"} },
		"space in the name": func(r *http.Request) { r.Header["X Injected"] = []string{"1"} },
		"colon in the name": func(r *http.Request) { r.Header["X-Injected:"] = []string{"1"} },
		"LF in Host":        func(r *http.Request) { r.Host = "a.example\r\nX-Injected: 1" },
	} {
		req, _ := http.NewRequest("POST", srv.url, strings.NewReader("{}"))
		edit(req)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s: sent, %d", name, resp.StatusCode)
		}
		if _, body := h1Do(t, tr, "GET", srv.url, ""); body != "ok" {
			t.Fatalf("%s: next request: %q", name, body)
		}
	}
	tr.CloseIdleConnections()
	// Every connection the server accepted ends with a clean EOF: none
	// carried part of a refused request.
	for i := range srv.accepted.Load() {
		if err := h1Wait(t, srv.ends, "the connections to end"); err != io.EOF {
			t.Errorf("connection %d: the server read %v, want io.EOF", i, err)
		}
	}
	if n := srv.requests.Load(); n != 7 || injected.Load() {
		t.Errorf("the server read %d requests, want the 7 good ones; one with an injected header: %v", n, injected.Load())
	}
}

// TestHTTP1CarriesMCPOverOneConnection: an MCP client over
// NewHTTPTransport with the default client makes 50 sequential tool calls
// against NewHTTPHandler, on both protocol eras, over one kept-alive TCP
// connection. A 2026-07-28 client dials no other. A 2025-11-25 session's
// standalone GET stream holds one more, and its notifications/initialized,
// POSTed without waiting for its answer, may hold a third while the first
// calls go; from then on the calls keep to one connection.
func TestHTTP1CarriesMCPOverOneConnection(t *testing.T) {
	t.Parallel()
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			h := NewHTTPHandler(newTestServer(), WithContext(ctx))
			var mu sync.Mutex
			var callConns []string // the connection of each tools/call POST
			ts, ln := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "POST" {
					b, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(b))
					if bytes.Contains(b, []byte(`"method":"tools/call"`)) {
						mu.Lock()
						callConns = append(callConns, r.RemoteAddr)
						mu.Unlock()
					}
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(cancel) // before ts.Close: ends the GET stream
			cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, WithProtocolVersion(v))
			if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			const calls = 50
			for i := range calls {
				res, err := cl.CallTool(context.Background(), "echo", map[string]int{"i": i})
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if want := fmt.Sprintf(`{"i":%d}`, i); len(res.Content) != 1 || res.Content[0].Text != want {
					t.Fatalf("call %d: %+v, want %s", i, res.Content, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(callConns) != calls {
				t.Fatalf("the server got %d calls, want %d", len(callConns), calls)
			}
			settled, accepted := 0, int32(1)
			if v == Version20251125 {
				settled, accepted = 10, 3
			}
			for i, c := range callConns[settled:] {
				if c != callConns[calls-1] {
					t.Errorf("call %d came on %s, the last on %s: want one connection", settled+i, c, callConns[calls-1])
					break
				}
			}
			if a := ln.accepted.Load(); a > accepted {
				t.Errorf("%d connections accepted, want at most %d", a, accepted)
			}
		})
	}
}

// TestHTTP1AnswersALargePOSTTheServerRefusesEarly: a server may answer a
// POST before reading its body, 413 to one over its cap as NewHTTPHandler
// does, and close the connection. The caller gets that answer, as with
// net/http, and the POST reaches the handler once: not a write error,
// after the request went out again on a new connection.
func TestHTTP1AnswersALargePOSTTheServerRefusesEarly(t *testing.T) {
	t.Parallel()
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprint("kept-alive=", warm), func(t *testing.T) {
			t.Parallel()
			var posts atomic.Int32
			ts, _ := h1Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "POST" {
					posts.Add(1)
					http.Error(w, "too large", http.StatusRequestEntityTooLarge)
					return
				}
				io.WriteString(w, "ok")
			}))
			tr := h1New(t)
			if warm {
				h1Do(t, tr, "GET", ts.URL, "")
			}
			// More than the sockets' buffers hold: the write fails.
			req, _ := http.NewRequest("POST", ts.URL, bytes.NewReader(make([]byte, 32<<20)))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Errorf("got %v, want the server's 413", err)
			} else {
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("status %d, want 413", resp.StatusCode)
				}
			}
			if n := posts.Load(); n != 1 {
				t.Errorf("the POST reached the handler %d times, want 1", n)
			}
		})
	}
	t.Run("MCP call over the body cap", func(t *testing.T) {
		t.Parallel()
		ts := serveHTTP(t, newTestServer(), WithMaxBodyBytes(1<<20))
		cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, WithProtocolVersion(Version20260728))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err := cl.CallTool(context.Background(), "echo", map[string]string{"x": strings.Repeat("x", 16<<20)})
		if rpcCode(err) != CodeInvalidRequest || !strings.Contains(err.Error(), "Too Large") {
			t.Errorf("got %v, want the server's 413 Request Entity Too Large", err)
		}
	})
}

// TestHTTP1RejectsASignedContentLength: Content-Length is digits only; "+2"
// is malformed, as net/http has it.
func TestHTTP1RejectsASignedContentLength(t *testing.T) {
	t.Parallel()
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", false
	})
	req, _ := http.NewRequest("GET", srv.url, nil)
	if resp, err := h1New(t).RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("Content-Length: +2 taken, ContentLength %d", resp.ContentLength)
	}
}

// TestHTTP1RefusesInvalidHeadersBeforeTakingAConnection: a request refused
// for its headers costs no connection, as with net/http: the kept-alive
// one is neither closed nor replaced by a new one.
func TestHTTP1RefusesInvalidHeadersBeforeTakingAConnection(t *testing.T) {
	t.Parallel()
	srv := h1RawServer(t, func(got h1Got) (string, bool) { return h1OK, false })
	tr := h1New(t)
	h1Do(t, tr, "GET", srv.url, "")
	req, _ := http.NewRequest("POST", srv.url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer abc")
	req.Header["Authorization"][0] += "\n" // a token read from a file, newline and all
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("sent: %d", resp.StatusCode)
	}
	h1Do(t, tr, "GET", srv.url, "")
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestHTTP1SendsNoMoreThanContentLength: a request body longer than its
// ContentLength fails the request, and what follows its ContentLength
// bytes never reaches the server, where it would be read as a request of
// its own; a nil body with a ContentLength is an error, not a promise of
// bytes the server waits for.
func TestHTTP1SendsNoMoreThanContentLength(t *testing.T) {
	t.Parallel()
	got := make(chan string, 16)
	srv := h1RawServer(t, func(g h1Got) (string, bool) {
		got <- g.req.Method + " " + g.req.URL.Path + " " + strconv.FormatInt(g.req.ContentLength, 10)
		return h1OK, false
	})
	tr := h1New(t)
	smuggled := "hello" + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("z", 8<<10)
	req, _ := http.NewRequest("POST", srv.url+"/first", strings.NewReader(smuggled))
	req.ContentLength = 5
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Errorf("a body longer than ContentLength: %d, no error", resp.StatusCode)
	}
	// The guard: the server waits for the 5 bytes a wrong request promises.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "POST", srv.url+"/nil-body", nil)
	req.ContentLength = 5
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a nil body with ContentLength 5: no answer, the server waits for the body")
	}
	tr.CloseIdleConnections()
	for range srv.accepted.Load() {
		h1Wait(t, srv.ends, "the connections to end")
	}
	close(got)
	for g := range got {
		if strings.Contains(g, "smuggled") || strings.HasSuffix(g, " 5") && strings.Contains(g, "nil-body") {
			t.Errorf("the server read %q", g)
		}
	}
}

// TestHTTP1ResendsAGETTheServerClosedOn: a kept-alive connection the
// server closes as a GET (no body, idempotent) goes out on it, before
// answering, gets the GET sent again on a new connection, as net/http
// does; a POST would not be (TestHTTP1DoesNotResendAnUnansweredPOST).
func TestHTTP1ResendsAGETTheServerClosedOn(t *testing.T) {
	t.Parallel()
	var first atomic.Bool
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		if got.req.URL.Path == "/again" && first.CompareAndSwap(false, true) {
			return "", true // the server's idle timeout, as the request came
		}
		return h1OK, false
	})
	tr := h1New(t)
	h1Do(t, tr, "GET", srv.url+"/", "")
	req, _ := http.NewRequest("GET", srv.url+"/again", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET on a connection the server closed: %v, want it sent again", err)
	}
	resp.Body.Close()
}

// TestHTTP1AsNetHTTPHasIt: details a caller may compare with net/http's
// client: an empty User-Agent sends none; a HEAD response reports the
// Content-Length a GET would have had and has no body to read; a body
// read after Close fails rather than return what was buffered.
func TestHTTP1AsNetHTTPHasIt(t *testing.T) {
	t.Parallel()
	heads := make(chan string, 4)
	srv := h1RawServer(t, func(got h1Got) (string, bool) {
		heads <- got.raw
		if got.req.Method == "HEAD" {
			return "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", false
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", false
	})
	tr := h1New(t)
	req, _ := http.NewRequest("GET", srv.url, nil)
	req.Header.Set("User-Agent", "")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if raw := h1Wait(t, heads, "the GET"); strings.Contains(strings.ToLower(raw), "user-agent") {
		t.Errorf("an empty User-Agent went out:\n%s", raw)
	}
	var first [2]byte
	if _, err := io.ReadFull(resp.Body, first[:]); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n, err := resp.Body.Read(first[:]); err == nil || n != 0 {
		t.Errorf("a read after Close: %d bytes, %v; want an error", n, err)
	}
	req, _ = http.NewRequest("HEAD", srv.url, nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	h1Wait(t, heads, "the HEAD")
	if resp.ContentLength != 1234 {
		t.Errorf("HEAD ContentLength %d, want 1234", resp.ContentLength)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
		t.Errorf("HEAD body %q, %v", b, err)
	}
	resp.Body.Close()
}

// TestHTTP1StatusLines: the status line sets the response's protocol and
// status as net/http's would, "HTTP/1.1 200 OK" (read without copying the
// line) like any other, and a malformed line is refused.
func TestHTTP1StatusLines(t *testing.T) {
	for _, tc := range []struct {
		line          string
		proto, status string
		minor, code   int
	}{
		{"HTTP/1.1 200 OK", "HTTP/1.1", "200 OK", 1, 200},
		{"HTTP/1.1 200 Fine", "HTTP/1.1", "200 Fine", 1, 200},
		{"HTTP/1.0 200 OK", "HTTP/1.0", "200 OK", 0, 200},
		{"HTTP/1.1 202 Accepted", "HTTP/1.1", "202 Accepted", 1, 202},
		{"HTTP/1.1 404", "HTTP/1.1", "404", 1, 404},
	} {
		var resp http.Response
		if !parseStatusLine([]byte(tc.line), &resp) {
			t.Errorf("%q refused", tc.line)
			continue
		}
		if resp.Proto != tc.proto || resp.ProtoMajor != 1 || resp.ProtoMinor != tc.minor || resp.Status != tc.status || resp.StatusCode != tc.code {
			t.Errorf("%q: %q %d.%d %q %d", tc.line, resp.Proto, resp.ProtoMajor, resp.ProtoMinor, resp.Status, resp.StatusCode)
		}
	}
	ok := []byte("HTTP/1.1 200 OK")
	var resp http.Response
	if n := testing.AllocsPerRun(100, func() { parseStatusLine(ok, &resp) }); n != 0 {
		t.Errorf("parsing %q allocates %v times", ok, n)
	}
	for _, line := range []string{"", "HTTP/1.1", "HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 abc OK", "HTTP/1.1 099 Low", "http/1.1 200 OK"} {
		var resp http.Response
		if parseStatusLine([]byte(line), &resp) {
			t.Errorf("%q accepted", line)
		}
	}
}

// TestIsHTTPTokenIsRFC9110: a header name is made of tchar, every byte
// checked against RFC 9110's own list; the empty name is not a token.
func TestIsHTTPTokenIsRFC9110(t *testing.T) {
	tchar := func(c byte) bool {
		return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
	}
	for c := range 256 {
		b := byte(c)
		if got, want := isHTTPToken(string([]byte{b})), tchar(b); got != want {
			t.Errorf("isHTTPToken(%q) = %v, want %v", b, got, want)
		}
		if got, want := isHTTPToken("Mcp-"+string([]byte{b})+"-Name"), tchar(b); got != want {
			t.Errorf("isHTTPToken(%q) = %v, want %v", "Mcp-"+string([]byte{b})+"-Name", got, want)
		}
	}
	if isHTTPToken("") {
		t.Error("the empty name is a token")
	}
}
