package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// taskRig is a server whose task tools the test steers: work runs until
// released or cancelled, the others fail or ask for input.
type taskRig struct {
	srv      *Server
	release  chan struct{}
	ctxEnded chan struct{} // closed when the first work handler's context ends
	endOnce  sync.Once
}

func newTaskRig(opts ...ServerOption) *taskRig {
	r := &taskRig{release: make(chan struct{}), ctxEnded: make(chan struct{})}
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, append([]ServerOption{WithTasks(TaskOptions{})}, opts...)...)
	optional := &ToolExecution{TaskSupport: TaskOptional}
	required := &ToolExecution{TaskSupport: TaskRequired}
	srv.AddTool(Tool{Name: "sync"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("now")}}, nil
	})
	srv.AddTool(Tool{Name: "work", Execution: optional}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Gateway().Progress(1, 2, "halfway")
		select {
		case <-r.release:
			return &CallToolResult{Content: []Content{TextContent("done")}}, nil
		case <-ctx.Done():
			r.endOnce.Do(func() { close(r.ctxEnded) }) // several work tasks may end so
			return nil, ctx.Err()
		}
	})
	srv.AddTool(Tool{Name: "tool_error", Execution: required}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return nil, errors.New("boom")
	})
	srv.AddTool(Tool{Name: "rpc_error", Execution: optional}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return nil, &Error{Code: CodeInternalError, Message: "broke"}
	})
	srv.AddTool(Tool{Name: "ask_twice", Execution: optional}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		a, err := g.Elicit(ctx, "first?", nil, WithKey("a"))
		if err != nil {
			return nil, err
		}
		b, err := g.Elicit(ctx, "second?", nil, WithKey("b"))
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(a.Content["v"], b.Content["v"]))}}, nil
	})
	r.srv = srv
	return r
}

// taskCaps are the client capabilities of a request that declares the
// tasks extension.
const taskCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// modernCaller sends one 2026-07-28 request (params without braces or
// _meta; caps the clientCapabilities) and returns the response message.
type modernCaller func(id int, method, params, caps string) string

