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
	// is remembered, accepted and refused ones each.
	DefaultIntrospectionCacheSize = 1024
	// DefaultIntrospectionRefusalTTL is how long a refused token's
	// introspection is reused.
	DefaultIntrospectionRefusalTTL = 10 * time.Second
	// DefaultIntrospectionTimeout bounds one call to the endpoint, the
	// wait for a free call slot included.
	DefaultIntrospectionTimeout = 10 * time.Second
	// DefaultMaxIntrospectionCalls bounds the calls to the endpoint under
	// way at once.
	DefaultMaxIntrospectionCalls = 16
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
	// HTTPClient calls the endpoint; nil means http.DefaultClient. Its
	// own timeout, if any, applies besides Timeout.
	HTTPClient *http.Client
	// Timeout bounds one call to the endpoint, from the moment it is
	// needed: the wait for a call slot (see MaxConcurrentCalls) and the
	// exchange. Zero means DefaultIntrospectionTimeout.
	Timeout time.Duration
	// MaxConcurrentCalls bounds the calls to the endpoint under way at
	// once; zero means DefaultMaxIntrospectionCalls. Past it a call waits
	// for a slot, within its Timeout and only while a request still waits
	// for its answer; one that times out is the server's failure (503),
	// not the token's.
	MaxConcurrentCalls int
	// MaxTokenBytes bounds a token's length, checked before it is sent;
	// zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// MaxResponseBytes bounds a response; zero means
	// DefaultMaxIntrospectionBytes.
	MaxResponseBytes int64
	// CacheTTL is how long an active token's result is reused, never past
	// its exp; zero means DefaultIntrospectionCacheTTL, a negative value
	// no cache. CacheSize bounds the tokens remembered, accepted and
	// refused ones each; zero means DefaultIntrospectionCacheSize.
	CacheTTL  time.Duration
	CacheSize int
	// RefusalTTL is how long a refused token's result (inactive, or not
	// an access token for this resource) is reused, so that a token sent
	// again and again costs one call; zero means
	// DefaultIntrospectionRefusalTTL, a negative value no cache. A failure
	// to ask is never remembered.
	RefusalTTL time.Duration
}

// IntrospectionVerifier verifies opaque (or any) access tokens by asking
// the authorization server (RFC 7662 token introspection). Requests that
// present the same token at the same time share one call; results are
// cached, refusals briefly; calls are bounded in number and time, and a
// call no request waits for any more is cancelled. It is a
// [TokenVerifier]; safe for concurrent use. Server side.
type IntrospectionVerifier struct {
	cfg    IntrospectionConfig
	client *http.Client
	slots  chan struct{} // one per call under way

	mu      sync.Mutex
	cache   map[tokenHash]introspected    // accepted tokens
	refused map[tokenHash]introspected    // refused tokens
	calls   map[tokenHash]*introspectCall // under way, by token
}

// tokenHash is a token's SHA-256: the verifier keeps no token itself.
type tokenHash = [sha256.Size]byte

// introspected is a remembered result: info, or the refusal err.
type introspected struct {
	info  *TokenInfo
	err   error
	until time.Time
}

// introspectCall is one call to the endpoint, which every request
// presenting its token at the same time waits for.
type introspectCall struct {
	done    chan struct{} // closed when info and err are set
	cancel  context.CancelFunc
	waiters int // requests waiting; guarded by the verifier's mu
	info    *TokenInfo
	err     error
}

// NewIntrospectionVerifier returns a verifier calling cfg.Endpoint.
// Server side.
func NewIntrospectionVerifier(cfg IntrospectionConfig) (*IntrospectionVerifier, error) {
	if u, err := url.Parse(cfg.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errorf("IntrospectionConfig.Endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	if cfg.Audience == "" {
		return nil, errors.New("mcp: IntrospectionConfig.Audience is required")
	}
	cfg.MaxTokenBytes = cmp.Or(cfg.MaxTokenBytes, DefaultMaxTokenBytes)
	cfg.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxIntrospectionBytes)
	cfg.CacheTTL = cmp.Or(cfg.CacheTTL, DefaultIntrospectionCacheTTL)
	cfg.CacheSize = max(cmp.Or(cfg.CacheSize, DefaultIntrospectionCacheSize), 1)
	cfg.RefusalTTL = cmp.Or(cfg.RefusalTTL, DefaultIntrospectionRefusalTTL)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultIntrospectionTimeout)
	cfg.MaxConcurrentCalls = max(cmp.Or(cfg.MaxConcurrentCalls, DefaultMaxIntrospectionCalls), 1)
	return &IntrospectionVerifier{
		cfg: cfg, client: cmp.Or(cfg.HTTPClient, http.DefaultClient), slots: make(chan struct{}, cfg.MaxConcurrentCalls),
		cache: map[tokenHash]introspected{}, refused: map[tokenHash]introspected{}, calls: map[tokenHash]*introspectCall{},
	}, nil
}

