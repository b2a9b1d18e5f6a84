package mcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
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
	authorized := serveHTTP(t, newTestServer(), WithAuthorizer(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer good" {
			return "", errors.New("invalid token")
		}
		return "good", nil
	}))
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
