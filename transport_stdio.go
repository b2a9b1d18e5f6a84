package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A Transport carries JSON-RPC messages for one connection. The package
// provides newline-delimited JSON over byte streams ([NewIOTransport],
// [StdioTransport], [NewCommandTransport], [NewInMemoryTransports]) and
// Streamable HTTP; any other carrier (a WebSocket, a Unix socket with another
// framing) can implement it.
//
// ReadMessage is called from one goroutine only; WriteMessage from one
// goroutine at a time; Close from any goroutine, and it must unblock a
// pending ReadMessage.
type Transport interface {
	// ReadMessage returns the next message. The slice is valid until the
	// next call. An error ends the connection, except one that wraps
	// ErrMessageTooLarge: that message was skipped and reading goes on.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message. msg is valid only during the call.
	WriteMessage(msg []byte) error
	// Close ends the connection.
	Close() error
}

// ErrMessageTooLarge is wrapped by a Transport's read error when a message
// exceeded the size limit. The message was discarded; the connection lives.
var ErrMessageTooLarge = errors.New("mcp: message too large")

// DefaultMaxMessageSize is the default limit on one incoming message; see
// [WithMaxMessageSize].
const DefaultMaxMessageSize = 16 << 20

// The engine looks for the unexported interfaces below on the transports of
// this package.

// starter is implemented by transports that must start something before
// the first message (a child process, an HTTP event stream): a connection
// calls start once, with its logger and its limit on one incoming message,
// and fails if start fails.
type starter interface {
	start(ctx context.Context, log *slog.Logger, maxMessageSize int) error
}

// pipeTransport is implemented by transports over a byte stream
// (IOTransport). The engine's writer writes what is queued in one
// writeBatch.
type pipeTransport interface {
	writeBatch(msgs [][]byte) error
}

// exchangeTransport is implemented by client transports that send each
// message in an exchange of its own and read on goroutines of their own
// (Streamable HTTP). The engine hands each message over with writeOwned and
// never reuses its buffer; the transport gives it back to the pool
// (recycleMessage) once done, or leaves it to the collector. The transport
// hands what it reads to the function pushInto gives it, on the goroutine
// that read it, one hop shorter than through ReadMessage, which then only
// reports the end of the connection; it ends a request with a Go error of
// its own (an *AuthError) through fail, so that the caller gets that error
// as it is. abortExchange abandons the exchange of a request the engine
// gave up on.
type exchangeTransport interface {
	writeOwned(msg []byte) error
	pushInto(push func(data []byte), fail func(id ID, err error))
	abortExchange(id ID)
}

// IOTransport speaks newline-delimited JSON over a reader and a writer: one
// message per line, no embedded newlines. It is the stdio framing.
type IOTransport struct {
	r       *bufio.Reader
	w       io.Writer
	closers []io.Closer
	maxSize int

	skipping int    // bytes of an over-long line skipped so far, while skipping it
	line     []byte // accumulates a line longer than the reader's buffer
	wbuf     []byte
	closeMu  sync.Once
	closeFn  func() error
}

// NewIOTransport returns a Transport that reads messages from r and writes
// them to w, one per line. Close closes r and w if they are io.Closers.
func NewIOTransport(r io.Reader, w io.Writer) *IOTransport {
	t := &IOTransport{r: bufio.NewReaderSize(r, 64<<10), w: w, maxSize: DefaultMaxMessageSize}
	for _, x := range []any{w, r} {
		if c, ok := x.(io.Closer); ok {
			t.closers = append(t.closers, c)
		}
	}
	return t
}

// StdioTransport returns a Transport over the process's standard input and
// output, for a server launched by its client. Standard error is left alone:
// log there.
func StdioTransport() *IOTransport {
	t := NewIOTransport(os.Stdin, os.Stdout)
	// Closing our own stdin and stdout would hide later mistakes (a stray
	// print) behind EBADF; leave them open.
	t.closers = nil
	return t
}

func (t *IOTransport) start(_ context.Context, _ *slog.Logger, maxMessageSize int) error {
	t.setMaxMessageSize(maxMessageSize)
	return nil
}

func (t *IOTransport) setMaxMessageSize(n int) {
	if n > 0 {
		t.maxSize = n
	}
}

