package mcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// newLegacyServer makes a 2025-03-26 server: an MCP endpoint at /mcp with
// no protected resource metadata (its challenge names none), on the origin
// of a fakeAS that is its authorization server. setup may change the
// fakeAS's metadata before it starts. It returns the fakeAS and the MCP
// URL.
func newLegacyServer(t *testing.T, setup func(*fakeAS)) (*fakeAS, string) {
	a := newFakeAS(t)
	mux := http.NewServeMux()
	mux.Handle("/", a.srv.Config.Handler)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, ok := a.grantOf(token); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		okHandler.ServeHTTP(w, r)
	})
	a.srv.Config.Handler = mux
	if setup != nil {
		setup(a)
	}
	a.srv.Start()
	return a, a.srv.URL + "/mcp"
}

// TestOAuthLegacyDiscoveryTrustsNoNamedIssuer: a 2025-03-26 server whose
// origin's metadata names the issuer of another authorization server (the
// victim, whose registration a shared TokenStore keeps) gets nothing of
// the victim's: not its stored client_secret, not a private_key_jwt
// assertion for its audience, and no registration is kept under its
// issuer. The same server naming its own origin signs in.
func TestOAuthLegacyDiscoveryTrustsNoNamedIssuer(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		methods []string // the attacker's token_endpoint_auth_methods_supported
		cfg     func(*OAuthConfig)
		stored  bool // the shared store holds the victim's registration
	}{
		{"stored registration", []string{authMethodPost}, nil, true},
		{"private_key_jwt", []string{authMethodJWT}, func(c *OAuthConfig) { c.ClientID, c.PrivateKey = "pre", key }, false},
		{"empty store", []string{authMethodNone, authMethodPost}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			victim := startedAS(t, "victim")
			victimReg := &ClientRegistration{ClientID: "victim-client", ClientSecret: "victim-secret", TokenEndpointAuthMethod: authMethodPost}
			store := NewMemoryTokenStore()
			if tc.stored {
				store.StoreClient(t.Context(), victim.meta.Issuer, victimReg)
			}
			attacker, mcpURL := newLegacyServer(t, func(a *fakeAS) {
				a.meta.Issuer = victim.meta.Issuer
				a.meta.TokenEndpointAuthMethodsSupported = tc.methods
			})
			cfg := OAuthConfig{Handler: &approve{}, RedirectURL: testRedirect, Store: store}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, err := get(t.Context(), newOAuthTransport(mcpURL, nil, cfg), mcpURL)
			if n := attacker.tokenRequests(); n != 0 {
				t.Errorf("the attacker's token endpoint got %d requests, the first %v", n, attacker.tokenForm(0))
			}
			if n := attacker.registered(); n != 0 {
				t.Errorf("the client registered %d times at the attacker", n)
			}
			reg, lerr := store.LoadClient(t.Context(), victim.meta.Issuer)
			switch {
			case tc.stored && !reflect.DeepEqual(reg, victimReg):
				t.Errorf("the victim's registration became %+v", reg)
			case !tc.stored && !errors.Is(lerr, ErrNoToken):
				t.Errorf("kept under the victim's issuer: %+v", reg)
			}
			if ae := authErrorOf(t, err); ae.Step != "authorization server metadata" || ae.Field != "issuer" {
				t.Fatalf("%v", err)
			}
		})
	}
	t.Run("own origin", func(t *testing.T) {
		t.Parallel()
		as, mcpURL := newLegacyServer(t, nil)
		if _, err := get(t.Context(), newOAuthTransport(mcpURL, nil, OAuthConfig{Handler: &approve{}, RedirectURL: testRedirect}), mcpURL); err != nil {
			t.Fatal(err)
		}
		if as.registered() != 1 || as.authorizations() != 1 {
			t.Fatalf("%d registrations and %d authorizations, want 1 and 1", as.registered(), as.authorizations())
		}
	})
}

