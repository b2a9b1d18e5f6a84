package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// taskRequestsPeer connects a 2025-11-25 client with opts to a scripted
// server and returns the client's initialize request too.
func taskRequestsPeer(t *testing.T, opts ...ClientOption) (*Client, *rawPeer, string) {
	t.Helper()
	ct, st := NewInMemoryTransports()
	return rawServerPeerInit(t, ct, st, opts...)
}

// listedIDs returns the task ids of a tasks/list response.
func listedIDs(t *testing.T, msg string) []string {
	t.Helper()
	var v struct {
		Result struct {
			Tasks []struct {
				TaskID string `json:"taskId"`
			} `json:"tasks"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(msg), &v); err != nil {
		t.Fatalf("not JSON: %s", msg)
	}
	var ids []string
	for _, task := range v.Result.Tasks {
		ids = append(ids, task.TaskID)
	}
	return ids
}

// elicitTask is a task-augmented elicitation/create with request id id.
func elicitTask(id, message, task string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"elicitation/create","params":{"message":"` + message + `","requestedSchema":{"type":"object","properties":{}},"task":` + task + `}}`
}

// recvResponse returns the response with id, passing over the status
// notifications the client sends meanwhile (their order against it is not
// the point).
func recvResponse(t *testing.T, p *rawPeer, id string) string {
	t.Helper()
	for {
		got := p.recv()
		if field(t, got, "method") == "notifications/tasks/status" {
			continue
		}
		if field(t, got, "id") != id {
			t.Fatalf("got %s, want the response to %s", got, id)
		}
		return got
	}
}

// TestTaskRequestsReceiver drives a client's receiver from a scripted
// 2025-11-25 server: the declared capability, a task-augmented elicitation
// answered with its task, tasks/get, tasks/list, tasks/result (which waits
// for the handler and answers exactly its result), a status notification,
// tasks/cancel (which ends the handler's context), a failed sampling task,
// and unknown ids.
func TestTaskRequestsReceiver(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ended := make(chan error, 1)
	_, p, init := taskRequestsPeer(t, WithTaskRequests(TaskRequestOptions{}),
		WithElicitationHandler(func(ctx context.Context, ep *ElicitParams) (*ElicitResult, error) {
			switch ep.Message {
			case "wait":
				select {
				case <-release:
					return &ElicitResult{Action: "accept", Content: map[string]any{"n": 7}}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			case "hang":
				<-ctx.Done()
				ended <- ctx.Err()
				return nil, ctx.Err()
			}
			return &ElicitResult{Action: "decline"}, nil
		}),
		WithSamplingHandler(func(ctx context.Context, _ *CreateMessageParams) (*CreateMessageResult, error) {
			return nil, &Error{Code: -1, Message: "user rejected sampling"}
		}))
	if caps, _ := json.Marshal(field(t, init, "params.capabilities.tasks")); !jsonEqual(string(caps),
		`{"list":{},"cancel":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}`) {
		t.Fatalf("capabilities: %s", init)
	}

	// A plain request is still answered at once.
	p.send(`{"jsonrpc":"2.0","id":"plain","method":"elicitation/create","params":{"message":"now","requestedSchema":{"type":"object","properties":{}}}}`)
	p.expect(`{"jsonrpc":"2.0","id":"plain","result":{"action":"decline"}}`)

	p.send(elicitTask("e1", "wait", `{"ttl":60000}`))
	got := p.recv()
	id, _ := field(t, got, "result.task.taskId").(string)
	if len(id) != 32 || field(t, got, "result.task.status") != "working" || field(t, got, "result.task.ttl") != 60000.0 {
		t.Fatalf("CreateTaskResult: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":"g1","method":"tasks/get","params":{"taskId":"` + id + `"}}`)
	if got = p.recv(); field(t, got, "result.taskId") != id || field(t, got, "result.status") != "working" {
		t.Fatalf("tasks/get: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":"l1","method":"tasks/list"}`)
	if got = p.recv(); !slices.Equal(listedIDs(t, got), []string{id}) || field(t, got, "result.nextCursor") != nil {
		t.Fatalf("tasks/list: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":"r1","method":"tasks/result","params":{"taskId":"` + id + `"}}`)
	close(release)
	status := p.recv()
	if field(t, status, "method") != "notifications/tasks/status" || field(t, status, "params.status") != "completed" {
		t.Fatalf("want the completed status first, got %s", status)
	}
	p.expect(`{"jsonrpc":"2.0","id":"r1","result":{"action":"accept","content":{"n":7},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}}`)

	// tasks/cancel ends the handler's context; the task stays cancelled.
	p.send(elicitTask("e2", "hang", `{}`))
	hang, _ := field(t, p.recv(), "result.task.taskId").(string)
	p.send(`{"jsonrpc":"2.0","id":"c1","method":"tasks/cancel","params":{"taskId":"` + hang + `"}}`)
	if got = recvResponse(t, p, "c1"); field(t, got, "result.status") != "cancelled" {
		t.Fatalf("tasks/cancel: %s", got)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context: %v", err)
	}
	p.send(`{"jsonrpc":"2.0","id":"c2","method":"tasks/cancel","params":{"taskId":"` + hang + `"}}`)
	if got = recvResponse(t, p, "c2"); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("cancelling a cancelled task: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":"r2","method":"tasks/result","params":{"taskId":"` + hang + `"}}`)
	if got = recvResponse(t, p, "r2"); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("tasks/result of a cancelled task: %s", got)
	}

	// A failed handler: tasks/result is exactly its error.
	p.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5,"task":{}}}`)
	sample, _ := field(t, recvResponse(t, p, "s1"), "result.task.taskId").(string)
	p.send(`{"jsonrpc":"2.0","id":"r3","method":"tasks/result","params":{"taskId":"` + sample + `"}}`)
	if got = recvResponse(t, p, "r3"); !strings.Contains(got, `"error":{"code":-1,"message":"user rejected sampling"}`) {
		t.Fatalf("tasks/result of a failed task: %s", got)
	}

	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		p.send(`{"jsonrpc":"2.0","id":"u","method":"` + m + `","params":{"taskId":"nope"}}`)
		if got = recvResponse(t, p, "u"); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s of an unknown task: %s", m, got)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":"l2","method":"tasks/list"}`)
	if got = recvResponse(t, p, "l2"); len(listedIDs(t, got)) != 3 || listedIDs(t, got)[2] != sample {
		t.Fatalf("tasks/list: %s", got)
	}
}

