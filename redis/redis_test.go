package mcpredis

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/e6ac58cb/mcp"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server of a test's own, on a free loopback port,
// keeping nothing on disk.
type redisServer struct {
	t    *testing.T
	bin  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts a Redis for the test, stopped when it ends. Without
// redis-server the test is skipped, unless CI is set: there a missing
// Redis is a failure.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed (in CI a missing Redis is a failure): %v", err)
		}
		t.Skipf("redis-server is not installed: %v", err)
	}
	r := &redisServer{t: t, bin: bin}
	for try := 1; ; try++ {
		r.port = testPort(t)
		if r.launch() || try == 10 {
			break // else another test's server took the port first: pick again
		}
	}
	r.start()
	t.Cleanup(r.stop)
	return r
}

// testPort picks a free loopback port below the kernel's ephemeral range:
// a port the kernel handed out for :0 may be handed to another socket (an
// outgoing connection of any process) before redis-server binds it, or
// while a test has it stopped to restart it on the same port; one in this
// range is taken only by a test that picked it the same way.
func testPort(t *testing.T) int {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return 0
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// start runs redis-server and returns once it accepts connections, as it
// says on its output. It is running already after a launch.
func (r *redisServer) start() {
	r.t.Helper()
	if r.cmd != nil {
		return
	}
	if !r.launch() {
		r.t.Fatalf("redis-server on port %d: the port is taken", r.port)
	}
}

// launch runs redis-server and returns once it accepts connections; it
// reports false when the port was taken, and fails the test for anything
// else.
func (r *redisServer) launch() bool {
	r.t.Helper()
	cmd := exec.Command(r.bin, "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--notify-keyspace-events", "Ex")
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	ready := make(chan bool, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					said = true
					ready <- true
				}
			}
		}
		if !said {
			ready <- false
		}
		io.Copy(io.Discard, out)
	}()
	r.done = make(chan struct{})
	go func() { cmd.Wait(); close(r.done) }()
	select {
	case ok := <-ready:
		if !ok {
			<-r.done
			if strings.Contains(log.String(), "Address already in use") {
				return false
			}
			r.t.Fatalf("redis-server on port %d ended before it was ready:\n%s", r.port, log.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		r.t.Fatalf("redis-server on port %d was not ready after ten seconds", r.port)
	}
	r.cmd = cmd
	return true
}

// stop ends the server at once and waits until it did.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// client returns a client of the server, closed when the test ends.
func (r *redisServer) client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr(), ContextTimeoutEnabled: true})
	r.t.Cleanup(func() { c.Close() })
	return c
}

// awaitExpiry returns a function that waits until Redis expired key, as
// its keyspace notifications tell.
func (r *redisServer) awaitExpiry(key string) func() {
	r.t.Helper()
	c := r.client()
	ctx := context.Background()
	ps := c.Subscribe(ctx, "__keyevent@0__:expired")
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		r.t.Fatal(err)
	}
	return func() {
		r.t.Helper()
		defer ps.Close()
		for {
			msg, err := ps.ReceiveTimeout(ctx, 10*time.Second)
			if err != nil {
				r.t.Fatalf("waiting for %s to expire: %v", key, err)
			}
			if m, ok := msg.(*redis.Message); ok && m.Payload == key {
				return
			}
		}
	}
}

// check is one behaviour of an interface, checked on a store S.
type check[S any] struct {
	name  string
	check func(t *testing.T, s S)
}

// runChecks runs each check on a fresh memory implementation and then on
// a fresh one of ours, with keys of its own.
func runChecks[S any](t *testing.T, checks []check[S], memory func() S, ours func(*redisServer, Option) S) {
	for _, c := range checks {
		t.Run("memory/"+c.name, func(t *testing.T) { c.check(t, memory()) })
	}
	r := startRedis(t)
	for i, c := range checks {
		t.Run("redis/"+c.name, func(t *testing.T) { c.check(t, ours(r, WithKeyPrefix(fmt.Sprintf("t%d:", i)))) })
	}
}

// awaitAll waits until each channel is closed, failing the test with what
// after ten seconds.
func awaitAll(t *testing.T, what string, chans ...<-chan struct{}) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for _, ch := range chans {
		select {
		case <-ch:
		case <-timeout:
			t.Fatal(what)
		}
	}
}

// testLogger records what is logged, and lets a test wait for a message.
type testLogger struct {
	mu    sync.Mutex
	lines []string
	wait  map[string]chan struct{}
}

func newTestLogger() (*testLogger, *slog.Logger) {
	l := &testLogger{wait: make(map[string]chan struct{})}
	return l, slog.New(l)
}

