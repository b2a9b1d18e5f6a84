package mcp

import (
	"context"
	"crypto"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultMaxStepUps is how many times, by default, one request may be
// re-authorized with more scopes after the server answered 403
// insufficient_scope; see [OAuthConfig].MaxStepUps. Client side.
const DefaultMaxStepUps = 2

// DefaultMaxOAuthResponseBytes bounds, by default, each metadata,
// registration and token response the OAuth client reads; see
// [OAuthConfig].MaxResponseBytes. Client side.
const DefaultMaxOAuthResponseBytes = 1 << 20

// DefaultAuthorizationTimeout bounds, by default, one renewal of the
// token: discovery, registration, the user's sign-in and the token
// request; see [OAuthConfig].AuthorizationTimeout. Client side.
const DefaultAuthorizationTimeout = 10 * time.Minute

// expirySkew is how long before its expiry a token is refreshed, so that
// it does not expire on its way to the server; a short-lived token is
// refreshed when a fraction of its lifetime remains (see Token.stale).
const expirySkew = 30 * time.Second

// AuthorizationHandler is the interactive step of the authorization code
// flow, which belongs to the application: show authURL to the user (open a
// browser), and return the URL the authorization server redirected back to,
// with its query (code, state, iss, or error). Client side.
type AuthorizationHandler interface {
	Authorize(ctx context.Context, authURL string) (redirectURL string, err error)
}

// OAuthConfig configures the OAuth 2.1 client of [WithOAuth]. Zero fields
// take sane defaults; a program that signs a user in sets Handler (and
// RedirectURL, unless the Handler is a [LoopbackRedirect]), one that runs
// unattended sets Grant to [GrantClientCredentials] with its credentials.
// Client side.
type OAuthConfig struct {
	// ClientID and ClientSecret are pre-registered credentials, used
	// with every authorization server unless ClientIssuer is set; empty,
	// the client uses a client ID metadata document or registers itself.
	ClientID, ClientSecret string
	// ClientIssuer pins ClientID, ClientSecret and PrivateKey to the
	// authorization server with this issuer identifier: the client picks
	// it when a resource lists it among others, and fails with an
	// *AuthError at a resource that names only others, so that the
	// credentials never reach another server.
	ClientIssuer string
	// ClientIDMetadataURL is the https URL of the client's metadata
	// document, used as client_id where the server says it accepts one.
	ClientIDMetadataURL string
	// ClientName is the client_name of a dynamic registration.
	ClientName string
	// RedirectURL is where the authorization server sends the user
	// back; by default the Handler's RedirectURL() when it has one.
	RedirectURL string
	// TokenEndpointAuthMethod forces client_secret_basic,
	// client_secret_post, private_key_jwt or none; empty, the client
	// picks from what the server supports and what it has.
	TokenEndpointAuthMethod string
	// Scopes are asked for on top of those the server names. The client
	// adds offline_access, for a refresh token, when the authorization
	// server lists it in scopes_supported, and whenever it asks for
	// offline_access it asks for the user's consent (prompt=consent), as
	// OpenID Connect requires before it issues one.
	Scopes []string
	// Handler does the interactive step of the authorization code grant.
	Handler AuthorizationHandler
	// Store keeps tokens and registrations (default: in memory).
	Store TokenStore
	// HTTPClient sends the requests to the authorization server and the
	// metadata documents (default: one over the transport's RoundTripper).
	HTTPClient *http.Client
	// MaxStepUps bounds the re-authorizations of one request after 403
	// insufficient_scope (0: DefaultMaxStepUps; negative: none).
	MaxStepUps int
	// Grant is "" for the authorization code grant (or the JWT bearer
	// grant, when Assertion or Enterprise is set), or
	// GrantClientCredentials.
	Grant string
	// Assertion, when set, makes the client obtain tokens with the JWT
	// bearer grant (RFC 7523) and the JWT it returns, read again for
	// every new token: a workload's own identity token (workload identity
	// federation; see AssertionFile, AssertionEnv). No user signs in.
	// Without ClientID the client does not name itself.
	Assertion AssertionSource
	// Enterprise, when set, makes the client obtain tokens by
	// enterprise-managed authorization: the user's identity assertion
	// exchanged at the enterprise identity provider, then the JWT bearer
	// grant. See EnterpriseAuthorization.
	Enterprise *EnterpriseAuthorization
	// DPoP binds the tokens to a key of the client (RFC 9449): every
	// token request and every request to the server carries a fresh
	// proof signed by it, and a bound token is sent as "Authorization:
	// DPoP". The key is DPoPKey, or one generated for the transport.
	DPoP bool
	// DPoPKey is the DPoP key, an ECDSA P-256 key (ES256); set, it
	// turns DPoP on. A stored token bound to another key is not used.
	DPoPKey crypto.Signer
	// PrivateKey signs the client assertion of private_key_jwt (RFC
	// 7523), named KeyID in its header when KeyID is not empty.
	PrivateKey crypto.Signer
	KeyID      string
	// MaxResponseBytes bounds each response read from the authorization
	// server or a metadata URL (0: DefaultMaxOAuthResponseBytes).
	MaxResponseBytes int64
	// AuthorizationTimeout bounds one renewal of the token, the user's
	// sign-in included (0: DefaultAuthorizationTimeout). A renewal is not
	// bound by the request that needed it: a request whose own timeout
	// ends first fails, and the renewal goes on for the next one.
	AuthorizationTimeout time.Duration
}

// WithOAuth makes the client transport an OAuth 2.1 client of the server:
// on 401 it discovers the server's authorization server, obtains a token
// (authorization code with PKCE through cfg.Handler, client credentials,
// or the JWT bearer grant), and sends the request again with it; it
// refreshes tokens, one refresh at a time, and re-authorizes with more
// scopes on 403 insufficient_scope. Every request of the transport goes through it, in
// front of the Transport of the [WithHTTPClient] client, whichever option
// comes first. See [OAuthConfig]. Client only.
//
// With DPoP (cfg.DPoP or cfg.DPoPKey), a key that is not ECDSA P-256 makes
// every request fail with an *AuthError.
func WithOAuth(cfg OAuthConfig) HTTPTransportOption {
	return httpTransportOption(func(c *httpConfig) { c.oauth = &cfg })
}

// wrapOAuth puts the OAuth client in front of the configured http.Client's
// RoundTripper, once every option is known; a renewal under way ends with
// life, the transport's lifetime.
func (c *httpConfig) wrapOAuth(resource string, life context.Context) {
	if c.oauth == nil {
		return
	}
	o := newOAuthTransport(resource, c.client.Transport, *c.oauth)
	o.life = life
	cl := *c.client
	cl.Transport = o
	c.client = &cl
}

// newOAuthTransport returns the OAuth client of [WithOAuth]: it
// authorizes the requests it sends through base (nil:
// http.DefaultTransport) to the MCP server at resource.
func newOAuthTransport(resource string, base http.RoundTripper, cfg OAuthConfig) *oauthTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxOAuthResponseBytes
	}
	if cfg.AuthorizationTimeout <= 0 {
		cfg.AuthorizationTimeout = DefaultAuthorizationTimeout
	}
	o := &oauthTransport{resource: resource, base: base, cfg: cfg, http: cfg.HTTPClient, store: cfg.Store, now: time.Now}
	if o.http == nil {
		o.http = &http.Client{Transport: base}
	}
	// What goes to the token and registration endpoints (secrets,
	// assertions, codes) is not sent on to wherever they redirect.
	post := *o.http
	post.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.post = &post
	if u, err := url.Parse(resource); err == nil && u.Host != "" {
		o.origin = u
	}
	if o.store == nil {
		o.store = NewMemoryTokenStore()
	}
	if cfg.DPoP || cfg.DPoPKey != nil {
		if o.dpop, o.dpopErr = newDPoPKey(cfg.DPoPKey); o.dpopErr != nil {
			o.dpopErr = &AuthError{Step: "dpop", URL: resource, Field: "DPoPKey", Reason: "unusable (OAuthConfig.DPoPKey)", Err: o.dpopErr}
		}
	}
	switch {
	case cfg.MaxStepUps == 0:
		o.maxStepUps = DefaultMaxStepUps
	case cfg.MaxStepUps > 0:
		o.maxStepUps = cfg.MaxStepUps
	}
	return o
}

