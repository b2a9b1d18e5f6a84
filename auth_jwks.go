package mcp

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of the JWKS cache of a JWTVerifier (see JWTVerifierConfig).
const (
	// DefaultJWKSMinRefresh is the least time between two fetches of a
	// key set.
	DefaultJWKSMinRefresh = time.Minute
	// DefaultJWKSCacheTTL is how long a key set without a Cache-Control
	// max-age is used.
	DefaultJWKSCacheTTL = time.Hour
	// DefaultJWKSMaxCacheTTL caps the max-age a key set response gives.
	DefaultJWKSMaxCacheTTL = 24 * time.Hour
	// DefaultMaxJWKSBytes bounds a key set response.
	DefaultMaxJWKSBytes = 256 << 10
	// DefaultJWKSFetchTimeout bounds one fetch of a key set.
	DefaultJWKSFetchTimeout = 10 * time.Second
)

// minRSABits is the smallest RSA key accepted for RS256 (RFC 7518 §3.3);
// maxRSABits the largest, so that a key set cannot make each check slow.
const minRSABits, maxRSABits = 2048, 8192

// jsonWebKey is a verification key read from a JWK (RFC 7517).
type jsonWebKey struct {
	kid string
	pub crypto.PublicKey // *rsa.PublicKey, *ecdsa.PublicKey (P-256) or ed25519.PublicKey
}

// alg names the one JWS algorithm the key verifies.
func (k *jsonWebKey) alg() string {
	switch k.pub.(type) {
	case *rsa.PublicKey:
		return algRS256
	case *ecdsa.PublicKey:
		return algES256
	default:
		return algEdDSA
	}
}

