package mcp

import (
	"context"
	"crypto/rand"
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

// Token is an OAuth access token with what came with it. Client side.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Scope        string    `json:"scope,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`

	lifetime time.Duration // the expires_in it came with; 0: not known
}

// refreshFraction is the part of a short token's lifetime left when it is
// renewed: a token that lives less than expirySkew times this is renewed
// once that part of its life remains, not at every request.
const refreshFraction = 4

// stale reports whether t should be renewed at now: it has expired, or
// less than expirySkew remains, or less than a quarter of its lifetime
// when that is shorter. A token whose lifetime is not known (one a
// TokenStore kept without it) gets the full skew.
func (t *Token) stale(now time.Time) bool {
	if t.Expiry.IsZero() {
		return false
	}
	skew := expirySkew
	if t.lifetime > 0 {
		skew = min(skew, t.lifetime/refreshFraction)
	}
	return !now.Add(skew).Before(t.Expiry)
}

// ClientRegistration is what an authorization server knows the client by:
// the credentials dynamic client registration (RFC 7591) returned. Client
// side.
type ClientRegistration struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret,omitempty"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
}

// ErrNoToken is returned by a TokenStore that holds nothing under a key.
// Client side.
var ErrNoToken = errors.New("mcp: no token stored")

// TokenStore keeps what the OAuth client obtained, so that a program can
// keep its sign-in across runs: tokens under a key naming the
// authorization server and the resource, and client registrations under
// the authorization server's issuer, never shared between issuers. Loads
// return ErrNoToken for a key with nothing stored. Client side.
type TokenStore interface {
	LoadToken(ctx context.Context, key string) (*Token, error)
	StoreToken(ctx context.Context, key string, t *Token) error
	LoadClient(ctx context.Context, issuer string) (*ClientRegistration, error)
	StoreClient(ctx context.Context, issuer string, c *ClientRegistration) error
}

// MemoryTokenStore is a TokenStore in memory, the default. Client side.
type MemoryTokenStore struct {
	mu      sync.Mutex
	tokens  map[string]Token
	clients map[string]ClientRegistration
}

// NewMemoryTokenStore returns an empty in-memory TokenStore. Client side.
func NewMemoryTokenStore() *MemoryTokenStore {
	return &MemoryTokenStore{tokens: make(map[string]Token), clients: make(map[string]ClientRegistration)}
}

// LoadToken returns a copy of the token stored under key.
func (s *MemoryTokenStore) LoadToken(_ context.Context, key string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[key]
	if !ok {
		return nil, ErrNoToken
	}
	return &t, nil
}

// StoreToken keeps a copy of t under key.
func (s *MemoryTokenStore) StoreToken(_ context.Context, key string, t *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[key] = *t
	return nil
}

// LoadClient returns a copy of the registration kept for issuer.
func (s *MemoryTokenStore) LoadClient(_ context.Context, issuer string) (*ClientRegistration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[issuer]
	if !ok {
		return nil, ErrNoToken
	}
	return &c, nil
}

// StoreClient keeps a copy of c for issuer.
func (s *MemoryTokenStore) StoreClient(_ context.Context, issuer string, c *ClientRegistration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[issuer] = *c
	return nil
}

// tokenKey is the TokenStore key of the tokens issuer grants for resource.
func tokenKey(issuer, resource string) string { return issuer + " " + resource }

// Token endpoint authentication methods (RFC 7591 section 2).
const (
	authMethodBasic = "client_secret_basic"
	authMethodPost  = "client_secret_post"
	authMethodNone  = "none"
	authMethodJWT   = "private_key_jwt"
)

// GrantClientCredentials selects, in [OAuthConfig].Grant, the
// client_credentials grant of machine-to-machine clients. Client side.
const GrantClientCredentials = "client_credentials"

// clientAssertionType is the client_assertion_type of RFC 7523.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// tokenClient is the client as the token endpoint knows it.
type tokenClient struct {
	id, secret string
	method     string // one of the authMethod constants
	audience   string // private_key_jwt: the assertion's aud
}

