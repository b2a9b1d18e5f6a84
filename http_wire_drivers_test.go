package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The servers and the client drivers of the HTTP transcripts
// (http_wire_test.go).

// httpWireGate is what the transcripts' tools wait on, so that what they
// send comes at a point of the conversation, not of time.
type httpWireGate struct {
	once     sync.Once
	open     chan struct{} // opened by a resumption GET, or open_gate
	cause    chan string   // why hold's context ended
	finished chan struct{} // a task's result is stored
	finOnce  sync.Once
}

func (g *httpWireGate) release() { g.once.Do(func() { close(g.open) }) }

// httpWireTaskStore tells the gate when a task's result is stored.
type httpWireTaskStore struct {
	TaskStore
	g *httpWireGate
}

func (s httpWireTaskStore) PutResult(ctx context.Context, owner, id string, status TaskStatus, result json.RawMessage, e *Error) error {
	err := s.TaskStore.PutResult(ctx, owner, id, status, result, e)
	s.g.finOnce.Do(func() { close(s.g.finished) })
	return err
}

// newHTTPWireHandler is the handler a transcript's server: line names:
// the test server with the tools below; "tasks" adds tasks, "auth" an
// authorizer that lets in "Bearer wire-token".
func newHTTPWireHandler(ctx context.Context, profile string) http.Handler {
	g := &httpWireGate{open: make(chan struct{}), cause: make(chan string, 1), finished: make(chan struct{})}
	var opts []ServerOption
	if profile == "tasks" {
		opts = append(opts, WithTasks(TaskOptions{Store: httpWireTaskStore{NewMemoryTaskStore(0, 0), g}, PollInterval: 10 * time.Millisecond}))
	}
	srv := newTestServer(opts...)
	text := func(s string) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(s)}}, nil
	}
	// hold reports progress, then runs until cancelled; cancelled says
	// why, once it was.
	srv.AddTool(Tool{Name: "hold"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Gateway().Progress(1, 0, "holding")
		<-ctx.Done()
		g.cause <- context.Cause(ctx).Error()
		return nil, ctx.Err()
	})
	srv.AddTool(Tool{Name: "cancelled"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		select {
		case cause := <-g.cause:
			return text("cancelled: " + cause)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	// resumable reports progress, then waits for the client to resume
	// its stream before it goes on.
	srv.AddTool(Tool{Name: "resumable"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Gateway().Progress(1, 2, "")
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		req.Gateway().Progress(2, 2, "")
		return text("resumed")
	})
	// touch changes the tool list, which the server announces on the
	// standalone stream.
	srv.AddTool(Tool{Name: "touch"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		srv.AddTool(Tool{Name: "touched"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) { return text("") })
		return text("touched")
	})
	if profile == "tasks" {
		srv.AddTool(Tool{Name: "slow", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			select {
			case <-g.open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text("slow done")
		})
		srv.AddTool(Tool{Name: "open_gate"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			g.release()
			select {
			case <-g.finished:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text("opened")
		})
	}
	hopts := []HTTPHandlerOption{WithContext(ctx)}
	if profile == "auth" {
		hopts = append(hopts, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
			if r.Header.Get("Authorization") == "Bearer wire-token" {
				return "ada", nil
			}
			return "", errors.New("no valid bearer token")
		})))
	}
	h := NewHTTPHandler(srv, hopts...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			g.release()
		}
		h.ServeHTTP(w, r)
	})
}

// httpWireClient connects a client speaking version to url.
func httpWireClient(ctx context.Context, url, version string, opts []ClientOption, topts ...HTTPTransportOption) (*Client, error) {
	opts = append([]ClientOption{WithProtocolVersion(version)}, opts...)
	cl := NewClient(Implementation{Name: "wire", Version: "1"}, opts...)
	if err := cl.Connect(ctx, NewHTTPTransport(url, topts...)); err != nil {
		return nil, err
	}
	return cl, nil
}

// wantText checks a tool's result and its text.
func wantText(res *CallToolResult, err error, want string) error {
	if err != nil {
		return err
	}
	if len(res.Content) != 1 || res.Content[0].Text != want {
		return fmt.Errorf("result %+v, want the text %q", res.Content, want)
	}
	return nil
}

// httpWireSession runs f on a client of version connected to url, then
// closes it.
func httpWireSession(version string, f func(ctx context.Context, cl *Client) error, opts ...ClientOption) httpWireDriver {
	return func(ctx context.Context, t *testing.T, url string) error {
		cl, err := httpWireClient(ctx, url, version, opts)
		if err != nil {
			return err
		}
		err = f(ctx, cl)
		cl.Close()
		return err
	}
}

