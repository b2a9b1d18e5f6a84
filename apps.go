package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// MCP Apps (SEP-1865): a server offers interactive views, HTML documents
// under ui:// URIs, and links tools to them; a host renders a linked tool's
// view in a sandboxed iframe and lets it call the server's tools. Nothing
// here is linked into a server that registers no view: the core reaches it
// only through the hook AddAppView installs (Server.appOnlyHidden).

// AppsExtension is the id of the MCP Apps extension under
// capabilities.extensions. Both sides: a host (client) declares it with
// [AppsSettings]; a server that registered a view with [Server.AddAppView]
// declares it, with no settings.
const AppsExtension = "io.modelcontextprotocol/ui"

// AppMIMEType is the MIME type of an MCP Apps view, an HTML5 document. Both
// sides: a server gives it to the view's resource and its contents; a host
// renders only resources of a MIME type it declared in [AppsSettings].
const AppMIMEType = "text/html;profile=mcp-app"

// MaxAppViewBytes bounds the HTML of one view. Server: [Server.AddAppView]
// refuses a bigger view, and reads no more than this of an FS file.
const MaxAppViewBytes = 4 << 20

// maxAppURIBytes bounds a view's URI, and maxAppSourceBytes each origin a
// view's metadata names.
const (
	maxAppURIBytes    = 2048
	maxAppSourceBytes = 2048
)

// AppsSettings are a host's settings of the MCP Apps extension. Client: a
// host declares them with WithExtension(AppsExtension, AppsSettings{...});
// server: [ClientGateway.SupportsApps] reads them.
type AppsSettings struct {
	// MIMETypes are the view content types the host renders; AppMIMEType
	// for HTML views.
	MIMETypes []string `json:"mimeTypes"`
}

// AppView is an MCP Apps view as a server registers it with
// [Server.AddAppView]: a ui:// resource whose content is an HTML document,
// given as HTML or read from FS at Path (an embed.FS, say). Server only.
type AppView struct {
	// URI names the view; it starts with ui://. Tools link to it by this
	// URI (see AppTool).
	URI string
	// Name, Title and Description describe the view in resources/list,
	// for a host that shows or reviews its views. Name is required.
	Name        string
	Title       string
	Description string
	// HTML is the document; or, when FS is set, the document is the file
	// at Path in FS, read once by AddAppView. Exactly one of the two.
	HTML string
	FS   fs.FS
	Path string
	// Meta is the view's _meta.ui, sent in resources/list and with its
	// contents in resources/read: what the host's sandbox must allow.
	Meta AppViewMeta
}

// AppViewMeta is the _meta.ui of a view's resource and its contents. Both
// sides: a server sets it in [AppView]; a host reads it (see
// [ResourceAppMeta]) to build the sandbox the view runs in.
type AppViewMeta struct {
	// CSP lists the origins the view may reach; the host builds the
	// iframe's Content Security Policy from them and allows nothing else.
	CSP AppCSP `json:"csp,omitzero"`
	// Permissions are the browser features the view asks for; a host may
	// grant them through the iframe's allow attribute.
	Permissions AppPermissions `json:"permissions,omitzero"`
	// Domain asks for a dedicated origin for the view's sandbox, in a
	// format each host defines; empty: the host's default origin.
	Domain string `json:"domain,omitempty"`
	// PrefersBorder asks the host to draw (true) or not (false) a border
	// and background around the view; nil lets the host decide.
	PrefersBorder *bool `json:"prefersBorder,omitempty"`
}

