package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// TasksExtension is the id of the 2026-07-28 tasks extension (SEP-2663),
// under capabilities.extensions. Both sides.
const TasksExtension = "io.modelcontextprotocol/tasks"

// resultTask is the resultType of a 2026-07-28 CreateTaskResult.
const resultTask = "task"

// Defaults of the task options.
const (
	// DefaultTaskTTL is how long a server keeps a task after creating it,
	// result included, unless WithTaskTTL says otherwise.
	DefaultTaskTTL = time.Hour
	// DefaultTaskPollInterval is how often a server suggests that clients
	// poll a task, unless WithTaskPollInterval says otherwise.
	DefaultTaskPollInterval = time.Second
)

// taskSupport returns how the tool may run as a task; an empty
// TaskSupport is TaskForbidden.
func taskSupport(t *Tool) TaskSupport {
	if t.Execution == nil || t.Execution.TaskSupport == "" {
		return TaskForbidden
	}
	return t.Execution.TaskSupport
}

// runsAsTask reports whether the tool may run as a task.
func runsAsTask(t *Tool) bool {
	ts := taskSupport(t)
	return ts == TaskOptional || ts == TaskRequired
}

// TaskPreflight runs on the request of a tools/call that would start a
// task, before the task exists: it may ask the client for input with the
// gateway (the request then ends as input_required, as any 2026-07-28 round
// does), answer at once with a result or an error, or return nil, nil to
// let the task start. The task's handler then sees the answers the
// preflight was given. Server side.
type TaskPreflight func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// SetTaskPreflight gives the task tool named tool a preflight, run on each
// 2026-07-28 call that would start a task; nil removes it. Server side.
func (s *Server) SetTaskPreflight(tool string, p TaskPreflight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.preflights, tool)
		return
	}
	if s.preflights == nil {
		s.preflights = make(map[string]TaskPreflight)
	}
	s.preflights[tool] = p
}

// serverTask is one task the server runs: its state, the outcome of its
// handler, the asks it waits on and the answers it was given.
type serverTask struct {
	owner  string // the principal that created it
	cancel context.CancelFunc
	expiry *time.Timer

	mu      sync.Mutex
	task    Task
	result  json.RawMessage // the tool's result, once completed
	err     *Error          // the protocol error, once failed
	asks    map[string]InputRequest
	answers map[string]json.RawMessage
	wake    chan struct{} // signalled when an answer arrives
	done    chan struct{} // closed once terminal
	// changed is closed, and replaced, whenever the task changes, so that
	// a waiter sees every change without polling.
	changed chan struct{}
}

// changedLocked tells the task's waiters that it changed.
func (t *serverTask) changedLocked() {
	t.task.LastUpdatedAt = time.Now()
	close(t.changed)
	t.changed = make(chan struct{})
}

// taskTable holds a server's tasks by id.
type taskTable struct {
	mu    sync.Mutex
	tasks map[string]*serverTask
}

func (tt *taskTable) add(id string, t *serverTask) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.tasks == nil {
		tt.tasks = make(map[string]*serverTask)
	}
	tt.tasks[id] = t
}

// find returns the task id names if principal owns it; a task of another
// principal is as unknown as one that never existed.
func (tt *taskTable) find(id, principal string) *serverTask {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t := tt.tasks[id]
	if t == nil || t.owner != principal {
		return nil
	}
	return t
}

func (tt *taskTable) remove(id string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	delete(tt.tasks, id)
}

// len is how many tasks the table holds.
func (tt *taskTable) len() int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.tasks)
}

// newTaskID returns an unguessable task id: 128 random bits.
func newTaskID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errUnknownTask is the error of a task id that names no task of the caller.
func errUnknownTask(id string) *Error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown task %q", id)}
}

// errTasksNotDeclared is the error of a 2026-07-28 request that needs the
// tasks extension the client did not declare on it.
func errTasksNotDeclared() *Error {
	return NewError(CodeMissingRequiredClientCapability, "Missing required client capability: the "+TasksExtension+" extension",
		json.RawMessage(`{"requiredCapabilities":{"extensions":{"`+TasksExtension+`":{}}}}`))
}

