package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestIsLoopbackHost: which Host names a loopback server accepts without
// a listing: localhost and loopback addresses, IPv4-mapped ones included;
// no names that merely start like one, no zones, no odd spellings.
func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "::ffff:127.0.0.1": true,
		"127.0.0.1.evil.example": false, "localhost.evil.example": false, "10.0.0.1": false, "::": false,
		"fe80::1%lo": false, "::1%lo": false, "0x7f.0.0.1": false, "127.000.000.001": false, "": false,
	} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("isLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestHTTPSourceChecks: DNS rebinding and foreign origins are refused on a
// loopback server, the server's own origin and listed ones are not, and
// the authorizer's refusal is a 401 with a challenge.
func TestHTTPSourceChecks(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	port := portOf(strings.TrimPrefix(ts.URL, "http://"))
	listed := serveHTTP(t, newTestServer(), WithAllowedOrigins("https://app.example.com"), WithAllowedHosts("mcp.example.com"))
	authorized := serveHTTP(t, newTestServer(), WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer good" {
			return "", errors.New("invalid token")
		}
		return "good", nil
	})))
	discover := modernRequest("1", "server/discover", "")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	cases := []struct {
		name   string
		url    string
		body   string
		header map[string]string
		status int
	}{
		{"rebinding, legacy", ts.URL, init, postHeaders("Host", "evil.example.com", "Origin", "http://evil.example.com"), 403},
		{"rebinding, 2026-07-28", ts.URL, discover, modernHeaders("server/discover", "Host", "evil.example.com:"+port, "Origin", "http://evil.example.com:"+port), 403},
		{"own host and origin", ts.URL, init, postHeaders("Host", "127.0.0.1:"+port, "Origin", "http://127.0.0.1:"+port), 200},
		{"localhost", ts.URL, discover, modernHeaders("server/discover", "Host", "localhost:"+port, "Origin", "http://localhost:"+port), 200},
		{"IPv6 loopback", ts.URL, discover, modernHeaders("server/discover", "Host", "[::1]:"+port), 200},
		{"foreign origin", ts.URL, discover, modernHeaders("server/discover", "Origin", "https://evil.example.com"), 403},
		{"null origin", ts.URL, discover, modernHeaders("server/discover", "Origin", "null"), 403},
		{"listed origin", listed.URL, discover, modernHeaders("server/discover", "Origin", "https://app.example.com"), 200},
		{"listed host", listed.URL, discover, modernHeaders("server/discover", "Host", "mcp.example.com"), 200},
		{"unlisted origin", listed.URL, discover, modernHeaders("server/discover", "Origin", "https://other.example.com"), 403},
		{"no token", authorized.URL, discover, modernHeaders("server/discover"), 401},
		{"bad token", authorized.URL, discover, modernHeaders("server/discover", "Authorization", "Bearer bad"), 401},
		{"good token", authorized.URL, discover, modernHeaders("server/discover", "Authorization", "Bearer good"), 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := doHTTP(t, "POST", tc.url, tc.body, tc.header)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if r.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without a WWW-Authenticate challenge")
			}
		})
	}
	// A client with the token in its headers gets through.
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	if err := cl.Connect(context.Background(), NewHTTPTransport(authorized.URL, WithHeader("Authorization", "Bearer good"))); err != nil {
		t.Fatal(err)
	}
	cl.Close()
}

// TestHTTPHostCheckAfterAllowedHosts: the handler remembers the last Host
// it allowed, so that a client's every request costs a comparison; a
// rebinding Host that follows allowed ones (the loopback address, a
// listed name, localhost) on the same loopback server is still refused,
// every time, also twice in a row.
func TestHTTPHostCheckAfterAllowedHosts(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer(), WithAllowedHosts("mcp.example.com"))
	port := portOf(strings.TrimPrefix(ts.URL, "http://"))
	discover := modernRequest("1", "server/discover", "")
	hosts := []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, 200},
		{"evil.example.com:" + port, 403},
		{"evil.example.com:" + port, 403},
		{"127.0.0.1:" + port, 200},
		{"127.0.0.1:" + port, 200},
		{"evil.example.com:" + port, 403},
		{"mcp.example.com", 200},
		{"evil.example.com", 403},
		{"mcp.example.com", 200},
		{"localhost:" + port, 200},
		{"evil.example.com:" + port, 403},
	}
	for i, h := range hosts {
		r := doHTTP(t, "POST", ts.URL, discover, modernHeaders("server/discover", "Host", h.host))
		if r.status != h.status {
			t.Fatalf("request %d, Host %s: status %d, want %d: %s", i, h.host, r.status, h.status, r.body)
		}
	}
}