// VerifyToken asks the endpoint about token: it must be active, an
// access token (never a refresh token; bound to a key only when
// [BearerAuth] checks its DPoP proof), for this audience, and not
// expired. A token the server calls inactive (or refuses) gets an error
// wrapping ErrInvalidToken; a failure to ask gets another error, and so
// does ctx ending first, which leaves the call to the requests still
// waiting for it (or cancels it when there are none). Server side.
func (v *IntrospectionVerifier) VerifyToken(ctx context.Context, token string) (*TokenInfo, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return nil, fmt.Errorf("%w: the token is longer than %d bytes", ErrInvalidToken, v.cfg.MaxTokenBytes)
	}
	key := sha256.Sum256([]byte(token))
	v.mu.Lock()
	if r, ok := v.cachedLocked(key, time.Now()); ok {
		v.mu.Unlock()
		return checkedBinding(ctx, r.info, r.err)
	}
	c := v.calls[key]
	if c == nil {
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.cfg.Timeout)
		c = &introspectCall{done: make(chan struct{}), cancel: cancel}
		v.calls[key] = c
		go v.call(callCtx, c, key, token)
	}
	c.waiters++
	v.mu.Unlock()
	select {
	case <-c.done:
		return checkedBinding(ctx, c.info, c.err)
	case <-ctx.Done():
		v.mu.Lock()
		if c.waiters--; c.waiters == 0 {
			c.cancel() // nobody waits for the answer any more
			if v.calls[key] == c {
				delete(v.calls, key)
			}
		}
		v.mu.Unlock()
		return nil, errorf("token introspection: %w", context.Cause(ctx))
	}
}

// checkedBinding refuses an answer for a token bound to a key unless
// ctx says a DPoP proof came with it.
func checkedBinding(ctx context.Context, info *TokenInfo, err error) (*TokenInfo, error) {
	if err != nil {
		return nil, err
	}
	if err := refuseUnproved(ctx, info, "introspection field"); err != nil {
		return nil, err
	}
	return info, nil
}

// call runs one call to the endpoint for its waiters, in a free slot, and
// remembers the result when it is an answer.
func (v *IntrospectionVerifier) call(ctx context.Context, c *introspectCall, key tokenHash, token string) {
	defer c.cancel()
	info, err := v.ask(ctx, token)
	v.mu.Lock()
	if v.calls[key] == c {
		delete(v.calls, key)
	}
	now := time.Now()
	switch {
	case err == nil && v.cfg.CacheTTL > 0:
		until := now.Add(v.cfg.CacheTTL)
		if !info.Expiry.IsZero() && info.Expiry.Before(until) {
			until = info.Expiry
		}
		rememberLocked(v.cache, v.cfg.CacheSize, key, introspected{info: info, until: until}, now)
	case errors.Is(err, ErrInvalidToken) && v.cfg.RefusalTTL > 0:
		rememberLocked(v.refused, v.cfg.CacheSize, key, introspected{err: err, until: now.Add(v.cfg.RefusalTTL)}, now)
	}
	c.info, c.err = info, err
	v.mu.Unlock()
	close(c.done)
}

// ask waits for a call slot, calls the endpoint and checks its answer.
func (v *IntrospectionVerifier) ask(ctx context.Context, token string) (*TokenInfo, error) {
	select {
	case v.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, errorf("token introspection: %s: no call slot came free (%d calls under way): %w", v.cfg.Endpoint, cap(v.slots), context.Cause(ctx))
	}
	defer func() { <-v.slots }()
	if ctx.Err() != nil { // the slot and the end came at once
		return nil, errorf("token introspection: %w", context.Cause(ctx))
	}
	claims, err := v.introspect(ctx, token)
	if err != nil {
		return nil, err
	}
	return v.check(claims, time.Now())
}

// introspect POSTs the token and decodes the response.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) (map[string]any, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errorf("token introspection: %s: %w", v.cfg.Endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.cfg.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	}
	res, err := v.client.Do(req)
	if err != nil {
		return nil, errorf("token introspection: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, v.cfg.MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, errorf("token introspection: %s: reading the response: %w", v.cfg.Endpoint, err)
	case res.StatusCode != http.StatusOK:
		return nil, errorf("token introspection: %s: status %d", v.cfg.Endpoint, res.StatusCode)
	case int64(len(body)) > v.cfg.MaxResponseBytes:
		return nil, errorf("token introspection: %s: the response exceeds %d bytes", v.cfg.Endpoint, v.cfg.MaxResponseBytes)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil || claims == nil {
		return nil, errorf("token introspection: %s: the response is not a JSON object", v.cfg.Endpoint)
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
// (Bearer or at+jwt). A token bound to a key (cnf, token_type DPoP) is
// refused later unless a DPoP proof came with it. It reports whether a
// field said access token.
func accessTokenKind(claims map[string]any) (bool, error) {
	said := false
	for _, f := range []struct {
		name   string
		accept []string
	}{
		{"token_type", []string{"bearer", "dpop", "access_token", "urn:ietf:params:oauth:token-type:access_token"}},
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

// cachedLocked returns the remembered result for key still good at now.
func (v *IntrospectionVerifier) cachedLocked(key tokenHash, now time.Time) (introspected, bool) {
	for _, m := range []map[tokenHash]introspected{v.cache, v.refused} {
		if r, ok := m[key]; ok {
			if now.Before(r.until) {
				return r, true
			}
			delete(m, key)
		}
	}
	return introspected{}, false
}

// rememberLocked keeps r under key in m; at the size bound it drops the
// results that have run out, else one of the others.
func rememberLocked(m map[tokenHash]introspected, size int, key tokenHash, r introspected, now time.Time) {
	if len(m) >= size {
		for k, e := range m {
			if !now.Before(e.until) {
				delete(m, k)
			}
		}
		for k := range m {
			if len(m) < size {
				break
			}
			delete(m, k)
		}
	}
	m[key] = r
}
