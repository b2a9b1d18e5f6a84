package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestIOTransportFraming(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 200_000)
	in := "first\r\n\n\nsecond\n" + long + "\nlast-without-newline"
	tr := NewIOTransport(strings.NewReader(in), io.Discard)
	var got []string
	for {
		msg, err := tr.ReadMessage()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(msg))
	}
	want := []string{"first", "second", long, "last-without-newline"}
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d: got %.40q want %.40q", i, got[i], want[i])
		}
	}
}

func TestIOTransportSkipsOversizedLines(t *testing.T) {
	t.Parallel()
	in := "ok1\n" + strings.Repeat("z", 300_000) + "\nok2\n" + strings.Repeat("q", 2000) + "\nok3\n"
	tr := NewIOTransport(strings.NewReader(in), io.Discard)
	tr.setMaxMessageSize(1000)
	var got []string
	tooLarge := 0
	for {
		msg, err := tr.ReadMessage()
		if errors.Is(err, ErrMessageTooLarge) {
			tooLarge++
			continue
		}
		if err != nil {
			break
		}
		got = append(got, string(msg))
	}
	if tooLarge != 2 || strings.Join(got, ",") != "ok1,ok2,ok3" {
		t.Fatalf("tooLarge=%d got=%v", tooLarge, got)
	}
}

func TestIOTransportWritesOneLinePerMessage(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	tr := NewIOTransport(strings.NewReader(""), &b)
	tr.WriteMessage([]byte(`{"a":1}`))
	tr.writeBatch([][]byte{[]byte(`{"b":2}`), []byte(`{"c":3}`)})
	if b.String() != "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n" {
		t.Fatalf("%q", b.String())
	}
}

// TestChildKilledMidCall: killing a child server mid-call fails every
// pending call with ErrClosed promptly and leaves no goroutine behind.
func TestChildKilledMidCall(t *testing.T) {
	before := runtime.NumGoroutine()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_SERVE=")
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := cl.CallTool(context.Background(), "block", nil)
			errs <- err
		}()
	}
	// The calls are pending once the server answers a ping sent after them.
	for cl.conn.pendingCount() < 3 {
		runtime.Gosched()
	}
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Process.Kill()
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("pending call returned %v", err)
		}
	}
	if d := time.Since(killed); d > 100*time.Millisecond {
		t.Errorf("pending calls failed %v after the kill, want within 100ms", d)
	}
	cl.Close()
	settleGoroutines(t, before)
}

// TestCommandTransportEscalates: a child that ignores its closed stdin and
// SIGTERM is killed, each step bounded by its timeout.
func TestCommandTransportEscalates(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo '{"jsonrpc":"2.0","method":"hello"}'; while :; do sleep 1; done`)
	tr := NewCommandTransport(cmd)
	tr.CloseTimeout, tr.TerminateTimeout = 50*time.Millisecond, 50*time.Millisecond
	if err := tr.start(context.Background(), newConfig().logger, 0); err != nil {
		t.Fatal(err)
	}
	if msg, err := tr.ReadMessage(); err != nil || !strings.Contains(string(msg), "hello") {
		t.Fatalf("read %q %v", msg, err)
	}
	done := make(chan struct{})
	go func() { tr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not escalate to SIGKILL")
	}
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Fatalf("child state %v", cmd.ProcessState)
	}
}

// TestChildStderrIsDrained: a child writing lots to stderr never blocks,
// and its lines reach the logger.
func TestChildStderrIsDrained(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 3000 ]; do echo "noise line $i" >&2; i=$((i+1)); done; echo '{"jsonrpc":"2.0","method":"done"}'`)
	rec := &logRecorder{}
	tr := NewCommandTransport(cmd)
	if err := tr.start(context.Background(), slogOf(rec), 0); err != nil {
		t.Fatal(err)
	}
	msg, err := tr.ReadMessage()
	if err != nil || !strings.Contains(string(msg), "done") {
		t.Fatalf("read %q %v", msg, err)
	}
	tr.Close()
	if n := rec.count("noise line"); n != 3000 {
		t.Fatalf("logged %d stderr lines", n)
	}
}

// pipeReader returns an IOTransport reading an OS pipe, and the pipe's
// two ends; both are closed when the test ends.
func pipeReader(t *testing.T) (tr *IOTransport, r, w *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return NewIOTransport(r, io.Discard), r, w
}

// TestIOTransportReadInterruptedMidLine: a read interrupted by a deadline
// on the reader in the middle of a line loses nothing; the next read
// returns the whole line.
func TestIOTransportReadInterruptedMidLine(t *testing.T) {
	tr, r, w := pipeReader(t)
	w.Write([]byte(`{"jsonrpc":"2.0",`))
	if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("an OS pipe has no read deadline: %v", err)
	}
	if _, err := tr.ReadMessage(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("interrupted read = %v, want os.ErrDeadlineExceeded", err)
	}
	r.SetReadDeadline(time.Time{})
	w.Write([]byte(`"method":"ping"}` + "\n"))
	msg, err := tr.ReadMessage()
	if err != nil || string(msg) != `{"jsonrpc":"2.0","method":"ping"}` {
		t.Fatalf("read after the interruption = %q, %v", msg, err)
	}
}

// TestIOTransportSkipInterruptedMidLine: an over-long line whose skipping
// is interrupted is still skipped whole, and reported once, when reading
// goes on.
func TestIOTransportSkipInterruptedMidLine(t *testing.T) {
	tr, r, w := pipeReader(t)
	tr.setMaxMessageSize(16)
	go w.Write(bytes.Repeat([]byte("x"), 100<<10)) // more than the reader's buffer, no newline
	r.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := tr.ReadMessage(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("interrupted skip = %v, want os.ErrDeadlineExceeded", err)
	}
	r.SetReadDeadline(time.Time{})
	w.Write([]byte("yyy\n{\"a\":1}\n"))
	if _, err := tr.ReadMessage(); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("after the interruption = %v, want ErrMessageTooLarge", err)
	}
	msg, err := tr.ReadMessage()
	if err != nil || string(msg) != `{"a":1}` {
		t.Fatalf("the line after the long one = %q, %v", msg, err)
	}
}

// TestCommandTransportSaysWhyTheChildExited: a server that dies as it
// starts fails Connect with its exit status and its last lines on standard
// error, which the default logger would otherwise discard.
func TestCommandTransportSaysWhyTheChildExited(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_CRASH=fatal: no config file at /etc/greeter.toml")
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	err := cl.Connect(context.Background(), NewCommandTransport(cmd))
	want := "server process exited: exit status 3; its standard error ended with: starting up | fatal: no config file at /etc/greeter.toml"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Connect: %v\nwant an error containing %q", err, want)
	}
}

// TestCommandTransportWaitsCloseTimeoutForTheExit: a child that closes its
// output but lives on is reported as such once CloseTimeout has passed
// without its exit, and Close still ends it.
func TestCommandTransportWaitsCloseTimeoutForTheExit(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_CLOSE_STDOUT=1")
	tr := NewCommandTransport(cmd)
	tr.CloseTimeout = 50 * time.Millisecond
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	err := cl.Connect(context.Background(), tr)
	if err == nil || !strings.Contains(err.Error(), "server closed its standard output: EOF") {
		t.Fatalf("Connect: %v, want the closed output named", err)
	}
}
