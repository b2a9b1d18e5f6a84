package mcpotel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/e6ac58cb/mcp"
	mcpotel "github.com/e6ac58cb/mcp/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A server and a client, each with the middleware, joined in memory. Every
// message is a span on each side, and the trace context it carries makes
// the receiver's span the child of the sender's. A span recorder stands in
// for an exporter.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tel := mcpotel.New(mcpotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))

	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"},
		mcp.WithInboundMiddleware(tel.Inbound()), mcp.WithOutboundMiddleware(tel.Outbound()),
		mcp.WithSessionEndHandler(tel.ServerSessionEnded))
	srv.AddTool(mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("hello")}}, nil
	})
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"},
		mcp.WithInboundMiddleware(tel.Inbound()), mcp.WithOutboundMiddleware(tel.Outbound()),
		mcp.WithSessionEndHandler(tel.ClientSessionEnded))
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.CallTool(ctx, "greet", nil); err != nil {
		log.Fatal(err)
	}

	ended := spans.Ended()
	for _, s := range ended {
		line := s.SpanKind().String() + " " + s.Name()
		for _, p := range ended {
			if p.SpanContext().SpanID() == s.Parent().SpanID() {
				line += " (child of " + p.SpanKind().String() + " " + p.Name() + ")"
			}
		}
		fmt.Println(line)
	}
	// Unordered output:
	// client server/discover
	// server server/discover (child of client server/discover)
	// client tools/call greet
	// server tools/call greet (child of client tools/call greet)
}