// TestTaskRequestsOff: without WithTaskRequests the client declares no
// tasks capability and serves no tasks/* method.
func TestTaskRequestsOff(t *testing.T) {
	t.Parallel()
	_, p, init := taskRequestsPeer(t, WithElicitationHandler(func(context.Context, *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: "decline"}, nil
	}))
	if field(t, init, "params.capabilities.tasks") != nil {
		t.Fatalf("capabilities: %s", init)
	}
	p.send(`{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"taskId":"x"}}`)
	if got := p.recv(); field(t, got, "error.code") != float64(CodeMethodNotFound) {
		t.Fatalf("tasks/get: %s", got)
	}
}

// TestTaskRequestsLimits: WithMaxTasks bounds the tasks a client holds
// (ended ones included), PageSize pages tasks/list, and MaxTTL caps
// a task's TTL: at its end the handler's context ends and the task is
// forgotten.
func TestTaskRequestsLimits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, p, _ := taskRequestsPeer(t, WithTaskRequests(TaskRequestOptions{MaxTasks: 2, PageSize: 1, MaxTTL: time.Minute}),
			WithElicitationHandler(func(ctx context.Context, ep *ElicitParams) (*ElicitResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}))
		var ids []string
		for i, ttl := range []string{`{"ttl":3600000}`, `{"ttl":30000}`} {
			p.send(elicitTask(fmt.Sprint("e", i), "x", ttl))
			got := p.recv()
			id, _ := field(t, got, "result.task.taskId").(string)
			if id == "" {
				t.Fatalf("create %d: %s", i, got)
			}
			ids = append(ids, id)
		}
		p.send(elicitTask("e2", "x", `{}`))
		if got := p.recv(); field(t, got, "error.code") != float64(CodeOverloaded) || !strings.Contains(got, "holds 2 tasks") {
			t.Fatalf("a task past the limit: %s", got)
		}
		p.send(`{"jsonrpc":"2.0","id":"l1","method":"tasks/list"}`)
		got := p.recv()
		if !slices.Equal(listedIDs(t, got), ids[:1]) || !strings.Contains(got, `"ttl":60000`) || field(t, got, "result.nextCursor") != ids[0] {
			t.Fatalf("page 1: %s", got)
		}
		p.send(`{"jsonrpc":"2.0","id":"l2","method":"tasks/list","params":{"cursor":"` + ids[0] + `"}}`)
		if got = p.recv(); !slices.Equal(listedIDs(t, got), ids[1:]) || field(t, got, "result.nextCursor") != nil {
			t.Fatalf("page 2: %s", got)
		}
		p.send(`{"jsonrpc":"2.0","id":"l3","method":"tasks/list","params":{"cursor":"bogus"}}`)
		if got = p.recv(); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("a bad cursor: %s", got)
		}
		// The second task's own TTL (30s) ends it first: its handler fails
		// on the deadline (a status notification says so), and then it is
		// forgotten.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got = p.recv(); field(t, got, "params.taskId") != ids[1] || field(t, got, "params.status") != "failed" {
			t.Fatalf("at the TTL: %s", got)
		}
		p.send(`{"jsonrpc":"2.0","id":"g1","method":"tasks/get","params":{"taskId":"` + ids[1] + `"}}`)
		if got = p.recv(); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("tasks/get past the TTL: %s", got)
		}
		// A slot is free again.
		p.send(elicitTask("e3", "x", `{}`))
		if got = p.recv(); field(t, got, "result.task.status") != "working" {
			t.Fatalf("a task after one expired: %s", got)
		}
	})
}

