package mcp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPCORS: without WithAllowedOrigins an OPTIONS request gets 405
// (403 from a foreign origin) and no answer carries CORS headers; with it,
// a listed origin's preflight gets 204 with the methods and headers a
// browser client sends (the tool's Mcp-Param- headers it names included,
// before any authorization), and its requests get the origin back and may
// read Mcp-Session-Id; other origins get 403 as before, and every answer
// varies by Origin. "*" answers the preflight of any origin, but one with
// userinfo.
func TestHTTPCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	preflight := map[string]string{
		"Origin":                         app,
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type, mcp-session-id, mcp-protocol-version, Mcp-Param-Region",
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

	off := serveHTTP(t, newTestServer())
	ownPreflight := map[string]string{"Origin": off.URL, "Access-Control-Request-Method": "POST"}
	r := doHTTP(t, "OPTIONS", off.URL, "", ownPreflight)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("OPTIONS without WithAllowedOrigins: %d %v", r.status, r.header)
	}
	r = doHTTP(t, "OPTIONS", off.URL, "", preflight)
	if r.status != http.StatusForbidden || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight of another origin without WithAllowedOrigins: %d %v", r.status, r.header)
	}
	r = doHTTP(t, "POST", off.URL, init, postHeaders("Origin", off.URL))
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "" {
		t.Fatalf("a same-origin POST without WithAllowedOrigins: %d %v", r.status, r.header)
	}

	on := serveHTTP(t, newTestServer(), WithAllowedOrigins(app), WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer good" {
			return "", errors.New("invalid token")
		}
		return "good", nil
	})))
	r = doHTTP(t, "OPTIONS", on.URL, "", preflight)
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != app || r.header.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("a preflight: %d %v", r.status, r.header)
	}
	if m := r.header.Get("Access-Control-Allow-Methods"); m != "GET, POST, DELETE" {
		t.Fatalf("Access-Control-Allow-Methods: %q", m)
	}
	allowed := strings.ToLower(r.header.Get("Access-Control-Allow-Headers"))
	for _, name := range []string{"content-type", "authorization", "mcp-session-id", "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name", "mcp-param-region"} {
		if !strings.Contains(allowed, name) {
			t.Fatalf("Access-Control-Allow-Headers %q lacks %s", allowed, name)
		}
	}
	if v := r.header.Values("Vary"); !strings.Contains(strings.Join(v, ","), "Origin") {
		t.Fatalf("a preflight's Vary: %q", v)
	}

	r = doHTTP(t, "POST", on.URL, init, postHeaders("Origin", app, "Authorization", "Bearer good"))
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || r.header.Get("Vary") != "Origin" {
		t.Fatalf("a POST of a CORS origin: %d %v", r.status, r.header)
	}
	r = doHTTP(t, "POST", on.URL, init, postHeaders("Origin", app))
	if r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("a POST of a CORS origin without a token: %d %v (a browser must read the 401)", r.status, r.header)
	}
	r = doHTTP(t, "POST", on.URL, init, postHeaders("Authorization", "Bearer good"))
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "Origin" {
		t.Fatalf("a POST without an Origin: %d %v", r.status, r.header)
	}
	other := map[string]string{"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"}
	if r = doHTTP(t, "OPTIONS", on.URL, "", other); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight of another origin: %d %v", r.status, r.header)
	}
	notPreflight := map[string]string{"Origin": app, "Authorization": "Bearer good"}
	if r = doHTTP(t, "OPTIONS", on.URL, "", notPreflight); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("an OPTIONS that is no preflight: %d %v", r.status, r.header)
	}

	open := serveHTTP(t, newTestServer(), WithAllowedOrigins("*"))
	anywhere := map[string]string{"Origin": "https://anything.example", "Access-Control-Request-Method": "POST"}
	if r = doHTTP(t, "OPTIONS", open.URL, "", anywhere); r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "https://anything.example" {
		t.Fatalf("a preflight of any origin with \"*\": %d %v", r.status, r.header)
	}
	anywhere["Origin"] = "https://evil.example@app.example.com"
	if r = doHTTP(t, "OPTIONS", open.URL, "", anywhere); r.status != http.StatusForbidden || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight of an origin with userinfo with \"*\": %d %v", r.status, r.header)
	}

	// Names that are not HTTP tokens are not echoed.
	req := httptest.NewRequest("OPTIONS", "/mcp", nil)
	req.Header.Set("Origin", app)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "Mcp-Param-a b, Mcp-Param-c;d, Mcp-Param-, Mcp-Param-ok")
	rec := httptest.NewRecorder()
	NewHTTPHandler(newTestServer(), WithAllowedOrigins(app)).ServeHTTP(rec, req)
	if got := rec.Header().Get("Access-Control-Allow-Headers"); rec.Code != 204 || strings.Contains(got, "Mcp-Param-a") || strings.Contains(got, "Mcp-Param-c") || !strings.HasSuffix(got, ", "+headerName+", Mcp-Param-ok") {
		t.Fatalf("%d, Access-Control-Allow-Headers %q", rec.Code, got)
	}
}
