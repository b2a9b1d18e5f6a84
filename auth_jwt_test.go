package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSignJWT signs with each key type and checks the signature with the
// standard library's own verifiers.
func TestSignJWT(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, key := range []crypto.Signer{rsaKey, ecKey, edKey} {
		tok, err := signJWT(key, "k1", map[string]any{"sub": "alice"})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%d parts", len(parts))
		}
		var header map[string]string
		h, _ := b64.DecodeString(parts[0])
		if err := json.Unmarshal(h, &header); err != nil || header["kid"] != "k1" {
			t.Fatalf("header %s: %v", h, err)
		}
		sig, _ := b64.DecodeString(parts[2])
		input := []byte(parts[0] + "." + parts[1])
		digest := sha256.Sum256(input)
		var ok bool
		switch header["alg"] {
		case algRS256:
			ok = rsa.VerifyPKCS1v15(&rsaKey.PublicKey, crypto.SHA256, digest[:], sig) == nil
		case algES256:
			ok = len(sig) == 64 && ecdsa.Verify(&ecKey.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		case algEdDSA:
			ok = ed25519.Verify(edKey.Public().(ed25519.PublicKey), input, sig)
		}
		if !ok {
			t.Errorf("%s: signature does not verify", header["alg"])
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := signJWT(p384, "", nil); err == nil {
		t.Error("a P-384 key signed")
	}
}

// signAccessToken signs claims as a JWT access token of RFC 9068 (typ
// at+jwt).
func signAccessToken(key crypto.Signer, kid string, claims any) (string, error) {
	return signJWTType(key, kid, "at+jwt", claims)
}

// testKeys are the issuer's signing keys of these tests, made once: an
// RSA key is slow to make.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	return map[string]crypto.Signer{algRS256: rsaKey, algES256: ecKey, algEdDSA: edKey}
})

// testResource is the audience of the tests' tokens.
const testResource = "https://mcp.example.com/mcp"

// jwkOf encodes a public key as a JWK named kid.
func jwkOf(kid string, pub crypto.PublicKey) map[string]any {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": algRS256, "n": b64.EncodeToString(k.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		point, _ := k.Bytes()
		return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64.EncodeToString(point[1:33]), "y": b64.EncodeToString(point[33:])}
	case ed25519.PublicKey:
		return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64.EncodeToString(k)}
	}
	panic(fmt.Sprintf("no JWK for %T", pub))
}

// testIssuer is an authorization server's key set served over loopback,
// counting its fetches. Its keys are named by their algorithm.
type testIssuer struct {
	url     string
	fetches atomic.Int32
	mu      sync.Mutex
	keys    map[string]crypto.Signer // by kid: what the JWKS lists
}

func newTestIssuer(t testing.TB) *testIssuer {
	iss := &testIssuer{keys: map[string]crypto.Signer{}}
	for alg, k := range testKeys() {
		iss.keys[alg] = k
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jwks":
			iss.fetches.Add(1)
			iss.mu.Lock()
			var set []any
			for kid, k := range iss.keys {
				set = append(set, jwkOf(kid, k.Public()))
			}
			iss.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"keys": set})
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": iss.url, "jwks_uri": iss.url + "/jwks"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	iss.url = ts.URL
	return iss
}

// addKey lists key under kid in the key set from now on.
func (iss *testIssuer) addKey(kid string, key crypto.Signer) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys[kid] = key
}

