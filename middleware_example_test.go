package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/e6ac58cb/mcp"
)

// A server middleware that refuses one tool before its handler runs and
// notes every request it lets through.
func ExampleWithInboundMiddleware() {
	audit := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, r *mcp.Request) (json.RawMessage, error) {
			if r.IsNotification() {
				return next(ctx, r)
			}
			if r.Method == "tools/call" {
				var p mcp.CallToolParams
				if err := json.Unmarshal(r.Params, &p); err != nil {
					return nil, err
				}
				if p.Name == "delete_everything" {
					return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "not today"}
				}
			}
			fmt.Printf("%s (%s)\n", r.Method, r.ProtocolVersion)
			return next(ctx, r)
		}
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "audited", Version: "1.0.0"},
		mcp.WithProtocolVersion(mcp.Version20251125), mcp.WithInboundMiddleware(audit))
	for _, name := range []string{"hello", "delete_everything"} {
		srv.AddTool(mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("hi")}}, nil
		})
	}
	ct, st := mcp.NewInMemoryTransports()
	go srv.Serve(context.Background(), st)
	cl := mcp.NewClient(mcp.Implementation{Name: "client", Version: "1.0.0"}, mcp.WithProtocolVersion(mcp.Version20251125))
	if err := cl.Connect(context.Background(), ct); err != nil {
		panic(err)
	}
	defer cl.Close()
	res, err := cl.CallTool(context.Background(), "hello", nil)
	fmt.Println(res.Content[0].Text, err)
	_, err = cl.CallTool(context.Background(), "delete_everything", nil)
	fmt.Println(err)
	// Output:
	// initialize ()
	// tools/call (2025-11-25)
	// hi <nil>
	// mcp: not today (code -32602)
}
