package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
)

// appsTestView is the view of the apps test server.
const appsTestView = "ui://counter/view"

// appsTestHTML is its document.
const appsTestHTML = "<!doctype html><html><body><p id=\"count\">0</p></body></html>"

// newAppsTestServer returns a server with one view and two tools linked to
// it: show_counter, for model and app, and increment, for the app only.
// The testdata/wire/apps-*.txt transcripts are played against it.
func newAppsTestServer() *Server {
	s := NewServer(Implementation{Name: "apps-server", Version: "1.0.0"})
	border := true
	if err := s.AddAppView(AppView{
		URI: appsTestView, Name: "counter", Title: "Counter", Description: "A counter with a button.",
		HTML: appsTestHTML,
		Meta: AppViewMeta{
			CSP:           AppCSP{ConnectDomains: []string{"https://api.example.com"}, ResourceDomains: []string{"https://cdn.example.com"}},
			Permissions:   AppPermissions{ClipboardWrite: true},
			PrefersBorder: &border,
		},
	}); err != nil {
		panic(err)
	}
	count := 0
	s.AddTool(AppTool(Tool{Name: "show_counter", Description: "Shows the counter."}, appsTestView, 0),
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("count: 0")}}, nil
		})
	s.AddTool(AppTool(Tool{Name: "increment", Description: "Adds one to the counter."}, appsTestView, AppVisibleToApp),
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			count++
			return &CallToolResult{Content: []Content{TextContent("incremented")}}, nil
		})
	return s
}

// appsHost declares MCP Apps as a host does.
func appsHost() ClientOption {
	return WithExtension(AppsExtension, AppsSettings{MIMETypes: []string{AppMIMEType}})
}

// TestAppsThroughClient lists and reads an app's view and tools through
// the Client, on every era and carrier: a host that declared MCP Apps sees
// both tools and their _meta.ui; a client that did not sees only the tool
// the model may call, and cannot call the other.
func TestAppsThroughClient(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		ctx := context.Background()
		host := connectOver(t, newAppsTestServer(), carrier, version, appsHost())
		if _, ok := host.ServerCapabilities().Extensions[AppsExtension]; !ok {
			t.Errorf("the server does not declare %s: %+v", AppsExtension, host.ServerCapabilities())
		}
		res, err := host.ListTools(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 2 {
			t.Fatalf("the host lists %d tools, want 2", len(res.Tools))
		}
		for i, want := range []AppToolMeta{{appsTestView, appVisibleToAll}, {appsTestView, AppVisibleToApp}} {
			got, ok := ToolAppMeta(res.Tools[i])
			if !ok || got != want {
				t.Errorf("tool %s: _meta.ui %+v (%v), want %+v", res.Tools[i].Name, got, ok, want)
			}
		}
		if _, err := host.CallTool(ctx, "increment", nil); err != nil {
			t.Errorf("the host calls increment: %v", err)
		}

		list, err := host.ListResources(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Resources) != 1 || list.Resources[0].MIMEType != AppMIMEType || list.Resources[0].URI != appsTestView {
			t.Fatalf("resources/list: %+v", list.Resources)
		}
		read, err := host.ReadResource(ctx, appsTestView)
		if err != nil {
			t.Fatal(err)
		}
		c := read.Contents[0]
		if c.MIMEType != AppMIMEType || c.Text != appsTestHTML {
			t.Errorf("resources/read: %+v", c)
		}
		meta, ok := ResourceAppMeta(&c)
		if !ok || !meta.Permissions.ClipboardWrite || meta.Permissions.Camera || meta.PrefersBorder == nil || !*meta.PrefersBorder ||
			strings.Join(meta.CSP.ConnectDomains, " ") != "https://api.example.com" {
			t.Errorf("the contents' _meta.ui: %+v (%v)", meta, ok)
		}

		plain := connectOver(t, newAppsTestServer(), carrier, version)
		if tools, err := plain.ListTools(ctx, ""); err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "show_counter" {
			t.Errorf("a client without MCP Apps lists %+v (%v), want only show_counter", tools, err)
		}
		if _, err := plain.CallTool(ctx, "increment", nil); rpcCode(err) != CodeInvalidParams {
			t.Errorf("a client without MCP Apps calls increment: %v, want unknown tool", err)
		}
	})
}

