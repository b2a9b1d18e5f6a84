package mcp

import (
	"context"
	"testing"
	"time"
)

// TestReadingGoesOnWhileAHandlerRuns: over OS pipes, the goroutine that
// reads a request passes the reading on before it serves it, so a handler
// that waits for the peer's next request does not stop that request from
// being read and served.
func TestReadingGoesOnWhileAHandlerRuns(t *testing.T) {
	t.Parallel()
	started, released := make(chan struct{}), make(chan struct{})
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		close(started)
		select {
		case <-released:
			return &CallToolResult{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv.AddTool(Tool{Name: "release"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		close(released)
		return &CallToolResult{}, nil
	})
	ct, st := pipeTransports(t)
	cl := serveAndConnect(t, srv, ct, st, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		_, err := cl.CallTool(ctx, "wait", nil)
		waited <- err
	}()
	<-started
	if _, err := cl.CallTool(ctx, "release", nil); err != nil {
		t.Fatalf("release, sent while wait's handler runs: %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("wait: %v", err)
	}
}
