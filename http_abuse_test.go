package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pipeNet is an in-memory network for net/http: a listener whose
// connections are net.Pipe ends, and the dialer of its clients. Inside a
// synctest bubble a whole HTTP exchange, server timeouts included, then
// runs on the bubble's fake clock.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (n *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.closed:
		return nil, net.ErrClosed
	}
}

func (n *pipeNet) Close() error {
	n.once.Do(func() { close(n.closed) })
	return nil
}

func (n *pipeNet) Addr() net.Addr { return pipeAddr{} }

func (n *pipeNet) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// client returns an http.Client that dials n, and a function that closes
// its idle connections.
func (n *pipeNet) client() (*http.Client, func()) {
	tr := &http.Transport{DialContext: n.DialContext}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeURL is the URL of a handler served on a pipeNet.
const pipeURL = "http://mcp.test/mcp"

// servePipe serves h with hs on a fresh pipeNet until the test ends; it
// returns the network and a client for it.
func servePipe(t *testing.T, hs *http.Server) (*pipeNet, *http.Client) {
	pn := newPipeNet()
	go hs.Serve(pn)
	hc, closeIdle := pn.client()
	t.Cleanup(func() {
		closeIdle()
		hs.Close()
	})
	return pn, hc
}

// rawPOST writes the head of a POST on conn: the headers, and bodyPrefix
// of a body announced as length bytes (0: the whole bodyPrefix).
func rawPOST(t *testing.T, conn net.Conn, sid string, length int, bodyPrefix string) {
	t.Helper()
	if length == 0 {
		length = len(bodyPrefix)
	}
	head := "POST /mcp HTTP/1.1\r\nHost: mcp.test\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	if sid != "" {
		head += "Mcp-Session-Id: " + sid + "\r\n"
	}
	head += fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
	if _, err := io.WriteString(conn, head+bodyPrefix); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPOversizeBodies: a body over the cap is refused with 413, at once
// when its length is announced (nothing of it is read) and as soon as the
// cap is passed otherwise; one at the cap is served; the session lives on.
func TestHTTPOversizeBodies(t *testing.T) {
	t.Parallel()
	const limit = 4 << 10
	ts := serveHTTP(t, newTestServer(), WithMaxBodyBytes(limit))
	sid := legacySession(t, ts.URL, Version20251125)
	header := postHeaders("Mcp-Session-Id", sid)
	echoOf := func(size int) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"`
		return body + strings.Repeat("x", size-len(body)-len(`"}}}`)) + `"}}}`
	}
	post := func(body io.Reader, length int64) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL, body)
		req.ContentLength = length
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := testHTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	check := func(name string, resp *http.Response, status int) {
		t.Helper()
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status {
			t.Fatalf("%s: %d, want %d: %s", name, resp.StatusCode, status, body)
		}
		if status == 413 && field(t, string(body), "error.code") != float64(CodeInvalidRequest) {
			t.Fatalf("%s: %s", name, body)
		}
	}
	check("at the cap", post(strings.NewReader(echoOf(limit)), limit), 200)
	check("one byte over, announced", post(strings.NewReader(echoOf(limit+1)), limit+1), 413)
	check("over, not announced (chunked)", post(io.MultiReader(strings.NewReader(echoOf(limit+1))), -1), 413)

	// A huge announced body is refused before any of it is sent.
	stalled, release := io.Pipe()
	defer release.Close()
	check("announced 1 GiB, nothing sent", post(stalled, 1<<30), 413)

	if r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, header); r.status != 200 {
		t.Fatalf("the session after the refusals: %d %s", r.status, r.body)
	}
}

