package mcp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestJWKSUnknownKey refreshes the key set exactly once for a token of an
// unknown key, refuses the token, and fetches again for an unknown key
// only once the minimum refresh interval has passed, when a rotated key
// is then found.
func TestJWKSUnknownKey(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t) // its server outside the bubble: a goroutine waiting on the network would stop the bubble's clock
	synctest.Test(t, func(t *testing.T) {
		v := iss.verifier(t, JWTVerifierConfig{MinRefreshInterval: time.Minute})
		ctx := context.Background()
		if _, err := v.VerifyToken(ctx, iss.token(t, algES256, iss.claims(nil))); err != nil {
			t.Fatal(err)
		}
		if n := iss.fetches.Load(); n != 1 {
			t.Fatalf("%d fetches for the first token", n)
		}
		time.Sleep(time.Minute) // the next miss may fetch
		_, rotated, _ := ed25519.GenerateKey(rand.Reader)
		unknown, _ := signAccessToken(rotated, "rotated", iss.claims(nil))
		_, err := v.VerifyToken(ctx, unknown)
		if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), `kid "rotated" names no key`) {
			t.Fatalf("unknown kid: %v", err)
		}
		if n := iss.fetches.Load(); n != 2 {
			t.Fatalf("%d fetches after an unknown kid, want 2 (exactly one refresh)", n)
		}
		iss.addKey("rotated", rotated)
		for range 5 {
			if _, err := v.VerifyToken(ctx, unknown); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("within the interval: %v", err)
			}
		}
		if n := iss.fetches.Load(); n != 2 {
			t.Fatalf("%d fetches: misses within the minimum interval fetched", n)
		}
		time.Sleep(time.Minute)
		if _, err := v.VerifyToken(ctx, unknown); err != nil {
			t.Fatalf("the rotated key after the interval: %v", err)
		}
		if n := iss.fetches.Load(); n != 3 {
			t.Fatalf("%d fetches, want 3", n)
		}
		// Known keys are served from the cache.
		for range 5 {
			if _, err := v.VerifyToken(ctx, iss.token(t, algRS256, iss.claims(nil))); err != nil {
				t.Fatal(err)
			}
		}
		if n := iss.fetches.Load(); n != 3 {
			t.Fatalf("%d fetches for known keys", n)
		}
	})
}

// gatedTransport holds every request until its gate opens, then sends it
// over loopback: inside a synctest bubble, the requests waiting for it are
// durably blocked.
type gatedTransport struct {
	gate chan struct{}
	rt   http.RoundTripper
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case <-g.gate:
		return g.rt.RoundTrip(r)
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// TestJWKSFetchLifetime: a request that gives up waiting leaves the fetch
// running for the others, and the fetch ends by FetchTimeout when the
// issuer never answers; no goroutine outlives it (the bubble checks).
func TestJWKSFetchLifetime(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	synctest.Test(t, func(t *testing.T) {
		gate := &gatedTransport{gate: make(chan struct{}), rt: &http.Transport{DisableKeepAlives: true}}
		v := iss.verifier(t, JWTVerifierConfig{MinRefreshInterval: time.Nanosecond, FetchTimeout: 10 * time.Second, HTTPClient: &http.Client{Transport: gate}})
		tok := iss.token(t, algES256, iss.claims(nil))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := v.VerifyToken(ctx, tok)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait: %v", err)
		}
		start := time.Now()
		_, err := v.VerifyToken(context.Background(), tok) // joins the fetch still under way
		if err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Fatalf("a fetch that never ends: %v", err)
		}
		if waited := time.Since(start); waited != 10*time.Second {
			t.Fatalf("the fetch ended after %v, want FetchTimeout", waited)
		}
		close(gate.gate)
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			t.Fatalf("the next fetch: %v", err)
		}
		if n := iss.fetches.Load(); n != 1 {
			t.Fatalf("%d fetches reached the issuer, want 1", n)
		}
	})
}

// TestJWKSConcurrentMisses shares one fetch among many requests that miss
// the cache at once: no thundering herd on the issuer.
func TestJWKSConcurrentMisses(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t) // its server outside the bubble: a goroutine waiting on the network would stop the bubble's clock
	synctest.Test(t, func(t *testing.T) {
		gate := &gatedTransport{gate: make(chan struct{}), rt: &http.Transport{DisableKeepAlives: true}}
		v := iss.verifier(t, JWTVerifierConfig{MinRefreshInterval: time.Nanosecond, HTTPClient: &http.Client{Transport: gate}})
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range 50 {
			wg.Go(func() {
				alg := []string{algRS256, algES256, algEdDSA}[i%3]
				if _, err := v.VerifyToken(context.Background(), iss.token(t, alg, iss.claims(nil))); err != nil {
					failed.Add(1)
				}
			})
		}
		synctest.Wait() // all 50 wait for the one fetch
		close(gate.gate)
		wg.Wait()
		if n := iss.fetches.Load(); n != 1 || failed.Load() != 0 {
			t.Fatalf("%d fetches, %d failures; want 1 fetch shared by all", n, failed.Load())
		}
	})
}