func (l *testLogger) Enabled(context.Context, slog.Level) bool { return true }
func (l *testLogger) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *testLogger) WithGroup(string) slog.Handler            { return l }
func (l *testLogger) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	for want, ch := range l.wait {
		if strings.Contains(r.Message, want) {
			close(ch)
			delete(l.wait, want)
		}
	}
	return nil
}

// next returns a channel closed when a message containing want is logged
// from now on.
func (l *testLogger) next(want string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	l.wait[want] = ch
	return ch
}

func (l *testLogger) logged(want string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// ownGoroutines counts the goroutines of the broadcaster and its
// subscribers.
//
// A goroutine that signalled its WaitGroup (defer wg.Done) may not have
// returned yet when Close, waiting on that group, does: so it looks again,
// a bounded number of times, while any is left.
func ownGoroutines() int {
	n := countOwnGoroutines()
	for i := 0; n > 0 && i < 200; i++ {
		time.Sleep(5 * time.Millisecond)
		n = countOwnGoroutines()
	}
	return n
}

func countOwnGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "mcp/redis.(*Broadcaster)") || strings.Contains(g, "mcp/redis.(*subscriber)") {
			n++
		}
	}
	return n
}

// TestRedisRestart: Redis stopped mid-run and started again on the same
// port. Meanwhile every call fails with an error naming what failed, by
// its deadline (with room for a loaded machine); the broadcasters log the loss. Afterwards the
// stores work again and the broadcasters' subscriptions come back, by
// themselves; Close leaves no goroutine.
func TestRedisRestart(t *testing.T) {
	r := startRedis(t)
	const timeout = 300 * time.Millisecond
	ca, cb := r.client(), r.client()
	logsA, logA := newTestLogger()
	logsB, logB := newTestLogger()
	events := NewEventStore(ca, WithTimeout(timeout))
	tasks := NewTaskStore(ca, WithTimeout(timeout))
	sessions := NewSessionStore(ca, WithTimeout(timeout))
	ba := NewBroadcaster(ca, WithTimeout(timeout), WithLogger(logA))
	bb := NewBroadcaster(cb, WithTimeout(timeout), WithLogger(logB))
	ctx := context.Background()
	inA, inB := newInbox(), newInbox()
	if _, err := ba.Subscribe(ctx, "mcp:server", inA.deliver); err != nil {
		t.Fatal(err)
	}
	if _, err := bb.Subscribe(ctx, "mcp:server", inB.deliver); err != nil {
		t.Fatal(err)
	}
	index := int64(0)
	ops := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"EventStore.Append", func(ctx context.Context) error { index++; return events.Append(ctx, "s", "1", index, []byte("x")) }},
		{"EventStore.After", func(ctx context.Context) error { _, _, err := events.After(ctx, "s", "1", 0); return err }},
		// StreamDone leaves its deletion to the session's next Append,
		// which carries it: AppendBatch stands for both.
		{"EventStore.AppendBatch", func(ctx context.Context) error {
			return events.AppendBatch(ctx, "s", "3", 1, [][]byte{[]byte("a"), []byte("b")})
		}},
		{"EventStore.SessionClosed", func(ctx context.Context) error { return events.SessionClosed(ctx, "gone") }},
		{"TaskStore.Create", func(ctx context.Context) error { return tasks.Create(ctx, newRecord("t", "alice", time.Hour)) }},
		{"TaskStore.Get", func(ctx context.Context) error { _, err := tasks.Get(ctx, "alice", "t"); return err }},
		{"TaskStore.UpdateStatus", func(ctx context.Context) error {
			return tasks.UpdateStatus(ctx, "alice", "t", mcp.TaskInputRequired, "", nil)
		}},
		{"TaskStore.PutResult", func(ctx context.Context) error {
			return tasks.PutResult(ctx, "alice", "t", mcp.TaskCompleted, json.RawMessage(`{}`), nil)
		}},
		{"TaskStore.List", func(ctx context.Context) error { _, _, err := tasks.List(ctx, "alice", "", 10); return err }},
		{"TaskStore.DeleteExpired", func(ctx context.Context) error { _, err := tasks.DeleteExpired(ctx, time.Now()); return err }},
		{"SessionStore.Save", func(ctx context.Context) error {
			return sessions.Save(ctx, &mcp.SessionRecord{ID: "s"}, time.Hour)
		}},
		{"SessionStore.Load", func(ctx context.Context) error { _, err := sessions.Load(ctx, "s"); return err }},
		{"SessionStore.Touch", func(ctx context.Context) error { return sessions.Touch(ctx, "s", time.Hour) }},
		{"SessionStore.Delete", func(ctx context.Context) error { return sessions.Delete(ctx, "other") }},
		{"Broadcaster.Publish", func(ctx context.Context) error { return ba.Publish(ctx, "mcp:other", []byte("x")) }},
		{"Broadcaster.Subscribe", func(ctx context.Context) error {
			stop, err := bb.Subscribe(ctx, "mcp:task:1", func([]byte) {})
			if err == nil {
				stop()
			}
			return err
		}},
	}
	// bounded runs op, failing the test if it takes far past the deadline.
	bounded := func(name string, op func(context.Context) error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- op(context.Background()) }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * timeout):
			t.Fatalf("%s hung with Redis down", name)
			return nil
		}
	}
	works := func(when string) {
		t.Helper()
		for _, op := range ops {
			if err := bounded(op.name, op.call); err != nil && !errors.Is(err, mcp.ErrTaskNotFound) && !errors.Is(err, mcp.ErrSessionNotFound) {
				t.Fatalf("%s %s: %v", op.name, when, err)
			}
		}
	}
	works("before the restart")

	lostA, lostB := logsA.next("lost Redis"), logsB.next("lost Redis")
	r.stop()
	failed := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			start := time.Now()
			failed[i] = op.call(context.Background())
			if d := time.Since(start); d > 5*timeout {
				failed[i] = fmt.Errorf("took %v, the deadline is %v: %w", d, timeout, failed[i])
			}
		})
	}
	wg.Wait()
	for i, op := range ops {
		var re *Error
		if err := failed[i]; !errors.As(err, &re) || re.Op != op.name || re.Key == "" {
			t.Fatalf("%s with Redis down: %v", op.name, err)
		}
	}
	t.Logf("with Redis down: %v", failed[1])
	awaitAll(t, "a broadcaster did not notice Redis went away", lostA, lostB)

	backA, backB := logsA.next("back on Redis"), logsB.next("back on Redis")
	r.start()
	awaitAll(t, "a broadcaster did not come back", backA, backB)
	works("after the restart")
	if err := bb.Publish(ctx, "mcp:server", []byte("again")); err != nil {
		t.Fatal(err)
	}
	inA.next(t, "again")
	inB.next(t, "again")

	ba.Close()
	bb.Close()
	if n := ownGoroutines(); n != 0 {
		t.Fatalf("%d goroutines left after Close", n)
	}
}