// rawJWK is a JWK's members this package reads.
type rawJWK struct {
	Kty    string   `json:"kty"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	Kid    string   `json:"kid"`
	Crv    string   `json:"crv"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// parseJWKS reads a key set, keeping the signature keys it can use: RSA
// (of minRSABits to maxRSABits), EC on P-256 with a point on the curve, OKP
// Ed25519. A key of another type, curve or use, or whose alg is not the
// one its type verifies, is skipped, as RFC 7517 §5 asks.
func parseJWKS(data []byte) ([]*jsonWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	if set.Keys == nil {
		return nil, errors.New("not a JSON Web Key Set: no keys member")
	}
	var keys []*jsonWebKey
	for _, item := range set.Keys {
		var raw rawJWK
		if json.Unmarshal(item, &raw) != nil {
			continue
		}
		if k := raw.key(); k != nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// key returns the verification key raw describes, or nil when it is not
// one this package uses.
func (raw *rawJWK) key() *jsonWebKey {
	if raw.Use != "" && raw.Use != "sig" {
		return nil
	}
	if raw.KeyOps != nil && !listed(raw.KeyOps, "verify") {
		return nil
	}
	k := &jsonWebKey{kid: raw.Kid}
	switch {
	case raw.Kty == "RSA":
		n, err1 := b64strict.DecodeString(raw.N)
		e, err2 := b64strict.DecodeString(raw.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return nil
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.N.BitLen() > maxRSABits || pub.E < 3 || pub.E%2 == 0 {
			return nil
		}
		k.pub = pub
	case raw.Kty == "EC" && raw.Crv == "P-256":
		x, err1 := b64strict.DecodeString(raw.X)
		y, err2 := b64strict.DecodeString(raw.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil
		}
		point := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point) // checks the point is on the curve
		if err != nil {
			return nil
		}
		k.pub = pub
	case raw.Kty == "OKP" && raw.Crv == "Ed25519":
		x, err := b64strict.DecodeString(raw.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil
		}
		k.pub = ed25519.PublicKey(x)
	default:
		return nil
	}
	if raw.Alg != "" && raw.Alg != k.alg() {
		return nil
	}
	return k
}

// jwksCache holds an issuer's keys, fetched on demand. A token naming a
// key the cache lacks triggers a fetch, at most one per minRefresh;
// requests that miss at the same time share one fetch.
type jwksCache struct {
	url, issuer          string // url empty: discovered from issuer's metadata
	client               *http.Client
	minRefresh, ttl, max time.Duration
	maxBytes             int64
	timeout              time.Duration

	mu       sync.Mutex
	keys     []*jsonWebKey
	expires  time.Time  // when keys must be fetched again
	last     time.Time  // when the last fetch started
	lastErr  error      // how the last fetch failed, nil if it did not
	fetching *jwksFetch // the fetch under way, if any
}

// jwksFetch is one fetch of a key set, which every request that needs it
// waits for.
type jwksFetch struct {
	done chan struct{}
	err  error
}

func newJWKSCache(cfg JWTVerifierConfig) *jwksCache {
	return &jwksCache{
		url: cfg.JWKSURL, issuer: cfg.Issuer,
		client:     cmp.Or(cfg.HTTPClient, http.DefaultClient),
		minRefresh: cmp.Or(cfg.MinRefreshInterval, DefaultJWKSMinRefresh),
		ttl:        cmp.Or(cfg.CacheTTL, DefaultJWKSCacheTTL),
		max:        cmp.Or(cfg.MaxCacheTTL, DefaultJWKSMaxCacheTTL),
		maxBytes:   cmp.Or(cfg.MaxJWKSBytes, DefaultMaxJWKSBytes),
		timeout:    cmp.Or(cfg.FetchTimeout, DefaultJWKSFetchTimeout),
	}
}

// key returns the key named kid (or, when kid is empty, the one key for
// alg) fetching the set when the cache has expired or lacks the key and
// the last fetch is old enough. A key the fresh set lacks is an
// ErrInvalidToken; a set that cannot be fetched is another error.
func (c *jwksCache) key(ctx context.Context, kid, alg string) (*jsonWebKey, error) {
	fetched := false
	for {
		c.mu.Lock()
		now := time.Now()
		k := c.findLocked(kid, alg)
		stale := c.keys == nil || !now.Before(c.expires)
		mayFetch := c.last.IsZero() || now.Sub(c.last) >= c.minRefresh
		if fetched || (k != nil && !stale) || (!mayFetch && c.fetching == nil) {
			err := c.lastErr
			c.mu.Unlock()
			if k != nil {
				return k, nil // stale keys serve until a fetch may run again
			}
			if c.keys == nil && err != nil {
				return nil, err
			}
			if kid == "" {
				return nil, fmt.Errorf("%w: header: no kid, and the issuer's key set has no single %s key", ErrInvalidToken, alg)
			}
			return nil, fmt.Errorf("%w: header: kid %q names no key of the issuer's key set", ErrInvalidToken, kid)
		}
		f := c.fetching
		if f == nil {
			f = &jwksFetch{done: make(chan struct{})}
			c.fetching, c.last = f, now
			go c.fetch(f)
		}
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if f.err != nil && k == nil {
			return nil, f.err
		}
		fetched = true
	}
}

// findLocked returns the key named kid, or, for an empty kid, the only
// key that verifies alg.
func (c *jwksCache) findLocked(kid, alg string) *jsonWebKey {
	var found *jsonWebKey
	for _, k := range c.keys {
		if kid != "" && k.kid == kid {
			return k
		}
		if kid == "" && k.alg() == alg {
			if found != nil {
				return nil // several: the token must say which
			}
			found = k
		}
	}
	return found
}

// fetch runs one fetch of the key set and publishes its result.
func (c *jwksCache) fetch(f *jwksFetch) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	keys, ttl, err := c.download(ctx)
	c.mu.Lock()
	if err == nil {
		c.keys, c.expires = keys, time.Now().Add(ttl)
	}
	c.lastErr, c.fetching = err, nil
	f.err = err
	c.mu.Unlock()
	close(f.done)
}

// download fetches and parses the key set, finding its URL in the issuer's
// metadata first when none was configured.
func (c *jwksCache) download(ctx context.Context) ([]*jsonWebKey, time.Duration, error) {
	u := c.url
	if u == "" {
		var err error
		if u, err = c.discover(ctx); err != nil {
			return nil, 0, err
		}
	}
	body, header, err := getBounded(ctx, c.client, u, c.maxBytes)
	if err != nil {
		return nil, 0, errorf("fetching the JWKS: %w", err)
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, 0, errorf("fetching the JWKS: %s: %w", u, err)
	}
	if keys == nil {
		keys = []*jsonWebKey{} // fetched, if empty
	}
	return keys, c.lifetime(header), nil
}

// lifetime reads how long a key set may be used from its Cache-Control
// max-age, kept between minRefresh and max; without one, ttl.
func (c *jwksCache) lifetime(h http.Header) time.Duration {
	for part := range strings.SplitSeq(h.Get("Cache-Control"), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(name, "max-age") {
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
				d := time.Duration(min(n, int64(c.max/time.Second))) * time.Second
				return min(max(d, c.minRefresh), c.max)
			}
		}
	}
	return c.ttl
}

// discover reads the JWKS URL from the issuer's authorization server
// metadata (RFC 8414), or its OpenID configuration, whose issuer must be
// the one configured.
func (c *jwksCache) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range issuerMetadataURLs(c.issuer) {
		body, _, err := getBounded(ctx, c.client, u, c.maxBytes)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var m AuthorizationServerMetadata
		if err := json.Unmarshal(body, &m); err != nil {
			errs = append(errs, fmt.Errorf("%s: not JSON metadata: %w", u, err))
			continue
		}
		if m.Issuer != c.issuer {
			errs = append(errs, fmt.Errorf("%s: field issuer: %q is not %q", u, m.Issuer, c.issuer))
			continue
		}
		if m.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s: field jwks_uri: missing", u))
			continue
		}
		return m.JWKSURI, nil
	}
	return "", errorf("discovering the JWKS URL of issuer %q: %w", c.issuer, errors.Join(errs...))
}

// issuerMetadataURLs lists where an issuer's metadata may be: RFC 8414's
// well-known URI inserted before the issuer's path, then OpenID Connect's
// (inserted, then appended).
func issuerMetadataURLs(issuer string) []string {
	origin, path := splitOrigin(issuer)
	path = strings.TrimSuffix(path, "/")
	urls := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
	}
	if path != "" {
		urls = append(urls, origin+path+"/.well-known/openid-configuration")
	}
	return urls
}

// splitOrigin splits an absolute URL into scheme://host and the rest of
// it (path, without query or fragment).
func splitOrigin(u string) (origin, path string) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u, ""
	}
	rest, _, _ = strings.Cut(rest, "#")
	rest, _, _ = strings.Cut(rest, "?")
	host, p, found := strings.Cut(rest, "/")
	if found {
		p = "/" + p
	}
	return scheme + "://" + host, p
}

// getBounded GETs u as JSON and returns its body, refusing a status other
// than 200 and a body longer than maxBytes.
func getBounded(ctx context.Context, client *http.Client, u string, maxBytes int64) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, err // names the URL already
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading the body: %w", u, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: status %d", u, res.StatusCode)
	}
	if int64(len(body)) > maxBytes {
		return nil, nil, fmt.Errorf("%s: the body exceeds %d bytes", u, maxBytes)
	}
	return body, res.Header, nil
}
