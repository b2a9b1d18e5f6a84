package mcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// parseProof verifies a DPoP proof with the key its own header carries and
// returns its header, its claims and the key's thumbprint, worked out here
// from the JWK's members as RFC 7638 says.
func parseProof(proof string) (header, claims map[string]any, jkt string, err error) {
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, nil, "", errors.New("not a compact JWS")
	}
	h, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, nil, "", err
	}
	if err := json.Unmarshal(h, &header); err != nil {
		return nil, nil, "", err
	}
	jwk, _ := header["jwk"].(map[string]any)
	if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" || jwk == nil || jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk["d"] != nil {
		return nil, nil, "", fmt.Errorf("header %v", header)
	}
	x, err1 := b64.DecodeString(fmt.Sprint(jwk["x"]))
	y, err2 := b64.DecodeString(fmt.Sprint(jwk["y"]))
	if err1 != nil || err2 != nil {
		return nil, nil, "", errors.New("jwk coordinates")
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
	if claims, err = verifyES256(proof, pub); err != nil {
		return nil, nil, "", err
	}
	canonical := fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}`, jwk["x"], jwk["y"])
	sum := sha256.Sum256([]byte(canonical))
	return header, claims, b64.EncodeToString(sum[:]), nil
}

func TestDPoPProof(t *testing.T) {
	t.Parallel()
	key, err := newDPoPKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://MCP.example.com:8443/mcp?session=1#frag")
	now := time.Unix(1_800_000_000, 0)
	p1, err := key.proof("POST", u, "the-token", "n-1", now)
	if err != nil {
		t.Fatal(err)
	}
	_, claims, jkt, err := parseProof(p1)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("the-token"))
	want := map[string]any{"htm": "POST", "htu": "https://mcp.example.com:8443/mcp", "iat": float64(now.Unix()),
		"ath": b64.EncodeToString(sum[:]), "nonce": "n-1"}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("%s = %v, want %v", k, claims[k], v)
		}
	}
	if jti, _ := claims["jti"].(string); len(jti) < 16 {
		t.Errorf("jti %q", jti)
	}
	if jkt != key.thumbprint {
		t.Errorf("thumbprint %s, the key says %s", jkt, key.thumbprint)
	}
	// At the token endpoint: no ath, no nonce; a new jti every time.
	p2, _ := key.proof("POST", u, "", "", now)
	_, c2, _, err := parseProof(p2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c2["ath"]; ok {
		t.Error("ath without a token")
	}
	if _, ok := c2["nonce"]; ok {
		t.Error("nonce without one given")
	}
	if c2["jti"] == claims["jti"] {
		t.Error("jti repeated")
	}
}

func TestDPoPHTU(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://example.com/mcp?a=b#c":    "https://example.com/mcp",
		"HTTPS://Example.COM:443/MCP":      "https://example.com:443/MCP",
		"http://127.0.0.1:8080":            "http://127.0.0.1:8080/",
		"https://example.com/a%20b/?x":     "https://example.com/a%20b/",
		"https://example.com/token#only":   "https://example.com/token",
		"https://user@example.com/p?q=1&r": "https://example.com/p",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := dpopHTU(u); got != want {
			t.Errorf("dpopHTU(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDPoPKeyMustBeP256(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newDPoPKey(rsaKey); err == nil {
		t.Error("an RSA key was taken")
	}
	if _, err := newDPoPKey(p384); err == nil {
		t.Error("a P-384 key was taken")
	}
	o := newOAuthTransport("http://127.0.0.1:1/mcp", nil, OAuthConfig{DPoPKey: rsaKey})
	_, err = get(t.Context(), o, "http://127.0.0.1:1/mcp")
	if ae := authErrorOf(t, err); ae.Step != "dpop" {
		t.Errorf("%v", ae)
	}
}

func TestDPoPNonces(t *testing.T) {
	t.Parallel()
	for n, ok := range map[string]bool{
		"abc-123_~.!": true, "": false, "with space": false, `quo"te`: false, `back\slash`: false,
		strings.Repeat("n", maxDPoPNonceBytes): true, strings.Repeat("n", maxDPoPNonceBytes+1): false, "tab\t": false,
	} {
		if validDPoPNonce(n) != ok {
			t.Errorf("validDPoPNonce(%.20q) = %v", n, !ok)
		}
	}
	var ns dpopNonces
	for i := range 3 * maxDPoPOrigins {
		u, _ := url.Parse(fmt.Sprintf("https://h%d.example/", i))
		ns.remember(u, "n")
	}
	if len(ns.byOr) > maxDPoPOrigins {
		t.Errorf("%d origins remembered", len(ns.byOr))
	}
	a, _ := url.Parse("https://A.example/x")
	b, _ := url.Parse("https://a.example/y?z")
	ns.remember(a, "first")
	ns.remember(b, "second")
	if ns.get(a) != "second" {
		t.Errorf("the latest nonce of the origin is %q", ns.get(a))
	}
}

