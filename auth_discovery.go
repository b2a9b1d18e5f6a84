package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// errNoMetadata is wrapped by the *AuthError of a discovery that found no
// document at any of the places it looked.
var errNoMetadata = errors.New("not found at any well-known location")

// protectedResourceURLs lists where to look for the protected resource
// metadata of the server at resource, in the order of the MCP
// authorization spec: the URL the challenge named, else the well-known
// URI with the server's path inserted, then the one at the root.
func protectedResourceURLs(resource, fromChallenge string) []string {
	if fromChallenge != "" {
		return []string{fromChallenge}
	}
	u, err := url.Parse(resource)
	if err != nil {
		return nil
	}
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		return []string{root + p, root}
	}
	return []string{root}
}

// authServerMetadataURLs lists where to look for the metadata of the
// authorization server issuer, in the spec's order: RFC 8414 and OpenID
// Connect discovery with the issuer's path inserted after the well-known
// prefix, then OpenID Connect with it appended.
func authServerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// getJSON GETs a metadata document into v. It reports found false, with
// no error, for a status that says the document is not there (4xx), so
// that the caller tries the next place.
func (o *oauthTransport) getJSON(ctx context.Context, step, target string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return false, &AuthError{Step: step, URL: target, Reason: "bad URL", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return false, &AuthError{Step: step, URL: target, Reason: "request failed", Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 4 {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, &AuthError{Step: step, URL: target, Status: resp.StatusCode, Reason: "unexpected status"}
	}
	data, err := o.readBody(resp)
	if err != nil {
		return false, &AuthError{Step: step, URL: target, Status: resp.StatusCode, Reason: "reading the document", Err: err}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, &AuthError{Step: step, URL: target, Status: resp.StatusCode, Reason: "the document is not valid JSON", Err: err}
	}
	return true, nil
}

// firstDocument GETs the first of urls that is there into v and returns
// its URL; what names the document for the error when none is.
func (o *oauthTransport) firstDocument(ctx context.Context, step, what string, urls []string, v any) (string, error) {
	for _, u := range urls {
		found, err := o.getJSON(ctx, step, u, v)
		if err != nil {
			return "", err
		}
		if found {
			return u, nil
		}
	}
	return "", &AuthError{Step: step, URL: strings.Join(urls, ", "), Reason: "no " + what, Err: errNoMetadata}
}

// discoverResource fetches the protected resource metadata of the server
// and checks that it describes this server. A URL the challenge names must
// be https, or on a loopback host, like every endpoint discovered.
func (o *oauthTransport) discoverResource(ctx context.Context, fromChallenge string) (*ProtectedResourceMetadata, error) {
	const step = "protected resource metadata"
	if fromChallenge != "" && !secureEndpoint(fromChallenge) {
		return nil, &AuthError{Step: step, URL: fromChallenge, Field: "resource_metadata",
			Reason: "the challenge names a URL that is neither https nor on a loopback host"}
	}
	var m ProtectedResourceMetadata
	u, err := o.firstDocument(ctx, step, "protected resource metadata", protectedResourceURLs(o.resource, fromChallenge), &m)
	switch {
	case err != nil:
		return nil, err
	case m.Resource == "":
		return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: "resource", Reason: "missing"}
	case !resourceCovers(m.Resource, o.resource):
		return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: "resource",
			Reason: "the metadata is for " + m.Resource + ", not for the server at " + o.resource}
	case len(m.AuthorizationServers) == 0:
		return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: "authorization_servers", Reason: "empty"}
	}
	return &m, nil
}

// resourceCovers reports whether the resource identifier of a metadata
// document names the server at serverURL: the same origin, and a path
// that is the server's or one of its parents (RFC 9728 section 3.3; a
// document at the root names the whole origin).
func resourceCovers(resource, serverURL string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(serverURL)
	if err1 != nil || err2 != nil || r.Fragment != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(s.Path, "/")
	return rp == "" || sp == rp || strings.HasPrefix(sp, rp+"/")
}