// TestHTTPSlowClients runs the handler behind an http.Server with the
// recommended timeouts, on a fake clock: a client that sends its headers
// too slowly, or its body, is cut off after ReadHeaderTimeout or
// ReadTimeout and holds nothing afterwards; other clients are served
// meanwhile; and an SSE answer that lasts longer than every server timeout
// is not cut, because net/http lifts the read deadline once the body is
// read and the handler sets a write deadline before each write.
func TestHTTPSlowClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newTestServer()
		srv.AddTool(Tool{Name: "slow"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			for i := 1; i <= 15; i++ {
				time.Sleep(20 * time.Second)
				req.Gateway().Progress(float64(i), 15, "")
			}
			return &CallToolResult{Content: []Content{TextContent("five minutes")}}, nil
		})
		var resumed atomic.Int32
		inner := NewHTTPHandler(srv)
		hs := NewHTTPServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Last-Event-ID") != "" {
				resumed.Add(1)
			}
			inner.ServeHTTP(w, r)
		}))
		hs.WriteTimeout = 30 * time.Second // not recommended, and harmless: see the SSE answer below
		pn, hc := servePipe(t, hs)
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
		if err := cl.Connect(context.Background(), NewHTTPTransport(pipeURL, WithHTTPClient(hc))); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()

		// Headers that never end.
		slowHead, _ := pn.DialContext(context.Background(), "", "")
		defer slowHead.Close()
		io.WriteString(slowHead, "POST /mcp HTTP/1.1\r\nHost: mcp.test\r\n")
		start := time.Now()
		if n, err := slowHead.Read(make([]byte, 1)); err == nil {
			t.Fatalf("a client still sending its headers got %d bytes", n)
		}
		if d := time.Since(start); d != hs.ReadHeaderTimeout {
			t.Fatalf("slow headers cut after %v, want %v", d, hs.ReadHeaderTimeout)
		}

		// A body that stops halfway; meanwhile others are served.
		slowBody, _ := pn.DialContext(context.Background(), "", "")
		defer slowBody.Close()
		start = time.Now()
		rawPOST(t, slowBody, "", 100, `{"jsonrpc":"2.0","id":1,`)
		if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatalf("another client while one stalls: %v", err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(slowBody), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if d := time.Since(start); resp.StatusCode != 400 || d != hs.ReadTimeout || !strings.Contains(string(body), "cannot read the body") {
			t.Fatalf("a stalled body: %d after %v: %s", resp.StatusCode, d, body)
		}

		// An answer that streams for five minutes.
		start = time.Now()
		progress, count := orderedProgress(t, 0, nil)
		res, err := cl.CallTool(context.Background(), "slow", nil, WithProgress(progress))
		if err != nil || *count != 15 || res.Content[0].Text != "five minutes" {
			t.Fatalf("a long SSE answer: %v, %d reports, %+v", err, *count, res)
		}
		if d := time.Since(start); d < 5*time.Minute {
			t.Fatalf("the answer took %v", d)
		}
		if n := resumed.Load(); n != 0 {
			t.Fatalf("the SSE answer was cut and resumed %d times", n)
		}
	})
}

// TestHTTPAbandonedSessions: 10,000 legacy sessions opened and left alone,
// one in ten with a GET stream that carried a message and then lost its
// client, are all ended by the idle timeout, and the memory they held
// returns: no session in the handler or the server, no event stored, and
// a second wave leaves the heap where the first left it. What stays after
// a wave is capacity that the next one reuses (the server's session map
// keeps its peak size, as Go maps do).
//
// The sessions open a millisecond apart, as they would in life: 10,000
// expiry timers firing at one instant would leave the runtime 10,000 idle
// goroutine descriptors to reuse, which the heap counts.
func TestHTTPAbandonedSessions(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	synctest.Test(t, func(t *testing.T) {
		srv := newTestServer()
		// No session cap: the wave is as large as the default one.
		h := NewHTTPHandler(srv, WithSessionTimeout(time.Minute), WithMaxSessions(0)).(*httpHandler)
		store := h.cfg.store.(*MemoryEventStore)
		directSession(t, h) // warm up what is built once
		heap := func() uint64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		wave := func() (idle, after uint64) {
			for i := range n {
				time.Sleep(time.Millisecond)
				sid := directSession(t, h)
				if i%10 != 0 {
					continue
				}
				ctx, vanish := context.WithCancel(context.Background())
				req := httptest.NewRequestWithContext(ctx, "GET", "/mcp", nil)
				req.Header.Set("Accept", "text/event-stream")
				req.Header.Set("Mcp-Session-Id", sid)
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.ServeHTTP(httptest.NewRecorder(), req)
				}()
				synctest.Wait()
				h.session(sid).conn.(*conn).notify("notifications/message", map[string]string{"level": "info"}, ID{}, nil)
				vanish()
				<-done
			}
			idle = heap()
			time.Sleep(time.Minute + time.Second)
			synctest.Wait()
			after = heap()

			h.mu.Lock()
			left := len(h.sessions)
			h.mu.Unlock()
			srv.sessionsMu.Lock()
			serverLeft := len(srv.sessions)
			srv.sessionsMu.Unlock()
			store.mu.Lock()
			stored, storedSessions := store.size, len(store.sessions)
			store.mu.Unlock()
			if left != 0 || serverLeft != 0 || stored != 0 || storedSessions != 0 {
				t.Fatalf("after expiry: %d handler sessions, %d server sessions, %d bytes of events in %d sessions", left, serverLeft, stored, storedSessions)
			}
			return idle, after
		}
		base := heap()
		perSession := func(h uint64) float64 { return float64(int64(h)-int64(base)) / float64(n) }
		idle1, after1 := wave()
		idle2, after2 := wave()
		t.Logf("%d sessions a wave: %.0f, %.0f bytes each while idle; %.0f, %.0f after expiry", n, perSession(idle1), perSession(idle2), perSession(after1), perSession(after2))
		if perSession(idle1) < 500 || perSession(after1) > 128 || perSession(after2)-perSession(after1) > 16 {
			t.Fatal("the memory of expired sessions did not return")
		}
	})
}

