package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// cancelAtCapRuns is how many times each carrier cancels a request at the
// cap and sends a new one.
const cancelAtCapRuns = 1000

// cancelAtCapSlots is the cap of the peer under test.
const cancelAtCapSlots = 2

// cancelLoop drives one peer at its cap: it fills the cap with requests
// that block until cancelled, then, run after run, cancels the oldest and
// sends a new request, which must be admitted (its handler starts) rather
// than refused as overloaded. send(i) sends request i and returns a
// channel that gets its outcome if it ends; cancel(i) cancels request i
// and returns once the cancellation is on its way, ahead of what is sent
// next. started and returned hear from the handlers under test. Before
// each cancel the handler cancelled in the run before has returned, so
// the allowance of cancelled handlers never fills.
func cancelLoop(send func(i int) <-chan error, cancel func(i int), started, returned <-chan struct{}) error {
	outcome := make(map[int]<-chan error)
	defer func() {
		for i := range outcome {
			cancel(i)
			<-returned
		}
	}()
	admit := func(i int) error {
		outcome[i] = send(i)
		select {
		case <-started:
			return nil
		case err := <-outcome[i]:
			delete(outcome, i)
			return fmt.Errorf("request %d (run %d of %d) was refused at the cap after a cancel: %v", i, i-cancelAtCapSlots+1, cancelAtCapRuns, err)
		}
	}
	for i := range cancelAtCapSlots {
		if err := admit(i); err != nil {
			return err
		}
	}
	for i := cancelAtCapSlots; i < cancelAtCapSlots+cancelAtCapRuns; i++ {
		cancel(i - cancelAtCapSlots)
		delete(outcome, i-cancelAtCapSlots)
		if err := admit(i); err != nil {
			return err
		}
		<-returned
	}
	return nil
}

