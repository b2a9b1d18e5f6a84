// Command trace runs an MCP server and a client in one process, joined by
// pipes as over stdio, each with its own OpenTelemetry tracer provider, and
// prints every span the two export: one trace runs from the client's call
// through the message's params._meta to the server's handler.
//
//	go run ./examples/trace
//
// Each line is one span: which side exported it, its trace, its id, its
// parent's id, its kind and its name.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	"github.com/e6ac58cb/mcp"
	mcpotel "github.com/e6ac58cb/mcp/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves, calls one tool and prints the spans to w.
func run(w io.Writer) error {
	ctx := context.Background()
	out := &printer{w: w}

	// The server's side: its own tracer provider, exporting as "server".
	serverTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(&exporter{side: "server", out: out}))
	serverTel := mcpotel.New(mcpotel.WithTracerProvider(serverTP))
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"},
		mcp.WithInboundMiddleware(serverTel.Inbound()), mcp.WithOutboundMiddleware(serverTel.Outbound()),
		mcp.WithSessionEndHandler(serverTel.ServerSessionEnded))
	srv.AddTool(mcp.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The handler's context carries the server span: work done
			// here joins the client's trace.
			_, span := serverTP.Tracer("greeter").Start(ctx, "compose greeting")
			defer span.End()
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("Hello!")}}, nil
		})

	// The client's side, exporting as "client".
	clientTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(&exporter{side: "client", out: out}))
	clientTel := mcpotel.New(mcpotel.WithTracerProvider(clientTP))
	cl := mcp.NewClient(mcp.Implementation{Name: "caller", Version: "1.0.0"},
		mcp.WithInboundMiddleware(clientTel.Inbound()), mcp.WithOutboundMiddleware(clientTel.Outbound()),
		mcp.WithSessionEndHandler(clientTel.ClientSessionEnded))

	// Two pipes stand for a child process's stdin and stdout.
	toClient, fromServer := io.Pipe()
	toServer, fromClient := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, mcp.NewIOTransport(toServer, fromServer)) }()
	if err := cl.Connect(ctx, mcp.NewIOTransport(toClient, fromClient)); err != nil {
		return err
	}

	ctx, root := clientTP.Tracer("caller").Start(ctx, "say hello")
	_, err := cl.CallTool(ctx, "greet", nil)
	root.End()
	cl.Close()
	fromClient.Close()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// printer serialises the two exporters' lines.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

// exporter is a span exporter that prints one line a span.
type exporter struct {
	side string
	out  *printer
}

func (e *exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.out.mu.Lock()
	defer e.out.mu.Unlock()
	for _, s := range spans {
		parent := "-"
		if s.Parent().IsValid() {
			parent = s.Parent().SpanID().String()
		}
		_, err := fmt.Fprintf(e.out.w, "%s trace=%s span=%s parent=%-16s %-8s %s\n",
			e.side, s.SpanContext().TraceID(), s.SpanContext().SpanID(), parent, kindName(s.SpanKind()), s.Name())
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *exporter) Shutdown(context.Context) error { return nil }

func kindName(k trace.SpanKind) string {
	if k == trace.SpanKindUnspecified {
		return "internal"
	}
	return k.String()
}
