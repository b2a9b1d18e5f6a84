package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func storedRecord(id, owner string, ttl time.Duration) *TaskRecord {
	now := time.Now()
	return &TaskRecord{Task: Task{ID: id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: ttl}, Owner: owner}
}

// TestMemoryTaskStore: each method, the owner binding, the count bound at
// its limit, pages, and expiry before and after the sweep.
func TestMemoryTaskStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := NewMemoryTaskStore(2, 0)
		if err := m.Create(ctx, storedRecord("a", "alice", time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := m.Create(ctx, storedRecord("b", "alice", 0)); err != nil {
			t.Fatal(err)
		}
		if err := m.Create(ctx, storedRecord("c", "alice", 0)); !errors.Is(err, ErrTaskStoreFull) {
			t.Fatalf("a third task in a store of two: %v", err)
		}
		if _, err := m.Get(ctx, "mallory", "a"); !errors.Is(err, ErrTaskNotFound) {
			t.Fatalf("another owner's task: %v", err)
		}
		asks := map[string]InputRequest{"k": {Method: "roots/list"}}
		if err := m.UpdateStatus(ctx, "alice", "a", TaskInputRequired, "waiting", asks); err != nil {
			t.Fatal(err)
		}
		rec, err := m.Get(ctx, "alice", "a")
		if err != nil || rec.Status != TaskInputRequired || rec.StatusMessage != "waiting" || rec.InputRequests["k"].Method != "roots/list" {
			t.Fatalf("after UpdateStatus: %+v, %v", rec, err)
		}
		if err := m.PutResult(ctx, "alice", "a", TaskCompleted, json.RawMessage(`{"content":[]}`), nil); err != nil {
			t.Fatal(err)
		}
		// An ended task keeps its outcome.
		m.PutResult(ctx, "alice", "a", TaskCancelled, nil, nil)
		m.UpdateStatus(ctx, "alice", "a", TaskWorking, "again", nil)
		if rec, _ = m.Get(ctx, "alice", "a"); rec.Status != TaskCompleted || string(rec.Result) != `{"content":[]}` || rec.InputRequests != nil {
			t.Fatalf("an ended task changed: %+v", rec)
		}

		page, next, err := m.List(ctx, "alice", "", 1)
		if err != nil || len(page) != 1 || page[0].ID != "a" || next == "" {
			t.Fatalf("first page: %v %q %v", page, next, err)
		}
		if page, next, err = m.List(ctx, "alice", next, 1); err != nil || len(page) != 1 || page[0].ID != "b" || next != "" {
			t.Fatalf("last page: %v %q %v", page, next, err)
		}
		if page, _, _ = m.List(ctx, "mallory", "", 10); len(page) != 0 {
			t.Fatalf("another owner's list: %v", page)
		}
		if _, _, err = m.List(ctx, "alice", "bogus", 10); err == nil {
			t.Fatal("a cursor the store did not make was taken")
		}

		// Past its TTL a task is gone at once, and deleted by the sweep.
		time.Sleep(time.Minute)
		if _, err := m.Get(ctx, "alice", "a"); !errors.Is(err, ErrTaskNotFound) {
			t.Fatalf("a task past its TTL: %v", err)
		}
		if n, err := m.DeleteExpired(ctx, time.Now()); n != 1 || err != nil || m.Len() != 1 {
			t.Fatalf("DeleteExpired: %d %v, %d left", n, err, m.Len())
		}
	})
}

// TestMemoryTaskStoreListOrderFarApart: List orders tasks by creation even
// when their positions are further apart than an int32 holds (the order
// once came from their difference as an int, which wraps on 32-bit).
func TestMemoryTaskStoreListOrderFarApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemoryTaskStore(0, 0)
	if err := m.Create(ctx, storedRecord("first", "alice", 0)); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.seq += 1 << 31 // as if two billion tasks had come and gone
	m.mu.Unlock()
	if err := m.Create(ctx, storedRecord("second", "alice", 0)); err != nil {
		t.Fatal(err)
	}
	page, _, err := m.List(ctx, "alice", "", 10)
	var ids []string
	for _, rec := range page {
		ids = append(ids, rec.ID)
	}
	if err != nil || strings.Join(ids, ",") != "first,second" {
		t.Fatalf("List: %v, %v; want first, second", ids, err)
	}
}

