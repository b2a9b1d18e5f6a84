// Command mcpgo is the quick-start greeter (bench/size/ours) written with
// github.com/mark3labs/mcp-go: a typed tool handler whose input schema is
// inferred (WithInputSchema), two progress notifications, served over
// stdio. It exists to be measured by bench/size.sh.
package main

import (
	"context"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"Who to greet."`
}

func main() {
	srv := server.NewMCPServer("greeter", "1.0.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("greet", mcp.WithDescription("Greets someone by name."), mcp.WithInputSchema[greetArgs]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			// mcp-go has no progress helper on the request: the handler
			// checks the token and sends the notification by method name
			// with untyped params.
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				tok := req.Params.Meta.ProgressToken
				s := server.ServerFromContext(ctx)
				s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": tok, "progress": 1, "total": 2, "message": "looking up " + in.Name})
				s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": tok, "progress": 2, "total": 2, "message": "writing the greeting"})
			}
			return mcp.NewToolResultText("Hello, " + in.Name + "!"), nil
		}))
	if err := server.ServeStdio(srv); err != nil {
		log.Fatal(err)
	}
}