// claims are a valid token's claims for the tests' resource, expiring in
// an hour, with more (or, given nil, fewer) claims.
func (iss *testIssuer) claims(more map[string]any) map[string]any {
	c := map[string]any{"iss": iss.url, "aud": testResource, "sub": "alice", "client_id": "app",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:read mcp:write"}
	for k, v := range more {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// token signs claims with the key listed as kid.
func (iss *testIssuer) token(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	iss.mu.Lock()
	key := iss.keys[kid]
	iss.mu.Unlock()
	if key == nil {
		key = testKeys()[kid]
	}
	tok, err := signAccessToken(key, kid, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// verifier is a JWTVerifier of the issuer's tokens for the tests'
// resource, over a client that keeps no connection alive (synctest
// bubbles must end every goroutine they start).
func (iss *testIssuer) verifier(t testing.TB, cfg JWTVerifierConfig) *JWTVerifier {
	t.Helper()
	cfg.Issuer, cfg.Audience = iss.url, testResource
	if cfg.JWKSURL == "" {
		cfg.JWKSURL = iss.url + "/jwks"
	} else if cfg.JWKSURL == "discover" {
		cfg.JWKSURL = ""
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	v, err := NewJWTVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// forge returns a token with the given header and claims and a signature
// of garbage.
func forge(header, claims any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	return b64.EncodeToString(h) + "." + b64.EncodeToString(c) + "." + b64.EncodeToString([]byte("sig"))
}

// TestJWTVerifier verifies real tokens of each algorithm, valid and not:
// each refused token names why.
func TestJWTVerifier(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	v := iss.verifier(t, JWTVerifierConfig{})
	other := map[string]crypto.Signer{}
	for alg := range testKeys() {
		other[alg] = map[string]func() crypto.Signer{
			algRS256: func() crypto.Signer { k, _ := rsa.GenerateKey(rand.Reader, 2048); return k },
			algES256: func() crypto.Signer { k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); return k },
			algEdDSA: func() crypto.Signer { _, k, _ := ed25519.GenerateKey(rand.Reader); return k },
		}[alg]()
	}
	now := time.Now()
	for _, alg := range []string{algRS256, algES256, algEdDSA} {
		cases := []struct {
			name  string
			token string
			want  string // in the error; empty: valid
		}{
			{"valid", iss.token(t, alg, iss.claims(nil)), ""},
			{"audience array", iss.token(t, alg, iss.claims(map[string]any{"aud": []string{"x", testResource}})), ""},
			{"expired within leeway", iss.token(t, alg, iss.claims(map[string]any{"exp": now.Add(-30 * time.Second).Unix()})), ""},
			{"client only", iss.token(t, alg, iss.claims(map[string]any{"sub": nil})), ""},
			{"expired", iss.token(t, alg, iss.claims(map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), "claim exp: the token expired"},
			{"no exp", iss.token(t, alg, iss.claims(map[string]any{"exp": nil})), "claim exp: missing"},
			{"not yet valid", iss.token(t, alg, iss.claims(map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), "claim nbf"},
			{"issued in the future", iss.token(t, alg, iss.claims(map[string]any{"iat": now.Add(5 * time.Minute).Unix()})), "claim iat"},
			{"wrong audience", iss.token(t, alg, iss.claims(map[string]any{"aud": "https://other.example.com/mcp"})), "claim aud"},
			{"wrong audience array", iss.token(t, alg, iss.claims(map[string]any{"aud": []string{"https://other.example.com/mcp"}})), "claim aud"},
			{"no audience", iss.token(t, alg, iss.claims(map[string]any{"aud": nil})), "claim aud"},
			{"wrong issuer", iss.token(t, alg, iss.claims(map[string]any{"iss": "https://evil.example.com"})), "claim iss"},
			{"nobody", iss.token(t, alg, iss.claims(map[string]any{"sub": nil, "client_id": nil})), "names nobody"},
			{"bad signature", func() string {
				tok, _ := signAccessToken(other[alg], alg, iss.claims(nil)) // the kid of the issuer's key
				return tok
			}(), "signature: does not verify"},
			{"tampered claims", func() string {
				parts := strings.Split(iss.token(t, alg, iss.claims(nil)), ".")
				c, _ := json.Marshal(iss.claims(map[string]any{"sub": "mallory"}))
				return parts[0] + "." + b64.EncodeToString(c) + "." + parts[2]
			}(), "signature: does not verify"},
			{"alg none", forge(map[string]string{"alg": "none", "kid": alg}, iss.claims(nil)), `alg "none" is not accepted`},
			{"alg none, no signature", strings.TrimSuffix(forge(map[string]string{"alg": "none"}, iss.claims(nil)), b64.EncodeToString([]byte("sig"))), `alg "none" is not accepted`},
			{"HS256", forge(map[string]string{"alg": "HS256", "kid": alg}, iss.claims(nil)), `alg "HS256" is not accepted`},
			{"critical extension", forge(map[string]any{"alg": alg, "kid": alg, "crit": []string{"x"}}, iss.claims(nil)), "crit"},
			{"not a JWS", "abc.def", "not a compact JWS"},
		}
		// The algorithm a token claims must be its key's.
		for _, wrong := range []string{algRS256, algES256, algEdDSA} {
			if wrong != alg {
				tok, _ := signAccessToken(testKeys()[wrong], alg, iss.claims(nil))
				cases = append(cases, struct{ name, token, want string }{"alg " + wrong + " for a key of " + alg, tok, "does not match key"})
			}
		}
		for _, c := range cases {
			t.Run(alg+"/"+c.name, func(t *testing.T) {
				info, err := v.VerifyToken(context.Background(), c.token)
				if c.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					want := cmpOr(c.name == "client only", "app", "alice")
					if info.Principal != want || info.ClientID != "app" || strings.Join(info.Scopes, " ") != "mcp:read mcp:write" {
						t.Fatalf("info %+v", info)
					}
					return
				}
				if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want ErrInvalidToken with %q", err, c.want)
				}
			})
		}
	}
}

// TestJWTType refuses a JWT whose typ is not at+jwt (RFC 9068 §2.1), such
// as an ID token of the same issuer, before looking up its key; with
// AllowGenericType it also takes typ JWT or none.
func TestJWTType(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	strict := iss.verifier(t, JWTVerifierConfig{})
	generic := iss.verifier(t, JWTVerifierConfig{AllowGenericType: true})
	signed := func(typ string) string {
		tok, err := signJWTType(testKeys()[algES256], algES256, typ, iss.claims(nil))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	noTyp := func() string {
		h, _ := json.Marshal(map[string]string{"alg": algES256, "kid": algES256})
		c, _ := json.Marshal(iss.claims(nil))
		input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
		digest := sha256.Sum256([]byte(input))
		der, _ := testKeys()[algES256].Sign(rand.Reader, digest[:], crypto.SHA256)
		sig, _ := ecdsaRawSignature(der)
		return input + "." + b64.EncodeToString(sig)
	}()
	for _, c := range []struct {
		name, token     string
		strict, generic bool // accepted by each
	}{
		{"at+jwt", signed("at+jwt"), true, true},
		{"application/at+jwt", signed("application/at+jwt"), true, true},
		{"AT+JWT", signed("AT+JWT"), true, true},
		{"JWT", signed("JWT"), false, true},
		{"application/jwt", signed("application/jwt"), false, true},
		{"none", noTyp, false, true},
		{"ID token", signed("id_token+jwt"), false, false},
		{"logout token", signed("logout+jwt"), false, false},
		{"at+jwt with a suffix", signed("at+jwtx"), false, false},
	} {
		for _, v := range []struct {
			name   string
			v      *JWTVerifier
			accept bool
		}{{"default", strict, c.strict}, {"AllowGenericType", generic, c.generic}} {
			info, err := v.v.VerifyToken(context.Background(), c.token)
			switch {
			case v.accept && (err != nil || info.Principal != "alice"):
				t.Errorf("%s, %s: %v", c.name, v.name, err)
			case !v.accept && (!errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "header: typ")):
				t.Errorf("%s, %s: %v, want a refusal naming typ", c.name, v.name, err)
			}
		}
	}
	// A refused typ costs no key fetch, even with a kid nobody knows.
	before := iss.fetches.Load()
	tok, _ := signJWTType(testKeys()[algES256], "unknown", "JWT", iss.claims(nil))
	for range 100 {
		strict.VerifyToken(context.Background(), tok)
	}
	if n := iss.fetches.Load() - before; n != 0 {
		t.Errorf("%d key fetches for tokens refused by typ", n)
	}
}

func cmpOr(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// TestJWTScopes reads scopes from scope (a string) and scp (an array).
func TestJWTScopes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"scope": "a  b"}, "a b"},
		{map[string]any{"scp": []any{"a", "b", 3}}, "a b"},
		{map[string]any{"scp": "a b"}, "a b"},
		{map[string]any{"scope": "a", "scp": []any{"b"}}, "a"},
		{map[string]any{}, ""},
	} {
		if got := strings.Join(scopesOf(c.claims), " "); got != c.want {
			t.Errorf("%v: scopes %q, want %q", c.claims, got, c.want)
		}
	}
}

// TestJWTMaxTokenBytes refuses a token over the size limit before
// decoding it, and takes one at the limit.
func TestJWTMaxTokenBytes(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	tok := iss.token(t, algEdDSA, iss.claims(nil))
	v := iss.verifier(t, JWTVerifierConfig{MaxTokenBytes: len(tok)})
	if _, err := v.VerifyToken(context.Background(), tok); err != nil {
		t.Fatalf("a token at the limit: %v", err)
	}
	long := iss.token(t, algEdDSA, iss.claims(map[string]any{"pad": "x"}))
	if _, err := v.VerifyToken(context.Background(), long); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("a token over the limit: %v", err)
	}
	if _, err := parseJWT(strings.Repeat("a", DefaultMaxTokenBytes+1), DefaultMaxTokenBytes); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("default limit: %v", err)
	}
}

// TestNewJWTVerifierConfig refuses a config without issuer or audience, or
// with a JWKS URL that is not http(s).
func TestNewJWTVerifierConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []JWTVerifierConfig{
		{Audience: testResource, JWKSURL: "https://a/jwks"},
		{Issuer: "https://a", JWKSURL: "https://a/jwks"},
		{Issuer: "https://a", Audience: testResource, JWKSURL: "file:///etc/keys"},
	} {
		if _, err := NewJWTVerifier(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// FuzzJWT feeds the parser and verifier arbitrary tokens: none panics,
// and a token that verifies verifies again to the same result.
func FuzzJWT(f *testing.F) {
	iss := newTestIssuer(f)
	v := iss.verifier(f, JWTVerifierConfig{MinRefreshInterval: time.Hour})
	for _, alg := range []string{algRS256, algES256, algEdDSA} {
		f.Add(iss.token(f, alg, iss.claims(nil)))
		f.Add(iss.token(f, alg, iss.claims(map[string]any{"aud": []string{testResource}, "scp": []string{"a"}, "nbf": 1.5})))
	}
	f.Add(forge(map[string]string{"alg": "none"}, iss.claims(nil)))
	f.Add("e30.e30.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, token string) {
		ctx := context.Background()
		if tok, err := parseJWT(token, DefaultMaxTokenBytes); err == nil {
			for _, k := range testKeys() {
				tok.verifySignature(&jsonWebKey{kid: tok.kid, pub: k.Public()})
			}
		}
		info, err := v.VerifyToken(ctx, token)
		if err != nil {
			return
		}
		again, err := v.VerifyToken(ctx, token)
		if err != nil {
			t.Fatalf("verified once, then: %v", err)
		}
		a, _ := json.Marshal(info)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("verified differently: %s, then %s", a, b)
		}
	})
}
