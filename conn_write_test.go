package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stuckTransport is a peer that reads nothing until the test lets it: each
// write waits for release (one write each) or Close.
type stuckTransport struct {
	release chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newStuckTransport() *stuckTransport {
	return &stuckTransport{release: make(chan struct{}), closed: make(chan struct{})}
}

func (t *stuckTransport) ReadMessage() ([]byte, error) {
	<-t.closed
	return nil, io.EOF
}

func (t *stuckTransport) WriteMessage([]byte) error {
	select {
	case <-t.release:
		return nil
	case <-t.closed:
		return io.ErrClosedPipe
	}
}

func (t *stuckTransport) Close() error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

// stuckConn starts a server connection, made with opts, over a transport
// whose peer does not read until released; it closes with the test.
func stuckConn(t *testing.T, opts ...ServerOption) (*conn, *stuckTransport) {
	t.Helper()
	srv := newTestServer(opts...)
	tr := newStuckTransport()
	ss := &serverSession{srv: srv}
	c := newConn(tr, srv.cfg, ss, 0)
	ss.conn = c
	if err := c.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.closeAndWait(nil) })
	return c, tr
}

// TestWriteBacklogAtTheLimit: with the writer stuck on a peer that does
// not read, messages the engine sends without waiting are kept up to
// exactly the limit, a handler's message past it waits until the peer
// reads, a cancellation past it is dropped, and a message that must not
// wait and would pass the limit by one byte closes the connection, saying
// why in the log and in its error.
func TestWriteBacklogAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 1000
		rec := &logRecorder{}
		c, tr := stuckConn(t, WithWriteBacklog(limit), WithLogger(slog.New(rec)))
		msg := func(n int) outgoing { return outgoing{data: make([]byte, n)} }
		queue := func(n int, mode writeMode) {
			t.Helper()
			if err := c.queueWrite(msg(n), mode); err != nil {
				t.Fatalf("queueing %d bytes: %v", n, err)
			}
		}
		closed := func() bool {
			select {
			case <-c.done:
				return true
			default:
				return false
			}
		}

		queue(10, mustQueue) // the writer takes it and waits for the peer
		synctest.Wait()
		queue(limit-10, mustQueue)
		queue(10, mustQueue) // exactly at the limit
		synctest.Wait()
		if closed() {
			t.Fatalf("closed with a backlog at the limit: %v", c.closedErr())
		}

		waited := make(chan error, 1)
		go func() { waited <- c.queueWrite(msg(1), mayWait) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("a handler's message past the limit did not wait: %v", err)
		default:
		}
		tr.release <- struct{}{} // the peer reads the first message
		synctest.Wait()
		if err := <-waited; err != nil {
			t.Fatalf("the waiting handler's message: %v", err)
		}

		// The writer took the backlog and waits again; the handler's byte
		// is queued.
		queue(limit-1, mustQueue) // exactly at the limit again
		synctest.Wait()
		if closed() {
			t.Fatalf("closed with a backlog at the limit: %v", c.closedErr())
		}
		// A cancellation past the limit is dropped, the connection kept.
		if err := c.queueWrite(msg(1), mayDrop); !errors.Is(err, errBacklogFull) {
			t.Fatalf("a droppable byte past the limit: %v, want errBacklogFull", err)
		}
		if closed() {
			t.Fatalf("a droppable byte past the limit closed the connection: %v", c.closedErr())
		}
		if err := c.queueWrite(msg(1), mustQueue); err == nil {
			t.Fatal("one byte past the limit was queued")
		}
		if !closed() {
			t.Fatal("one byte past the limit did not close the connection")
		}
		var nr *errNotReading
		if !errors.As(c.closeErr, &nr) || nr.backlog != limit || nr.limit != limit {
			t.Fatalf("closed with %v, want the peer not reading at %d of %d", c.closeErr, limit, limit)
		}
		if n := rec.count(fmt.Sprintf("the peer is not reading; closing the connection backlog=%d message=1 limit=%d", limit, limit)); n != 1 {
			t.Fatalf("the reason was logged %d times", n)
		}
	})
}

// TestWriteBacklogOversizedMessage: a message larger than the limit still
// goes when nothing else is queued; the next one past the limit does not.
func TestWriteBacklogOversizedMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 100
		c, _ := stuckConn(t, WithWriteBacklog(limit))
		if err := c.queueWrite(outgoing{data: make([]byte, 1)}, mustQueue); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the writer waits for the peer
		if err := c.queueWrite(outgoing{data: make([]byte, 3*limit)}, mustQueue); err != nil {
			t.Fatalf("a large message on an empty queue: %v", err)
		}
		if err := c.queueWrite(outgoing{data: make([]byte, 1)}, mustQueue); err == nil {
			t.Fatal("a message past the limit was queued behind a large one")
		}
	})
}

