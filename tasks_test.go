package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTaskWire: a task is written with each revision's member names (ttl
// and pollInterval on 2025-11-25, ttlMs and pollIntervalMs on 2026-07-28),
// a TTL of no limit as null, times in UTC, and reads back the same; a task
// without its id, status or times is refused.
func TestTaskWire(t *testing.T) {
	created := time.Date(2026, 8, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	task := Task{ID: "t_9f2c", Status: TaskWorking, StatusMessage: "half", CreatedAt: created, LastUpdatedAt: created.Add(1500 * time.Millisecond), TTL: time.Hour, PollInterval: 2 * time.Second}
	for _, tc := range []struct {
		modern bool
		want   string
	}{
		{false, `{"taskId":"t_9f2c","status":"working","statusMessage":"half","createdAt":"2026-08-01T09:00:00.000Z","lastUpdatedAt":"2026-08-01T09:00:01.500Z","ttl":3600000,"pollInterval":2000}`},
		{true, `{"taskId":"t_9f2c","status":"working","statusMessage":"half","createdAt":"2026-08-01T09:00:00.000Z","lastUpdatedAt":"2026-08-01T09:00:01.500Z","ttlMs":3600000,"pollIntervalMs":2000}`},
	} {
		got := string(append(appendTaskMembers([]byte("{"), &task, tc.modern), '}'))
		if got != tc.want {
			t.Fatalf("modern %v:\n got %s\nwant %s", tc.modern, got, tc.want)
		}
		back, err := decodeTask([]byte(got), tc.modern)
		if err != nil {
			t.Fatal(err)
		}
		if !back.CreatedAt.Equal(task.CreatedAt) || !back.LastUpdatedAt.Equal(task.LastUpdatedAt) || back.ID != task.ID || back.Status != task.Status || back.StatusMessage != task.StatusMessage || back.TTL != task.TTL || back.PollInterval != task.PollInterval {
			t.Fatalf("modern %v: read back %+v, want %+v", tc.modern, back, task)
		}
		// The other revision's names are not this one's.
		other, err := decodeTask([]byte(got), !tc.modern)
		if err != nil || other.TTL != 0 || other.PollInterval != 0 {
			t.Fatalf("modern %v read as the other revision: %+v, %v", tc.modern, other, err)
		}
	}
	unlimited := Task{ID: "a", Status: TaskCompleted, CreatedAt: created, LastUpdatedAt: created}
	raw := append(appendTaskMembers([]byte("{"), &unlimited, true), '}')
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if v, ok := m["ttlMs"]; !ok || v != nil {
		t.Fatalf("no TTL is written as %v (present %v), want null: %s", v, ok, raw)
	}
	if _, ok := m["pollIntervalMs"]; ok {
		t.Fatalf("no poll interval is written: %s", raw)
	}
	// A peer's durations too large for a Duration are clamped, not
	// overflowed into negative ones.
	for _, modern := range []bool{false, true} {
		huge := `{"taskId":"a","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","ttl":9223372036854775807,"pollInterval":9223372036854775807,"ttlMs":9223372036854775807,"pollIntervalMs":9223372036854775807}`
		back, err := decodeTask([]byte(huge), modern)
		if err != nil || back.TTL < 290*365*24*time.Hour || back.PollInterval < 290*365*24*time.Hour {
			t.Fatalf("modern %v: huge durations read as %v and %v (%v)", modern, back.TTL, back.PollInterval, err)
		}
	}
	for _, bad := range []string{`{}`, `{"taskId":"a","status":"working","createdAt":"2026-08-01T10:00:00Z"}`, `{"taskId":"a","status":"working","createdAt":"yesterday","lastUpdatedAt":"2026-08-01T10:00:00Z"}`, `[]`} {
		if _, err := decodeTask([]byte(bad), true); err == nil {
			t.Errorf("decodeTask(%s) took it", bad)
		}
	}
	if !TaskCancelled.Terminal() || !TaskFailed.Terminal() || !TaskCompleted.Terminal() || TaskWorking.Terminal() || TaskInputRequired.Terminal() {
		t.Fatal("Terminal")
	}
}

// taskPairServer is a server with task tools: survey must run as a task,
// reports progress, asks the user twice, and answers with both answers;
// block runs until its context ends, then sends on ended (when not nil);
// the others answer at once.
func taskPairServer(ended chan<- struct{}) *Server {
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{PollInterval: time.Millisecond}))
	srv.AddTool(Tool{Name: "survey", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		g.Progress(1, 3, "asking")
		var got []string
		for _, q := range []string{"first", "second"} {
			res, err := g.Elicit(ctx, q, map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}})
			if err != nil {
				return nil, err
			}
			got = append(got, fmt.Sprint(res.Content["v"]))
		}
		return &CallToolResult{Content: []Content{TextContent(strings.Join(got, " "))}}, nil
	})
	srv.AddTool(Tool{Name: "quick", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("quick")}}, nil
	})
	srv.AddTool(Tool{Name: "tool_error", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{IsError: true, Content: []Content{TextContent("bad input")}}, nil
	})
	srv.AddTool(Tool{Name: "later", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("read later")}}, nil
	})
	srv.AddTool(Tool{Name: "block", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		<-ctx.Done()
		if ended != nil {
			ended <- struct{}{}
		}
		return nil, ctx.Err()
	})
	srv.AddTool(Tool{Name: "fails", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return nil, &Error{Code: CodeInvalidParams, Message: "no such report"}
	})
	return srv
}