// TestTaskRequestsGoroutines: Close ends the handlers of the client's
// tasks and the tasks/result that waits on one; no goroutine outlives it.
func TestTaskRequestsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	ended := make(chan struct{}, 5)
	cl, p, _ := taskRequestsPeer(t, WithTaskRequests(TaskRequestOptions{}),
		WithElicitationHandler(func(ctx context.Context, _ *ElicitParams) (*ElicitResult, error) {
			<-ctx.Done()
			ended <- struct{}{}
			return nil, ctx.Err()
		}))
	var first string
	for i := range 5 {
		p.send(elicitTask(fmt.Sprint("e", i), "x", `{}`))
		id, _ := field(t, p.recv(), "result.task.taskId").(string)
		if first == "" {
			first = id
		}
	}
	p.send(`{"jsonrpc":"2.0","id":"r","method":"tasks/result","params":{"taskId":"` + first + `"}}`)
	cl.Close()
	for range 5 {
		<-ended
	}
	p.w.Close()
	settleGoroutines(t, before)
}

// TestTaskRequestsAgainstServer: our 2025-11-25 server's task tool elicits
// and samples through a client that declared task requests, in memory and
// over HTTP: each ask goes out task-augmented (with params.task and the
// related task on the wire in memory; the client created a task for it,
// and its status notifications reached the server), the answers
// arrive through tasks/result, and an ask the tool gives up on is
// cancelled on the client with tasks/cancel, which ends the client's
// handler context. In memory, the goroutines are back to their count after
// Close.
func TestTaskRequestsAgainstServer(t *testing.T) {
	for _, carrier := range []string{"memory", "http"} {
		t.Run(carrier, func(t *testing.T) {
			statuses := make(chan TaskStatus, 16)
			srv := NewServer(Implementation{Name: "s", Version: "1"}, WithTasks(TaskOptions{}),
				WithNotificationHandler("notifications/tasks/status", func(_ context.Context, params json.RawMessage) {
					task, err := decodeTask(params, false)
					if err != nil {
						t.Errorf("status notification: %v", err)
					}
					statuses <- task.Status
				}))
			started, ended := make(chan struct{}), make(chan error, 1)
			srv.AddTool(Tool{Name: "ask", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				g := req.Gateway()
				e, err := g.Elicit(ctx, "name?", nil)
				if err != nil {
					return nil, err
				}
				s, err := g.Sample(ctx, &CreateMessageParams{MaxTokens: 5, Messages: []SamplingMessage{{Role: "user", Content: SamplingContent{TextContent("hi")}}}})
				if err != nil {
					return nil, err
				}
				// An ask given up on once the client's handler runs.
				askCtx, cancel := context.WithCancel(ctx)
				go func() {
					<-started
					cancel()
				}()
				_, herr := g.Elicit(askCtx, "hang", nil)
				return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(e.Content["name"], " ", s.Content[0].Text, " ", errors.Is(herr, context.Canceled)))}}, nil
			})
			opts := []ClientOption{WithProtocolVersion(Version20251125), WithTaskRequests(TaskRequestOptions{}),
				WithTaskPolling(time.Millisecond, time.Millisecond),
				WithElicitationHandler(func(ctx context.Context, ep *ElicitParams) (*ElicitResult, error) {
					if ep.Message == "hang" {
						close(started)
						<-ctx.Done()
						ended <- ctx.Err()
						return nil, ctx.Err()
					}
					return &ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
				}),
				WithSamplingHandler(func(ctx context.Context, _ *CreateMessageParams) (*CreateMessageResult, error) {
					return &CreateMessageResult{Role: "assistant", Content: SamplingContent{TextContent("hello")}, Model: "m"}, nil
				})}
			var cl *Client
			var wire *recordingTransport
			before := runtime.NumGoroutine()
			if carrier == "memory" {
				ct, st := NewInMemoryTransports()
				go srv.Serve(context.Background(), st)
				wire = &recordingTransport{Transport: ct}
				cl = NewClient(Implementation{Name: "c", Version: "1"}, opts...)
				if err := cl.Connect(context.Background(), wire); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cl.Close() })
			} else {
				cl = connectHTTP(t, srv, opts...)
			}
			res, err := cl.CallTool(context.Background(), "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].Text; got != "ada hello true" {
				t.Fatalf("result %q", got)
			}
			if err := <-ended; !errors.Is(err, context.Canceled) {
				t.Fatalf("the client's handler context: %v", err)
			}
			cl.mu.Lock()
			recv := cl.recv
			cl.mu.Unlock()
			recv.mu.Lock()
			var got []TaskStatus
			for _, task := range recv.order {
				got = append(got, task.task.Status)
			}
			recv.mu.Unlock()
			if want := []TaskStatus{TaskCompleted, TaskCompleted, TaskCancelled}; !slices.Equal(got, want) {
				t.Fatalf("the client's tasks: %v, want %v", got, want)
			}
			if wire != nil {
				wire.mu.Lock()
				asks := 0
				for _, m := range wire.in {
					if strings.Contains(m, `"method":"elicitation/create"`) || strings.Contains(m, `"method":"sampling/createMessage"`) {
						asks++
						if !strings.Contains(m, `"task":{"ttl":3600000}`) || !strings.Contains(m, metaRelatedTask) {
							t.Errorf("an ask without the task param: %s", m)
						}
					}
				}
				wire.mu.Unlock()
				if asks != 3 {
					t.Errorf("%d asks on the wire, want 3", asks)
				}
			}
			// The two completed asks told the server so, each in a status
			// notification of its own.
			for completed := 0; completed < 2; {
				select {
				case s := <-statuses:
					if s == TaskCompleted {
						completed++
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the server saw %d completed statuses, want 2", completed)
				}
			}
			if wire != nil {
				cl.Close()
				settleGoroutines(t, before)
			}
		})
	}
}

// recordingTransport keeps the messages a client reads.
type recordingTransport struct {
	Transport
	mu sync.Mutex
	in []string
}

func (r *recordingTransport) ReadMessage() ([]byte, error) {
	m, err := r.Transport.ReadMessage()
	if err == nil {
		r.mu.Lock()
		r.in = append(r.in, string(m))
		r.mu.Unlock()
	}
	return m, err
}

// TestTaskRequestsHugeTTL: a server's task-augmented ask with a TTL too
// large for a Duration gets the client's TTL, not an overflow to a task
// that never expires.
func TestTaskRequestsHugeTTL(t *testing.T) {
	t.Parallel()
	_, p, _ := taskRequestsPeer(t, WithTaskRequests(TaskRequestOptions{MaxTTL: time.Minute}),
		WithElicitationHandler(func(ctx context.Context, ep *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: "decline"}, nil
		}))
	p.send(elicitTask("e1", "x", `{"ttl":9223372036854775807}`))
	if got := recvResponse(t, p, "e1"); field(t, got, "result.task.ttl") != 60000.0 {
		t.Fatalf("CreateTaskResult: %s", got)
	}
}
