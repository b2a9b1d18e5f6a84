package mcp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/e6ac58cb/mcp"
)

// An MCP Apps server registers a view, a ui:// HTML resource, and links
// tools to it. A host that declares the extension lists both tools and
// reads the view; it keeps the app-only tool from its model, and calls it
// for the view.
func ExampleServer_AddAppView() {
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"})
	err := srv.AddAppView(mcp.AppView{
		URI:  "ui://weather/dashboard",
		Name: "dashboard",
		HTML: `<!doctype html><html><body><div id="forecast"></div></body></html>`,
		Meta: mcp.AppViewMeta{CSP: mcp.AppCSP{ConnectDomains: []string{"https://api.weather.example"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	forecast := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("Sunny, 22°C")}}, nil
	}
	srv.AddTool(mcp.AppTool(mcp.Tool{Name: "get_forecast"}, "ui://weather/dashboard", 0), forecast)
	srv.AddTool(mcp.AppTool(mcp.Tool{Name: "refresh"}, "ui://weather/dashboard", mcp.AppVisibleToApp), forecast)

	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	host := mcp.NewClient(mcp.Implementation{Name: "host", Version: "1.0.0"},
		mcp.WithExtension(mcp.AppsExtension, mcp.AppsSettings{MIMETypes: []string{mcp.AppMIMEType}}))
	if err := host.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	tools, err := host.ListTools(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools.Tools {
		ui, _ := mcp.ToolAppMeta(tool)
		fmt.Printf("%s: view %s, model %v, app %v\n", tool.Name, ui.ResourceURI,
			ui.Visibility.Includes(mcp.AppVisibleToModel), ui.Visibility.Includes(mcp.AppVisibleToApp))
	}
	read, err := host.ReadResource(ctx, "ui://weather/dashboard")
	if err != nil {
		log.Fatal(err)
	}
	view := read.Contents[0]
	ui, _ := mcp.ResourceAppMeta(&view)
	fmt.Println(view.MIMEType, ui.CSP.ConnectDomains)
	// Output:
	// get_forecast: view ui://weather/dashboard, model true, app true
	// refresh: view ui://weather/dashboard, model false, app true
	// text/html;profile=mcp-app [https://api.weather.example]
}