func taskRequest(id int, method, params, caps string) string {
	if params != "" {
		params += ","
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`, id, method, params, caps)
}

// memoryCaller calls srv over an in-memory connection.
func memoryCaller(t *testing.T, srv *Server) modernCaller {
	p := rawServer(t, srv)
	return func(id int, method, params, caps string) string {
		p.send(taskRequest(id, method, params, caps))
		return p.recv()
	}
}

// httpCaller calls srv over real loopback HTTP, each request on a fresh
// connection, as a client that came back after going away would. It
// sends the routing headers 2026-07-28 asks for.
func httpCaller(t *testing.T, srv *Server, principal string) modernCaller {
	ts := httptest.NewServer(NewHTTPHandler(srv, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
		return r.Header.Get("X-Who"), nil
	}))))
	t.Cleanup(ts.Close)
	return urlCaller(t, ts.URL, principal)
}

// modernPost is the POST of a 2026-07-28 request to url, with the headers
// the revision asks for.
func modernPost(url string, id int, method, params, caps string) *http.Request {
	req, _ := http.NewRequest("POST", url, strings.NewReader(taskRequest(id, method, params, caps)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	return req
}

// urlCaller calls the server at url as httpCaller does.
func urlCaller(t *testing.T, url, principal string) modernCaller {
	return func(id int, method, params, caps string) string {
		req := modernPost(url, id, method, params, caps)
		req.Header.Set("X-Who", principal)
		var named struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
		}
		json.Unmarshal([]byte("{"+params+"}"), &named)
		if n := named.Name + named.TaskID; n != "" {
			req.Header.Set("Mcp-Name", n)
		}
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			last := ""
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
					last = d
				}
			}
			return last
		}
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
}

// waitTask waits until the stored task id of principal satisfies ok,
// without polling: each change of a running task wakes it.
func waitTask(t *testing.T, srv *Server, id, principal string, ok func(*TaskRecord) bool) {
	t.Helper()
	if principal == "" {
		principal = taskOwnerOf(srv, id) // an anonymous session's own
	}
	timeout := time.After(10 * time.Second)
	for {
		var changed chan struct{}
		live := srv.tasks.find(id, principal)
		if live != nil {
			live.mu.Lock()
			changed = live.changed
			live.mu.Unlock()
		}
		rec, err := srv.store.Get(context.Background(), principal, id)
		if err == nil && ok(rec) {
			return
		}
		if live == nil {
			t.Fatalf("task %s ended as %+v (%v), not as wanted", id, rec, err)
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("task %s: %+v never got there", id, rec)
		}
	}
}

// asPrincipal makes every session of a server act for principal from its
// initialize on, as an authorizer would over HTTP: sessions of one
// principal share its tasks.
func asPrincipal(principal string) Option {
	return WithInboundMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (json.RawMessage, error) {
			if req.Method == "initialize" && req.Info != nil {
				req.Info.session.principal = principal
			}
			return next(ctx, req)
		}
	})
}

// taskOwnerOf returns the owner of task id, running or in srv's memory
// store; "" when there is none.
func taskOwnerOf(srv *Server, id string) string {
	srv.tasks.mu.Lock()
	t := srv.tasks.tasks[id]
	srv.tasks.mu.Unlock()
	if t != nil {
		return t.owner
	}
	if m, ok := srv.store.(*MemoryTaskStore); ok {
		m.mu.Lock()
		defer m.mu.Unlock()
		if st := m.tasks[id]; st != nil {
			return st.rec.Owner
		}
	}
	return ""
}

func hasStatus(s TaskStatus) func(*TaskRecord) bool {
	return func(r *TaskRecord) bool { return r.Status == s }
}

func isTerminal(r *TaskRecord) bool { return r.Status.Terminal() }

// startTask calls tool with the extension declared and returns the new
// task's id, checking the CreateTaskResult's shape.
func startTask(t *testing.T, call modernCaller, id int, tool string) string {
	t.Helper()
	got := call(id, "tools/call", `"name":"`+tool+`","arguments":{}`, taskCaps)
	if field(t, got, "result.resultType") != "task" || field(t, got, "result.status") != "working" {
		t.Fatalf("not a CreateTaskResult: %s", got)
	}
	for _, member := range []string{"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if field(t, got, "result."+member) == nil {
			t.Fatalf("CreateTaskResult without %s: %s", member, got)
		}
	}
	for _, member := range []string{"task", "ttl", "result", "requestState"} {
		if field(t, got, "result."+member) != nil {
			t.Fatalf("CreateTaskResult with %s: %s", member, got)
		}
	}
	return field(t, got, "result.taskId").(string)
}

// testModernTasks runs every 2026-07-28 task flow against rig through call,
// whose requests come from principal.
func testModernTasks(t *testing.T, rig *taskRig, call modernCaller, principal string) {
	get := func(id string) string {
		return call(90, "tasks/get", `"taskId":"`+id+`"`, taskCaps)
	}

	// Discovery advertises the extension.
	got := call(1, "server/discover", "", "{}")
	if field(t, got, "result.capabilities.extensions") == nil || !strings.Contains(got, `"`+TasksExtension+`":{}`) {
		t.Fatalf("server/discover does not advertise the extension: %s", got)
	}

	// A task that completes: working, with the handler's progress as its
	// status message, then completed with the result inlined.
	id := startTask(t, call, 2, "work")
	if len(id) < 32 {
		t.Fatalf("task id %q has fewer than 128 bits", id)
	}
	waitTask(t, rig.srv, id, principal, func(r *TaskRecord) bool { return r.StatusMessage == "halfway" })
	got = get(id)
	if field(t, got, "result.status") != "working" || field(t, got, "result.statusMessage") != "halfway" || field(t, got, "result.result") != nil {
		t.Fatalf("tasks/get of a working task: %s", got)
	}
	close(rig.release)
	waitTask(t, rig.srv, id, principal, hasStatus(TaskCompleted))
	got = get(id)
	if field(t, got, "result.resultType") != "complete" || field(t, got, "result.status") != "completed" ||
		!strings.Contains(got, `"result":{"content":[{"type":"text","text":"done"}]`) {
		t.Fatalf("tasks/get of a completed task: %s", got)
	}

	// A tool error completes the task with isError; a protocol error fails
	// it with the error and no result.
	id = startTask(t, call, 3, "tool_error")
	waitTask(t, rig.srv, id, principal, isTerminal)
	got = get(id)
	if field(t, got, "result.status") != "completed" || field(t, got, "result.result.isError") != true {
		t.Fatalf("tasks/get of a tool error: %s", got)
	}
	id = startTask(t, call, 4, "rpc_error")
	waitTask(t, rig.srv, id, principal, isTerminal)
	got = get(id)
	if field(t, got, "result.status") != "failed" || field(t, got, "result.error.code") != float64(CodeInternalError) || field(t, got, "result.result") != nil {
		t.Fatalf("tasks/get of a protocol error: %s", got)
	}

	// Cancelled mid-run: the ack is empty, the handler's context ends and
	// the task stays cancelled; cancelling again is the same ack.
	rig.release = make(chan struct{})
	id = startTask(t, call, 5, "work")
	for range 2 {
		got = call(6, "tasks/cancel", `"taskId":"`+id+`"`, taskCaps)
		if !jsonEqual(dropMeta(t, got), `{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete"}}`) {
			t.Fatalf("tasks/cancel: %s", got)
		}
	}
	<-rig.ctxEnded
	if got = get(id); field(t, got, "result.status") != "cancelled" {
		t.Fatalf("tasks/get of a cancelled task: %s", got)
	}

	// Input asked twice: each ask makes the task input_required with the
	// ask under its key; an answer resumes it; a key nobody asked for is
	// ignored.
	id = startTask(t, call, 7, "ask_twice")
	for i, key := range []string{"a", "b"} {
		waitTask(t, rig.srv, id, principal, func(r *TaskRecord) bool { _, ok := r.InputRequests[key]; return ok })
		got = get(id)
		if field(t, got, "result.status") != "input_required" || field(t, got, "result.inputRequests."+key+".method") != "elicitation/create" {
			t.Fatalf("ask %s: %s", key, got)
		}
		got = call(8, "tasks/update", `"taskId":"`+id+`","inputResponses":{"nobody":{},"`+key+`":{"action":"accept","content":{"v":`+fmt.Sprint(i+1)+`}}}`, taskCaps)
		if field(t, got, "result.resultType") != "complete" || field(t, got, "result.status") != nil {
			t.Fatalf("tasks/update: %s", got)
		}
	}
	waitTask(t, rig.srv, id, principal, hasStatus(TaskCompleted))
	if got = get(id); !strings.Contains(got, `"text":"1 2"`) || field(t, got, "result.inputRequests") != nil {
		t.Fatalf("the task did not resume with both answers: %s", got)
	}

	// Without the extension: an optional tool runs synchronously, a
	// required one is -32021 naming the extension, and tasks/* are -32021.
	got = call(9, "tools/call", `"name":"rpc_error","arguments":{}`, "{}")
	if field(t, got, "error.code") != float64(CodeInternalError) {
		t.Fatalf("an optional tool without the extension: %s", got)
	}
	got = call(10, "tools/call", `"name":"tool_error","arguments":{}`, "{}")
	if field(t, got, "error.code") != float64(CodeMissingRequiredClientCapability) || field(t, got, "error.data.requiredCapabilities.extensions") == nil {
		t.Fatalf("a required tool without the extension: %s", got)
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if got = call(11, m, `"taskId":"`+id+`"`, "{}"); field(t, got, "error.code") != float64(CodeMissingRequiredClientCapability) {
			t.Fatalf("%s without the extension: %s", m, got)
		}
	}
	// A synchronous tool stays synchronous with the extension.
	if got = call(12, "tools/call", `"name":"sync","arguments":{}`, taskCaps); field(t, got, "result.resultType") != "complete" {
		t.Fatalf("a synchronous tool: %s", got)
	}
	// tasks/result and tasks/list do not exist on 2026-07-28; an unknown
	// task is -32602.
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if got = call(13, m, `"taskId":"`+id+`"`, taskCaps); field(t, got, "error.code") != float64(CodeMethodNotFound) {
			t.Fatalf("%s: %s", m, got)
		}
	}
	if got = call(14, "tasks/get", `"taskId":"nope"`, taskCaps); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("an unknown task: %s", got)
	}
}