// callAsTask serves a 2026-07-28 tools/call of a tool that may run as a
// task. A client that declared the extension on the request gets a task,
// whether the tool requires one or merely allows it: a tool says it may
// take long by allowing tasks, and the client said it can wait on one. A
// client that did not declare it gets the call served synchronously, or
// -32021 when the tool requires a task.
func (s *Server) callAsTask(ctx context.Context, st *serverTool, call *toolCall, info *RequestInfo) (any, error) {
	if !info.caps.hasSub("extensions", TasksExtension) {
		if taskSupport(st.tool) == TaskRequired {
			return nil, errTasksNotDeclared()
		}
		res, err := st.handler(ctx, &call.req)
		return toolOutcome(res, err)
	}
	s.mu.RLock()
	preflight := s.preflights[st.tool.Name]
	s.mu.RUnlock()
	if preflight != nil {
		res, err := preflight(ctx, &call.req)
		if res != nil || err != nil {
			return toolOutcome(res, err)
		}
		if info.round != nil {
			info.round.mu.Lock()
			asked := len(info.round.asks) > 0
			info.round.mu.Unlock()
			if asked {
				return nil, ErrInputRequired // finishRound turns it into input_required
			}
		}
	}
	return s.startTask(call, st.handler, info)
}

// startTask creates a task for call and runs its handler detached from the
// request, with a context of its own that tasks/cancel and the TTL end.
// The task can be read before startTask returns its CreateTaskResult,
// which reports the task as created: working.
func (s *Server) startTask(call *toolCall, h ToolHandler, info *RequestInfo) (json.RawMessage, error) {
	now := time.Now()
	cfg := &s.cfg.server
	id := newTaskID()
	ctx, cancel := context.WithCancel(context.Background())
	t := &serverTask{
		owner:  info.Principal(),
		cancel: cancel,
		task: Task{ID: id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now,
			TTL: cfg.taskTTL, PollInterval: cfg.taskPollInterval},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	if info.round != nil {
		info.round.mu.Lock()
		t.answers = maps.Clone(info.round.answers)
		info.round.mu.Unlock()
	}
	b := []byte(`{"resultType":"task",`)
	b = appendTaskMembers(b, &t.task, true) // before anyone else can see t
	s.tasks.add(id, t)
	if t.task.TTL > 0 {
		t.expiry = time.AfterFunc(t.task.TTL, func() {
			cancel()
			s.tasks.remove(id)
		})
	}
	// The task's own view of the request: nothing in it refers to the
	// request's connection, which may be gone long before the task ends.
	ti := &RequestInfo{
		id: info.id, method: info.method, version: info.version, modern: true,
		caps: info.caps, session: info.session, task: t,
	}
	params := call.p
	go s.runTask(ctx, t, h, &params, ti)
	return json.RawMessage(append(b, '}')), nil
}

// runTask runs a task's handler until the task ends. A run that leaves
// asks unanswered makes the task input_required; once every ask has an
// answer (tasks/update), the handler runs again from the top with them, as
// a 2026-07-28 retry would.
func (s *Server) runTask(ctx context.Context, t *serverTask, h ToolHandler, p *CallToolParams, base *RequestInfo) {
	defer t.cancel()
	var payload json.RawMessage
	for {
		info := *base
		info.gateway = nil
		t.mu.Lock()
		info.round = &inputRound{owner: base.Principal(), method: "tools/call", answers: maps.Clone(t.answers), payload: payload}
		t.mu.Unlock()
		res, err := runTaskHandler(ctx, h, &CallToolRequest{Params: p, RequestInfo: &info})
		if ctx.Err() != nil {
			t.finish(TaskCancelled, nil, nil)
			return
		}
		out, oerr := toolOutcome(res, err)
		r := info.round
		r.mu.Lock()
		asks := r.asks
		var own *InputRequiredError
		if len(asks) == 0 && errors.As(oerr, &own) {
			asks = own.Requests
			if own.State != nil {
				r.next, _ = json.Marshal(own.State)
			}
		}
		payload = r.next
		r.mu.Unlock()
		if len(asks) == 0 {
			if errors.Is(oerr, ErrInputRequired) {
				oerr = &Error{Code: CodeInternalError, Message: "Internal error: the handler reported input required without asking for any"}
			}
			t.complete(out, oerr)
			return
		}
		if !t.await(ctx, asks) {
			t.finish(TaskCancelled, nil, nil)
			return
		}
	}
}

// runTaskHandler runs a task's handler, turning a panic into the task's
// protocol error: nobody else would see it.
func runTaskHandler(ctx context.Context, h ToolHandler, req *CallToolRequest) (res *CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: the tool panicked: %v", v)}
		}
	}()
	return h(ctx, req)
}

