package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// WithTaskRequests lets a 2025-11-25 server send the elicitation/create and
// sampling/createMessage requests this client has handlers for as tasks:
// the client declares capabilities.tasks (requests.elicitation.create,
// requests.sampling.createMessage, list and cancel), answers such a request
// at once with the task it created, runs the handler detached from the
// request, and serves tasks/get, tasks/result, tasks/list and tasks/cancel
// on its tasks, within opts. Off by default: a task-augmented ask outlives
// the request that sent it, which a client should choose. Other revisions
// ignore it.
// It configures a client (NewClient).
func WithTaskRequests(opts TaskRequestOptions) ClientOption {
	return clientOption(func(c *config) {
		cc := &c.client
		cc.taskRequests = true
		cc.maxTaskRequests = positiveOr(opts.MaxTasks, DefaultMaxTasks)
		cc.taskRequestTTL = durationOr(opts.MaxTTL, DefaultTaskTTL)
		cc.taskRequestPage = positiveOr(opts.PageSize, DefaultPageSize)
	})
}

// TaskRequestOptions bounds the tasks a client runs for its server
// ([WithTaskRequests]). A zero field keeps its default. Client side.
type TaskRequestOptions struct {
	// MaxTasks caps the tasks the client holds (DefaultMaxTasks), ended
	// ones kept for their TTL included (it keeps their results); a
	// request that would start one more is refused with a -32000 error
	// saying so.
	MaxTasks int
	// MaxTTL is the longest the client keeps a task, however long its
	// server asks (DefaultTaskTTL); the handler's context ends with it.
	// Negative: as long as the server asks, and the connection lasts.
	MaxTTL time.Duration
	// PageSize is how many tasks one page of tasks/list holds
	// (DefaultPageSize).
	PageSize int
}

// tasksCapability is the capabilities.tasks a client declares on
// 2025-11-25: the task-augmented requests it has handlers for; nil when
// WithTaskRequests was not given or there are none.
func (c *Client) tasksCapability() json.RawMessage {
	cc := &c.cfg.client
	if !cc.taskRequests || (cc.elicitation == nil && cc.sampling == nil) {
		return nil
	}
	b := []byte(`{"list":{},"cancel":{},"requests":{`)
	if cc.elicitation != nil {
		b = append(b, `"elicitation":{"create":{}}`...)
	}
	if cc.sampling != nil {
		if cc.elicitation != nil {
			b = append(b, ',')
		}
		b = append(b, `"sampling":{"createMessage":{}}`...)
	}
	return append(b, "}}"...)
}

// receivedTask is a task a server asked this client to run: the handler's
// context and, once it ended, its outcome. Its fields are guarded by the
// receiver's mu.
type receivedTask struct {
	task    Task
	expires time.Time // zero: kept as long as the connection lasts
	cancel  context.CancelFunc
	done    chan struct{} // closed when the task becomes terminal
	result  json.RawMessage
	err     *Error
}

// taskReceiver holds the tasks of one connection of a client, by id and in
// the order they were created (the order tasks/list pages through).
type taskReceiver struct {
	c    *Client
	conn *conn

	mu    sync.Mutex
	tasks map[string]*receivedTask
	order []*receivedTask
}

// pruneLocked forgets the tasks whose TTL has passed; their handlers'
// contexts ended at the same deadline.
func (r *taskReceiver) pruneLocked(now time.Time) {
	kept := r.order[:0]
	for _, t := range r.order {
		if !t.expires.IsZero() && !now.Before(t.expires) {
			t.cancel()
			delete(r.tasks, t.task.ID)
			continue
		}
		kept = append(kept, t)
	}
	clear(r.order[len(kept):])
	r.order = kept
}

// find returns the task id, or the -32602 error of an unknown one.
func (r *taskReceiver) findLocked(id string) (*receivedTask, error) {
	r.pruneLocked(time.Now())
	t := r.tasks[id]
	if t == nil {
		return nil, errUnknownTask(id)
	}
	return t, nil
}

// serve answers the requests that concern the client's tasks: a
// task-augmented elicitation/create or sampling/createMessage, and the
// tasks/* methods. ok is false for any other request.
func (r *taskReceiver) serve(ctx context.Context, method string, params json.RawMessage) (result any, err error, ok bool) {
	switch method {
	case "elicitation/create", "sampling/createMessage":
		var p struct {
			Task *struct {
				TTL *int64 `json:"ttl"`
			} `json:"task"`
		}
		if json.Unmarshal(params, &p) != nil || p.Task == nil {
			return nil, nil, false // the handler's own decoding reports bad params
		}
		cc := &r.c.cfg.client
		if (method == "elicitation/create" && cc.elicitation == nil) || (method == "sampling/createMessage" && cc.sampling == nil) {
			return nil, nil, false // not declared: answered as not handled
		}
		var ttl time.Duration
		if p.Task.TTL != nil {
			ttl = peerDuration(*p.Task.TTL, time.Millisecond)
		}
		res, err := r.start(method, params, ttl)
		return res, err, true
	case "tasks/list":
		res, err := r.list(params)
		return res, err, true
	case "tasks/get", "tasks/result", "tasks/cancel":
	default:
		return nil, nil, false
	}
	var p taskIDParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err, true
	}
	r.mu.Lock()
	t, err := r.findLocked(p.TaskID)
	if err != nil {
		r.mu.Unlock()
		return nil, err, true
	}
	switch method {
	case "tasks/get":
		b := appendLegacyTaskOf(&t.task)
		r.mu.Unlock()
		return b, nil, true
	case "tasks/cancel":
		if t.task.Status.Terminal() {
			r.mu.Unlock()
			return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: task %q already ended (%s) and cannot be cancelled", t.task.ID, t.task.Status)}, true
		}
		t.cancel()
		status := r.endLocked(t, TaskCancelled, nil, nil)
		r.mu.Unlock()
		r.notify(status)
		close(t.done)
		return appendLegacyTaskOf(&status), nil, true
	}
	r.mu.Unlock()
	// tasks/result: wait for the end, then answer as the request would have.
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err(), true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch t.task.Status {
	case TaskCompleted:
		return withMeta(t.result, relatedTask(t.task.ID)), nil, true
	case TaskFailed:
		return nil, t.err, true
	}
	return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: task %q was cancelled and has no result", t.task.ID)}, true
}