// dpopRig is an authorization server and an MCP server that take only
// DPoP-bound tokens, on two origins. Each checks every proof: signature
// by the key in its header, htm, htu, and at the resource ath and the
// token's binding; each may demand a nonce.
type dpopRig struct {
	t      *testing.T
	as, rs *httptest.Server
	url    string // the MCP endpoint

	mu            sync.Mutex
	asNonce       string // demanded at the token endpoint ("" none)
	rsNonce       string // demanded at the resource
	rotate        bool   // demand a new nonce every time
	tokens        map[string]string
	refreshTokens map[string]string
	refuseOnce    bool // the resource refuses the next valid token once
	n             int
	tokenReqs     []dpopSeen
	rsReqs        []dpopSeen
	failures      []string
}

type dpopSeen struct {
	form   url.Values
	claims map[string]any
	jkt    string
	status int
}

func newDPoPRig(t *testing.T) *dpopRig {
	d := &dpopRig{t: t, tokens: map[string]string{}, refreshTokens: map[string]string{}}
	d.as = httptest.NewServer(http.HandlerFunc(d.serveAS))
	d.rs = httptest.NewServer(http.HandlerFunc(d.serveRS))
	t.Cleanup(d.as.Close)
	t.Cleanup(d.rs.Close)
	d.url = d.rs.URL + "/mcp"
	return d
}

func (d *dpopRig) fail(format string, args ...any) {
	d.failures = append(d.failures, fmt.Sprintf(format, args...))
}

func (d *dpopRig) check() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.failures {
		d.t.Error(f)
	}
}

// demand answers a proof without the nonce the server wants.
func (d *dpopRig) demand(want *string, claims map[string]any) (string, bool) {
	if *want == "" || (claims["nonce"] == *want && !d.rotate) {
		return "", false
	}
	if d.rotate {
		d.n++
		*want = fmt.Sprintf("nonce-%d", d.n)
	}
	return *want, true
}

func (d *dpopRig) serveAS(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.URL.Path == "/.well-known/oauth-authorization-server" {
		writeJSON(w, http.StatusOK, AuthorizationServerMetadata{Issuer: d.as.URL, TokenEndpoint: d.as.URL + "/token",
			TokenEndpointAuthMethodsSupported: []string{"none"}})
		return
	}
	r.ParseForm()
	seen := dpopSeen{form: r.PostForm, status: http.StatusOK}
	defer func() { d.tokenReqs = append(d.tokenReqs, seen) }()
	_, claims, jkt, err := parseProof(r.Header.Get("DPoP"))
	if err != nil || claims["htm"] != "POST" || claims["htu"] != d.as.URL+"/token" || claims["ath"] != nil {
		d.fail("token request proof: %v %v", err, claims)
		seen.status = http.StatusBadRequest
		writeJSON(w, seen.status, map[string]string{"error": "invalid_dpop_proof"})
		return
	}
	seen.claims, seen.jkt = claims, jkt
	if nonce, ok := d.demand(&d.asNonce, claims); ok {
		seen.status = http.StatusBadRequest
		w.Header().Set("DPoP-Nonce", nonce)
		writeJSON(w, seen.status, map[string]string{"error": "use_dpop_nonce"})
		return
	}
	if r.PostForm.Get("grant_type") == "refresh_token" {
		if bound, ok := d.refreshTokens[r.PostForm.Get("refresh_token")]; !ok || bound != jkt {
			d.fail("refresh with a proof of another key, or an unknown refresh token")
			seen.status = http.StatusBadRequest
			writeJSON(w, seen.status, map[string]string{"error": "invalid_grant"})
			return
		}
	}
	d.n++
	at, rt := fmt.Sprintf("at-%d", d.n), fmt.Sprintf("rt-%d", d.n)
	d.tokens[at], d.refreshTokens[rt] = jkt, jkt
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "DPoP", "expires_in": 3600, "refresh_token": rt})
}

