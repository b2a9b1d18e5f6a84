package mcpredis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// sharedInstance is one of several servers in this process that share a
// Redis: tasks, sessions, events and the broadcaster, as cmd/mcp-instance
// wires them.
func sharedInstance(t *testing.T, r *redisServer, opts ...mcp.ServerOption) *httptest.Server {
	t.Helper()
	c := r.client()
	bc := NewBroadcaster(c)
	t.Cleanup(func() { bc.Close() })
	srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"},
		append([]mcp.ServerOption{mcp.WithTasks(mcp.TaskOptions{Store: NewTaskStore(c)}), mcp.WithBroadcaster(bc)}, opts...)...)
	srv.AddTool(mcp.Tool{Name: "work", Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	ctx, cancel := context.WithCancel(context.Background())
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithContext(ctx),
		mcp.WithSessionStore(NewSessionStore(c)), mcp.WithEventStore(NewEventStore(c))))
	t.Cleanup(func() {
		cancel()
		hs.Close()
	})
	return hs
}

// switchProxy sends every request to the backend it currently points at.
type switchProxy struct{ to atomic.Pointer[url.URL] }

func (p *switchProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(p.to.Load()) }}
	rp.ServeHTTP(w, r)
}

// TestAnonymousTasksAcrossInstances: two instances share a Redis task store
// and session store. An anonymous 2025-11-25 session's task is its own on
// every instance: the same session reads it on the other instance, and
// another anonymous session, on either instance, cannot list, read or
// cancel it.
func TestAnonymousTasksAcrossInstances(t *testing.T) {
	r := startRedis(t)
	one, two := sharedInstance(t, r), sharedInstance(t, r)
	proxy := &switchProxy{}
	u1, _ := url.Parse(one.URL)
	u2, _ := url.Parse(two.URL)
	proxy.to.Store(u1)
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(url string) *mcp.Client {
		cl := mcp.NewClient(mcp.Implementation{Name: "c", Version: "1"}, mcp.WithProtocolVersion(mcp.Version20251125))
		if err := cl.Connect(ctx, mcp.NewHTTPTransport(url)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	owner := dial(front.URL)
	task, err := owner.StartTool(ctx, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := task.Task().ID
	proxy.to.Store(u2) // the owner's session goes on on instance two
	if got, err := owner.OpenTask(id).Get(ctx); err != nil || got.Status != mcp.TaskWorking {
		t.Fatalf("the owner's session on the other instance: %+v, %v", got, err)
	}
	if got, err := owner.ListTasks(ctx, ""); err != nil || len(got.Tasks) != 1 {
		t.Fatalf("the owner's session lists %+v, %v", got, err)
	}
	for _, in := range []string{one.URL, two.URL} {
		other := dial(in)
		if got, err := other.ListTasks(ctx, ""); err != nil || len(got.Tasks) != 0 {
			t.Fatalf("another session at %s lists %+v, %v", in, got, err)
		}
		if _, err := other.OpenTask(id).Get(ctx); err == nil {
			t.Fatalf("another session at %s reads the task", in)
		}
		if err := other.OpenTask(id).Cancel(ctx); err == nil {
			t.Fatalf("another session at %s cancels the task", in)
		}
	}
	if got, err := owner.OpenTask(id).Get(ctx); err != nil || got.Status != mcp.TaskWorking {
		t.Fatalf("the task after the others tried: %+v, %v", got, err)
	}
	if err := owner.OpenTask(id).Cancel(ctx); err != nil {
		t.Fatalf("the owner cancels: %v", err)
	}
}