// dropMeta removes result._meta, which carries the server's info.
func dropMeta(t *testing.T, msg string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatalf("not JSON: %s", msg)
	}
	if r, ok := m["result"].(map[string]any); ok {
		delete(r, "_meta")
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestTasksModernMemory: every 2026-07-28 task flow over an in-memory
// connection, from a raw scripted client.
func TestTasksModernMemory(t *testing.T) {
	rig := newTaskRig()
	testModernTasks(t, rig, memoryCaller(t, rig.srv), "")
}

// TestTasksModernHTTP: the same flows over loopback HTTP, each request on
// a new connection, so every read of a task comes after the client that
// created it went away. A task is bound to its principal: another one
// finds it unknown.
func TestTasksModernHTTP(t *testing.T) {
	rig := newTaskRig()
	testModernTasks(t, rig, httpCaller(t, rig.srv, "alice"), "alice")

	mallory := httpCaller(t, rig.srv, "mallory")
	alice := httpCaller(t, rig.srv, "alice")
	id := startTask(t, alice, 1, "tool_error")
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if got := mallory(2, m, `"taskId":"`+id+`"`, taskCaps); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s by another principal: %s", m, got)
		}
	}
	// Mcp-Name must name the task.
	got := alice(3, "tasks/get", `"taskId":"`+id+`","name":"x"`, taskCaps)
	if field(t, got, "error.code") != float64(CodeHeaderMismatch) {
		t.Fatalf("Mcp-Name other than the task id: %s", got)
	}
}

// TestTaskPreflight: a preflight's asks are a synchronous input_required
// round before the task exists; answered, the task starts and its handler
// sees the answer.
func TestTaskPreflight(t *testing.T) {
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{}))
	ask := func(ctx context.Context, req *CallToolRequest) (*ElicitResult, error) {
		return req.Gateway().Elicit(ctx, "name?", nil, WithKey("user_name"))
	}
	srv.AddTool(Tool{Name: "t", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := ask(ctx, req)
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint("hi ", res.Content["name"]))}}, nil
	})
	srv.SetTaskPreflight("t", func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, err := ask(ctx, req)
		return nil, err
	})
	call := memoryCaller(t, srv)
	got := call(1, "tools/call", `"name":"t","arguments":{}`, taskCaps)
	if field(t, got, "result.resultType") != "input_required" || field(t, got, "result.inputRequests.user_name") == nil || field(t, got, "result.taskId") != nil {
		t.Fatalf("round one: %s", got)
	}
	got = call(2, "tools/call", `"name":"t","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}}`, taskCaps)
	if field(t, got, "result.resultType") != "task" || field(t, got, "result.requestState") != nil {
		t.Fatalf("round two: %s", got)
	}
	id := field(t, got, "result.taskId").(string)
	waitTask(t, srv, id, "", hasStatus(TaskCompleted))
	if got = call(3, "tasks/get", `"taskId":"`+id+`"`, taskCaps); !strings.Contains(got, "hi Alice") {
		t.Fatalf("the task did not see the preflight's answer: %s", got)
	}
}

// TestTaskTTL: a task, its result included, is kept for its TTL and no
// longer; a task still running when its TTL ends has its context ended.
func TestTaskTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newTaskRig(WithTasks(TaskOptions{TTL: time.Minute, PollInterval: -1}))
		ct, st := NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- rig.srv.Serve(context.Background(), st) }()
		p := newRawPeer(t, ct.(*IOTransport))
		call := func(id int, method, params string) string {
			p.send(taskRequest(id, method, params, taskCaps))
			return p.recv()
		}
		got := call(1, "tools/call", `"name":"tool_error","arguments":{}`)
		if field(t, got, "result.ttlMs") != float64(60000) || field(t, got, "result.pollIntervalMs") != nil {
			t.Fatalf("CreateTaskResult: %s", got)
		}
		done := field(t, got, "result.taskId").(string)
		running := field(t, call(2, "tools/call", `"name":"work","arguments":{}`), "result.taskId").(string)

		time.Sleep(time.Minute - time.Millisecond)
		synctest.Wait()
		if got = call(3, "tasks/get", `"taskId":"`+done+`"`); field(t, got, "result.status") != "completed" {
			t.Fatalf("just before its TTL: %s", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		for _, id := range []string{done, running} {
			if got = call(4, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
				t.Fatalf("after its TTL: %s", got)
			}
		}
		<-rig.ctxEnded
		if n, m := rig.srv.tasks.len(), rig.srv.store.(*MemoryTaskStore).Len(); n != 0 || m != 0 {
			t.Fatalf("%d tasks running and %d stored after their TTL", n, m)
		}
		p.w.Close()
		<-served
	})
}

// legacyPeer is a raw 2025-11-25 client: it keeps the notifications that
// arrive while it waits for a response.
type legacyPeer struct {
	*rawPeer
	notes []string
}

// call sends a request and returns its response.
func (p *legacyPeer) call(id int, method, params string) string {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, params))
	return p.response(id)
}

// response returns the response to request id, keeping what came before.
func (p *legacyPeer) response(id int) string {
	p.t.Helper()
	for {
		got := p.recv()
		if field(p.t, got, "method") == nil && field(p.t, got, "id") == float64(id) {
			return got
		}
		p.notes = append(p.notes, got)
	}
}

// next returns the next message that is not a response, kept or new.
func (p *legacyPeer) next() string {
	p.t.Helper()
	if len(p.notes) > 0 {
		got := p.notes[0]
		p.notes = p.notes[1:]
		return got
	}
	return p.recv()
}

