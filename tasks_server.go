package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"
)

// TaskOptions configures the tasks of a server ([WithTasks]). A zero field
// keeps its default. Server side.
type TaskOptions struct {
	// Store keeps the tasks, running and ended, for their TTL. Nil: a
	// NewMemoryTaskStore(0, 0) of the server's own. A store that other
	// instances share (as mcpredis's does) lets any of them answer for a
	// task, and keeps leases (see Lease).
	Store TaskStore
	// MaxTasks caps the tasks the server runs at once (DefaultMaxTasks):
	// a tools/call that would start one more is refused with a -32000
	// error saying so, and may be retried. Ended tasks kept for their TTL
	// do not count.
	MaxTasks int
	// MaxTasksPerPrincipal caps the tasks the server runs at once for one
	// principal (DefaultMaxTasksPerPrincipal); without one, each 2025-11-25
	// session counts as a principal of its own, and every anonymous
	// 2026-07-28 request as one anonymous principal. A tools/call that
	// would start one more is refused with a -32000 error saying so, while
	// other principals still start theirs. How many tasks a principal may
	// keep stored is the TaskStore's bound (see
	// MemoryTaskStore.SetMaxTasksPerOwner).
	MaxTasksPerPrincipal int
	// TTL is how long the server keeps a task after creating it, its
	// result included (DefaultTaskTTL); a client that reads the task later
	// finds it unknown. Negative: as long as the server runs.
	TTL time.Duration
	// PollInterval is how often the server suggests that clients poll a
	// task (DefaultTaskPollInterval). Negative: it suggests nothing.
	PollInterval time.Duration
	// Lease is how long a task stays "working" in a Store given here after
	// the instance that runs it stopped renewing it (it crashed, or lost
	// the store): then the first instance that reads it fails it with an
	// error saying why (DefaultTaskLease). Negative turns leases off; the
	// server's own memory store keeps none.
	Lease time.Duration
}

// WithTasks lets the server's tools run as tasks: a tool whose
// Execution.TaskSupport is TaskOptional or TaskRequired may only be
// registered on a server given WithTasks, which then advertises tasks as
// the revision has them (the tasks capability on 2025-11-25, the tasks
// extension on 2026-07-28) and serves the tasks/* methods. A server
// without it links none of the task machinery.
// It configures a server (NewServer).
func WithTasks(opts TaskOptions) ServerOption {
	return serverOption(func(c *config) {
		sc := &c.server
		sc.tasks = newTaskHooks()
		sc.taskStore = opts.Store
		sc.maxTasks = positiveOr(opts.MaxTasks, DefaultMaxTasks)
		sc.maxTasksPerOwner = positiveOr(opts.MaxTasksPerPrincipal, DefaultMaxTasksPerPrincipal)
		sc.taskTTL = durationOr(opts.TTL, DefaultTaskTTL)
		sc.taskPollInterval = durationOr(opts.PollInterval, DefaultTaskPollInterval)
		sc.taskLease = durationOr(opts.Lease, DefaultTaskLease)
	})
}

// taskHooks are the core's ways into the task machinery. WithTasks makes
// them; the core calls through them and never names a task function
// itself, so that a server without tasks does not link them.
type taskHooks struct {
	newStore         func() TaskStore
	callAsTask       func(s *Server, ctx context.Context, st *serverTool, call *toolCall, info *RequestInfo) (any, error)
	callAsLegacyTask func(s *Server, ctx context.Context, st *serverTool, call *toolCall, info *RequestInfo, params json.RawMessage) (any, error)
	serveModern      func(s *Server, ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error)
	serveLegacy      func(ss *serverSession, ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error)
	askAsTask        func(ctx context.Context, c *conn, method string, params json.RawMessage, co *callOptions, ttl time.Duration) (json.RawMessage, error)
	honour           func(s *Server, ctx context.Context, want []string, info *RequestInfo) []string
	holdTask         func(s *Server, id string) channelHold
	setStatusMessage func(t *serverTask, message string)
}

