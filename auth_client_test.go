package mcp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAS is an authorization server for the tests: RFC 8414 metadata,
// dynamic registration, an authorization endpoint that approves at once
// by redirecting, and a token endpoint that checks PKCE and the client's
// authentication. It issues tokens that the fakeResource accepts.
type fakeAS struct {
	t    testing.TB
	srv  *httptest.Server
	meta AuthorizationServerMetadata
	// issMode is what the redirect carries as iss: "correct", "wrong",
	// "slash" (the issuer with a trailing slash) or "omit".
	issMode    string
	ttl        int  // expires_in of issued tokens (0: none)
	refresh    bool // issue refresh tokens
	clientAuth func(r *http.Request, form url.Values) error
	holdToken  chan struct{}      // when set, the token endpoint waits on it for refreshes
	withhold   []string           // scopes never granted, whatever is asked
	idPrefix   string             // of the client IDs it registers
	noMetadata bool               // answer 404 at the metadata URL
	assertion  func(string) error // checks the JWT bearer grant's assertion

	mu            sync.Mutex
	codes         map[string]fakeGrant // code -> what it grants
	tokens        map[string]fakeGrant // access token -> what it grants
	refreshTokens map[string]fakeGrant
	n             int
	authQueries   []url.Values
	tokenForms    []url.Values
	tokenAuth     []string // Authorization headers at the token endpoint
	registrations []map[string]any

	refreshes    atomic.Int32
	firstRefresh chan struct{} // closed at the first refresh
	refreshOnce  sync.Once
}

type fakeGrant struct {
	challenge, resource, clientID string
	scopes                        []string
	expiry                        time.Time
}

// newFakeAS makes a fakeAS, not yet started: its metadata may be changed
// until start.
func newFakeAS(t testing.TB) *fakeAS {
	a := &fakeAS{t: t, issMode: "correct", idPrefix: "dcr", firstRefresh: make(chan struct{}), ttl: 3600, refresh: true,
		codes: map[string]fakeGrant{}, tokens: map[string]fakeGrant{}, refreshTokens: map[string]fakeGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if a.noMetadata {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, a.meta)
	})
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.srv = httptest.NewUnstartedServer(mux)
	t.Cleanup(a.srv.Close)
	u := "http://" + a.srv.Listener.Addr().String()
	a.meta = AuthorizationServerMetadata{
		Issuer: u, AuthorizationEndpoint: u + "/authorize", TokenEndpoint: u + "/token", RegistrationEndpoint: u + "/register",
		CodeChallengeMethodsSupported: []string{"S256"}, TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post"},
		AuthorizationResponseIssParameterSupported: true,
	}
	return a
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (a *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body)
	a.mu.Lock()
	a.registrations = append(a.registrations, body)
	n := len(a.registrations)
	a.mu.Unlock()
	method, _ := body["token_endpoint_auth_method"].(string)
	out := map[string]any{"client_id": fmt.Sprintf("%s-%d", a.idPrefix, n), "token_endpoint_auth_method": method}
	if method != "none" {
		out["client_secret"] = fmt.Sprintf("secret-%d", n)
	}
	writeJSON(w, http.StatusCreated, out)
}

func (a *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.authQueries = append(a.authQueries, q)
	a.n++
	code := fmt.Sprintf("code-%d", a.n)
	scopes := slices.DeleteFunc(strings.Fields(q.Get("scope")), func(s string) bool { return slices.Contains(a.withhold, s) })
	a.codes[code] = fakeGrant{challenge: q.Get("code_challenge"), resource: q.Get("resource"), clientID: q.Get("client_id"), scopes: scopes}
	a.mu.Unlock()
	if q.Get("code_challenge_method") != "S256" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"code": {code}, "state": {q.Get("state")}}
	switch a.issMode {
	case "correct":
		v.Set("iss", a.meta.Issuer)
	case "wrong":
		v.Set("iss", "https://evil.example.com")
	case "slash":
		v.Set("iss", a.meta.Issuer+"/")
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (a *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	form := r.PostForm
	a.mu.Lock()
	a.tokenForms = append(a.tokenForms, form)
	a.tokenAuth = append(a.tokenAuth, r.Header.Get("Authorization"))
	a.mu.Unlock()
	if a.clientAuth != nil {
		if err := a.clientAuth(r, form); err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": err.Error()})
			return
		}
	}
	var g fakeGrant
	switch form.Get("grant_type") {
	case "authorization_code":
		a.mu.Lock()
		c, ok := a.codes[form.Get("code")]
		delete(a.codes, form.Get("code"))
		a.mu.Unlock()
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !ok || b64.EncodeToString(sum[:]) != c.challenge || form.Get("resource") != c.resource {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "bad code, verifier or resource"})
			return
		}
		g = c
	case "refresh_token":
		a.refreshes.Add(1)
		a.refreshOnce.Do(func() { close(a.firstRefresh) })
		if a.holdToken != nil {
			<-a.holdToken
		}
		a.mu.Lock()
		c, ok := a.refreshTokens[form.Get("refresh_token")]
		a.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = c
	case GrantClientCredentials:
		g = fakeGrant{resource: form.Get("resource"), scopes: strings.Fields(form.Get("scope"))}
	case grantJWTBearer:
		if a.assertion != nil {
			if err := a.assertion(form.Get("assertion")); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": err.Error()})
				return
			}
		}
		g = fakeGrant{resource: form.Get("resource"), scopes: strings.Fields(form.Get("scope"))}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	a.mu.Lock()
	a.n++
	at := fmt.Sprintf("at-%d", a.n)
	if a.ttl > 0 {
		g.expiry = time.Now().Add(time.Duration(a.ttl) * time.Second)
	}
	a.tokens[at] = g
	out := map[string]any{"access_token": at, "token_type": "Bearer", "scope": strings.Join(g.scopes, " ")}
	if a.ttl > 0 {
		out["expires_in"] = a.ttl
	}
	if a.refresh {
		rt := fmt.Sprintf("rt-%d", a.n)
		a.refreshTokens[rt] = g
		out["refresh_token"] = rt
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// grantOf returns what an access token grants.
func (a *fakeAS) grantOf(token string) (fakeGrant, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.tokens[token]
	return g, ok
}

// revoke forgets every access token.
func (a *fakeAS) revoke() {
	a.mu.Lock()
	clear(a.tokens)
	a.mu.Unlock()
}

func (a *fakeAS) authorizations() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.authQueries)
}

