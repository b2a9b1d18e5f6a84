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
