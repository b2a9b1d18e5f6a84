package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// clientFor returns how the authorization server knows the client, in the
// spec's order of preference: the pre-registered client of the
// configuration (only at its issuer, when it is pinned to one), the client ID metadata document URL when the server
// accepts those, the registration kept for this issuer, or a new dynamic
// registration (RFC 7591), kept for this issuer only. A registration is
// not redone for a new loopback port: RFC 8252 has the server accept any.
func (o *oauthTransport) clientFor(ctx context.Context, as *AuthorizationServerMetadata) (tokenClient, error) {
	cfg := &o.cfg
	supported := as.TokenEndpointAuthMethodsSupported
	hasKey := cfg.PrivateKey != nil
	if cfg.ClientID != "" {
		if cfg.ClientIssuer != "" && cfg.ClientIssuer != as.Issuer {
			return tokenClient{}, &AuthError{Step: "registration", URL: as.Issuer, Field: "client_id",
				Reason: "the client is pinned to issuer " + cfg.ClientIssuer + " (OAuthConfig.ClientIssuer), and the resource names another"}
		}
		m := chooseAuthMethod(cfg.TokenEndpointAuthMethod, "", cfg.ClientSecret != "", hasKey, supported)
		return tokenClient{id: cfg.ClientID, secret: cfg.ClientSecret, method: m, audience: as.Issuer}, nil
	}
	if cfg.ClientIDMetadataURL != "" && as.ClientIDMetadataDocumentSupported {
		if u, err := url.Parse(cfg.ClientIDMetadataURL); err != nil || u.Scheme != "https" || strings.Trim(u.Path, "/") == "" {
			return tokenClient{}, &AuthError{Step: "registration", URL: cfg.ClientIDMetadataURL, Field: "client_id",
				Reason: "a client ID metadata document URL must be https with a path (OAuthConfig.ClientIDMetadataURL)"}
		}
		return tokenClient{id: cfg.ClientIDMetadataURL, method: authMethodNone}, nil
	}
	reg, err := o.store.LoadClient(ctx, as.Issuer)
	if err != nil && !errors.Is(err, ErrNoToken) {
		return tokenClient{}, &AuthError{Step: "registration", URL: as.Issuer, Reason: "loading the registration from the TokenStore", Err: err}
	}
	if reg == nil {
		if reg, err = o.register(ctx, as); err != nil {
			return tokenClient{}, err
		}
		if err := o.store.StoreClient(ctx, as.Issuer, reg); err != nil {
			return tokenClient{}, &AuthError{Step: "registration", URL: as.Issuer, Reason: "keeping the registration in the TokenStore", Err: err}
		}
	}
	m := chooseAuthMethod(cfg.TokenEndpointAuthMethod, reg.TokenEndpointAuthMethod, reg.ClientSecret != "", false, supported)
	return tokenClient{id: reg.ClientID, secret: reg.ClientSecret, method: m, audience: as.Issuer}, nil
}

// register registers the client at the server's registration endpoint.
func (o *oauthTransport) register(ctx context.Context, as *AuthorizationServerMetadata) (*ClientRegistration, error) {
	const step = "registration"
	if as.RegistrationEndpoint == "" {
		return nil, &AuthError{Step: step, URL: as.Issuer, Field: "registration_endpoint",
			Reason: "the authorization server supports no dynamic registration; configure OAuthConfig.ClientID"}
	}
	redirect := o.redirectURL()
	method := authMethodNone
	if len(as.TokenEndpointAuthMethodsSupported) > 0 && !slices.Contains(as.TokenEndpointAuthMethodsSupported, authMethodNone) {
		method = chooseAuthMethod("", "", true, false, as.TokenEndpointAuthMethodsSupported)
	}
	name := o.cfg.ClientName
	if name == "" {
		name = "MCP client"
	}
	meta := map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           applicationType(redirect),
	}
	if o.dpop != nil {
		meta["dpop_bound_access_tokens"] = true // RFC 9449 section 5.2
	}
	body, _ := json.Marshal(meta)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return nil, &AuthError{Step: step, URL: as.RegistrationEndpoint, Reason: "bad registration endpoint", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.post.Do(req)
	if err != nil {
		return nil, &AuthError{Step: step, URL: as.RegistrationEndpoint, Reason: "request failed", Err: err}
	}
	defer resp.Body.Close()
	data, err := o.readBody(resp)
	if err != nil {
		return nil, &AuthError{Step: step, URL: as.RegistrationEndpoint, Status: resp.StatusCode, Reason: "reading the response", Err: err}
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		e := &AuthError{Step: step, URL: as.RegistrationEndpoint, Status: resp.StatusCode, Reason: "the server refused the registration"}
		var re struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(data, &re) == nil && re.Error != "" {
			e.Field, e.Reason = "error", strings.TrimSuffix(re.Error+": "+re.Description, ": ")
		}
		return nil, e
	}
	var reg ClientRegistration
	if err := json.Unmarshal(data, &reg); err != nil {
		return nil, &AuthError{Step: step, URL: as.RegistrationEndpoint, Status: resp.StatusCode, Reason: "the response is not JSON", Err: err}
	}
	if reg.ClientID == "" {
		return nil, &AuthError{Step: step, URL: as.RegistrationEndpoint, Status: resp.StatusCode, Field: "client_id", Reason: "missing"}
	}
	return &reg, nil
}

// applicationType is the OpenID Connect application_type for a redirect
// URI: native for a loopback or private-scheme redirect, else web.
func applicationType(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return "native"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "native"
	}
	if isLoopbackHost(u.Hostname()) {
		return "native"
	}
	return "web"
}

// drain reads what is left of a body, up to a bound, so that its
// connection can be reused, and closes it.
func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	body.Close()
}