// TestMain keeps go-redis's own log of failed dials out of the output.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// countingEvents signals when the library has stored n events in an
// EventStore.
type countingEvents struct {
	*EventStore
	n      int64
	stored atomic.Int64
	done   chan struct{}
}

func (e *countingEvents) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	err := e.EventStore.Append(ctx, sessionID, streamID, index, data)
	if err == nil && e.stored.Add(1) == e.n {
		close(e.done)
	}
	return err
}

func (e *countingEvents) AppendBatch(ctx context.Context, sessionID, streamID string, first int64, data [][]byte) error {
	err := e.EventStore.AppendBatch(ctx, sessionID, streamID, first, data)
	if err != nil {
		return err
	}
	k := int64(len(data))
	if after := e.stored.Add(k); after >= e.n && after-k < e.n {
		close(e.done)
	}
	return err
}

// TestLibraryOnRedis: a server keeps its legacy sessions' events and its
// tasks on Redis through the library's options; a 2025-11-25 client over
// HTTP gets every progress report and its task's result.
func TestLibraryOnRedis(t *testing.T) {
	r := startRedis(t)
	c := r.client()
	// Five progress reports and the result; the handler stores them
	// after it wrote them.
	events := &countingEvents{EventStore: NewEventStore(c), n: 6, done: make(chan struct{})}
	srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, mcp.WithTasks(mcp.TaskOptions{Store: NewTaskStore(c), PollInterval: 10 * time.Millisecond}))
	srv.AddTool(mcp.Tool{Name: "count", Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range 5 {
				if err := req.Gateway().Progress(float64(i+1), 5, ""); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
		})
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithEventStore(events)))
	defer hs.Close()
	ctx := context.Background()
	cl := mcp.NewClient(mcp.Implementation{Name: "c", Version: "1"}, mcp.WithProtocolVersion("2025-11-25"))
	if err := cl.Connect(ctx, mcp.NewHTTPTransport(hs.URL)); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var reports atomic.Int64
	res, err := cl.CallTool(ctx, "count", nil, mcp.WithProgress(func(mcp.Progress) { reports.Add(1) }))
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	if n := reports.Load(); n != 5 {
		t.Fatalf("%d progress reports", n)
	}
	awaitAll(t, "the events were not stored", events.done)

	task, err := cl.StartTool(ctx, "count", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = task.Wait(ctx)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("the task's result: %+v, %v", res, err)
	}
	id := task.Task().ID
	if id == "" || c.Exists(ctx, "mcp:task:"+id).Val() != 1 {
		t.Fatalf("task %q is not in Redis", id)
	}
	if got := c.HGet(ctx, "mcp:task:"+id, "status").Val(); got != string(mcp.TaskCompleted) {
		t.Fatalf("the stored task's status: %q", got)
	}
}
