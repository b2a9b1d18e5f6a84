package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// The client side of tasks: asking for one, waiting on it, and the handle
// for callers that manage a task themselves.

// DefaultMinTaskPollInterval is the shortest interval a client polls a
// task at unless WithTaskPolling says otherwise. Client side.
const DefaultMinTaskPollInterval = 100 * time.Millisecond

// ErrTaskCancelled is returned, wrapped, when a task ended cancelled
// rather than with a result. Client side.
var ErrTaskCancelled = errors.New("mcp: the task was cancelled")

// WithTaskPolling sets how a client polls the tasks it waits on: at the
// interval the server suggests, but never more often than min (default
// DefaultMinTaskPollInterval), and at interval when the server suggests
// none (default DefaultTaskPollInterval). A value of 0 or less keeps its
// default.
// It configures a client (NewClient).
func WithTaskPolling(interval, min time.Duration) ClientOption {
	return clientOption(func(c *config) {
		if interval > 0 {
			c.client.taskPoll = interval
		}
		if min > 0 {
			c.client.taskPollMin = min
		}
	})
}

// taskAsk is what WithTask asked for.
type taskAsk struct {
	ttl time.Duration
}

// WithTask asks the server to run a tools/call as a task that it keeps for
// ttl after it is created (0: as long as the server chooses). CallTool still
// returns the final result: it waits on the task. A server or tool that does
// not run tasks answers the call as usual. Tools whose Execution says
// TaskRequired run as tasks without it, once the client has listed them.
// Client side.
func WithTask(ttl time.Duration) CallOption {
	return func(o *callOptions) { o.task = &taskAsk{ttl: max(ttl, 0)} }
}

// serverTasks is what the server said of tasks when the client connected.
type serverTasks struct {
	toolCalls bool // it runs tools/call as tasks (2025-11-25 tasks.requests.tools.call, 2026-07-28 the extension)
	list      bool // it answers tasks/list (2025-11-25)
}

