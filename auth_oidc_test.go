package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// oidcProvider is panva's oidc-provider (testdata/oidc), run by node on
// 127.0.0.1 for one test: a real OpenID provider with its own login and
// consent pages.
type oidcProvider struct {
	issuer string
	stderr *bytes.Buffer
}

// startOIDCProvider starts the provider, issuing tokens for resource, and
// stops it when the test ends. Without node or the installed package the
// test is skipped, unless CI is set: there that is a failure.
func startOIDCProvider(t *testing.T, resource string) *oidcProvider {
	t.Helper()
	node, dir := testNode(t, "the OpenID provider test", "oidc", "oidc-provider")
	cmd := exec.Command(node, filepath.Join(dir, "provider.mjs"), resource)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe() // closed at the end: the provider exits
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &oidcProvider{stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		var hello struct{ Issuer string }
		if !ok || json.Unmarshal([]byte(l), &hello) != nil || hello.Issuer == "" {
			t.Fatalf("the provider did not start: %q; stderr: %s", l, p.stderr)
		}
		p.issuer = hello.Issuer
	case <-time.After(30 * time.Second):
		t.Fatalf("the provider did not start in 30 s; stderr: %s", p.stderr)
	}
	return p
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// oidcBrowser signs in at the provider as a person would: it follows the
// authorization URL through the provider's login page and consent page,
// submitting each form, until the provider redirects to redirect.
type oidcBrowser struct {
	redirect string
	calls    atomic.Int32
}

var (
	formAction  = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	promptInput = regexp.MustCompile(`name="prompt" value="([^"]+)"`)
)

func (b *oidcBrowser) Authorize(ctx context.Context, authURL string) (string, error) {
	b.calls.Add(1)
	jar, _ := cookiejar.New(nil)
	var back string
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), b.redirect) {
			back = req.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	for range 6 {
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if back != "" {
			return back, nil
		}
		action, prompt := formAction.FindSubmatch(page), promptInput.FindSubmatch(page)
		if resp.StatusCode != http.StatusOK || action == nil || prompt == nil {
			return "", fmt.Errorf("%s: %s: no form in %.500s", resp.Request.URL, resp.Status, page)
		}
		target, err := resp.Request.URL.Parse(string(action[1]))
		if err != nil {
			return "", err
		}
		form := url.Values{"prompt": {string(prompt[1])}, "login": {"alice"}, "password": {"any"}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return "", errors.New("the provider never redirected back")
}

// grantRecorder is the OAuth client's HTTP transport: it records the
// grant_type of each token request and the status it got.
type grantRecorder struct {
	mu     sync.Mutex
	grants []string // "grant_type status"
}

func (g *grantRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var grant string
	if req.Method == http.MethodPost && req.GetBody != nil && req.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
		body, _ := req.GetBody()
		b, _ := io.ReadAll(body)
		form, _ := url.ParseQuery(string(b))
		grant = form.Get("grant_type")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if grant != "" && err == nil {
		g.mu.Lock()
		g.grants = append(g.grants, fmt.Sprintf("%s %d", grant, resp.StatusCode))
		g.mu.Unlock()
	}
	return resp, err
}

func (g *grantRecorder) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.grants...)
}

// TestOAuthAgainstOpenIDProvider: a Client over WithOAuth signs in at a
// real OpenID provider (dynamic registration, PKCE, the provider's login
// and consent pages, a JWT access token for the resource that the
// server's JWTVerifier checks), receives a refresh token because it asks
// for offline_access with prompt=consent, and once its token is due it
// refreshes without a second sign-in.
// oidcResource serves a mux on 127.0.0.1 whose /mcp is the resource the
// OpenID provider it starts issues tokens for, with a verifier of those
// tokens; the server ends with the test.
func oidcResource(t *testing.T) (*http.ServeMux, *httptest.Server, *oidcProvider, *JWTVerifier) {
	t.Helper()
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	op := startOIDCProvider(t, ts.URL+"/mcp")
	verifier, err := NewJWTVerifier(JWTVerifierConfig{Issuer: op.issuer, Audience: ts.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	return mux, ts, op, verifier
}

func TestOAuthAgainstOpenIDProvider(t *testing.T) {
	t.Parallel()
	mux, ts, op, verifier := oidcResource(t)
	resource := ts.URL + "/mcp"
	metadata := ProtectedResourceMetadataURL(resource)
	mux.Handle("/mcp", NewHTTPHandler(newTestServer(), WithAuthorizer(BearerAuth{
		Verifier: verifier, ResourceMetadataURL: metadata, Scopes: []string{"mcp"},
	})))
	mux.Handle(strings.TrimPrefix(metadata, ts.URL), ProtectedResourceMetadataHandler(ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{op.issuer}, ScopesSupported: []string{"mcp"},
	}))

	browser := &oidcBrowser{redirect: "http://127.0.0.1:1/callback"}
	grants := &grantRecorder{}
	store := NewMemoryTokenStore()
	rt := newOAuthTransport(resource, grants, OAuthConfig{
		Handler: browser, RedirectURL: browser.redirect, Store: store, ClientName: "mcp-go test",
	})
	var ahead atomic.Int64 // how far the client's clock runs ahead
	rt.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }

	c := NewClient(Implementation{Name: "c", Version: "1"})
	tr := NewHTTPTransport(resource, WithHTTPClient(&http.Client{Transport: rt}), WithoutStandaloneStream())
	if err := c.Connect(t.Context(), tr); err != nil {
		t.Fatalf("%v; provider: %s", err, op.stderr)
	}
	defer c.Close()
	if _, err := c.CallTool(t.Context(), "echo", map[string]string{"x": "1"}); err != nil {
		t.Fatal(err)
	}
	key := tokenKey(op.issuer, resource)
	first, err := store.LoadToken(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if first.RefreshToken == "" {
		t.Fatalf("the provider issued no refresh token (grants %q)", grants.list())
	}

	// An hour later by the client's clock the token is due: the next call
	// refreshes it, and nobody signs in again.
	ahead.Store(int64(time.Hour))
	if _, err := c.CallTool(t.Context(), "echo", map[string]string{"x": "2"}); err != nil {
		t.Fatal(err)
	}
	second, err := store.LoadToken(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	got := grants.list()
	if len(got) != 2 || got[0] != "authorization_code 200" || got[1] != "refresh_token 200" {
		t.Fatalf("token requests %q, want a code exchange then a refresh", got)
	}
	if second.AccessToken == first.AccessToken {
		t.Fatal("the refresh kept the old access token")
	}
	if n := browser.calls.Load(); n != 1 {
		t.Fatalf("%d sign-ins, want 1", n)
	}
}
