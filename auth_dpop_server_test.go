package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// dpopClient makes DPoP proofs with its key, as RFC 9449 §4.2 has a
// client do, or forged in the ways the tests ask.
type dpopClient struct {
	key crypto.Signer
	jti atomic.Int64
}

func newDPoPClient(t testing.TB) *dpopClient {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &dpopClient{key: key}
}

// publicJWK is a public key as a proof's jwk carries it.
func publicJWK(pub crypto.PublicKey) map[string]any {
	jwk := jwkOf("", pub)
	delete(jwk, "kid")
	delete(jwk, "use")
	delete(jwk, "alg")
	return jwk
}

// thumbprint is the RFC 7638 thumbprint of pub: the SHA-256 of its
// required members, sorted, without white space (as encoding/json writes
// a map).
func thumbprint(pub crypto.PublicKey) string {
	req := map[string]any{}
	for k, v := range publicJWK(pub) {
		switch k {
		case "kty", "crv", "x", "y", "n", "e":
			req[k] = v
		}
	}
	data, _ := json.Marshal(req)
	sum := sha256.Sum256(data)
	return b64.EncodeToString(sum[:])
}

// jkt is the thumbprint of the client's key.
func (c *dpopClient) jkt() string { return thumbprint(c.key.Public()) }

// proof is a valid proof for method and url presenting token, with the
// header and claims changed by edit (a nil value deletes a member).
func (c *dpopClient) proof(t testing.TB, method, url, token string, edit map[string]any) string {
	t.Helper()
	header := map[string]any{"typ": "dpop+jwt", "alg": algES256, "jwk": publicJWK(c.key.Public())}
	claims := map[string]any{"jti": fmt.Sprintf("jti-%d", c.jti.Add(1)), "htm": method, "htu": url, "iat": time.Now().Unix(), "ath": accessTokenHash(token)}
	for k, v := range edit {
		m := claims
		if name, ok := strings.CutPrefix(k, "header."); ok {
			m, k = header, name
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return signProof(t, c.key, header, claims)
}

// signProof signs header and claims by the header's alg: ES256, EdDSA,
// PS256 and RS256 with key, HS256 with a secret, none not at all.
func signProof(t testing.TB, key crypto.Signer, header, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch header["alg"] {
	case algES256:
		var der []byte
		if der, err = key.Sign(rand.Reader, digest[:], crypto.SHA256); err == nil {
			sig, err = ecdsaRawSignature(der)
		}
	case algRS256:
		sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
	case algPS256:
		sig, err = key.Sign(rand.Reader, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256})
	case algEdDSA:
		sig, err = key.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	case "HS256":
		mac := hmac.New(sha256.New, []byte("a shared secret"))
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64.EncodeToString(sig)
}

// dpopServer serves the bearer test tools behind a BearerAuth with DPoP;
// its tokens are the issuer's.
func dpopServer(t testing.TB, iss *testIssuer, opts ...DPoPOption) (*httptest.Server, *DPoPVerifier) {
	t.Helper()
	dv := NewDPoPVerifier(opts...)
	auth := bearerTestAuth(t, iss, JWTVerifierConfig{})
	auth.DPoP = dv
	return serveHTTP(t, bearerTools(nil), WithAuthorizer(auth)), dv
}

// boundToken is an access token of the issuer bound to the client's key.
func (c *dpopClient) boundToken(t testing.TB, iss *testIssuer) string {
	return iss.token(t, algES256, iss.claims(map[string]any{"cnf": map[string]any{"jkt": c.jkt()}}))
}

// dpopCall POSTs a 2026-07-28 tools/call of whoami with the Authorization
// header authorization and the given DPoP headers.
func dpopCall(t testing.TB, url, authorization string, proofs ...string) httpReply {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(modernRequest("1", "tools/call", `"name":"whoami","arguments":{}`)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range modernHeaders("tools/call", "Mcp-Name", "whoami") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Authorization", authorization)
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return httpReply{status: res.StatusCode, header: res.Header, body: string(body)}
}

// TestDPoPForgedProofs: a valid proof passes; each forgery, alone, gets
// 401 with the challenge RFC 9449 §7.1 gives it, the Bearer challenge
// after it.
func TestDPoPForgedProofs(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts, _ := dpopServer(t, iss)
	alice := newDPoPClient(t)
	token := alice.boundToken(t, iss)
	url := ts.URL + "/"
	now := time.Now().Unix()

	if r := dpopCall(t, ts.URL, "DPoP "+token, alice.proof(t, "POST", url, token, nil)); r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read") {
		t.Fatalf("a valid proof: %d %s", r.status, r.body)
	}
	replayed := alice.proof(t, "POST", url, token, nil)
	if r := dpopCall(t, ts.URL, "DPoP "+token, replayed); r.status != 200 {
		t.Fatalf("a proof's first use: %d %s", r.status, r.body)
	}
	mallory := newDPoPClient(t)
	rsaKey := testKeys()[algRS256].(*rsa.PrivateKey)
	unbound := iss.token(t, algES256, iss.claims(nil))
	privateJWK := publicJWK(alice.key.Public())
	privateJWK["d"] = b64.EncodeToString(alice.key.(*ecdsa.PrivateKey).D.Bytes())

	const proofError = `DPoP error="invalid_dpop_proof", error_description="DPoP proof: `
	const tokenError = `DPoP error="invalid_token", error_description="`
	for _, c := range []struct {
		name          string
		authorization string   // empty: "DPoP " + token
		proofs        []string // the DPoP headers
		want          string   // the challenge's start
		also          string   // in it too
	}{
		{name: "wrong htm", proofs: []string{alice.proof(t, "GET", url, token, nil)}, want: proofError + "claim htm"},
		{name: "wrong htu", proofs: []string{alice.proof(t, "POST", "https://mcp.example.com/", token, nil)}, want: proofError + "claim htu"},
		{name: "htu of another path", proofs: []string{alice.proof(t, "POST", ts.URL+"/other", token, nil)}, want: proofError + "claim htu"},
		{name: "stale iat", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"iat": now - 61})}, want: proofError + "claim iat: issued more than 1m0s ago"},
		{name: "future iat", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"iat": now + 30})}, want: proofError + "claim iat: issued in the future"},
		{name: "replayed jti", proofs: []string{replayed}, want: proofError + "claim jti: the proof was used before"},
		{name: "wrong ath", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"ath": accessTokenHash("another token")})}, want: proofError + "claim ath"},
		{name: "no ath", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"ath": nil})}, want: proofError + "claim ath"},
		{name: "no jti", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"jti": nil})}, want: proofError + "claim jti is missing"},
		{name: "key not the token's", proofs: []string{mallory.proof(t, "POST", url, token, nil)}, want: tokenError + "the DPoP proof's key is not the one the token is bound to"},
		{name: "alg none", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.alg": "none"})}, want: proofError + "header: alg"},
		{name: "alg HS256", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.alg": "HS256"})}, want: proofError + "header: alg"},
		{name: "alg of another key type", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.alg": algRS256})}, want: proofError + "header: jwk: a EC key does not sign RS256"},
		{name: "private jwk", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.jwk": privateJWK})}, want: proofError + `header: jwk: holds the private member 'd'`},
		{name: "no jwk", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.jwk": nil})}, want: proofError + "header: jwk: missing"},
		{name: "jwk of another key", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.jwk": publicJWK(mallory.key.Public())})}, want: proofError + "the signature does not verify"},
		{name: "jwk of an RSA key", proofs: []string{signProof(t, rsaKey, map[string]any{"typ": "dpop+jwt", "alg": algPS256, "jwk": publicJWK(rsaKey.Public())},
			map[string]any{"jti": "rsa", "htm": "POST", "htu": url, "iat": now, "ath": accessTokenHash(token)})}, want: tokenError + "the DPoP proof's key is not"},
		{name: "no typ", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.typ": nil})}, want: proofError + "header: typ must be dpop+jwt"},
		{name: "typ JWT", proofs: []string{alice.proof(t, "POST", url, token, map[string]any{"header.typ": "JWT"})}, want: proofError + "header: typ must be dpop+jwt"},
		{name: "two DPoP headers", proofs: []string{alice.proof(t, "POST", url, token, nil), alice.proof(t, "POST", url, token, nil)}, want: proofError + "the request must have exactly one DPoP header, it has 2"},
		{name: "no DPoP header", want: proofError + "the request must have exactly one DPoP header, it has 0"},
		{name: "not a JWS", proofs: []string{"a.b"}, want: proofError + "not a compact JWS"},
		{name: "bound token as Bearer", authorization: "Bearer " + token, proofs: []string{alice.proof(t, "POST", url, token, nil)},
			want: `Bearer error="invalid_token", error_description="invalid token: claim cnf: the token is bound to a key, which a bearer request does not prove"`, also: `DPoP algs="ES256 EdDSA PS256 RS256"`},
		{name: "unbound token as DPoP", authorization: "DPoP " + unbound,
			proofs: []string{alice.proof(t, "POST", url, unbound, nil)}, want: tokenError + "the token is not bound to a DPoP key (cnf.jkt)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			auth := c.authorization
			if auth == "" {
				auth = "DPoP " + token
			}
			r := dpopCall(t, ts.URL, auth, c.proofs...)
			got := r.header.Values("WWW-Authenticate")
			if r.status != 401 || len(got) != 2 || !strings.HasPrefix(got[0], c.want) {
				t.Fatalf("got %d %q %s\nwant 401 %q...", r.status, got, r.body, c.want)
			}
			if c.also != "" && got[1] != c.also+`, resource_metadata="`+testPRM+`", scope="mcp:read"` {
				t.Fatalf("second challenge %q, want %q", got[1], c.also)
			}
			if strings.HasPrefix(got[0], "DPoP") && (!strings.Contains(got[0], `, algs="ES256 EdDSA PS256 RS256", resource_metadata="`+testPRM+`"`) || !strings.HasPrefix(got[1], "Bearer resource_metadata=")) {
				t.Fatalf("challenges %q: want algs and the metadata, then a bare Bearer challenge", got)
			}
		})
	}
	// An unbound bearer token is still taken, and no credentials get
	// both challenges.
	if r := callTool(t, ts.URL, "whoami", "Bearer "+iss.token(t, algES256, iss.claims(nil))); r.status != 200 {
		t.Fatalf("an unbound bearer token: %d %s", r.status, r.body)
	}
	r := callTool(t, ts.URL, "whoami", "")
	want := []string{`Bearer resource_metadata="` + testPRM + `", scope="mcp:read"`, `DPoP algs="ES256 EdDSA PS256 RS256", resource_metadata="` + testPRM + `", scope="mcp:read"`}
	if got := r.header.Values("WWW-Authenticate"); r.status != 401 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("no credentials: %d %q, want %q", r.status, got, want)
	}
}

// TestDPoPAlgorithms: a proof of each algorithm passes with a token bound
// to its key, unless WithDPoPAlgorithms leaves it out.
func TestDPoPAlgorithms(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts, _ := dpopServer(t, iss)
	limited, _ := dpopServer(t, iss, WithDPoPAlgorithms(algES256, "HS256"))
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey := testKeys()[algRS256]
	for _, c := range []struct {
		alg string
		key crypto.Signer
	}{{algEdDSA, edKey}, {algPS256, rsaKey}, {algRS256, rsaKey}} {
		token := iss.token(t, algES256, iss.claims(map[string]any{"cnf": map[string]any{"jkt": thumbprint(c.key.Public())}}))
		proof := func(url string) string {
			return signProof(t, c.key, map[string]any{"typ": "dpop+jwt", "alg": c.alg, "jwk": publicJWK(c.key.Public())},
				map[string]any{"jti": c.alg + url, "htm": "POST", "htu": url, "iat": time.Now().Unix(), "ath": accessTokenHash(token)})
		}
		if r := dpopCall(t, ts.URL, "DPoP "+token, proof(ts.URL)); r.status != 200 {
			t.Errorf("%s: %d %s", c.alg, r.status, r.body)
		}
		r := dpopCall(t, limited.URL, "DPoP "+token, proof(limited.URL))
		if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.HasPrefix(got, `DPoP error="invalid_dpop_proof", error_description="DPoP proof: header: alg is not one of ES256", algs="ES256",`) {
			t.Errorf("%s where only ES256 is taken: %d %q", c.alg, r.status, got)
		}
	}
}

// TestDPoPEras: a bound token with a fresh proof on every request serves
// a 2025-11-25 session (initialize, calls, DELETE) and 2026-07-28
// stateless POSTs over HTTP.
func TestDPoPEras(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts, _ := dpopServer(t, iss, WithDPoPRequired())
	alice := newDPoPClient(t)
	token := alice.boundToken(t, iss)
	url := ts.URL + "/"
	with := func(method string, extra ...string) map[string]string {
		return postHeaders(append([]string{"Authorization", "DPoP " + token, "DPoP", alice.proof(t, method, url, token, nil)}, extra...)...)
	}
	init := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, with("POST"))
	sid := init.header.Get("Mcp-Session-Id")
	if init.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	session := []string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25"}
	if r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, with("POST", session...)); r.status != 202 {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	for i := range 3 {
		r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, with("POST", session...))
		if r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read") {
			t.Fatalf("2025-11-25 call %d: %d %s", i, r.status, r.body)
		}
	}
	if r := doHTTP(t, "DELETE", ts.URL, "", with("DELETE", session...)); r.status != 200 && r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	for i := range 3 {
		if r := dpopCall(t, ts.URL, "DPoP "+token, alice.proof(t, "POST", url, token, nil)); r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read") {
			t.Fatalf("2026-07-28 call %d: %d %s", i, r.status, r.body)
		}
	}
	// WithDPoPRequired: an unbound bearer token gets the DPoP challenge
	// alone.
	r := callTool(t, ts.URL, "whoami", "Bearer "+iss.token(t, algES256, iss.claims(nil)))
	if got := r.header.Values("WWW-Authenticate"); r.status != 401 || len(got) != 1 || got[0] != `DPoP algs="ES256 EdDSA PS256 RS256", resource_metadata="`+testPRM+`", scope="mcp:read"` {
		t.Fatalf("a bearer token where DPoP is required: %d %q", r.status, got)
	}
}

