package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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
	// KeyThumbprint names, for a token bound to a DPoP key (TokenType
	// DPoP), the key's RFC 7638 thumbprint: such a token is sent only
	// with proofs of that key.
	KeyThumbprint string `json:"dpop_jkt,omitempty"`

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

// tokenTypeDPoP is the token_type of a token bound to a DPoP key.
const tokenTypeDPoP = "DPoP"

// usableWith reports whether a stored token may be sent by a client whose
// DPoP key (nil: none) has the thumbprint jkt: a bound token only with its
// key, an unbound one with any.
func (t *Token) usableWith(key *dpopKey) bool {
	if t.KeyThumbprint == "" && !strings.EqualFold(t.TokenType, tokenTypeDPoP) {
		return true
	}
	return key != nil && t.KeyThumbprint == key.thumbprint
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
// returns the token it grants. step names the step for errors. With DPoP
// the request carries a proof, and a token the server bound to the key
// comes back as a DPoP token naming the key's thumbprint.
func (o *oauthTransport) requestToken(ctx context.Context, step, endpoint string, form url.Values, c tokenClient) (*Token, error) {
	tr, status, err := o.postToken(ctx, step, endpoint, form, c, o.dpop != nil)
	if err != nil {
		return nil, err
	}
	if tr.AccessToken == "" {
		return nil, &AuthError{Step: step, URL: endpoint, Status: status, Field: "access_token", Reason: "missing"}
	}
	t := &Token{AccessToken: tr.AccessToken, TokenType: "Bearer", RefreshToken: tr.RefreshToken, Scope: tr.Scope}
	switch {
	case tr.TokenType == "" || strings.EqualFold(tr.TokenType, "bearer"):
		// A server that does no DPoP ignores the proof (RFC 9449 section 5).
	case strings.EqualFold(tr.TokenType, tokenTypeDPoP) && o.dpop != nil:
		t.TokenType, t.KeyThumbprint = tokenTypeDPoP, o.dpop.thumbprint
	default:
		return nil, &AuthError{Step: step, URL: endpoint, Status: status, Field: "token_type", Reason: fmt.Sprintf("%q is not Bearer", clip(tr.TokenType))}
	}
	if tr.ExpiresIn != "" {
		secs, err := tr.ExpiresIn.Int64()
		if err != nil || secs < 0 {
			return nil, &AuthError{Step: step, URL: endpoint, Status: status, Field: "expires_in", Reason: fmt.Sprintf("%q is not a number of seconds", clip(string(tr.ExpiresIn)))}
		}
		t.lifetime = peerDuration(secs, time.Second)
		t.Expiry = o.now().Add(t.lifetime)
	}
	return t, nil
}

// tokenResponse is a token endpoint's answer (RFC 6749 section 5, RFC 8693
// section 2.2).
type tokenResponse struct {
	AccessToken     string      `json:"access_token"`
	TokenType       string      `json:"token_type"`
	IssuedTokenType string      `json:"issued_token_type"`
	RefreshToken    string      `json:"refresh_token"`
	Scope           string      `json:"scope"`
	ExpiresIn       json.Number `json:"expires_in"`
	Error           string      `json:"error"`
	Description     string      `json:"error_description"`
}

// postToken POSTs form to a token endpoint, authenticating as c, with a
// DPoP proof when proof is set, and returns its successful answer and
// status. A server that asks for a DPoP nonce (400 use_dpop_nonce with a
// DPoP-Nonce header) gets the request once more with it, never twice.
func (o *oauthTransport) postToken(ctx context.Context, step, endpoint string, form url.Values, c tokenClient, proof bool) (*tokenResponse, int, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, 0, &AuthError{Step: step, URL: endpoint, Reason: "bad token endpoint", Err: err}
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
		if err != nil {
			return nil, 0, &AuthError{Step: step, URL: endpoint, Reason: "bad token endpoint", Err: err}
		}
		f := maps.Clone(form)
		if err := o.authenticateClient(req, f, c); err != nil {
			return nil, 0, &AuthError{Step: step, URL: endpoint, Field: "token_endpoint_auth_method", Reason: err.Error()}
		}
		body := f.Encode()
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if proof {
			p, err := o.dpop.proof(http.MethodPost, u, "", o.nonces.get(u), o.now())
			if err != nil {
				return nil, 0, &AuthError{Step: step, URL: endpoint, Reason: "signing the DPoP proof", Err: err}
			}
			req.Header.Set("DPoP", p)
		}
		resp, err := o.post.Do(req)
		if err != nil {
			return nil, 0, &AuthError{Step: step, URL: endpoint, Reason: "request failed", Err: err}
		}
		data, err := o.readBody(resp)
		resp.Body.Close()
		if err != nil {
			return nil, 0, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "reading the response", Err: err}
		}
		fresh := proof && o.nonces.remember(u, resp.Header.Get("DPoP-Nonce"))
		var tr tokenResponse
		jerr := json.Unmarshal(data, &tr)
		if resp.StatusCode != http.StatusOK {
			if resp.StatusCode == http.StatusBadRequest && tr.Error == "use_dpop_nonce" && fresh && attempt == 0 {
				continue // RFC 9449 section 8: once more, with the nonce
			}
			e := &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "the token endpoint refused the request"}
			if tr.Error != "" {
				e.Field, e.Reason = "error", clip(tr.Error)
				if tr.Description != "" {
					e.Reason += ": " + clip(tr.Description)
				}
			}
			return nil, resp.StatusCode, e
		}
		if jerr != nil {
			return nil, resp.StatusCode, &AuthError{Step: step, URL: endpoint, Status: resp.StatusCode, Reason: "the token response is not JSON", Err: jerr}
		}
		return &tr, resp.StatusCode, nil
	}
}

// authenticateClient adds c's credentials to a token request and its form.
func (o *oauthTransport) authenticateClient(req *http.Request, form url.Values, c tokenClient) error {
	switch c.method {
	case authMethodBasic:
		req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	case authMethodPost:
		form.Set("client_id", c.id)
		form.Set("client_secret", c.secret)
	case authMethodJWT:
		if o.cfg.PrivateKey == nil {
			return errors.New("private_key_jwt needs OAuthConfig.PrivateKey")
		}
		now := o.now()
		claims := map[string]any{
			"iss": c.id, "sub": c.id, "aud": c.audience, "jti": randomString(16),
			"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		}
		assertion, err := signJWT(o.cfg.PrivateKey, o.cfg.KeyID, claims)
		if err != nil {
			return fmt.Errorf("signing the client assertion: %w", err)
		}
		form.Set("client_id", c.id)
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", assertion)
	default:
		if c.id != "" {
			form.Set("client_id", c.id)
		}
	}
	return nil
}

// maxReasonBytes bounds what of a server's error text an AuthError repeats.
const maxReasonBytes = 256

// clip bounds a string a server sent before it goes into an error.
func clip(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxReasonBytes], "") + "..."
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
