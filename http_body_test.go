package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// bodyWaitListener tells when the server waits for the body of each of
// its connections: once a connection's server side has read every byte of
// the request head and reads again, only the handler can be reading (the
// body), since net/http reads nothing more before calling it.
type bodyWaitListener struct {
	net.Listener
	head    int64         // the length of the head each client sends
	waiting chan struct{} // one token a connection whose body is awaited
}

func (l *bodyWaitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &bodyWaitConn{Conn: c, l: l}, nil
}

type bodyWaitConn struct {
	net.Conn
	l    *bodyWaitListener
	got  atomic.Int64
	once sync.Once
}

func (c *bodyWaitConn) Read(p []byte) (int, error) {
	if c.got.Load() >= c.l.head {
		c.once.Do(func() { c.l.waiting <- struct{}{} })
	}
	n, err := c.Conn.Read(p)
	c.got.Add(int64(n))
	return n, err
}

// TestHTTPAnnouncedBodiesCostNothing: 300 clients over loopback TCP each
// announce a body of the full cap (4 MiB) and send none of it. While every
// handler waits for its body the heap has grown by less than 32 MB (the
// handler once made a buffer of the announced length before reading,
// 1.2 GB here); once the clients go, nothing is left behind.
func TestHTTPAnnouncedBodiesCostNothing(t *testing.T) {
	const conns = 300
	const announced = DefaultMaxBodyBytes
	before := runtime.NumGoroutine()
	ts := httptest.NewUnstartedServer(NewHTTPHandler(newTestServer()))
	addr := ts.Listener.Addr().String()
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", announced)
	ln := &bodyWaitListener{Listener: ts.Listener, head: int64(len(head)), waiting: make(chan struct{}, conns)}
	ts.Listener = ln
	ts.Start()

	// Warm up what is built once: a session and its answer.
	legacySession(t, ts.URL, Version20251125)
	testHTTPClient.CloseIdleConnections()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()

	clients := make([]net.Conn, 0, conns)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
	}
	for range conns {
		<-ln.waiting
	}
	grown := int64(heap()) - int64(base)
	t.Logf("%d connections announcing %d bytes each and sending none: the heap grew by %.1f MB", conns, announced, float64(grown)/1e6)

	for _, c := range clients {
		c.Close()
	}
	ts.Close()
	testHTTPClient.CloseIdleConnections()
	settleGoroutines(t, before)
	if grown >= 32<<20 {
		t.Fatalf("the heap grew by %d bytes while bodies were announced and not sent", grown)
	}
}

// TestReadArriving: bodies that arrive whole, in pieces, empty or over the
// cap, with their length announced or not, read as they are; a body that
// arrives whole costs one buffer of its size.
func TestReadArriving(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 5000)
	for _, tc := range []struct {
		name      string
		r         io.Reader
		announced int64
		limit     int64
		want      []byte
		tooLarge  bool
	}{
		{"whole, announced", bytes.NewReader(body), int64(len(body)), 1 << 20, body, false},
		{"whole, not announced", bytes.NewReader(body), -1, 1 << 20, body, false},
		{"byte by byte, announced", iotest.OneByteReader(bytes.NewReader(body[:3000])), 3000, 1 << 20, body[:3000], false},
		{"in halves", iotest.HalfReader(bytes.NewReader(body)), int64(len(body)), 1 << 20, body, false},
		{"empty", strings.NewReader(""), 0, 1 << 20, []byte{}, false},
		{"at the cap", bytes.NewReader(body), -1, int64(len(body)), body, false},
		{"one byte over the cap", bytes.NewReader(body), -1, int64(len(body)) - 1, nil, true},
		{"shorter than announced", bytes.NewReader(body[:10]), 11, 1 << 20, nil, false},
		{"longer than announced", bytes.NewReader(body[:12]), 11, 1 << 20, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readArriving(tc.r, tc.announced, tc.limit)
			var tooLarge *http.MaxBytesError
			if tc.tooLarge {
				if !errors.As(err, &tooLarge) || got != nil {
					t.Fatalf("%d bytes, %v; want a MaxBytesError", len(got), err)
				}
				return
			}
			if tc.want == nil {
				if err == nil || got != nil {
					t.Fatalf("%d bytes, %v; want an error", len(got), err)
				}
				return
			}
			if err != nil || got == nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("%d bytes, %v", len(got), err)
			}
			if tc.announced >= 0 && cap(got) != len(got) {
				t.Fatalf("a body of %d bytes announced is in a buffer of %d", len(got), cap(got))
			}
		})
	}
	if a := testing.AllocsPerRun(100, func() {
		readArriving(bytes.NewReader(body[:1000]), 1000, 1<<20)
	}); a > 2 { // the body, and the reader's escape
		t.Fatalf("%v allocations to read a small body", a)
	}
}