// TestHTTPDeleteRacesRequests: a DELETE that ends a session while requests
// of it are arriving and in flight (run it with -race) leaves each request
// answered (its result, a stream cut short, or 404), the session gone, and
// no goroutine behind.
func TestHTTPDeleteRacesRequests(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := newTestServer()
	h := NewHTTPHandler(srv).(*httpHandler)
	ts := httptest.NewServer(h)
	for round := range 20 {
		sid := legacySession(t, ts.URL, Version20251125)
		header := postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				<-start
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"progress","arguments":{"steps":%d},"_meta":{"progressToken":%d}}}`, i, i, i)
				r := doHTTP(t, "POST", ts.URL, body, header)
				switch {
				case r.status == 404:
				case r.status == 200 && (strings.Contains(r.body, `"result"`) || strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")):
				default:
					t.Errorf("round %d, request %d: %d %s", round, i, r.status, r.body)
				}
			})
		}
		wg.Go(func() {
			<-start
			if r := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}); r.status != 204 && r.status != 404 {
				t.Errorf("round %d: DELETE %d %s", round, r.status, r.body)
			}
		})
		close(start)
		wg.Wait()
		if r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":"after","method":"ping"}`, header); r.status != 404 {
			t.Fatalf("round %d: the deleted session answered %d", round, r.status)
		}
	}
	h.mu.Lock()
	left := len(h.sessions)
	h.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d sessions left", left)
	}
	ts.CloseClientConnections()
	ts.Close()
	testHTTPClient.CloseIdleConnections()
	settleGoroutines(t, before)
}