// TestJWKSCacheLifetime honours Cache-Control max-age within bounds, and
// fetches the set again once it expires.
func TestJWKSCacheLifetime(t *testing.T) {
	t.Parallel()
	c := newJWKSCache(JWTVerifierConfig{MinRefreshInterval: time.Minute, CacheTTL: time.Hour, MaxCacheTTL: 2 * time.Hour})
	for header, want := range map[string]time.Duration{
		"":                        time.Hour,
		"max-age=600":             10 * time.Minute,
		"public, max-age=5":       time.Minute,
		"max-age=999999999999999": 2 * time.Hour,
		"no-store":                time.Hour,
		"max-age=x":               time.Hour,
	} {
		h := http.Header{"Cache-Control": {header}}
		if got := c.lifetime(h); got != want {
			t.Errorf("Cache-Control %q: lifetime %v, want %v", header, got, want)
		}
	}
	iss := newTestIssuer(t) // its server outside the bubble: a goroutine waiting on the network would stop the bubble's clock
	synctest.Test(t, func(t *testing.T) {
		v := iss.verifier(t, JWTVerifierConfig{CacheTTL: 10 * time.Minute})
		tok := iss.token(t, algES256, iss.claims(map[string]any{"exp": time.Now().Add(time.Hour).Unix()}))
		v.VerifyToken(context.Background(), tok)
		time.Sleep(9 * time.Minute)
		v.VerifyToken(context.Background(), tok)
		if n := iss.fetches.Load(); n != 1 {
			t.Fatalf("%d fetches within the TTL", n)
		}
		time.Sleep(time.Minute)
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		if n := iss.fetches.Load(); n != 2 {
			t.Fatalf("%d fetches after the TTL, want 2", n)
		}
	})
}

// TestJWKSFailures: a key set that cannot be fetched is the server's
// failure, not the token's, and says which URL and why; a response over
// the size limit is refused, one at it is read.
func TestJWKSFailures(t *testing.T) {
	t.Parallel()
	var body atomic.Value
	body.Store(`{"keys":[]}`)
	status := atomic.Int32{}
	status.Store(200)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		w.Write([]byte(body.Load().(string)))
	}))
	defer ts.Close()
	tok, _ := signAccessToken(testKeys()[algES256], "k", map[string]any{})
	try := func(cfg JWTVerifierConfig) error {
		cfg.Issuer, cfg.Audience, cfg.JWKSURL, cfg.MinRefreshInterval = "https://as.example.com", testResource, ts.URL+"/jwks", time.Nanosecond
		v, err := NewJWTVerifier(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.VerifyToken(context.Background(), tok)
		return err
	}
	status.Store(500)
	if err := try(JWTVerifierConfig{}); err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), ts.URL+"/jwks: status 500") {
		t.Errorf("status 500: %v", err)
	}
	status.Store(200)
	body.Store("not json")
	if err := try(JWTVerifierConfig{}); err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "not a JSON Web Key Set") {
		t.Errorf("not JSON: %v", err)
	}
	set, _ := json.Marshal(map[string]any{"keys": []any{jwkOf("k", testKeys()[algES256].Public())}})
	body.Store(string(set))
	if err := try(JWTVerifierConfig{MaxJWKSBytes: int64(len(set))}); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "claim iss") {
		t.Errorf("a key set at the size limit: %v", err)
	}
	if err := try(JWTVerifierConfig{MaxJWKSBytes: int64(len(set)) - 1}); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("a key set over the size limit: %v", err)
	}
}

// TestParseJWKS keeps the usable signature keys and skips the others.
func TestParseJWKS(t *testing.T) {
	t.Parallel()
	ec := jwkOf("ec", testKeys()[algES256].Public())
	offCurve := jwkOf("off", testKeys()[algES256].Public())
	offCurve["y"] = offCurve["x"]
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	with := func(k map[string]any, key string, v any) map[string]any {
		c := map[string]any{}
		for n, x := range k {
			c[n] = x
		}
		c[key] = v
		return c
	}
	data, _ := json.Marshal(map[string]any{"keys": []any{
		jwkOf("rsa", testKeys()[algRS256].Public()),
		ec,
		jwkOf("ed", testKeys()[algEdDSA].Public()),
		offCurve,
		jwkOf("small", &small.PublicKey),
		with(ec, "use", "enc"),
		with(ec, "key_ops", []string{"encrypt"}),
		with(ec, "alg", algRS256),
		with(ec, "crv", "P-384"),
		map[string]any{"kty": "oct", "k": "c2VjcmV0"},
		"not an object",
		with(ec, "kid", "ec2"),
	}})
	keys, err := parseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.kid+":"+k.alg())
	}
	if got := strings.Join(kids, " "); got != "rsa:RS256 ec:ES256 ed:EdDSA ec2:ES256" {
		t.Fatalf("keys %s", got)
	}
	for _, bad := range []string{`[]`, `{}`, `{"keys":{}}`} {
		if _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestJWKSDiscovery finds the key set through the issuer's RFC 8414
// metadata when no JWKS URL is configured, and refuses metadata of
// another issuer.
func TestJWKSDiscovery(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	v := iss.verifier(t, JWTVerifierConfig{JWKSURL: "discover"})
	if _, err := v.VerifyToken(context.Background(), iss.token(t, algEdDSA, iss.claims(nil))); err != nil {
		t.Fatal(err)
	}
	wrong, err := NewJWTVerifier(JWTVerifierConfig{Issuer: iss.url + "/", Audience: testResource})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.VerifyToken(context.Background(), iss.token(t, algEdDSA, iss.claims(nil)))
	if err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), `field issuer: "`+iss.url+`" is not "`+iss.url+`/"`) {
		t.Fatalf("metadata of another issuer: %v", err)
	}
	for issuer, want := range map[string]string{
		"https://as.example.com":      "https://as.example.com/.well-known/oauth-authorization-server https://as.example.com/.well-known/openid-configuration",
		"https://as.example.com/t/1/": "https://as.example.com/.well-known/oauth-authorization-server/t/1 https://as.example.com/.well-known/openid-configuration/t/1 https://as.example.com/t/1/.well-known/openid-configuration",
	} {
		if got := strings.Join(issuerMetadataURLs(issuer), " "); got != want {
			t.Errorf("%s: %s", issuer, got)
		}
	}
}