func newTaskHooks() *taskHooks {
	return &taskHooks{
		newStore:         func() TaskStore { return NewMemoryTaskStore(0, 0) },
		callAsTask:       (*Server).callAsTask,
		callAsLegacyTask: (*Server).callAsLegacyTask,
		serveModern:      (*Server).serveModernTasks,
		serveLegacy:      (*serverSession).serveLegacyTasks,
		askAsTask:        askAsTask,
		honour:           (*Server).honourTasks,
		holdTask:         (*Server).watchTask,
		setStatusMessage: (*serverTask).setStatusMessage,
	}
}

// honourTasks returns the tasks of ids that the requester may watch.
func (s *Server) honourTasks(ctx context.Context, ids []string, info *RequestInfo) []string {
	var got []string
	for _, id := range ids {
		if _, err := s.taskStore().Get(ctx, info.taskOwner(), id); err == nil && !slices.Contains(got, id) {
			got = append(got, id)
		}
	}
	return got
}

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

// serverTask is a task running in this server: the handler's context, the
// asks it waits on and the answers it was given. Its state and outcome
// live in the server's TaskStore, written through on every change, in
// order, under mu (which only the task's own requests share).
type serverTask struct {
	srv    *Server
	owner  string // the principal that created it
	cancel context.CancelFunc
	// conn is the 2025-11-25 session's connection, which gets the task's
	// notifications/tasks/status; nil on 2026-07-28.
	conn *conn
	// replica is what the task owes the other instances (its lease, its
	// channel); nil when it lives in this process only.
	replica *taskReplica

	mu      sync.Mutex
	task    Task // as last changed; the store gets each change in order (storeLocked)
	asks    map[string]InputRequest
	answers map[string]json.RawMessage
	wake    chan struct{} // signalled when the last pending ask is answered
	done    chan struct{} // closed once terminal
	// changed is closed, and replaced, whenever the task changes, so that
	// a waiter sees every change without polling.
	changed chan struct{}

	// writes are the changes waiting to be written to the store, in
	// order; writing: a goroutine writes them (storeLocked); queued and
	// wrote count those queued and written, and stored is signalled after
	// each write.
	writes        []taskWrite
	writing       bool
	queued, wrote uint64
	stored        *sync.Cond
}

// taskWrite is one change of a task as the store gets it.
type taskWrite struct {
	task Task
	asks map[string]InputRequest
	// outcome is the terminal write's result or error; nil for a status.
	outcome *taskOutcome
}

type taskOutcome struct {
	result json.RawMessage
	err    *Error
}

// storeLocked writes the task's status, message and pending asks to the
// store (with outcome, its terminal result) and tells its waiters, in the
// order of the changes but never under the task's lock: the caller that
// finds no write in progress writes the queue, releasing the lock around
// each store call, and the others wait until their change is written.
// Called with t.mu held; it returns with t.mu held, the change stored.
func (t *serverTask) storeLocked(outcome *taskOutcome) {
	t.task.LastUpdatedAt = time.Now()
	t.writes = append(t.writes, taskWrite{task: t.task, asks: maps.Clone(t.asks), outcome: outcome})
	t.queued++
	mine := t.queued
	for t.writing && t.wrote < mine {
		t.stored.Wait()
	}
	if t.wrote >= mine {
		return
	}
	t.writing = true
	for len(t.writes) > 0 {
		w := t.writes[0]
		t.writes = t.writes[1:]
		t.mu.Unlock()
		t.write(&w)
		t.mu.Lock()
		if w.outcome != nil {
			t.task.Status = w.task.Status // failed, when the store had no room for the result
		}
		t.wrote++
		t.replica.changedLocked()
		close(t.changed)
		t.changed = make(chan struct{})
		t.stored.Broadcast()
	}
	t.writing = false
}

