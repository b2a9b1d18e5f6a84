package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// toyIssuer is an authorization server that approves every sign-in at
// once and issues one token.
func toyIssuer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(mcp.AuthorizationServerMetadata{
			Issuer: srv.URL, AuthorizationEndpoint: srv.URL + "/authorize", TokenEndpoint: srv.URL + "/token",
			RegistrationEndpoint: srv.URL + "/register", CodeChallengeMethodsSupported: []string{"S256"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"client_id": "toy", "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
		back.RawQuery = url.Values{"code": {"c"}, "state": {r.URL.Query().Get("state")}, "iss": {srv.URL}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer" && r.FormValue("assertion") != "workload-jwt" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "alice-token", "token_type": "Bearer", "expires_in": 3600})
	})
	return srv
}

// protectedServer serves an MCP server with a whoami tool to requests
// that carry the toy issuer's token.
func protectedServer(t *testing.T, issuer string) string {
	s := mcp.NewServer(mcp.Implementation{Name: "protected", Version: "1"})
	s.AddTool(mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("alice")}}, nil
	})
	inner := mcp.NewHTTPHandler(s)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(mcp.ProtectedResourceMetadata{Resource: srv.URL + "/mcp", AuthorizationServers: []string{issuer}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer alice-token" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
	return srv.URL + "/mcp"
}

// TestSignIn runs the program's flow against a toy issuer, with the plain
// GET in place of the browser; a second run with the same token file needs
// no sign-in.
func TestSignIn(t *testing.T) {
	server := protectedServer(t, toyIssuer(t).URL)
	store := &fileStore{path: filepath.Join(t.TempDir(), "tokens.json")}
	var out strings.Builder
	if err := run(t.Context(), server, getFollowingRedirects, store, profile{}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Sign in at: ") || !strings.Contains(out.String(), "whoami: alice") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	noBrowser := func(string) error { return errors.New("asked to sign in again") }
	if err := run(t.Context(), server, noBrowser, &fileStore{path: store.path}, profile{}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "whoami: alice") {
		t.Fatalf("second run's output:\n%s", out.String())
	}
}

// TestWorkloadProfile: with -workload-token-file the client obtains its
// token with the JWT bearer grant, the file's token as the assertion, and
// never opens a browser.
func TestWorkloadProfile(t *testing.T) {
	server := protectedServer(t, toyIssuer(t).URL)
	file := filepath.Join(t.TempDir(), "workload.jwt")
	if err := os.WriteFile(file, []byte("workload-jwt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	noBrowser := func(string) error { return errors.New("asked to sign in") }
	if err := run(t.Context(), server, noBrowser, mcp.NewMemoryTokenStore(), profile{workloadTokenFile: file}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "whoami: alice") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestProfileFlagsConflict(t *testing.T) {
	var cfg mcp.OAuthConfig
	if err := (profile{idpTokenEndpoint: "https://idp/token", workloadTokenFile: "f"}).apply(&cfg); err == nil {
		t.Error("two profiles at once")
	}
	if err := (profile{idpTokenEndpoint: "https://idp/token"}).apply(&cfg); err == nil {
		t.Error("enterprise without an ID token")
	}
	if err := (profile{idpTokenEndpoint: "https://idp/token", idTokenFile: "f", dpop: true}).apply(&cfg); err != nil || cfg.Enterprise == nil || !cfg.DPoP {
		t.Errorf("enterprise with DPoP: %v %+v", err, cfg)
	}
}