// holdServer is a server at cap cancelAtCapSlots whose tool "hold" blocks
// until cancelled.
func holdServer() (srv *Server, started, returned chan struct{}) {
	started, returned = make(chan struct{}, 1), make(chan struct{}, 1)
	srv = newTestServer(WithMaxInFlight(cancelAtCapSlots))
	srv.AddTool(Tool{Name: "hold"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		defer func() { returned <- struct{}{} }()
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return srv, started, returned
}

// TestCancelAtTheCapAdmitsTheNextRequest: at the cap, a request the peer
// sends after cancelling one is admitted, every time, on each carrier and
// for both peers: the cancel frees the slot before the next message is
// dispatched, not when the cancelled handler returns.
func TestCancelAtTheCapAdmitsTheNextRequest(t *testing.T) {
	t.Parallel()
	stdio := map[string]func(t *testing.T) (ct, st Transport){
		"memory": func(t *testing.T) (Transport, Transport) { return NewInMemoryTransports() },
		"pipe":   func(t *testing.T) (Transport, Transport) { return pipeTransports(t) },
	}
	for name, carrier := range stdio {
		t.Run("server/"+name, func(t *testing.T) {
			t.Parallel()
			srv, started, returned := holdServer()
			ct, st := carrier(t)
			cl := serveAndConnect(t, srv, ct, st, []ClientOption{WithProtocolVersion(Version20251125)})
			serverCancelLoop(t, cl, started, returned)
		})
		t.Run("client/"+name, func(t *testing.T) {
			t.Parallel()
			clientCancelLoop(t, func(srv *Server, opts ...ClientOption) *Client {
				ct, st := carrier(t)
				return serveAndConnect(t, srv, ct, st, opts)
			})
		})
	}
	t.Run("server/http", func(t *testing.T) {
		t.Parallel()
		// Raw POSTs, each sent once the one before was answered: the order
		// the server sees is the order they were sent. (The HTTP client
		// POSTs concurrently, and on 2026-07-28 a cancel is a closed
		// stream, which has no order relative to another POST.)
		srv, started, returned := holdServer()
		ts := serveHTTP(t, srv)
		sid := legacySession(t, ts.URL, Version20251125)
		header := postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)
		var posts sync.WaitGroup
		t.Cleanup(posts.Wait)
		send := func(i int) <-chan error {
			out := make(chan error, 1)
			posts.Add(1)
			go func() {
				defer posts.Done()
				body, err := postBody(ts.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold"}}`, i), header)
				if err == nil {
					err = errors.New(body)
				}
				out <- err
			}()
			return out
		}
		cancel := func(i int) {
			r := doHTTP(t, "POST", ts.URL, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i), header)
			if r.status != http.StatusAccepted {
				t.Fatalf("cancel %d: %d %s", i, r.status, r.body)
			}
		}
		if err := cancelLoop(send, cancel, started, returned); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("client/http", func(t *testing.T) {
		t.Parallel()
		clientCancelLoop(t, func(srv *Server, opts ...ClientOption) *Client { return connectHTTP(t, srv, opts...) })
	})
}

// postBody sends one POST and returns its body.
func postBody(url, body string, header map[string]string) (string, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// serverCancelLoop runs cancelLoop against a server through cl: a
// cancelled CallTool has queued its notifications/cancelled when it
// returns, ahead of the next call's request.
func serverCancelLoop(t *testing.T, cl *Client, started, returned <-chan struct{}) {
	t.Helper()
	cancels := make(map[int]context.CancelFunc)
	done := make(map[int]chan error)
	send := func(i int) <-chan error {
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan error, 1)
		cancels[i], done[i] = cancel, out
		go func() {
			_, err := cl.CallTool(ctx, "hold", nil)
			out <- err
		}()
		return out
	}
	cancel := func(i int) {
		cancels[i]()
		<-done[i]
		delete(cancels, i)
		delete(done, i)
	}
	if err := cancelLoop(send, cancel, started, returned); err != nil {
		t.Fatal(err)
	}
}

// clientCancelLoop runs cancelLoop against a client at its cap, connected
// by connect to a server whose tool asks it for roots: the asks are the
// requests, and cancelling an ask's context makes the server send
// notifications/cancelled, queued before the ask returns.
func clientCancelLoop(t *testing.T, connect func(*Server, ...ClientOption) *Client) {
	t.Helper()
	started, returned := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := newTestServer()
	srv.AddTool(Tool{Name: "drive"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		cancels := make(map[int]context.CancelFunc)
		done := make(map[int]chan error)
		send := func(i int) <-chan error {
			actx, cancel := context.WithCancel(ctx)
			out := make(chan error, 1)
			cancels[i], done[i] = cancel, out
			go func() {
				_, err := g.ListRoots(actx)
				out <- err
			}()
			return out
		}
		cancel := func(i int) {
			cancels[i]()
			<-done[i]
			delete(cancels, i)
			delete(done, i)
		}
		if err := cancelLoop(send, cancel, started, returned); err != nil {
			return nil, err
		}
		return &CallToolResult{}, nil
	})
	cl := connect(srv, WithProtocolVersion(Version20251125), WithMaxInFlight(cancelAtCapSlots),
		WithRootsHandler(func(ctx context.Context) ([]Root, error) {
			defer func() { returned <- struct{}{} }()
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	res, err := cl.CallTool(context.Background(), "drive", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatal(res.Content[0].Text)
	}
}

// TestCancelledHandlersAreBounded: handlers cancelled at the cap that do not
// return hold no slot, up to an allowance as large as the cap; past it a
// cancel still cancels, but its slot comes free only when its handler
// returns, so request and cancel pairs cannot run more than twice the cap
// of handlers.
func TestCancelledHandlersAreBounded(t *testing.T) {
	t.Parallel()
	const limit = 3
	release := make(chan struct{})
	var running, most atomic.Int32
	started := make(chan struct{}, 4*limit)
	srv := newTestServer(WithMaxInFlight(limit))
	srv.AddTool(Tool{Name: "stubborn"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		defer running.Add(-1)
		started <- struct{}{}
		<-release // ignores its cancellation
		return &CallToolResult{}, nil
	})
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	call := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stubborn"}}`, id)
	}
	id := 0
	for range limit {
		id++
		p.send(call(id))
		<-started
	}
	// Each cancel frees a slot while the allowance lasts.
	for range limit {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id-limit+1))
		id++
		p.send(call(id))
		<-started
	}
	// The allowance is spent: this cancel cancels, but frees nothing.
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id-limit+1))
	p.send(call(id + 1))
	p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"overloaded"}}`, id+1))
	if got := most.Load(); got != 2*limit {
		t.Fatalf("%d handlers ran at once; want the cap and the allowance, %d", got, 2*limit)
	}
	close(release)
	// The one request not cancelled is answered; once the handlers have
	// returned the slots are free again.
	var answered int
	for answered == 0 {
		got := p.recv()
		if field(t, got, "result") != nil {
			answered++
		}
	}
	for next := id + 2; ; next++ {
		p.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
		got := p.recv()
		if field(t, got, "id") == "p" && field(t, got, "result") != nil {
			break
		}
		if next > 100_000 {
			t.Fatalf("the slots never came free: %s", got)
		}
	}
}
