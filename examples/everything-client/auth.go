package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/e6ac58cb/mcp"
)

// The suite's auth scenarios (auth/*): every one runs the same flow (list
// the tools, call the first) over a transport that is an OAuth client; the
// scenario decides only how the client is known to the authorization
// server.

// cimdURL is the client ID metadata document URL auth/basic-cimd expects.
const cimdURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is where the suite's authorization server sends the
// "browser" back. Nothing listens there: the browser step below reads the
// redirect's Location instead of following it, as the suite's own clients
// do.
const redirectURL = "http://localhost:3000/callback"

// authContext is MCP_CONFORMANCE_CONTEXT as the auth scenarios fill it.
type authContext struct {
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	PrivateKeyPEM string `json:"private_key_pem"`
	Algorithm     string `json:"signing_algorithm"`

	// auth/enterprise-managed-authorization (suite 0.1.16:
	// auth/cross-app-access-complete-flow): the enterprise identity
	// provider and the user's ID token from it.
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`

	// auth/wif-jwt-bearer: the workload's identity token (the context
	// also has wrong_audience_jwt and expired_jwt, which it never uses).
	ValidJWT string `json:"valid_jwt"`
}

// isAuthScenario reports whether the scenario is one of the OAuth ones.
func isAuthScenario(name string) bool { return strings.HasPrefix(name, "auth/") }

// authFlow lists the tools and calls the first (the auth scenarios' servers
// have one, test-tool).
func authFlow(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	all, err := tools(ctx, c)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return nil
	}
	return call(ctx, c, all[0].Name, nil)
}

// oauthOption is the transport option of an auth scenario.
func oauthOption(name string) (mcp.HTTPTransportOption, error) {
	var ac authContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &ac); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	cfg := mcp.OAuthConfig{
		ClientName:          "mcp-go-everything-client",
		ClientIDMetadataURL: cimdURL,
		RedirectURL:         redirectURL,
		Handler:             followWithoutBrowser{},
		ClientID:            ac.ClientID,
		ClientSecret:        ac.ClientSecret,
	}
	switch name {
	case "auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow":
		idToken := ac.IdPIDToken
		cfg.Enterprise = &mcp.EnterpriseAuthorization{
			TokenEndpoint: ac.IdPTokenEndpoint,
			ClientID:      ac.IdPClientID,
			Identity:      mcp.AssertionFunc(func(context.Context) (string, error) { return idToken, nil }),
		}
	case "auth/wif-jwt-bearer":
		jwt := ac.ValidJWT
		cfg.Assertion = mcp.AssertionFunc(func(context.Context) (string, error) { return jwt, nil })
	case "auth/dpop", "auth/dpop-nonce":
		cfg.DPoP = true
	}
	if strings.HasPrefix(name, "auth/client-credentials-") {
		cfg.Grant = mcp.GrantClientCredentials
		if ac.PrivateKeyPEM != "" {
			key, err := parsePrivateKey(ac.PrivateKeyPEM)
			if err != nil {
				return nil, err
			}
			cfg.PrivateKey = key
		}
	}
	return mcp.WithOAuth(cfg), nil
}

// parsePrivateKey reads a PKCS #8 private key in PEM.
func parsePrivateKey(text string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, errors.New("private_key_pem: no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private_key_pem: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private_key_pem: a %T cannot sign", key)
	}
	return signer, nil
}

// followWithoutBrowser is the "browser": it GETs the authorization URL
// and returns where the authorization server redirects, without going
// there.
type followWithoutBrowser struct{}

func (followWithoutBrowser) Authorize(ctx context.Context, authURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return "", fmt.Errorf("the authorization endpoint answered %s without a redirect", resp.Status)
	}
	log.Printf("authorization redirect: %s", loc)
	return loc, nil
}