// AppCSP lists the origins a view may reach, each a scheme and host such as
// "https://api.example.com" (a host may accept "https://*.example.com").
// Both sides: the server declares them; the host puts them in the view's
// Content Security Policy and blocks every origin not listed.
type AppCSP struct {
	// ConnectDomains may be fetched, or opened as WebSockets (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains may serve scripts, styles, images, fonts and media.
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains may be loaded in nested iframes (frame-src); none by
	// default.
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains may be the document's base URI (base-uri); only the
	// view's own origin by default.
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// AppPermissions are the browser features a view asks for. On the wire each
// feature asked for is an empty object ({"camera":{}}). Both sides: the
// server asks; the host may grant each through the iframe's allow
// attribute, and a view must not count on it.
type AppPermissions struct {
	Camera         bool
	Microphone     bool
	Geolocation    bool
	ClipboardWrite bool
}

// fields returns p's features and their wire names, in order.
func (p *AppPermissions) fields() ([4]*bool, [4]string) {
	return [4]*bool{&p.Camera, &p.Microphone, &p.Geolocation, &p.ClipboardWrite},
		[4]string{"camera", "microphone", "geolocation", "clipboardWrite"}
}

// MarshalJSON writes each feature asked for as an empty object.
func (p AppPermissions) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	fields, names := p.fields()
	for i, on := range fields {
		if *on {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(appendJSONString(b, names[i]), `:{}`...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON takes a feature as asked for when its member is present and
// not null.
func (p *AppPermissions) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*p = AppPermissions{}
	fields, names := p.fields()
	for i, on := range fields {
		v, ok := m[names[i]]
		*on = ok && string(v) != "null"
	}
	return nil
}

// AppVisibility says who may call a tool linked to a view: the model, the
// view (app), or both. The zero value means both, as an absent
// _meta.ui.visibility does. Both sides: a server sets it with [AppTool]; a
// host keeps a tool the model may not call out of the model's tool list,
// and refuses a view's call of a tool the app may not call.
type AppVisibility uint8

const (
	// AppVisibleToModel: the model sees the tool and may call it.
	AppVisibleToModel AppVisibility = 1 << iota
	// AppVisibleToApp: views of the same server may call the tool.
	AppVisibleToApp
)

// appVisibleToAll is the default visibility.
const appVisibleToAll = AppVisibleToModel | AppVisibleToApp

// appVisibilityNames are the wire names of the visibility bits, in order.
func appVisibilityNames() []string { return []string{"model", "app"} }

// Includes reports whether v lets w call the tool; a zero v includes both.
func (v AppVisibility) Includes(w AppVisibility) bool {
	if v == 0 {
		v = appVisibleToAll
	}
	return v&w == w
}

// MarshalJSON writes v as the array of its names, ["model","app"].
func (v AppVisibility) MarshalJSON() ([]byte, error) {
	if v == 0 {
		v = appVisibleToAll
	}
	var names []string
	for i, name := range appVisibilityNames() {
		if v&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads an array of names, ignoring those it does not know.
func (v *AppVisibility) UnmarshalJSON(data []byte) error {
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	*v = 0
	for _, name := range names {
		if i := slices.Index(appVisibilityNames(), name); i >= 0 {
			*v |= 1 << i
		}
	}
	return nil
}

// AppToolMeta is the _meta.ui of a tool linked to a view. Both sides: a
// server writes it with [AppTool]; a host reads it (see [ToolAppMeta]) to
// render the tool's results in the view and to filter the tool by its
// visibility.
type AppToolMeta struct {
	// ResourceURI is the ui:// URI of the view that renders the tool's
	// results, which the host reads with resources/read.
	ResourceURI string `json:"resourceUri,omitempty"`
	// Visibility says who may call the tool; zero: model and app.
	Visibility AppVisibility `json:"visibility,omitempty"`
}

// appLegacyResourceURI is the flat _meta key that named a tool's view
// before _meta.ui.resourceUri, still read by older hosts.
const appLegacyResourceURI = "ui/resourceUri"

// AppTool returns t linked to the view at viewURI, for [Server.AddTool] or
// the generic [AddTool]: its _meta.ui holds viewURI and vis (zero: model
// and app, written out), replacing any _meta.ui t had, and its
// _meta["ui/resourceUri"] viewURI too, for hosts that read only that older
// key. Server only; register the view with [Server.AddAppView].
//
// A tool visible to the app only is still listed, and served, to a client
// that declared MCP Apps: its host keeps it from the model. A client that
// did not declare it would show the tool to its model, so once the server
// has a view it neither lists nor serves such a tool to that client.
//
// AppTool panics if viewURI is not a ui:// URI, a mistake in the program.
func AppTool(t Tool, viewURI string, vis AppVisibility) Tool {
	if err := checkAppURI(viewURI); err != nil {
		panic(fmt.Sprintf("mcp: AppTool(%q): %v", t.Name, err))
	}
	if vis == 0 {
		vis = appVisibleToAll
	}
	meta := make(Meta, len(t.Meta)+2)
	maps.Copy(meta, t.Meta)
	meta["ui"] = AppToolMeta{ResourceURI: viewURI, Visibility: vis}
	meta[appLegacyResourceURI] = viewURI
	t.Meta = meta
	return t
}

// ToolAppMeta returns the _meta.ui of a tool linked to a view, and whether
// it has one (a tool that names its view only under the older flat key
// "ui/resourceUri" has one too). Both sides: a host reads the tools it
// listed; the server, those AppTool made.
func ToolAppMeta(t *Tool) (AppToolMeta, bool) {
	var m AppToolMeta
	switch ui := t.Meta["ui"].(type) {
	case AppToolMeta:
		m = ui
	case *AppToolMeta:
		if ui != nil {
			m = *ui
		}
	case nil:
	default:
		if decodeMetaValue(ui, &m) != nil {
			return AppToolMeta{}, false
		}
	}
	if m.ResourceURI == "" {
		m.ResourceURI, _ = t.Meta[appLegacyResourceURI].(string)
	}
	return m, m.ResourceURI != "" || m.Visibility != 0
}

// ResourceAppMeta returns the _meta.ui of a view's resource contents, and
// whether it has one. Both sides: a host reads the contents of a view it
// is about to render.
func ResourceAppMeta(c *ResourceContents) (AppViewMeta, bool) {
	var m AppViewMeta
	switch ui := c.Meta["ui"].(type) {
	case AppViewMeta:
		return ui, true
	case nil:
		return m, false
	default:
		return m, decodeMetaValue(ui, &m) == nil
	}
}

// decodeMetaValue decodes a _meta value, as a peer sent it (decoded into
// any) or as a program built it, into v.
func decodeMetaValue(value, v any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// SupportsApps reports whether the client declared MCP Apps with views of
// AppMIMEType: whether it renders the views of tools linked with AppTool
// and keeps app-only tools from its model. A server may offer a text-only
// variant of a tool to other clients.
func (g *ClientGateway) SupportsApps() bool { return appsDeclared(g.req.caps) }

// appsDeclared reports whether caps declare the MCP Apps extension with
// AppMIMEType among its mimeTypes.
func appsDeclared(caps capabilitySet) bool {
	raw, ok := caps.members()["extensions"]
	if !ok {
		return false
	}
	var ext map[string]json.RawMessage
	if json.Unmarshal(raw, &ext) != nil {
		return false
	}
	var settings AppsSettings
	if json.Unmarshal(ext[AppsExtension], &settings) != nil {
		return false
	}
	return slices.Contains(settings.MIMETypes, AppMIMEType)
}

// appOnlyHidden is the server's appOnlyHidden hook: for a request whose
// client did not declare MCP Apps, the tools visible to the app only.
func appOnlyHidden(info *RequestInfo) func(*Tool) bool {
	if info != nil && appsDeclared(info.caps) {
		return nil
	}
	return appOnly
}

// appOnly reports whether t is linked to a view and hidden from the model.
func appOnly(t *Tool) bool {
	m, ok := ToolAppMeta(t)
	return ok && !m.Visibility.Includes(AppVisibleToModel)
}

// AddAppView registers an MCP Apps view as a resource of MIME type
// AppMIMEType, replacing any resource with the same URI, and declares the
// MCP Apps extension in the server's capabilities. resources/list lists
// the view with its _meta.ui; resources/read answers its HTML with the same
// _meta.ui. Register views before serving: capabilities, once sent, are
// not sent again. Server only.
//
// AddAppView returns an error, and registers nothing, if v.URI is not a
// ui:// URI, v has no Name, not exactly one of v.HTML and v.FS is set, the
// document is empty, not UTF-8 or bigger than MaxAppViewBytes, or an
// origin or the domain in v.Meta has spaces, quotes, commas or semicolons.
func (s *Server) AddAppView(v AppView) error {
	html, err := v.document()
	if err != nil {
		return fmt.Errorf("mcp: AddAppView(%q): %w", v.URI, err)
	}
	res := Resource{URI: v.URI, Name: v.Name, Title: v.Title, Description: v.Description, MIMEType: AppMIMEType}
	size := int64(len(html))
	res.Size = &size
	if !isZeroAppViewMeta(&v.Meta) {
		res.Meta = Meta{"ui": v.Meta}
	}
	contents := ResourceContents{URI: v.URI, MIMEType: AppMIMEType, Text: html, Meta: res.Meta}
	s.mu.Lock()
	s.offersApps = true
	s.appOnlyHidden = appOnlyHidden
	s.mu.Unlock()
	s.AddResource(res, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{contents}}, nil
	})
	return nil
}

// document checks v and returns its HTML.
func (v *AppView) document() (string, error) {
	if err := checkAppURI(v.URI); err != nil {
		return "", err
	}
	if v.Name == "" {
		return "", errors.New("a view needs a name")
	}
	if err := v.Meta.check(); err != nil {
		return "", err
	}
	html := v.HTML
	switch {
	case (html == "") == (v.FS == nil):
		return "", errors.New("a view needs either HTML or an FS and a Path")
	case v.FS != nil:
		f, err := v.FS.Open(v.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxAppViewBytes+1))
		if err != nil {
			return "", err
		}
		html = string(b)
	}
	switch {
	case strings.TrimSpace(html) == "":
		return "", errors.New("the view's document is empty")
	case len(html) > MaxAppViewBytes:
		return "", fmt.Errorf("the view's document is over %d bytes", MaxAppViewBytes)
	case !utf8.ValidString(html):
		return "", errors.New("the view's document is not UTF-8")
	}
	return html, nil
}

// checkAppURI checks that uri is a ui:// URI that names something.
func checkAppURI(uri string) error {
	rest, ok := strings.CutPrefix(uri, "ui://")
	if !ok || rest == "" || len(uri) > maxAppURIBytes || !printableASCII(uri) {
		return fmt.Errorf("a view's URI must be ui:// and a name, printable ASCII of at most %d bytes: %q", maxAppURIBytes, uri)
	}
	if u, err := url.Parse(uri); err != nil || u.Host == "" {
		return fmt.Errorf("a view's URI must be ui://host[/path]: %q", uri)
	}
	return nil
}

// printableASCII reports whether s is printable ASCII without spaces.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// check refuses origins and a domain that would break the Content Security
// Policy or allow attribute a host builds from them.
func (m *AppViewMeta) check() error {
	sources := slices.Concat(m.CSP.ConnectDomains, m.CSP.ResourceDomains, m.CSP.FrameDomains, m.CSP.BaseURIDomains)
	if m.Domain != "" {
		sources = append(sources, m.Domain)
	}
	for _, src := range sources {
		if src == "" || len(src) > maxAppSourceBytes || !printableASCII(src) || strings.ContainsAny(src, `;,'"`) {
			return fmt.Errorf("the view's metadata names an origin or domain that is not one: %q", src)
		}
	}
	return nil
}

// isZeroAppViewMeta reports whether m asks for nothing.
func isZeroAppViewMeta(m *AppViewMeta) bool {
	c := &m.CSP
	return len(c.ConnectDomains)+len(c.ResourceDomains)+len(c.FrameDomains)+len(c.BaseURIDomains) == 0 &&
		m.Permissions == AppPermissions{} && m.Domain == "" && m.PrefersBorder == nil
}
