package mcp

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// silentRenewals is a task store whose lease renewals can be lost, as when
// the instance that runs a task dies or loses the store.
type silentRenewals struct {
	*MemoryTaskStore
	lost atomic.Bool
}

func (s *silentRenewals) RenewLease(ctx context.Context, owner, id string, until time.Time) error {
	if s.lost.Load() {
		return nil
	}
	return s.MemoryTaskStore.RenewLease(ctx, owner, id, until)
}

// TestTaskAbandonedByItsInstance: two instances share a task store and a
// broadcaster; a 2025-11-25 task runs on the first. While the first renews
// its lease the task stays working, however long it runs; once the
// renewals stop, the second fails it when the lease runs out, and a
// tasks/result waiting there gets the error that says why, instead of
// waiting until the task's TTL.
func TestTaskAbandonedByItsInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		store := &silentRenewals{MemoryTaskStore: NewMemoryTaskStore(0, 0)}
		bc := NewMemoryBroadcaster()
		opts := []ServerOption{WithTasks(TaskOptions{Store: store, Lease: lease}), WithBroadcaster(bc), asPrincipal("alice")}
		a, b := newTaskRig(opts...), newTaskRig(opts...)
		defer close(a.release)
		peer := func(rig *taskRig) *legacyPeer {
			p := &legacyPeer{rawPeer: rawServer(t, rig.srv)}
			p.call(0, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}`)
			p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			return p
		}
		onA, onB := peer(a), peer(b)
		got := onA.call(1, "tools/call", `"name":"work","arguments":{},"task":{"ttl":3600000}`)
		id, _ := field(t, got, "result.task.taskId").(string)
		if id == "" {
			t.Fatalf("CreateTaskResult: %s", got)
		}

		time.Sleep(5 * lease)
		synctest.Wait()
		if got = onB.call(2, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "result.status") != "working" {
			t.Fatalf("a renewed task, five leases on: %s", got)
		}

		onB.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
		synctest.Wait()
		store.lost.Store(true)
		time.Sleep(lease)
		synctest.Wait()
		got = onB.response(3)
		if msg, _ := field(t, got, "error.message").(string); !strings.Contains(msg, "stopped before the task ended") {
			t.Fatalf("tasks/result waiting on an abandoned task: %s", got)
		}
		if got = onB.call(4, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "result.status") != "failed" {
			t.Fatalf("tasks/get of an abandoned task: %s", got)
		}
		// The instance that runs it, alive after all, keeps its view; the
		// store keeps the first outcome.
		if got = onA.call(5, "tasks/get", `"taskId":"`+id+`"`); field(t, got, "result.status") != "failed" {
			t.Fatalf("tasks/get on the task's own instance: %s", got)
		}
	})
}

// TestTaskLeaseOnlyWithAGivenStore: a server on its own default store
// keeps no lease (its tasks end with it); Lease -1 turns leases
// off for a given store.
func TestTaskLeaseOnlyWithAGivenStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []ServerOption
		lease bool
	}{
		{"default store", nil, false},
		{"given store", []ServerOption{WithTasks(TaskOptions{Store: NewMemoryTaskStore(0, 0)})}, true},
		{"given store, leases off", []ServerOption{WithTasks(TaskOptions{Store: NewMemoryTaskStore(0, 0), Lease: -1})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newTaskRig(tc.opts...)
			defer close(rig.release)
			p := rawServer(t, rig.srv)
			p.send(taskRequest(1, "tools/call", `"name":"work","arguments":{}`, taskCaps))
			id, _ := field(t, p.recv(), "result.taskId").(string)
			rec, err := rig.srv.store.Get(context.Background(), "", id)
			if err != nil {
				t.Fatal(err)
			}
			if has := !rec.LeaseExpires.IsZero(); has != tc.lease {
				t.Fatalf("lease %v, want one: %v", rec.LeaseExpires, tc.lease)
			}
		})
	}
}