// legacyServerTasks reads the 2025-11-25 tasks capability of an initialize
// result.
func legacyServerTasks(raw json.RawMessage) serverTasks {
	var res struct {
		Capabilities struct {
			Tasks *struct {
				List     *json.RawMessage `json:"list"`
				Requests struct {
					Tools struct {
						Call *json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(raw, &res) != nil || res.Capabilities.Tasks == nil {
		return serverTasks{}
	}
	t := res.Capabilities.Tasks
	return serverTasks{toolCalls: t.Requests.Tools.Call != nil, list: t.List != nil}
}

// learnTools records the task support of listed tools, which decides
// whether CallTool asks for a task without being told to.
func (c *Client) learnTools(tools []*Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toolsListed = true
	for _, t := range tools {
		if t == nil {
			continue
		}
		support := TaskForbidden
		if t.Execution != nil && t.Execution.TaskSupport != "" {
			support = t.Execution.TaskSupport
		}
		putEntry(&c.toolTasks, t.Name, support)
	}
}

// taskMode decides whether a call of the tool asks for a task: ask is
// non-nil when it does, with the TTL to ask for: a tool that requires one,
// or a call that asks with WithTask; a tool known to be optional runs
// plainly otherwise. On 2026-07-28 a call of a tool the client has not
// listed declares the extension too, in case the tool requires a task; on
// 2025-11-25 the call carries the task param. A 2025-11-25
// server that runs tasks but whose tools the client has not listed gets
// them listed once, so that a tool that requires a task is called as one;
// a call that asks for a task is trusted.
func (c *Client) taskMode(ctx context.Context, name string, opts []CallOption) *taskAsk {
	var asked *taskAsk
	if len(opts) > 0 {
		var o callOptions
		for _, opt := range opts {
			opt(&o)
		}
		asked = o.task
	}
	c.mu.Lock()
	caps, listed, modern := c.tasks, c.toolsListed, c.modern
	support, known := c.toolTasks[name]
	c.mu.Unlock()
	if caps.toolCalls && asked == nil && !listed && !modern {
		for _, err := range c.Tools(ctx) {
			if err != nil {
				break // the call itself will report what is wrong
			}
		}
		c.mu.Lock()
		c.toolsListed = true // once, even if listing failed
		support, known = c.toolTasks[name]
		c.mu.Unlock()
	}
	switch {
	case known && support == TaskRequired:
		if asked == nil {
			asked = &taskAsk{}
		}
		return asked
	case known && support != TaskOptional:
		return nil // forbidden: the call runs as an ordinary one
	case asked != nil:
		return asked
	case known:
		return nil // optional and not asked for: a plain call
	case modern && caps.toolCalls:
		return &taskAsk{} // not listed: it may require a task
	}
	return nil
}

// taskEnvelope is the client's 2026-07-28 envelope with the tasks extension
// declared in its capabilities.
func (c *Client) taskEnvelope() []metaEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taskEnv != nil || c.envelope == nil {
		return c.taskEnv
	}
	env := make([]metaEntry, len(c.envelope))
	copy(env, c.envelope)
	for i, e := range env {
		if e.key != metaClientCapabilities {
			continue
		}
		var caps map[string]json.RawMessage
		var exts map[string]json.RawMessage
		if json.Unmarshal(e.value, &caps) != nil {
			break
		}
		_ = json.Unmarshal(caps["extensions"], &exts)
		putEntry(&exts, TasksExtension, json.RawMessage(`{}`))
		caps["extensions"], _ = json.Marshal(exts)
		env[i].value, _ = json.Marshal(caps)
	}
	c.taskEnv = env
	return env
}

// taskOptions applies opts for a task request: on 2026-07-28 the envelope
// declares the tasks extension.
func (c *Client) taskOptions(opts []CallOption) (*conn, *callOptions, bool, error) {
	conn, _, err := c.session()
	if err != nil {
		return nil, nil, false, err
	}
	c.mu.Lock()
	modern := c.modern
	c.mu.Unlock()
	o := &callOptions{}
	if modern {
		o.meta = c.taskEnvelope()
	}
	for _, opt := range opts {
		opt(o)
	}
	return conn, o, modern, nil
}

// StartTool calls a tool as a task and returns its handle without waiting
// for the task to end. If the server answered the call at once instead of
// making it a task, the handle is already done: its Task has no ID, and
// Wait returns the result. Client side.
func (c *Client) StartTool(ctx context.Context, name string, args any, opts ...CallOption) (*ToolTask, error) {
	params, err := toolCallParams(name, args)
	if err != nil {
		return nil, err
	}
	defer recycleMessage(params)
	ask := &taskAsk{}
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.task != nil {
		ask = o.task
	}
	return c.startTool(ctx, name, params, opts, ask)
}

// startTool sends a tools/call that asks for a task.
func (c *Client) startTool(ctx context.Context, name string, params []byte, opts []CallOption, ask *taskAsk) (*ToolTask, error) {
	conn, o, modern, err := c.taskOptions(opts)
	if err != nil {
		return nil, err
	}
	o.task = ask
	if !modern {
		params = withTaskParam(params, ask.ttl)
	}
	raw, err := c.requestWith(ctx, conn, "tools/call", params, o)
	if err != nil {
		return nil, taskCallError(name, err)
	}
	t := &ToolTask{c: c, name: name, modern: modern}
	if modern {
		var head struct {
			ResultType string `json:"resultType"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, errorf("malformed tools/call result: %w", err)
		}
		if head.ResultType == resultTask {
			if t.task, err = decodeTask(raw, true); err != nil {
				return nil, errorf("malformed tools/call task: %w", err)
			}
			return t, nil
		}
	} else {
		var created struct {
			Task json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(raw, &created); err != nil {
			return nil, errorf("malformed tools/call result: %w", err)
		}
		if len(created.Task) > 0 && created.Task[0] == '{' {
			if t.task, err = decodeTask(created.Task, false); err != nil {
				return nil, errorf("malformed tools/call task: %w", err)
			}
			return t, nil
		}
	}
	// The server answered at once.
	t.task.Status = TaskCompleted
	t.result = bytes.Clone(raw)
	return t, nil
}

// withTaskParam adds the 2025-11-25 task param to a tools/call's params.
func withTaskParam(params []byte, ttl time.Duration) []byte {
	p := trimJSONSpace(params)
	out := make([]byte, 0, len(p)+32)
	out = append(out, p[:len(p)-1]...)
	if len(trimJSONSpace(p[1:len(p)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"task":{`...)
	if ttl > 0 {
		out = fmt.Appendf(out, `"ttl":%d`, ttl.Milliseconds())
	}
	return append(out, "}}"...)
}

// taskCallError makes the server's refusal to serve a call without a task
// say what to do about it.
func taskCallError(name string, err error) error {
	var rpcErr *Error
	if errors.As(err, &rpcErr) && rpcErr.Code == CodeMissingRequiredClientCapability && bytes.Contains(rpcErr.Data, []byte(TasksExtension)) {
		return errorf("tool %q runs only as a task and the call did not offer one (list the tools first, or call with WithTask): %w", name, err)
	}
	return err
}

// callToolTask is CallTool for a call that asks for a task: it starts the
// task and waits on it, cancelling it on the server if the wait ends early.
func (c *Client) callToolTask(ctx context.Context, name string, params []byte, opts []CallOption, ask *taskAsk) (*CallToolResult, error) {
	t, err := c.startTool(ctx, name, params, opts, ask)
	if err != nil {
		return nil, err
	}
	return t.wait(ctx, opts, true)
}

// ToolTask is a tool call that the server runs as a task: work that
// outlives the request that started it. Its methods are safe for
// concurrent use. Client side.
type ToolTask struct {
	c      *Client
	name   string
	modern bool

	mu       sync.Mutex
	task     Task
	result   json.RawMessage         // the final result, once known
	failure  *Error                  // the error a failed task ended with (2026-07-28)
	asks     map[string]InputRequest // open inputRequests (2026-07-28)
	answered map[string]bool         // inputRequests already answered
}

// OpenTask returns a handle on a task the client started earlier, perhaps
// on another connection, by its id. Client side.
func (c *Client) OpenTask(id string) *ToolTask {
	c.mu.Lock()
	modern := c.modern
	c.mu.Unlock()
	return &ToolTask{c: c, modern: modern, task: Task{ID: id, Status: TaskWorking}}
}

// Task returns the task's state as last seen. Client side.
func (t *ToolTask) Task() Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.task
}

// Get asks the server for the task's state (tasks/get) and returns it.
// Client side.
func (t *ToolTask) Get(ctx context.Context, opts ...CallOption) (Task, error) {
	t.mu.Lock()
	task := t.task
	t.mu.Unlock()
	if task.ID == "" {
		return task, nil
	}
	conn, o, _, err := t.c.taskOptions(opts)
	if err != nil {
		return Task{}, err
	}
	return t.get(ctx, conn, o)
}

// taskIDJSON is the params of tasks/get, tasks/cancel and tasks/result.
func taskIDJSON(id string) json.RawMessage {
	b := appendJSONString([]byte(`{"taskId":`), id)
	return append(b, '}')
}

// get polls the task once and records what the server said.
func (t *ToolTask) get(ctx context.Context, conn *conn, o *callOptions) (Task, error) {
	t.mu.Lock()
	id := t.task.ID // a notification may replace t.task meanwhile
	t.mu.Unlock()
	raw, err := conn.call(ctx, "tasks/get", taskIDJSON(id), o)
	if err != nil {
		return Task{}, err
	}
	task, err := decodeTask(raw, t.modern)
	if err != nil {
		return Task{}, errorf("malformed tasks/get result: %w", err)
	}
	var detail struct {
		Result        json.RawMessage         `json:"result"`
		Error         *Error                  `json:"error"`
		InputRequests map[string]InputRequest `json:"inputRequests"`
	}
	if t.modern {
		if err := json.Unmarshal(raw, &detail); err != nil {
			return Task{}, errorf("malformed tasks/get result: %w", err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.task.Status.Terminal() {
		return t.task, nil // a terminal task never changes
	}
	t.task = task
	if len(detail.Result) > 0 && string(detail.Result) != "null" {
		t.result = detail.Result
	}
	t.failure = detail.Error
	t.asks = detail.InputRequests
	return task, nil
}

// update records a task the server reported in a notification; it
// reports whether the state changed.
func (t *ToolTask) update(task Task) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if task.ID != t.task.ID || t.task.Status.Terminal() || (task.Status == t.task.Status && task.StatusMessage == t.task.StatusMessage) {
		return false
	}
	t.task = task
	return true
}

// Cancel asks the server to cancel the task (tasks/cancel). Cancelling is
// cooperative: the task may still complete; Wait tells which. Client side.
func (t *ToolTask) Cancel(ctx context.Context, opts ...CallOption) error {
	t.mu.Lock()
	id := t.task.ID
	t.mu.Unlock()
	if id == "" {
		return nil
	}
	conn, o, _, err := t.c.taskOptions(opts)
	if err != nil {
		return err
	}
	_, err = conn.call(ctx, "tasks/cancel", taskIDJSON(id), o)
	return err
}

// Wait waits for the task to end and returns its result as the tool call
// would have returned it: a tool that failed gives a result with IsError
// set, a request that failed gives its *Error, and a cancelled task an
// error wrapping ErrTaskCancelled. While it waits it answers the server's
// requests for input with the client's handlers and reports status
// messages through WithProgress. It polls at the server's suggested
// interval. The call's bounds apply: each answer the server gives restarts
// the idle bound, and the ceiling ends the wait. When ctx or a bound ends
// the wait early the task keeps running; Cancel stops it. Client side.
func (t *ToolTask) Wait(ctx context.Context, opts ...CallOption) (*CallToolResult, error) {
	return t.wait(ctx, opts, false)
}

// wait is Wait; cancel says whether a wait ended early cancels the task.
func (t *ToolTask) wait(ctx context.Context, opts []CallOption, cancel bool) (*CallToolResult, error) {
	conn, o, _, err := t.c.taskOptions(opts)
	if err != nil {
		return nil, err
	}
	idle := conn.cfg.requestTimeout
	if o.timeoutSet {
		idle = o.timeout
	}
	o.dl = armDeadline(idle, conn.cfg.maxRequestTimeout, conn.armedDeadlines())
	defer o.dl.release()
	report := o.progress
	o.progress = nil // the status messages are the progress
	watch := t.c.watchTask(t)
	defer t.c.unwatchTask(t, watch)

	reports := 0
	lastMessage := ""
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		task := t.Task()
		if task.StatusMessage != lastMessage {
			lastMessage = task.StatusMessage
			if report != nil && lastMessage != "" {
				reports++
				report(Progress{Progress: float64(reports), Message: lastMessage})
			}
		}
		if task.ID == "" || task.Status.Terminal() {
			return t.outcome(ctx, conn, o)
		}
		if task.Status == TaskInputRequired {
			if !t.modern {
				// The server asks with live requests, delivered while
				// tasks/result waits.
				return t.outcome(ctx, conn, o)
			}
			if err := t.answer(ctx, conn, o); err != nil {
				return nil, t.abandon(ctx, conn, cancel, err)
			}
		}
		if bound, elapsed, ok := overdue(o.dl); ok {
			return nil, t.abandon(ctx, conn, cancel, &RequestTimeoutError{Method: "tools/call", Bound: bound, Timeout: elapsed, ProgressReports: reports})
		}
		interval := t.pollInterval(task)
		if timer == nil {
			timer = time.NewTimer(interval)
		} else {
			timer.Reset(interval)
		}
		select {
		case <-timer.C:
		case <-watch:
			timer.Stop()
			continue // a status notification: no need to poll
		case <-o.dl.C():
			bound, elapsed, ok := o.dl.expired()
			if !ok {
				timer.Stop()
				continue
			}
			return nil, t.abandon(ctx, conn, cancel, &RequestTimeoutError{Method: "tools/call", Bound: bound, Timeout: elapsed, ProgressReports: reports})
		case <-ctx.Done():
			err := errorf("waiting on task %s (%s) abandoned: %w", task.ID, t.name, ctx.Err())
			return nil, t.abandon(ctx, conn, cancel, err)
		}
		if _, err := t.get(ctx, conn, o); err != nil {
			return nil, t.abandon(ctx, conn, cancel, err)
		}
		o.dl.extend()
	}
}

// overdue reports a bound of d that elapsed unseen: when a poll's answer
// races the deadline's timer, the poll takes the answer and the timer's
// tick goes with it.
func overdue(d *deadline) (TimeoutBound, time.Duration, bool) {
	if d == nil || time.Now().Before(d.next()) {
		return "", 0, false
	}
	return d.expired()
}

// pollInterval is how long to wait before the next poll.
func (t *ToolTask) pollInterval(task Task) time.Duration {
	cc := &t.c.cfg.client
	d := task.PollInterval
	if d <= 0 {
		d = cc.taskPoll
	}
	return max(d, cc.taskPollMin)
}

// abandon ends a wait early: with cancel it tells the server to cancel the
// task, waiting for the acknowledgement within the client's request bounds
// (the caller's context may be over already), then returns err.
func (t *ToolTask) abandon(ctx context.Context, conn *conn, cancel bool, err error) error {
	if !cancel {
		return err
	}
	t.mu.Lock()
	id := t.task.ID
	t.mu.Unlock()
	o := &callOptions{}
	if t.modern {
		o.meta = t.c.taskEnvelope()
	}
	if _, cerr := conn.call(context.WithoutCancel(ctx), "tasks/cancel", taskIDJSON(id), o); cerr != nil {
		t.c.cfg.logger.Warn("could not cancel an abandoned task", "task", id, "err", cerr)
	}
	return err
}

// answer answers the task's open inputRequests that were not answered
// before, with one tasks/update (2026-07-28).
func (t *ToolTask) answer(ctx context.Context, conn *conn, o *callOptions) error {
	t.mu.Lock()
	id, asks := t.task.ID, t.asks
	var keys []string
	for key := range asks {
		if !t.answered[key] {
			keys = append(keys, key)
		}
	}
	t.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	responses := make(map[string]json.RawMessage, len(keys))
	for _, key := range keys {
		ask := asks[key]
		answer, err := t.c.answer(ctx, ask.Method, ask.Params)
		if err != nil {
			return errorf("answering task %s's %s ask %q: %w", id, ask.Method, key, err)
		}
		if responses[key], err = marshalResult(answer); err != nil {
			return err
		}
	}
	params, err := json.Marshal(struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}{id, responses})
	if err != nil {
		return err
	}
	if _, err := conn.call(ctx, "tasks/update", params, o); err != nil {
		return err
	}
	t.mu.Lock()
	for _, key := range keys {
		putEntry(&t.answered, key, true)
	}
	t.mu.Unlock()
	// A person may have taken a while to answer: the server was not silent.
	o.dl.extend()
	return nil
}

// outcome turns an ended task (or, on 2025-11-25, one that needs input,
// which tasks/result waits through) into what CallTool returns.
func (t *ToolTask) outcome(ctx context.Context, conn *conn, o *callOptions) (*CallToolResult, error) {
	t.mu.Lock()
	task, raw, failure := t.task, t.result, t.failure
	t.mu.Unlock()
	if raw == nil && task.ID != "" && !t.modern && task.Status != TaskCancelled {
		// tasks/result gives the original result or error, waiting
		// through the server's asks for input.
		var err error
		if raw, err = conn.call(ctx, "tasks/result", taskIDJSON(task.ID), o); err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.result = raw
		t.mu.Unlock()
		task.Status = TaskCompleted
	}
	switch {
	case task.Status == TaskCancelled:
		return nil, errorf("task %s (%s): %w", task.ID, t.name, ErrTaskCancelled)
	case failure != nil:
		return nil, failure
	case task.Status == TaskFailed && raw == nil:
		msg := task.StatusMessage
		if msg == "" {
			msg = "no reason given"
		}
		return nil, errorf("task %s (%s) failed: %s", task.ID, t.name, msg)
	case raw == nil:
		return nil, errorf("task %s (%s) completed without a result", task.ID, t.name)
	}
	var res CallToolResult
	if err := decodeCallToolResult(raw, &res); err != nil {
		return nil, errorf("decoding the result of task %s: %w", task.ID, err)
	}
	return &res, nil
}

// watchTask registers t for the status notifications of its task
// (2025-11-25); the channel is signalled when one changes the task.
func (c *Client) watchTask(t *ToolTask) chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	putEntry(&c.taskWatchers, t, ch)
	c.mu.Unlock()
	return ch
}

func (c *Client) unwatchTask(t *ToolTask, ch chan struct{}) {
	c.mu.Lock()
	if c.taskWatchers[t] == ch {
		delete(c.taskWatchers, t)
	}
	c.mu.Unlock()
}

// taskStatusChanged applies a notifications/tasks/status to the handles
// waiting on that task. It runs on the reader: it only records and signals.
func (c *Client) taskStatusChanged(params json.RawMessage) {
	task, err := decodeTask(params, false)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ch := range c.taskWatchers {
		if t.update(task) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// ListTasksResult is one page of tasks/list. Client side.
type ListTasksResult struct {
	Tasks []Task
	// NextCursor asks for the next page; it is empty on the last.
	NextCursor string
}

// ListTasks returns one page of the tasks the server keeps for this client
// (tasks/list); pass the previous page's NextCursor for the next, "" for
// the first. tasks/list exists only on 2025-11-25: on other revisions
// ListTasks returns an error without asking. Client side.
func (c *Client) ListTasks(ctx context.Context, cursor string, opts ...CallOption) (*ListTasksResult, error) {
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version != Version20251125 {
		return nil, errorf("tasks/list exists only on protocol revision %s; this connection speaks %q", Version20251125, version)
	}
	var page struct {
		Tasks      []json.RawMessage `json:"tasks"`
		NextCursor string            `json:"nextCursor"`
	}
	if err := c.SendRequest(ctx, "tasks/list", cursorParams(cursor), &page, opts...); err != nil {
		return nil, err
	}
	res := &ListTasksResult{NextCursor: page.NextCursor, Tasks: make([]Task, 0, len(page.Tasks))}
	for _, raw := range page.Tasks {
		task, err := decodeTask(raw, false)
		if err != nil {
			return nil, errorf("malformed tasks/list result: %w", err)
		}
		res.Tasks = append(res.Tasks, task)
	}
	return res, nil
}

// Tasks iterates over every task the server keeps for this client, page by
// page (tasks/list, 2025-11-25 only). Client side.
func (c *Client) Tasks(ctx context.Context, opts ...CallOption) iter.Seq2[Task, error] {
	return pages(ctx, c, opts, c.ListTasks, func(r *ListTasksResult) ([]Task, string) { return r.Tasks, r.NextCursor })
}