// TestOAuthLegacyDiscovery: a server with no protected resource metadata
// is its own authorization server, as on 2025-03-26: metadata at its
// origin that names an issuer on the origin, else the default endpoints;
// metadata there that names an issuer elsewhere is refused.
func TestOAuthLegacyDiscovery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		noMetadata bool
		issuer     func(origin string) string
		ok         bool
	}{
		{"metadata", false, func(o string) string { return o }, true},
		{"no metadata", true, func(o string) string { return o }, true},
		{"a path on the origin", false, func(o string) string { return o + "/oauth" }, true},
		{"another origin", false, func(string) string { return "https://as.example" }, false},
		{"another scheme", false, func(o string) string { return strings.Replace(o, "http:", "https:", 1) }, false},
		{"another port", false, func(o string) string { return o + "1" }, false},
		{"user information", false, func(o string) string { return strings.Replace(o, "//", "//u@", 1) }, false},
	} {
		as := newFakeAS(t)
		as.noMetadata = tc.noMetadata
		as.meta.Issuer = tc.issuer(as.meta.Issuer)
		as.srv.Start()
		origin := as.srv.URL
		o := newOAuthTransport(origin+"/mcp", nil, OAuthConfig{})
		prm, meta, err := o.legacyDiscovery(t.Context())
		if !tc.ok {
			if ae := authErrorOf(t, err); ae.Field != "issuer" {
				t.Fatalf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := AuthorizationServerMetadata{Issuer: origin, AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token",
			RegistrationEndpoint: origin + "/register", CodeChallengeMethodsSupported: []string{"S256"}}
		if !tc.noMetadata {
			want = as.meta
		}
		if !reflect.DeepEqual(*meta, want) || prm.Resource != origin+"/mcp" || !slices.Equal(prm.AuthorizationServers, []string{want.Issuer}) {
			t.Fatalf("%s: got %+v and %+v", tc.name, prm, meta)
		}
	}
}

// TestOAuthPinnedClient: pre-registered credentials pinned to their issuer
// (OAuthConfig.ClientIssuer) go to that issuer when the resource lists it
// among others, and nowhere at a resource that names only another.
func TestOAuthPinnedClient(t *testing.T) {
	t.Parallel()
	t.Run("named only another", func(t *testing.T) {
		t.Parallel()
		home := startedAS(t, "home")
		rig := newOAuthRig(t, okHandler) // rig.as is the other one
		rig.cfg.ClientID, rig.cfg.ClientSecret, rig.cfg.ClientIssuer = "pre", "s3cret", home.meta.Issuer
		_, err := get(t.Context(), rig.transport(), rig.res.url)
		if ae := authErrorOf(t, err); ae.Step != "registration" || ae.Field != "client_id" {
			t.Fatalf("%v", err)
		}
		if rig.as.authorizations() != 0 || rig.as.tokenRequests() != 0 || home.authorizations() != 0 {
			t.Fatal("the credentials went somewhere")
		}
	})
	t.Run("listed second", func(t *testing.T) {
		t.Parallel()
		home := startedAS(t, "home")
		rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
			r.res.trusted = append(r.res.trusted, home)
			r.res.prm.AuthorizationServers = append(r.res.prm.AuthorizationServers, home.meta.Issuer)
		})
		rig.cfg.ClientID, rig.cfg.ClientSecret, rig.cfg.ClientIssuer = "pre", "s3cret", home.meta.Issuer
		if _, err := get(t.Context(), rig.transport(), rig.res.url); err != nil {
			t.Fatal(err)
		}
		if rig.as.authorizations() != 0 || home.authorizations() != 1 || home.authQuery(0).Get("client_id") != "pre" {
			t.Fatalf("%d authorizations at the first, %d at the pinned issuer", rig.as.authorizations(), home.authorizations())
		}
	})
}

// TestOAuthTokenRequestFollowsNoRedirect: a token endpoint that redirects
// elsewhere fails the request; where it points gets nothing, the client's
// secret least of all.
func TestOAuthTokenRequestFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer sink.Close()
	bounce := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+"/token", http.StatusTemporaryRedirect)
	}))
	defer bounce.Close()
	rig := newOAuthRig(t, okHandler, func(r *oauthRig) {
		r.as.meta.TokenEndpoint = bounce.URL + "/token"
		r.as.meta.TokenEndpointAuthMethodsSupported = []string{authMethodPost}
	})
	rig.cfg.ClientID, rig.cfg.ClientSecret = "pre", "s3cret"
	_, err := get(t.Context(), rig.transport(), rig.res.url)
	if ae := authErrorOf(t, err); ae.Step != "token" || ae.Status != http.StatusTemporaryRedirect {
		t.Fatalf("%v", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}