// discoverAuthServer fetches the metadata of the authorization server
// issuer, trying each well-known place in turn, and checks that it is the
// issuer's own: its issuer field must be exactly the one asked for, the
// URL its place was made from (RFC 8414 section 3.3). Legacy (2025-03-26
// discovery, where what is asked for is the MCP server's origin, not an
// issuer) it must be on that origin, which answers for no other. So
// everything the client keeps for an issuer is sent only to the endpoints
// of a document that the issuer's own origin served.
func (o *oauthTransport) discoverAuthServer(ctx context.Context, issuer string, legacy bool) (*AuthorizationServerMetadata, error) {
	const step = "authorization server metadata"
	urls := authServerMetadataURLs(issuer)
	if urls == nil {
		return nil, &AuthError{Step: step, URL: issuer, Field: "authorization_servers", Reason: "not an absolute URL"}
	}
	var m AuthorizationServerMetadata
	u, err := o.firstDocument(ctx, step, "authorization server metadata", urls, &m)
	if err != nil {
		return nil, err
	}
	switch {
	case legacy && !onOrigin(m.Issuer, issuer):
		return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: "issuer",
			Reason: "the document names issuer " + m.Issuer + ", which is not on the origin " + issuer + " that served it"}
	case !legacy && m.Issuer != issuer:
		return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: "issuer",
			Reason: "the document names issuer " + m.Issuer + ", but it was asked for " + issuer}
	}
	for field, endpoint := range map[string]string{"issuer": m.Issuer, "authorization_endpoint": m.AuthorizationEndpoint,
		"token_endpoint": m.TokenEndpoint, "registration_endpoint": m.RegistrationEndpoint} {
		if endpoint != "" && !secureEndpoint(endpoint) {
			return nil, &AuthError{Step: step, URL: u, Status: http.StatusOK, Field: field,
				Reason: endpoint + " is neither https nor on a loopback host"}
		}
	}
	return &m, nil
}

// secureEndpoint reports whether an authorization server URL may be used:
// https, or http on a loopback host (a development server), as the MCP
// authorization spec requires.
func secureEndpoint(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return isLoopbackHost(u.Hostname())
	}
	return false
}

// legacyDiscovery is discovery as the 2025-03-26 revision had it, for a
// server that publishes no protected resource metadata: its origin is the
// authorization server, whose metadata is at the origin's well-known URLs
// and names an issuer on that origin, or, without any, whose endpoints are
// /authorize, /token and /register. A document there that names an issuer
// elsewhere is refused: the server at the origin would otherwise be given
// what the client keeps for that issuer.
func (o *oauthTransport) legacyDiscovery(ctx context.Context) (*ProtectedResourceMetadata, *AuthorizationServerMetadata, error) {
	u, err := url.Parse(o.resource)
	if err != nil || u.Host == "" {
		return nil, nil, &AuthError{Step: "protected resource metadata", URL: o.resource, Reason: "the server URL is not absolute"}
	}
	origin := u.Scheme + "://" + u.Host
	prm := &ProtectedResourceMetadata{Resource: o.resource, AuthorizationServers: []string{origin}}
	as, err := o.discoverAuthServer(ctx, origin, true)
	if errors.Is(err, errNoMetadata) {
		as, err = &AuthorizationServerMetadata{
			Issuer: origin, AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token",
			RegistrationEndpoint: origin + "/register", CodeChallengeMethodsSupported: []string{"S256"},
		}, nil
	}
	if err == nil {
		prm.AuthorizationServers = []string{as.Issuer}
	}
	return prm, as, err
}

// onOrigin reports whether the URL raw is on origin (scheme://host:port),
// with no user information, query or fragment.
func onOrigin(raw, origin string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	return strings.EqualFold(u.Scheme+"://"+u.Host, origin)
}
