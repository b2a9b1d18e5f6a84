package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ProtectedResourceMetadataURL returns where the protected resource
// metadata of resource is served: the well-known URI of RFC 9728 §3.1
// inserted between its host and its path, so that
// https://h/mcp gives https://h/.well-known/oauth-protected-resource/mcp.
// Server side.
func ProtectedResourceMetadataURL(resource string) string {
	origin, path := splitOrigin(resource)
	return origin + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(path, "/")
}

// ProtectedResourceMetadataHandler serves m as the protected resource
// metadata document (RFC 9728) on GET and HEAD, readable by any web page
// (browser clients fetch it). Mount it at ProtectedResourceMetadataURL of
// m.Resource. It panics when m is not valid metadata, as a misconfigured
// server would otherwise only fail its clients: Resource must be an
// absolute https URL (or http on a loopback host) without a fragment, and
// BearerMethodsSupported may list only "header". Server side.
func ProtectedResourceMetadataHandler(m ProtectedResourceMetadata) http.Handler {
	if err := m.validate(); err != nil {
		panic("mcp: ProtectedResourceMetadataHandler: " + err.Error())
	}
	doc, err := json.Marshal(m)
	if err != nil {
		panic("mcp: ProtectedResourceMetadataHandler: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, HEAD")
				h.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		w.Write(doc)
	})
}

// validate checks what RFC 9728 and MCP require of the metadata.
func (m *ProtectedResourceMetadata) validate() error {
	if err := checkResourceURL(m.Resource); err != nil {
		return fmt.Errorf("field resource: %w", err)
	}
	for _, as := range m.AuthorizationServers {
		if err := checkResourceURL(as); err != nil {
			return fmt.Errorf("field authorization_servers: %w", err)
		}
	}
	for _, b := range m.BearerMethodsSupported {
		if b != "header" {
			return fmt.Errorf("field bearer_methods_supported: %q: MCP sends tokens only in the Authorization header", b)
		}
	}
	return nil
}

// checkResourceURL accepts an absolute https URL, or http on a loopback
// host, without a fragment.
func checkResourceURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "" || !u.IsAbs():
		return fmt.Errorf("%q is not an absolute URL", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%q has a fragment", s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q is neither https nor http on a loopback host", s)
}
