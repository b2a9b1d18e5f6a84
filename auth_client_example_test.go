package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/e6ac58cb/mcp"
)

// A command-line program signs its user in through the browser: the
// transport finds the server's authorization server on its first 401,
// registers the program, and hands the sign-in URL to the opener; the
// browser comes back to a listener on 127.0.0.1.
func ExampleWithOAuth() {
	redirect, err := mcp.NewLoopbackRedirect(func(authURL string) error {
		fmt.Println("Sign in at", authURL) // or start the system's browser
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	defer redirect.Close()
	c := mcp.NewClient(mcp.Implementation{Name: "cli", Version: "1.0.0"})
	err = c.Connect(context.Background(), mcp.NewHTTPTransport("https://mcp.example.com/mcp",
		mcp.WithOAuth(mcp.OAuthConfig{Handler: redirect, ClientName: "Example CLI"})))
	var authErr *mcp.AuthError
	if errors.As(err, &authErr) {
		log.Fatalf("sign-in failed at step %s (%s): %s %s", authErr.Step, authErr.URL, authErr.Field, authErr.Reason)
	}
}

// A job that runs unattended authenticates as itself with the client
// credentials grant: a secret, or a private key (private_key_jwt).
func ExampleOAuthConfig_clientCredentials() {
	transport := mcp.NewHTTPTransport("https://mcp.example.com/mcp", mcp.WithOAuth(mcp.OAuthConfig{
		Grant:        mcp.GrantClientCredentials,
		ClientID:     "nightly-report",
		ClientSecret: os.Getenv("REPORT_CLIENT_SECRET"),
		Scopes:       []string{"reports:read"},
	}))
	c := mcp.NewClient(mcp.Implementation{Name: "nightly-report", Version: "1.0.0"})
	if err := c.Connect(context.Background(), transport); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// A workload authenticates with the identity token its platform mounts
// (workload identity federation), read again whenever a new access token
// is needed, and binds its tokens to a key of its own (DPoP), so that a
// token copied out of it is useless elsewhere.
func ExampleOAuthConfig_workloadIdentity() {
	transport := mcp.NewHTTPTransport("https://mcp.example.com/mcp", mcp.WithOAuth(mcp.OAuthConfig{
		Assertion: mcp.AssertionFile("/var/run/secrets/tokens/mcp-token"),
		DPoP:      true,
	}))
	c := mcp.NewClient(mcp.Implementation{Name: "indexer", Version: "1.0.0"})
	if err := c.Connect(context.Background(), transport); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// A desktop application whose users sign in to their company's identity
// provider gets MCP tokens without a browser step: the user's ID token is
// exchanged at the identity provider for an identity assertion grant for
// the MCP server, which its authorization server takes (enterprise-managed
// authorization).
func ExampleEnterpriseAuthorization() {
	var idToken string // from the application's own single sign-on
	transport := mcp.NewHTTPTransport("https://mcp.example.com/mcp", mcp.WithOAuth(mcp.OAuthConfig{
		ClientID:     "desktop-assistant",
		ClientSecret: os.Getenv("ASSISTANT_CLIENT_SECRET"),
		Enterprise: &mcp.EnterpriseAuthorization{
			TokenEndpoint: "https://idp.example.com/oauth2/token",
			ClientID:      "desktop-assistant-at-idp",
			Identity:      mcp.AssertionFunc(func(context.Context) (string, error) { return idToken, nil }),
		},
	}))
	c := mcp.NewClient(mcp.Implementation{Name: "desktop-assistant", Version: "1.0.0"})
	if err := c.Connect(context.Background(), transport); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}