// TestTasksLegacy: the 2025-11-25 experimental tasks over an in-memory
// connection, from a raw scripted client: the capability, task-augmented
// tools/call, tasks/get, tasks/result (waiting, then exactly the result or
// the error), tasks/list by pages, tasks/cancel, status notifications, and
// a task's asks as live requests carrying the related task.
func TestTasksLegacy(t *testing.T) {
	rig := newTaskRig(WithPageSize(2))
	p := &legacyPeer{rawPeer: rawServer(t, rig.srv)}
	got := p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}`)
	if !jsonEqual(fmt.Sprint(toJSON(field(t, got, "result.capabilities.tasks"))), legacyTasksCapability) || field(t, got, "result.capabilities.extensions") != nil {
		t.Fatalf("initialize: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got = p.call(1, "tools/list", ``); !strings.Contains(got, `"execution":{"taskSupport":"optional"}`) {
		t.Fatalf("tools/list: %s", got)
	}

	// Required without params.task is -32601; optional without it runs
	// synchronously.
	if got = p.call(2, "tools/call", `"name":"tool_error","arguments":{}`); field(t, got, "error.code") != float64(CodeMethodNotFound) {
		t.Fatalf("a required tool without a task: %s", got)
	}
	if got = p.call(3, "tools/call", `"name":"rpc_error","arguments":{}`); field(t, got, "error.code") != float64(CodeInternalError) {
		t.Fatalf("an optional tool without a task: %s", got)
	}

	start := func(id int, tool string) string {
		t.Helper()
		got := p.call(id, "tools/call", `"name":"`+tool+`","arguments":{},"task":{"ttl":60000}`)
		if field(t, got, "result.task.status") != "working" || field(t, got, "result.task.ttl") != float64(60000) || field(t, got, "result.content") != nil {
			t.Fatalf("CreateTaskResult: %s", got)
		}
		return field(t, got, "result.task.taskId").(string)
	}

	// A task that completes: tasks/get while working, tasks/result waits
	// for the end and gives the result with the related task.
	id := start(4, "work")
	waitTask(t, rig.srv, id, "", func(r *TaskRecord) bool { return r.StatusMessage == "halfway" })
	if got = p.call(5, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "result.status") != "working" || field(t, got, "result.statusMessage") != "halfway" {
		t.Fatalf("tasks/get: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","id":6,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
	close(rig.release)
	got = p.response(6)
	if field(t, got, "result.content") == nil || !strings.Contains(got, `"`+metaRelatedTask+`":{"taskId":"`+id+`"}`) {
		t.Fatalf("tasks/result: %s", got)
	}

	// A tool error is the result; a protocol error is tasks/result's error.
	id = start(7, "tool_error")
	if got = p.call(8, "tasks/result", `"taskId":"`+id+`"`); field(t, got, "result.isError") != true {
		t.Fatalf("tasks/result of a tool error: %s", got)
	}
	id = start(9, "rpc_error")
	if got = p.call(10, "tasks/result", `"taskId":"`+id+`"`); field(t, got, "error.code") != float64(CodeInternalError) || field(t, got, "error.message") != "broke" {
		t.Fatalf("tasks/result of a protocol error: %s", got)
	}

	// Cancelled mid-run: tasks/cancel returns the cancelled task, the
	// handler's context ends; cancelling it again is -32602.
	rig.release = make(chan struct{})
	id = start(11, "work")
	if got = p.call(12, "tasks/cancel", `"taskId":"`+id+`"`); field(t, got, "result.status") != "cancelled" || field(t, got, "result.taskId") != id {
		t.Fatalf("tasks/cancel: %s", got)
	}
	<-rig.ctxEnded
	if got = p.call(13, "tasks/cancel", `"taskId":"`+id+`"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("cancelling an ended task: %s", got)
	}

	// A task's asks are live requests that name the task; it is
	// input_required while it waits.
	id = start(14, "ask_twice")
	for i := range 2 {
		var ask string
		for ask = p.next(); field(t, ask, "method") != "elicitation/create"; ask = p.next() {
		}
		if !strings.Contains(ask, `"`+metaRelatedTask+`":{"taskId":"`+id+`"}`) {
			t.Fatalf("an ask without its task: %s", ask)
		}
		rec, _ := rig.srv.store.Get(context.Background(), taskOwnerOf(rig.srv, id), id)
		if rec.Status != TaskInputRequired {
			t.Fatalf("status while asking: %s", rec.Status)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"v":%d}}}`, toJSON(field(t, ask, "id")), i+1))
	}
	if got = p.call(15, "tasks/result", `"taskId":"`+id+`"`); !strings.Contains(got, `"text":"1 2"`) {
		t.Fatalf("tasks/result after two asks: %s", got)
	}

	// Every status change was notified; the last of this task's is
	// completed.
	last := ""
	for _, n := range p.notes {
		if field(t, n, "method") == "notifications/tasks/status" && field(t, n, "params.taskId") == id {
			last = field(t, n, "params.status").(string)
		}
	}
	if last != "completed" {
		t.Fatalf("the last status notification of %s: %q in %q", id, last, p.notes)
	}

	// tasks/list: the caller's tasks, a page of two at a time.
	seen := 0
	cursor := ""
	for page := 16; ; page++ {
		params := ""
		if cursor != "" {
			params = `"cursor":"` + cursor + `"`
		}
		got = p.call(page, "tasks/list", params)
		tasks, _ := field(t, got, "result.tasks").([]any)
		seen += len(tasks)
		next, _ := field(t, got, "result.nextCursor").(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if seen != 5 {
		t.Fatalf("tasks/list listed %d tasks, want 5", seen)
	}
	if got = p.call(30, "tasks/list", `"cursor":"bogus"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("a bogus cursor: %s", got)
	}
	if got = p.call(31, "tasks/get", `"taskId":"nope"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("an unknown task: %s", got)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTasksLegacyHTTP: a 2025-11-25 task over a Streamable HTTP session is
// created, then read on new connections after the client went away: the
// task outlives the POST that created it. Another principal cannot see it.
func TestTasksLegacyHTTP(t *testing.T) {
	rig := newTaskRig()
	ts := httptest.NewServer(NewHTTPHandler(rig.srv, WithAuthorizer(AuthorizerFunc(func(r *http.Request) (string, error) {
		return r.Header.Get("X-Who"), nil
	}))))
	t.Cleanup(ts.Close)
	session := ""
	post := func(who, body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Who", who)
		if session != "" {
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			req.Header.Set("Mcp-Session-Id", session)
		}
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if id := res.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		b, _ := io.ReadAll(res.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
				return d
			}
		}
		return string(b)
	}
	post("alice", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	post("alice", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got := post("alice", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"task":{}}}`)
	id, _ := field(t, got, "result.task.taskId").(string)
	if id == "" {
		t.Fatalf("CreateTaskResult: %s", got)
	}
	if got = post("alice", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+id+`"}}`); field(t, got, "result.status") != "working" {
		t.Fatalf("tasks/get after the creating POST ended: %s", got)
	}
	if got = post("mallory", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"`+id+`"}}`); field(t, got, "result") != nil {
		t.Fatalf("another principal read the task: %s", got)
	}
	close(rig.release)
	if got = post("alice", `{"jsonrpc":"2.0","id":5,"method":"tasks/result","params":{"taskId":"`+id+`"}}`); !strings.Contains(got, `"text":"done"`) {
		t.Fatalf("tasks/result: %s", got)
	}
}

// TestTaskNotificationsListen: a 2026-07-28 listen stream with taskIds
// carries notifications/tasks for the requester's tasks it names, each the
// task as tasks/get reports it; ids of no task of the requester are not
// honoured.
func TestTaskNotificationsListen(t *testing.T) {
	rig := newTaskRig()
	p := rawServer(t, rig.srv)
	p.send(taskRequest(1, "tools/call", `"name":"work","arguments":{}`, taskCaps))
	id := field(t, p.recv(), "result.taskId").(string)
	waitTask(t, rig.srv, id, "", func(r *TaskRecord) bool { return r.StatusMessage == "halfway" })

	p.send(taskRequest(2, "subscriptions/listen", `"notifications":{"taskIds":["`+id+`","nope"]}`, taskCaps))
	ack := p.recv()
	if field(t, ack, "method") != "notifications/subscriptions/acknowledged" || toJSON(field(t, ack, "params.notifications.taskIds")) != `["`+id+`"]` {
		t.Fatalf("acknowledged: %s", ack)
	}
	close(rig.release)
	got := p.recv()
	if field(t, got, "method") != "notifications/tasks" || field(t, got, "params.taskId") != id || field(t, got, "params.status") != "completed" ||
		!strings.Contains(got, `"result":{"content":[{"type":"text","text":"done"}]`) || !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":2`) {
		t.Fatalf("notifications/tasks: %s", got)
	}

	// Without the extension declared, taskIds are not honoured.
	p.send(taskRequest(3, "subscriptions/listen", `"notifications":{"taskIds":["`+id+`"]}`, "{}"))
	if ack = p.recv(); field(t, ack, "params.notifications.taskIds") != nil {
		t.Fatalf("taskIds honoured without the extension: %s", ack)
	}
}