// ReadMessage returns the next non-empty line.
func (t *IOTransport) ReadMessage() ([]byte, error) {
	if t.skipping > 0 {
		// An interrupted read left an over-long line half skipped.
		n, err := t.discardLine()
		if err != nil {
			return nil, err
		}
		return nil, t.tooLarge(t.maxSize + n)
	}
	for {
		chunk, err := t.r.ReadSlice('\n')
		if err == nil && len(t.line) == 0 {
			if msg := trimLine(chunk); len(msg) > 0 {
				if len(msg) > t.maxSize {
					return nil, t.tooLarge(len(msg))
				}
				return msg, nil
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(t.line)+len(chunk) > t.maxSize {
				t.line = t.line[:0]
				n, derr := t.discardLine()
				if derr != nil {
					return nil, derr
				}
				return nil, t.tooLarge(t.maxSize + n)
			}
			t.line = append(t.line, chunk...)
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A read interrupted by a deadline on r (an os.File or a
			// net.Conn): keep the part of the line read so far for the
			// next call.
			t.line = append(t.line, chunk...)
			return nil, err
		}
		if err != nil && !(errors.Is(err, io.EOF) && len(chunk)+len(t.line) > 0) {
			return nil, err
		}
		// A complete long line, or a last line without its newline.
		t.line = append(t.line, chunk...)
		msg := trimLine(t.line)
		t.line = t.line[:0]
		if len(msg) > t.maxSize {
			return nil, t.tooLarge(len(msg))
		}
		if len(msg) > 0 {
			return msg, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (t *IOTransport) tooLarge(n int) error {
	return fmt.Errorf("%w: a message of at least %d bytes exceeds the limit of %d", ErrMessageTooLarge, n, t.maxSize)
}

// discardLine skips the rest of an over-long line, counting what it skipped.
// An interrupted read (os.ErrDeadlineExceeded) leaves the count in
// t.skipping, for the next ReadMessage to go on skipping.
func (t *IOTransport) discardLine() (int, error) {
	n := t.skipping
	t.skipping = 0
	for {
		chunk, err := t.r.ReadSlice('\n')
		n += len(chunk)
		if err == nil {
			return n, nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.skipping = max(n, 1)
			return n, err
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

func trimLine(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// WriteMessage writes msg and a newline in one write.
func (t *IOTransport) WriteMessage(msg []byte) error {
	return t.writeBatch([][]byte{msg})
}

// copyLimit is the message size from which a message is written as
// is, followed by its newline, instead of being copied into the write
// buffer: copying costs more than the extra write, and the buffer stays small.
const copyLimit = 64 << 10

func (t *IOTransport) writeBatch(msgs [][]byte) error {
	t.wbuf = t.wbuf[:0]
	for _, m := range msgs {
		if len(m) < copyLimit {
			t.wbuf = append(t.wbuf, m...)
			t.wbuf = append(t.wbuf, '\n')
			continue
		}
		if len(t.wbuf) > 0 {
			if _, err := t.w.Write(t.wbuf); err != nil {
				return err
			}
			t.wbuf = t.wbuf[:0]
		}
		if _, err := t.w.Write(m); err != nil {
			return err
		}
		t.wbuf = append(t.wbuf, '\n')
	}
	if len(t.wbuf) == 0 {
		return nil
	}
	_, err := t.w.Write(t.wbuf)
	if cap(t.wbuf) > 1<<20 {
		t.wbuf = nil // don't pin a large batch's buffer
	}
	return err
}

// Close closes the underlying reader and writer, if they can be closed.
func (t *IOTransport) Close() error {
	var err error
	t.closeMu.Do(func() {
		if t.closeFn != nil {
			err = t.closeFn()
			return
		}
		for _, c := range t.closers {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	})
	return err
}

// NewInMemoryTransports returns two connected Transports with the stdio
// framing, for tests and benchmarks: give one to a Server and the other to a
// Client.
func NewInMemoryTransports() (clientSide, serverSide Transport) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	return NewIOTransport(cr, cw), NewIOTransport(sr, sw)
}

// CommandTransport runs an MCP server as a child process and speaks to it
// over its standard input and output. The child's standard error is drained
// line by line to the client's logger unless cmd.Stderr is already set, and
// its last lines are quoted in the error that reports the child's exit, so
// that a server that crashes says why even when nothing is logged.
//
// Close ends the child in steps, each bounded: close its standard input and
// wait up to CloseTimeout for it to exit, then send SIGTERM and wait up to
// TerminateTimeout, then SIGKILL. Where SIGTERM cannot be sent (Windows)
// the kill follows the first wait.
type CommandTransport struct {
	// CloseTimeout bounds the wait for the child to exit after its standard
	// input is closed (default 5s). It also bounds how long a read that
	// found the child's output closed waits for its exit status, and how
	// long the child's standard error is read after it exited (a
	// grandchild may hold it open).
	CloseTimeout time.Duration
	// TerminateTimeout bounds the wait after SIGTERM (default 5s).
	TerminateTimeout time.Duration

	cmd *exec.Cmd
	*IOTransport
	stdin   *os.File
	stdout  *os.File
	stderr  *os.File
	exited  chan struct{}
	waitErr error
	drained chan struct{}
	tail    stderrTail
}

// NewCommandTransport returns a Transport that starts cmd when a Client
// connects over it. cmd must not be started yet and must leave Stdin and
// Stdout unset.
func NewCommandTransport(cmd *exec.Cmd) *CommandTransport {
	return &CommandTransport{cmd: cmd, CloseTimeout: 5 * time.Second, TerminateTimeout: 5 * time.Second}
}

func (t *CommandTransport) start(ctx context.Context, log *slog.Logger, maxMessageSize int) error {
	if t.cmd.Stdin != nil || t.cmd.Stdout != nil {
		return errors.New("mcp: NewCommandTransport: cmd.Stdin and cmd.Stdout must be unset")
	}
	// Our own pipes rather than cmd.StdoutPipe: Wait closes those as soon as
	// the child exits, which would lose the last messages it wrote.
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return err
	}
	var errR, errW *os.File
	if t.cmd.Stderr == nil {
		if errR, errW, err = os.Pipe(); err != nil {
			closeFiles(inR, inW, outR, outW)
			return err
		}
		t.cmd.Stderr = errW
	}
	t.cmd.Stdin, t.cmd.Stdout = inR, outW
	err = t.cmd.Start()
	closeFiles(inR, outW, errW)
	if err != nil {
		closeFiles(inW, outR, errR)
		return errorf("starting %s: %w", t.cmd.Path, err)
	}
	t.stdin, t.stdout, t.stderr = inW, outR, errR
	t.IOTransport = NewIOTransport(outR, inW)
	t.IOTransport.setMaxMessageSize(maxMessageSize)
	t.IOTransport.closeFn = t.shutdown
	t.exited = make(chan struct{})
	t.drained = make(chan struct{})
	if errR != nil {
		go func() {
			defer close(t.drained)
			drainStderr(errR, log, t.cmd.Path, &t.tail)
		}()
	} else {
		close(t.drained)
	}
	go func() {
		t.waitErr = t.cmd.Wait()
		close(t.exited)
	}()
	return nil
}

// closeFiles closes the files that are not nil.
func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// ReadMessage returns the child's next message.
func (t *CommandTransport) ReadMessage() ([]byte, error) {
	if t.IOTransport == nil {
		return nil, errors.New("mcp: CommandTransport not started")
	}
	msg, err := t.IOTransport.ReadMessage()
	if !errors.Is(err, io.EOF) {
		return msg, err
	}
	// The end of the child's output comes just before its exit, most
	// often: its exit status and its last lines on standard error say why.
	if !waitFor(t.exited, t.CloseTimeout) {
		return nil, fmt.Errorf("server closed its standard output: %w", err)
	}
	waitFor(t.drained, t.CloseTimeout)
	last := t.tail.String()
	switch {
	case t.waitErr != nil && last != "":
		return nil, fmt.Errorf("server process exited: %w; its standard error ended with: %s", t.waitErr, last)
	case t.waitErr != nil:
		return nil, fmt.Errorf("server process exited: %w", t.waitErr)
	case last != "":
		return nil, errors.New("server process exited; its standard error ended with: " + last)
	}
	return nil, errors.New("server process exited")
}

// WriteMessage sends msg to the child's standard input.
func (t *CommandTransport) WriteMessage(msg []byte) error {
	if t.IOTransport == nil {
		return errors.New("mcp: CommandTransport not started")
	}
	return t.IOTransport.WriteMessage(msg)
}

// Close stops the child, escalating as the type's documentation says, and
// returns once it has exited.
func (t *CommandTransport) Close() error {
	if t.IOTransport == nil {
		return nil
	}
	return t.IOTransport.Close()
}

func (t *CommandTransport) shutdown() error {
	t.stdin.Close()
	if !waitFor(t.exited, t.CloseTimeout) {
		if err := t.cmd.Process.Signal(syscall.SIGTERM); err != nil || !waitFor(t.exited, t.TerminateTimeout) {
			t.cmd.Process.Kill()
			<-t.exited
		}
	}
	t.stdout.Close()
	if !waitFor(t.drained, t.CloseTimeout) {
		// A grandchild still holds the pipe open; stop reading it.
		t.stderr.Close()
		<-t.drained
	}
	closeFiles(t.stderr)
	return nil
}

// waitFor reports whether ch is closed within d; with d <= 0 it does not wait.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// drainStderr forwards the child's standard error to the logger, one record
// a line, so a chatty child can never block on a full pipe, and keeps its
// last lines in tail.
func drainStderr(r io.Reader, log *slog.Logger, name string, tail *stderrTail) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := string(trimLine(line))
			log.Info("server stderr", "command", name, "line", text)
			tail.add(text)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return
		}
	}
}

// stderrTail keeps the last lines a child wrote to its standard error, for
// the error that reports its exit: a crashed server's reason is there.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

// The tail's bounds: lines kept, and bytes kept of each.
const (
	stderrTailLines = 10
	stderrTailWidth = 256
)

func (t *stderrTail) add(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > stderrTailWidth {
		line = strings.ToValidUTF8(line[:stderrTailWidth], "") + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == stderrTailLines {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

// String joins the lines kept with " | ".
func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
