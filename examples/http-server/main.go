// Command http-server is an MCP server on Streamable HTTP, the transport of
// remote servers: one endpoint, /mcp, that serves clients of every protocol
// revision, with the timeouts a server facing a network needs and a
// graceful shutdown.
//
//	go run ./examples/http-server              # serves http://127.0.0.1:8080/mcp
//	go run ./examples/http-server -addr 127.0.0.1:0
//
// It prints the URL it serves once it listens (with -addr 127.0.0.1:0, the
// port the system picked) and serves until interrupted (Ctrl-C, SIGINT or
// SIGTERM): then it ends every session and stream, lets the calls in
// flight finish or be cancelled, and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
)

// shutdownTimeout bounds the graceful shutdown: what is still open after
// it is closed hard.
const shutdownTimeout = 10 * time.Second

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `address`")
	flag.Parse()
	// ctx ends at the first Ctrl-C or SIGTERM; a second one kills the
	// program, as stop restores the default behaviour.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "http-server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string) error {
	// Listening first, then serving, lets the program say where it serves
	// before the first request can come, and catches a port in use here.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	// WithContext ties the handler to ctx: once it ends, every session and
	// every stream (a client's standing GET stream, say) ends too, so that
	// Shutdown below need not wait for them.
	mux.Handle("/mcp", mcp.NewHTTPHandler(newServer(), mcp.WithContext(ctx)))
	// NewHTTPServer sets the timeouts that cut off clients sending too
	// slowly, without cutting MCP's long-lived streams.
	httpServer := mcp.NewHTTPServer("", mux)

	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	fmt.Printf("serving MCP at http://%s/mcp\n", ln.Addr())

	select {
	case err := <-served: // the listener failed
		return err
	case <-ctx.Done():
	}
	fmt.Println("shutting down")
	stop, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(stop); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("shut down cleanly")
	return nil
}

type greetArgs struct {
	Name string `json:"name" description:"Who to greet." schema:"minLength=1"`
}

type countdownArgs struct {
	From int `json:"from" description:"Where to count down from." schema:"minimum=1,maximum=10,default=3"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "http-server", Version: "1.0.0"})

	mcp.AddTool(srv, mcp.Tool{Name: "greet", Description: "Greets someone by name."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			// req says which revision the call came under: 2026-07-28
			// calls are stateless POSTs, older ones belong to a session.
			text := fmt.Sprintf("Hello, %s! (protocol %s)", in.Name, req.ProtocolVersion())
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}, nil
		})

	// A call that reports progress is answered as an SSE stream: each
	// report reaches the client as it is made, on the call's own response.
	mcp.AddTool(srv, mcp.Tool{Name: "countdown", Description: "Counts down, reporting each number as progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, in countdownArgs) (*mcp.CallToolResult, error) {
			for i := in.From; i > 0; i-- {
				if err := req.Gateway().Progress(float64(in.From-i+1), float64(in.From), fmt.Sprint(i)); err != nil {
					return nil, err // the client went away
				}
				select {
				case <-ctx.Done(): // cancelled by the client, or the server shuts down
					return nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("liftoff")}}, nil
		})
	return srv
}