// TestHTTPSourceChecksEveryMethod: a foreign Origin or a rebinding Host is
// refused (403, JSON-RPC error) on every method of both handlers, the
// 2024-11-05 one included, before anything else is looked at.
func TestHTTPSourceChecksEveryMethod(t *testing.T) {
	t.Parallel()
	streamable := serveHTTP(t, newTestServer())
	ctx, cancel := context.WithCancel(context.Background())
	sse := httptest.NewServer(NewSSEHandler(newTestServer(), WithContext(ctx)))
	t.Cleanup(func() {
		cancel()
		sse.Close()
	})
	port := portOf(strings.TrimPrefix(streamable.URL, "http://"))
	ssePort := portOf(strings.TrimPrefix(sse.URL, "http://"))
	sid := legacySession(t, streamable.URL, Version20251125)
	hostile := []struct {
		name   string
		header func(port string) map[string]string
	}{
		{"foreign origin", func(string) map[string]string { return map[string]string{"Origin": "https://evil.example.com"} }},
		{"null origin", func(string) map[string]string { return map[string]string{"Origin": "null"} }},
		{"origin on another loopback port", func(string) map[string]string { return map[string]string{"Origin": "http://127.0.0.1:1"} }},
		{"origin with a path-only value", func(string) map[string]string { return map[string]string{"Origin": "/mcp"} }},
		{"rebinding host", func(p string) map[string]string { return map[string]string{"Host": "evil.example.com:" + p} }},
		{"rebinding host and origin", func(p string) map[string]string {
			return map[string]string{"Host": "evil.example.com:" + p, "Origin": "http://evil.example.com:" + p}
		}},
		{"host with a trailing dot", func(p string) map[string]string { return map[string]string{"Host": "localhost.:" + p} }},
		{"host a public IP", func(p string) map[string]string { return map[string]string{"Host": "93.184.216.34:" + p} }},
	}
	requests := []struct {
		name, url, method, body string
		header                  map[string]string
		port                    string
	}{
		{"POST initialize", streamable.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, postHeaders(), port},
		{"POST on a session", streamable.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid), port},
		{"POST 2026-07-28", streamable.URL, "POST", modernRequest("1", "tools/list", ""), modernHeaders("tools/list"), port},
		{"GET", streamable.URL, "GET", "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, port},
		{"DELETE", streamable.URL, "DELETE", "", map[string]string{"Mcp-Session-Id": sid}, port},
		{"2024-11-05 GET", sse.URL + "/sse", "GET", "", map[string]string{"Accept": "text/event-stream"}, ssePort},
		{"2024-11-05 POST", sse.URL + "/sse?sessionId=x", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Content-Type": "application/json"}, ssePort},
	}
	for _, req := range requests {
		for _, h := range hostile {
			t.Run(req.name+"/"+h.name, func(t *testing.T) {
				t.Parallel()
				header := map[string]string{}
				for k, v := range req.header {
					header[k] = v
				}
				for k, v := range h.header(req.port) {
					header[k] = v
				}
				r := doHTTP(t, req.method, req.url, req.body, header)
				if r.status != 403 || field(t, r.body, "error.code") != float64(CodeInvalidRequest) {
					t.Fatalf("%d %s", r.status, r.body)
				}
			})
		}
	}
	// The session refused above is untouched.
	t.Cleanup(func() {
		if r := doHTTP(t, "POST", streamable.URL, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
			t.Errorf("the session after the refusals: %d %s", r.status, r.body)
		}
	})
}

// midEventCutter cuts the first SSE answer to a POST in the middle of an
// event: after the cutAt-th "data:" line has begun, as a connection that
// breaks mid-write would.
type midEventCutter struct {
	cutAt int
	cut   chan struct{} // closed once cut

	mu   sync.Mutex
	done bool
}

func (c *midEventCutter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		return resp, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done = true
		resp.Body = &cuttingBody{ReadCloser: resp.Body, c: c}
	}
	return resp, nil
}

type cuttingBody struct {
	io.ReadCloser
	c     *midEventCutter
	seen  []byte // the tail of what went through, to find "data:"
	lines int
	left  int // bytes to let through after the cut line began; -1 before
	cut   bool
}

func (b *cuttingBody) Read(p []byte) (int, error) {
	if b.cut {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := b.ReadCloser.Read(p)
	for i := 0; i < n; i++ {
		if b.lines >= b.c.cutAt {
			if b.left--; b.left < 0 {
				b.cut = true
				b.ReadCloser.Close()
				close(b.c.cut)
				return i, io.ErrUnexpectedEOF
			}
			continue
		}
		b.seen = append(b.seen, p[i])
		if bytes.HasSuffix(b.seen, []byte("\ndata: ")) {
			b.lines++
			b.left = 10 // a few bytes into the message
			b.seen = b.seen[:0]
		}
		if len(b.seen) > 64 {
			b.seen = b.seen[len(b.seen)-8:]
		}
	}
	return n, err
}

// TestHTTPResumeAfterCutMidEvent: the connection of a POST's SSE answer
// breaks in the middle of an event; the client drops the partial event,
// resumes with Last-Event-ID, and gets every report and the result exactly
// once, in order.
func TestHTTPResumeAfterCutMidEvent(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTestServer()
	srv.AddTool(Tool{Name: "reports"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		for i := 1; i <= 80; i++ {
			if i == 41 {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			req.Gateway().Progress(float64(i), 80, "report")
		}
		return &CallToolResult{Content: []Content{TextContent("all")}}, nil
	})
	ts := serveHTTP(t, srv)
	cutter := &midEventCutter{cutAt: 20, cut: make(chan struct{})}
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithHTTPClient(&http.Client{Transport: cutter}), WithoutStandaloneStream())); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		<-cutter.cut
		close(release)
	}()
	progress, count := orderedProgress(t, 0, nil)
	res, err := cl.CallTool(context.Background(), "reports", nil, WithProgress(progress))
	if err != nil {
		t.Fatal(err)
	}
	if *count != 80 || res.Content[0].Text != "all" {
		t.Fatalf("%d reports, result %+v", *count, res)
	}
	select {
	case <-cutter.cut:
	default:
		t.Fatal("the stream was never cut")
	}
}

