package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/e6ac58cb/mcp"
)

// serve runs the protected server with its dev issuer on a loopback port.
func serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	h, err := newHandler(base, "", true)
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", u, res.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// callWhoami calls the tool with a 2026-07-28 POST carrying token.
func callWhoami(t *testing.T, base, token string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "whoami")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestProtectedServer reads the resource metadata, gets the challenge,
// signs in at the dev issuer with the authorization code flow and PKCE,
// as a client would, and calls the tool with the token, then with a
// refreshed one.
func TestProtectedServer(t *testing.T) {
	base := serve(t)
	resource := base + "/mcp"

	// The challenge names the metadata, which names the issuer.
	res := callWhoami(t, base, "")
	challenge := res.Header.Get("WWW-Authenticate")
	prmURL := base + "/.well-known/oauth-protected-resource/mcp"
	if res.StatusCode != 401 || challenge != `Bearer resource_metadata="`+prmURL+`", scope="mcp"` {
		t.Fatalf("without a token: %d %q", res.StatusCode, challenge)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	getJSON(t, prmURL, &prm)
	if prm.Resource != resource || len(prm.AuthorizationServers) != 1 || prm.BearerMethods[0] != "header" {
		t.Fatalf("metadata %+v", prm)
	}
	issuer := prm.AuthorizationServers[0]
	u, _ := url.Parse(issuer)
	var as struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	}
	getJSON(t, u.Scheme+"://"+u.Host+"/.well-known/oauth-authorization-server"+u.Path, &as)
	if as.Issuer != issuer || len(as.CodeChallengeMethods) != 1 || as.CodeChallengeMethods[0] != "S256" {
		t.Fatalf("authorization server metadata %+v", as)
	}

	// Dynamic client registration.
	redirect := "http://127.0.0.1:1/callback"
	reg, err := http.Post(as.RegistrationEndpoint, "application/json", strings.NewReader(`{"client_name":"test","redirect_uris":["`+redirect+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(reg.Body).Decode(&client)
	reg.Body.Close()
	if reg.StatusCode != 201 || client.ClientID == "" {
		t.Fatalf("registration: %d %+v", reg.StatusCode, client)
	}

	// Authorization code with PKCE S256; the toy approves at once.
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {client.ClientID}, "redirect_uri": {redirect}, "state": {"st8"},
		"code_challenge": {b64.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "scope": {"mcp"}, "resource": {resource}}
	auth, err := noRedirects.Get(as.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	auth.Body.Close()
	back, _ := url.Parse(auth.Header.Get("Location"))
	code := back.Query().Get("code")
	if auth.StatusCode != 302 || code == "" || back.Query().Get("state") != "st8" || back.Query().Get("iss") != issuer {
		t.Fatalf("authorize: %d %s", auth.StatusCode, auth.Header.Get("Location"))
	}
	exchange := func(form url.Values) (status int, tok struct{ AccessToken, RefreshToken string }) {
		t.Helper()
		res, err := http.PostForm(as.TokenEndpoint, form)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, struct{ AccessToken, RefreshToken string }{body.AccessToken, body.RefreshToken}
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {client.ClientID}, "code_verifier": {"wrong"}}
	if status, _ := exchange(form); status != 400 {
		t.Fatalf("a wrong PKCE verifier: %d", status)
	}
	// The code was spent by the failed attempt: sign in again.
	auth, _ = noRedirects.Get(as.AuthorizationEndpoint + "?" + q.Encode())
	auth.Body.Close()
	back, _ = url.Parse(auth.Header.Get("Location"))
	form.Set("code", back.Query().Get("code"))
	form.Set("code_verifier", verifier)
	status, tok := exchange(form)
	if status != 200 || tok.AccessToken == "" {
		t.Fatalf("token: %d", status)
	}

	res = callWhoami(t, base, tok.AccessToken)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), "dev-user (scopes: mcp)") {
		t.Fatalf("whoami: %d %s", res.StatusCode, body)
	}

	status, next := exchange(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client.ClientID}})
	if status != 200 || next.AccessToken == "" {
		t.Fatalf("refresh: %d", status)
	}
	if res = callWhoami(t, base, next.AccessToken); res.StatusCode != 200 {
		t.Fatalf("whoami with the refreshed token: %d", res.StatusCode)
	}
	if status, _ := exchange(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}); status != 400 {
		t.Fatalf("a spent refresh token: %d", status)
	}
}

// pipeListener is a listener whose connections are net.Pipe ends, so that
// inside a synctest bubble the server's timeouts run on the fake clock.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial hands the server one end of a new pipe and returns the other.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// TestSlowloris: connections that send part of their headers and then
// nothing are all closed once the read-header timeout has passed, while a
// client that sends a whole request is still served.
func TestSlowloris(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const conns = 2000
		h, err := newHandler("http://127.0.0.1", "", true)
		if err != nil {
			t.Fatal(err)
		}
		srv := newHTTPServer(h)
		ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
		go srv.Serve(ln)
		defer srv.Close()

		var closed atomic.Int64
		for range conns {
			c := ln.dial()
			go func() {
				defer c.Close()
				io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
				io.Copy(io.Discard, c) // until the server closes the connection
				closed.Add(1)
			}()
		}
		start := time.Now()
		synctest.Wait()
		if n := closed.Load(); n != 0 {
			t.Fatalf("%d connections closed at once", n)
		}
		tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.dial(), nil }}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr}).Get(mcp.ProtectedResourceMetadataURL("http://127.0.0.1/mcp"))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("a whole request during the flood: %v, %v", res, err)
		}
		res.Body.Close()
		limit := 30 * time.Second
		for closed.Load() < conns && time.Since(start) < limit {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if n := closed.Load(); n != conns {
			t.Fatalf("%d of %d slowloris connections still open after %v", conns-n, conns, time.Since(start))
		}
		if d := time.Since(start); d > srv.ReadHeaderTimeout+time.Second {
			t.Fatalf("closed after %v, want within the read-header timeout %v", d, srv.ReadHeaderTimeout)
		}
		t.Logf("%d slowloris connections closed after %v", conns, time.Since(start))
	})
}