// write stores one change and tells a 2025-11-25 client, or this
// instance's listen streams, of it. The client is told before the
// task's waiters are (storeLocked), so that the status notification goes
// out before any answer a waiter then gives. With a broadcaster the change
// is published on the task's channel instead, from which every instance's
// listen streams hear of it, this one's included.
func (t *serverTask) write(w *taskWrite) {
	store := t.srv.taskStore()
	ctx, cancel := storeCtx()
	defer cancel()
	if w.outcome == nil {
		if err := store.UpdateStatus(ctx, t.owner, w.task.ID, w.task.Status, w.task.StatusMessage, w.asks); err != nil {
			t.srv.cfg.logger.Debug("cannot store a task's status", "task", w.task.ID, "err", err)
		}
	} else {
		err := store.PutResult(ctx, t.owner, w.task.ID, w.task.Status, w.outcome.result, w.outcome.err)
		if errors.Is(err, ErrTaskStoreFull) {
			w.task.Status = TaskFailed
			err = store.PutResult(ctx, t.owner, w.task.ID, TaskFailed, nil,
				&Error{Code: CodeInternalError, Message: "Internal error: the task's result is larger than the task store holds"})
		}
		if err != nil && !errors.Is(err, ErrTaskNotFound) {
			t.srv.cfg.logger.Debug("cannot store a task's outcome", "task", w.task.ID, "err", err)
		}
	}
	if t.conn != nil {
		b := appendTaskMembers(append(messageBuffer(256), '{'), &w.task, false)
		if err := t.conn.notify("notifications/tasks/status", json.RawMessage(append(b, '}')), ID{}, nil); err != nil {
			t.srv.cfg.logger.Debug("cannot send a task's status", "task", w.task.ID, "err", err)
		}
		return
	}
	if t.replica.publishes() || !t.srv.watchesTask(w.task.ID) {
		return
	}
	// notifications/tasks carries the task as tasks/get reports it.
	rec, err := store.Get(ctx, t.owner, w.task.ID)
	if err != nil {
		return
	}
	b, err := appendDetailedTask(append(messageBuffer(256), '{'), rec)
	if err != nil {
		return
	}
	id := w.task.ID
	t.srv.broadcast("notifications/tasks", json.RawMessage(append(b, '}')), "",
		func(*serverSession) bool { return false },
		func(f *SubscriptionFilter) bool { return slices.Contains(f.TaskIDs, id) })
}

// taskTable holds the tasks running in a server by id.
type taskTable struct {
	mu      sync.Mutex
	tasks   map[string]*serverTask
	byOwner map[string]int // how many tasks each owner runs
}

// reserve adds t unless max tasks already run, or perOwner of t's owner:
// the error to answer then.
func (tt *taskTable) reserve(t *serverTask, max, perOwner int) *Error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if len(tt.tasks) >= max {
		return &Error{Code: CodeOverloaded, Message: fmt.Sprintf("Server overloaded: %d tasks are running, as many as the server runs at once; try again later", max)}
	}
	if tt.byOwner[t.owner] >= perOwner {
		return &Error{Code: CodeOverloaded, Message: fmt.Sprintf("Server overloaded: %d of your tasks are running, as many as the server runs at once for one requester; try again when one ends", perOwner)}
	}
	if tt.tasks == nil {
		tt.tasks = make(map[string]*serverTask)
		tt.byOwner = make(map[string]int)
	}
	tt.tasks[t.task.ID] = t
	tt.byOwner[t.owner]++
	return nil
}

// find returns the running task id if principal owns it.
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
	t := tt.tasks[id]
	if t == nil {
		return
	}
	delete(tt.tasks, id)
	if tt.byOwner[t.owner]--; tt.byOwner[t.owner] <= 0 {
		delete(tt.byOwner, t.owner)
	}
}

// len is how many tasks are running.
func (tt *taskTable) len() int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.tasks)
}

// taskOwner is who owns the tasks the request creates, and whose tasks it
// may see, read and cancel: its principal. Without one, on the older
// revisions, its session owns them (the HTTP session, shared by the
// instances of a SessionStore, or else the connection), so that anonymous
// clients do not share tasks. An anonymous 2026-07-28 request has no
// session: its tasks belong to every anonymous requester that holds their
// id, which is unguessable and told only to the task's creator.
func (r *RequestInfo) taskOwner() string {
	if p := r.Principal(); p != "" || r.modern || r.session == nil {
		return p
	}
	return r.session.anonymousOwner()
}

