package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestErrorsSayMCPOnce: the errors the transports and the client return
// start with "mcp: " once, however many of the package's errors they wrap,
// and an error sent to the peer does not carry the prefix its *Error adds
// again; errors.Is and errors.As still find what is wrapped.
func TestErrorsSayMCPOnce(t *testing.T) {
	t.Parallel()
	once := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if s := err.Error(); !strings.HasPrefix(s, "mcp: ") || strings.Count(s, "mcp: ") != 1 {
			t.Errorf("%s: %s", what, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connect := func(tr Transport, opts ...ClientOption) error {
		return NewClient(Implementation{Name: "c", Version: "1"}, opts...).Connect(ctx, tr)
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }))
	defer failing.Close()
	for _, pin := range []string{"", Version20251125} {
		var opts []ClientOption
		if pin != "" {
			opts = append(opts, WithProtocolVersion(pin))
		}
		once(t, "HTTP to a closed port "+pin, connect(NewHTTPTransport("http://127.0.0.1:1/mcp"), opts...))
		once(t, "HTTP 404 "+pin, connect(NewHTTPTransport(notFound.URL), opts...))
		once(t, "HTTP 500 "+pin, connect(NewHTTPTransport(failing.URL), opts...))
		err := connect(NewHTTPTransport("://bad"), opts...)
		once(t, "a bad URL "+pin, err)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("a bad URL %s: %v does not wrap ErrClosed", pin, err)
		}
		once(t, "a child that exits "+pin, connect(NewCommandTransport(exec.Command("/bin/true")), opts...))
	}
	once(t, "SSE to a closed port", connect(NewSSETransport("http://127.0.0.1:1/sse")))
	once(t, "SSE 404", connect(NewSSETransport(notFound.URL)))
	once(t, "a missing command", connect(NewCommandTransport(exec.Command("/nonexistent/mcp-server"))))

	// A handler's error of the package, answered to the peer.
	srv := newTestServer()
	srv.AddPrompt(Prompt{Name: "closed"}, func(context.Context, *GetPromptRequest) (*GetPromptResult, error) {
		return nil, fmt.Errorf("%w: the store went away", ErrClosed)
	})
	cl := pair(t, srv)
	_, err := cl.GetPrompt(ctx, "closed", nil)
	once(t, "a handler's error", err)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Message != "connection closed: the store went away" {
		t.Errorf("a handler's error: %v", err)
	}

	// A handler's ask the client refused, as the handler sees it.
	asked := make(chan error, 1)
	srv2 := newTestServer()
	srv2.AddTool(Tool{Name: "ask"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, err := req.Gateway().ListRoots(ctx)
		asked <- err
		return &CallToolResult{}, nil
	})
	refusing := pair(t, srv2, WithProtocolVersion(Version20251125), WithRootsHandler(func(context.Context) ([]Root, error) {
		return nil, fmt.Errorf("%w: no roots today", ErrClosed)
	}))
	if _, err := refusing.CallTool(ctx, "ask", nil); err != nil {
		t.Fatal(err)
	}
	once(t, "an ask the client refused", <-asked)

	// A message too large, answered by the engine.
	p := rawServer(t, newTestServer(WithMaxMessageSize(64)))
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 100) + `"}}`)
	got := p.recv()
	if msg, _ := field(t, got, "error.message").(string); msg == "" || strings.HasPrefix(msg, "mcp: ") {
		t.Errorf("a message too large: %s", got)
	}

	// A call on a closed connection.
	cl.Close()
	_, err = cl.CallTool(ctx, "echo", nil)
	once(t, "a call after Close", err)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("a call after Close: %v does not wrap ErrClosed", err)
	}
}
