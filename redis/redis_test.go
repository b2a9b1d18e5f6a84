package mcpredis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &redisServer{t: t, bin: bin, port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// start runs redis-server and returns once it accepts connections, as it
// says on its output.
func (r *redisServer) start() {
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
			r.t.Fatalf("redis-server on port %d ended before it was ready:\n%s", r.port, log.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		r.t.Fatalf("redis-server on port %d was not ready after ten seconds", r.port)
	}
	r.cmd = cmd
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
func ownGoroutines() int {
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
