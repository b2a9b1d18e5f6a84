package mcp

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestProtectedResourceMetadataURL inserts the well-known path between the
// host and the resource's path (RFC 9728 §3.1).
func TestProtectedResourceMetadataURL(t *testing.T) {
	t.Parallel()
	for resource, want := range map[string]string{
		"https://h/mcp":              "https://h/.well-known/oauth-protected-resource/mcp",
		"https://h":                  "https://h/.well-known/oauth-protected-resource",
		"https://h/":                 "https://h/.well-known/oauth-protected-resource",
		"https://h:8443/a/b/mcp":     "https://h:8443/.well-known/oauth-protected-resource/a/b/mcp",
		"http://127.0.0.1:9/mcp?x=1": "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
	} {
		if got := ProtectedResourceMetadataURL(resource); got != want {
			t.Errorf("%s: %s, want %s", resource, got, want)
		}
	}
}

// TestProtectedResourceMetadataHandler serves a document that has what RFC
// 9728 requires (parsed back from the wire), to any origin, on GET and
// HEAD only.
func TestProtectedResourceMetadataHandler(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(ProtectedResourceMetadataHandler(ProtectedResourceMetadata{
		Resource:               "https://mcp.example.com/mcp",
		AuthorizationServers:   []string{"https://as.example.com"},
		ScopesSupported:        []string{"mcp:read", "mcp:write"},
		BearerMethodsSupported: []string{"header"},
	}))
	defer ts.Close()
	r := doHTTP(t, "GET", ts.URL, "", map[string]string{"Origin": "https://app.example.com"})
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Cache-Control") == "" {
		t.Fatalf("GET: %d %v", r.status, r.header)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatal(err)
	}
	// RFC 9728 §2: resource is required, an https URL without a
	// fragment; the lists are JSON arrays of strings.
	res, _ := doc["resource"].(string)
	if u, err := url.Parse(res); err != nil || u.Scheme != "https" || u.Fragment != "" || res != "https://mcp.example.com/mcp" {
		t.Fatalf("resource %v", doc["resource"])
	}
	for _, name := range []string{"authorization_servers", "scopes_supported", "bearer_methods_supported"} {
		list, ok := doc[name].([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("%s: %v", name, doc[name])
		}
		for _, v := range list {
			if _, ok := v.(string); !ok {
				t.Fatalf("%s: %v", name, doc[name])
			}
		}
	}
	if len(doc) != 4 {
		t.Fatalf("members beyond those given: %s", r.body)
	}
	if h := doHTTP(t, "HEAD", ts.URL, "", nil); h.status != 200 || h.body != "" {
		t.Fatalf("HEAD: %d %q", h.status, h.body)
	}
	if p := doHTTP(t, "POST", ts.URL, "{}", nil); p.status != 405 || !strings.Contains(p.header.Get("Allow"), "GET") {
		t.Fatalf("POST: %d %v", p.status, p.header)
	}
}

// TestProtectedResourceMetadataValidation panics at construction on
// metadata no client could use.
func TestProtectedResourceMetadataValidation(t *testing.T) {
	t.Parallel()
	for _, m := range []ProtectedResourceMetadata{
		{},
		{Resource: "/mcp"},
		{Resource: "http://mcp.example.com/mcp"},
		{Resource: "https://mcp.example.com/mcp#frag"},
		{Resource: "ftp://mcp.example.com/mcp"},
		{Resource: "https://mcp.example.com/mcp", BearerMethodsSupported: []string{"header", "query"}},
		{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"as.example.com"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v accepted", m)
				}
			}()
			ProtectedResourceMetadataHandler(m)
		}()
	}
	for _, ok := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/", "https://h"} {
		ProtectedResourceMetadataHandler(ProtectedResourceMetadata{Resource: ok})
	}
}
