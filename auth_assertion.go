package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// The JWT bearer grant (RFC 7523 section 2.1): the client presents a JWT
// that someone else issued, not a user's sign-in. Two profiles: a
// workload's own identity token (workload identity federation), and an
// identity assertion JWT authorization grant (ID-JAG) the enterprise's
// identity provider issues for the signed-in user (enterprise-managed
// authorization).

// Grant and token type URIs of the assertion grants.
const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// Token types of the user's identity assertion in
// [EnterpriseAuthorization].IdentityType (RFC 8693 section 3). Client side.
const (
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeSAML2   = "urn:ietf:params:oauth:token-type:saml2"
)

// maxAssertionBytes bounds an assertion read from a file or the
// environment, or returned by an identity provider.
const maxAssertionBytes = 64 << 10

// AssertionSource supplies a signed assertion: a workload's identity token
// for [OAuthConfig].Assertion, or the signed-in user's identity assertion
// (an ID token or a SAML assertion) for [EnterpriseAuthorization].Identity.
// The client asks for it every time it needs a new token, so a source that
// rotates (a projected service account token, a re-issued ID token) is
// read afresh. Client side.
type AssertionSource interface {
	Assertion(ctx context.Context) (string, error)
}

// AssertionFunc is an AssertionSource that is a function. Client side.
type AssertionFunc func(ctx context.Context) (string, error)

// Assertion calls f.
func (f AssertionFunc) Assertion(ctx context.Context) (string, error) { return f(ctx) }

// AssertionFile is an AssertionSource that reads the assertion from the
// file at path each time, spaces around it removed: a workload's token
// that its platform mounts and rotates. Client side.
func AssertionFile(path string) AssertionSource {
	return AssertionFunc(func(context.Context) (string, error) {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxAssertionBytes+1))
		if err != nil {
			return "", err
		}
		if len(data) > maxAssertionBytes {
			return "", fmt.Errorf("%s: larger than %d bytes", path, maxAssertionBytes)
		}
		return strings.TrimSpace(string(data)), nil
	})
}

// AssertionEnv is an AssertionSource that reads the assertion from the
// environment variable name each time. Client side.
func AssertionEnv(name string) AssertionSource {
	return AssertionFunc(func(context.Context) (string, error) {
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("$%s is not set", name)
		}
		return strings.TrimSpace(v), nil
	})
}

// EnterpriseAuthorization configures enterprise-managed authorization (the
// MCP authorization extension of that name): the client exchanges the
// signed-in user's identity assertion at the enterprise identity provider
// for an identity assertion JWT authorization grant (RFC 8693 token
// exchange, requested_token_type id-jag, audience the MCP server's
// authorization server, resource the MCP server), and presents it to that
// authorization server with the JWT bearer grant (RFC 7523). No browser
// step: the enterprise's policy at the identity provider decides. Client
// side.
type EnterpriseAuthorization struct {
	// TokenEndpoint is the identity provider's token endpoint.
	TokenEndpoint string
	// ClientID and ClientSecret are how the client is known to the
	// identity provider (client_secret_basic; without a secret, only
	// client_id is sent).
	ClientID, ClientSecret string
	// Identity returns the user's identity assertion; it is asked again
	// for every new token.
	Identity AssertionSource
	// IdentityType is the assertion's token type: TokenTypeIDToken (the
	// default) or TokenTypeSAML2.
	IdentityType string
}

// assertionGrant reports whether the configuration obtains tokens with the
// JWT bearer grant.
func (o *oauthTransport) assertionGrant() bool {
	return o.cfg.Assertion != nil || o.cfg.Enterprise != nil
}

// jwtBearer obtains a token from the authorization server as with the JWT
// bearer grant: the workload's assertion, or an ID-JAG for the user from
// the enterprise's identity provider. A refusal is final: the same
// assertion would be refused again.
func (o *oauthTransport) jwtBearer(ctx context.Context, as *AuthorizationServerMetadata, st *authState) (*Token, error) {
	var assertion string
	var err error
	if e := o.cfg.Enterprise; e != nil {
		assertion, err = o.identityAssertionGrant(ctx, e, as.Issuer, st)
	} else {
		assertion, err = o.cfg.Assertion.Assertion(ctx)
		if err == nil && assertion == "" {
			err = errors.New("empty")
		}
		if err != nil {
			err = &AuthError{Step: "assertion", URL: as.TokenEndpoint, Reason: "the workload's assertion (OAuthConfig.Assertion)", Err: err}
		}
	}
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}, "resource": {st.resource}}
	if len(st.scopes) > 0 {
		form.Set("scope", strings.Join(st.scopes, " "))
	}
	return o.requestToken(ctx, "token", as.TokenEndpoint, form, st.client)
}

// identityAssertionGrant exchanges the user's identity assertion at the
// identity provider for an ID-JAG for the authorization server issuer and
// the resource of st.
func (o *oauthTransport) identityAssertionGrant(ctx context.Context, e *EnterpriseAuthorization, issuer string, st *authState) (string, error) {
	const step = "token exchange"
	if e.TokenEndpoint == "" || !secureEndpoint(e.TokenEndpoint) {
		return "", &AuthError{Step: step, URL: e.TokenEndpoint, Field: "TokenEndpoint",
			Reason: "the identity provider's token endpoint must be https, or http on a loopback host (EnterpriseAuthorization.TokenEndpoint)"}
	}
	if e.Identity == nil {
		return "", &AuthError{Step: step, URL: e.TokenEndpoint, Reason: "EnterpriseAuthorization.Identity is nil"}
	}
	subject, err := e.Identity.Assertion(ctx)
	if err == nil && subject == "" {
		err = errors.New("empty")
	}
	if err != nil {
		return "", &AuthError{Step: step, URL: e.TokenEndpoint, Reason: "the user's identity assertion (EnterpriseAuthorization.Identity)", Err: err}
	}
	typ := e.IdentityType
	if typ == "" {
		typ = TokenTypeIDToken
	}
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"subject_token":        {subject},
		"subject_token_type":   {typ},
		"audience":             {issuer},
		"resource":             {st.resource},
	}
	if len(st.scopes) > 0 {
		form.Set("scope", strings.Join(st.scopes, " "))
	}
	c := tokenClient{id: e.ClientID, secret: e.ClientSecret, method: authMethodNone}
	if e.ClientSecret != "" {
		c.method = authMethodBasic
	}
	tr, status, err := o.postToken(ctx, step, e.TokenEndpoint, form, c, false)
	if err != nil {
		return "", err
	}
	switch {
	case tr.IssuedTokenType != tokenTypeIDJAG:
		return "", &AuthError{Step: step, URL: e.TokenEndpoint, Status: status, Field: "issued_token_type",
			Reason: fmt.Sprintf("%q is not %s", clip(tr.IssuedTokenType), tokenTypeIDJAG)}
	case tr.AccessToken == "" || len(tr.AccessToken) > maxAssertionBytes:
		return "", &AuthError{Step: step, URL: e.TokenEndpoint, Status: status, Field: "access_token", Reason: "missing or too long"}
	}
	return tr.AccessToken, nil
}