// oauthTransport is the OAuth client: a RoundTripper that holds the
// current token set and renews it, one renewal at a time.
type oauthTransport struct {
	resource   string
	origin     *url.URL // the resource's, parsed
	base       http.RoundTripper
	cfg        OAuthConfig
	http       *http.Client
	post       *http.Client // o.http, following no redirect
	store      TokenStore
	maxStepUps int
	now        func() time.Time
	life       context.Context // ends renewals under way; nil: none does
	dpop       *dpopKey        // nil: no DPoP
	dpopErr    error           // why DPoP was asked for and cannot be
	nonces     dpopNonces      // the latest DPoP nonce of each origin

	mu     sync.Mutex
	state  *authState  // the current token set; nil before the first
	gen    uint64      // counts renewals of state
	flight *authFlight // the renewal under way, if any
}

// authState is a token set and what renewing it takes.
type authState struct {
	token    *Token
	key      string // its TokenStore key
	resource string // the resource indicator, as the metadata names it
	issuer   string
	endpoint string // the token endpoint
	client   tokenClient
	scopes   []string // the scopes asked for
	how      tokenSource
}

// tokenSource says where a token set's token came from.
type tokenSource uint8

const (
	tokenGranted   tokenSource = iota // a new grant: the user's sign-in, client credentials
	tokenRefreshed                    // a refresh
	tokenStored                       // the TokenStore, from an earlier run
)

