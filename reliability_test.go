package mcp

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// envInt reads a size knob for the long tests: .ci/run raises them.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestLifetimesUnderRaces: calls that are cancelled, time out, or race their
// response against a tiny timeout leave no pending entry, no armed timer
// and no goroutine. MCP_LIFETIME_CALLS sets the count (default 10,000; CI
// runs 100,000).
// The same races run over OS pipes too, with 64 callers and with one, a
// tenth of the count each.
func TestLifetimesUnderRaces(t *testing.T) {
	total := envInt("MCP_LIFETIME_CALLS", 10_000)
	carriers := []struct {
		name           string
		calls, workers int
		pipe           bool
	}{
		{"memory", total, 64, false},
		{"stdio-pipe", total / 10, 64, true},
		{"stdio-pipe/sequential", total / 10, 1, true},
	}
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			ct, st := NewInMemoryTransports()
			if c.pipe {
				ct, st = pipeTransports(t)
			}
			lifetimesUnderRaces(t, ct, st, c.calls, c.workers)
		})
	}
}

func lifetimesUnderRaces(t *testing.T, ct, st Transport, total, workers int) {
	before := runtime.NumGoroutine()
	served := make(chan error, 1)
	go func() { served <- newTestServer().Serve(context.Background(), st) }()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatal(err)
	}
	var results, timeouts, cancels atomic.Int64
	var latency atomic.Int64 // a moving average of echo calls, in ns
	latency.Store(int64(time.Millisecond))
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for next.Add(1) <= int64(total) {
				var err error
				switch rng.IntN(3) {
				case 0: // races its response: a timeout around the current latency
					opts := []CallOption{WithProgress(func(Progress) {})}
					if l := latency.Load(); rng.IntN(4) > 0 {
						opts = append(opts, WithTimeout(time.Duration(rng.Int64N(2*l+1))+time.Nanosecond))
					}
					start := time.Now()
					_, err = cl.CallTool(context.Background(), "echo", nil, opts...)
					if err == nil {
						l := latency.Load()
						latency.Store(l + (int64(time.Since(start))-l)/8)
					}
				case 1: // times out
					_, err = cl.CallTool(context.Background(), "block", nil, WithTimeout(time.Duration(1+rng.IntN(500))*time.Microsecond))
				case 2: // cancelled by the caller
					ctx, cancel := context.WithCancel(context.Background())
					time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
					_, err = cl.CallTool(ctx, "block", nil)
					cancel()
				}
				var te *RequestTimeoutError
				switch {
				case err == nil:
					results.Add(1)
				case errors.As(err, &te):
					timeouts.Add(1)
				case errors.Is(err, context.Canceled):
					cancels.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := results.Load() + timeouts.Load() + cancels.Load(); got != int64(total) {
		t.Fatalf("%d calls accounted for, want %d", got, total)
	}
	c := cl.conn
	c.mu.Lock()
	pending, progress := len(c.pending), len(c.progress)
	c.mu.Unlock()
	if pending != 0 || progress != 0 || c.armed.Load() != 0 {
		t.Fatalf("pending %d progress %d armed %d", pending, progress, c.armed.Load())
	}
	t.Logf("%d calls: %d results, %d timeouts, %d cancelled", total, results.Load(), timeouts.Load(), cancels.Load())
	cl.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	settleGoroutines(t, before)
}

// TestCloseIsIdempotentAndSafeFromAnyGoroutine.
func TestCloseIsIdempotentAndSafeFromAnyGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	cl := pair(t, newTestServer())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { cl.CallTool(context.Background(), "block", nil) })
		wg.Go(func() { cl.Close() })
	}
	wg.Wait()
	cl.Close()
	settleGoroutines(t, before+1) // the Serve goroutine of pair ends at cleanup
}

// TestHandlerCallingBackAtTheCapDoesNotDeadlock: a handler that holds the
// only dispatch slot and asks the client something still gets its answer,
// since responses never wait for a slot.
func TestHandlerCallingBackAtTheCapDoesNotDeadlock(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithMaxInFlight(1))
	addGatewayTools(srv)
	cl := pair(t, srv, append(gatewayClientOptions(), WithProtocolVersion(Version20251125), WithMaxInFlight(1))...)
	for range 20 {
		if got := callText(t, cl, "ask_roots", nil); got != `{"roots":[{"uri":"file:///work","name":"work"}]}` {
			t.Fatal(got)
		}
	}
}

// TestClientVanishingCancelsServerHandlers: when a client's process is gone
// (its pipe closed), every handler it started is cancelled.
func TestClientVanishingCancelsServerHandlers(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 4)
	ended := make(chan error, 4)
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	ct, st := NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	p := newRawPeer(t, ct.(*IOTransport))
	p.initialize(Version20251125)
	for i := range 4 {
		p.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"wait"}}`)
	}
	for range 4 {
		<-started
	}
	p.w.Close() // the client vanishes
	for range 4 {
		if err := <-ended; !errors.Is(err, ErrClosed) {
			t.Fatalf("handler ended with %v", err)
		}
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
