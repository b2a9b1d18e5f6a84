package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// TaskSupport says whether a tool may run as a task, work that outlives
// the request that started it. Both sides: a server declares it in
// Tool.Execution, a client reads it there.
type TaskSupport string

const (
	// TaskForbidden tools never run as tasks; it is what an empty
	// TaskSupport means.
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional tools run as a task when the client asks for one.
	TaskOptional TaskSupport = "optional"
	// TaskRequired tools run only as a task.
	TaskRequired TaskSupport = "required"
)

// ToolExecution says how a tool runs. Both sides.
type ToolExecution struct {
	TaskSupport TaskSupport `json:"taskSupport,omitempty"`
}

// TaskStatus is where a task stands. Both sides.
type TaskStatus string

const (
	TaskWorking       TaskStatus = "working"        // running
	TaskInputRequired TaskStatus = "input_required" // waiting for the client's answers
	TaskCompleted     TaskStatus = "completed"      // ended with a result
	TaskFailed        TaskStatus = "failed"         // ended with an error
	TaskCancelled     TaskStatus = "cancelled"      // ended by tasks/cancel
)

// Terminal reports whether s is final: a task that reached it never
// changes again.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Task is the state of a task as a server reports it, on either protocol
// revision. Both sides.
type Task struct {
	ID            string
	Status        TaskStatus
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is how long the server keeps the task after it was created;
	// zero means no limit (null on the wire).
	TTL time.Duration
	// PollInterval is how often the server suggests polling; zero when it
	// gives none.
	PollInterval time.Duration
}

// taskWire is a Task as the wire carries it. 2025-11-25 names the
// durations ttl and pollInterval, 2026-07-28 ttlMs and pollIntervalMs;
// both count milliseconds, and a null TTL means no limit.
type taskWire struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTL            *int64     `json:"ttl,omitempty"`
	PollInterval   *int64     `json:"pollInterval,omitempty"`
	TTLMs          *int64     `json:"ttlMs,omitempty"`
	PollIntervalMs *int64     `json:"pollIntervalMs,omitempty"`
}

// taskTimeLayout is how task times are written: ISO 8601 in UTC.
const taskTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// appendTaskMembers appends t's members, without braces, as the revision
// (modern: 2026-07-28) names them, so that a result may carry them inline
// beside its own. The TTL member is always written: null means no limit.
func appendTaskMembers(b []byte, t *Task, modern bool) []byte {
	b = append(b, `"taskId":`...)
	b = appendJSONString(b, t.ID)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(t.Status))
	if t.StatusMessage != "" {
		b = append(b, `,"statusMessage":`...)
		b = appendJSONString(b, t.StatusMessage)
	}
	b = append(b, `,"createdAt":`...)
	b = appendJSONString(b, t.CreatedAt.UTC().Format(taskTimeLayout))
	b = append(b, `,"lastUpdatedAt":`...)
	b = appendJSONString(b, t.LastUpdatedAt.UTC().Format(taskTimeLayout))
	ttl, poll := `,"ttl":`, `,"pollInterval":`
	if modern {
		ttl, poll = `,"ttlMs":`, `,"pollIntervalMs":`
	}
	b = append(b, ttl...)
	if t.TTL > 0 {
		b = strconv.AppendInt(b, t.TTL.Milliseconds(), 10)
	} else {
		b = append(b, "null"...)
	}
	if t.PollInterval > 0 {
		b = append(b, poll...)
		b = strconv.AppendInt(b, t.PollInterval.Milliseconds(), 10)
	}
	return b
}

// errTaskShape is the error of a task object that lacks its id, status or
// times.
var errTaskShape = errors.New("mcp: malformed task: taskId, status, createdAt and lastUpdatedAt are required")

// decodeTask reads the task members of the JSON object data as the
// revision names them (modern: 2026-07-28); other members are ignored.
func decodeTask(data []byte, modern bool) (Task, error) {
	var w taskWire
	if err := json.Unmarshal(data, &w); err != nil {
		return Task{}, err
	}
	if w.TaskID == "" || w.Status == "" || w.CreatedAt == "" || w.LastUpdatedAt == "" {
		return Task{}, errTaskShape
	}
	t := Task{ID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage}
	var err error
	if t.CreatedAt, err = time.Parse(time.RFC3339Nano, w.CreatedAt); err != nil {
		return Task{}, err
	}
	if t.LastUpdatedAt, err = time.Parse(time.RFC3339Nano, w.LastUpdatedAt); err != nil {
		return Task{}, err
	}
	ttl, poll := w.TTL, w.PollInterval
	if modern {
		ttl, poll = w.TTLMs, w.PollIntervalMs
	}
	if ttl != nil {
		t.TTL = peerDuration(*ttl, time.Millisecond)
	}
	if poll != nil {
		t.PollInterval = peerDuration(*poll, time.Millisecond)
	}
	return t, nil
}

// TasksExtension is the id of the 2026-07-28 tasks extension (SEP-2663),
// under capabilities.extensions. Both sides.
const TasksExtension = "io.modelcontextprotocol/tasks"

// resultTask is the resultType of a 2026-07-28 CreateTaskResult.
const resultTask = "task"

// Defaults of the task options.
const (
	// DefaultTaskTTL is how long a server keeps a task after creating it,
	// result included (TaskOptions.TTL), and the longest a client keeps one
	// its server asks of it (TaskRequestOptions.MaxTTL). Both sides.
	DefaultTaskTTL = time.Hour
	// DefaultTaskPollInterval is how often a server suggests that clients
	// poll a task (TaskOptions.PollInterval), and how often a client polls
	// one whose server suggests nothing (WithTaskPolling). Both sides.
	DefaultTaskPollInterval = time.Second
	// DefaultMaxTasks is how many tasks a server runs at once
	// (TaskOptions.MaxTasks), and a client holds for its server
	// (TaskRequestOptions.MaxTasks). Both sides.
	DefaultMaxTasks = 1000
	// DefaultMaxTasksPerPrincipal is how many tasks a server runs at once
	// for one principal (TaskOptions.MaxTasksPerPrincipal): a tenth of
	// DefaultMaxTasks, so that one principal cannot take every slot.
	// Server side.
	DefaultMaxTasksPerPrincipal = DefaultMaxTasks / 10
	// DefaultTaskLease is how long a task stays "working" in a shared task
	// store after the instance that runs it stopped renewing it, unless
	// TaskOptions.Lease says otherwise. Server side.
	DefaultTaskLease = 30 * time.Second
)

// positiveOr is n, or def when n is not positive.
func positiveOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// durationOr is d, def when d is 0, and 0 (none) when d is negative.
func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
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

// taskIDParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskIDParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// metaRelatedTask names, in _meta, the task a 2025-11-25 message belongs to.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// relatedTask is the _meta entry of a message of task id.
func relatedTask(id string) []metaEntry {
	b := appendJSONString([]byte(`{"taskId":`), id)
	return []metaEntry{{key: metaRelatedTask, value: append(b, '}')}}
}