// TestNonReadingPeerIsDisconnected: a peer that sends 2,000,000 garbage
// lines and never reads its answers is disconnected once the error replies
// fill the write backlog, with the reason logged and returned by Serve; the
// server's heap stays under 64 MB meanwhile (sampled every 10,000 lines
// after a collection). It answered each line with an error queued beyond
// any limit, hundreds of megabytes.
func TestNonReadingPeerIsDisconnected(t *testing.T) {
	for _, carrier := range []string{"os pipe", "in-memory"} {
		t.Run(carrier, func(t *testing.T) {
			var serverSide Transport
			var in io.WriteCloser
			var out io.Closer // the peer's reading end, never read
			switch carrier {
			case "os pipe":
				inR, inW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				outR, outW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				serverSide, in, out = NewIOTransport(inR, outW), inW, outR
			case "in-memory":
				peer, st := NewInMemoryTransports()
				serverSide, in, out = st, peer.(*IOTransport).w.(io.WriteCloser), peer
			}
			rec := &logRecorder{}
			srv := newTestServer(WithLogger(slog.New(rec)))
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), serverSide) }()
			t.Cleanup(func() {
				in.Close()
				out.Close()
				<-served
			})

			const lines, chunkLines, sample = 2_000_000, 10_000, 10_000
			const bound = 64 << 20
			chunk := bytes.Repeat([]byte("garbage\n"), chunkLines)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			heap := func() uint64 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return max(ms.HeapAlloc, base) - base
			}
			var peak uint64
			sent := 0
			for sent < lines {
				if _, err := in.Write(chunk); err != nil {
					break // the server closed the connection
				}
				sent += chunkLines
				if sent%sample == 0 {
					growth := heap()
					peak = max(peak, growth)
					if growth > bound {
						t.Fatalf("after %d garbage lines the heap grew by %d MB, over %d MB", sent, growth>>20, bound>>20)
					}
				}
			}
			peak = max(peak, heap())
			t.Logf("sent %d garbage lines; the heap grew by at most %.1f MB", sent, float64(peak)/(1<<20))
			if sent >= lines {
				t.Fatalf("the server read all %d garbage lines without closing the connection", lines)
			}
			select {
			case err := <-served:
				served <- err // for the cleanup
				var nr *errNotReading
				if !errors.As(err, &nr) || !strings.Contains(err.Error(), "not reading") || nr.limit != DefaultWriteBacklog {
					t.Fatalf("Serve returned %v, want the peer not reading", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Serve did not return")
			}
			if n := rec.count("the peer is not reading; closing the connection backlog="); n != 1 {
				t.Fatalf("the reason was logged %d times", n)
			}
			if n := rec.count(fmt.Sprintf("limit=%d", DefaultWriteBacklog)); n != 1 {
				t.Fatalf("the limit was logged %d times", n)
			}
		})
	}
}

// floodAfterHandshake is a hostile server: it answers initialize, reads
// notifications/initialized, then sends up to a million garbage lines and
// never reads again.
func floodAfterHandshake(r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	var m struct{ ID json.RawMessage }
	json.Unmarshal(line, &m)
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"`+Version20251125+`","capabilities":{},"serverInfo":{"name":"hostile","version":"0"}}}`+"\n")
	if _, err := br.ReadBytes('\n'); err != nil { // notifications/initialized
		return
	}
	chunk := bytes.Repeat([]byte("garbage\n"), 1000)
	for range 1000 {
		if _, err := w.Write(chunk); err != nil {
			return // the client closed the connection
		}
	}
}

// TestNonReadingServerDisconnectsClient: the limit holds on the client's
// side too, in memory and over a child process. A server that reads the
// handshake, then sends garbage and never reads again fills the client's
// backlog with error replies; the client closes the connection, logs why,
// and its next call fails with the reason.
func TestNonReadingServerDisconnectsClient(t *testing.T) {
	const limit = 64 << 10
	for _, carrier := range []string{"in-memory", "command"} {
		t.Run(carrier, func(t *testing.T) {
			var tr Transport
			switch carrier {
			case "in-memory":
				clientSide, serverSide := NewInMemoryTransports()
				hostile := serverSide.(*IOTransport)
				done := make(chan struct{})
				go func() {
					defer close(done)
					floodAfterHandshake(hostile.r, hostile.w)
				}()
				t.Cleanup(func() {
					hostile.Close()
					<-done
				})
				tr = clientSide
			case "command":
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "MCP_TEST_FLOOD=1")
				ct := NewCommandTransport(cmd)
				ct.CloseTimeout = 100 * time.Millisecond // the child never reads its input's end
				tr = ct
			}
			rec := &logRecorder{}
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithWriteBacklog(limit), WithLogger(slog.New(rec)), WithProtocolVersion(Version20251125))
			if err := cl.Connect(context.Background(), tr); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			conn, _, err := cl.session()
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-conn.done:
			case <-time.After(30 * time.Second):
				t.Fatal("the connection is open after the flood of garbage nobody read the answers to")
			}
			var nr *errNotReading
			if err := cl.Ping(context.Background()); !errors.As(err, &nr) || !errors.Is(err, ErrClosed) || nr.limit != limit {
				t.Fatalf("Ping after the flood: %v, want the server not reading", err)
			}
			if n := rec.count("the peer is not reading; closing the connection backlog="); n != 1 {
				t.Fatalf("the reason was logged %d times", n)
			}
		})
	}
}