func (d *dpopRig) serveRS(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		writeJSON(w, http.StatusOK, ProtectedResourceMetadata{Resource: d.url, AuthorizationServers: []string{d.as.URL}})
		return
	}
	challenge := `DPoP algs="ES256", resource_metadata="` + d.rs.URL + `/.well-known/oauth-protected-resource/mcp"`
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "DPoP ")
	if !ok {
		if r.Header.Get("Authorization") != "" {
			d.fail("scheme of %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	seen := dpopSeen{status: http.StatusOK}
	defer func() { d.rsReqs = append(d.rsReqs, seen) }()
	_, claims, jkt, err := parseProof(r.Header.Get("DPoP"))
	sum := sha256.Sum256([]byte(token))
	if err != nil || claims["htm"] != r.Method || claims["htu"] != d.url || claims["ath"] != b64.EncodeToString(sum[:]) || d.tokens[token] != jkt {
		d.fail("resource request proof: %v %v (bound to %s, proof of %s)", err, claims, d.tokens[token], jkt)
		seen.status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_dpop_proof"`)
		w.WriteHeader(seen.status)
		return
	}
	seen.claims, seen.jkt = claims, jkt
	if nonce, ok := d.demand(&d.rsNonce, claims); ok {
		seen.status = http.StatusUnauthorized
		w.Header().Set("DPoP-Nonce", nonce)
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"`)
		w.WriteHeader(seen.status)
		return
	}
	if d.refuseOnce {
		d.refuseOnce = false
		seen.status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token"`)
		w.WriteHeader(seen.status)
		return
	}
	w.Write([]byte("ok"))
}

func (d *dpopRig) counts() (tokenReqs, rsReqs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.tokenReqs), len(d.rsReqs)
}

// TestOAuthDPoP: the token request carries a proof, the token comes back
// bound and goes to the resource as a DPoP token with a fresh proof per
// request; a refresh carries a proof of the same key and keeps the
// binding.
func TestOAuthDPoP(t *testing.T) {
	t.Parallel()
	d := newDPoPRig(t)
	o := newOAuthTransport(d.url, nil, OAuthConfig{DPoP: true, Grant: GrantClientCredentials, ClientID: "c"})
	for range 3 {
		if _, err := get(t.Context(), o, d.url); err != nil {
			t.Fatal(err)
		}
	}
	d.mu.Lock()
	d.refuseOnce = true
	d.mu.Unlock()
	if _, err := get(t.Context(), o, d.url); err != nil {
		t.Fatal(err)
	}
	d.check()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.tokenReqs) != 2 || d.tokenReqs[1].form.Get("grant_type") != "refresh_token" {
		t.Fatalf("token requests %+v", d.tokenReqs)
	}
	jtis := map[any]bool{}
	for _, s := range append(d.tokenReqs, d.rsReqs...) {
		if s.jkt != o.dpop.thumbprint {
			t.Errorf("a proof of key %s, not %s", s.jkt, o.dpop.thumbprint)
		}
		if jtis[s.claims["jti"]] {
			t.Errorf("jti %v sent twice", s.claims["jti"])
		}
		jtis[s.claims["jti"]] = true
	}
	if len(d.rsReqs) != 5 { // three, then one refused and sent again after the refresh
		t.Errorf("%d authorized requests at the resource", len(d.rsReqs))
	}
	if o.state.token.TokenType != tokenTypeDPoP || o.state.token.KeyThumbprint != o.dpop.thumbprint {
		t.Errorf("token %+v", o.state.token)
	}
}

