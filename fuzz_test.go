package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Fuzz targets run as regression tests on their seeds and corpus in
// `go test`; for a longer hunt run, for example:
//
//	go test -run '^$' -fuzz '^FuzzEngine$' -fuzztime 10m .
//
// .ci/run gives each target a short bounded run.

// scriptTransport feeds the engine scripted frames and records what it
// writes. After the script it blocks until closed, so in-flight handlers
// finish and answer before the connection ends.
type scriptTransport struct {
	frames [][]byte
	next   int
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	written [][]byte
}

func newScriptTransport(frames [][]byte) *scriptTransport {
	return &scriptTransport{frames: frames, closed: make(chan struct{})}
}

func (s *scriptTransport) ReadMessage() ([]byte, error) {
	if s.next < len(s.frames) {
		f := s.frames[s.next]
		s.next++
		return f, nil
	}
	<-s.closed
	return nil, io.EOF
}

func (s *scriptTransport) WriteMessage(msg []byte) error {
	s.mu.Lock()
	s.written = append(s.written, bytes.Clone(msg))
	s.mu.Unlock()
	return nil
}

func (s *scriptTransport) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// FuzzDecodeFrame: any frame gets at most one answer, always valid JSON-RPC,
// and never a panic.
func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		synctest.Test(t, func(t *testing.T) {
			st := newScriptTransport([][]byte{frame})
			ss := &serverSession{srv: newTestServer()}
			c := newConn(st, ss.srv.cfg, ss, 0)
			ss.conn = c
			c.batchOK.Store(true)
			if err := c.start(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			st.Close()
			c.wg.Wait()
			for _, w := range st.written {
				var m wireMessage
				if err := json.Unmarshal(w, &m); err != nil || m.JSONRPC != "2.0" {
					t.Fatalf("wrote invalid JSON-RPC %q for %q", w, frame)
				}
				if m.Result == nil && m.Error == nil {
					t.Fatalf("wrote a non-response %q for %q", w, frame)
				}
			}
			if bytes.HasPrefix(bytes.TrimSpace(frame), []byte("[")) {
				return // a batch answers once per item
			}
			if len(st.written) > 1 {
				t.Fatalf("one frame got %d answers: %q", len(st.written), st.written)
			}
		})
	})
}

// FuzzEngine feeds the engine random sequences of requests, responses,
// cancellations, progress and garbage, then checks its invariants: no
// panic, every request answered at most once and, unless cancelled,
// exactly once, and nothing left in its tables.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 0, 3, 3, 1, 1})
	f.Add([]byte{2, 2, 2, 2, 6, 6, 7, 0})
	f.Add([]byte("engine fuzz seed with a longer script of steps"))
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 64 {
			script = script[:64]
		}
		var frames [][]byte
		sends := map[string]int{}
		cancels := map[string]int{}
		frames = append(frames, []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}`))
		sends[`"init"`]++
		for i, b := range script {
			id := fmt.Sprint(int(b) % 5)
			if b&0x40 != 0 {
				id = fmt.Sprintf("%q", id)
			}
			var frame string
			switch b % 8 {
			case 0:
				frame = `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
				sends[id]++
			case 1:
				frame = `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"wait"}}`
				sends[id]++
			case 2:
				frame = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
				cancels[id]++
			case 3:
				frame = `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
				sends[id]++
			case 4:
				frame = `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
			case 5:
				frame = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + id + `,"progress":` + fmt.Sprint(i) + `}}`
			case 6:
				frame = `{"jsonrpc":"2.0","id":` + id + `,"method":"no/such"}`
				sends[id]++
			case 7:
				frame = string(script[i:min(i+5, len(script))]) // garbage
			}
			frames = append(frames, []byte(frame))
		}
		synctest.Test(t, func(t *testing.T) {
			srv := NewServer(Implementation{Name: "f", Version: "0"}, WithMaxInFlight(3))
			srv.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				return &CallToolResult{}, nil
			})
			srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
				return &CallToolResult{}, nil
			})
			st := newScriptTransport(frames)
			ss := &serverSession{srv: srv}
			c := newConn(st, srv.cfg, ss, 0)
			ss.conn = c
			if err := c.start(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // every handler has finished by now
			synctest.Wait()
			c.mu.Lock()
			inbound, occupied, pending := len(c.inbound), c.occupied, len(c.pending)
			c.mu.Unlock()
			if inbound != 0 || occupied != 0 || pending != 0 {
				t.Fatalf("inbound %d occupied %d pending %d", inbound, occupied, pending)
			}
			st.Close()
			c.wg.Wait()
			answers := map[string]int{}
			for _, w := range st.written {
				var m wireMessage
				if json.Unmarshal(w, &m) != nil {
					t.Fatalf("invalid output %q", w)
				}
				if len(m.ID) > 0 && string(m.ID) != "null" {
					answers[string(m.ID)]++
				}
			}
			for id, n := range answers {
				if n > sends[id] {
					t.Fatalf("id %s answered %d times for %d sends", id, n, sends[id])
				}
			}
			for id, n := range sends {
				if answers[id] < n-cancels[id] {
					t.Fatalf("id %s answered %d times for %d sends and %d cancels", id, answers[id], n, cancels[id])
				}
			}
		})
	})
}

