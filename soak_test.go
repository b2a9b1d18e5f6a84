package mcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakTally counts how every call of a soak ended.
type soakTally struct {
	calls, results, timeouts, cancels, failures atomic.Int64
}

func (s *soakTally) String() string {
	lost := s.calls.Load() - s.results.Load() - s.timeouts.Load() - s.cancels.Load() - s.failures.Load()
	return fmt.Sprintf("calls %d: results %d, timeouts %d, cancels %d, failures %d, lost %d",
		s.calls.Load(), s.results.Load(), s.timeouts.Load(), s.cancels.Load(), s.failures.Load(), lost)
}

// soakConnectors open one client connection per soak client, by transport.
var soakConnectors = map[string]func(t *testing.T, version string, opts ...ClientOption) *Client{
	"memory": func(t *testing.T, version string, opts ...ClientOption) *Client {
		return pair(t, newTestServer(), append([]ClientOption{WithProtocolVersion(version)}, opts...)...)
	},
	"stdio": func(t *testing.T, version string, opts ...ClientOption) *Client {
		return childServer(t, "", append([]ClientOption{WithProtocolVersion(version)}, opts...)...)
	},
	"http": func(t *testing.T, version string, opts ...ClientOption) *Client {
		return connectHTTP(t, newTestServer(), append([]ClientOption{WithProtocolVersion(version)}, opts...)...)
	},
}

// TestSoak runs concurrent clients, each making calls that mix progress,
// asks, cancellations and timeouts, and checks that every call is accounted
// for. MCP_SOAK_CLIENTS and MCP_SOAK_CALLS set its size (default 8 × 40;
// the full size is 200 × 500).
func TestSoak(t *testing.T) {
	clients := envInt("MCP_SOAK_CLIENTS", 8)
	calls := envInt("MCP_SOAK_CALLS", 40)
	for name, connect := range soakConnectors {
		for _, version := range []string{Version20251125, Version20260728} {
			t.Run(name+"/"+version, func(t *testing.T) {
				t.Parallel()
				var tally soakTally
				var wg sync.WaitGroup
				conns := make([]*Client, clients)
				for i := range conns {
					conns[i] = connect(t, version, gatewayClientOptions()...)
				}
				for i, cl := range conns {
					wg.Go(func() { soakClient(t, cl, uint64(i), calls, &tally) })
				}
				wg.Wait()
				t.Log(tally.String())
				if tally.failures.Load() != 0 || tally.calls.Load() != tally.results.Load()+tally.timeouts.Load()+tally.cancels.Load() {
					t.Fatal(tally.String())
				}
				for _, cl := range conns {
					c := cl.conn
					c.mu.Lock()
					pending := len(c.pending) + len(c.progress)
					c.mu.Unlock()
					if pending != 0 || c.armed.Load() != 0 {
						t.Fatalf("a client kept %d pending entries and %d armed deadlines", pending, c.armed.Load())
					}
				}
			})
		}
	}
}

func soakClient(t *testing.T, cl *Client, seed uint64, calls int, tally *soakTally) {
	rng := rand.New(rand.NewPCG(seed, 99))
	for range calls {
		tally.calls.Add(1)
		var err error
		ok := true
		switch rng.IntN(5) {
		case 0: // progress, all of it before the result
			steps := 1 + rng.IntN(20)
			got := 0
			_, err = cl.CallTool(context.Background(), "progress", map[string]int{"steps": steps}, WithProgress(func(Progress) { got++ }))
			ok = err != nil || got == steps
		case 1: // an ask answered by the client's handler
			var res *CallToolResult
			res, err = cl.CallTool(context.Background(), "ask_elicitation", gatewayArgs{Message: "name?"})
			ok = err != nil || (!res.IsError && res.Content[0].Text == `{"action":"accept","content":{"name":"Ada"}}`)
		case 2: // cancelled by the caller
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(2000))*time.Microsecond)
			_, err = cl.CallTool(ctx, "block", nil)
			cancel()
		case 3: // times out
			_, err = cl.CallTool(context.Background(), "block", nil, WithTimeout(time.Duration(1+rng.IntN(2000))*time.Microsecond))
		case 4: // plain
			_, err = cl.CallTool(context.Background(), "echo", map[string]int{"n": rng.IntN(1000)})
		}
		var te *RequestTimeoutError
		switch {
		case !ok:
			tally.failures.Add(1)
			t.Errorf("a call's outcome was wrong")
		case err == nil:
			tally.results.Add(1)
		case errors.As(err, &te):
			tally.timeouts.Add(1)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			tally.cancels.Add(1)
		default:
			tally.failures.Add(1)
			t.Errorf("unexpected error: %v", err)
		}
	}
}