// appendLegacyTaskOf is a task as a 2025-11-25 result carries it.
func appendLegacyTaskOf(t *Task) json.RawMessage {
	b := appendTaskMembers(append(messageBuffer(256), '{'), t, false)
	return append(b, '}')
}

// start creates a task for a task-augmented request, kept for ttl (or the
// client's TaskRequestOptions.MaxTTL when that is shorter or ttl is 0), and runs the
// handler detached, with a context that tasks/cancel, the TTL and Close end.
func (r *taskReceiver) start(method string, params json.RawMessage, ttl time.Duration) (any, error) {
	if max := r.c.cfg.client.taskRequestTTL; max > 0 && (ttl == 0 || ttl > max) {
		ttl = max
	}
	now := time.Now()
	t := &receivedTask{
		task: Task{ID: newTaskID(), Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: ttl},
		done: make(chan struct{}),
	}
	var ctx context.Context
	if ttl > 0 {
		t.expires = now.Add(ttl)
		ctx, t.cancel = context.WithDeadline(r.conn.baseCtx, t.expires)
	} else {
		ctx, t.cancel = context.WithCancel(r.conn.baseCtx)
	}
	r.mu.Lock()
	r.pruneLocked(now)
	if max := r.c.cfg.client.maxTaskRequests; len(r.tasks) >= max {
		r.mu.Unlock()
		t.cancel()
		return nil, &Error{Code: CodeOverloaded, Message: fmt.Sprintf("Client overloaded: it holds %d tasks, as many as it keeps at once; try again later", max)}
	}
	putEntry(&r.tasks, t.task.ID, t)
	r.order = append(r.order, t)
	created := t.task
	// Counted while the request that starts it is still being served, so
	// that Close waits for the handler too.
	r.conn.wg.Add(1)
	r.mu.Unlock()
	go r.run(ctx, t, method, params)
	b := appendTaskMembers(append(messageBuffer(256), `{"task":{`...), &created, false)
	return json.RawMessage(append(b, "}}"...)), nil
}

// run runs a task's handler and files its outcome; a panic fails the task.
func (r *taskReceiver) run(ctx context.Context, t *receivedTask, method string, params json.RawMessage) {
	defer r.conn.wg.Done()
	defer t.cancel()
	var (
		res any
		err error
	)
	func() {
		defer func() {
			if v := recover(); v != nil {
				r.conn.logPanic("task handler panicked", method, v)
				res, err = nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: the handler panicked: %v", v)}
			}
		}()
		res, err = r.c.answer(ctx, method, params)
	}()
	var raw json.RawMessage
	var rpcErr *Error
	status := TaskCompleted
	if err == nil {
		if raw, err = marshalResult(res); err != nil {
			err = &Error{Code: CodeInternalError, Message: "Internal error: encoding the result: " + err.Error()}
		}
	}
	if err != nil {
		status, rpcErr = TaskFailed, asRPCError(err)
	}
	r.mu.Lock()
	if t.task.Status.Terminal() {
		r.mu.Unlock()
		return
	}
	final := r.endLocked(t, status, raw, rpcErr)
	r.mu.Unlock()
	r.notify(final)
	close(t.done)
}

// asRPCError is err as a protocol error: itself if it is one.
func asRPCError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}

// endLocked makes t terminal with its outcome and returns the task as it
// now stands. The caller, which ended it, then tells the server and only
// then closes t.done to wake the waiters: the status notification goes out
// before the answer a waiting tasks/result gives.
func (r *taskReceiver) endLocked(t *receivedTask, status TaskStatus, result json.RawMessage, err *Error) Task {
	t.task.Status, t.task.LastUpdatedAt = status, time.Now()
	t.result, t.err = result, err
	return t.task
}

// notify tells the server that a task changed (notifications/tasks/status,
// optional in the protocol); a closed connection is no error here.
func (r *taskReceiver) notify(t Task) {
	if err := r.conn.notify("notifications/tasks/status", appendLegacyTaskOf(&t), ID{}, nil); err != nil {
		r.c.cfg.logger.Debug("cannot send a task's status", "task", t.ID, "err", err)
	}
}

// list answers tasks/list: the tasks in creation order, WithPageSize at a
// time; the cursor is the id of the last task of the previous page.
func (r *taskReceiver) list(params json.RawMessage) (any, error) {
	var p listParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked(time.Now())
	from := 0
	if p.Cursor != "" {
		from = -1
		for i, t := range r.order {
			if t.task.ID == p.Cursor {
				from = i + 1
				break
			}
		}
		if from < 0 {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown cursor"}
		}
	}
	page := r.order[from:]
	next := ""
	if n := r.c.cfg.client.taskRequestPage; len(page) > n {
		page = page[:n]
		next = page[n-1].task.ID
	}
	b := append(messageBuffer(64+256*len(page)), `{"tasks":[`...)
	for i, t := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTaskMembers(append(b, '{'), &t.task, false)
		b = append(b, '}')
	}
	b = append(b, ']')
	if next != "" {
		b = appendJSONString(append(b, `,"nextCursor":`...), next)
	}
	return json.RawMessage(append(b, '}')), nil
}