// taskStore returns the server's TaskStore.
func (s *Server) taskStore() TaskStore { return s.store }

// storeError is the protocol error of a failed TaskStore call.
func storeError(id string, err error) *Error {
	if errors.Is(err, ErrTaskNotFound) {
		return errUnknownTask(id)
	}
	return &Error{Code: CodeInternalError, Message: "Internal error: the task store: " + err.Error()}
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
		if round := info.inputRound(false); round != nil {
			round.mu.Lock()
			asked := len(round.asks) > 0
			round.mu.Unlock()
			if asked {
				return nil, ErrInputRequired // finishRound turns it into input_required
			}
		}
	}
	task, err := s.startTask(ctx, call, st.handler, info, s.cfg.server.taskTTL)
	if err != nil {
		return nil, err
	}
	b := []byte(`{"resultType":"task",`)
	b = appendTaskMembers(b, &task, true)
	return json.RawMessage(append(b, '}')), nil
}

// startTask creates a task for call, kept for ttl (0: no limit), and runs
// its handler detached from the request, with a context of its own that
// tasks/cancel and the TTL end; it keeps the request context's values (a
// trace the inbound middleware started, say), not its end. The task is in
// the store before startTask returns it as created: working.
func (s *Server) startTask(ctx context.Context, call *toolCall, h ToolHandler, info *RequestInfo, ttl time.Duration) (Task, error) {
	now := time.Now()
	id := newTaskID()
	// The handler outlives the request, but keeps its values (a trace,
	// say).
	taskCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &serverTask{
		srv:    s,
		owner:  info.taskOwner(),
		cancel: cancel,
		task: Task{ID: id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now,
			TTL: ttl, PollInterval: s.cfg.server.taskPollInterval},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	t.stored = sync.NewCond(&t.mu)
	created := t.task
	if err := s.tasks.reserve(t, s.cfg.server.maxTasks, s.cfg.server.maxTasksPerOwner); err != nil {
		cancel()
		return Task{}, err
	}
	// Subscribed to the task's channel, if any, before anyone knows the
	// id, so that a tasks/cancel or tasks/update on another instance
	// reaches the task.
	r, err := s.replicate(ctx, t)
	if err != nil {
		s.tasks.remove(id)
		cancel()
		return Task{}, err
	}
	t.replica = r
	rec := &TaskRecord{Task: created, Owner: t.owner, LeaseExpires: r.leaseExpires(now)}
	if err := s.taskStore().Create(ctx, rec); err != nil {
		r.stop()
		s.tasks.remove(id)
		cancel()
		if errors.Is(err, ErrTaskStoreFull) {
			return Task{}, &Error{Code: CodeOverloaded, Message: "Server overloaded: the task store is full; try again later"}
		}
		if errors.Is(err, ErrTaskQuotaExceeded) {
			return Task{}, &Error{Code: CodeOverloaded, Message: "Server overloaded: you hold as many tasks as the task store keeps for one requester; try again when one expires"}
		}
		return Task{}, storeError(id, err)
	}
	if round := info.inputRound(false); round != nil {
		round.mu.Lock()
		t.answers = maps.Clone(round.answers)
		round.mu.Unlock()
	}
	if ttl > 0 {
		time.AfterFunc(ttl, func() {
			cancel()
			s.tasks.remove(id)
			ctx, cancel := storeCtx()
			defer cancel()
			if _, err := s.taskStore().DeleteExpired(ctx, time.Now()); err != nil {
				s.cfg.logger.Debug("cannot delete expired tasks", "err", err)
			}
		})
	}
	// The task's own view of the request: nothing in it refers to the
	// request's connection, which may be gone long before the task ends.
	ti := &RequestInfo{
		inboundRequest: inboundRequest{id: info.id, method: info.method},
		version:        info.version,
		modern:         info.modern,
		caps:           info.caps,
		session:        info.session,
		task:           t,
	}
	if !info.modern {
		// A 2025-11-25 task asks the client with live requests on the
		// session's connection, related to no request.
		ti.conn, t.conn = info.conn, info.conn
	}
	r.start()
	params := call.p
	go s.runTask(taskCtx, t, h, &params, ti)
	return created, nil
}

// runTask runs a task's handler until the task ends. A run that leaves
// asks unanswered makes the task input_required; once every ask has an
// answer (tasks/update), the handler runs again from the top with them, as
// a 2026-07-28 retry would.
func (s *Server) runTask(ctx context.Context, t *serverTask, h ToolHandler, p *CallToolParams, base *RequestInfo) {
	defer t.cancel()
	defer t.replica.stop()
	var payload json.RawMessage
	for round := 0; ; round++ {
		info := *base
		info.gateway = nil
		t.mu.Lock()
		info.round = &inputRound{owner: base.Principal(), method: "tools/call", answers: maps.Clone(t.answers), payload: payload}
		t.mu.Unlock()
		res, err := runTaskHandler(ctx, s.cfg.panicLogger, h, &CallToolRequest{Params: p, RequestInfo: &info})
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
		// As on a plain call: a bounded number of rounds, and no ask the
		// client did not declare it can answer.
		if round == maxShimRounds {
			t.complete(nil, errKeptAsking())
			return
		}
		if err := checkAsks(base.caps, asks); err != nil {
			t.complete(nil, err)
			return
		}
		if !base.modern {
			if err := t.askLive(ctx, asks); err != nil {
				if ctx.Err() != nil {
					t.finish(TaskCancelled, nil, nil)
				} else {
					t.complete(nil, err)
				}
				return
			}
			continue
		}
		if !t.await(ctx, asks) {
			t.finish(TaskCancelled, nil, nil)
			return
		}
	}
}

// runTaskHandler runs a task's handler, turning a panic into the task's
// protocol error, and logging it with its stack as a request's handler's
// panic is.
func runTaskHandler(ctx context.Context, logger func() *slog.Logger, h ToolHandler, req *CallToolRequest) (res *CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			logger().Error("task handler panicked", attrMethod, "tools/call", "tool", req.Params.Name, "panic", v, "stack", string(debug.Stack()))
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

// finish moves the task to a terminal status, unless it already is in one,
// stores its outcome, and takes it off the running tasks. A result too
// large for the store fails the task instead.
func (t *serverTask) finish(status TaskStatus, result json.RawMessage, rpcErr *Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.task.Status.Terminal() {
		return
	}
	t.task.Status, t.asks = status, nil
	t.storeLocked(&taskOutcome{result: result, err: rpcErr})
	t.replica.endedLocked()
	t.srv.tasks.remove(t.task.ID)
	close(t.done)
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
		t.storeLocked(nil)
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
	if t.task.Status == TaskInputRequired {
		t.task.Status = TaskWorking
		t.storeLocked(nil)
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
	if !answered {
		return
	}
	if len(t.asks) > 0 {
		t.storeLocked(nil) // the answered asks are no longer reported
		return
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// setStatusMessage is what Progress does inside a task.
func (t *serverTask) setStatusMessage(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.task.Status.Terminal() || msg == "" || msg == t.task.StatusMessage {
		return
	}
	t.task.StatusMessage = msg
	t.storeLocked(nil)
}

// appendDetailedTask appends the members of a task as tasks/get reports
// it on 2026-07-28, without braces: the task's own, and its inputRequests,
// result or error.
func appendDetailedTask(b []byte, rec *TaskRecord) ([]byte, error) {
	b = appendTaskMembers(b, &rec.Task, true)
	switch {
	case rec.Status == TaskInputRequired && len(rec.InputRequests) > 0:
		raw, err := json.Marshal(rec.InputRequests)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"inputRequests":`...)
		b = append(b, raw...)
	case rec.Status == TaskCompleted:
		b = append(b, `,"result":`...)
		b = append(b, rec.Result...)
	case rec.Status == TaskFailed && rec.Error != nil:
		raw, err := json.Marshal(rec.Error)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"error":`...)
		b = append(b, raw...)
	}
	return b, nil
}

// serveModernTasks serves the tasks/* methods on 2026-07-28: tasks/get,
// tasks/update and tasks/cancel for a client that declared the extension
// on the request; tasks/result and tasks/list do not exist there.
func (s *Server) serveModernTasks(ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error) {
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
	owner := info.taskOwner()
	rec, err := s.readTask(ctx, owner, p.TaskID)
	if err != nil {
		return nil, storeError(p.TaskID, err)
	}
	switch req.method {
	case "tasks/get":
		b, err := appendDetailedTask(append(messageBuffer(256), `{"resultType":"complete",`...), rec)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(append(b, '}')), nil
	case "tasks/update":
		if t := s.tasks.find(p.TaskID, owner); t != nil {
			t.answer(p.InputResponses)
		} else if !rec.Status.Terminal() {
			// It runs on another instance, if on any.
			if err := s.answerElsewhere(ctx, owner, p.TaskID, p.InputResponses); err != nil {
				return nil, internalError(err)
			}
		}
	case "tasks/cancel":
		if err := s.cancelTask(ctx, rec); err != nil {
			return nil, err
		}
	}
	return json.RawMessage(`{"resultType":"complete"}`), nil
}

// cancelTask cancels a task that has not ended: the handler's context ends
// if it runs here, and the task is cancelled in the store either way. With
// a broadcaster, the instance that runs it is told to end the handler's
// context; if it cannot be told, the reason is logged and the task stays
// cancelled, as the store says.
func (s *Server) cancelTask(ctx context.Context, rec *TaskRecord) error {
	if rec.Status.Terminal() {
		return nil
	}
	if t := s.tasks.find(rec.ID, rec.Owner); t != nil {
		t.finish(TaskCancelled, nil, nil)
		t.cancel()
		return nil
	}
	if err := s.taskStore().PutResult(ctx, rec.Owner, rec.ID, TaskCancelled, nil, nil); err != nil {
		return storeError(rec.ID, err)
	}
	if err := s.cancelElsewhere(ctx, rec.Owner, rec.ID); err != nil {
		s.cfg.logger.Warn("a task cancelled in the store may run on", "task", rec.ID, "err", err)
	}
	return nil
}

// legacyTasksCapability is the tasks capability of a 2025-11-25 server
// with task tools: tasks/list, tasks/cancel and task-augmented tools/call.
const legacyTasksCapability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`

// callAsLegacyTask serves a 2025-11-25 tools/call of a tool that may run
// as a task: with params.task it becomes one, kept for the TTL the client
// asked if that is shorter than the server's; without, a required tool is
// -32601 and an optional one runs synchronously.
func (s *Server) callAsLegacyTask(ctx context.Context, st *serverTool, call *toolCall, info *RequestInfo, params json.RawMessage) (any, error) {
	var p struct {
		Task *struct {
			TTL *int64 `json:"ttl"`
		} `json:"task"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: task must be an object {\"ttl\"?: number}"}
	}
	if p.Task == nil {
		if taskSupport(st.tool) == TaskRequired {
			return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("Method not found: tool %q runs only as a task; call it with params.task", st.tool.Name)}
		}
		res, err := st.handler(ctx, &call.req)
		return toolOutcome(res, err)
	}
	ttl := s.cfg.server.taskTTL
	if p.Task.TTL != nil && *p.Task.TTL > 0 {
		if d := peerDuration(*p.Task.TTL, time.Millisecond); ttl == 0 || d < ttl {
			ttl = d
		}
	}
	task, err := s.startTask(ctx, call, st.handler, info, ttl)
	if err != nil {
		return nil, err
	}
	b := appendTaskMembers([]byte(`{"task":{`), &task, false)
	return json.RawMessage(append(b, "}}"...)), nil
}

// askLive sends a 2025-11-25 task's asks (of an InputRequiredError) to the
// client as live requests, the task input_required meanwhile, and files the
// answers. An ask the client refuses, or that cannot reach it, ends the
// asking with that error, which ends the task: asking again would be
// refused again.
func (t *serverTask) askLive(ctx context.Context, asks map[string]InputRequest) error {
	t.setAsking(true)
	defer t.setAsking(false)
	for key, ask := range asks {
		params := withMeta(ask.Params, relatedTask(t.task.ID))
		answer, err := t.conn.call(ctx, ask.Method, params, &callOptions{})
		if err != nil {
			var rpcErr *Error
			if errors.As(err, &rpcErr) {
				return &Error{Code: rpcErr.Code, Message: fmt.Sprintf("the client answered %s with an error: %s", ask.Method, rpcErr.Message), Data: rpcErr.Data}
			}
			return fmt.Errorf("asking the client (%s): %w", ask.Method, err)
		}
		t.mu.Lock()
		putEntry(&t.answers, key, answer)
		t.mu.Unlock()
	}
	return nil
}

// setAsking moves a 2025-11-25 task to input_required while it waits on a
// live ask, and back to working after.
func (t *serverTask) setAsking(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	from, to := TaskWorking, TaskInputRequired
	if !on {
		from, to = to, from
	}
	if t.task.Status == from {
		t.task.Status = to
		t.storeLocked(nil)
	}
}

// appendLegacyTask appends a task as 2025-11-25 results carry it.
func appendLegacyTask(b []byte, rec *TaskRecord) []byte {
	b = appendTaskMembers(append(b, '{'), &rec.Task, false)
	return append(b, '}')
}

// serveLegacyTasks serves the tasks/* methods of 2025-11-25: tasks/get,
// tasks/result (which waits for the task to end), tasks/list and
// tasks/cancel, each on the caller's own tasks.
func (ss *serverSession) serveLegacyTasks(ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error) {
	s := ss.srv
	owner := info.taskOwner()
	if req.method == "tasks/list" {
		var p listParams
		if err := decodeParams(req.params, &p); err != nil {
			return nil, err
		}
		recs, next, err := s.taskStore().List(ctx, owner, p.Cursor, s.cfg.server.pageSize)
		if err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
		}
		b := append(messageBuffer(64+256*len(recs)), `{"tasks":[`...)
		for i, rec := range recs {
			if i > 0 {
				b = append(b, ',')
			}
			if rec, err = s.reclaim(ctx, rec); err != nil {
				return nil, storeError(recs[i].ID, err)
			}
			b = appendLegacyTask(b, rec)
		}
		b = append(b, ']')
		if next != "" {
			b = appendJSONString(append(b, `,"nextCursor":`...), next)
		}
		return json.RawMessage(append(b, '}')), nil
	}
	switch req.method {
	case "tasks/get", "tasks/result", "tasks/cancel":
	default:
		return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method}
	}
	var p taskIDParams
	if err := decodeParams(req.params, &p); err != nil {
		return nil, err
	}
	rec, err := s.readTask(ctx, owner, p.TaskID)
	if err != nil {
		return nil, storeError(p.TaskID, err)
	}
	switch req.method {
	case "tasks/get":
		return json.RawMessage(appendLegacyTask(nil, rec)), nil
	case "tasks/cancel":
		if rec.Status.Terminal() {
			return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: task %q already ended (%s) and cannot be cancelled", rec.ID, rec.Status)}
		}
		if err := s.cancelTask(ctx, rec); err != nil {
			return nil, err
		}
		if rec, err = s.taskStore().Get(ctx, owner, p.TaskID); err != nil {
			return nil, storeError(p.TaskID, err)
		}
		return json.RawMessage(appendLegacyTask(nil, rec)), nil
	}
	// tasks/result: wait for the end, then answer as the call would have.
	// The store is read again either way: a task that ended since rec was
	// read has left the running set only after storing its outcome. A task
	// that runs on another instance is waited on through its channel.
	if t := s.tasks.find(p.TaskID, owner); t != nil {
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else if !rec.Status.Terminal() {
		if err := s.awaitElsewhere(ctx, owner, p.TaskID); err != nil {
			return nil, err
		}
	}
	if rec, err = s.taskStore().Get(ctx, owner, p.TaskID); err != nil {
		return nil, storeError(p.TaskID, err)
	}
	switch rec.Status {
	case TaskCompleted:
		return withMeta(rec.Result, relatedTask(rec.ID)), nil
	case TaskFailed:
		if rec.Error == nil {
			return nil, &Error{Code: CodeInternalError, Message: "Internal error: the task failed"}
		}
		return nil, rec.Error
	case TaskCancelled:
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: task %q was cancelled and has no result", rec.ID)}
	}
	return nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: task %q runs in another server process, which holds its result; servers that share a task store wait on each other's tasks when they share a Broadcaster too (WithBroadcaster)", rec.ID)}
}

