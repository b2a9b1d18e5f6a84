// Command server is an MCP Apps server (SEP-1865) on Streamable HTTP: a
// greeter whose tool opens an interactive view, an HTML form the host
// renders in a sandboxed iframe. The view's button calls back an app-only
// tool through the host, and shows the answer.
//
//	go run ./examples/apps/server                  # serves http://127.0.0.1:8080/mcp
//	go run ./examples/apps/server -addr 127.0.0.1:0 -allow-origin http://localhost:5173
//
// It prints the URL it serves once it listens and serves until interrupted.
// -allow-origin lets a host that runs as a web page of that origin call the
// server from the browser.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
)

// viewURI names the view; both tools link to it.
const viewURI = "ui://greeter/form.html"

// view holds the view's document, form.html: HTML, CSS and plain
// JavaScript that speaks the ui/* JSON-RPC with its host over postMessage.
//
//go:embed form.html
var view embed.FS

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen `address`")
	var origins []string
	flag.Func("allow-origin", "let web pages of this `origin` call the server (repeatable)", func(o string) error {
		origins = append(origins, o)
		return nil
	})
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		fmt.Printf("serving MCP Apps at http://%s/mcp\n", ln.Addr())
		err = serve(ctx, ln, origins...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apps server:", err)
		os.Exit(1)
	}
}

// serve serves the greeter at /mcp on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener, origins ...string) error {
	srv, err := newServer()
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, mcp.WithContext(ctx), mcp.WithAllowedOrigins(origins...)))
	httpServer := mcp.NewHTTPServer("", mux)
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// WithContext ended every session and stream with ctx; what is still
	// open after the grace period (a connection a client opened and never
	// used, say) is closed hard.
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(stopCtx); errors.Is(err, context.DeadlineExceeded) {
		httpServer.Close()
	} else if err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type openArgs struct {
	Name string `json:"name,omitempty" description:"Whom to greet first; the user can change it in the form."`
}

type greetArgs struct {
	Name string `json:"name" description:"Whom to greet." schema:"minLength=1,maxLength=100"`
}

// newServer returns the greeter: the view, open_greeter (the model's way
// in: it shows the form) and greet (the form's button, for the app only).
func newServer() (*mcp.Server, error) {
	srv := mcp.NewServer(mcp.Implementation{Name: "apps-greeter", Version: "1.0.0"})
	border := true
	if err := srv.AddAppView(mcp.AppView{
		URI:         viewURI,
		Name:        "greeter-form",
		Title:       "Greeter",
		Description: "A form that greets whoever the user names.",
		FS:          view,
		Path:        "form.html",
		// The form fetches nothing and embeds nothing: the default,
		// most restrictive sandbox suits it.
		Meta: mcp.AppViewMeta{PrefersBorder: &border},
	}); err != nil {
		return nil, err
	}

	// A host that renders views shows the form when the model calls this
	// tool, and hands the view the call's arguments and result; any other
	// client shows the result's text, which stands on its own.
	mcp.AddTool(srv, mcp.AppTool(mcp.Tool{Name: "open_greeter", Description: "Opens a form that greets people."}, viewURI, 0),
		func(ctx context.Context, req *mcp.CallToolRequest, in openArgs) (*mcp.CallToolResult, error) {
			text := "The greeter is open."
			if name := strings.TrimSpace(in.Name); name != "" {
				text = greeting(name)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}, nil
		})

	// The form's button calls this through the host. Visible to the app
	// only: the host keeps it from the model, and a client that does not
	// render views is not shown it at all.
	mcp.AddTool(srv, mcp.AppTool(mcp.Tool{Name: "greet", Description: "Greets someone by name."}, viewURI, mcp.AppVisibleToApp),
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(greeting(in.Name))}}, nil
		})
	return srv, nil
}

func greeting(name string) string { return "Hello, " + strings.TrimSpace(name) + "!" }
