package mcp

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestLogsArriveBeforeTheCallReturns: the log messages a tool's handler
// sent before it returned have all reached the client's log handler when
// CallTool returns, on both eras, in memory, over OS pipes and over HTTP;
// and a log handler may itself make a call without waiting for itself.
func TestLogsArriveBeforeTheCallReturns(t *testing.T) {
	t.Parallel()
	const calls, logsPerCall = 200, 5
	carriers := map[string]func(t *testing.T, srv *Server, opts ...ClientOption) *Client{
		"memory": func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			ct, st := NewInMemoryTransports()
			return serveAndConnect(t, srv, ct, st, opts)
		},
		"pipe": func(t *testing.T, srv *Server, opts ...ClientOption) *Client {
			ct, st := pipeTransports(t)
			return serveAndConnect(t, srv, ct, st, opts)
		},
		"http": func(t *testing.T, srv *Server, opts ...ClientOption) *Client { return connectHTTP(t, srv, opts...) },
	}
	for name, connect := range carriers {
		for _, v := range []string{Version20251125, Version20260728} {
			t.Run(name+"/"+v, func(t *testing.T) {
				t.Parallel()
				srv := newTestServer()
				srv.AddTool(Tool{Name: "chatty"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
					for i := range logsPerCall {
						if err := req.Gateway().Log(LevelInfo, "chatty", i); err != nil {
							return nil, err
						}
					}
					return &CallToolResult{}, nil
				})
				var got atomic.Int64
				var cl *Client
				cl = connect(t, srv, WithProtocolVersion(v), WithLoggingMessageHandler(func(ctx context.Context, msg *LoggingMessageParams) {
					if got.Add(1) == 1 {
						// A call from the log handler, with its context:
						// it must not wait for this very handler.
						if _, err := cl.ListTools(ctx, ""); err != nil {
							t.Errorf("a call from the log handler: %v", err)
						}
					}
				}))
				ctx := context.Background()
				if err := cl.SetLoggingLevel(ctx, LevelDebug); err != nil {
					t.Fatal(err)
				}
				for i := range calls {
					if _, err := cl.CallTool(ctx, "chatty", nil); err != nil {
						t.Fatal(err)
					}
					if n, want := got.Load(), int64((i+1)*logsPerCall); n != want {
						t.Fatalf("call %d returned with %d log messages handled; want %d", i+1, n, want)
					}
				}
			})
		}
	}
}
