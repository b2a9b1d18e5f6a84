// Command proxy serves another MCP server's tools, resources and prompts
// as its own: it connects to the upstream server as a client, registers
// each of its tools, resources, resource templates and prompts on a server
// of its own whose handlers forward to the upstream, and serves that
// server downstream. A call's arguments go up as they came, its progress
// comes back down to the caller, a caller that cancels (or times out)
// cancels the upstream call too, and an upstream failure reaches the
// caller as a tool error. When the upstream's lists change, the proxy's
// follow, and its clients are told.
//
//	proxy -- ./server -stdio                          # upstream: a child over stdio; downstream: stdio
//	proxy -upstream http://127.0.0.1:3000/mcp -http 127.0.0.1:3001
//
// With -http it serves Streamable HTTP at /mcp on that address and prints
// "serving MCP at <url>" to standard error once it listens; without, it
// serves its standard input and output, so that an MCP client can start it
// as it would start the upstream server itself.
//
// Left out, to stay small: the upstream's asks (elicitation, sampling,
// roots) are not passed to the downstream client, nor are resource
// subscriptions or log messages.
package main

import (
	"context"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	upstream := flag.String("upstream", "", "the upstream server's Streamable HTTP `url`; without it, the command after the flags is started and spoken to over stdio")
	listen := flag.String("http", "", "serve Streamable HTTP at `address` (path /mcp) instead of standard input and output")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: proxy [-http address] (-upstream url | -- command [args...])")
		flag.PrintDefaults()
	}
	flag.Parse()

	var t mcp.Transport
	switch {
	case *upstream != "" && flag.NArg() == 0:
		t = mcp.NewHTTPTransport(*upstream)
	case *upstream == "" && flag.NArg() > 0:
		t = mcp.NewCommandTransport(exec.Command(flag.Arg(0), flag.Args()[1:]...))
	default:
		flag.Usage()
		os.Exit(2)
	}
	// Standard output may be the MCP connection: log to standard error.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, t, *listen, logger); err != nil {
		logger.Error("proxy", "err", err)
		os.Exit(1)
	}
}

// run connects to the upstream over t and serves the proxy until ctx ends
// or, on stdio, the downstream client hangs up.
func run(ctx context.Context, t mcp.Transport, listen string, logger *slog.Logger) error {
	p, err := newProxy(ctx, t, logger)
	if err != nil {
		return fmt.Errorf("connecting to the upstream: %w", err)
	}
	defer p.Close()
	if listen == "" {
		return p.srv.Serve(ctx, mcp.StdioTransport())
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(p.srv, mcp.WithContext(ctx)))
	hs := mcp.NewHTTPServer("", mux)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "serving MCP at http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdown)
}

// proxy is a client of the upstream server and the server that mirrors it.
type proxy struct {
	up     *mcp.Client
	logger *slog.Logger

	mu  sync.Mutex // one sync at a time; guards what follows
	srv *mcp.Server
	// What the last sync of each list registered, by tool name, resource
	// URI, template or prompt name: what is missing from the next list is
	// removed.
	tools, resources, templates, prompts map[string]bool
}

// newProxy connects to the upstream over t and registers what it offers.
func newProxy(ctx context.Context, t mcp.Transport, logger *slog.Logger) (*proxy, error) {
	p := &proxy{logger: logger}
	p.up = mcp.NewClient(mcp.Implementation{Name: "proxy", Version: "1.0.0"},
		mcp.WithLogger(logger), // and a child's standard error
		mcp.WithToolListChangedHandler(p.follow("tools", p.syncTools)),
		mcp.WithResourceListChangedHandler(p.follow("resources", p.syncResources)),
		mcp.WithPromptListChangedHandler(p.follow("prompts", p.syncPrompts)))
	if err := p.up.Connect(ctx, t); err != nil {
		return nil, err
	}

	info := p.up.ServerInfo()
	opts := []mcp.ServerOption{mcp.WithInstructions(p.up.Instructions()), mcp.WithLogger(logger)}
	if p.up.ServerCapabilities().Completions != nil {
		opts = append(opts, mcp.WithCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return p.up.Complete(ctx, req.Params)
		}))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv = mcp.NewServer(mcp.Implementation{Name: info.Name + " (proxied)", Title: info.Title, Version: info.Version}, opts...)
	for _, sync := range []func(context.Context) error{p.syncTools, p.syncResources, p.syncPrompts} {
		if err := sync(ctx); err != nil {
			p.up.Close()
			return nil, err
		}
	}
	return p, nil
}

// Close disconnects from the upstream (and ends it, if it is a child).
func (p *proxy) Close() error { return p.up.Close() }

