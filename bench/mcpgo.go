package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpgo drives github.com/mark3labs/mcp-go v1.6.0: typed tool handlers
// (mcp.NewTypedToolHandler, mcp.WithInputSchema), client.Client with
// Start and Initialize, the version pinned with client.WithProtocolVersion
// and InitializeRequest.Params.ProtocolVersion.
type mcpgo struct{}

func (mcpgo) Name() string { return "mcp-go" }

func (mcpgo) Notes() []string {
	return []string{
		"mcp-go: progress has no per-call callback; the token is set by hand (CallToolRequest.Params.Meta.ProgressToken) and one client-wide OnNotification handler picks out notifications/progress and routes by token through a sync.Map. On stdio that handler runs on the client's reader goroutine.",
		"mcp-go: the server sends progress with SendNotificationToClient, a non-blocking push into a 100-slot per-session queue; when it is full the notification is dropped (ErrNotificationChannelBlocked). The bench neither retries nor slows down: the drops show as 'delivered' below 10,000.",
		"mcp-go: the stdio server runs tools/call on a fixed pool of 5 workers (WithWorkerPoolSize, default 5) with a 100-slot queue; the bench keeps the default, which caps the 64 × sleep width on stdio and pipe.",
		"mcp-go: the pipe carrier is server.NewStdioServer(s).Listen over os.Pipe pairs with client transport.NewIO (its in-process client is a direct function call, not a pipe); the stdio server keeps its session in a package-level singleton, so only one pipe session runs at a time.",
		"mcp-go: 1,000 idle HTTP sessions use the default NewStreamableHTTPServer options (no WithSessionIdleTTL: idle sessions are never reclaimed).",
	}
}

func mcpgoServer() *server.MCPServer {
	s := server.NewMCPServer("bench", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithInputSchema[echoArgs]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(a.Text), nil
		}))
	s.AddTool(mcp.NewTool("sleep", mcp.WithInputSchema[sleepArgs]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, error) {
			if err := sleepFor(ctx, time.Duration(a.Ms)*time.Millisecond); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText("slept"), nil
		}))
	s.AddTool(mcp.NewTool("progress", mcp.WithInputSchema[progressArgs]()),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a progressArgs) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				tok := req.Params.Meta.ProgressToken
				srv := server.ServerFromContext(ctx)
				for i := 1; i <= a.Count; i++ {
					// A full queue drops the notification; see Notes.
					_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": tok, "progress": i, "total": a.Count,
					})
				}
			}
			return mcp.NewToolResultText("done"), nil
		}))
	return s
}

func (mcpgo) ServeStdio(ctx context.Context, version string) error {
	return server.ServeStdio(mcpgoServer())
}

func (mcpgo) LegacyHandler() (http.Handler, error) {
	return server.NewStreamableHTTPServer(mcpgoServer()), nil
}

type mcpgoSession struct {
	c       *client.Client
	routes  *sync.Map
	version string
	cleanup func()
}

func (mcpgo) Open(ctx context.Context, carrier, version string) (session, error) {
	var (
		c       *client.Client
		cleanup func()
		err     error
	)
	opts := []client.ClientOption{client.WithProtocolVersion(version)}
	switch carrier {
	case "pipe":
		p, perr := newPipePair()
		if perr != nil {
			return nil, perr
		}
		sctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() {
			defer close(served)
			server.NewStdioServer(mcpgoServer()).Listen(sctx, p.serverR, p.serverW)
		}()
		c = client.NewClient(transport.NewIO(p.clientR, p.clientW, nil), opts...)
		cleanup = func() {
			c.Close()
			p.clientW.Close()
			if !waitOr(served, 5*time.Second) {
				cancel()
				p.closeAll()
				<-served
			}
			cancel()
			p.closeAll()
		}
	case "stdio":
		prog, args, aerr := childArgs("mcp-go", version)
		if aerr != nil {
			return nil, aerr
		}
		c, err = client.NewStdioMCPClientWithOptions(prog, nil, args, transport.WithCommandStderrWriter(os.Stderr))
		if err != nil {
			return nil, err
		}
		cleanup = func() { c.Close() }
	case "http":
		ts := httptest.NewServer(server.NewStreamableHTTPServer(mcpgoServer()))
		c, err = client.NewStreamableHttpClient(ts.URL, transport.WithHTTPBasicClient(sharedHTTPClient))
		if err != nil {
			ts.Close()
			return nil, err
		}
		cleanup = func() {
			c.Close()
			ts.CloseClientConnections()
			ts.Close()
		}
	default:
		return nil, fmt.Errorf("unknown carrier %q", carrier)
	}
	if carrier != "pipe" {
		// The convenience constructors take no client options; pin here.
		client.WithProtocolVersion(version)(c)
	}
	routes := new(sync.Map)
	if err := c.Start(context.Background()); err != nil {
		cleanup()
		return nil, err
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		if tok, ok := n.Params.AdditionalFields["progressToken"].(string); ok {
			if f, ok := routes.Load(tok); ok {
				f.(func())()
			}
		}
	})
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		cleanup()
		return nil, err
	}
	return &mcpgoSession{c: c, routes: routes, version: c.ProtocolVersion(), cleanup: cleanup}, nil
}

func (s *mcpgoSession) Echo(ctx context.Context, text string) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": text}
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("echo: unexpected result %+v", res)
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "", errors.New("echo: not text")
	}
	return tc.Text, nil
}

func (s *mcpgoSession) Sleep(ctx context.Context, ms int) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = "sleep"
	req.Params.Arguments = map[string]any{"ms": ms}
	res, err := s.c.CallTool(ctx, req)
	if err == nil && res.IsError {
		err = errors.New("sleep: tool error")
	}
	return err
}

func (s *mcpgoSession) Progress(ctx context.Context, count int, onProgress func()) error {
	tok := newToken()
	s.routes.Store(tok, onProgress)
	req := mcp.CallToolRequest{}
	req.Params.Name = "progress"
	req.Params.Arguments = map[string]any{"count": count}
	req.Params.Meta = &mcp.Meta{ProgressToken: tok}
	res, err := s.c.CallTool(ctx, req)
	if err == nil && res.IsError {
		err = errors.New("progress: tool error")
	}
	return err
}

func (s *mcpgoSession) Version() string { return s.version }

func (s *mcpgoSession) Close() error {
	s.cleanup()
	return nil
}
