package mcp

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
)

// WithApps declares that the client hosts MCP Apps views: it puts
// capabilities.extensions["io.modelcontextprotocol/ui"] =
// {"mimeTypes":["text/html;profile=mcp-app"]} in what the client declares,
// which a server may check before it offers tools with views.
// It configures a client (NewClient).
func WithApps() ClientOption {
	return WithExtension(AppsExtension, AppsSettings{MIMETypes: []string{AppMIMEType}})
}

// WithMaxAppViewSize bounds the size of a view's HTML (after base64
// decoding) that [Client.ReadAppView] accepts (default MaxAppViewBytes,
// the most a server registers).
// It configures a client (NewClient).
func WithMaxAppViewSize(n int) ClientOption {
	return clientOption(func(c *config) {
		if n > 0 {
			c.client.maxAppView = n
		}
	})
}

// toolVisibleTo reports whether the tool's visibility includes who.
func toolVisibleTo(t *Tool, who AppVisibility) bool {
	m, _ := ToolAppMeta(t)
	return m.Visibility.Includes(who)
}

// AppViewContent is a view read with [Client.ReadAppView]: its HTML and the
// _meta.ui its server sent with it (the CSP, permissions, domain and border
// the host builds the view's sandbox from). Client side.
type AppViewContent struct {
	URI  string
	HTML []byte
	Meta AppViewMeta
}

// ReadAppView reads the view at uri with resources/read and checks it as
// the MCP Apps extension requires: a ui:// URI, contents of MIME type
// exactly "text/html;profile=mcp-app", HTML in text or a base64 blob, no
// larger than WithMaxAppViewSize, and a well-formed _meta.ui whose CSP
// origins AppCSPHeader accepts. Client side.
func (c *Client) ReadAppView(ctx context.Context, uri string, opts ...CallOption) (*AppViewContent, error) {
	if !strings.HasPrefix(uri, "ui://") {
		return nil, fmt.Errorf("mcp: app view %q: not a ui:// URI", uri)
	}
	res, err := c.ReadResource(ctx, uri, opts...)
	if err != nil {
		return nil, fmt.Errorf("mcp: app view %s: %w", uri, err)
	}
	limit := c.cfg.client.maxAppView
	if limit <= 0 {
		limit = MaxAppViewBytes
	}
	return appViewFromContents(uri, res.Contents, limit)
}

// appViewFromContents checks the contents of a view's resources/read.
func appViewFromContents(uri string, contents []ResourceContents, limit int) (*AppViewContent, error) {
	fail := func(format string, args ...any) (*AppViewContent, error) {
		return nil, fmt.Errorf("mcp: app view %s: "+format, append([]any{uri}, args...)...)
	}
	var rc *ResourceContents
	for i := range contents {
		if contents[i].URI == uri {
			rc = &contents[i]
			break
		}
	}
	if rc == nil {
		return fail("the server sent no contents for it")
	}
	if rc.MIMEType != AppMIMEType {
		return fail("MIME type %q, want %q", rc.MIMEType, AppMIMEType)
	}
	var html []byte
	switch {
	case rc.Blob != "":
		if base64.StdEncoding.DecodedLen(len(rc.Blob)) > limit+3 {
			return fail("larger than the limit of %d bytes", limit)
		}
		b, err := base64.StdEncoding.DecodeString(rc.Blob)
		if err != nil {
			return fail("blob is not base64: %v", err)
		}
		html = b
	default:
		if len(rc.Text) > limit {
			return fail("larger than the limit of %d bytes", limit)
		}
		html = []byte(rc.Text)
	}
	if len(html) > limit {
		return fail("larger than the limit of %d bytes", limit)
	}
	if len(html) == 0 {
		return fail("no HTML")
	}
	m, ok := ResourceAppMeta(rc)
	if !ok && rc.Meta["ui"] != nil {
		return fail("_meta.ui is not the metadata of a view")
	}
	if _, err := AppCSPHeader(m.CSP); err != nil {
		return fail("%v", err)
	}
	return &AppViewContent{URI: uri, HTML: html, Meta: m}, nil
}

// appDefaultCSP is the policy of a view that declares no CSP: the
// extension's restrictive default, with the directives it leaves to
// default-src spelled out.
const appDefaultCSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'; form-action 'none'"