// TestAppsHiddenToolsPage: tools hidden from a client take no place in its
// pages, and paging over them still reaches every tool it may see.
func TestAppsHiddenToolsPage(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"}, WithPageSize(2))
	if err := s.AddAppView(AppView{URI: appsTestView, Name: "v", HTML: appsTestHTML}); err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	for _, name := range []string{"a", "hidden1", "b", "hidden2", "hidden3", "c"} {
		vis := AppVisibility(0)
		if strings.HasPrefix(name, "hidden") {
			vis = AppVisibleToApp
		}
		s.AddTool(AppTool(Tool{Name: name}, appsTestView, vis), noop)
	}
	var names []string
	for tool, err := range pair(t, s).Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c" {
		t.Errorf("listed %s, want a,b,c", got)
	}
	var all []string
	for tool, err := range pair(t, s, appsHost()).Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tool.Name)
	}
	if len(all) != 6 {
		t.Errorf("the host listed %v, want all 6", all)
	}
}

// TestAppsSupportsApps: a handler learns whether its client declared MCP
// Apps with the mcp-app MIME type.
func TestAppsSupportsApps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []ClientOption
		want bool
	}{
		{"none", nil, false},
		{"host", []ClientOption{appsHost()}, true},
		{"other MIME types", []ClientOption{WithExtension(AppsExtension, AppsSettings{MIMETypes: []string{"text/uri-list"}})}, false},
		{"no settings", []ClientOption{WithExtension(AppsExtension, nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewServer(Implementation{Name: "s", Version: "1"})
			s.AddTool(Tool{Name: "probe"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				if req.Gateway().SupportsApps() {
					return &CallToolResult{Content: []Content{TextContent("apps")}}, nil
				}
				return &CallToolResult{Content: []Content{TextContent("text")}}, nil
			})
			res, err := pair(t, s, tc.opts...).CallTool(context.Background(), "probe", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].Text == "apps"; got != tc.want {
				t.Errorf("SupportsApps() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAddAppViewRefuses: AddAppView refuses, and registers nothing for, a
// view that is not one.
func TestAddAppViewRefuses(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"view.html": {Data: []byte(appsTestHTML)}, "big.html": {Data: make([]byte, MaxAppViewBytes+1)}}
	ok := AppView{URI: appsTestView, Name: "v", HTML: appsTestHTML}
	for _, tc := range []struct {
		name string
		edit func(v *AppView)
	}{
		{"not ui://", func(v *AppView) { v.URI = "https://example.com/view" }},
		{"ui:// alone", func(v *AppView) { v.URI = "ui://" }},
		{"no host", func(v *AppView) { v.URI = "ui:///view" }},
		{"space", func(v *AppView) { v.URI = "ui://a b" }},
		{"control", func(v *AppView) { v.URI = "ui://a\x00" }},
		{"long URI", func(v *AppView) { v.URI = "ui://" + strings.Repeat("a", maxAppURIBytes) }},
		{"no name", func(v *AppView) { v.Name = "" }},
		{"no document", func(v *AppView) { v.HTML = "" }},
		{"blank document", func(v *AppView) { v.HTML = " \n" }},
		{"HTML and FS", func(v *AppView) { v.FS, v.Path = fsys, "view.html" }},
		{"missing file", func(v *AppView) { v.HTML, v.FS, v.Path = "", fsys, "nope.html" }},
		{"file too big", func(v *AppView) { v.HTML, v.FS, v.Path = "", fsys, "big.html" }},
		{"HTML too big", func(v *AppView) { v.HTML = strings.Repeat("a", MaxAppViewBytes+1) }},
		{"not UTF-8", func(v *AppView) { v.HTML = "<p>\xff</p>" }},
		{"empty origin", func(v *AppView) { v.Meta.CSP.ConnectDomains = []string{""} }},
		{"two origins in one", func(v *AppView) { v.Meta.CSP.ResourceDomains = []string{"https://a.example https://b.example"} }},
		{"a directive smuggled", func(v *AppView) { v.Meta.CSP.FrameDomains = []string{"https://a.example;script-src"} }},
		{"quoted", func(v *AppView) { v.Meta.CSP.BaseURIDomains = []string{"'self'"} }},
		{"bad domain", func(v *AppView) { v.Meta.Domain = "a,b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := ok
			tc.edit(&v)
			s := NewServer(Implementation{Name: "s", Version: "1"})
			if err := s.AddAppView(v); err == nil {
				t.Fatal("AddAppView accepted it")
			}
			if caps := s.capabilities(LatestVersion); caps.Resources != nil || caps.Extensions != nil {
				t.Errorf("a refused view was registered: %+v", caps)
			}
		})
	}
	s := NewServer(Implementation{Name: "s", Version: "1"})
	if err := s.AddAppView(AppView{URI: appsTestView, Name: "v", FS: fsys, Path: "view.html"}); err != nil {
		t.Fatalf("a view from an FS: %v", err)
	}
	read, err := pair(t, s).ReadResource(context.Background(), appsTestView)
	if err != nil || read.Contents[0].Text != appsTestHTML || read.Contents[0].Meta != nil {
		t.Errorf("resources/read of a view from an FS: %+v, %v", read, err)
	}
}

// TestAppToolPanics: AppTool refuses a URI that is not ui://, a mistake in
// the program.
func TestAppToolPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("AppTool took an https URI")
		}
	}()
	AppTool(Tool{Name: "x"}, "https://example.com", 0)
}

// TestAppsJSON: the metadata types' wire form both ways.
func TestAppsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value any
		want  string
	}{
		{AppPermissions{}, `{}`},
		{AppPermissions{Camera: true, ClipboardWrite: true}, `{"camera":{},"clipboardWrite":{}}`},
		{AppVisibleToApp, `["app"]`},
		{AppVisibleToModel, `["model"]`},
		{AppVisibility(0), `["model","app"]`},
		{AppToolMeta{ResourceURI: "ui://a"}, `{"resourceUri":"ui://a"}`},
		{AppViewMeta{}, `{}`},
		{AppViewMeta{Domain: "x.example", CSP: AppCSP{FrameDomains: []string{"https://f.example"}}}, `{"csp":{"frameDomains":["https://f.example"]},"domain":"x.example"}`},
	} {
		raw, err := json.Marshal(tc.value)
		if err != nil || string(raw) != tc.want {
			t.Errorf("%#v: %s (%v), want %s", tc.value, raw, err, tc.want)
		}
	}
	var p AppPermissions
	if err := json.Unmarshal([]byte(`{"microphone":{},"geolocation":null,"other":{}}`), &p); err != nil || p != (AppPermissions{Microphone: true}) {
		t.Errorf("decoded %+v, %v", p, err)
	}
	var v AppVisibility
	if err := json.Unmarshal([]byte(`["app","later"]`), &v); err != nil || v != AppVisibleToApp {
		t.Errorf("decoded %v, %v", v, err)
	}
	// A tool as a host decodes it: _meta values are maps; the older flat
	// key alone names the view too.
	var tool Tool
	json.Unmarshal([]byte(`{"name":"t","_meta":{"ui":{"visibility":["app"]},"ui/resourceUri":"ui://a/b"}}`), &tool)
	if m, ok := ToolAppMeta(&tool); !ok || m != (AppToolMeta{"ui://a/b", AppVisibleToApp}) {
		t.Errorf("ToolAppMeta of a listed tool: %+v, %v", m, ok)
	}
	if _, ok := ToolAppMeta(&Tool{Name: "plain"}); ok {
		t.Error("a plain tool has _meta.ui")
	}
}
