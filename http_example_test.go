package mcp_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/e6ac58cb/mcp"
)

// A production server: the handler behind an http.Server whose timeouts
// cut off clients that send too slowly, without cutting the long SSE
// answers of MCP (the handler bounds each of its writes itself).
func ExampleNewHTTPServer() {
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("hello")}}, nil
	})
	// Timeouts that cut off slow clients and never an SSE stream.
	httpServer := mcp.NewHTTPServer("", mcp.NewHTTPHandler(srv, mcp.WithMaxBodyBytes(1<<20)))
	ln, err := net.Listen("tcp", "127.0.0.1:0") // loopback: the Host check guards against DNS rebinding
	if err != nil {
		log.Fatal(err)
	}
	go httpServer.Serve(ln)
	defer httpServer.Shutdown(context.Background())

	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(context.Background(), mcp.NewHTTPTransport("http://"+ln.Addr().String())); err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	res, err := client.CallTool(context.Background(), "greet", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// hello
}
