// Command everything-server serves every tool, resource, resource template
// and prompt that the official MCP conformance suite's server scenarios name
// (suite versions 0.1.16 and 0.2.0), plus an interop set other clients
// exercise, on every protocol revision at once.
//
//	everything-server -http 127.0.0.1:3000   # Streamable HTTP at http://127.0.0.1:3000/mcp
//	PORT=3000 everything-server              # the same, on 127.0.0.1:$PORT
//	everything-server -stdio                 # newline-delimited JSON on stdin/stdout
//
// One endpoint serves both eras: a legacy client initializes a session
// (2025-03-26 … 2025-11-25) and its asks (elicitation, sampling, roots) are
// live requests; a 2026-07-28 client sends self-contained requests and the
// same asks come back as input_required results that the client answers by
// re-sending the call. conformance/run.sh builds it and runs the suite
// against it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
)

// toolsPerPage is the page size of every list. The suite's server scenarios
// read tools/list without a cursor, so each tool they look for is
// registered first and lands on page 1; the interop tools come after and
// spill onto page 2, so that clients exercise pagination.
const toolsPerPage = 30

func main() {
	httpAddr := flag.String("http", "", "serve Streamable HTTP at `address` (path /mcp), such as 127.0.0.1:3000; default 127.0.0.1:$PORT")
	stdio := flag.Bool("stdio", false, "serve over standard input and output instead of HTTP")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("everything-server: ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := newServer()
	if *stdio {
		if err := srv.Serve(ctx, mcp.StdioTransport()); err != nil && !errors.Is(err, context.Canceled) {
			log.Fatal(err)
		}
		return
	}
	addr := *httpAddr
	if addr == "" {
		port := os.Getenv("PORT")
		if port == "" {
			log.Fatal("give -http 127.0.0.1:PORT, set PORT, or pass -stdio")
		}
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	if err := serveHTTP(ctx, srv, addr); err != nil {
		log.Fatal(err)
	}
}

// newServer returns the server with everything registered: the suite's
// fixtures first (see toolsPerPage), then the interop set.
func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "mcp-go-everything-server", Version: "1.0.0"},
		mcp.WithPageSize(toolsPerPage),
		mcp.WithTasks(mcp.TaskOptions{}),
		mcp.WithCompletionHandler(complete),
		mcp.WithInstructions("A test server: it serves the fixtures of the MCP conformance suite and an interop set."))
	addConformanceTools(srv)
	addInteropTools(srv)
	addTaskTools(srv)
	addResources(srv)
	addPrompts(srv)
	addSkills(srv)
	return srv
}

// serveHTTP serves srv on addr until ctx ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, srv *mcp.Server, addr string) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, mcp.WithContext(ctx)))
	httpServer := mcp.NewHTTPServer(addr, mux) // timeouts that spare SSE streams
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Printf("serving MCP at http://%s/mcp", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- httpServer.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