// TestDPoPNonce: with nonces on, a proof without one, or with an old one,
// gets use_dpop_nonce and the nonce to use, with which it passes; one
// from the lifetime before still passes, and gets the current one.
func TestDPoPNonce(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts, dv := dpopServer(t, iss, WithDPoPNonce([]byte("shared by the instances"), time.Hour))
	alice := newDPoPClient(t)
	token := alice.boundToken(t, iss)
	url := ts.URL + "/"
	cur := dv.window(time.Now())
	for name, nonce := range map[string]any{"missing": nil, "old": dv.nonceAt(cur - 2), "forged": b64.EncodeToString(make([]byte, 24)), "not ours": "abc"} {
		r := dpopCall(t, ts.URL, "DPoP "+token, alice.proof(t, "POST", url, token, map[string]any{"nonce": nonce}))
		got := r.header.Get("WWW-Authenticate")
		if r.status != 401 || !strings.HasPrefix(got, `DPoP error="use_dpop_nonce", error_description="DPoP proof: the server's current nonce is required", algs=`) {
			t.Fatalf("%s nonce: %d %q", name, r.status, got)
		}
		if n := r.header.Get("DPoP-Nonce"); n != dv.nonceAt(cur) {
			t.Fatalf("%s nonce: DPoP-Nonce %q, want the current one", name, n)
		}
	}
	r := dpopCall(t, ts.URL, "DPoP "+token, alice.proof(t, "POST", url, token, map[string]any{"nonce": dv.nonceAt(cur)}))
	if r.status != 200 || r.header.Get("DPoP-Nonce") != "" {
		t.Fatalf("the current nonce: %d %q %s", r.status, r.header.Get("DPoP-Nonce"), r.body)
	}
	r = dpopCall(t, ts.URL, "DPoP "+token, alice.proof(t, "POST", url, token, map[string]any{"nonce": dv.nonceAt(cur - 1)}))
	if r.status != 200 || r.header.Get("DPoP-Nonce") != dv.nonceAt(cur) {
		t.Fatalf("the previous nonce: %d %q %s", r.status, r.header.Get("DPoP-Nonce"), r.body)
	}
}

