package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// taskCluster is a cluster of task rigs: each instance's work tool runs
// until its own rig releases it.
func taskCluster(t *testing.T, n int) (*fanCluster, []*taskRig) {
	var rigs []*taskRig
	c := newFanCluster(t, n, func(opts ...ServerOption) *Server {
		r := newTaskRig(opts...)
		rigs = append(rigs, r)
		return r.srv
	})
	return c, rigs
}

// runsOn returns the instance that runs task id.
func runsOn(t *testing.T, rigs []*taskRig, id string) int {
	t.Helper()
	for i, r := range rigs {
		r.srv.tasks.mu.Lock()
		t := r.srv.tasks.tasks[id]
		r.srv.tasks.mu.Unlock()
		if t != nil {
			return i
		}
	}
	t.Fatalf("no instance runs task %s", id)
	return -1
}

// dialAs is dial as principal: the fan cluster's authorizer takes the
// X-Who header.
func dialAs(t *testing.T, url, principal string, opts ...ClientOption) *Client {
	t.Helper()
	cl := NewClient(Implementation{Name: "client", Version: "1"}, opts...)
	if err := cl.Connect(context.Background(), NewHTTPTransport(url, WithHeader("X-Who", principal))); err != nil {
		t.Fatalf("Connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// awaitCancelled waits until the context of rig's work handler ends.
func awaitCancelled(t *testing.T, rig *taskRig) {
	t.Helper()
	select {
	case <-rig.ctxEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end on the instance that runs it")
	}
}

// last returns the last instance that served method.
func (c *fanCluster) last(t *testing.T, method string) int {
	t.Helper()
	got := c.instancesOf(method)
	if len(got) == 0 {
		t.Fatalf("no %s went through the proxy", method)
	}
	return got[len(got)-1]
}

// TestTaskCancelledFromAnotherInstance: a 2026-07-28 client, through the
// round-robin proxy, creates a task on one instance, polls it on a second
// and cancels it on a third: the handler's context ends on the first, and
// every instance reports the task cancelled. Once it ended, no instance is
// subscribed to its channel.
func TestTaskCancelledFromAnotherInstance(t *testing.T) {
	c, rigs := taskCluster(t, 3)
	ctx := context.Background()
	cl := dial(t, c.proxy.URL, WithProtocolVersion(LatestVersion))
	tt, err := cl.StartTool(ctx, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tt.Task().ID
	creator := runsOn(t, rigs, id)
	if _, err := tt.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tt.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	called, polled, cancelled := c.last(t, "tools/call"), c.last(t, "tasks/get"), c.last(t, "tasks/cancel")
	if called != creator || polled == creator || cancelled == creator || polled == cancelled {
		t.Fatalf("created on %d (runs on %d), polled on %d, cancelled on %d: want three instances", called, creator, polled, cancelled)
	}
	awaitCancelled(t, rigs[creator])
	for i := range rigs {
		if task, err := cl.OpenTask(id).Get(ctx); err != nil || task.Status != TaskCancelled {
			t.Fatalf("poll %d: %+v, %v", i, task, err)
		}
	}
	c.b.await(t, "the task's channel is let go", func(subs map[string]int) bool { return subs[taskChannel(id)] == 0 })

	// On 2025-11-25, one session on each instance, all of one principal.
	var legacy []*Client
	for _, ts := range c.backends {
		legacy = append(legacy, dialAs(t, ts.URL, "alice", WithProtocolVersion(Version20251125)))
	}
	if tt, err = legacy[1].StartTool(ctx, "work", nil); err != nil {
		t.Fatal(err)
	}
	id = tt.Task().ID
	if runsOn(t, rigs, id) != 1 {
		t.Fatal("the task does not run where it was created")
	}
	if task, err := legacy[2].OpenTask(id).Get(ctx); err != nil || task.Status != TaskWorking {
		t.Fatalf("polled on another instance: %+v, %v", task, err)
	}
	if err := legacy[0].OpenTask(id).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	awaitCancelled(t, rigs[1])
	if task, err := legacy[2].OpenTask(id).Get(ctx); err != nil || task.Status != TaskCancelled {
		t.Fatalf("polled after the cancel: %+v, %v", task, err)
	}
}

// TestTaskNotificationsAcrossInstances: listen streams naming two tasks
// that run on two instances, one stream on each instance, get each task's
// end once, in order, the streams on the instances that run them included.
func TestTaskNotificationsAcrossInstances(t *testing.T) {
	c, rigs := taskCluster(t, 3)
	call := urlCaller(t, c.proxy.URL, "")
	ids := []string{startTask(t, call, 1, "work"), startTask(t, call, 2, "work")}
	var runners []int
	for _, id := range ids {
		r := runsOn(t, rigs, id)
		waitTask(t, rigs[r].srv, id, "", func(r *TaskRecord) bool { return r.StatusMessage == "halfway" })
		runners = append(runners, r)
	}
	if runners[0] == runners[1] {
		t.Fatalf("both tasks run on instance %d", runners[0])
	}
	var streams []*rawListen
	for i := range 3 {
		streams = append(streams, openListen(t, c.proxy.URL, 10+i, `"taskIds":["`+ids[0]+`","`+ids[1]+`"]`, taskCaps))
	}
	for i := range c.servers {
		if c.listeners(i) != 1 {
			t.Fatalf("instance %d holds %d listen streams, want 1", i, c.listeners(i))
		}
	}
	// The first task ends, then the second: what follows the first's
	// notification on each stream is the second's. A stream may first get
	// a task as it was when the stream opened: its last change is
	// published as the task goes on, and may come after the stream opens.
	for k, id := range ids {
		close(rigs[runners[k]].release)
		for i, l := range streams {
			got := l.recv()
			for field(t, got, "params.status") == "working" {
				got = l.recv()
			}
			if field(t, got, "method") != "notifications/tasks" || field(t, got, "params.taskId") != id || field(t, got, "params.status") != "completed" ||
				!strings.Contains(got, `"text":"done"`) {
				t.Fatalf("stream %d, task %d: %s", i, k, got)
			}
		}
	}
}

// TestTaskResultFromAnotherInstance: on 2025-11-25, tasks/result for a task
// that runs on another instance waits for its end there and gives its
// result; without a broadcaster the instance can only say where it runs.
func TestTaskResultFromAnotherInstance(t *testing.T) {
	c, rigs := taskCluster(t, 2)
	ctx := context.Background()
	legacy := func(url string) *Client { return dialAs(t, url, "alice", WithProtocolVersion(Version20251125)) }
	creator, other := legacy(c.backends[0].URL), legacy(c.backends[1].URL)
	tt, err := creator.StartTool(ctx, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := tt.Task().ID
	if runsOn(t, rigs, id) != 0 {
		t.Fatal("the task does not run where it was created")
	}
	got := make(chan error, 1)
	var res CallToolResult
	go func() {
		got <- other.SendRequest(ctx, "tasks/result", map[string]string{"taskId": id}, &res)
	}()
	// The runner and the waiter are both subscribed to the task's channel.
	c.b.await(t, "instance 1 waits on the task", func(subs map[string]int) bool { return subs[taskChannel(id)] == 2 })
	close(rigs[0].release)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/result on another instance never returned")
	}
	if len(res.Content) != 1 || res.Content[0].Text != "done" {
		t.Fatalf("tasks/result: %+v", res)
	}

	// Two instances that share only the store.
	store := NewMemoryTaskStore(0, 0)
	a, b := newTaskRig(WithTasks(TaskOptions{Store: store}), asPrincipal("alice")), newTaskRig(WithTasks(TaskOptions{Store: store}), asPrincipal("alice"))
	onA, onB := legacy(serveHTTP(t, a.srv).URL), legacy(serveHTTP(t, b.srv).URL)
	if tt, err = onA.StartTool(ctx, "work", nil); err != nil {
		t.Fatal(err)
	}
	defer close(a.release)
	err = onB.SendRequest(ctx, "tasks/result", map[string]string{"taskId": tt.Task().ID}, &res)
	if err == nil || !strings.Contains(err.Error(), "runs in another server process") {
		t.Fatalf("tasks/result without a broadcaster: %v", err)
	}
}

// TestTaskAnsweredFromAnotherInstance: the answers to a 2026-07-28 task's
// input requests reach the instance that runs it from whichever instance
// gets the tasks/update, by hand and with the Client's Wait.
func TestTaskAnsweredFromAnotherInstance(t *testing.T) {
	c, rigs := taskCluster(t, 3)
	call := urlCaller(t, c.proxy.URL, "")
	id := startTask(t, call, 1, "ask_twice")
	creator := runsOn(t, rigs, id)
	srv := rigs[creator].srv
	waitTask(t, srv, id, "", func(r *TaskRecord) bool { return r.InputRequests["a"].Method != "" })
	got := call(2, "tasks/update", `"taskId":"`+id+`","inputResponses":{"a":{"action":"accept","content":{"v":"x"}}}`, taskCaps)
	if field(t, got, "result.resultType") != "complete" {
		t.Fatalf("tasks/update: %s", got)
	}
	if answered := c.last(t, "tasks/update"); answered == creator {
		t.Fatalf("tasks/update went to the instance that runs the task (%d)", creator)
	}
	waitTask(t, srv, id, "", func(r *TaskRecord) bool { return r.InputRequests["b"].Method != "" })
	call(3, "tasks/update", `"taskId":"`+id+`","inputResponses":{"b":{"action":"accept","content":{"v":"y"}}}`, taskCaps)
	waitTask(t, srv, id, "", isTerminal)
	if got = call(4, "tasks/get", `"taskId":"`+id+`"`, taskCaps); !strings.Contains(got, `"text":"xy"`) {
		t.Fatalf("tasks/get: %s", got)
	}

	// The Client answers as it polls, wherever its requests land.
	ctx := context.Background()
	cl := dial(t, c.proxy.URL, append([]ClientOption{WithProtocolVersion(LatestVersion),
		WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: "accept", Content: map[string]any{"v": strings.TrimSuffix(p.Message, "?")}}, nil
		})}, fastPolls...)...)
	tt, err := cl.StartTool(ctx, "ask_twice", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tt.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.Content); !strings.Contains(string(b), `"firstsecond"`) {
		t.Fatalf("result: %s", b)
	}
}

// gatedBroadcaster holds every publication on a task channel until the
// gate opens, and keeps what was published there.
type gatedBroadcaster struct {
	*MemoryBroadcaster
	gate chan struct{}

	mu        sync.Mutex
	published []taskMessage
	last      chan taskMessage // each publication, as it is made
}

func (b *gatedBroadcaster) Publish(ctx context.Context, channel string, msg []byte) error {
	if strings.HasPrefix(channel, "mcp:task:") {
		<-b.gate
		var m taskMessage
		json.Unmarshal(msg, &m)
		b.mu.Lock()
		b.published = append(b.published, m)
		b.mu.Unlock()
		b.last <- m
	}
	return b.MemoryBroadcaster.Publish(ctx, channel, msg)
}

// TestTaskStatusPublishedWithoutQueue: a task that changes many times
// while its last change is being published waits on nothing and queues
// nothing: once the publication is done, the task is published once more,
// as it then is.
func TestTaskStatusPublishedWithoutQueue(t *testing.T) {
	b := &gatedBroadcaster{MemoryBroadcaster: NewMemoryBroadcaster(), gate: make(chan struct{}), last: make(chan taskMessage, 100)}
	srv := NewServer(Implementation{Name: "chatty", Version: "1"}, WithBroadcaster(b), WithTasks(TaskOptions{}))
	srv.AddTool(Tool{Name: "chatty", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		for i := range 100 {
			req.Gateway().Progress(float64(i), 100, fmt.Sprint("step ", i))
		}
		return &CallToolResult{}, nil
	})
	call := memoryCaller(t, srv)
	id := startTask(t, call, 1, "chatty")
	waitTask(t, srv, id, "", isTerminal)
	close(b.gate)
	for m := range b.last {
		if m.Status == TaskCompleted {
			break
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.published); n > 2 {
		t.Fatalf("%d publications of 101 changes made while one was held, want at most 2", n)
	}
	if last := b.published[len(b.published)-1]; last.Status != TaskCompleted || !strings.Contains(string(last.Task), `"status":"completed"`) {
		t.Fatalf("last publication: %+v", last)
	}
}
