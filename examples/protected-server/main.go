// Command protected-server is an MCP server that requires OAuth 2.1 bearer
// tokens: it publishes its protected resource metadata (RFC 9728), checks
// every request's JWT access token against its authorization server's
// keys, and serves one tool, whoami, which answers with the caller's
// principal and scopes.
//
//	go run ./examples/protected-server -dev-issuer
//
// With -dev-issuer it also runs, under /oauth/ on the same listener, a toy
// authorization server for trying it locally (see dev_issuer.go: for
// development only). Otherwise -issuer names a real one, whose RFC 8414
// metadata gives the keys.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"

	"github.com/e6ac58cb/mcp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "listen `address`")
	issuer := flag.String("issuer", "", "the authorization server's issuer `URL`")
	dev := flag.Bool("dev-issuer", false, "run a toy authorization server under /oauth/ (development only)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	h, err := newHandler(base, *issuer, *dev)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving MCP at %s/mcp", base)
	log.Fatal(newHTTPServer(h).Serve(ln))
}

// newHTTPServer serves h with timeouts that cut off clients sending too
// slowly (slowloris) without cutting MCP's SSE streams.
func newHTTPServer(h http.Handler) *http.Server {
	return mcp.NewHTTPServer("", h)
}

// newHandler serves the MCP endpoint at base/mcp, its metadata, and, if
// dev, the toy authorization server, which is then the issuer.
func newHandler(base, issuer string, dev bool) (http.Handler, error) {
	resource := base + "/mcp"
	mux := http.NewServeMux()
	if dev {
		issuer = base + "/oauth"
		if err := newDevIssuer(issuer, resource).register(mux); err != nil {
			return nil, err
		}
	}
	if issuer == "" {
		return nil, fmt.Errorf("name the authorization server with -issuer, or run -dev-issuer")
	}
	verifier, err := mcp.NewJWTVerifier(mcp.JWTVerifierConfig{Issuer: issuer, Audience: resource})
	if err != nil {
		return nil, err
	}

	srv := mcp.NewServer(mcp.Implementation{Name: "protected-server", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "whoami", Description: "Says who the caller's token names, and its scopes."},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var scopes []string
			if tok := req.Token(); tok != nil {
				scopes = tok.Scopes
			}
			text := req.Principal() + " (scopes: " + strings.Join(scopes, " ") + ")"
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}, nil
		})

	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, mcp.WithAuthorizer(mcp.BearerAuth{
		Verifier:            verifier,
		ResourceMetadataURL: mcp.ProtectedResourceMetadataURL(resource),
		Scopes:              []string{"mcp"},
	})))
	prm := mcp.ProtectedResourceMetadataURL(resource)
	mux.Handle(strings.TrimPrefix(prm, base), mcp.ProtectedResourceMetadataHandler(mcp.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{issuer},
		ScopesSupported:        []string{"mcp"},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "protected-server example",
	}))
	return mux, nil
}
