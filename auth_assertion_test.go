package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeIdP is an enterprise identity provider's token endpoint: it
// exchanges an ID token for an ID-JAG by RFC 8693 token exchange.
type fakeIdP struct {
	srv *httptest.Server

	mu    sync.Mutex
	forms []url.Values
	auth  []string
}

func newFakeIdP(t *testing.T, answer func(w http.ResponseWriter, form url.Values)) *fakeIdP {
	idp := &fakeIdP{}
	idp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		idp.mu.Lock()
		idp.forms = append(idp.forms, r.PostForm)
		idp.auth = append(idp.auth, r.Header.Get("Authorization"))
		idp.mu.Unlock()
		answer(w, r.PostForm)
	}))
	t.Cleanup(idp.srv.Close)
	return idp
}

func (idp *fakeIdP) form(i int) (url.Values, string) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return idp.forms[i], idp.auth[i]
}

func (idp *fakeIdP) requests() int {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return len(idp.forms)
}

// issueJAG answers a token exchange with an ID-JAG naming the request's
// audience and resource.
func issueJAG(w http.ResponseWriter, form url.Values) {
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":      "jag." + form.Get("audience") + "." + form.Get("resource"),
		"issued_token_type": tokenTypeIDJAG,
		"token_type":        "N_A",
		"expires_in":        300,
	})
}

// TestOAuthEnterpriseManagedAuthorization: the user's ID token is
// exchanged at the identity provider for an ID-JAG (token exchange, id-jag,
// audience the authorization server's issuer, resource the MCP server,
// the IdP client's Basic credentials), which goes to the authorization
// server as the JWT bearer grant with the MCP client's own credentials.
func TestOAuthEnterpriseManagedAuthorization(t *testing.T) {
	t.Parallel()
	idp := newFakeIdP(t, issueJAG)
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
		r.as.meta.TokenEndpointAuthMethodsSupported = []string{authMethodBasic}
		r.as.meta.GrantTypesSupported = []string{grantJWTBearer}
		want := "jag." + r.as.meta.Issuer + "." + r.res.url
		r.as.assertion = func(a string) error {
			if a != want {
				return errors.New("not the ID-JAG the IdP issued: " + a)
			}
			return nil
		}
	})
	identityCalls := 0
	rig.cfg = OAuthConfig{ClientID: "mcp-client", ClientSecret: "mcp-secret", Enterprise: &EnterpriseAuthorization{
		TokenEndpoint: idp.srv.URL, ClientID: "idp-client", ClientSecret: "idp-secret",
		Identity: AssertionFunc(func(context.Context) (string, error) { identityCalls++; return "the-id-token", nil }),
	}}
	if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
		t.Fatal(err)
	}
	form, auth := idp.form(0)
	want := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
		"subject_token":        {"the-id-token"},
		"subject_token_type":   {TokenTypeIDToken},
		"audience":             {rig.as.meta.Issuer},
		"resource":             {rig.res.url},
	}
	if form.Encode() != want.Encode() {
		t.Errorf("token exchange\n got %s\nwant %s", form.Encode(), want.Encode())
	}
	if r := (&http.Request{Header: http.Header{"Authorization": {auth}}}); !basicIs(r, "idp-client", "idp-secret") {
		t.Errorf("IdP client authentication %q", auth)
	}
	f := rig.as.tokenForm(0)
	if f.Get("grant_type") != grantJWTBearer || f.Get("resource") != rig.res.url || f.Has("client_id") {
		t.Errorf("JWT bearer grant %v", f)
	}
	if id, s, ok := rig.as.tokenRequestBasic(0); !ok || id != "mcp-client" || s != "mcp-secret" {
		t.Errorf("AS client authentication %q %q %v", id, s, ok)
	}
	if identityCalls != 1 || rig.h.calls.Load() != 0 {
		t.Errorf("identity asked %d times, browser %d times", identityCalls, rig.h.calls.Load())
	}
}

func basicIs(r *http.Request, id, secret string) bool {
	i, s, ok := r.BasicAuth()
	return ok && i == id && s == secret
}