// TestTasksClientAgainstServer: our client calls our server's task tools
// on both revisions, in memory, over a child process's stdio and over
// HTTP: CallTool on a tool that
// requires a task waits for it, the handler's asks reach the client's
// elicitation handler (live requests on 2025-11-25, the task's
// inputRequests on 2026-07-28), and the result comes back as if the call
// had been plain; a tool that may run as a task runs plainly unless the
// call asks; a task that fails with a protocol error gives *Error, one
// with a tool error its result; the ToolTask handle sees the task end; a
// task cancelled mid-run ends its handler's context; a task started
// before the client went away is read on a new connection on 2026-07-28,
// and is not on 2025-11-25, where an anonymous task is its session's.
func TestTasksClientAgainstServer(t *testing.T) {
	for _, version := range []string{Version20251125, Version20260728} {
		for _, carrier := range []string{"memory", "child", "http"} {
			t.Run(version+"/"+carrier, func(t *testing.T) {
				var asked atomic.Int32
				opts := []ClientOption{WithProtocolVersion(version), WithTaskPolling(time.Millisecond, time.Millisecond),
					WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
						n := asked.Add(1)
						return &ElicitResult{Action: "accept", Content: map[string]any{"v": fmt.Sprintf("%s-%d", p.Message, n)}}, nil
					})}
				ended := make(chan struct{}, 1)
				srv := taskPairServer(ended)
				var connect func() *Client // a new connection to the same server
				switch carrier {
				case "memory":
					connect = func() *Client { return pair(t, srv, opts...) }
				case "child":
					t.Setenv("MCP_TEST_SERVE_TASKPAIR", "1")
					srv, ended = nil, nil
					connect = func() *Client { return childServer(t, "", opts...) }
				default:
					ts := serveHTTP(t, srv)
					connect = func() *Client {
						cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, opts...)
						if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { cl.Close() })
						return cl
					}
				}
				cl := connect()
				ctx := context.Background()
				if _, err := cl.ListTools(ctx, ""); err != nil {
					t.Fatal(err)
				}
				// A tool that may run as a task runs plainly unless asked.
				if res, err := cl.CallTool(ctx, "quick", nil); err != nil || res.Content[0].Text != "quick" {
					t.Fatalf("an optional task tool called plainly: %v, %v", res, err)
				}
				if srv != nil {
					if n := srv.store.(*MemoryTaskStore).Len(); n != 0 {
						t.Fatalf("%d tasks after a plain call of an optional task tool", n)
					}
				}
				res, err := cl.CallTool(ctx, "survey", nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Content[0].Text; got != "first-1 second-2" || asked.Load() != 2 {
					t.Fatalf("result %q after %d asks, want \"first-1 second-2\" after 2", got, asked.Load())
				}
				_, err = cl.CallTool(ctx, "fails", nil, WithTask(time.Minute))
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams || rpcErr.Message != "no such report" {
					t.Fatalf("a failed task: %v, want the handler's *Error", err)
				}
				task, err := cl.StartTool(ctx, "survey", nil)
				if err != nil {
					t.Fatal(err)
				}
				if res, err = task.Wait(ctx); err != nil || res.Content[0].Text != "first-3 second-4" {
					t.Fatalf("ToolTask.Wait: %v, %v", res, err)
				}
				if got, err := task.Get(ctx); err != nil || got.Status != TaskCompleted {
					t.Fatalf("ToolTask.Get after Wait: %+v, %v", got, err)
				}

				// A tool error is the task's result, not a failure.
				if res, err = cl.CallTool(ctx, "tool_error", nil, WithTask(time.Minute)); err != nil || !res.IsError || res.Content[0].Text != "bad input" {
					t.Fatalf("a task with a tool error: %v, %v", res, err)
				}

				// Cancelled mid-run: the handler's context ends and the
				// task ends cancelled.
				if task, err = cl.StartTool(ctx, "block", nil); err != nil {
					t.Fatal(err)
				}
				if err := task.Cancel(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := task.Wait(ctx); !errors.Is(err, ErrTaskCancelled) {
					t.Fatalf("waiting on a cancelled task: %v, want ErrTaskCancelled", err)
				}
				if got, err := task.Get(ctx); err != nil || got.Status != TaskCancelled {
					t.Fatalf("a cancelled task: %+v, %v", got, err)
				}
				if ended != nil {
					<-ended
				}

				// The client goes away; on 2026-07-28 another connection
				// reads the task by its id. On 2025-11-25 an anonymous
				// task belongs to its session: a new one cannot read it.
				if carrier == "child" {
					return // the server goes with its process
				}
				if task, err = cl.StartTool(ctx, "later", nil); err != nil {
					t.Fatal(err)
				}
				cl.Close()
				res, err = connect().OpenTask(task.Task().ID).Wait(ctx)
				if version == Version20251125 {
					if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInvalidParams {
						t.Fatalf("another session's task read on a new connection: %v, %v", res, err)
					}
				} else if err != nil || res.Content[0].Text != "read later" {
					t.Fatalf("a task read on a new connection: %v, %v", res, err)
				}
			})
		}
	}
}

