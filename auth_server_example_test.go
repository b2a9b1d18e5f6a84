package mcp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/e6ac58cb/mcp"
)

// A protected server publishes its resource metadata and requires a
// bearer token on every request; a request without one gets a challenge
// that points the client at the metadata, and a tool can need a scope of
// its own.
func ExampleWithAuthorizer() {
	srv := mcp.NewServer(mcp.Implementation{Name: "protected", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(req.Principal())}}, nil
	})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	resource := ts.URL + "/mcp"
	metadata := mcp.ProtectedResourceMetadataURL(resource)

	// The authorization server's token introspection endpoint (RFC 7662),
	// on the same test server for brevity. It knows two tokens.
	tokens := map[string]string{
		"alice-token": `{"active":true,"sub":"alice","scope":"mcp","aud":"` + resource + `"}`,
		"bob-token":   `{"active":true,"sub":"bob","scope":"mcp admin","aud":"` + resource + `"}`,
	}
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		answer, ok := tokens[r.FormValue("token")]
		if !ok {
			answer = `{"active":false}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	verifier, err := mcp.NewIntrospectionVerifier(mcp.IntrospectionConfig{Endpoint: ts.URL + "/introspect", Audience: resource})
	if err != nil {
		log.Fatal(err)
	}

	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, mcp.WithAuthorizer(mcp.BearerAuth{
		Verifier:            verifier,
		ResourceMetadataURL: metadata,
		Scopes:              []string{"mcp"},
		ToolScopes:          map[string][]string{"whoami": {"admin"}},
	})))
	mux.Handle(strings.TrimPrefix(metadata, ts.URL), mcp.ProtectedResourceMetadataHandler(mcp.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"mcp", "admin"},
	}))

	call := func(token string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "whoami")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		challenge := strings.ReplaceAll(resp.Header.Get("WWW-Authenticate"), ts.URL, "http://127.0.0.1")
		fmt.Println(resp.StatusCode, challenge)
	}
	call("")            // no token
	call("alice-token") // lacks the tool's scope
	call("bob-token")   // may call it
	// Output:
	// 401 Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", scope="mcp"
	// 403 Bearer error="insufficient_scope", error_description="the token lacks scope 'admin' for tool 'whoami'", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", scope="mcp admin"
	// 200
}
