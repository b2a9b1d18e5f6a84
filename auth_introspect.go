package mcp

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of IntrospectionConfig.
const (
	// DefaultMaxIntrospectionBytes bounds an introspection response.
	DefaultMaxIntrospectionBytes = 64 << 10
	// DefaultIntrospectionCacheTTL is how long an active token's
	// introspection is reused (never past the token's expiry).
	DefaultIntrospectionCacheTTL = time.Minute
	// DefaultIntrospectionCacheSize bounds the tokens whose introspection
	// is remembered.
	DefaultIntrospectionCacheSize = 1024
)

// IntrospectionConfig configures [NewIntrospectionVerifier]. Server side.
type IntrospectionConfig struct {
	// Endpoint is the authorization server's introspection endpoint
	// (RFC 7662). Required.
	Endpoint string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint (HTTP Basic, RFC 6749 §2.3.1).
	ClientID, ClientSecret string
	// Audience is this resource's canonical URL: the response's aud must
	// name it. Required.
	Audience string
	// AllowNoAudience also accepts a response without aud, for an
	// authorization server that knowingly issues tokens without an
	// audience, when its token_type says it is an access token (a refresh
	// token's response often has neither). A response whose aud names
	// only other resources is refused all the same.
	AllowNoAudience bool
	// Issuer, when set, must be the response's iss when it has one.
	Issuer string
	// HTTPClient calls the endpoint; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokenBytes bounds a token's length, checked before it is sent;
	// zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// MaxResponseBytes bounds a response; zero means
	// DefaultMaxIntrospectionBytes.
	MaxResponseBytes int64
	// CacheTTL is how long an active token's result is reused, never past
	// its exp; zero means DefaultIntrospectionCacheTTL, a negative value
	// no cache. CacheSize bounds the tokens remembered; zero means
	// DefaultIntrospectionCacheSize.
	CacheTTL  time.Duration
	CacheSize int
}

// IntrospectionVerifier verifies opaque (or any) access tokens by asking
// the authorization server (RFC 7662 token introspection). It is a
// [TokenVerifier]; safe for concurrent use. Server side.
type IntrospectionVerifier struct {
	cfg    IntrospectionConfig
	client *http.Client

	mu    sync.Mutex
	cache map[[sha256.Size]byte]introspected
}

// introspected is a remembered active token.
type introspected struct {
	info  *TokenInfo
	until time.Time
}

// NewIntrospectionVerifier returns a verifier calling cfg.Endpoint.
// Server side.
func NewIntrospectionVerifier(cfg IntrospectionConfig) (*IntrospectionVerifier, error) {
	if u, err := url.Parse(cfg.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("mcp: IntrospectionConfig.Endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	if cfg.Audience == "" {
		return nil, errors.New("mcp: IntrospectionConfig.Audience is required")
	}
	cfg.MaxTokenBytes = cmp.Or(cfg.MaxTokenBytes, DefaultMaxTokenBytes)
	cfg.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxIntrospectionBytes)
	cfg.CacheTTL = cmp.Or(cfg.CacheTTL, DefaultIntrospectionCacheTTL)
	cfg.CacheSize = cmp.Or(cfg.CacheSize, DefaultIntrospectionCacheSize)
	return &IntrospectionVerifier{cfg: cfg, client: cmp.Or(cfg.HTTPClient, http.DefaultClient), cache: map[[sha256.Size]byte]introspected{}}, nil
}

// VerifyToken asks the endpoint about token: it must be active, a bearer
// access token (never a refresh token), for this audience, and not
// expired. A token the server calls inactive (or
// refuses) gets an error wrapping ErrInvalidToken; a failure to ask gets
// another error. Server side.
func (v *IntrospectionVerifier) VerifyToken(ctx context.Context, token string) (*TokenInfo, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return nil, fmt.Errorf("%w: the token is longer than %d bytes", ErrInvalidToken, v.cfg.MaxTokenBytes)
	}
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	if info := v.cached(key, now); info != nil {
		return info, nil
	}
	claims, err := v.introspect(ctx, token)
	if err != nil {
		return nil, err
	}
	info, err := v.check(claims, now)
	if err != nil {
		return nil, err
	}
	v.remember(key, info, now)
	return info, nil
}