// FuzzStateCodec: no forged requestState is accepted, and a genuine one
// survives any binding it was made for. The codec's clock is fixed, so
// that the genuine state is the same in every fuzzing process (minted a
// second apart, two would differ, and one would pass for a forgery).
//
// Through requestBinding: a state minted for alice's call with amount x
// opens for principal's call with amount y exactly when principal is
// alice and y is the same number as x, by value (math/big decides; -0 is
// apart from 0), however either is spelled.
func FuzzStateCodec(f *testing.F) {
	at := time.Unix(1_800_000_000, 0)
	c := stateCodec{key: []byte(strings.Repeat("s", 32)), ttl: time.Minute, now: func() time.Time { return at }}
	genuine := c.seal(&sealedState{Binding: "b"})
	f.Add(genuine, "b", "alice", "9007199254740992", "9007199254740993")
	f.Add(genuine+"x", "b", "alice", "1", "1.0")
	f.Add("eyJleHAiOjF9.AAAA", "b", "alice", "10E-1", "0.1e1")
	f.Add("", "", "bob", "1", "1")
	f.Add(genuine, "b", "alice", "-0", "0")
	f.Add(genuine, "b", "alice", "1e400", "10e399")
	f.Add(genuine, "b", "alice\x00", "123.4500", "1.2345e2")
	f.Add(genuine, "b", "", "-0.000", "-0e7")
	f.Fuzz(func(t *testing.T, state, binding, principal, x, y string) {
		st, err := c.open(state, binding)
		if err == nil && (state != genuine || binding != "b") {
			t.Fatalf("accepted a state the codec did not mint: %q %+v", state, st)
		}
		if err != nil && !errors.Is(err, errBadState) {
			t.Fatalf("unexpected error %v", err)
		}
		rx, okx := fuzzNumber(x)
		ry, oky := fuzzNumber(y)
		if !okx || !oky {
			return
		}
		bind := func(who, n string) string {
			return requestBinding(who, "tools/call", json.RawMessage(`{"name":"t","arguments":{"amount":`+n+`}}`))
		}
		minted := c.seal(&sealedState{Binding: bind("alice", x)})
		_, err = c.open(minted, bind(principal, y))
		same := rx.Cmp(ry) == 0 && (rx.Sign() != 0 || strings.HasPrefix(x, "-") == strings.HasPrefix(y, "-"))
		if want := principal == "alice" && same; (err == nil) != want {
			t.Fatalf("alice's state for %s opened by %q for %s: %v, want accepted %v", x, principal, y, err, want)
		}
	})
}

// fuzzNumber reads s as a JSON number with an exponent small enough for
// math/big to expand; ok is false for anything else.
func fuzzNumber(s string) (*big.Rat, bool) {
	if s == "" || strings.TrimSpace(s) != s || !json.Valid([]byte(s)) || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(s[i+1:]); err != nil || e > 1000 || e < -1000 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// FuzzIOTransport: any byte stream splits into messages within the size
// limit, without a panic.
func FuzzIOTransport(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"+strings.Repeat("x", 300)+"\nc"), 100)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<20 {
			limit = 64
		}
		tr := NewIOTransport(bytes.NewReader(data), io.Discard)
		tr.setMaxMessageSize(limit)
		for range len(data) + 2 {
			msg, err := tr.ReadMessage()
			if errors.Is(err, ErrMessageTooLarge) {
				continue
			}
			if err != nil {
				return
			}
			if len(msg) == 0 || len(msg) > limit || bytes.ContainsAny(msg, "\n") {
				t.Fatalf("bad message %q (limit %d)", msg, limit)
			}
		}
		t.Fatal("the transport never reached the end of its input")
	})
}
