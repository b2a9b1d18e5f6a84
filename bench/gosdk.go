package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gosdk drives github.com/modelcontextprotocol/go-sdk v1.8.0: typed
// mcp.AddTool handlers, ClientSession.CallTool, the version pinned with
// ClientSessionOptions.ProtocolVersion.
type gosdk struct{}

func (gosdk) Name() string { return "go-sdk" }

func (gosdk) Notes() []string {
	return []string{
		"go-sdk: progress has no per-call callback; the token is set by hand (CallToolParams.SetProgressToken) and one session-wide ClientOptions.ProgressNotificationHandler routes notifications to the call by token through a sync.Map.",
		"go-sdk: 2026-07-28 over HTTP needs StreamableHTTPOptions{Stateless: true}; a stateful handler answers server/discover with an unsupported-version error (PEERS.md §5.1). 2025-11-25 uses the default stateful handler.",
		"go-sdk: the pipe carrier uses mcp.IOTransport over os.Pipe pairs (the same framing as its NewInMemoryTransports, which uses net.Pipe); the server session is connected before the client, as its docs require.",
		"go-sdk: typed tools validate their input against the inferred schema before the handler runs (not switchable); ours and mcp-go do not validate in this bench.",
	}
}

func gosdkServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, req *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
		if err := sleepFor(ctx, time.Duration(a.Ms)*time.Millisecond); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a progressArgs) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		if tok != nil {
			for i := 1; i <= a.Count; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(a.Count)}); err != nil {
					return nil, nil, err
				}
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	return s
}

func (gosdk) ServeStdio(ctx context.Context, version string) error {
	return gosdkServer().Run(ctx, &mcp.StdioTransport{})
}

func (gosdk) LegacyHandler() (http.Handler, error) {
	srv := gosdkServer()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), nil
}

type gosdkSession struct {
	cs      *mcp.ClientSession
	routes  *sync.Map // progress token → func()
	cleanup func()
}

func (gosdk) Open(ctx context.Context, carrier, version string) (session, error) {
	routes := new(sync.Map)
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if tok, ok := r.Params.ProgressToken.(string); ok {
				if f, ok := routes.Load(tok); ok {
					f.(func())()
				}
			}
		},
	})
	opts := &mcp.ClientSessionOptions{ProtocolVersion: version}
	switch carrier {
	case "pipe":
		p, err := newPipePair()
		if err != nil {
			return nil, err
		}
		ss, err := gosdkServer().Connect(ctx, &mcp.IOTransport{Reader: p.serverR, Writer: p.serverW}, nil)
		if err != nil {
			p.closeAll()
			return nil, err
		}
		cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: p.clientR, Writer: p.clientW}, opts)
		if err != nil {
			ss.Close()
			p.closeAll()
			return nil, err
		}
		return &gosdkSession{cs: cs, routes: routes, cleanup: func() {
			cs.Close()
			ss.Wait()
		}}, nil
	case "stdio":
		cmd, err := childCommand("go-sdk", version)
		if err != nil {
			return nil, err
		}
		cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
		if err != nil {
			return nil, err
		}
		return &gosdkSession{cs: cs, routes: routes, cleanup: func() { cs.Close() }}, nil
	case "http":
		srv := gosdkServer()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: version >= "2026-07-28"})
		ts := httptest.NewServer(h)
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: sharedHTTPClient}, opts)
		if err != nil {
			ts.CloseClientConnections()
			ts.Close()
			return nil, err
		}
		return &gosdkSession{cs: cs, routes: routes, cleanup: func() {
			cs.Close()
			ts.CloseClientConnections()
			ts.Close()
		}}, nil
	}
	return nil, fmt.Errorf("unknown carrier %q", carrier)
}

func (s *gosdkSession) Echo(ctx context.Context, text string) (string, error) {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{Text: text}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("echo: unexpected result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", errors.New("echo: not text")
	}
	return tc.Text, nil
}

func (s *gosdkSession) Sleep(ctx context.Context, ms int) error {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: sleepArgs{Ms: ms}})
	if err == nil && res.IsError {
		err = errors.New("sleep: tool error")
	}
	return err
}

func (s *gosdkSession) Progress(ctx context.Context, count int, onProgress func()) error {
	tok := newToken()
	s.routes.Store(tok, onProgress)
	p := &mcp.CallToolParams{Name: "progress", Arguments: progressArgs{Count: count}}
	p.SetProgressToken(tok)
	res, err := s.cs.CallTool(ctx, p)
	if err == nil && res.IsError {
		err = errors.New("progress: tool error")
	}
	return err
}

func (s *gosdkSession) Version() string {
	if r := s.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

func (s *gosdkSession) Close() error {
	s.cleanup()
	return nil
}
