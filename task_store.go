package mcp

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"
)

// TaskRecord is a task as a TaskStore keeps it: its state, who created
// it, and its outcome. Server side.
type TaskRecord struct {
	Task
	// Owner is who created the task: its principal, or, for an
	// anonymous 2025-11-25 request, a name of its session; only the same
	// owner may read or change it.
	Owner string
	// InputRequests are the asks the task waits on while input_required.
	InputRequests map[string]InputRequest
	// Result is the tool's result of a completed task, as the wire carries it.
	Result json.RawMessage
	// Error is the protocol error of a failed task.
	Error *Error
	// LeaseExpires is when a task that has not ended counts as abandoned,
	// unless the instance that runs it renews the lease first
	// (RenewLease); zero: never.
	LeaseExpires time.Time
}

// ErrTaskNotFound is returned by a TaskStore for a task it does not hold
// for that owner: never created, created by another principal, or past its
// TTL. Server side.
var ErrTaskNotFound = errors.New("mcp: task not found")

// ErrTaskStoreFull is returned by a TaskStore that cannot take a task or
// a result without going over its bounds. Server side.
var ErrTaskStoreFull = errors.New("mcp: the task store is full")

// ErrTaskQuotaExceeded is returned by a TaskStore that holds as many tasks
// of the record's owner as it allows one owner, so that no one owner fills
// the store for everyone. Server side.
var ErrTaskQuotaExceeded = errors.New("mcp: the task's owner holds as many tasks as the task store allows one owner")

// TaskStore keeps a server's tasks, so that they can be read after the
// request that created them, and by another process. Its methods may be
// called concurrently. The running handlers stay in the process that runs
// them. Server side; see [TaskOptions].
type TaskStore interface {
	// Create stores a new task; ErrTaskStoreFull when it cannot,
	// ErrTaskQuotaExceeded when the record's owner holds as many tasks as
	// the store allows one owner.
	Create(ctx context.Context, rec *TaskRecord) error
	// Get returns a copy of owner's task id, or ErrTaskNotFound.
	Get(ctx context.Context, owner, id string) (*TaskRecord, error)
	// UpdateStatus sets a task's status (not a terminal one), its status
	// message and the asks it waits on, and stamps LastUpdatedAt. A task
	// that already ended is left as it is.
	UpdateStatus(ctx context.Context, owner, id string, status TaskStatus, message string, inputRequests map[string]InputRequest) error
	// PutResult ends a task with a terminal status and its outcome: the
	// result of a completed task, the error of a failed one, neither for
	// a cancelled one. A task that already ended keeps its outcome.
	// ErrTaskStoreFull when the outcome does not fit; the task is
	// unchanged.
	PutResult(ctx context.Context, owner, id string, status TaskStatus, result json.RawMessage, err *Error) error
	// List returns up to limit of owner's tasks after cursor ("" for the
	// first page), oldest first, and the cursor of the next page ("" on
	// the last). A cursor the store did not make is an error.
	List(ctx context.Context, owner, cursor string, limit int) (tasks []*TaskRecord, next string, err error)
	// RenewLease moves the lease of a task that has not ended to until;
	// a task that ended is left as it is. ErrTaskNotFound when it is
	// gone.
	RenewLease(ctx context.Context, owner, id string, until time.Time) error
	// DeleteExpired deletes every task whose TTL ended at or before now,
	// and reports how many it deleted.
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
}

// Defaults of NewMemoryTaskStore.
const (
	// DefaultMaxStoredTasks is how many tasks the default store holds.
	// Server side.
	DefaultMaxStoredTasks = 10000
	// DefaultMaxTaskStoreBytes is how many bytes of tasks and results the
	// default store holds. Server side.
	DefaultMaxTaskStoreBytes = 64 << 20
	// DefaultMaxStoredTasksPerOwner is how many tasks of one owner (a
	// principal, or an anonymous session) the default store holds: a
	// tenth of the whole, so that one owner cannot lock out the others.
	// Server side.
	DefaultMaxStoredTasksPerOwner = DefaultMaxStoredTasks / 10
)

