package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The handlers of TestPanicsAreLoggedByDefault, named so that the logged
// stack can be checked for them.

func panickingTool(context.Context, *CallToolRequest) (*CallToolResult, error) {
	panic("tool boom")
}

func panickingPrompt(context.Context, *GetPromptRequest) (*GetPromptResult, error) {
	panic("prompt boom")
}

func panickingResource(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
	panic("resource boom")
}

func panickingMiddleware(next MethodHandler) MethodHandler {
	return func(ctx context.Context, req *Request) (json.RawMessage, error) {
		if req.Method == "ping" {
			panic("middleware boom")
		}
		return next(ctx, req)
	}
}

func panickingServerNotification(context.Context, json.RawMessage) { panic("server notification boom") }

func panickingClientNotification(context.Context, json.RawMessage) { panic("client notification boom") }

func panickingRoots(context.Context) ([]Root, error) { panic("roots boom") }

func panickingTaskTool(context.Context, *CallToolRequest) (*CallToolResult, error) {
	panic("task boom")
}

// recordTexts is a slog handler that sends each record, with its
// attributes, as one line of text.
type recordTexts chan string

func (r recordTexts) Enabled(context.Context, slog.Level) bool { return true }
func (r recordTexts) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r recordTexts) WithGroup(string) slog.Handler            { return r }
func (r recordTexts) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	select {
	case r <- b.String():
	default:
	}
	return nil
}

// TestPanicsAreLoggedByDefault: without WithLogger, a panic recovered from a
// handler is logged to slog.Default with its value and a stack naming the
// handler, on both peers, while the peer still gets -32603. Not parallel:
// it replaces slog.Default.
func TestPanicsAreLoggedByDefault(t *testing.T) {
	records := make(recordTexts, 64)
	old := slog.Default()
	slog.SetDefault(slog.New(records))
	defer slog.SetDefault(old)

	srv := newTestServer(WithTasks(TaskOptions{}), WithInboundMiddleware(panickingMiddleware),
		WithNotificationHandler("notifications/boom", panickingServerNotification))
	srv.AddTool(Tool{Name: "boom"}, panickingTool)
	srv.AddTool(Tool{Name: "task", Execution: &ToolExecution{TaskSupport: TaskRequired}}, panickingTaskTool)
	srv.AddPrompt(Prompt{Name: "boom"}, panickingPrompt)
	srv.AddResource(Resource{URI: "test://boom", Name: "boom"}, panickingResource)
	srv.AddTool(Tool{Name: "ask"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, err := req.Gateway().ListRoots(ctx)
		return nil, err
	})
	srv.AddTool(Tool{Name: "tell"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{}, req.Gateway().Notify("notifications/boom", nil)
	})
	cl := pair(t, srv, WithProtocolVersion(Version20251125), WithRootsHandler(panickingRoots),
		WithNotificationHandler("notifications/boom", panickingClientNotification))
	ctx := context.Background()

	internal := func(err error) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInternalError {
			t.Fatalf("want -32603, got %v", err)
		}
	}
	logged := func(value, fn string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case rec := <-records:
				if !strings.Contains(rec, "panic="+value) {
					continue
				}
				if !strings.Contains(rec, "mcp."+fn) {
					t.Fatalf("the stack does not name %s: %s", fn, rec)
				}
				return
			case <-deadline:
				t.Fatalf("no record of the panic %q", value)
			}
		}
	}

	_, err := cl.CallTool(ctx, "boom", nil)
	internal(err)
	logged("tool boom", "panickingTool")
	_, err = cl.CallTool(ctx, "task", nil)
	internal(err)
	logged("task boom", "panickingTaskTool")
	_, err = cl.GetPrompt(ctx, "boom", nil)
	internal(err)
	logged("prompt boom", "panickingPrompt")
	_, err = cl.ReadResource(ctx, "test://boom")
	internal(err)
	logged("resource boom", "panickingResource")
	internal(cl.Ping(ctx))
	logged("middleware boom", "panickingMiddleware")
	res, err := cl.CallTool(ctx, "ask", nil)
	if err == nil && !res.IsError {
		t.Fatal("the roots handler's panic was not an error")
	}
	logged("roots boom", "panickingRoots")
	if _, err := cl.CallTool(ctx, "tell", nil); err != nil {
		t.Fatal(err)
	}
	logged("client notification boom", "panickingClientNotification")

	p := rawServer(t, NewServer(Implementation{Name: "s", Version: "1"}, WithNotificationHandler("notifications/boom", panickingServerNotification)))
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","method":"notifications/boom"}`)
	logged("server notification boom", "panickingServerNotification")

	// With a logger given, the panic goes there and not to slog.Default.
	given := make(recordTexts, 64)
	srv2 := newTestServer(WithLogger(slog.New(given)))
	srv2.AddTool(Tool{Name: "boom"}, panickingTool)
	_, err = pair(t, srv2).CallTool(ctx, "boom", nil)
	internal(err)
	for found := false; !found; {
		select {
		case rec := <-given:
			found = strings.Contains(rec, "panic=tool boom")
		case <-time.After(10 * time.Second):
			t.Fatal("the given logger did not get the panic")
		}
	}
	select {
	case rec := <-records:
		t.Fatalf("slog.Default got a record with a logger given: %s", rec)
	default:
	}
}
