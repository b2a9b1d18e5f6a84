package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestTaskStoreBounds: 20,000 task-augmented calls against a server whose
// Redis task store holds 1,000 tasks make 1,000 tasks; every other call
// gets the protocol's -32000 overloaded error, and the connection keeps
// working.
func TestTaskStoreBounds(t *testing.T) {
	r := startRedis(t)
	const total, bound, conns = 20000, 1000, 8
	srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"},
		mcp.WithTasks(mcp.TaskOptions{Store: NewTaskStore(r.client(), WithMaxStoredTasks(bound))}))
	srv.AddTool(mcp.Tool{Name: "quick", Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
		})
	var mu sync.Mutex
	created, refused := 0, 0
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() {
			ct, st := mcp.NewInMemoryTransports()
			go srv.Serve(context.Background(), st)
			tr := ct.(*mcp.IOTransport)
			defer tr.Close()
			for i := range total / conns {
				req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"quick","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, i)
				if err := tr.WriteMessage([]byte(req)); err != nil {
					t.Errorf("connection %d: %v", c, err)
					return
				}
				msg, err := tr.ReadMessage()
				if err != nil {
					t.Errorf("connection %d: %v", c, err)
					return
				}
				var res struct {
					Result struct {
						ResultType string `json:"resultType"`
					} `json:"result"`
					Error *mcp.Error `json:"error"`
				}
				json.Unmarshal(msg, &res)
				mu.Lock()
				switch {
				case res.Result.ResultType == "task":
					created++
				case res.Error != nil && res.Error.Code == mcp.CodeOverloaded && strings.Contains(res.Error.Message, "task store is full"):
					refused++
				default:
					t.Errorf("connection %d, call %d: %s", c, i, msg)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != bound || refused != total-bound {
		t.Fatalf("%d tasks created and %d refused, want %d and %d", created, refused, bound, total-bound)
	}
	if n := r.client().HLen(context.Background(), "mcp:tasksizes").Val(); n != bound {
		t.Fatalf("the store counts %d tasks", n)
	}
}

// TestTaskStoreByteBound: the store's bytes are bounded as a whole: a
// task that would pass the bound is refused, so is an outcome that would,
// and a task swept at its TTL gives its bytes back.
func TestTaskStoreByteBound(t *testing.T) {
	r := startRedis(t)
	s := NewTaskStore(r.client(), WithMaxTaskStoreBytes(1300))
	ctx := context.Background()
	big := newRecord("a", "alice", time.Hour)
	big.StatusMessage = strings.Repeat("x", 500)
	if err := s.Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, newRecord("b", "alice", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, newRecord("c", "alice", time.Hour)); !errors.Is(err, mcp.ErrTaskStoreFull) {
		t.Fatalf("a task past the byte bound: %v", err)
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("y", 300) + `"}]}`)
	if err := s.PutResult(ctx, "alice", "b", mcp.TaskCompleted, result, nil); !errors.Is(err, mcp.ErrTaskStoreFull) {
		t.Fatalf("an outcome past the byte bound: %v", err)
	}
	if err := s.PutResult(ctx, "alice", "b", mcp.TaskCompleted, json.RawMessage(`{}`), nil); err != nil {
		t.Fatalf("a small outcome: %v", err)
	}
	if n, err := s.DeleteExpired(ctx, time.Now().Add(2*time.Hour)); n != 2 || err != nil {
		t.Fatalf("DeleteExpired: %d, %v", n, err)
	}
	if got := r.client().Get(ctx, "mcp:taskbytes").Val(); got != "0" {
		t.Fatalf("the store counts %s bytes once empty", got)
	}
	if err := s.Create(ctx, newRecord("c", "alice", time.Hour)); err != nil {
		t.Fatalf("after the sweep: %v", err)
	}
}

// TestTaskStorePerOwner: on both stores, at its bound an owner's next task
// is refused with mcp.ErrTaskQuotaExceeded while another owner still
// creates tasks, and the owner's expired tasks make room again. On Redis
// the bound holds across instances: two stores on one Redis, each taking
// half of 200 concurrent creates of one owner, keep exactly the bound.
func TestTaskStorePerOwner(t *testing.T) {
	r := startRedis(t)
	memory := mcp.NewMemoryTaskStore(0, 0)
	memory.SetMaxTasksPerOwner(3)
	for name, s := range map[string]mcp.TaskStore{"memory": memory, "redis": NewTaskStore(r.client(), WithKeyPrefix("owner:"), WithMaxStoredTasksPerOwner(3))} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for i := range 3 {
				if err := s.Create(ctx, newRecord(fmt.Sprint("a", i), "alice", time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Create(ctx, newRecord("a3", "alice", time.Hour)); !errors.Is(err, mcp.ErrTaskQuotaExceeded) {
				t.Fatalf("alice's fourth task: %v", err)
			}
			for i := range 3 {
				if err := s.Create(ctx, newRecord(fmt.Sprint("b", i), "bob", time.Hour)); err != nil {
					t.Fatalf("bob's task %d: %v", i, err)
				}
			}
			if n, err := s.DeleteExpired(ctx, time.Now().Add(2*time.Hour)); n != 6 || err != nil {
				t.Fatalf("DeleteExpired: %d, %v", n, err)
			}
			if err := s.Create(ctx, newRecord("a4", "alice", time.Hour)); err != nil {
				t.Fatalf("alice's task after hers expired: %v", err)
			}
		})
	}
	one := NewTaskStore(r.client(), WithKeyPrefix("shared:"), WithMaxStoredTasksPerOwner(50))
	two := NewTaskStore(r.client(), WithKeyPrefix("shared:"), WithMaxStoredTasksPerOwner(50))
	var made, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		s := one
		if i%2 == 1 {
			s = two
		}
		wg.Go(func() {
			switch err := s.Create(context.Background(), newRecord(fmt.Sprint("c", i), "carol", time.Hour)); {
			case err == nil:
				made.Add(1)
			case errors.Is(err, mcp.ErrTaskQuotaExceeded):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if made.Load() != 50 || refused.Load() != 150 {
		t.Fatalf("%d made and %d refused, want 50 and 150", made.Load(), refused.Load())
	}
}