// TestOAuthEnterpriseFailures: what the identity provider or the
// application gets wrong ends the request with an *AuthError, each step
// tried once.
func TestOAuthEnterpriseFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		answer   func(w http.ResponseWriter, form url.Values)
		identity AssertionSource
		field    string
	}{
		{"refused", func(w http.ResponseWriter, _ url.Values) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": strings.Repeat("x", 10000)})
		}, nil, "error"},
		{"wrong issued type", func(w http.ResponseWriter, _ url.Values) {
			writeJSON(w, http.StatusOK, map[string]string{"access_token": "a", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		}, nil, "issued_token_type"},
		{"no identity", issueJAG, AssertionFunc(func(context.Context) (string, error) { return "", nil }), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			idp := newFakeIdP(t, tc.answer)
			rig := newOAuthRig(t, okHandler)
			identity := tc.identity
			if identity == nil {
				identity = AssertionFunc(func(context.Context) (string, error) { return "id", nil })
			}
			rig.cfg = OAuthConfig{ClientID: "c", Enterprise: &EnterpriseAuthorization{TokenEndpoint: idp.srv.URL, ClientID: "i", Identity: identity}}
			_, err := get(t.Context(), rig.transport(), rig.res.url)
			ae := authErrorOf(t, err)
			if ae.Step != "token exchange" || ae.Field != tc.field || len(ae.Error()) > 1000 {
				t.Errorf("%v", ae)
			}
			if rig.as.tokenRequests() != 0 || idp.requests() > 1 {
				t.Errorf("%d token requests at the AS, %d at the IdP", rig.as.tokenRequests(), idp.requests())
			}
		})
	}
}

// TestOAuthWorkloadIdentity: the workload's token file is the JWT bearer
// grant's assertion, read again when the token is stale; without a
// ClientID the client does not name itself.
func TestOAuthWorkloadIdentity(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("workload-jwt-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
		r.as.refresh = false
		r.as.ttl = 600
		r.as.assertion = func(a string) error {
			mu.Lock()
			seen = append(seen, a)
			mu.Unlock()
			return nil
		}
	})
	rig.cfg = OAuthConfig{Assertion: AssertionFile(file)}
	o := rig.transport()
	now := time.Now()
	o.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("workload-jwt-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(590 * time.Second) // inside the renewal margin
	mu.Unlock()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, " ") != "workload-jwt-1 workload-jwt-2" {
		t.Errorf("assertions %q", seen)
	}
	if f := rig.as.tokenForm(0); f.Has("client_id") || f.Get("grant_type") != grantJWTBearer {
		t.Errorf("token request %v", f)
	}
}

// TestOAuthAssertionRefusalIsFinal: a refused assertion is not sent again,
// and no other grant is tried.
func TestOAuthAssertionRefusalIsFinal(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
		r.as.assertion = func(string) error { return errors.New("expired") }
	})
	rig.cfg = OAuthConfig{ClientID: "w", Assertion: AssertionEnv("MCP_TEST_NO_SUCH_VARIABLE_SET")}
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "assertion" {
		t.Errorf("unset variable: %v", ae)
	}
	rig.cfg.Assertion = AssertionFunc(func(context.Context) (string, error) { return "stale-jwt", nil })
	_, err = get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Field != "error" || !strings.HasPrefix(ae.Reason, "invalid_grant") {
		t.Errorf("refused: %v", ae)
	}
	if n := rig.as.tokenRequests(); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	if f := rig.as.tokenForm(0); f.Get("client_id") != "w" || f.Get("assertion") != "stale-jwt" {
		t.Errorf("token request %v", f)
	}
}

func TestAssertionFileIsBounded(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, make([]byte, maxAssertionBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := AssertionFile(file).Assertion(t.Context()); err == nil {
		t.Fatal("an oversized file was read")
	}
	if _, err := AssertionFile(filepath.Join(t.TempDir(), "none")).Assertion(t.Context()); err == nil {
		t.Fatal("a missing file was read")
	}
}

// TestOAuthEnterpriseStepUp: a 403 insufficient_scope is answered by a
// new exchange at the identity provider and a new JWT bearer grant, both
// asking for the union of the scopes.
func TestOAuthEnterpriseStepUp(t *testing.T) {
	t.Parallel()
	idp := newFakeIdP(t, issueJAG)
	rig := newOAuthRig(t, okHandler)
	rig.res.require("read")
	rig.cfg = OAuthConfig{ClientID: "c", Enterprise: &EnterpriseAuthorization{TokenEndpoint: idp.srv.URL,
		Identity: AssertionFunc(func(context.Context) (string, error) { return "id", nil })}}
	o := rig.transport()
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	rig.res.require("read", "write")
	if _, err := get(t.Context(), o, rig.res.url); err != nil {
		t.Fatal(err)
	}
	if idp.requests() != 2 || rig.as.tokenRequests() != 2 {
		t.Fatalf("%d exchanges, %d grants", idp.requests(), rig.as.tokenRequests())
	}
	if f, _ := idp.form(1); f.Get("scope") != "read write" {
		t.Errorf("second exchange's scope %q", f.Get("scope"))
	}
	if f := rig.as.tokenForm(1); f.Get("scope") != "read write" {
		t.Errorf("second grant's scope %q", f.Get("scope"))
	}
}