// complete ends the task with the handler's outcome: completed with the
// result (a tool error included), or failed with a protocol error.
func (t *serverTask) complete(result any, err error) {
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
		}
		t.finish(TaskFailed, nil, rpcErr)
		return
	}
	raw, merr := marshalResult(result)
	if merr != nil {
		t.finish(TaskFailed, nil, &Error{Code: CodeInternalError, Message: "Internal error: encoding the result: " + merr.Error()})
		return
	}
	t.finish(TaskCompleted, raw, nil)
}

// finish moves the task to a terminal status, unless it already is in one.
func (t *serverTask) finish(status TaskStatus, result json.RawMessage, err *Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.task.Status.Terminal() {
		return
	}
	t.task.Status = status
	t.result, t.err, t.asks = result, err, nil
	close(t.done)
	t.changedLocked()
}

// await parks the task as input_required until every ask has an answer;
// false when the task's context ended first.
func (t *serverTask) await(ctx context.Context, asks map[string]InputRequest) bool {
	t.mu.Lock()
	if t.task.Status.Terminal() {
		t.mu.Unlock()
		return false
	}
	t.asks = make(map[string]InputRequest, len(asks))
	for k, v := range asks {
		if _, ok := t.answers[k]; !ok {
			t.asks[k] = v
		}
	}
	if len(t.asks) > 0 {
		t.task.Status = TaskInputRequired
		t.changedLocked()
	}
	for len(t.asks) > 0 {
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-t.wake:
		}
		t.mu.Lock()
	}
	if t.task.Status != TaskWorking {
		t.task.Status = TaskWorking
		t.changedLocked()
	}
	t.mu.Unlock()
	return true
}

// answer files a tasks/update's answers: those to pending asks end them;
// others are ignored, as the extension requires.
func (t *serverTask) answer(responses map[string]json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	answered := false
	for k, v := range responses {
		if _, pending := t.asks[k]; !pending {
			continue
		}
		putEntry(&t.answers, k, v)
		delete(t.asks, k)
		answered = true
	}
	if answered {
		t.changedLocked() // the answered asks are no longer reported
	}
	if answered && len(t.asks) == 0 {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// setStatusMessage is what Progress does inside a task.
func (t *serverTask) setStatusMessage(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.task.Status.Terminal() || msg == "" {
		return
	}
	t.task.StatusMessage = msg
	t.changedLocked()
}

// appendDetailed appends the task as tasks/get reports it on 2026-07-28:
// the task's members, and its inputRequests, result or error.
func (t *serverTask) appendDetailed(b []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b = append(b, `{"resultType":"complete",`...)
	b = appendTaskMembers(b, &t.task, true)
	switch {
	case t.task.Status == TaskInputRequired && len(t.asks) > 0:
		raw, err := json.Marshal(t.asks)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"inputRequests":`...)
		b = append(b, raw...)
	case t.task.Status == TaskCompleted:
		b = append(b, `,"result":`...)
		b = append(b, t.result...)
	case t.task.Status == TaskFailed:
		raw, err := json.Marshal(t.err)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"error":`...)
		b = append(b, raw...)
	}
	return append(b, '}'), nil
}

// taskIDParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskIDParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// serveModernTasks serves the tasks/* methods on 2026-07-28: tasks/get,
// tasks/update and tasks/cancel for a client that declared the extension
// on the request; tasks/result and tasks/list do not exist there.
func (s *Server) serveModernTasks(req *inboundRequest, info *RequestInfo) (any, error) {
	switch req.method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method + " is not part of the " + TasksExtension + " extension"}
	}
	if !info.caps.hasSub("extensions", TasksExtension) {
		return nil, errTasksNotDeclared()
	}
	var p taskIDParams
	if err := decodeParams(req.params, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + req.method + " needs params {\"taskId\": string}"}
	}
	t := s.tasks.find(p.TaskID, info.Principal())
	if t == nil {
		return nil, errUnknownTask(p.TaskID)
	}
	switch req.method {
	case "tasks/get":
		b, err := t.appendDetailed(messageBuffer(256))
		if err != nil {
			return nil, err
		}
		return json.RawMessage(b), nil
	case "tasks/update":
		t.answer(p.InputResponses)
	case "tasks/cancel":
		t.finish(TaskCancelled, nil, nil)
		t.cancel()
	}
	return json.RawMessage(`{"resultType":"complete"}`), nil
}