// BenchmarkTaskRoundTrip gives the cost of a task round trip, created,
// completed and read with tasks/result, beside the same call made plainly,
// on a 2025-11-25 session over an in-memory connection.
func BenchmarkTaskRoundTrip(b *testing.B) {
	// A store that never fills: every task of the run is kept for its TTL.
	srv := NewServer(Implementation{Name: "bench", Version: "1"}, WithTasks(TaskOptions{Store: NewMemoryTaskStore(1<<30, math.MaxInt)}))
	srv.AddTool(Tool{Name: "echo", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("hello")}}, nil
	})
	ct, st := NewInMemoryTransports()
	go srv.Serve(context.Background(), st)
	cl := NewClient(Implementation{Name: "bench", Version: "1"}, WithProtocolVersion(Version20251125))
	ctx := context.Background()
	if err := cl.Connect(ctx, ct); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	call := map[string]any{"name": "echo", "arguments": map[string]any{}}
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var res CallToolResult
			if err := cl.SendRequest(ctx, "tools/call", call, &res); err != nil || len(res.Content) != 1 {
				b.Fatal(res, err)
			}
		}
	})
	asTask := map[string]any{"name": "echo", "arguments": map[string]any{}, "task": map[string]any{}}
	b.Run("task", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var created struct {
				Task struct {
					TaskID string `json:"taskId"`
				} `json:"task"`
			}
			if err := cl.SendRequest(ctx, "tools/call", asTask, &created); err != nil {
				b.Fatal(err)
			}
			var res CallToolResult
			if err := cl.SendRequest(ctx, "tasks/result", map[string]any{"taskId": created.Task.TaskID}, &res); err != nil || len(res.Content) != 1 {
				b.Fatal(res, err)
			}
		}
	})
}

// TestTaskPanic: a task's handler that panics fails the task with an
// internal error; the server goes on serving.
func TestTaskPanic(t *testing.T) {
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{}))
	srv.AddTool(Tool{Name: "p", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		panic("oops")
	})
	call := memoryCaller(t, srv)
	id := startTask(t, call, 1, "p")
	waitTask(t, srv, id, "", isTerminal)
	got := call(2, "tasks/get", `"taskId":"`+id+`"`, taskCaps)
	if field(t, got, "result.status") != "failed" || field(t, got, "result.error.code") != float64(CodeInternalError) || !strings.Contains(got, "oops") {
		t.Fatalf("tasks/get of a task that panicked: %s", got)
	}
}

// TestTaskTTLLegacy: on 2025-11-25 a task is kept for the TTL the client
// asked when it is shorter than the server's, and for the server's when
// the client asks more.
func TestTaskTTLLegacy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newTaskRig(WithTasks(TaskOptions{TTL: time.Hour}))
		ct, st := NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- rig.srv.Serve(context.Background(), st) }()
		p := &legacyPeer{rawPeer: newRawPeer(t, ct.(*IOTransport))}
		p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
		short := p.call(1, "tools/call", `"name":"rpc_error","arguments":{},"task":{"ttl":1000}`)
		long := p.call(2, "tools/call", `"name":"rpc_error","arguments":{},"task":{"ttl":86400000}`)
		if field(t, short, "result.task.ttl") != float64(1000) || field(t, long, "result.task.ttl") != float64(3600000) {
			t.Fatalf("TTLs: %s and %s", short, long)
		}
		get := func(id int, created string) string {
			return p.call(id, "tasks/get", `"taskId":"`+field(t, created, "result.task.taskId").(string)+`"`)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := get(3, short); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("past its TTL: %s", got)
		}
		if got := get(4, long); field(t, got, "result.status") != "failed" {
			t.Fatalf("within its TTL: %s", got)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := get(5, long); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("past the server's TTL: %s", got)
		}
		p.w.Close()
		<-served
	})
}