// authFlight is one renewal; the requests that need it wait for done.
type authFlight struct {
	done chan struct{}
	err  error
}

// renewal says why a token set is renewed.
type renewal struct {
	challenge *challenge
	refresh   bool // a refresh may do
	stepUp    bool // more scopes are needed: ask for the union
}

// RoundTrip sends req with the current token, obtaining or renewing one
// when the server asks for it.
func (o *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !o.sameOrigin(req.URL) {
		// A redirect elsewhere, say: the token is the resource's alone.
		return o.base.RoundTrip(req)
	}
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if o.dpopErr != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, o.dpopErr
	}
	o.mu.Lock()
	st, gen := o.state, o.gen
	o.mu.Unlock()
	var err error
	// A stale token is refreshed, or, from a grant that needs no one
	// (client credentials, an assertion), replaced.
	if st != nil && st.token.stale(o.now()) && (st.token.RefreshToken != "" || o.unattended()) {
		if st, gen, err = o.renew(ctx, gen, renewal{refresh: st.token.RefreshToken != ""}); err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the body, even on errors
			}
			return nil, err
		}
	}
	stepUps, unauthorized := 0, 0
	renewed := false // st came from a renewal for this request
	nonceRetried := false
	for attempt := 0; ; attempt++ {
		r := req.Clone(ctx)
		if attempt > 0 && req.GetBody != nil {
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		bound := false // a DPoP proof goes with this attempt
		if st != nil {
			if bound, err = o.setAuthorization(r, st.token); err != nil {
				if r.Body != nil {
					r.Body.Close()
				}
				return nil, err
			}
		}
		resp, err := o.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		fresh := o.dpop != nil && o.nonces.remember(req.URL, resp.Header.Get("DPoP-Nonce"))
		var why renewal
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			if bound && useDPoPNonce(resp) {
				// RFC 9449 section 9: once more with the server's nonce;
				// a second demand is a refusal, not a loop.
				drain(resp.Body)
				if !fresh || nonceRetried || !replayable {
					return nil, &AuthError{Step: "dpop", URL: req.URL.String(), Status: resp.StatusCode, Field: "error=use_dpop_nonce",
						Reason: "the server asks for a DPoP nonce again, or gave none, or the request's body cannot be sent again"}
				}
				nonceRetried = true
				continue
			}
			why.challenge = bearerChallenge(resp.Header.Values("WWW-Authenticate"))
			unauthorized++
			// A stored or refreshed token that is refused earns a new
			// grant; a new grant that is refused, nothing more.
			if !replayable || unauthorized > 3 || (renewed && st.how == tokenGranted) {
				drain(resp.Body)
				reason := "the server refused the token it was just given"
				if !replayable {
					reason = "the server requires a token, and the request's body cannot be sent again with one"
				}
				return nil, &AuthError{Step: "authorization", URL: req.URL.String(), Status: resp.StatusCode,
					Reason: reason, Field: challengeField(why.challenge)}
			}
			why.refresh = st != nil && st.token.RefreshToken != "" && !(renewed && st.how == tokenRefreshed)
		case http.StatusForbidden:
			why.challenge = bearerChallenge(resp.Header.Values("WWW-Authenticate"))
			if why.challenge == nil || why.challenge.param("error") != "insufficient_scope" || !replayable {
				return resp, nil
			}
			stepUps++
			if stepUps > o.maxStepUps {
				drain(resp.Body)
				return nil, &AuthError{Step: "step-up", URL: req.URL.String(), Status: resp.StatusCode, Field: "scope",
					Reason: fmt.Sprintf("the server still asks for scope %q after %d re-authorizations (OAuthConfig.MaxStepUps)",
						why.challenge.param("scope"), o.maxStepUps)}
			}
			why.stepUp = true
		default:
			return resp, nil
		}
		drain(resp.Body)
		if st, gen, err = o.renew(ctx, gen, why); err != nil {
			return nil, err
		}
		renewed = true
	}
}

