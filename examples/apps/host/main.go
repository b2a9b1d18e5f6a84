// Command host is an MCP Apps host for the browser: it connects to an MCP
// server, lists the tools that have a view, and shows a tool's view in a
// sandboxed iframe on a page served on 127.0.0.1, carrying the view's calls
// to the server (mcp.NewAppHost).
//
//	go run ./examples/apps/host -server http://127.0.0.1:8080/mcp
//	go run ./examples/apps/host -stdio "node server.js --stdio"
//
// It prints the page's URL and serves until interrupted.
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
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	server := flag.String("server", "", "the Streamable HTTP `URL` of the MCP server")
	stdio := flag.String("stdio", "", "a `command` that runs the MCP server over stdio (split at spaces)")
	addr := flag.String("addr", "127.0.0.1:0", "listen `address` of the host page")
	flag.Parse()
	if (*server == "") == (*stdio == "") {
		fmt.Fprintln(os.Stderr, "usage: host -server URL | -stdio COMMAND [-addr 127.0.0.1:PORT]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *server, *stdio, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, server, stdio, addr string) error {
	var transport mcp.Transport
	if server != "" {
		transport = mcp.NewHTTPTransport(server)
	} else {
		args := strings.Fields(stdio)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr
		transport = mcp.NewCommandTransport(cmd)
	}
	client := mcp.NewClient(mcp.Implementation{Name: "apps-host-example", Version: "1.0.0"}, mcp.WithApps())
	if err := client.Connect(ctx, transport); err != nil {
		return err
	}
	defer client.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mcp.NewAppHost(client), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("MCP Apps host for %s at http://%s/\n", client.ServerInfo().Name, ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