// MemoryTaskStore is a [TaskStore] in memory, bounded in the number of
// tasks, in their bytes (results included), and in the number of tasks of
// one owner ([MemoryTaskStore.SetMaxTasksPerOwner]). A full store refuses
// new tasks rather than forgetting ones a client may still read. Server
// side.
type MemoryTaskStore struct {
	maxTasks, maxBytes int

	mu          sync.Mutex
	maxPerOwner int
	tasks       map[string]*storedTask
	perOwner    map[string]int // how many tasks each owner holds
	size        int
	seq         int64
	expires     expiryHeap
}

type storedTask struct {
	rec     TaskRecord
	size    int
	seq     int64
	expires time.Time // zero: never
	index   int       // in the expiry heap; -1 when not in it
}

// NewMemoryTaskStore returns an empty store that holds at most maxTasks
// tasks and maxBytes bytes of them; a bound of zero or less takes the
// default (DefaultMaxStoredTasks, DefaultMaxTaskStoreBytes). Server side.
func NewMemoryTaskStore(maxTasks, maxBytes int) *MemoryTaskStore {
	if maxTasks <= 0 {
		maxTasks = DefaultMaxStoredTasks
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTaskStoreBytes
	}
	return &MemoryTaskStore{maxTasks: maxTasks, maxBytes: maxBytes, maxPerOwner: DefaultMaxStoredTasksPerOwner,
		tasks: make(map[string]*storedTask), perOwner: make(map[string]int)}
}

// SetMaxTasksPerOwner bounds how many tasks the store holds of one owner,
// ended ones kept for their TTL included; past it Create returns
// ErrTaskQuotaExceeded. Zero or less takes the default,
// DefaultMaxStoredTasksPerOwner. It may be called at any time; tasks held
// already stay. Server side.
func (m *MemoryTaskStore) SetMaxTasksPerOwner(n int) {
	if n <= 0 {
		n = DefaultMaxStoredTasksPerOwner
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxPerOwner = n
}

// recordSize is what a record counts against the byte bound: its
// variable parts and a fixed overhead.
func recordSize(rec *TaskRecord) int {
	n := 256 + len(rec.ID) + len(rec.Owner) + len(rec.StatusMessage) + len(rec.Result)
	for k, r := range rec.InputRequests {
		n += len(k) + len(r.Method) + len(r.Params)
	}
	if rec.Error != nil {
		n += len(rec.Error.Message) + len(rec.Error.Data)
	}
	return n
}

// Create implements TaskStore.
func (m *MemoryTaskStore) Create(ctx context.Context, rec *TaskRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleteExpiredLocked(time.Now())
	size := recordSize(rec)
	if len(m.tasks) >= m.maxTasks || m.size+size > m.maxBytes {
		return ErrTaskStoreFull
	}
	if m.perOwner[rec.Owner] >= m.maxPerOwner {
		return ErrTaskQuotaExceeded
	}
	m.perOwner[rec.Owner]++
	m.seq++
	st := &storedTask{rec: *rec, size: size, seq: m.seq, index: -1}
	if rec.TTL > 0 {
		st.expires = rec.CreatedAt.Add(rec.TTL)
		heap.Push(&m.expires, st)
	}
	m.tasks[rec.ID] = st
	m.size += size
	return nil
}

// findLocked returns owner's live task id.
func (m *MemoryTaskStore) findLocked(owner, id string) *storedTask {
	st := m.tasks[id]
	if st == nil || st.rec.Owner != owner || (!st.expires.IsZero() && !time.Now().Before(st.expires)) {
		return nil
	}
	return st
}

// Get implements TaskStore.
func (m *MemoryTaskStore) Get(ctx context.Context, owner, id string) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.findLocked(owner, id)
	if st == nil {
		return nil, ErrTaskNotFound
	}
	rec := st.rec // the maps and slices in it are replaced, never changed
	return &rec, nil
}