// childTaskPeer starts the test binary as a stdio server of the task rig
// and returns a raw client of it.
func childTaskPeer(t *testing.T) *legacyPeer {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_SERVE=", "MCP_TEST_SERVE_TASKS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &legacyPeer{rawPeer: newRawPeer(t, NewIOTransport(stdout, stdin))}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return p
}

// TestTasksChildProcess: both eras against a server in a child process,
// from a raw client over its standard input and output. On 2026-07-28 the
// client learns of the task's changes from a listen stream; on 2025-11-25
// the task's asks arrive as live requests and tasks/result waits.
func TestTasksChildProcess(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		p := childTaskPeer(t)
		p.send(taskRequest(1, "tools/call", `"name":"ask_twice","arguments":{}`, taskCaps))
		id, _ := field(t, p.response(1), "result.taskId").(string)
		p.send(taskRequest(2, "subscriptions/listen", `"notifications":{"taskIds":["`+id+`"]}`, taskCaps))
		if ack := p.next(); field(t, ack, "method") != "notifications/subscriptions/acknowledged" {
			t.Fatalf("acknowledged: %s", ack)
		}
		asked := func(msg, key string) bool {
			return field(t, msg, "status") == "input_required" && field(t, msg, "inputRequests."+key) != nil
		}
		for i, key := range []string{"a", "b"} {
			p.send(taskRequest(10+i, "tasks/get", `"taskId":"`+id+`"`, taskCaps))
			got := p.response(10 + i)
			for state := field(t, got, "result"); !asked(toJSON(state), key); {
				n := p.next()
				if field(t, n, "method") == "notifications/tasks" {
					state = field(t, n, "params")
				}
			}
			p.send(taskRequest(20+i, "tasks/update", `"taskId":"`+id+`","inputResponses":{"`+key+`":{"action":"accept","content":{"v":`+fmt.Sprint(i+1)+`}}}`, taskCaps))
			p.response(20 + i)
		}
		for {
			n := p.next()
			if field(t, n, "method") == "notifications/tasks" && field(t, n, "params.status") == "completed" {
				if !strings.Contains(n, `"text":"1 2"`) {
					t.Fatalf("completed: %s", n)
				}
				return
			}
		}
	})
	t.Run("2025-11-25", func(t *testing.T) {
		p := childTaskPeer(t)
		p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		id, _ := field(t, p.call(1, "tools/call", `"name":"ask_twice","arguments":{},"task":{}`), "result.task.taskId").(string)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
		for i := range 2 {
			var ask string
			for ask = p.next(); field(t, ask, "method") != "elicitation/create"; ask = p.next() {
			}
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"v":%d}}}`, toJSON(field(t, ask, "id")), i+1))
		}
		if got := p.response(2); !strings.Contains(got, `"text":"1 2"`) {
			t.Fatalf("tasks/result: %s", got)
		}
		if got := p.call(3, "tools/call", `"name":"tool_error","arguments":{},"task":{}`); field(t, got, "result.task.taskId") == nil {
			t.Fatalf("tools/call: %s", got)
		} else if got = p.call(4, "tasks/result", `"taskId":"`+field(t, got, "result.task.taskId").(string)+`"`); field(t, got, "result.isError") != true {
			t.Fatalf("tasks/result of a tool error: %s", got)
		}
	})
}

// TestTaskResultRightAfterTheEnd: tasks/result for a task that ends while
// the request is being served gives the task's result, however the two
// interleave (it once said the task ran in another process when the task
// left the running set between the request's two looks).
func TestTaskResultRightAfterTheEnd(t *testing.T) {
	store := NewMemoryTaskStore(1<<20, math.MaxInt)
	store.SetMaxTasksPerOwner(1 << 20)
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{Store: store}))
	srv.AddTool(Tool{Name: "echo", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("hello")}}, nil
	})
	cl := pair(t, srv, WithProtocolVersion(Version20251125))
	ctx := context.Background()
	asTask := map[string]any{"name": "echo", "arguments": map[string]any{}, "task": map[string]any{}}
	for i := range 20000 {
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if err := cl.SendRequest(ctx, "tools/call", asTask, &created); err != nil {
			t.Fatal(err)
		}
		var res CallToolResult
		if err := cl.SendRequest(ctx, "tasks/result", map[string]any{"taskId": created.Task.TaskID}, &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("task %d: tasks/result: %v, %v", i, res, err)
		}
	}
}

// TestTaskTTLHuge: a TTL too large for a Duration, on either revision,
// gets the server's TTL, not an overflow to a task that never expires.
func TestTaskTTLHuge(t *testing.T) {
	for _, ttl := range []string{"9223372036855", "9223372036854775807"} {
		rig := newTaskRig(WithTasks(TaskOptions{TTL: time.Hour}))
		p := &legacyPeer{rawPeer: rawServer(t, rig.srv)}
		p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
		got := p.call(1, "tools/call", `"name":"rpc_error","arguments":{},"task":{"ttl":`+ttl+`}`)
		if field(t, got, "result.task.ttl") != float64(3600000) {
			t.Fatalf("2025-11-25, ttl %s: %s", ttl, got)
		}
		call := memoryCaller(t, rig.srv)
		got = call(2, "tools/call", `"name":"rpc_error","arguments":{},"task":{"ttl":`+ttl+`,"ttlMs":`+ttl+`}`, taskCaps)
		if field(t, got, "result.ttlMs") != float64(3600000) {
			t.Fatalf("2026-07-28, ttl %s: %s", ttl, got)
		}
	}
}

// askingServer has a task tool that asks the client, with an
// InputRequiredError, for a new answer every time it runs, and counts its
// runs.
func askingServer(runs *atomic.Int64) *Server {
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{}))
	srv.AddTool(Tool{Name: "asker", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		n := runs.Add(1)
		return nil, &InputRequiredError{Requests: map[string]InputRequest{
			fmt.Sprint("q", n): {Method: "elicitation/create", Params: json.RawMessage(`{"message":"again?","requestedSchema":{"type":"object","properties":{}}}`)},
		}}
	})
	return srv
}

// TestTaskAsksBounded: a task whose handler keeps asking runs it at most
// as many rounds as a plain call; an ask the client refuses fails the task
// with that error and the handler does not run again; an ask the client
// did not declare the capability for fails the task with -32021 and is
// not sent. Both revisions.
func TestTaskAsksBounded(t *testing.T) {
	legacy := func(t *testing.T, caps string) (*legacyPeer, *atomic.Int64, string) {
		var runs atomic.Int64
		p := &legacyPeer{rawPeer: rawServer(t, askingServer(&runs))}
		p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"0"}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		got := p.call(1, "tools/call", `"name":"asker","arguments":{},"task":{}`)
		id, _ := field(t, got, "result.task.taskId").(string)
		if id == "" {
			t.Fatalf("tools/call: %s", got)
		}
		return p, &runs, id
	}
	// answerAll answers every ask (or refuses it) until the task's result.
	answerAll := func(t *testing.T, p *legacyPeer, id string, answer string) (string, int) {
		p.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
		asked := 0
		for {
			got := p.next()
			if field(t, got, "id") == float64(2) && field(t, got, "method") == nil {
				return got, asked
			}
			if field(t, got, "method") == "elicitation/create" {
				if asked++; asked > 4*maxShimRounds {
					t.Fatalf("asked %d times and still asking", asked)
				}
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, toJSON(field(t, got, "id")), answer))
			}
		}
	}

	t.Run("2025-11-25 answered", func(t *testing.T) {
		p, runs, id := legacy(t, `{"elicitation":{}}`)
		got, asked := answerAll(t, p, id, `"result":{"action":"accept","content":{}}`)
		if field(t, got, "error.code") != float64(CodeInternalError) || !strings.Contains(got, "kept asking") {
			t.Fatalf("tasks/result: %s", got)
		}
		if n := runs.Load(); n != maxShimRounds+1 || asked != maxShimRounds {
			t.Fatalf("the handler ran %d times and asked %d, want %d and %d", n, asked, maxShimRounds+1, maxShimRounds)
		}
	})
	t.Run("2025-11-25 refused", func(t *testing.T) {
		p, runs, id := legacy(t, `{"elicitation":{}}`)
		got, asked := answerAll(t, p, id, `"error":{"code":-1,"message":"user said no"}`)
		if field(t, got, "error.code") != float64(-1) || !strings.Contains(got, "user said no") {
			t.Fatalf("tasks/result: %s", got)
		}
		if n := runs.Load(); n != 1 || asked != 1 {
			t.Fatalf("the handler ran %d times and asked %d, want 1 and 1", n, asked)
		}
	})
	t.Run("2025-11-25 undeclared", func(t *testing.T) {
		p, runs, id := legacy(t, `{}`)
		got, asked := answerAll(t, p, id, `"result":{"action":"decline"}`)
		if field(t, got, "error.code") != float64(CodeMissingRequiredClientCapability) {
			t.Fatalf("tasks/result: %s", got)
		}
		if n := runs.Load(); n != 1 || asked != 0 {
			t.Fatalf("the handler ran %d times and asked %d, want 1 and 0", n, asked)
		}
	})
	t.Run("2025-11-25 over HTTP without a GET stream", func(t *testing.T) {
		var runs atomic.Int64
		ts := serveHTTP(t, askingServer(&runs))
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125),
			WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				return &ElicitResult{Action: ActionAccept}, nil
			}))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithoutStandaloneStream())); err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err := cl.CallTool(context.Background(), "asker", nil)
		if err == nil || !strings.Contains(err.Error(), "asking the client") {
			t.Fatalf("CallTool: %v", err)
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("the handler ran %d times, want 1", n)
		}
	})
	t.Run("2026-07-28 answered", func(t *testing.T) {
		var runs atomic.Int64
		srv := askingServer(&runs)
		call := memoryCaller(t, srv)
		id := startTask(t, call, 1, "asker")
		answered := map[string]bool{}
		for i := 0; ; i++ {
			// Until the task ends or asks something not yet answered.
			waitTask(t, srv, id, "", func(r *TaskRecord) bool {
				for key := range r.InputRequests {
					if !answered[key] {
						return true
					}
				}
				return r.Status.Terminal()
			})
			got := call(2, "tasks/get", `"taskId":"`+id+`"`, taskCaps)
			if field(t, got, "result.status") != "input_required" {
				if field(t, got, "result.status") != "failed" || !strings.Contains(got, "kept asking") {
					t.Fatalf("tasks/get: %s", got)
				}
				break
			}
			if i > 2*maxShimRounds {
				t.Fatalf("still asking after %d answers", i)
			}
			asks, _ := field(t, got, "result.inputRequests").(map[string]any)
			for key := range asks {
				answered[key] = true
				call(3, "tasks/update", `"taskId":"`+id+`","inputResponses":{"`+key+`":{"action":"accept","content":{}}}`, taskCaps)
			}
		}
		if n := runs.Load(); n != maxShimRounds+1 {
			t.Fatalf("the handler ran %d times, want %d", n, maxShimRounds+1)
		}
	})
	t.Run("2026-07-28 undeclared", func(t *testing.T) {
		var runs atomic.Int64
		srv := askingServer(&runs)
		call := memoryCaller(t, srv)
		got := call(1, "tools/call", `"name":"asker","arguments":{}`, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
		id := field(t, got, "result.taskId").(string)
		waitTask(t, srv, id, "", isTerminal)
		got = call(2, "tasks/get", `"taskId":"`+id+`"`, taskCaps)
		if field(t, got, "result.status") != "failed" || field(t, got, "result.error.code") != float64(CodeMissingRequiredClientCapability) || runs.Load() != 1 {
			t.Fatalf("tasks/get after %d runs: %s", runs.Load(), got)
		}
	})
}

// TestAnonymousTasksPerSession: without a principal, a 2025-11-25 task
// belongs to the session that made it: another anonymous session, over
// the same connection kind or HTTP, cannot list, read, wait on or cancel
// it, while its own session can. A 2026-07-28 anonymous task is read by
// its id alone, which only its creator was told; it is not a legacy
// session's, nor is a legacy session's task its.
func TestAnonymousTasksPerSession(t *testing.T) {
	rig := newTaskRig()
	defer close(rig.release)
	legacy := func() *legacyPeer {
		p := &legacyPeer{rawPeer: rawServer(t, rig.srv)}
		p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return p
	}
	a, b := legacy(), legacy()
	id := field(t, a.call(1, "tools/call", `"name":"work","arguments":{},"task":{}`), "result.task.taskId").(string)
	if ids := listedIDs(t, b.call(2, "tasks/list", ``)); len(ids) != 0 {
		t.Fatalf("another session lists %v", ids)
	}
	for i, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if got := b.call(3+i, method, `"taskId":"`+id+`"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s from another session: %s", method, got)
		}
	}
	if ids := listedIDs(t, a.call(6, "tasks/list", ``)); len(ids) != 1 || ids[0] != id {
		t.Fatalf("its own session lists %v", ids)
	}
	if got := a.call(7, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "result.status") != "working" {
		t.Fatalf("tasks/get from its own session: %s", got)
	}

	// 2026-07-28: the id reads it on any connection, but not a legacy
	// session's task, and a legacy session does not read it.
	modernA, modernB := memoryCaller(t, rig.srv), memoryCaller(t, rig.srv)
	mid := startTask(t, modernA, 10, "work")
	if got := modernB(11, "tasks/get", `"taskId":"`+mid+`"`, taskCaps); field(t, got, "result.status") != "working" {
		t.Fatalf("a 2026-07-28 task read by its id: %s", got)
	}
	if got := modernB(12, "tasks/get", `"taskId":"`+id+`"`, taskCaps); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("a legacy session's task read on 2026-07-28: %s", got)
	}
	if got := b.call(13, "tasks/get", `"taskId":"`+mid+`"`); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("a 2026-07-28 task read by a legacy session: %s", got)
	}
	if got := modernB(14, "tasks/list", ``, taskCaps); field(t, got, "error.code") != float64(CodeMethodNotFound) {
		t.Fatalf("tasks/list on 2026-07-28: %s", got)
	}

	// Over HTTP, each anonymous session is its own.
	ts := serveHTTP(t, rig.srv)
	ctx := context.Background()
	httpA := dial(t, ts.URL, WithProtocolVersion(Version20251125))
	httpB := dial(t, ts.URL, WithProtocolVersion(Version20251125))
	tt, err := httpA.StartTool(ctx, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := httpB.ListTasks(ctx, ""); err != nil || len(got.Tasks) != 0 {
		t.Fatalf("another HTTP session lists %+v, %v", got, err)
	}
	if _, err := httpB.OpenTask(tt.Task().ID).Get(ctx); err == nil {
		t.Fatal("another HTTP session reads the task")
	}
	if err := httpB.OpenTask(tt.Task().ID).Cancel(ctx); err == nil {
		t.Fatal("another HTTP session cancels the task")
	}
	if got, err := httpA.OpenTask(tt.Task().ID).Get(ctx); err != nil || got.Status != TaskWorking {
		t.Fatalf("its own HTTP session: %+v, %v", got, err)
	}
}