// setAuthorization puts token t on request r: as a DPoP token with a
// fresh proof for r, naming the latest nonce of its origin, when t is
// bound to the key, else as a bearer token. It reports whether a proof
// went with it.
func (o *oauthTransport) setAuthorization(r *http.Request, t *Token) (bool, error) {
	if o.dpop == nil || t.TokenType != tokenTypeDPoP {
		r.Header.Set("Authorization", "Bearer "+t.AccessToken)
		return false, nil
	}
	proof, err := o.dpop.proof(r.Method, r.URL, t.AccessToken, o.nonces.get(r.URL), o.now())
	if err != nil {
		return false, &AuthError{Step: "dpop", URL: r.URL.String(), Reason: "signing the DPoP proof", Err: err}
	}
	r.Header.Set("Authorization", "DPoP "+t.AccessToken)
	r.Header.Set("DPoP", proof)
	return true, nil
}

// useDPoPNonce reports whether a 401 is the resource's demand for a DPoP
// nonce: a DPoP challenge with error use_dpop_nonce.
func useDPoPNonce(resp *http.Response) bool {
	c := findChallenge(resp.Header.Values("WWW-Authenticate"), "dpop")
	return c != nil && c.param("error") == "use_dpop_nonce"
}

// unattended reports whether new tokens come without a user: client
// credentials or an assertion.
func (o *oauthTransport) unattended() bool {
	return o.cfg.Grant == GrantClientCredentials || o.assertionGrant()
}

// sameOrigin reports whether u is on the resource's scheme, host and port.
func (o *oauthTransport) sameOrigin(u *url.URL) bool {
	return o.origin != nil && strings.EqualFold(u.Scheme, o.origin.Scheme) && strings.EqualFold(u.Host, o.origin.Host)
}

// challengeField names the error of a challenge, for an AuthError.
func challengeField(c *challenge) string {
	if c == nil || c.param("error") == "" {
		return ""
	}
	return "error=" + c.param("error")
}

// renew returns a token set newer than generation gen: the one another
// request obtained meanwhile, or the one the renewal under way obtains,
// starting one if none is. One renewal runs at a time, on a goroutine of
// its own bounded by AuthorizationTimeout; the requests that need it wait
// for it, each as long as its own context allows, and share its outcome.
func (o *oauthTransport) renew(ctx context.Context, gen uint64, why renewal) (*authState, uint64, error) {
	o.mu.Lock()
	if o.state != nil && o.gen != gen {
		st, g := o.state, o.gen
		o.mu.Unlock()
		return st, g, nil
	}
	f := o.flight
	if f == nil {
		f = &authFlight{done: make(chan struct{})}
		o.flight = f
		go o.fly(context.WithoutCancel(ctx), f, o.state, why)
	}
	o.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if f.err != nil {
		return nil, 0, f.err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state, o.gen, nil
}

// fly runs renewal f and publishes its outcome.
func (o *oauthTransport) fly(ctx context.Context, f *authFlight, prev *authState, why renewal) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.AuthorizationTimeout)
	defer cancel()
	if o.life != nil {
		defer context.AfterFunc(o.life, cancel)()
	}
	st, err := o.obtain(ctx, prev, why)
	o.mu.Lock()
	if err == nil {
		o.state = st
		o.gen++
	}
	f.err = err
	o.flight = nil
	o.mu.Unlock()
	close(f.done)
}

// obtain renews prev: by refreshing it when that may do, else with a new
// authorization.
func (o *oauthTransport) obtain(ctx context.Context, prev *authState, why renewal) (*authState, error) {
	if why.refresh && prev != nil && prev.token.RefreshToken != "" {
		if st, err := o.refresh(ctx, prev); err == nil {
			return st, nil
		}
		// A refused refresh token: sign in again.
	}
	return o.authorize(ctx, prev, why)
}

