package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestAppsServer serves the greeter in process and talks to it through the
// Client over Streamable HTTP, on both protocol eras: a host that declares
// MCP Apps lists both tools linked to the view, reads the view (the
// embedded form, with the #result element the browser tests look for) and
// calls the app-only tool as the view would; a client that does not
// declare it sees only open_greeter.
func TestAppsServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	serveCtx, stop := context.WithCancel(ctx)
	go func() { served <- serve(serveCtx, ln) }()
	// The clients' own connections, closed before the server shuts down,
	// which otherwise waits for a connection dialled and never used.
	httpClient := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(func() {
		httpClient.CloseIdleConnections()
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	host := mcp.WithExtension(mcp.AppsExtension, mcp.AppsSettings{MIMETypes: []string{mcp.AppMIMEType}})

	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		client := mcp.NewClient(mcp.Implementation{Name: "host", Version: "1"}, mcp.WithProtocolVersion(version), host)
		if err := client.Connect(ctx, mcp.NewHTTPTransport(endpoint, mcp.WithHTTPClient(httpClient))); err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		defer client.Close()
		if _, ok := client.ServerCapabilities().Extensions[mcp.AppsExtension]; !ok {
			t.Errorf("%s: the server does not declare %s", version, mcp.AppsExtension)
		}

		tools, err := client.ListTools(ctx, "")
		if err != nil {
			t.Fatalf("%s: tools/list: %v", version, err)
		}
		want := map[string]mcp.AppVisibility{"open_greeter": mcp.AppVisibleToModel | mcp.AppVisibleToApp, "greet": mcp.AppVisibleToApp}
		if len(tools.Tools) != len(want) {
			t.Fatalf("%s: %d tools, want %d", version, len(tools.Tools), len(want))
		}
		for _, tool := range tools.Tools {
			ui, ok := mcp.ToolAppMeta(tool)
			if !ok || ui.ResourceURI != viewURI || ui.Visibility != want[tool.Name] {
				t.Errorf("%s: %s: _meta.ui %+v, want %s visible as %v", version, tool.Name, ui, viewURI, want[tool.Name])
			}
		}

		read, err := client.ReadResource(ctx, viewURI)
		if err != nil {
			t.Fatalf("%s: resources/read: %v", version, err)
		}
		c := read.Contents[0]
		if c.MIMEType != mcp.AppMIMEType || !strings.Contains(c.Text, `id="result"`) || !strings.Contains(c.Text, "ui/initialize") {
			t.Errorf("%s: the view: %s, %.80q…", version, c.MIMEType, c.Text)
		}

		res, err := client.CallTool(ctx, "greet", map[string]string{"name": "Ada"})
		if err != nil || res.Content[0].Text != "Hello, Ada!" {
			t.Errorf("%s: greet: %+v, %v", version, res, err)
		}
		res, err = client.CallTool(ctx, "open_greeter", map[string]string{})
		if err != nil || res.Content[0].Text != "The greeter is open." {
			t.Errorf("%s: open_greeter: %+v, %v", version, res, err)
		}

		plain := mcp.NewClient(mcp.Implementation{Name: "plain", Version: "1"}, mcp.WithProtocolVersion(version))
		if err := plain.Connect(ctx, mcp.NewHTTPTransport(endpoint, mcp.WithHTTPClient(httpClient))); err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		defer plain.Close()
		tools, err = plain.ListTools(ctx, "")
		if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "open_greeter" {
			t.Errorf("%s: a client without MCP Apps lists %+v, %v; want open_greeter alone", version, tools, err)
		}
	}
}