// TestDPoPLimits: the proof's size bound and the iat window hold at their
// limits, and the durations are clamped.
func TestDPoPLimits(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	alice := newDPoPClient(t)
	token := alice.boundToken(t, iss)
	now := time.Now().Truncate(time.Second)
	check := func(dv *DPoPVerifier, proof string) string {
		dv.now = func() time.Time { return now }
		auth := bearerTestAuth(t, iss, JWTVerifierConfig{})
		auth.DPoP = dv
		r := httptest.NewRequest("POST", "http://mcp.example.com/mcp", nil)
		r.Header.Set("Authorization", "DPoP "+token)
		r.Header.Set("DPoP", proof)
		_, err := auth.Authorize(r)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	url := "http://mcp.example.com/mcp"
	proof := alice.proof(t, "POST", url, token, map[string]any{"iat": now.Unix()})
	if got := check(NewDPoPVerifier(WithDPoPMaxProofBytes(len(proof))), proof); got != "" {
		t.Errorf("a proof of the most bytes: %s", got)
	}
	if got := check(NewDPoPVerifier(WithDPoPMaxProofBytes(len(proof)-1)), proof); !strings.Contains(got, fmt.Sprintf("longer than %d bytes", len(proof)-1)) {
		t.Errorf("a proof a byte too long: %q", got)
	}
	for _, c := range []struct {
		opt      DPoPOption
		iat      time.Time
		accepted bool
	}{
		{nil, now.Add(-DefaultDPoPProofMaxAge), true},
		{nil, now.Add(-DefaultDPoPProofMaxAge - time.Second), false},
		{nil, now.Add(DefaultDPoPProofMaxSkew), true},
		{nil, now.Add(DefaultDPoPProofMaxSkew + time.Second), false},
		{WithDPoPProofAge(10*time.Second, time.Second), now.Add(-10 * time.Second), true},
		{WithDPoPProofAge(10*time.Second, time.Second), now.Add(-11 * time.Second), false},
		{WithDPoPProofAge(time.Nanosecond, -time.Hour), now.Add(-time.Second), true}, // clamped to 1 s and 0
		{WithDPoPProofAge(time.Nanosecond, -time.Hour), now.Add(-2 * time.Second), false},
		{WithDPoPProofAge(time.Nanosecond, -time.Hour), now.Add(time.Second), false},
		{WithDPoPProofAge(time.Hour, time.Hour), now.Add(-10 * time.Minute), true}, // clamped to 10 min and 1 min
		{WithDPoPProofAge(time.Hour, time.Hour), now.Add(-10*time.Minute - time.Second), false},
		{WithDPoPProofAge(time.Hour, time.Hour), now.Add(time.Minute), true},
		{WithDPoPProofAge(time.Hour, time.Hour), now.Add(time.Minute + time.Second), false},
	} {
		var opts []DPoPOption
		if c.opt != nil {
			opts = append(opts, c.opt)
		}
		got := check(NewDPoPVerifier(opts...), alice.proof(t, "POST", url, token, map[string]any{"iat": c.iat.Unix()}))
		if (got == "") != c.accepted {
			t.Errorf("iat %s from now: %q, accepted %v", c.iat.Sub(now), got, c.accepted)
		}
	}
	dv := NewDPoPVerifier(WithDPoPNonce(nil, time.Nanosecond))
	if dv.nonceLife != time.Second || len(dv.nonceKey) != 32 {
		t.Errorf("nonce lifetime %s, key of %d bytes", dv.nonceLife, len(dv.nonceKey))
	}
	if dv := NewDPoPVerifier(WithDPoPNonce(nil, 1000*time.Hour)); dv.nonceLife != 24*time.Hour {
		t.Errorf("nonce lifetime %s, want 24h", dv.nonceLife)
	}
}

// TestDPoPRequestURL: htu is matched with the URL the request reached the
// server at, normalised, or the one a proxy is said to give.
func TestDPoPRequestURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts    []DPoPOption
		target  string // the request as the server sees it
		header  map[string]string
		htu     string
		matches bool
	}{
		{nil, "http://mcp.example.com/mcp?x=1", nil, "http://mcp.example.com/mcp", true},
		{nil, "http://mcp.example.com/mcp", nil, "HTTP://MCP.example.com:80/mcp?y=2#f", true},
		{nil, "http://mcp.example.com/a%7eb", nil, "http://mcp.example.com/a~b", true},
		{nil, "http://mcp.example.com/a%2fb", nil, "http://mcp.example.com/a%2Fb", true},
		{nil, "http://mcp.example.com/a%2fb", nil, "http://mcp.example.com/a/b", false},
		{nil, "http://mcp.example.com/mcp", nil, "https://mcp.example.com/mcp", false},
		{nil, "http://mcp.example.com/mcp", nil, "http://mcp.example.com/mcp/", false},
		{nil, "http://mcp.example.com/mcp", nil, "http://user@mcp.example.com/mcp", false},
		{nil, "http://mcp.example.com/mcp", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.com"}, "https://api.example.com/mcp", false},
		{[]DPoPOption{WithDPoPForwardedHeaders()}, "http://internal:8080/mcp", map[string]string{"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "api.example.com"}, "https://api.example.com/mcp", true},
		{[]DPoPOption{WithDPoPForwardedHeaders()}, "http://internal:8080/mcp", nil, "http://internal:8080/mcp", true},
		{[]DPoPOption{WithDPoPPublicURL("https://api.example.com/tools/")}, "http://internal:8080/mcp", nil, "https://api.example.com/tools/mcp", true},
		{[]DPoPOption{WithDPoPPublicURL("https://api.example.com"), WithDPoPForwardedHeaders()}, "http://internal:8080/mcp", map[string]string{"X-Forwarded-Host": "evil.example.com"}, "https://api.example.com/mcp", true},
	} {
		r := httptest.NewRequest("POST", c.target, nil)
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		if got := sameHTU(c.htu, NewDPoPVerifier(c.opts...).requestURL(r)); got != c.matches {
			t.Errorf("%s for %s %v: %v, want %v", c.htu, c.target, c.header, got, c.matches)
		}
	}
	// Behind http.StripPrefix the path is the one the client sent.
	dv := NewDPoPVerifier()
	var seen string
	h := http.StripPrefix("/api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = dv.requestURL(r) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "http://h.example/api/mcp?q", nil))
	if seen != "http://h.example/api/mcp" {
		t.Errorf("behind StripPrefix: %q", seen)
	}
}

// TestDPoPReplayCacheBound: 10,000 distinct proofs, one every 100 ms of
// the bubble's clock, pass while the memory replay store keeps within its
// bound of 1,000 by dropping the expired ones; at the bound with none
// expired it refuses the next proof (503) rather than forget one.
func TestDPoPReplayCacheBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		alice := newDPoPClient(t)
		store := NewMemoryDPoPReplayStore(1000)
		auth := BearerAuth{
			Verifier: verifierFunc(func(ctx context.Context, token string) (*TokenInfo, error) {
				return &TokenInfo{Principal: "alice", Claims: map[string]any{"cnf": map[string]any{"jkt": alice.jkt()}}}, nil
			}),
			DPoP: NewDPoPVerifier(WithDPoPReplayStore(store)),
		}
		call := func() error {
			r := httptest.NewRequest("POST", "http://mcp.example.com/mcp", nil)
			r.Header.Set("Authorization", "DPoP tok")
			r.Header.Set("DPoP", alice.proof(t, "POST", "http://mcp.example.com/mcp", "tok", nil))
			_, err := auth.Authorize(r)
			return err
		}
		most := 0
		for i := range 10_000 {
			if err := call(); err != nil {
				t.Fatalf("proof %d: %v", i, err)
			}
			most = max(most, store.Len())
			time.Sleep(100 * time.Millisecond)
		}
		if most > 1000 || most < 550 {
			t.Fatalf("the store held up to %d proofs, want about 600 (60 s of them) and at most 1,000", most)
		}
		time.Sleep(DefaultDPoPProofMaxAge)
		for i := range 1000 {
			if err := call(); err != nil {
				t.Fatalf("proof %d of a burst: %v", i, err)
			}
		}
		var refusal *authRefusal
		if err := call(); !errors.As(err, &refusal) || refusal.status != 503 || !strings.Contains(err.Error(), ErrDPoPReplayStoreFull.Error()) || store.Len() != 1000 {
			t.Fatalf("the proof past the bound: %v; %d stored", err, store.Len())
		}
		time.Sleep(DefaultDPoPProofMaxAge + time.Second)
		if err := call(); err != nil || store.Len() != 1 {
			t.Fatalf("once the burst expired: %v; %d stored", err, store.Len())
		}
	})
}