// refresh exchanges prev's refresh token for a new token.
func (o *oauthTransport) refresh(ctx context.Context, prev *authState) (*authState, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {prev.token.RefreshToken}, "resource": {prev.resource}}
	t, err := o.requestToken(ctx, "refresh", prev.endpoint, form, prev.client)
	if err != nil {
		return nil, err
	}
	if t.RefreshToken == "" {
		t.RefreshToken = prev.token.RefreshToken // RFC 6749 section 6: the old one stays valid
	}
	if prev.token.TokenType == tokenTypeDPoP && t.TokenType != tokenTypeDPoP {
		// RFC 9449 section 5: a refresh keeps the binding; an unbound
		// token in its place is not what was granted.
		return nil, &AuthError{Step: "refresh", URL: prev.endpoint, Field: "token_type", Reason: "a DPoP-bound token was refreshed into an unbound one"}
	}
	st := *prev
	st.token, st.how = t, tokenRefreshed
	return &st, o.keep(ctx, &st)
}

// keep saves a token set's token in the store.
func (o *oauthTransport) keep(ctx context.Context, st *authState) error {
	if err := o.store.StoreToken(ctx, st.key, st.token); err != nil {
		return &AuthError{Step: "store", URL: st.issuer, Reason: "keeping the token in the TokenStore", Err: err}
	}
	return nil
}

