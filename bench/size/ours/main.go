// Command greeter is an MCP server with one tool, served over stdio.
package main

import (
	"context"
	"log"

	"github.com/e6ac58cb/mcp"
)

type greetArgs struct {
	Name string `json:"name" description:"Who to greet."`
}

func main() {
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"})
	mcp.AddTool(srv, mcp.Tool{Name: "greet", Description: "Greets someone by name."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(1, 2, "looking up "+in.Name)
			req.Gateway().Progress(2, 2, "writing the greeting")
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("Hello, " + in.Name + "!")}}, nil
		})
	if err := srv.Serve(context.Background(), mcp.StdioTransport()); err != nil {
		log.Fatal(err)
	}
}