// follow returns a list-changed handler that syncs what changed.
func (p *proxy) follow(what string, sync func(context.Context) error) func(context.Context) {
	return func(ctx context.Context) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.srv == nil {
			return // not yet: newProxy syncs everything once it made the server
		}
		if err := sync(ctx); err != nil {
			p.logger.Warn("following the upstream's "+what, "err", err)
		}
	}
}

// syncTools registers each upstream tool with a handler that forwards the
// call, and removes those the upstream no longer lists. The sync methods
// run with p.mu held.
func (p *proxy) syncTools(ctx context.Context) error {
	if p.up.ServerCapabilities().Tools == nil {
		return nil
	}
	return mirror(ctx, p.logger, p.up.Tools(ctx), &p.tools,
		func(t *mcp.Tool) string { return t.Name },
		func(t *mcp.Tool) {
			tool := *t
			tool.Execution = nil // the proxy forwards calls, not tasks
			p.srv.AddTool(tool, p.forwardTool(t.Name))
		},
		func(names ...string) { p.srv.RemoveTools(names...) })
}

// syncResources mirrors the upstream's resources and resource templates.
func (p *proxy) syncResources(ctx context.Context) error {
	if p.up.ServerCapabilities().Resources == nil {
		return nil
	}
	err := mirror(ctx, p.logger, p.up.Resources(ctx), &p.resources,
		func(r *mcp.Resource) string { return r.URI },
		func(r *mcp.Resource) { p.srv.AddResource(*r, p.forwardRead) },
		func(uris ...string) { p.srv.RemoveResources(uris...) })
	if err != nil {
		return err
	}
	return mirror(ctx, p.logger, p.up.ResourceTemplates(ctx), &p.templates,
		func(t *mcp.ResourceTemplate) string { return t.URITemplate },
		func(t *mcp.ResourceTemplate) { p.srv.AddResourceTemplate(*t, p.forwardRead) },
		func(templates ...string) { p.srv.RemoveResourceTemplates(templates...) })
}

// syncPrompts mirrors the upstream's prompts.
func (p *proxy) syncPrompts(ctx context.Context) error {
	if p.up.ServerCapabilities().Prompts == nil {
		return nil
	}
	return mirror(ctx, p.logger, p.up.Prompts(ctx), &p.prompts,
		func(pr *mcp.Prompt) string { return pr.Name },
		func(pr *mcp.Prompt) { p.srv.AddPrompt(*pr, p.forwardPrompt) },
		func(names ...string) { p.srv.RemovePrompts(names...) })
}

// mirror reads a whole list (the iterator fetches its pages), adds each
// item and removes what *had, the last sync's keys, holds and the list does
// not. Adding an item that did not change announces nothing to the clients.
func mirror[T any](ctx context.Context, logger *slog.Logger, list iter.Seq2[*T, error], had *map[string]bool,
	key func(*T) string, add func(*T), remove func(...string)) error {
	seen := map[string]bool{}
	for item, err := range list {
		if err != nil {
			return err
		}
		if err := guard(func() { add(item) }); err != nil {
			// The registries panic on what the protocol forbids (a tool
			// name with a space, say): skip what the upstream got wrong.
			logger.Warn("skipping what the upstream offers", "key", key(item), "err", err)
			continue
		}
		seen[key(item)] = true
	}
	var gone []string
	for k := range *had {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	*had = seen
	return nil
}

// guard runs f and returns what it panicked with as an error.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// forwardTool returns the handler of the proxied tool name.
func (p *proxy) forwardTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args any // none
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments // sent up as the JSON it is
		}
		// ctx ends when the downstream client cancels the call or goes
		// away; the upstream call then ends too, and the upstream server
		// is told (notifications/cancelled).
		res, err := p.up.CallTool(ctx, name, args, mcp.WithProgress(func(pr mcp.Progress) {
			// Each upstream report goes down as it came. Progress does
			// nothing when the caller asked for none.
			req.Gateway().Progress(pr.Progress, pr.Total, pr.Message)
		}))
		if err != nil {
			// The call failed (the upstream is gone, refused the call,
			// timed out): the model reads why in a tool error.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.TextContent("upstream: " + err.Error())}}, nil
		}
		return res, nil // a tool error of the upstream stays one
	}
}

// forwardRead reads a resource, or a resource of a template, upstream.
func (p *proxy) forwardRead(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return p.up.ReadResource(ctx, req.Params.URI)
}

// forwardPrompt gets a prompt upstream.
func (p *proxy) forwardPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return p.up.GetPrompt(ctx, req.Params.Name, req.Params.Arguments)
}