// TestHTTPStreamsOutliveReadTimeout: behind an http.Server whose
// ReadTimeout is a second, on a fake clock, SSE streams that last ten
// times longer deliver every event and are never cut (and resumed): a
// POST's answer on both eras, and a legacy session's GET stream. The
// handler lifts the read deadline once it has read a body.
func TestHTTPStreamsOutliveReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newTestServer()
		srv.AddTool(Tool{Name: "slow"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			for i := 1; i <= 5; i++ {
				time.Sleep(2 * time.Second)
				req.Gateway().Progress(float64(i), 5, "")
			}
			return &CallToolResult{Content: []Content{TextContent("ten seconds")}}, nil
		})
		var resumed atomic.Int32
		inner := NewHTTPHandler(srv)
		hs := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Last-Event-ID") != "" {
					resumed.Add(1)
				}
				inner.ServeHTTP(w, r)
			}),
			ReadHeaderTimeout: time.Second,
			ReadTimeout:       time.Second,
		}
		_, hc := servePipe(t, hs)
		for _, v := range eras {
			func() {
				changed := make(chan struct{}, 1)
				cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v), WithToolListChangedHandler(func(context.Context) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}))
				if err := cl.Connect(context.Background(), NewHTTPTransport(pipeURL, WithHTTPClient(hc))); err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				start := time.Now()
				progress, count := orderedProgress(t, 0, nil)
				res, err := cl.CallTool(context.Background(), "slow", nil, WithProgress(progress))
				if err != nil || *count != 5 || res.Content[0].Text != "ten seconds" || time.Since(start) < 10*time.Second {
					t.Fatalf("%s: a long SSE answer: %v, %d reports in %v, %+v", v, err, *count, time.Since(start), res)
				}
				if v == Version20251125 {
					// The GET stream, open since the handshake, carries a
					// notification long after ReadTimeout.
					time.Sleep(10 * time.Second)
					srv.AddTool(Tool{Name: "late"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
						return &CallToolResult{}, nil
					})
					synctest.Wait()
					select {
					case <-changed:
					default:
						t.Fatal("the GET stream did not deliver tools/list_changed after ReadTimeout")
					}
				}
			}()
		}
		if n := resumed.Load(); n != 0 {
			t.Fatalf("streams were cut and resumed %d times", n)
		}
	})
}

// TestHTTPTricklingBodyIsCut: a body that keeps arriving, a byte a second,
// too slowly to end within ReadTimeout, is cut at ReadTimeout with a 400,
// on a fake clock.
func TestHTTPTricklingBodyIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := &http.Server{Handler: NewHTTPHandler(newTestServer()), ReadHeaderTimeout: time.Second, ReadTimeout: 4 * time.Second}
		pn, _ := servePipe(t, hs)
		c, err := pn.DialContext(context.Background(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rawPOST(t, c, "", 100, `{"jsonrpc"`)
		trickled := make(chan int)
		go func() {
			n := 0
			for {
				time.Sleep(time.Second)
				if _, err := c.Write([]byte(" ")); err != nil {
					trickled <- n
					return
				}
				n++
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		d := time.Since(start)
		c.Close()
		n := <-trickled
		if resp.StatusCode != 400 || d != hs.ReadTimeout || !strings.Contains(string(body), "cannot read the body") || n < 3 {
			t.Fatalf("a trickling body (%d bytes sent): %d after %v: %s", n, resp.StatusCode, d, body)
		}
	})
}

// TestHTTPOriginSchemeAndUserinfo: the server's own origin is an http or
// https origin of its host and port, nothing else: another scheme,
// userinfo (refused even when any origin is allowed), a path or a query
// get 403; loopback names count as one host only with the connection's
// scheme; a TLS server's pages are https.
func TestHTTPOriginSchemeAndUserinfo(t *testing.T) {
	t.Parallel()
	ts := serveHTTP(t, newTestServer())
	port := portOf(strings.TrimPrefix(ts.URL, "http://"))
	self := "127.0.0.1:" + port
	discover := modernRequest("1", "server/discover", "")
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"ftp://" + self, 403},
		{"http://evil.com@" + self, 403},
		{"http://user:pass@" + self, 403},
		{"javascript://" + self, 403},
		{"http://" + self + "/mcp", 403},
		{"http://" + self + "?x", 403},
		{"http://" + self + "#x", 403},
		{"http://" + self + "#", 403},
		{"https://localhost:" + port, 403}, // another loopback name, another scheme
		{"http://" + self, 200},
		{"http://" + self + "/", 200},
		{"HTTP://" + self, 200},
		{"http://localhost:" + port, 200},
		{"https://" + self, 200}, // the same host: a proxy may end TLS in front
	} {
		r := doHTTP(t, "POST", ts.URL, discover, modernHeaders("server/discover", "Origin", tc.origin))
		if r.status != tc.status {
			t.Errorf("Origin %q: %d, want %d: %s", tc.origin, r.status, tc.status, r.body)
		}
	}

	// Any origin allowed, but never userinfo.
	open := NewHTTPHandler(newTestServer(), WithAllowedOrigins("*"))
	// A TLS server's own pages are https.
	plain := NewHTTPHandler(newTestServer())
	for _, tc := range []struct {
		name   string
		h      http.Handler
		tls    bool
		origin string
		status int
	}{
		{"any origin", open, false, "https://anything.example", 200},
		{"any origin, userinfo", open, false, "https://evil.example@app.example.com", 403},
		{"TLS, https", plain, true, "https://mcp.example.com", 200},
		{"TLS, http", plain, true, "http://mcp.example.com", 403},
		{"TLS, another loopback name", plain, true, "https://localhost:443", 200},
		{"TLS, another loopback name, http", plain, true, "http://localhost:443", 403},
	} {
		target := "https://mcp.example.com/mcp"
		if strings.Contains(tc.origin, "localhost") {
			target = "https://127.0.0.1:443/mcp"
		}
		req := httptest.NewRequest("POST", target, strings.NewReader(discover))
		for k, v := range modernHeaders("server/discover", "Origin", tc.origin) {
			req.Header.Set(k, v)
		}
		if !tc.tls {
			req.TLS = nil
		}
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, rec.Code, tc.status, rec.Body)
		}
	}
}