func httpWireProgress(version string) httpWireDriver {
	return httpWireSession(version, func(ctx context.Context, cl *Client) error {
		var reports []float64
		res, err := cl.CallTool(ctx, "progress", map[string]int{"steps": 2}, WithProgress(func(p Progress) { reports = append(reports, p.Progress) }))
		if err := wantText(res, err, "2 steps"); err != nil {
			return err
		}
		if fmt.Sprint(reports) != "[1 2]" {
			return fmt.Errorf("progress %v", reports)
		}
		return nil
	})
}

func httpWireElicitation(version string) httpWireDriver {
	answer := WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	return httpWireSession(version, func(ctx context.Context, cl *Client) error {
		res, err := cl.CallTool(ctx, "ask_elicitation", map[string]string{"message": "Your name?"})
		return wantText(res, err, `{"action":"accept","content":{"name":"Ada"}}`)
	}, answer)
}

// httpWireCancel cancels a call once it reported progress, then asks the
// server how the call ended.
func httpWireCancel(version, cause string) httpWireDriver {
	return httpWireSession(version, func(ctx context.Context, cl *Client) error {
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := cl.CallTool(callCtx, "hold", nil, WithProgress(func(Progress) { cancel() }))
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the cancelled call: %v", err)
		}
		res, err := cl.CallTool(ctx, "cancelled", nil)
		return wantText(res, err, "cancelled: "+cause)
	})
}

func httpWireTask(version string) httpWireDriver {
	return httpWireSession(version, func(ctx context.Context, cl *Client) error {
		task, err := cl.StartTool(ctx, "slow", nil)
		if err != nil {
			return err
		}
		if got, err := task.Get(ctx); err != nil || got.Status != TaskWorking {
			return fmt.Errorf("tasks/get: %+v, %v", got, err)
		}
		res, err := cl.CallTool(ctx, "open_gate", nil)
		if err := wantText(res, err, "opened"); err != nil {
			return err
		}
		res, err = task.Wait(ctx)
		return wantText(res, err, "slow done")
	}, WithTaskPolling(10*time.Millisecond, time.Millisecond))
}

// The client drivers, by transcript.
var httpWireDrivers = map[string]httpWireDriver{
	"legacy-session": httpWireSession(Version20251125, func(ctx context.Context, cl *Client) error {
		return cl.Ping(ctx)
	}),
	"legacy-2025-03-26-progress": httpWireProgress(Version20250326),
	"legacy-progress":            httpWireProgress(Version20251125),
	"legacy-elicitation":         httpWireElicitation(Version20251125),
	"legacy-cancel":              httpWireCancel(Version20251125, "mcp: request cancelled by the peer: The request was cancelled by the caller: context canceled"),
	"legacy-resume": httpWireSession(Version20251125, func(ctx context.Context, cl *Client) error {
		n := 0
		res, err := cl.CallTool(ctx, "resumable", nil, WithProgress(func(Progress) { n++ }))
		if err := wantText(res, err, "resumed"); err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("%d progress reports, want 2", n)
		}
		return nil
	}),
	"legacy-standalone": httpWireListChanged(Version20251125),
	"legacy-task":       httpWireTask(Version20251125),
	"legacy-auth": func(ctx context.Context, t *testing.T, url string) error {
		if cl, err := httpWireClient(ctx, url, Version20251125, nil); err == nil {
			cl.Close()
			return errors.New("connected without a token")
		}
		cl, err := httpWireClient(ctx, url, Version20251125, nil, WithHeader("Authorization", "Bearer wire-token"))
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.Ping(ctx)
	},
	"modern-call": httpWireSession(Version20260728, func(ctx context.Context, cl *Client) error {
		res, err := cl.CallTool(ctx, "echo", map[string]string{"text": "hi"})
		return wantText(res, err, `{"text":"hi"}`)
	}),
	"modern-progress":       httpWireProgress(Version20260728),
	"modern-input-required": httpWireElicitation(Version20260728),
	"modern-cancel":         httpWireCancel(Version20260728, "mcp: request cancelled by the peer: the client closed the HTTP stream"),
	"modern-task":           httpWireTask(Version20260728),
	"modern-listen":         httpWireListChanged(Version20260728),
}

// httpWireListChanged has the server change its tool list and waits for
// the client to hear of it.
func httpWireListChanged(version string) httpWireDriver {
	return func(ctx context.Context, t *testing.T, url string) error {
		changed := make(chan struct{}, 1)
		cl, err := httpWireClient(ctx, url, version, []ClientOption{WithToolListChangedHandler(func(context.Context) { changed <- struct{}{} })})
		if err != nil {
			return err
		}
		defer cl.Close()
		res, err := cl.CallTool(ctx, "touch", nil)
		if err := wantText(res, err, "touched"); err != nil {
			return err
		}
		select {
		case <-changed:
			return nil
		case <-ctx.Done():
			return errors.New("no tools/list_changed")
		}
	}
}