// authorize discovers the authorization server of the resource and
// obtains a token from it.
func (o *oauthTransport) authorize(ctx context.Context, prev *authState, why renewal) (*authState, error) {
	var ch challenge
	if why.challenge != nil {
		ch = *why.challenge
	}
	prm, err := o.discoverResource(ctx, ch.param("resource_metadata"))
	var as *AuthorizationServerMetadata
	switch {
	case err == nil:
		if as, err = o.discoverAuthServer(ctx, o.pickIssuer(prm.AuthorizationServers), false); err != nil {
			return nil, err
		}
	case errors.Is(err, errNoMetadata) && ch.param("resource_metadata") == "":
		if prm, as, err = o.legacyDiscovery(ctx); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	issuer := as.Issuer
	if as.TokenEndpoint == "" {
		return nil, &AuthError{Step: "authorization server metadata", URL: issuer, Field: "token_endpoint", Reason: "missing"}
	}
	st := &authState{key: tokenKey(issuer, prm.Resource), resource: prm.Resource, issuer: issuer, endpoint: as.TokenEndpoint}

	// Scopes: the challenge's, else all the resource supports, else none.
	if s := scopeList(ch.param("scope")); len(s) > 0 {
		st.scopes = s
	} else {
		st.scopes = prm.ScopesSupported
	}
	if why.stepUp && prev != nil {
		st.scopes = union(prev.scopes, st.scopes)
	}
	st.scopes = union(st.scopes, o.cfg.Scopes)

	if o.assertionGrant() && o.cfg.ClientID == "" {
		st.client = tokenClient{method: authMethodNone} // a workload need not name itself
	} else if st.client, err = o.clientFor(ctx, as); err != nil {
		return nil, err
	}
	if prev == nil && !why.stepUp {
		// A token kept from an earlier run of the program, refreshed if
		// it has expired.
		t, err := o.store.LoadToken(ctx, st.key)
		if err == nil && !t.usableWith(o.dpop) {
			err = ErrNoToken // bound to a key this client does not hold
		}
		switch {
		case err == nil && !t.stale(o.now()):
			st.token, st.how = t, tokenStored
			return st, nil
		case err == nil && t.RefreshToken != "":
			st.token = t
			if fresh, err := o.refresh(ctx, st); err == nil {
				return fresh, nil
			}
		case err != nil && !errors.Is(err, ErrNoToken):
			return nil, &AuthError{Step: "store", URL: issuer, Reason: "loading the token from the TokenStore", Err: err}
		}
	}

	if o.cfg.Grant == GrantClientCredentials {
		form := url.Values{"grant_type": {GrantClientCredentials}, "resource": {prm.Resource}}
		if len(st.scopes) > 0 {
			form.Set("scope", strings.Join(st.scopes, " "))
		}
		if st.token, err = o.requestToken(ctx, "token", as.TokenEndpoint, form, st.client); err != nil {
			return nil, err
		}
		st.how = tokenGranted
		return st, o.keep(ctx, st)
	}
	if o.assertionGrant() {
		if st.token, err = o.jwtBearer(ctx, as, st); err != nil {
			return nil, err
		}
		st.how = tokenGranted
		return st, o.keep(ctx, st)
	}
	if slices.Contains(as.ScopesSupported, "offline_access") {
		st.scopes = union(st.scopes, []string{"offline_access"})
	}
	if st.token, err = o.authorizationCode(ctx, as, st); err != nil {
		return nil, err
	}
	return st, o.keep(ctx, st)
}

// pickIssuer chooses among the authorization servers a resource names:
// the one a pre-registered client is pinned to when it is listed, else the
// first.
func (o *oauthTransport) pickIssuer(issuers []string) string {
	if pin := o.cfg.ClientIssuer; o.cfg.ClientID != "" && pin != "" && slices.Contains(issuers, pin) {
		return pin
	}
	return issuers[0]
}

// authorizationCode runs the authorization code grant with PKCE: the
// user's step through the Handler, then the code exchange.
func (o *oauthTransport) authorizationCode(ctx context.Context, as *AuthorizationServerMetadata, st *authState) (*Token, error) {
	const step = "authorization"
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return nil, &AuthError{Step: "authorization server metadata", URL: as.Issuer, Field: "code_challenge_methods_supported",
			Reason: "S256 is not listed, so PKCE cannot be used"}
	}
	if as.AuthorizationEndpoint == "" {
		return nil, &AuthError{Step: "authorization server metadata", URL: as.Issuer, Field: "authorization_endpoint", Reason: "missing"}
	}
	redirect := o.redirectURL()
	if o.cfg.Handler == nil || redirect == "" {
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Reason: "the server requires a sign-in, and OAuthConfig has no Handler and RedirectURL"}
	}
	verifier := randomString(32)
	sum := sha256.Sum256([]byte(verifier))
	state := randomString(16)
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {st.client.id},
		"redirect_uri":          {redirect},
		"code_challenge":        {b64.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {st.resource},
	}
	if len(st.scopes) > 0 {
		q.Set("scope", strings.Join(st.scopes, " "))
	}
	if slices.Contains(st.scopes, "offline_access") {
		// OpenID Connect (Core section 11) grants offline access only
		// with the user's consent asked for now; a plain OAuth server
		// ignores a parameter it does not know.
		q.Set("prompt", "consent")
	}
	authURL := as.AuthorizationEndpoint
	if strings.Contains(authURL, "?") {
		authURL += "&" + q.Encode()
	} else {
		authURL += "?" + q.Encode()
	}
	back, err := o.cfg.Handler.Authorize(ctx, authURL)
	if err != nil {
		var ae *AuthError
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Reason: "the authorization handler failed", Err: err}
	}
	u, err := url.Parse(back)
	if err != nil {
		return nil, &AuthError{Step: step, URL: back, Reason: "the redirect URL does not parse", Err: err}
	}
	resp := u.Query()
	// RFC 9207: an iss present must be the issuer, compared as a string;
	// one the server promised must be present.
	if iss, ok := resp["iss"]; ok {
		if len(iss) != 1 || iss[0] != as.Issuer {
			return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Field: "iss",
				Reason: fmt.Sprintf("the response names issuer %q, not %q", resp.Get("iss"), as.Issuer)}
		}
	} else if as.AuthorizationResponseIssParameterSupported {
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Field: "iss",
			Reason: "missing, though the server says it sends it (authorization_response_iss_parameter_supported)"}
	}
	if resp.Get("state") != state {
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Field: "state", Reason: "does not match the request's"}
	}
	if e := resp.Get("error"); e != "" {
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Field: "error", Reason: strings.TrimSuffix(e+": "+resp.Get("error_description"), ": ")}
	}
	code := resp.Get("code")
	if code == "" {
		return nil, &AuthError{Step: step, URL: as.AuthorizationEndpoint, Field: "code", Reason: "missing from the redirect"}
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirect},
		"code_verifier": {verifier},
		"resource":      {st.resource},
	}
	return o.requestToken(ctx, "token", as.TokenEndpoint, form, st.client)
}

// redirectURL is the configured redirect URL, else the Handler's.
func (o *oauthTransport) redirectURL() string {
	if o.cfg.RedirectURL != "" {
		return o.cfg.RedirectURL
	}
	if h, ok := o.cfg.Handler.(interface{ RedirectURL() string }); ok {
		return h.RedirectURL()
	}
	return ""
}

// union returns a followed by the elements of b it lacks.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