// authQuery returns the query of authorization request i (negative: from
// the end).
func (a *fakeAS) authQuery(i int) url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < 0 {
		i += len(a.authQueries)
	}
	return a.authQueries[i]
}

func (a *fakeAS) tokenForm(i int) url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokenForms[i]
}

func (a *fakeAS) tokenRequests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tokenForms)
}

func (a *fakeAS) registration(i int) map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registrations[i]
}

func (a *fakeAS) registered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.registrations)
}

// fakeResource is a protected MCP server: it publishes its RFC 9728
// metadata and lets through to next only requests with a token of an
// authorization server it trusts, for itself, with the scopes it requires.
type fakeResource struct {
	srv      *httptest.Server
	url      string // the MCP endpoint
	noPRMURL bool   // leave resource_metadata out of the challenge
	scopes   atomic.Pointer[[]string]

	mu      sync.Mutex
	prm     ProtectedResourceMetadata
	trusted []*fakeAS
	passed  map[string]int // requests let through, by method
}

// newFakeResource makes a fakeResource trusting as, not yet started.
func newFakeResource(t testing.TB, as *fakeAS, next http.Handler) *fakeResource {
	f := &fakeResource{trusted: []*fakeAS{as}, passed: map[string]int{}}
	f.scopes.Store(&[]string{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		prm := f.prm
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, prm)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		required := *f.scopes.Load()
		challenge := `Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
		if f.noPRMURL {
			challenge = `Bearer realm="mcp"`
		}
		if len(required) > 0 {
			challenge += `, scope="` + strings.Join(required, " ") + `"`
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		g, known := f.grantOf(token)
		if !ok || !known || g.resource != f.url || (!g.expiry.IsZero() && time.Now().After(g.expiry)) {
			if ok {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for _, s := range required {
			if !slices.Contains(g.scopes, s) {
				w.Header().Set("WWW-Authenticate", challenge+`, error="insufficient_scope"`)
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
		}
		f.mu.Lock()
		f.passed[r.Method]++
		f.mu.Unlock()
		next.ServeHTTP(w, r)
	})
	f.srv = httptest.NewUnstartedServer(mux)
	t.Cleanup(f.srv.Close)
	f.url = "http://" + f.srv.Listener.Addr().String() + "/mcp"
	f.prm = ProtectedResourceMetadata{Resource: f.url, AuthorizationServers: []string{as.meta.Issuer}}
	return f
}

func (f *fakeResource) grantOf(token string) (fakeGrant, bool) {
	f.mu.Lock()
	trusted := f.trusted
	f.mu.Unlock()
	for _, as := range trusted {
		if g, ok := as.grantOf(token); ok {
			return g, true
		}
	}
	return fakeGrant{}, false
}

// moveTo makes as the resource's only authorization server.
func (f *fakeResource) moveTo(as *fakeAS) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trusted = []*fakeAS{as}
	f.prm.AuthorizationServers = []string{as.meta.Issuer}
}

func (f *fakeResource) require(scopes ...string) { f.scopes.Store(&scopes) }

// approve is the "browser" of the tests: it GETs the authorization URL
// and returns where the server redirects, without going there.
type approve struct {
	calls atomic.Int32
	rt    http.RoundTripper // nil: the default
}

func (h *approve) Authorize(ctx context.Context, authURL string) (string, error) {
	h.calls.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	c := &http.Client{Transport: h.rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("authorization endpoint: %s", resp.Status)
	}
	return resp.Header.Get("Location"), nil
}

const testRedirect = "http://127.0.0.1:1/callback"

// okHandler answers every request it is given with 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// oauthRig is a fakeAS, a fakeResource in front of next, and an OAuth
// client transport for it.
type oauthRig struct {
	as  *fakeAS
	res *fakeResource
	h   *approve
	cfg OAuthConfig
}

// newOAuthRig makes and starts a rig; setup, if given, changes the
// servers before they start.
func newOAuthRig(t testing.TB, next http.Handler, setup ...func(*oauthRig)) *oauthRig {
	as := newFakeAS(t)
	h := &approve{}
	r := &oauthRig{as: as, res: newFakeResource(t, as, next), h: h, cfg: OAuthConfig{Handler: h, RedirectURL: testRedirect}}
	for _, f := range setup {
		f(r)
	}
	r.as.srv.Start()
	r.res.srv.Start()
	return r
}

// startedAS makes and starts another fakeAS, whose client IDs start with
// idPrefix.
func startedAS(t testing.TB, idPrefix string) *fakeAS {
	a := newFakeAS(t)
	a.idPrefix = idPrefix
	a.srv.Start()
	return a
}

func (r *oauthRig) transport() *oauthTransport {
	return newOAuthTransport(r.res.url, nil, r.cfg)
}

// get sends one GET to the resource through rt.
func get(ctx context.Context, rt http.RoundTripper, target string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}

func authErrorOf(t testing.TB, err error) *AuthError {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want an *AuthError", err)
	}
	return ae
}

// TestOAuthSignInThroughClient: a Client over WithOAuth connects to a
// protected server and calls a tool; the authorization server saw PKCE
// S256 with a verifier that matched, state, the resource on both requests,
// and one dynamic registration as a native application.
func TestOAuthSignInThroughClient(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, NewHTTPHandler(newTestServer()))
	c := NewClient(Implementation{Name: "c", Version: "1"})
	if err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, WithOAuth(rig.cfg))); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(t.Context(), "echo", map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if n := rig.as.authorizations(); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	q := rig.as.authQuery(0)
	if q.Get("resource") != rig.res.url || q.Get("state") == "" || q.Has("scope") || q.Get("client_id") != "dcr-1" {
		t.Errorf("authorization request %v", q)
	}
	if f := rig.as.tokenForm(0); f.Get("resource") != rig.res.url || f.Get("code_verifier") == "" {
		t.Errorf("token request %v", f)
	}
	if rig.as.registered() != 1 || rig.as.registration(0)["application_type"] != "native" {
		t.Errorf("registrations %v", rig.as.registration(0))
	}
}

// TestOAuthAuthorizesEveryRequest: on a 2025-11-25 session the standalone
// GET stream and the closing DELETE carry the token too.
func TestOAuthAuthorizesEveryRequest(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, NewHTTPHandler(newTestServer()))
	c := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, WithOAuth(rig.cfg))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	c.Close()
	rig.res.mu.Lock()
	defer rig.res.mu.Unlock()
	if p := rig.res.passed; p["POST"] < 2 || p["GET"] != 1 || p["DELETE"] != 1 {
		t.Fatalf("authorized requests by method: %v", p)
	}
	if n := rig.as.authorizations(); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

// TestOAuthOverTheSSETransport: the 2024-11-05 transport takes WithOAuth
// too: its event stream and its POSTs carry the token.
func TestOAuthOverTheSSETransport(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rig := newOAuthRig(t, NewSSEHandler(newTestServer(), WithContext(ctx)))
	c := NewClient(Implementation{Name: "c", Version: "1"})
	if err := c.Connect(t.Context(), NewSSETransport(rig.res.url, WithOAuth(rig.cfg))); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(t.Context(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	rig.res.mu.Lock()
	defer rig.res.mu.Unlock()
	if p := rig.res.passed; p["GET"] != 1 || p["POST"] < 2 {
		t.Fatalf("authorized requests by method: %v", p)
	}
}

// TestOAuthWrapsTheHTTPClient: WithOAuth sends through the Transport of
// the WithHTTPClient client, whichever option comes first: the MCP
// requests, with the token, and the discovery and token requests; the
// client given keeps its Transport.
func TestOAuthWrapsTheHTTPClient(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, NewHTTPHandler(newTestServer()))
	for _, oauthFirst := range []bool{false, true} {
		base := &recordingRoundTripper{}
		hc := &http.Client{Transport: base}
		opts := []HTTPTransportOption{WithHTTPClient(hc), WithOAuth(rig.cfg)}
		if oauthFirst {
			slices.Reverse(opts)
		}
		c := NewClient(Implementation{Name: "c", Version: "1"})
		if err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, opts...)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallTool(t.Context(), "echo", nil); err != nil {
			t.Fatal(err)
		}
		c.Close()
		seen := base.list()
		for _, want := range []string{"POST /mcp", "POST /mcp with a token", "GET /.well-known/oauth-protected-resource/mcp", "POST /token"} {
			if !slices.Contains(seen, want) {
				t.Errorf("OAuth first %v: the client's Transport saw no %q: %q", oauthFirst, want, seen)
			}
		}
		if hc.Transport != http.RoundTripper(base) {
			t.Errorf("OAuth first %v: the client given was changed", oauthFirst)
		}
	}
}

// recordingRoundTripper sends with http.DefaultTransport and records each
// request's method and path, and whether it carried a bearer token.
type recordingRoundTripper struct {
	mu   sync.Mutex
	seen []string
}

func (rt *recordingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	what := r.Method + " " + r.URL.Path
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		what += " with a token"
	}
	rt.mu.Lock()
	rt.seen = append(rt.seen, what)
	rt.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (rt *recordingRoundTripper) list() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.seen)
}

// TestOAuthTokenStaysWithTheResource: a request to another origin (where
// the server redirects, say) goes without the token.
func TestOAuthTokenStaysWithTheResource(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	defer other.Close()
	rig := newOAuthRig(t, http.RedirectHandler(other.URL+"/elsewhere", http.StatusTemporaryRedirect))
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != "" {
		t.Fatalf("the other origin got Authorization %q", h)
	}
}

// TestOAuthErrorReachesTheCaller: a failure of the OAuth client is an
// *AuthError that Connect and CallTool return, found with errors.As.
func TestOAuthErrorReachesTheCaller(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, NewHTTPHandler(newTestServer()))
	cfg := rig.cfg
	refused := errors.New("the user closed the browser")
	var calls atomic.Int32
	cfg.Handler = handlerFunc(func(context.Context, string) (string, error) {
		calls.Add(1)
		return "", refused
	})
	c := NewClient(Implementation{Name: "c", Version: "1"})
	err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, WithOAuth(cfg)))
	if ae := authErrorOf(t, err); ae.Step != "authorization" || !errors.Is(err, refused) {
		t.Fatalf("step %q: %v", ae.Step, err)
	}
	// The failed sign-in is not tried again by the initialize fallback.
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler was called %d times, want 1", n)
	}

	rig = newOAuthRig(t, NewHTTPHandler(newTestServer()), func(r *oauthRig) { r.as.withhold = []string{"admin"} })
	rig.cfg.MaxStepUps = -1
	c = NewClient(Implementation{Name: "c", Version: "1"})
	if err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, WithOAuth(rig.cfg))); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rig.res.require("admin")
	_, err = c.CallTool(t.Context(), "echo", nil)
	if ae := authErrorOf(t, err); ae.Step != "step-up" || ae.Status != http.StatusForbidden {
		t.Fatalf("%v", err)
	}
}

// handlerFunc is an AuthorizationHandler made of a function.
type handlerFunc func(ctx context.Context, authURL string) (string, error)

func (f handlerFunc) Authorize(ctx context.Context, authURL string) (string, error) {
	return f(ctx, authURL)
}

// TestOAuthSignInOutlivesTheRequest: a request that gives up while the
// user signs in fails with its context's error; the sign-in goes on, and
// the next request uses its token without asking the user again.
func TestOAuthSignInOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	rig.cfg.Handler = handlerFunc(func(ctx context.Context, authURL string) (string, error) {
		calls.Add(1)
		close(entered)
		<-release
		return rig.h.Authorize(ctx, authURL)
	})
	o := rig.transport()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := get(ctx, o, rig.res.url)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned request: %v", err)
	}
	close(release)
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the user was asked %d times, want 1", n)
	}
}

// TestOAuthAuthorizationTimeout: a sign-in that never ends is cut at
// AuthorizationTimeout, and the request fails with an *AuthError.
func TestOAuthAuthorizationTimeout(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	rig.cfg.Handler = handlerFunc(func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	rig.cfg.AuthorizationTimeout = 100 * time.Millisecond
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	// Where the bound cuts (most likely the handler's wait, but a loaded
	// machine may be slower to discover) does not matter: it does.
	if authErrorOf(t, err); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}

// TestOAuthSignInEndsWithTheTransport: closing the client transport ends
// a sign-in that waits for the user, so that nothing outlives it.
func TestOAuthSignInEndsWithTheTransport(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	entered, ended := make(chan struct{}), make(chan error, 1)
	rig.cfg.Handler = handlerFunc(func(ctx context.Context, _ string) (string, error) {
		close(entered)
		<-ctx.Done()
		ended <- ctx.Err()
		return "", ctx.Err()
	})
	tr := NewHTTPTransport(rig.res.url, WithOAuth(rig.cfg))
	ctx, cancel := context.WithCancel(t.Context())
	go get(ctx, tr.client.Transport, rig.res.url)
	<-entered
	cancel() // the request gives up; the sign-in goes on
	select {
	case err := <-ended:
		t.Fatalf("the sign-in ended with its request: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	tr.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the sign-in ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign-in outlived the transport")
	}
}

// TestOAuthConcurrentRefresh: 100 requests race an expired token; exactly
// one refresh reaches the token endpoint, and every request goes through
// with the new token.
func TestOAuthConcurrentRefresh(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.holdToken = hold })
	o := rig.transport()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	// Two hours later by the client's clock: the token has expired. Each
	// request looks at the clock once before it sends anything.
	later := time.Now().Add(2 * time.Hour)
	const n = 100
	var looked atomic.Int32
	allLooked := make(chan struct{})
	o.now = func() time.Time {
		if looked.Add(1) == n {
			close(allLooked)
		}
		return later
	}
	var done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		done.Go(func() {
			_, err := get(t.Context(), o, rig.res.url)
			errs <- err
		})
	}
	// Hold the first refresh at the token endpoint until every request
	// has found the token expired.
	<-allLooked
	<-rig.as.firstRefresh
	close(hold)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := rig.as.refreshes.Load(); got != 1 {
		t.Fatalf("%d refreshes, want 1", got)
	}
	if n := rig.as.authorizations(); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

// TestOAuthRefreshOnInvalidToken: a token the server no longer accepts is
// refreshed once, without a new sign-in.
func TestOAuthRefreshOnInvalidToken(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	o := rig.transport()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	rig.as.revoke()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if r, a := rig.as.refreshes.Load(), rig.as.authorizations(); r != 1 || a != 1 {
		t.Fatalf("%d refreshes and %d authorizations, want 1 and 1", r, a)
	}
}

// TestOAuthStepUpIsBounded: a server that answers every authorized
// request with 403 insufficient_scope gets the first authorization and
// MaxStepUps more, then the request fails with an *AuthError.
func TestOAuthStepUpIsBounded(t *testing.T) {
	t.Parallel()
	for _, max := range []int{-1, 0, 1, 3} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			t.Parallel()
			rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.withhold = []string{"admin"} })
			rig.cfg.MaxStepUps = max
			want := max
			switch {
			case max == 0:
				want = DefaultMaxStepUps
			case max < 0:
				want = 0
			}
			rig.res.require("admin")
			_, err := get(t.Context(), rig.transport(), rig.res.url)
			if ae := authErrorOf(t, err); ae.Step != "step-up" || ae.Field != "scope" {
				t.Fatalf("%v", err)
			}
			if got := rig.as.authorizations(); got != want+1 {
				t.Fatalf("%d authorizations, want %d", got, want+1)
			}
		})
	}
}

// TestOAuthStepUpAsksForTheUnion: a 403 asking for another scope
// re-authorizes with the scopes of the first authorization and the new
// one, and the request then goes through.
func TestOAuthStepUpAsksForTheUnion(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	rig.res.require("read")
	o := rig.transport()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	rig.res.require("write")
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if got := rig.as.authQuery(1).Get("scope"); got != "read write" {
		t.Fatalf("step-up scope %q, want %q", got, "read write")
	}
}

// TestOAuthScopeSelection: the challenge's scope, else the resource's
// scopes_supported, else none; offline_access only when the authorization
// server lists it, and then with prompt=consent.
func TestOAuthScopeSelection(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		challenge []string
		supported []string
		asScopes  []string
		want      string
	}{
		{"challenge", []string{"a"}, []string{"a", "b"}, nil, "a"},
		{"scopes_supported", nil, []string{"a", "b"}, nil, "a b"},
		{"none", nil, nil, nil, ""},
		{"offline_access listed", nil, []string{"a"}, []string{"a", "offline_access"}, "a offline_access"},
		{"offline_access not listed", nil, []string{"a"}, []string{"a", "b"}, "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
				r.res.prm.ScopesSupported = tc.supported
				r.as.meta.ScopesSupported = tc.asScopes
			})
			rig.res.require(tc.challenge...)
			if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
				t.Fatal(err)
			}
			if got := rig.as.authQuery(0).Get("scope"); got != tc.want {
				t.Fatalf("scope %q, want %q", got, tc.want)
			}
			// offline_access goes with prompt=consent (OpenID Connect).
			if got, want := rig.as.authQuery(0).Get("prompt"), strings.Contains(tc.want, "offline_access"); (got == "consent") != want || (got != "" && !want) {
				t.Fatalf("prompt %q for scope %q", got, tc.want)
			}
		})
	}
}

// TestOAuthRefusesAForeignResource: metadata whose resource is another
// server's is refused before any authorization.
func TestOAuthRefusesAForeignResource(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.res.prm.Resource = "https://evil.example.com/mcp" })
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	ae := authErrorOf(t, err)
	if ae.Step != "protected resource metadata" || ae.Field != "resource" {
		t.Fatalf("%v", err)
	}
	if n := rig.as.authorizations(); n != 0 {
		t.Fatalf("%d authorizations, want 0", n)
	}
}

// TestOAuthIssuerChecks: RFC 9207 on the authorization response (iss
// compared as a string; required where advertised) and RFC 8414 on the
// metadata (issuer exactly the one asked for).
func TestOAuthIssuerChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		iss        string
		advertised bool
		metaIssuer string // "" the right one
		step       string // "" success
	}{
		{"correct", "correct", true, "", ""},
		{"absent and not advertised", "omit", false, "", ""},
		{"wrong", "wrong", true, "", "authorization"},
		{"wrong and not advertised", "wrong", false, "", "authorization"},
		{"trailing slash", "slash", true, "", "authorization"},
		{"absent but advertised", "omit", true, "", "authorization"},
		{"metadata issuer mismatch", "correct", true, "https://attacker.example.com", "authorization server metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
				r.as.issMode = tc.iss
				r.as.meta.AuthorizationResponseIssParameterSupported = tc.advertised
				if tc.metaIssuer != "" {
					r.as.meta.Issuer = tc.metaIssuer
				}
			})
			_, err := get(t.Context(), rig.transport(), rig.res.url)
			if tc.step == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ae := authErrorOf(t, err)
			if ae.Step != tc.step || (ae.Field != "iss" && ae.Field != "issuer") {
				t.Fatalf("%v", err)
			}
			if rig.as.tokenRequests() != 0 {
				t.Fatal("the code went to the token endpoint")
			}
		})
	}
}

// TestOAuthRefusesWithoutS256: metadata that lists no S256 code challenge
// method is refused before the user is sent anywhere.
func TestOAuthRefusesWithoutS256(t *testing.T) {
	t.Parallel()
	for _, methods := range [][]string{nil, {"plain"}} {
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.CodeChallengeMethodsSupported = methods })
		_, err := get(t.Context(), rig.transport(), rig.res.url)
		if ae := authErrorOf(t, err); ae.Field != "code_challenge_methods_supported" {
			t.Fatalf("%v", err)
		}
		if rig.h.calls.Load() != 0 {
			t.Fatal("the handler was called")
		}
	}
}

// TestOAuthClientIdentity: pre-registered credentials win, then a client
// ID metadata document where the server accepts one, then a registration,
// made once per issuer and never used at another.
func TestOAuthClientIdentity(t *testing.T) {
	t.Parallel()
	const cimd = "https://client.example/meta.json"
	t.Run("pre-registered", func(t *testing.T) {
		t.Parallel()
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.ClientIDMetadataDocumentSupported = true })
		rig.cfg.ClientID, rig.cfg.ClientSecret, rig.cfg.ClientIDMetadataURL = "pre", "s3cret", cimd
		if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
			t.Fatal(err)
		}
		if id := rig.as.authQuery(0).Get("client_id"); id != "pre" || rig.as.registered() != 0 {
			t.Fatalf("client_id %q, %d registrations", id, rig.as.registered())
		}
	})
	t.Run("metadata document", func(t *testing.T) {
		t.Parallel()
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.ClientIDMetadataDocumentSupported = true })
		rig.cfg.ClientIDMetadataURL = cimd
		if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
			t.Fatal(err)
		}
		if id := rig.as.authQuery(0).Get("client_id"); id != cimd || rig.as.registered() != 0 {
			t.Fatalf("client_id %q, %d registrations", id, rig.as.registered())
		}
	})
	t.Run("registration per issuer", func(t *testing.T) {
		t.Parallel()
		rig := newOAuthRig(t, okHandler)
		rig.cfg.ClientIDMetadataURL = cimd // not supported by the server: unused
		store := NewMemoryTokenStore()
		rig.cfg.Store = store
		o := rig.transport()
		if _, err := get(t.Context(), o, rig.res.url); err != nil {
			t.Fatal(err)
		}
		// A new sign-in at the same issuer reuses the registration.
		rig.as.revoke()
		rig.as.mu.Lock()
		clear(rig.as.refreshTokens)
		rig.as.mu.Unlock()
		if _, err := get(t.Context(), o, rig.res.url); err != nil {
			t.Fatal(err)
		}
		if n := rig.as.registered(); n != 1 || rig.as.authorizations() != 2 {
			t.Fatalf("%d registrations for %d authorizations at one issuer, want 1 for 2", n, rig.as.authorizations())
		}
		// The resource moves to another authorization server: the client
		// registers there, and presents only that registration.
		as2 := startedAS(t, "as2")
		rig.res.moveTo(as2)
		if _, err := get(t.Context(), o, rig.res.url); err != nil {
			t.Fatal(err)
		}
		reg1, _ := store.LoadClient(t.Context(), rig.as.meta.Issuer)
		reg2, _ := store.LoadClient(t.Context(), as2.meta.Issuer)
		if as2.registered() != 1 || reg1 == nil || reg2 == nil || reg2.ClientID == reg1.ClientID {
			t.Fatalf("%d registrations at the new issuer; kept %+v and %+v", as2.registered(), reg1, reg2)
		}
		if id := as2.authQuery(0).Get("client_id"); id != reg2.ClientID {
			t.Fatalf("the new issuer saw client_id %q, want %q", id, reg2.ClientID)
		}
		if f := as2.tokenForm(0); f.Get("client_id") != reg2.ClientID {
			t.Fatalf("the new issuer's token request %v", f)
		}
	})
}

// TestOAuthTokenEndpointAuthMethods: the client authenticates at the token
// endpoint the way the server supports.
func TestOAuthTokenEndpointAuthMethods(t *testing.T) {
	t.Parallel()
	const secret = "a secret:with/odd&chars"
	for _, method := range []string{authMethodBasic, authMethodPost, authMethodNone} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
				r.as.meta.TokenEndpointAuthMethodsSupported = []string{method}
				r.as.clientAuth = func(r *http.Request, form url.Values) error {
					id, sec, basic := r.BasicAuth()
					id, _ = url.QueryUnescape(id)
					sec, _ = url.QueryUnescape(sec)
					var ok bool
					switch method {
					case authMethodBasic:
						ok = basic && id == "pre" && sec == secret && !form.Has("client_secret")
					case authMethodPost:
						ok = !basic && form.Get("client_id") == "pre" && form.Get("client_secret") == secret
					default:
						ok = !basic && form.Get("client_id") == "pre" && !form.Has("client_secret")
					}
					if !ok {
						return errors.New("want " + method)
					}
					return nil
				}
			})
			rig.cfg.ClientID = "pre"
			if method != authMethodNone {
				rig.cfg.ClientSecret = secret
			}
			if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOAuthClientCredentials: the client_credentials grant with a secret,
// and with a private_key_jwt assertion the server verifies.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	t.Run("secret", func(t *testing.T) {
		t.Parallel()
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.TokenEndpointAuthMethodsSupported = []string{authMethodBasic} })
		rig.cfg = OAuthConfig{Grant: GrantClientCredentials, ClientID: "m2m", ClientSecret: "s"}
		if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
			t.Fatal(err)
		}
		if id, s, ok := rig.as.tokenRequestBasic(0); !ok || id != "m2m" || s != "s" {
			t.Fatalf("basic auth %q %q %v", id, s, ok)
		}
		if f := rig.as.tokenForm(0); f.Get("grant_type") != GrantClientCredentials || f.Get("resource") != rig.res.url {
			t.Fatalf("token request %v", f)
		}
	})
	t.Run("private_key_jwt", func(t *testing.T) {
		t.Parallel()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
			r.as.meta.TokenEndpointAuthMethodsSupported = []string{authMethodJWT}
			issuer := r.as.meta.Issuer
			r.as.clientAuth = func(_ *http.Request, form url.Values) error {
				if form.Get("client_assertion_type") != clientAssertionType {
					return errors.New("client_assertion_type")
				}
				claims, err := verifyES256(form.Get("client_assertion"), &key.PublicKey)
				if err != nil {
					return err
				}
				if claims["iss"] != "m2m" || claims["sub"] != "m2m" || claims["aud"] != issuer || claims["jti"] == "" || claims["exp"] == nil || claims["iat"] == nil {
					return fmt.Errorf("claims %v", claims)
				}
				return nil
			}
		})
		rig.cfg = OAuthConfig{Grant: GrantClientCredentials, ClientID: "m2m", PrivateKey: key, KeyID: "k1"}
		if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
			t.Fatal(err)
		}
	})
}

func (a *fakeAS) tokenRequestBasic(i int) (string, string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &http.Request{Header: http.Header{"Authorization": {a.tokenAuth[i]}}}
	id, s, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	s, _ = url.QueryUnescape(s)
	return id, s, ok
}

// verifyES256 checks a compact JWS signed with ES256 and returns its
// claims.
func verifyES256(jws string, pub *ecdsa.PublicKey) (map[string]any, error) {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWS")
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("bad signature encoding")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return nil, errors.New("bad signature")
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	return claims, json.Unmarshal(payload, &claims)
}

// failingTokenStore is a TokenStore whose writes fail.
type failingTokenStore struct{ *MemoryTokenStore }

var errTokenStoreDown = errors.New("store is down")

func (failingTokenStore) StoreToken(context.Context, string, *Token) error { return errTokenStoreDown }

// TestOAuthTokenStoreErrorsSurface: a store that cannot keep the token
// fails the request with an *AuthError that wraps the store's error.
func TestOAuthTokenStoreErrorsSurface(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	rig.cfg.Store = failingTokenStore{NewMemoryTokenStore()}
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "store" || !errors.Is(err, errTokenStoreDown) {
		t.Fatalf("%v", err)
	}
}

// TestOAuthStoredTokens: a token kept in the store from an earlier run is
// used without a new sign-in; an expired one is refreshed; a revoked one
// leads to a new sign-in, not to a dead end.
func TestOAuthStoredTokens(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler)
	store := NewMemoryTokenStore()
	rig.cfg.Store = store
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
	if n := rig.as.authorizations(); n != 1 {
		t.Fatalf("kept: %d authorizations, want 1", n)
	}

	later := rig.transport()
	later.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := get(t.Context(), later, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if n, r := rig.as.authorizations(), rig.as.refreshes.Load(); n != 1 || r != 1 {
		t.Fatalf("expired: %d authorizations and %d refreshes, want 1 and 1", n, r)
	}

	rig.as.revoke()
	rig.as.mu.Lock()
	clear(rig.as.refreshTokens)
	rig.as.mu.Unlock()
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
	if n := rig.as.authorizations(); n != 2 {
		t.Fatalf("revoked: %d authorizations, want 2", n)
	}
}

// TestOAuthMaxResponseBytes: a metadata document of exactly the bound is
// read; one byte more is refused with an *AuthError.
func TestOAuthMaxResponseBytes(t *testing.T) {
	t.Parallel()
	const bound = 4096
	// pad makes the resource's metadata document (which json.Encoder ends
	// with a newline) extra bytes longer than the bound.
	pad := func(extra int) func(*oauthRig) {
		return func(r *oauthRig) {
			doc, _ := json.Marshal(r.res.prm)
			n := bound - (len(doc) + 1) - len(`,"resource_name":""`) + extra
			r.res.prm.ResourceName = strings.Repeat("x", n)
		}
	}
	rig := newOAuthRig(t, okHandler, pad(0))
	rig.cfg.MaxResponseBytes = bound
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	rig = newOAuthRig(t, okHandler, pad(1))
	rig.cfg.MaxResponseBytes = bound
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "protected resource metadata" {
		t.Fatalf("over the bound: %v", err)
	}
}

// TestOAuthDiscoveryOrder: the well-known URLs in the spec's order.
func TestOAuthDiscoveryOrder(t *testing.T) {
	t.Parallel()
	got := protectedResourceURLs("https://h.example/a/mcp", "")
	want := []string{"https://h.example/.well-known/oauth-protected-resource/a/mcp", "https://h.example/.well-known/oauth-protected-resource"}
	if !slices.Equal(got, want) {
		t.Errorf("PRM %q", got)
	}
	if got := protectedResourceURLs("https://h.example/mcp", "https://h.example/x.json"); !slices.Equal(got, []string{"https://h.example/x.json"}) {
		t.Errorf("PRM from the challenge %q", got)
	}
	got = authServerMetadataURLs("https://as.example/tenant1")
	want = []string{
		"https://as.example/.well-known/oauth-authorization-server/tenant1",
		"https://as.example/.well-known/openid-configuration/tenant1",
		"https://as.example/tenant1/.well-known/openid-configuration",
	}
	if !slices.Equal(got, want) {
		t.Errorf("AS with a path %q", got)
	}
	got = authServerMetadataURLs("https://as.example")
	want = []string{"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"}
	if !slices.Equal(got, want) {
		t.Errorf("AS at the root %q", got)
	}
}

// TestOAuthWellKnownFallback: without resource_metadata in the challenge,
// the metadata is found at the path-inserted well-known URL.
func TestOAuthWellKnownFallback(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.res.noPRMURL = true })
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
}

func TestResourceCovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resource, server string
		want             bool
	}{
		{"https://h.example/mcp", "https://h.example/mcp", true},
		{"https://h.example", "https://h.example/mcp", true},
		{"https://H.example/", "https://h.example/mcp", true},
		{"https://h.example/mc", "https://h.example/mcp", false},
		{"https://h.example/mcp/x", "https://h.example/mcp", false},
		{"https://evil.example/mcp", "https://h.example/mcp", false},
		{"http://h.example/mcp", "https://h.example/mcp", false},
		{"https://h.example:8443/mcp", "https://h.example/mcp", false},
		{"https://h.example/mcp#f", "https://h.example/mcp", false},
	} {
		if got := resourceCovers(tc.resource, tc.server); got != tc.want {
			t.Errorf("resourceCovers(%q, %q) = %v", tc.resource, tc.server, got)
		}
	}
}

// TestOAuthRefusesInsecureEndpoints: authorization server URLs must be
// https, or http on a loopback host.
func TestOAuthRefusesInsecureEndpoints(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"https://as.example/token": true, "http://127.0.0.1:8080/token": true, "http://localhost/token": true,
		"http://[::1]:9/token": true, "http://as.example/token": false, "ftp://as.example/token": false, "http://10.0.0.1/token": false,
	} {
		if got := secureEndpoint(raw); got != want {
			t.Errorf("secureEndpoint(%q) = %v", raw, got)
		}
	}
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.TokenEndpoint = "http://as.example/token" })
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "authorization server metadata" || ae.Field != "token_endpoint" {
		t.Fatalf("%v", err)
	}
}

// TestOAuthRefusesABadMetadataDocumentURL: a client ID metadata document
// URL must be https with a path.
func TestOAuthRefusesABadMetadataDocumentURL(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) { r.as.meta.ClientIDMetadataDocumentSupported = true })
	rig.cfg.ClientIDMetadataURL = "http://client.example/meta.json"
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "registration" || ae.Field != "client_id" {
		t.Fatalf("%v", err)
	}
}

// TestOAuthLeavesNoGoroutine: once a sign-in and a refresh are over,
// nothing of the OAuth client runs.
func TestOAuthLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	rig := newOAuthRig(t, okHandler)
	base := &http.Transport{}
	o := newOAuthTransport(rig.res.url, base, rig.cfg)
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	rig.as.revoke()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if rig.as.refreshes.Load() != 1 {
		t.Fatal("no refresh")
	}
	base.CloseIdleConnections()
	rig.as.srv.Close()
	rig.res.srv.Close()
	settleGoroutines(t, before)
}

// TestOAuthRefusesAPlainResourceMetadataURL: a challenge whose
// resource_metadata is plain http on a host that is not loopback is
// refused before anything is fetched from it; https and loopback are
// fetched.
func TestOAuthRefusesAPlainResourceMetadataURL(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"http://metadata.example/.well-known/oauth-protected-resource": false,
		"http://10.0.0.1/prm":     false,
		"ftp://metadata.example/": false,
		"https://metadata.example/.well-known/oauth-protected-resource": true,
		"http://127.0.0.1:1/prm": true,
	} {
		var fetched []string
		o := newOAuthTransport("http://127.0.0.1:1/mcp", nil, OAuthConfig{HTTPClient: &http.Client{
			Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				fetched = append(fetched, r.URL.String())
				return nil, errors.New("offline")
			})}})
		_, err := o.discoverResource(t.Context(), raw)
		ae := authErrorOf(t, err)
		if got := ae.Field == "resource_metadata" && len(fetched) == 0; got == ok {
			t.Errorf("%s: %v, fetched %q", raw, err, fetched)
		}
	}
}