// TestTaskQuotas: one principal at its quota of running tasks, or of
// stored ones, is refused with -32000 while another principal still
// starts tasks; anonymous 2025-11-25 sessions each have a quota of their
// own.
func TestTaskQuotas(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		rig := newTaskRig(WithTasks(TaskOptions{MaxTasksPerPrincipal: 2}))
		defer close(rig.release)
		alice, bob := httpCaller(t, rig.srv, "alice"), httpCaller(t, rig.srv, "bob")
		startTask(t, alice, 1, "work")
		startTask(t, alice, 2, "work")
		got := alice(3, "tools/call", `"name":"work","arguments":{}`, taskCaps)
		if field(t, got, "error.code") != float64(CodeOverloaded) || !strings.Contains(got, "2 of your tasks are running") {
			t.Fatalf("alice's third task: %s", got)
		}
		startTask(t, bob, 4, "work")
		startTask(t, bob, 5, "work")

		legacy := func() *legacyPeer {
			p := &legacyPeer{rawPeer: rawServer(t, rig.srv)}
			p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
			p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			return p
		}
		a, b := legacy(), legacy()
		for i := range 2 {
			if got := a.call(10+i, "tools/call", `"name":"work","arguments":{},"task":{}`); field(t, got, "result.task.taskId") == nil {
				t.Fatalf("session a's task %d: %s", i, got)
			}
		}
		if got := a.call(12, "tools/call", `"name":"work","arguments":{},"task":{}`); field(t, got, "error.code") != float64(CodeOverloaded) {
			t.Fatalf("session a's third task: %s", got)
		}
		if got := b.call(13, "tools/call", `"name":"work","arguments":{},"task":{}`); field(t, got, "result.task.taskId") == nil {
			t.Fatalf("session b's task: %s", got)
		}
	})
	t.Run("stored", func(t *testing.T) {
		store := NewMemoryTaskStore(0, 0)
		store.SetMaxTasksPerOwner(3)
		rig := newTaskRig(WithTasks(TaskOptions{Store: store}))
		alice, bob := httpCaller(t, rig.srv, "alice"), httpCaller(t, rig.srv, "bob")
		for i := range 3 {
			id := startTask(t, alice, i, "rpc_error")
			waitTask(t, rig.srv, id, "alice", isTerminal)
		}
		got := alice(3, "tools/call", `"name":"rpc_error","arguments":{}`, taskCaps)
		if field(t, got, "error.code") != float64(CodeOverloaded) || !strings.Contains(got, "as many tasks as the task store keeps for one requester") {
			t.Fatalf("alice's fourth stored task: %s", got)
		}
		startTask(t, bob, 4, "rpc_error")
	})
}

// TestTaskToolNeedsWithTasks: a tool that may run as a task is refused,
// when the program registers it, by a server not given WithTasks, which
// links no task machinery to run it; WithTasks accepts it.
func TestTaskToolNeedsWithTasks(t *testing.T) {
	tool := Tool{Name: "slow", Execution: &ToolExecution{TaskSupport: TaskOptional}}
	h := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil }
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "WithTasks") {
				t.Errorf("AddTool of a task tool without WithTasks: panic %v", p)
			}
		}()
		NewServer(Implementation{Name: "s", Version: "1"}).AddTool(tool, h)
	}()
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithTasks(TaskOptions{}))
	srv.AddTool(tool, h)
	if caps := srv.capabilities(Version20251125); caps.Tasks == nil {
		t.Errorf("a server with a task tool declares no tasks: %+v", caps)
	}
}