// verifierFunc is a TokenVerifier that is a function.
type verifierFunc func(ctx context.Context, token string) (*TokenInfo, error)

func (f verifierFunc) VerifyToken(ctx context.Context, token string) (*TokenInfo, error) {
	return f(ctx, token)
}

// TestDPoPMetadata: Advertise puts the algorithms and, when required,
// dpop_bound_access_tokens_required in the resource metadata.
func TestDPoPMetadata(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts []DPoPOption
		want string
	}{
		{nil, `"dpop_signing_alg_values_supported":["ES256","EdDSA","PS256","RS256"]}`},
		{[]DPoPOption{WithDPoPAlgorithms(algES256), WithDPoPRequired()}, `"dpop_signing_alg_values_supported":["ES256"],"dpop_bound_access_tokens_required":true}`},
	} {
		m := ProtectedResourceMetadata{Resource: testResource}
		NewDPoPVerifier(c.opts...).Advertise(&m)
		rec := httptest.NewRecorder()
		ProtectedResourceMetadataHandler(m).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if got := rec.Body.String(); got != `{"resource":"`+testResource+`",`+c.want {
			t.Errorf("metadata %s, want ...%s", got, c.want)
		}
	}
}

// TestIntrospectedDPoPToken: an introspected token bound to a key (cnf,
// token_type DPoP) is taken with a proof of that key, and refused as a
// Bearer token even once its answer is cached.
func TestIntrospectedDPoPToken(t *testing.T) {
	t.Parallel()
	alice := newDPoPClient(t)
	ts, _ := introspectionServer(t, map[string]map[string]any{
		"bound": {"active": true, "sub": "alice", "aud": testResource, "token_type": "DPoP", "scope": "mcp:read", "cnf": map[string]any{"jkt": alice.jkt()}},
	})
	v, err := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, bearerTools(nil), WithAuthorizer(BearerAuth{Verifier: v, DPoP: NewDPoPVerifier()}))
	if r := dpopCall(t, srv.URL, "DPoP bound", alice.proof(t, "POST", srv.URL+"/", "bound", nil)); r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read") {
		t.Fatalf("with a proof: %d %s", r.status, r.body)
	}
	r := callTool(t, srv.URL, "whoami", "Bearer bound")
	if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.HasPrefix(got, `Bearer error="invalid_token", error_description="invalid token: introspection field cnf`) {
		t.Fatalf("as a bearer token: %d %q", r.status, got)
	}
}