// TestHTTPConnectWaitsForStandaloneStream is the regression test of the
// conformance bug "the standalone GET stream is opened asynchronously":
// Connect on a legacy session returns only once the server answered the
// GET, so that what the server sends outside a request from then on has a
// stream to go on (a server without an event store drops it otherwise);
// a server that does not answer holds Connect for the close timeout at
// most.
func TestHTTPConnectWaitsForStandaloneStream(t *testing.T) {
	for _, answers := range []bool{true, false} {
		t.Run(fmt.Sprintf("answered=%v", answers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newTestServer()
				inner := NewHTTPHandler(srv)
				getArrived, answerGET := make(chan struct{}), make(chan struct{})
				var once sync.Once
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet {
						once.Do(func() { close(getArrived) })
						select {
						case <-answerGET:
						case <-r.Context().Done():
							return
						}
					}
					inner.ServeHTTP(w, r)
				})
				_, hc := servePipe(t, &http.Server{Handler: h})
				changed := make(chan struct{}, 1)
				cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125),
					WithNotificationHandler("notifications/tools/list_changed", func(context.Context, json.RawMessage) { changed <- struct{}{} }))
				connected := make(chan error, 1)
				start := time.Now()
				go func() { connected <- cl.Connect(context.Background(), NewHTTPTransport(pipeURL, WithHTTPClient(hc))) }()
				<-getArrived
				synctest.Wait()
				select {
				case err := <-connected:
					t.Fatalf("Connect returned (%v) before the GET stream was answered", err)
				default:
				}
				if !answers {
					if err := <-connected; err != nil {
						t.Fatal(err)
					}
					if d := time.Since(start); d != DefaultCloseTimeout {
						t.Fatalf("Connect waited %v for an unanswered GET, want the close timeout %v", d, DefaultCloseTimeout)
					}
					if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
						t.Fatal(err)
					}
					close(answerGET)
					cl.Close()
					return
				}
				close(answerGET)
				if err := <-connected; err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				srv.AddTool(Tool{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
				<-changed
			})
		})
	}
}

// TestSSEParserLoneCR: an event whose lines end with lone CRs is returned
// as soon as its blank line arrives, without waiting for a LF that may
// never come; a leading byte order mark is ignored.
func TestSSEParserLoneCR(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	go io.WriteString(w, "\xef\xbb\xbfdata: first\r\r") // and then nothing
	ev, err := newSSEParser(r, 1<<10).next()
	if err != nil || string(ev.data) != "first" {
		t.Fatalf("got %q, %v", ev.data, err)
	}
	// A CR at the end of one read and a LF at the start of the next are
	// one line end.
	p := newSSEParser(io.MultiReader(strings.NewReader("data: a\r"), strings.NewReader("\ndata: b\r\n\r\n")), 1<<10)
	if ev, err := p.next(); err != nil || string(ev.data) != "a\nb" {
		t.Fatalf("got %q, %v", ev.data, err)
	}
}

// TestHTTPParamHeaderHugeNumber is the regression test of a bug
// FuzzHTTPHeaderValue found: an integer argument too large for a float64
// (1e400) never matched its own Mcp-Param header, so the server refused a
// request the client built correctly.
func TestHTTPParamHeaderHugeNumber(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"1e400", "-1e400", "123456789012345678901234567890"} {
		v, ok := headerValueOf(json.RawMessage(arg))
		if !ok || !headerMatchesArgument(v, json.RawMessage(arg)) {
			t.Errorf("argument %s and its header %q do not match", arg, v)
		}
	}
	if headerMatchesArgument("2e400", json.RawMessage("1e400")) {
		t.Error("2e400 matches 1e400")
	}
}