// TestMemoryTaskStoreBytes: the byte bound, at its limit, for new tasks
// and for results.
func TestMemoryTaskStoreBytes(t *testing.T) {
	ctx := context.Background()
	rec := storedRecord("a", "", 0)
	limit := recordSize(rec) + 10
	m := NewMemoryTaskStore(0, limit)
	if err := m.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(ctx, storedRecord("b", "", 0)); !errors.Is(err, ErrTaskStoreFull) {
		t.Fatalf("a task past the byte bound: %v", err)
	}
	if err := m.PutResult(ctx, "", "a", TaskCompleted, json.RawMessage(`"123456789"`), nil); !errors.Is(err, ErrTaskStoreFull) {
		t.Fatalf("a result one byte past the bound: %v", err)
	}
	if err := m.PutResult(ctx, "", "a", TaskCompleted, json.RawMessage(`"12345678"`), nil); err != nil {
		t.Fatalf("a result at the bound: %v", err)
	}
}

// TestTaskResultTooLarge: a result the store cannot hold fails the task
// with an error saying so.
func TestTaskResultTooLarge(t *testing.T) {
	srv := NewServer(Implementation{Name: "tasks", Version: "1"}, WithTasks(TaskOptions{Store: NewMemoryTaskStore(0, 1024)}))
	srv.AddTool(Tool{Name: "big", Execution: &ToolExecution{TaskSupport: TaskRequired}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(strings.Repeat("x", 2048))}}, nil
	})
	call := memoryCaller(t, srv)
	id := startTask(t, call, 1, "big")
	waitTask(t, srv, id, "", isTerminal)
	got := call(2, "tasks/get", `"taskId":"`+id+`"`, taskCaps)
	if field(t, got, "result.status") != "failed" || !strings.Contains(got, "larger than the task store holds") {
		t.Fatalf("tasks/get: %s", got)
	}
}

// TestWithMaxTasks: at the cap a new task is refused with a clear error;
// one ending makes room.
func TestWithMaxTasks(t *testing.T) {
	rig := newTaskRig(WithTasks(TaskOptions{MaxTasks: 2}))
	call := memoryCaller(t, rig.srv)
	first := startTask(t, call, 1, "work")
	startTask(t, call, 2, "work")
	got := call(3, "tools/call", `"name":"work","arguments":{}`, taskCaps)
	if field(t, got, "error.code") != float64(CodeOverloaded) || !strings.Contains(got, "2 tasks are running") {
		t.Fatalf("a third task of two: %s", got)
	}
	call(4, "tasks/cancel", `"taskId":"`+first+`"`, taskCaps)
	startTask(t, call, 5, "work")
	close(rig.release) // the others end
}

// bubbleTasks counts the goroutines of the calling synctest bubble that
// run a task's handler; other tests' tasks are not counted.
func bubbleTasks() int {
	buf := make([]byte, 1<<24)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "synctest bubble") && strings.Contains(g, "(*Server).runTask(") {
			n++
		}
	}
	return n
}

// TestTasksLeaveNothing: ten thousand tasks created and finished leave no
// goroutine once finished, and no stored task once past their TTL.
func TestTasksLeaveNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10000
		store := NewMemoryTaskStore(0, 0)
		store.SetMaxTasksPerOwner(n)
		rig := newTaskRig(WithTasks(TaskOptions{TTL: time.Hour, MaxTasks: n, MaxTasksPerPrincipal: n, Store: store, Lease: -1}))
		ct, st := NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- rig.srv.Serve(context.Background(), st) }()
		p := newRawPeer(t, ct.(*IOTransport))
		for i := range n {
			p.send(taskRequest(i, "tools/call", `"name":"tool_error","arguments":{}`, taskCaps))
			if got := p.recv(); field(t, got, "result.resultType") != "task" {
				t.Fatalf("task %d: %s", i, got)
			}
			if i%500 == 0 {
				synctest.Wait() // let the finished ones go, for the race detector's sake
			}
		}
		synctest.Wait()
		if r, g, s := rig.srv.tasks.len(), bubbleTasks(), store.Len(); r != 0 || g != 0 || s != n {
			t.Fatalf("finished: %d running, %d goroutines, %d stored; want 0, 0, %d", r, g, s, n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if s := store.Len(); s != 0 {
			t.Fatalf("%d tasks stored after their TTL", s)
		}
		p.w.Close()
		<-served
	})
}