// taskRequest reports whether the client declared, in its 2025-11-25
// capabilities.tasks.requests, that it runs requests of method as tasks.
func (s capabilitySet) taskRequest(method string) bool {
	raw, ok := s.members()["tasks"]
	if !ok {
		return false
	}
	var v struct {
		Requests struct {
			Elicitation struct {
				Create json.RawMessage `json:"create"`
			} `json:"elicitation"`
			Sampling struct {
				CreateMessage json.RawMessage `json:"createMessage"`
			} `json:"sampling"`
		} `json:"requests"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var sub json.RawMessage
	switch method {
	case "elicitation/create":
		sub = v.Requests.Elicitation.Create
	case "sampling/createMessage":
		sub = v.Requests.Sampling.CreateMessage
	}
	return len(sub) > 0 && sub[0] == '{'
}

// askAsTask sends a 2025-11-25 task's ask as a task-augmented request, kept
// by the client for ttl (0: as long as the client keeps tasks), and waits
// for its outcome with tasks/result, under the ask's context and timeouts.
// An ask that ends otherwise (cancelled, timed out) is cancelled on the
// client with tasks/cancel. A client that answers at once, without a task,
// has given the answer.
func askAsTask(ctx context.Context, c *conn, method string, params json.RawMessage, co *callOptions, ttl time.Duration) (json.RawMessage, error) {
	task := []byte(`{"task":{}`)
	if ttl > 0 {
		task = strconv.AppendInt([]byte(`{"task":{"ttl":`), ttl.Milliseconds(), 10)
		task = append(task, '}')
	}
	p := trimJSONSpace(params)
	if len(p) > 2 && p[0] == '{' {
		task = append(append(task, ','), p[1:]...)
	} else {
		task = append(task, '}')
	}
	// The client answers at once with the task it created; that answer is
	// awaited even if ctx ends meanwhile, so that the task can be cancelled.
	created, err := c.call(context.WithoutCancel(ctx), method, task, co)
	if err != nil {
		return nil, err
	}
	var res struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(created, &res) != nil || len(res.Task) == 0 {
		return created, nil
	}
	t, err := decodeTask(res.Task, false)
	if err != nil {
		return nil, errorf("the client's answer to a task-augmented %s: %w", method, err)
	}
	id := appendJSONString([]byte(`{"taskId":`), t.ID)
	id = append(id, '}')
	answer, err := c.call(ctx, "tasks/result", id, co)
	var rpcErr *Error
	if err != nil && !errors.As(err, &rpcErr) && c.closedErr() == nil {
		// Nothing waits for the task now: the client may stop it. Bounded
		// by the connection's request timeout, as any request is.
		if _, cerr := c.call(context.WithoutCancel(ctx), "tasks/cancel", id, &callOptions{}); cerr != nil {
			c.log.Debug("cannot cancel a task on the client", "task", t.ID, "err", cerr)
		}
	}
	return answer, err
}