// introspect POSTs the token and decodes the response.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) (map[string]any, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("mcp: token introspection: %s: %w", v.cfg.Endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.cfg.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	}
	res, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mcp: token introspection: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, v.cfg.MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("mcp: token introspection: %s: reading the response: %w", v.cfg.Endpoint, err)
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("mcp: token introspection: %s: status %d", v.cfg.Endpoint, res.StatusCode)
	case int64(len(body)) > v.cfg.MaxResponseBytes:
		return nil, fmt.Errorf("mcp: token introspection: %s: the response exceeds %d bytes", v.cfg.Endpoint, v.cfg.MaxResponseBytes)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil || claims == nil {
		return nil, fmt.Errorf("mcp: token introspection: %s: the response is not a JSON object", v.cfg.Endpoint)
	}
	return claims, nil
}

// check reads an introspection response at now.
func (v *IntrospectionVerifier) check(claims map[string]any, now time.Time) (*TokenInfo, error) {
	if active, _ := claims["active"].(bool); !active {
		return nil, fmt.Errorf("%w: introspection: the token is not active", ErrInvalidToken)
	}
	access, err := accessTokenKind(claims)
	if err != nil {
		return nil, err
	}
	aud, ok := claims["aud"]
	switch {
	case ok && !audienceHas(aud, v.cfg.Audience):
		return nil, fmt.Errorf("%w: introspection field aud: does not name this resource %q", ErrInvalidToken, v.cfg.Audience)
	case !ok && !v.cfg.AllowNoAudience:
		return nil, fmt.Errorf("%w: introspection field aud: missing, the token must name this resource %q", ErrInvalidToken, v.cfg.Audience)
	case !ok && !access:
		return nil, fmt.Errorf("%w: introspection fields aud and token_type: missing, nothing says this is an access token for this resource", ErrInvalidToken)
	}
	if iss, ok := claims["iss"].(string); ok && v.cfg.Issuer != "" && iss != v.cfg.Issuer {
		return nil, fmt.Errorf("%w: introspection field iss: %q is not the issuer %q", ErrInvalidToken, iss, v.cfg.Issuer)
	}
	exp, ok := numericDate(claims["exp"])
	if ok && !now.Before(exp) {
		return nil, fmt.Errorf("%w: introspection field exp: the token expired at %s", ErrInvalidToken, exp.UTC().Format(time.RFC3339))
	}
	return tokenInfoOf(claims, exp, "introspection fields")
}

// accessTokenKind refuses a response that describes anything but a bearer
// access token, as the fields authorization servers use say it:
// token_type (RFC 7662: Bearer; a refresh token's is refresh_token or
// absent; DPoP is bound to a key), token_use (access_token or access), typ
// (Bearer or at+jwt), and cnf, which binds the token to a key a bearer
// request cannot prove. It reports whether a field said access token.
func accessTokenKind(claims map[string]any) (bool, error) {
	if _, ok := claims["cnf"]; ok {
		return false, fmt.Errorf("%w: introspection field cnf: the token is bound to a key, which a bearer request does not prove", ErrInvalidToken)
	}
	said := false
	for _, f := range []struct {
		name   string
		accept []string
	}{
		{"token_type", []string{"bearer", "access_token", "urn:ietf:params:oauth:token-type:access_token"}},
		{"token_use", []string{"access_token", "access"}},
		{"typ", []string{"bearer", "at+jwt", "application/at+jwt"}},
	} {
		v, ok := claims[f.name]
		if !ok {
			continue
		}
		s, _ := v.(string)
		if !slices.Contains(f.accept, strings.ToLower(s)) {
			return false, fmt.Errorf("%w: introspection field %s: %q is not a bearer access token's", ErrInvalidToken, f.name, s)
		}
		said = true
	}
	return said, nil
}

// cached returns a remembered result still good at now.
func (v *IntrospectionVerifier) cached(key [sha256.Size]byte, now time.Time) *TokenInfo {
	if v.cfg.CacheTTL < 0 {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.cache[key]
	if !ok {
		return nil
	}
	if !now.Before(e.until) {
		delete(v.cache, key)
		return nil
	}
	return e.info
}

// remember keeps an active token's result until its expiry or the TTL,
// whichever is first; at the size bound it drops the expired results,
// else one of the others.
func (v *IntrospectionVerifier) remember(key [sha256.Size]byte, info *TokenInfo, now time.Time) {
	if v.cfg.CacheTTL < 0 {
		return
	}
	until := now.Add(v.cfg.CacheTTL)
	if !info.Expiry.IsZero() && info.Expiry.Before(until) {
		until = info.Expiry
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.cache) >= v.cfg.CacheSize {
		for k, e := range v.cache {
			if !now.Before(e.until) {
				delete(v.cache, k)
			}
		}
		for k := range v.cache {
			if len(v.cache) < v.cfg.CacheSize {
				break
			}
			delete(v.cache, k)
		}
	}
	v.cache[key] = introspected{info: info, until: until}
}