// UpdateStatus implements TaskStore.
func (m *MemoryTaskStore) UpdateStatus(ctx context.Context, owner, id string, status TaskStatus, message string, inputRequests map[string]InputRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.findLocked(owner, id)
	if st == nil {
		return ErrTaskNotFound
	}
	if st.rec.Status.Terminal() || status.Terminal() {
		return nil
	}
	next := st.rec
	next.Status, next.StatusMessage, next.LastUpdatedAt = status, message, time.Now()
	next.InputRequests = nil
	if len(inputRequests) > 0 {
		next.InputRequests = make(map[string]InputRequest, len(inputRequests))
		for k, v := range inputRequests {
			next.InputRequests[k] = v
		}
	}
	return m.replaceLocked(st, &next)
}

// RenewLease implements TaskStore.
func (m *MemoryTaskStore) RenewLease(ctx context.Context, owner, id string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.findLocked(owner, id)
	if st == nil {
		return ErrTaskNotFound
	}
	if !st.rec.Status.Terminal() {
		st.rec.LeaseExpires = until
	}
	return nil
}

// PutResult implements TaskStore.
func (m *MemoryTaskStore) PutResult(ctx context.Context, owner, id string, status TaskStatus, result json.RawMessage, err *Error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.findLocked(owner, id)
	if st == nil {
		return ErrTaskNotFound
	}
	if st.rec.Status.Terminal() {
		return nil
	}
	next := st.rec
	next.Status, next.LastUpdatedAt = status, time.Now()
	next.InputRequests, next.Result, next.Error = nil, slices.Clone(result), err
	return m.replaceLocked(st, &next)
}

// replaceLocked puts next in st's place, if the byte bound allows.
func (m *MemoryTaskStore) replaceLocked(st *storedTask, next *TaskRecord) error {
	size := recordSize(next)
	if m.size-st.size+size > m.maxBytes {
		return ErrTaskStoreFull
	}
	m.size += size - st.size
	st.rec, st.size = *next, size
	return nil
}

// List implements TaskStore. The cursor is the position of the last task
// of the previous page.
func (m *MemoryTaskStore) List(ctx context.Context, owner, cursor string, limit int) ([]*TaskRecord, string, error) {
	var after int64
	if cursor != "" {
		var err error
		if after, err = strconv.ParseInt(cursor, 10, 64); err != nil || after < 0 {
			return nil, "", errors.New("mcp: invalid task list cursor")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var mine []*storedTask
	for id, st := range m.tasks {
		if st.seq > after && m.findLocked(owner, id) != nil {
			mine = append(mine, st)
		}
	}
	slices.SortFunc(mine, func(a, b *storedTask) int { return cmp.Compare(a.seq, b.seq) })
	next := ""
	if limit > 0 && len(mine) > limit {
		mine = mine[:limit]
		next = strconv.FormatInt(mine[limit-1].seq, 10)
	}
	out := make([]*TaskRecord, len(mine))
	for i, st := range mine {
		rec := st.rec
		out[i] = &rec
	}
	return out, next, nil
}

// DeleteExpired implements TaskStore.
func (m *MemoryTaskStore) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteExpiredLocked(now), nil
}

func (m *MemoryTaskStore) deleteExpiredLocked(now time.Time) int {
	n := 0
	for len(m.expires) > 0 && !now.Before(m.expires[0].expires) {
		st := heap.Pop(&m.expires).(*storedTask)
		delete(m.tasks, st.rec.ID)
		if m.perOwner[st.rec.Owner]--; m.perOwner[st.rec.Owner] <= 0 {
			delete(m.perOwner, st.rec.Owner)
		}
		m.size -= st.size
		n++
	}
	return n
}

// Len reports how many tasks the store holds, expired ones not yet
// deleted included. Server side.
func (m *MemoryTaskStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// expiryHeap orders stored tasks by when their TTL ends, soonest first.
type expiryHeap []*storedTask

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	st := x.(*storedTask)
	st.index = len(*h)
	*h = append(*h, st)
}
func (h *expiryHeap) Pop() any {
	old := *h
	st := old[len(old)-1]
	old[len(old)-1] = nil
	st.index = -1
	*h = old[:len(old)-1]
	return st
}
