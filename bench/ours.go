package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/e6ac58cb/mcp"
)

// ours drives github.com/e6ac58cb/mcp: per-call progress with WithProgress,
// the version pinned with WithProtocolVersion on both sides.
type ours struct{}

func (ours) Name() string { return "ours" }

func (ours) Notes() []string { return nil }

// oursServer is the bench server: raw tool handlers that decode their
// arguments into the same structs the other SDKs' typed handlers use.
// extra adds server options (the -instances mode's shared stores).
func oursServer(version string, extra ...mcp.ServerOption) *mcp.Server {
	var opts []mcp.ServerOption
	if version != "" {
		opts = append(opts, mcp.WithProtocolVersion(version))
	}
	opts = append(opts, extra...)
	s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1.0.0"}, opts...)
	s.AddTool(mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a echoArgs
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(a.Text)}}, nil
	})
	s.AddTool(mcp.Tool{Name: "sleep"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a sleepArgs
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return nil, err
		}
		if err := sleepFor(ctx, time.Duration(a.Ms)*time.Millisecond); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("slept")}}, nil
	})
	s.AddTool(mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a progressArgs
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return nil, err
		}
		g := req.Gateway()
		for i := 1; i <= a.Count; i++ {
			if err := g.Progress(float64(i), float64(a.Count), ""); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
	})
	return s
}

func (ours) ServeStdio(ctx context.Context, version string) error {
	return oursServer(version).Serve(ctx, mcp.StdioTransport())
}

type oursSession struct {
	cl      *mcp.Client
	cleanup func()
}

func (ours) Open(ctx context.Context, carrier, version string) (session, error) {
	cl := mcp.NewClient(mcp.Implementation{Name: "bench", Version: "1.0.0"}, mcp.WithProtocolVersion(version))
	switch carrier {
	case "pipe":
		p, err := newPipePair()
		if err != nil {
			return nil, err
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			oursServer(version).Serve(context.Background(), mcp.NewIOTransport(p.serverR, p.serverW))
		}()
		if err := cl.Connect(ctx, mcp.NewIOTransport(p.clientR, p.clientW)); err != nil {
			p.closeAll()
			<-served
			return nil, err
		}
		return &oursSession{cl: cl, cleanup: func() {
			cl.Close()
			if !waitOr(served, 5*time.Second) {
				p.closeAll()
				<-served
			}
		}}, nil
	case "stdio":
		cmd, err := childCommand("ours", version)
		if err != nil {
			return nil, err
		}
		if err := cl.Connect(ctx, mcp.NewCommandTransport(cmd)); err != nil {
			return nil, err
		}
		return &oursSession{cl: cl, cleanup: func() { cl.Close() }}, nil
	case "http":
		h, err := oursHTTPHandler(oursServer(version))
		if err != nil {
			return nil, err
		}
		ts := httptest.NewServer(h)
		t, err := oursHTTPTransport(ts.URL)
		if err != nil {
			ts.Close()
			return nil, err
		}
		if err := cl.Connect(ctx, t); err != nil {
			ts.CloseClientConnections()
			ts.Close()
			return nil, err
		}
		return &oursSession{cl: cl, cleanup: func() {
			cl.Close()
			ts.CloseClientConnections()
			ts.Close()
		}}, nil
	}
	return nil, fmt.Errorf("unknown carrier %q", carrier)
}

func (ours) LegacyHandler() (http.Handler, error) {
	return oursHTTPHandler(oursServer(mcp.Version20251125))
}

func (s *oursSession) Echo(ctx context.Context, text string) (string, error) {
	res, err := s.cl.CallTool(ctx, "echo", echoArgs{Text: text})
	if err != nil {
		return "", err
	}
	if len(res.Content) != 1 {
		return "", errors.New("echo: no content")
	}
	return res.Content[0].Text, nil
}

func (s *oursSession) Sleep(ctx context.Context, ms int) error {
	_, err := s.cl.CallTool(ctx, "sleep", sleepArgs{Ms: ms})
	return err
}

func (s *oursSession) Progress(ctx context.Context, count int, onProgress func()) error {
	_, err := s.cl.CallTool(ctx, "progress", progressArgs{Count: count}, mcp.WithProgress(func(mcp.Progress) { onProgress() }))
	return err
}

func (s *oursSession) Version() string { return s.cl.ProtocolVersion() }

func (s *oursSession) Close() error {
	s.cleanup()
	return nil
}