// TestDPoPAgainstOpenIDProvider: a real authorization server (panva's
// oidc-provider, testdata/oidc) issues a DPoP-bound JWT access token on
// the client credentials grant for a proof the test makes; the resource
// server takes it with a fresh proof of that key, and refuses the proof
// replayed, a proof of another key, and the token as a Bearer token.
func TestDPoPAgainstOpenIDProvider(t *testing.T) {
	t.Parallel()
	mux, ts, op, verifier := oidcResource(t)
	resource := ts.URL + "/mcp"
	mux.Handle("/mcp", NewHTTPHandler(bearerTools(nil), WithAuthorizer(BearerAuth{
		Verifier: verifier, Scopes: []string{"mcp"}, DPoP: NewDPoPVerifier(WithDPoPRequired()),
	})))

	res, err := http.Get(op.issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var meta AuthorizationServerMetadata
	err = json.NewDecoder(res.Body).Decode(&meta)
	res.Body.Close()
	if err != nil || meta.TokenEndpoint == "" {
		t.Fatalf("the provider's metadata: %v, %+v", err, meta)
	}
	alice := newDPoPClient(t)
	form := "grant_type=client_credentials&scope=mcp&resource=" + strings.ReplaceAll(resource, ":", "%3A")
	req, _ := http.NewRequest("POST", meta.TokenEndpoint, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("dpop-m2m", "dpop-m2m-secret")
	req.Header.Set("DPoP", signProof(t, alice.key, map[string]any{"typ": "dpop+jwt", "alg": algES256, "jwk": publicJWK(alice.key.Public())},
		map[string]any{"jti": "token-request", "htm": "POST", "htu": meta.TokenEndpoint, "iat": time.Now().Unix()}))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var grant struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if json.Unmarshal(body, &grant) != nil || res.StatusCode != 200 || grant.TokenType != "DPoP" || grant.AccessToken == "" {
		t.Fatalf("token request: %d %s; provider: %s", res.StatusCode, body, op.stderr)
	}
	token := grant.AccessToken

	proof := alice.proof(t, "POST", resource, token, nil)
	if r := dpopCall(t, resource, "DPoP "+token, proof); r.status != 200 || !strings.Contains(r.body, "dpop-m2m dpop-m2m mcp") {
		t.Fatalf("the bound token with a proof: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
	r := dpopCall(t, resource, "DPoP "+token, proof)
	if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.HasPrefix(got, `DPoP error="invalid_dpop_proof", error_description="DPoP proof: claim jti: the proof was used before"`) {
		t.Fatalf("the proof replayed: %d %q", r.status, got)
	}
	r = dpopCall(t, resource, "DPoP "+token, newDPoPClient(t).proof(t, "POST", resource, token, nil))
	if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.HasPrefix(got, `DPoP error="invalid_token", error_description="the DPoP proof's key is not the one the token is bound to"`) {
		t.Fatalf("a proof of another key: %d %q", r.status, got)
	}
	r = callTool(t, resource, "whoami", "Bearer "+token)
	if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.HasPrefix(got, `DPoP algs=`) {
		t.Fatalf("the bound token as a bearer token: %d %q", r.status, got)
	}
	if r := dpopCall(t, resource, "DPoP "+token, alice.proof(t, "POST", resource, token, nil)); r.status != 200 {
		t.Fatalf("a second fresh proof: %d %s", r.status, r.body)
	}
}