// TestMemoryTaskStorePerOwner: at its bound an owner's next task is
// refused with ErrTaskQuotaExceeded while another owner still creates
// tasks; the owner's tasks that expire make room again.
func TestMemoryTaskStorePerOwner(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryTaskStore(0, 0)
	m.SetMaxTasksPerOwner(3)
	for i := range 3 {
		if err := m.Create(ctx, storedRecord(fmt.Sprint("a", i), "alice", time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Create(ctx, storedRecord("a3", "alice", time.Hour)); !errors.Is(err, ErrTaskQuotaExceeded) {
		t.Fatalf("alice's fourth task: %v", err)
	}
	for i := range 3 {
		if err := m.Create(ctx, storedRecord(fmt.Sprint("b", i), "bob", time.Hour)); err != nil {
			t.Fatalf("bob's task %d: %v", i, err)
		}
	}
	if n, _ := m.DeleteExpired(ctx, time.Now().Add(2*time.Hour)); n != 6 {
		t.Fatalf("DeleteExpired: %d", n)
	}
	if err := m.Create(ctx, storedRecord("a4", "alice", time.Hour)); err != nil {
		t.Fatalf("alice's task after hers expired: %v", err)
	}
}

// stallingTaskStore hangs in the UpdateStatus that stores message until
// stall is closed or the call's context ends, saying so on stalled.
type stallingTaskStore struct {
	*MemoryTaskStore
	message string
	stall   chan struct{}
	stalled chan struct{}
}

func (s *stallingTaskStore) UpdateStatus(ctx context.Context, owner, id string, status TaskStatus, message string, asks map[string]InputRequest) error {
	if message == s.message {
		select {
		case s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-s.stall:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryTaskStore.UpdateStatus(ctx, owner, id, status, message, asks)
}

// TestTaskStoreCallsOutsideTheTaskLock: a task store that hangs while
// storing a task's status holds up only the writes that must come after
// it, never the task's lock: a tasks/update that answers nothing is
// answered meanwhile (it waited, before, for as long as the store took),
// and every change still reaches the store in order.
func TestTaskStoreCallsOutsideTheTaskLock(t *testing.T) {
	store := &stallingTaskStore{MemoryTaskStore: NewMemoryTaskStore(0, 0), message: "halfway",
		stall: make(chan struct{}), stalled: make(chan struct{}, 1)}
	rig := newTaskRig(WithTasks(TaskOptions{Store: store}))
	call := memoryCaller(t, rig.srv)
	var once sync.Once
	release := func() { once.Do(func() { close(store.stall); close(rig.release) }) }
	defer release()                     // lets the test end even when it fails
	id := startTask(t, call, 1, "work") // its handler reports "halfway" at once
	<-store.stalled
	answered := make(chan string, 1)
	go func() {
		answered <- call(2, "tasks/update", `"taskId":"`+id+`","inputResponses":{"nobody":{}}`, taskCaps)
	}()
	select {
	case got := <-answered:
		if field(t, got, "result.resultType") != "complete" {
			t.Fatalf("tasks/update: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/update waited on the task store's stalled write")
	}
	release()
	waitTask(t, rig.srv, id, "", hasStatus(TaskCompleted))
	rec, err := store.Get(context.Background(), "", id)
	if err != nil || rec.StatusMessage != "halfway" {
		t.Fatalf("the stored task: %+v, %v", rec, err)
	}
}