// TestOAuthDPoPNonce: a nonce demanded at the token endpoint and at the
// resource is sent once more with the request, and remembered per origin
// for the next requests.
func TestOAuthDPoPNonce(t *testing.T) {
	t.Parallel()
	d := newDPoPRig(t)
	d.asNonce, d.rsNonce = "as-nonce", "rs-nonce"
	o := newOAuthTransport(d.url, nil, OAuthConfig{DPoP: true, Grant: GrantClientCredentials, ClientID: "c"})
	for range 2 {
		if _, err := get(t.Context(), o, d.url); err != nil {
			t.Fatal(err)
		}
	}
	d.check()
	if tokenReqs, rsReqs := d.counts(); tokenReqs != 2 || rsReqs != 3 {
		t.Errorf("%d token requests (want 2: the nonce demanded, then honoured), %d resource requests (want 3)", tokenReqs, rsReqs)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tokenReqs[1].claims["nonce"] != "as-nonce" || d.rsReqs[2].claims["nonce"] != "rs-nonce" {
		t.Errorf("nonces sent: %v, %v", d.tokenReqs[1].claims["nonce"], d.rsReqs[2].claims["nonce"])
	}
}

// TestOAuthDPoPNonceIsRetriedOnce: a server that demands a new nonce every
// time gets one retry per request, then an *AuthError; a nonce too long
// or malformed to repeat gets none.
func TestOAuthDPoPNonceIsRetriedOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		setup             func(d *dpopRig)
		tokenReqs, rsReqs int
		step              string // of the *AuthError
	}{
		{"token endpoint", func(d *dpopRig) { d.asNonce, d.rotate = "n", true }, 2, 0, "token"},
		{"resource", func(d *dpopRig) { d.rsNonce, d.rotate = "n", true }, 1, 2, "dpop"},
		{"hostile nonce", func(d *dpopRig) { d.asNonce = strings.Repeat("n", maxDPoPNonceBytes+1) }, 1, 0, "token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDPoPRig(t)
			tc.setup(d)
			o := newOAuthTransport(d.url, nil, OAuthConfig{DPoP: true, Grant: GrantClientCredentials, ClientID: "c"})
			_, err := get(t.Context(), o, d.url)
			if ae := authErrorOf(t, err); ae.Step != tc.step {
				t.Errorf("%v", ae)
			}
			if tokenReqs, rsReqs := d.counts(); tokenReqs != tc.tokenReqs || rsReqs != tc.rsReqs {
				t.Errorf("%d token requests, %d resource requests; want %d, %d", tokenReqs, rsReqs, tc.tokenReqs, tc.rsReqs)
			}
		})
	}
}

// TestOAuthDPoPStoredTokenKeepsItsKey: a stored token bound to a key is
// used by a client holding that key, and by no other: that one obtains
// its own.
func TestOAuthDPoPStoredTokenKeepsItsKey(t *testing.T) {
	t.Parallel()
	d := newDPoPRig(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	store := NewMemoryTokenStore()
	cfg := OAuthConfig{DPoPKey: key, Grant: GrantClientCredentials, ClientID: "c", Store: store}
	if _, err := get(t.Context(), newOAuthTransport(d.url, nil, cfg), d.url); err != nil {
		t.Fatal(err)
	}
	stored, err := store.LoadToken(t.Context(), tokenKey(d.as.URL, d.url))
	if err != nil || stored.TokenType != tokenTypeDPoP || stored.KeyThumbprint == "" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if _, err := get(t.Context(), newOAuthTransport(d.url, nil, cfg), d.url); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.counts(); n != 1 {
		t.Fatalf("%d token requests: the same key did not reuse its stored token", n)
	}
	cfg.DPoPKey = nil
	cfg.DPoP = true // a key of its own
	if _, err := get(t.Context(), newOAuthTransport(d.url, nil, cfg), d.url); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.counts(); n != 2 {
		t.Fatalf("%d token requests: another key used the stored token", n)
	}
	d.check()
	if !(&Token{AccessToken: "a"}).usableWith(nil) || (&Token{TokenType: "DPoP"}).usableWith(nil) {
		t.Error("usableWith")
	}
}
