package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

func newRecord(id, owner string, ttl time.Duration) *mcp.TaskRecord {
	now := time.Now()
	return &mcp.TaskRecord{Task: mcp.Task{ID: id, Status: mcp.TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: ttl}, Owner: owner}
}

// taskStoreChecks are what every mcp.TaskStore does, run against the
// library's MemoryTaskStore and against ours; the checks follow the
// library's TestMemoryTaskStore.
var taskStoreChecks = []check[mcp.TaskStore]{
	{"a task reads back as created", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		rec := newRecord("a", "alice", time.Hour)
		rec.PollInterval, rec.StatusMessage = time.Second, "starting"
		if err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "alice", "a")
		if err != nil || got.ID != "a" || got.Owner != "alice" || got.Status != mcp.TaskWorking || got.StatusMessage != "starting" ||
			!got.CreatedAt.Equal(rec.CreatedAt) || !got.LastUpdatedAt.Equal(rec.LastUpdatedAt) || got.TTL != time.Hour ||
			got.PollInterval != time.Second || got.Result != nil || got.Error != nil || got.InputRequests != nil {
			t.Fatalf("Get: %+v, %v", got, err)
		}
	}},
	{"another owner's task is not found", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		s.Create(ctx, newRecord("a", "alice", 0))
		if _, err := s.Get(ctx, "mallory", "a"); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("Get: %v", err)
		}
		if err := s.UpdateStatus(ctx, "mallory", "a", mcp.TaskInputRequired, "", nil); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("UpdateStatus: %v", err)
		}
		if err := s.PutResult(ctx, "mallory", "a", mcp.TaskCancelled, nil, nil); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("PutResult: %v", err)
		}
		if _, err := s.Get(ctx, "alice", "nope"); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("Get of an unknown task: %v", err)
		}
		if got, _ := s.Get(ctx, "alice", "a"); got.Status != mcp.TaskWorking {
			t.Fatalf("another owner changed the task: %+v", got)
		}
	}},
	{"UpdateStatus sets the status, its message and the asks", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		rec := newRecord("a", "alice", 0)
		s.Create(ctx, rec)
		asks := map[string]mcp.InputRequest{"k": {Method: "roots/list", Params: json.RawMessage(`{}`)}}
		if err := s.UpdateStatus(ctx, "alice", "a", mcp.TaskInputRequired, "waiting", asks); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "alice", "a")
		if err != nil || got.Status != mcp.TaskInputRequired || got.StatusMessage != "waiting" || got.InputRequests["k"].Method != "roots/list" ||
			got.LastUpdatedAt.Before(rec.LastUpdatedAt) {
			t.Fatalf("after UpdateStatus: %+v, %v", got, err)
		}
		s.UpdateStatus(ctx, "alice", "a", mcp.TaskWorking, "", nil)
		if got, _ = s.Get(ctx, "alice", "a"); got.Status != mcp.TaskWorking || got.InputRequests != nil {
			t.Fatalf("after the answer: %+v", got)
		}
		// A terminal status is PutResult's to set.
		s.UpdateStatus(ctx, "alice", "a", mcp.TaskCompleted, "", nil)
		if got, _ = s.Get(ctx, "alice", "a"); got.Status != mcp.TaskWorking {
			t.Fatalf("UpdateStatus ended a task: %+v", got)
		}
	}},
	{"an ended task keeps its outcome", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		s.Create(ctx, newRecord("a", "alice", 0))
		s.UpdateStatus(ctx, "alice", "a", mcp.TaskInputRequired, "waiting", map[string]mcp.InputRequest{"k": {Method: "roots/list"}})
		if err := s.PutResult(ctx, "alice", "a", mcp.TaskCompleted, json.RawMessage(`{"content":[]}`), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.PutResult(ctx, "alice", "a", mcp.TaskCancelled, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateStatus(ctx, "alice", "a", mcp.TaskWorking, "again", nil); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, "alice", "a")
		if got.Status != mcp.TaskCompleted || string(got.Result) != `{"content":[]}` || got.InputRequests != nil || got.Error != nil {
			t.Fatalf("an ended task changed: %+v", got)
		}
		s.Create(ctx, newRecord("b", "alice", 0))
		s.PutResult(ctx, "alice", "b", mcp.TaskFailed, nil, &mcp.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"x":1}`)})
		if got, _ = s.Get(ctx, "alice", "b"); got.Status != mcp.TaskFailed || got.Error == nil || got.Error.Message != "boom" ||
			got.Error.Code != -32603 || string(got.Error.Data) != `{"x":1}` || got.Result != nil {
			t.Fatalf("a failed task: %+v", got)
		}
	}},
	{"List pages an owner's tasks, oldest first", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		for i, owner := range []string{"alice", "bob", "alice", "alice"} {
			s.Create(ctx, newRecord(fmt.Sprint("t", i), owner, 0))
		}
		page, next, err := s.List(ctx, "alice", "", 2)
		if err != nil || len(page) != 2 || page[0].ID != "t0" || page[1].ID != "t2" || next == "" {
			t.Fatalf("first page: %v %q %v", page, next, err)
		}
		if page, next, err = s.List(ctx, "alice", next, 2); err != nil || len(page) != 1 || page[0].ID != "t3" || next != "" {
			t.Fatalf("last page: %v %q %v", page, next, err)
		}
		if page, next, _ = s.List(ctx, "alice", "", 0); len(page) != 3 || next != "" {
			t.Fatalf("no limit: %v %q", page, next)
		}
		if page, _, _ = s.List(ctx, "mallory", "", 10); len(page) != 0 {
			t.Fatalf("another owner's list: %v", page)
		}
		if _, _, err = s.List(ctx, "alice", "bogus", 10); err == nil {
			t.Fatal("a cursor the store did not make was taken")
		}
	}},
	{"a lease reads back, is renewed while the task runs, and stays once it ended", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		rec := newRecord("a", "alice", time.Hour)
		rec.LeaseExpires = time.UnixMicro(time.Now().Add(time.Minute).UnixMicro())
		s.Create(ctx, rec)
		if got, err := s.Get(ctx, "alice", "a"); err != nil || !got.LeaseExpires.Equal(rec.LeaseExpires) {
			t.Fatalf("created with a lease: %+v, %v", got, err)
		}
		later := time.UnixMicro(time.Now().Add(time.Hour).UnixMicro())
		if err := s.RenewLease(ctx, "alice", "a", later); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "alice", "a"); !got.LeaseExpires.Equal(later) || got.Status != mcp.TaskWorking {
			t.Fatalf("renewed: %+v", got)
		}
		if err := s.RenewLease(ctx, "mallory", "a", time.Now()); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("another owner's renewal: %v", err)
		}
		s.PutResult(ctx, "alice", "a", mcp.TaskCompleted, json.RawMessage(`{}`), nil)
		if err := s.RenewLease(ctx, "alice", "a", later.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "alice", "a"); !got.LeaseExpires.Equal(later) {
			t.Fatalf("an ended task's lease moved: %+v", got)
		}
		s.Create(ctx, newRecord("b", "alice", 0))
		if got, _ := s.Get(ctx, "alice", "b"); !got.LeaseExpires.IsZero() {
			t.Fatalf("a task created without a lease has one: %+v", got)
		}
	}},
	{"a task past its TTL is gone, and the sweep counts it", func(t *testing.T, s mcp.TaskStore) {
		ctx := context.Background()
		s.Create(ctx, newRecord("new", "alice", time.Hour))
		s.Create(ctx, newRecord("forever", "alice", 0))
		old := newRecord("old", "alice", time.Minute)
		old.CreatedAt = time.Now().Add(-time.Hour)
		s.Create(ctx, old)
		if _, err := s.Get(ctx, "alice", "old"); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("Get of a task past its TTL: %v", err)
		}
		if page, _, _ := s.List(ctx, "alice", "", 0); len(page) != 2 {
			t.Fatalf("List: %v", page)
		}
		if n, err := s.DeleteExpired(ctx, time.Now()); n != 1 || err != nil {
			t.Fatalf("DeleteExpired: %d, %v", n, err)
		}
		if n, err := s.DeleteExpired(ctx, time.Now()); n != 0 || err != nil {
			t.Fatalf("DeleteExpired again: %d, %v", n, err)
		}
		if n, err := s.DeleteExpired(ctx, time.Now().Add(2*time.Hour)); n != 1 || err != nil {
			t.Fatalf("DeleteExpired in two hours: %d, %v", n, err)
		}
	}},
}

// TestTaskStoreChecks runs the shared checks on both stores.
func TestTaskStoreChecks(t *testing.T) {
	runChecks(t, taskStoreChecks,
		func() mcp.TaskStore { return mcp.NewMemoryTaskStore(0, 0) },
		func(r *redisServer, prefix Option) mcp.TaskStore { return NewTaskStore(r.client(), prefix) })
}

// TestTaskStoreExpiry: Redis deletes a task when its TTL ends; List skips
// it and drops it from the owner's set, and DeleteExpired cleans the rest.
func TestTaskStoreExpiry(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	s := NewTaskStore(c)
	ctx := context.Background()
	expired := r.awaitExpiry("mcp:task:short")
	s.Create(ctx, newRecord("short", "alice", 20*time.Millisecond))
	s.Create(ctx, newRecord("long", "alice", time.Hour))
	expired()
	if _, err := s.Get(ctx, "alice", "short"); !errors.Is(err, mcp.ErrTaskNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if page, _, err := s.List(ctx, "alice", "", 10); err != nil || len(page) != 1 || page[0].ID != "long" {
		t.Fatalf("List: %v, %v", page, err)
	}
	if n := c.ZCard(ctx, "mcp:tasks:alice").Val(); n != 1 {
		t.Fatalf("the owner's set holds %d tasks after List", n)
	}
	if n, err := s.DeleteExpired(ctx, time.Now()); n != 1 || err != nil {
		t.Fatalf("DeleteExpired: %d, %v", n, err)
	}
	if n := c.ZCard(ctx, "mcp:taskexpiry").Val(); n != 1 {
		t.Fatalf("the expiry set holds %d tasks", n)
	}
}

// TestTaskStoreListSkipsGone: pages stay full when many tasks between
// them are gone, across the store's read batches.
func TestTaskStoreListSkipsGone(t *testing.T) {
	r := startRedis(t)
	s := NewTaskStore(r.client())
	ctx := context.Background()
	var live []string
	for i := range 3 * listBatch {
		rec := newRecord(fmt.Sprint("t", i), "alice", time.Hour)
		if i%3 != 0 {
			rec.CreatedAt = time.Now().Add(-2 * time.Hour) // past its TTL
		} else {
			live = append(live, rec.ID)
		}
		s.Create(ctx, rec)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := s.List(ctx, "alice", cursor, 30)
		if err != nil || pages > 10 {
			t.Fatalf("List after %d pages: %v", pages, err)
		}
		if next != "" && len(page) != 30 {
			t.Fatalf("a page of %d before the last", len(page))
		}
		for _, rec := range page {
			got = append(got, rec.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if strings.Join(got, ",") != strings.Join(live, ",") {
		t.Fatalf("listed %v\nwant %v", got, live)
	}
}

// TestTaskStoreBytes: the bound on one task's size, at its limit, for a
// new task and for a result; a refused result leaves the task unchanged.
func TestTaskStoreBytes(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	rec := newRecord("a", "", 0)
	fixed, _ := encodeJSON(&taskFixed{ID: rec.ID, CreatedAt: rec.CreatedAt})
	limit := len(fixed) + 10
	s := NewTaskStore(r.client(), WithMaxTaskBytes(limit))
	big := newRecord("big", "", 0)
	big.StatusMessage = strings.Repeat("x", 11)
	if err := s.Create(ctx, big); !errors.Is(err, mcp.ErrTaskStoreFull) {
		t.Fatalf("a task past the bound: %v", err)
	}
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateStatus(ctx, "", "a", mcp.TaskWorking, strings.Repeat("x", 11), nil); !errors.Is(err, mcp.ErrTaskStoreFull) {
		t.Fatalf("a status message past the bound: %v", err)
	}
	if err := s.PutResult(ctx, "", "a", mcp.TaskCompleted, json.RawMessage(`"123456789"`), nil); !errors.Is(err, mcp.ErrTaskStoreFull) {
		t.Fatalf("a result one byte past the bound: %v", err)
	}
	if got, _ := s.Get(ctx, "", "a"); got.Status != mcp.TaskWorking || got.Result != nil {
		t.Fatalf("a refused result changed the task: %+v", got)
	}
	if err := s.PutResult(ctx, "", "a", mcp.TaskCompleted, json.RawMessage(`"12345678"`), nil); err != nil {
		t.Fatalf("a result at the bound: %v", err)
	}
}

// TestTaskStoreOneOutcome: of many instances ending a task at once, one
// outcome wins and stays, whatever updates race with it.
func TestTaskStoreOneOutcome(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	s := NewTaskStore(r.client())
	other := NewTaskStore(r.client()) // another instance
	s.Create(ctx, newRecord("a", "alice", 0))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			store := s
			if i%2 == 1 {
				store = other
			}
			if err := store.PutResult(ctx, "alice", "a", mcp.TaskCompleted, json.RawMessage(fmt.Sprint(i)), nil); err != nil {
				t.Error(err)
			}
			if err := store.UpdateStatus(ctx, "alice", "a", mcp.TaskWorking, "late", nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first, _ := s.Get(ctx, "alice", "a")
	s.PutResult(ctx, "alice", "a", mcp.TaskFailed, nil, &mcp.Error{Message: "late"})
	got, _ := s.Get(ctx, "alice", "a")
	if got.Status != mcp.TaskCompleted || got.StatusMessage == "late" || got.Error != nil || string(got.Result) != string(first.Result) {
		t.Fatalf("the outcome changed: %+v, first %+v", got, first)
	}
}

// TestTaskStoreBadRecord: a task hash this store did not make is an error
// naming its key, not a panic.
func TestTaskStoreBadRecord(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	ctx := context.Background()
	c.HSet(ctx, "mcp:task:bad", "owner", "alice", "task", "{")
	_, err := NewTaskStore(c).Get(ctx, "alice", "bad")
	var re *Error
	if !errors.As(err, &re) || re.Op != "TaskStore.Get" || re.Key != "mcp:task:bad" {
		t.Fatalf("Get of a bad task: %v", err)
	}
}