// FuzzTaskDurations: whatever ttl and poll interval a peer sends, a task's
// durations never come out negative: not as a client reads them from a
// server's task, nor as a 2025-11-25 server takes params.task.ttl, where
// the task gets at most the server's TTL.
func FuzzTaskDurations(f *testing.F) {
	for _, n := range []int64{0, -1, 1, 1000, 9223372036855, math.MaxInt64, math.MinInt64} {
		f.Add(n, n)
	}
	store := NewMemoryTaskStore(math.MaxInt32, math.MaxInt)
	store.SetMaxTasksPerOwner(math.MaxInt32) // every run's task is kept
	rig := newTaskRig(WithTasks(TaskOptions{TTL: time.Hour, Store: store, Lease: -1}))
	ct, st := NewInMemoryTransports()
	go rig.srv.Serve(context.Background(), st)
	p := &legacyPeer{rawPeer: newRawPeer(f, ct.(*IOTransport))}
	f.Cleanup(func() { p.w.Close() })
	p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
	id := 0
	f.Fuzz(func(t *testing.T, ttl, poll int64) {
		for _, modern := range []bool{false, true} {
			raw := fmt.Sprintf(`{"taskId":"a","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","ttl":%d,"pollInterval":%d,"ttlMs":%d,"pollIntervalMs":%d}`, ttl, poll, ttl, poll)
			task, err := decodeTask([]byte(raw), modern)
			if err != nil || task.TTL < 0 || task.PollInterval < 0 || (ttl > 0) != (task.TTL > 0) || (poll > 0) != (task.PollInterval > 0) {
				t.Fatalf("modern %v: ttl %d and poll %d read as %v and %v (%v)", modern, ttl, poll, task.TTL, task.PollInterval, err)
			}
		}
		id++
		p.rawPeer.t = t
		got := p.call(id, "tools/call", fmt.Sprintf(`"name":"rpc_error","arguments":{},"task":{"ttl":%d}`, ttl))
		if got, ok := field(t, got, "result.task.ttl").(float64); !ok || got <= 0 || got > 3600000 || (ttl > 0 && ttl < 3600000 && got != float64(ttl)) {
			t.Fatalf("params.task.ttl %d: the task's ttl is %v", ttl, got)
		}
	})
}
