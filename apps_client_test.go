package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppCSPHeader(t *testing.T) {
	t.Parallel()
	if got, _ := AppCSPHeader(AppCSP{}); got != appDefaultCSP || !strings.Contains(got, "connect-src 'none'") {
		t.Errorf("default: %q", got)
	}
	got, err := AppCSPHeader(AppCSP{
		ConnectDomains:  []string{"https://api.example.com", "wss://rt.example.com:8443"},
		ResourceDomains: []string{"https://*.cdn.example"},
	})
	want := "default-src 'none'; script-src 'self' 'unsafe-inline' https://*.cdn.example; style-src 'self' 'unsafe-inline' https://*.cdn.example; " +
		"img-src 'self' data: https://*.cdn.example; font-src 'self' https://*.cdn.example; media-src 'self' data: https://*.cdn.example; " +
		"connect-src https://api.example.com wss://rt.example.com:8443; frame-src 'none'; object-src 'none'; base-uri 'self'; form-action 'none'"
	if err != nil || got != want {
		t.Errorf("declared:\n got %q, %v\nwant %q", got, err, want)
	}
	if got, _ := AppCSPHeader(AppCSP{FrameDomains: []string{"https://player.example"}}); !strings.Contains(got, "connect-src 'none'") ||
		!strings.Contains(got, "frame-src https://player.example;") || !strings.Contains(got, "base-uri 'self'") {
		t.Errorf("frames only: %q", got)
	}
	for _, bad := range []string{
		"*", "https:", "'unsafe-eval'", "https://a.example 'unsafe-eval'", "https://a.example;script-src *",
		"https://a.example,https://b.example", "https://a.example/path", "javascript://x", "https://a.*.example",
		"https://a.example:port", "https://", "https://a\".example", "data:", "https://a..example",
	} {
		if _, err := AppCSPHeader(AppCSP{ResourceDomains: []string{bad}}); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
	if _, err := AppCSPHeader(AppCSP{ConnectDomains: make([]string, maxCSPOrigins+1)}); err == nil {
		t.Error("too many origins accepted")
	}
}

func TestAppAllowAttribute(t *testing.T) {
	t.Parallel()
	if got := AppAllowAttribute(AppPermissions{}); got != "" {
		t.Errorf("none: %q", got)
	}
	p := AppPermissions{Camera: true, ClipboardWrite: true}
	if got := AppAllowAttribute(p); got != "camera; clipboard-write" {
		t.Errorf("got %q", got)
	}
}

func TestAppViewFromContents(t *testing.T) {
	t.Parallel()
	const uri = "ui://x/v"
	html := "<!DOCTYPE html><p>hi</p>"
	meta := Meta{"ui": map[string]any{
		"csp":         map[string]any{"connectDomains": []any{"https://api.example"}},
		"permissions": map[string]any{"geolocation": map[string]any{}},
		"domain":      "x.example", "prefersBorder": false,
	}}
	v, err := appViewFromContents(uri, []ResourceContents{{URI: uri, MIMEType: AppMIMEType, Blob: base64.StdEncoding.EncodeToString([]byte(html)), Meta: meta}}, 1024)
	if err != nil || string(v.HTML) != html || len(v.Meta.CSP.ConnectDomains) != 1 || v.Meta.CSP.ConnectDomains[0] != "https://api.example" ||
		!v.Meta.Permissions.Geolocation || v.Meta.Domain != "x.example" || v.Meta.PrefersBorder == nil || *v.Meta.PrefersBorder {
		t.Fatalf("blob view: %+v, %v", v, err)
	}
	for _, tc := range []struct {
		contents []ResourceContents
		want     string
	}{
		{nil, "no contents"},
		{[]ResourceContents{{URI: "ui://other", MIMEType: AppMIMEType, Text: html}}, "no contents"},
		{[]ResourceContents{{URI: uri, MIMEType: "text/html", Text: html}}, `MIME type "text/html"`},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType + ";charset=utf-8", Text: html}}, "MIME type"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType, Text: strings.Repeat("x", 1025)}}, "larger than the limit of 1024 bytes"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType, Blob: base64.StdEncoding.EncodeToString(make([]byte, 2000))}}, "larger than the limit"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType, Blob: "!!!"}}, "not base64"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType}}, "no HTML"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType, Text: html, Meta: Meta{"ui": map[string]any{"csp": "all"}}}}, "_meta.ui"},
		{[]ResourceContents{{URI: uri, MIMEType: AppMIMEType, Text: html, Meta: Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []any{"*"}}}}}}, `csp.connectDomains: origin "*"`},
	} {
		if _, err := appViewFromContents(uri, tc.contents, 1024); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.contents, err, tc.want)
		}
	}
}

// TestReadAppView reads a view over a connection, and sees the client
// declare the extension with WithApps.
func TestReadAppView(t *testing.T) {
	t.Parallel()
	srv, _ := newAppHostTestServer(t)
	var declared bool
	srv.AddTool(Tool{Name: "caps", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			declared = req.Gateway().SupportsExtension(AppsExtension)
			return &CallToolResult{}, nil
		})
	c := connectAppHostClient(t, srv)
	v, err := c.ReadAppView(t.Context(), "ui://test/view")
	if err != nil || string(v.HTML) != appTestViewHTML || len(v.Meta.CSP.ResourceDomains) != 0 {
		t.Fatalf("view: %v", err)
	}
	if _, err := c.ReadAppView(t.Context(), "https://x/v"); err == nil || !strings.Contains(err.Error(), "not a ui:// URI") {
		t.Errorf("https URI: %v", err)
	}
	if _, err := c.ReadAppView(t.Context(), "ui://test/none"); err == nil {
		t.Error("a missing view was read")
	}
	if _, err := c.CallTool(t.Context(), "caps", nil); err != nil {
		t.Fatal(err)
	}
	if !declared {
		t.Error("the server does not see the extension declared")
	}
	if got, want := string(c.cfg.extensions[AppsExtension]), `{"mimeTypes":["text/html;profile=mcp-app"]}`; got != want {
		t.Errorf("settings %s, want %s", got, want)
	}
}