// chooseAuthMethod picks how the client authenticates at the token
// endpoint: what the configuration or the registration says, else the
// first the server supports of what the client can do. A server that lists
// nothing supports client_secret_basic (RFC 8414 section 2).
func chooseAuthMethod(configured, registered string, hasSecret, hasKey bool, supported []string) string {
	switch {
	case configured != "":
		return configured
	case registered != "":
		return registered
	}
	if len(supported) == 0 {
		supported = []string{authMethodBasic}
	}
	var prefs []string
	switch {
	case hasKey:
		prefs = []string{authMethodJWT}
	case hasSecret:
		prefs = []string{authMethodBasic, authMethodPost}
	}
	for _, m := range prefs {
		if slices.Contains(supported, m) {
			return m
		}
	}
	if hasSecret && !slices.Contains(supported, authMethodNone) {
		return authMethodBasic // none of its methods is ours: try the default
	}
	return authMethodNone
}

// requestToken POSTs form to the token endpoint, authenticating as c, and
// returns the token it grants. step names the step for errors.
func (o *oauthTransport) requestToken(ctx context.Context, step, endpoint string, form url.Values, c tokenClient) (*Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return nil, &AuthError{Step: step, URL: endpoint, Reason: "bad token endpoint", Err: err}
	}
	switch c.method {
	case authMethodBasic:
		req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	case authMethodPost:
		form.Set("client_id", c.id)
		form.Set("client_secret", c.secret)
	case authMethodJWT:
		if o.cfg.PrivateKey == nil {
			return nil, &AuthError{Step: step, URL: endpoint, Field: "token_endpoint_auth_method", Reason: "private_key_jwt needs OAuthConfig.PrivateKey"}
		}
		now := o.now()
		claims := map[string]any{
			"iss": c.id, "sub": c.id, "aud": c.audience, "jti": randomString(16),
			"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		}
		assertion, err := signJWT(o.cfg.PrivateKey, o.cfg.KeyID, claims)
		if err != nil {
			return nil, &AuthError{Step: step, URL: endpoint, Reason: "signing the client assertion", Err: err}
		}
		form.Set("client_id", c.id)
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", assertion)
	default:
		form.Set("client_id", c.id)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := o.post.Do(req)
	if err != nil {
		return nil, &AuthError{Step: step, URL: endpoint, Reason: "request failed", Err: err}
	}
	defer resp.Body.Close()
	data, err := o.readBody(resp)
	if err != nil {
		return nil, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "reading the response", Err: err}
	}
	var tr struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		Scope        string      `json:"scope"`
		ExpiresIn    json.Number `json:"expires_in"`
		Error        string      `json:"error"`
		Description  string      `json:"error_description"`
	}
	jerr := json.Unmarshal(data, &tr)
	if resp.StatusCode != http.StatusOK {
		e := &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "the token endpoint refused the request"}
		if tr.Error != "" {
			e.Field, e.Reason = "error", tr.Error
			if tr.Description != "" {
				e.Reason += ": " + tr.Description
			}
		}
		return nil, e
	}
	if jerr != nil {
		return nil, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "the token response is not JSON", Err: jerr}
	}
	if tr.AccessToken == "" {
		return nil, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Field: "access_token", Reason: "missing"}
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return nil, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Field: "token_type", Reason: fmt.Sprintf("%q is not Bearer", tr.TokenType)}
	}
	t := &Token{AccessToken: tr.AccessToken, TokenType: "Bearer", RefreshToken: tr.RefreshToken, Scope: tr.Scope}
	if tr.ExpiresIn != "" {
		secs, err := tr.ExpiresIn.Int64()
		if err != nil || secs < 0 {
			return nil, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Field: "expires_in", Reason: fmt.Sprintf("%q is not a number of seconds", tr.ExpiresIn)}
		}
		t.lifetime = peerDuration(secs, time.Second)
		t.Expiry = o.now().Add(t.lifetime)
	}
	return t, nil
}

// readBody reads a response body up to the configured bound.
func (o *oauthTransport) readBody(resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > o.cfg.MaxResponseBytes {
		return nil, fmt.Errorf("the body exceeds %d bytes (OAuthConfig.MaxResponseBytes)", o.cfg.MaxResponseBytes)
	}
	return data, nil
}

// randomString returns n random bytes, base64url-encoded.
func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return b64.EncodeToString(b)
}