// maxCSPOrigins bounds each list of a view's CSP.
const maxCSPOrigins = 64

// AppCSPHeader returns the Content-Security-Policy a host serves a view
// with, built from the view's declared CSP as the MCP Apps extension says:
// the restrictive default when csp declares nothing, and otherwise only the declared
// origins beside the view's own inline code ('self', 'unsafe-inline'),
// nothing for an empty list ('none'; 'self' for base-uri). It never
// loosens: each entry must be an origin (http, https, ws or wss; a host
// with an optional "*." subdomain wildcard and port), and one with quotes,
// semicolons, commas, whitespace or a path is an error. Client side.
func AppCSPHeader(csp AppCSP) (string, error) {
	if len(csp.ConnectDomains)+len(csp.ResourceDomains)+len(csp.FrameDomains)+len(csp.BaseURIDomains) == 0 {
		return appDefaultCSP, nil
	}
	lists := []struct {
		name    string
		origins []string
	}{
		{"connectDomains", csp.ConnectDomains}, {"resourceDomains", csp.ResourceDomains},
		{"frameDomains", csp.FrameDomains}, {"baseUriDomains", csp.BaseURIDomains},
	}
	for _, l := range lists {
		if len(l.origins) > maxCSPOrigins {
			return "", fmt.Errorf("csp.%s: %d origins, more than %d", l.name, len(l.origins), maxCSPOrigins)
		}
		for _, o := range l.origins {
			if err := checkCSPOrigin(o); err != nil {
				return "", fmt.Errorf("csp.%s: %w", l.name, err)
			}
		}
	}
	join := func(base string, origins []string, empty string) string {
		parts := []string{}
		if base != "" {
			parts = append(parts, base)
		}
		parts = append(parts, origins...)
		if len(parts) == 0 {
			return empty
		}
		return strings.Join(parts, " ")
	}
	r := csp.ResourceDomains
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + join("'self' 'unsafe-inline'", r, ""),
		"style-src " + join("'self' 'unsafe-inline'", r, ""),
		"img-src " + join("'self' data:", r, ""),
		"font-src " + join("'self'", r, ""),
		"media-src " + join("'self' data:", r, ""),
		"connect-src " + join("", csp.ConnectDomains, "'none'"),
		"frame-src " + join("", csp.FrameDomains, "'none'"),
		"object-src 'none'",
		"base-uri " + join("", csp.BaseURIDomains, "'self'"),
		"form-action 'none'",
	}, "; "), nil
}

// checkCSPOrigin accepts an origin a view may declare: scheme://host[:port],
// the host optionally "*."-prefixed, the port optionally "*".
func checkCSPOrigin(o string) error {
	bad := func(why string) error { return fmt.Errorf("origin %q: %s", o, why) }
	if len(o) > 253+32 {
		return bad("too long")
	}
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok {
		return bad("not scheme://host")
	}
	switch scheme {
	case "http", "https", "ws", "wss":
	default:
		return bad("scheme must be http, https, ws or wss")
	}
	rest = strings.TrimSuffix(rest, "/")
	host, port, hasPort := strings.Cut(rest, ":")
	if hasPort && port != "*" {
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return bad("bad port")
		}
	}
	host = strings.TrimPrefix(host, "*.")
	if host == "" {
		return bad("no host")
	}
	for _, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return bad("only letters, digits, '-' and '.' may name the host (no quotes, ';', ',', spaces, paths or wildcards inside)")
		}
	}
	if strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return bad("bad host")
	}
	return nil
}

// AppAllowAttribute returns the iframe allow attribute that grants a view
// the permissions it asks for ("camera; microphone; geolocation;
// clipboard-write" at most), "" for none. A host may grant fewer. Client
// side.
func AppAllowAttribute(p AppPermissions) string {
	var allow []string
	for _, f := range []struct {
		on   bool
		name string
	}{
		{p.Camera, "camera"}, {p.Microphone, "microphone"},
		{p.Geolocation, "geolocation"}, {p.ClipboardWrite, "clipboard-write"},
	} {
		if f.on {
			allow = append(allow, f.name)
		}
	}
	return strings.Join(allow, "; ")
}
