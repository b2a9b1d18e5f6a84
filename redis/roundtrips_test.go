package mcpredis

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// tripCounter is a go-redis hook that counts round trips: a command sent
// alone is one, and so is a pipeline or transaction. A new connection's
// handshake (HELLO, CLIENT SETINFO) is not a call's: it is left out.
type tripCounter struct{ trips atomic.Int64 }

func (h *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" {
			h.trips.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "client" {
			h.trips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// settledEvents wraps an EventStore to tell the test when the handler has
// stored a number of events and dropped a number of streams, so that it
// reads Redis's counters once the calls' work is done.
type settledEvents struct {
	*EventStore
	mu            sync.Mutex
	stored, dones int
	changed       chan struct{}
}

func (e *settledEvents) note(events, dones int) {
	e.mu.Lock()
	e.stored += events
	e.dones += dones
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *settledEvents) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	err := e.EventStore.Append(ctx, sessionID, streamID, index, data)
	e.note(1, 0)
	return err
}

func (e *settledEvents) AppendBatch(ctx context.Context, sessionID, streamID string, first int64, data [][]byte) error {
	err := e.EventStore.AppendBatch(ctx, sessionID, streamID, first, data)
	e.note(len(data), 0)
	return err
}

func (e *settledEvents) StreamDone(ctx context.Context, sessionID, streamID string) error {
	err := e.EventStore.StreamDone(ctx, sessionID, streamID)
	e.note(0, 1)
	return err
}

// counts are the totals of the instances' stores.
func counts(stores []*settledEvents) (stored, dones int, changed []chan struct{}) {
	for _, s := range stores {
		s.mu.Lock()
		stored += s.stored
		dones += s.dones
		changed = append(changed, s.changed)
		s.mu.Unlock()
	}
	return stored, dones, changed
}

// commandStats reads Redis's per-command call counts.
func commandStats(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.Split(rest, ",")[0])
		stats[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return stats
}

// TestStreamingLegacyRoundTrips: a 2025-11-25 call that streams five
// progress reports on a session shared by two instances (Redis session
// store, event store and broadcaster) costs at most one Redis round trip,
// counted by a go-redis hook on the instances' clients, with the commands
// behind it counted by INFO commandstats. The same holds on one instance.
func TestStreamingLegacyRoundTrips(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "one instance"
		if shared {
			name = "shared session"
		}
		t.Run(name, func(t *testing.T) { testStreamingRoundTrips(t, shared) })
	}
}

// retainedStreams is how many finished SSE streams a copy of a session
// keeps resumable (the handler's own constant).
const retainedStreams = 4

func testStreamingRoundTrips(t *testing.T, shared bool) {
	r := startRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := make([]byte, 32)
	rand.Read(key)
	const reports = 5
	var trips []*tripCounter
	var stores []*settledEvents
	var urls []string
	for range 2 {
		rdb := r.client()
		tc := &tripCounter{}
		rdb.AddHook(tc)
		trips = append(trips, tc)
		opts := []Option{WithKeyPrefix("rt:"), WithPingInterval(time.Hour)}
		bc := NewBroadcaster(rdb, opts...)
		t.Cleanup(func() { bc.Close() })
		srv := mcp.NewServer(mcp.Implementation{Name: "rt", Version: "1"}, mcp.WithStateKey(key), mcp.WithBroadcaster(bc))
		srv.AddTool(mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range reports {
				if err := req.Gateway().Progress(float64(i+1), reports, ""); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
		})
		events := &settledEvents{EventStore: NewEventStore(rdb, opts...), changed: make(chan struct{})}
		stores = append(stores, events)
		// The calls end well within the store delay, whatever the load:
		// longer than the default, so that a slow run counts the same.
		hs := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithContext(ctx),
			mcp.WithSessionStore(NewSessionStore(rdb, opts...)), mcp.WithEventStore(events),
			mcp.WithEventStoreDelay(time.Minute)))
		t.Cleanup(hs.Close)
		urls = append(urls, hs.URL)
	}
	endpoint := urls[0] + "/mcp"
	var proxy *rrProxy
	if shared {
		proxy = newProxy(urls)
		front := httptest.NewServer(proxy)
		t.Cleanup(front.Close)
		endpoint = front.URL + "/mcp"
	}
	// dropped is how many streams the copies of the session have pushed
	// out of the finished ones they retain, by now.
	dropped := func(calls int) int {
		if proxy == nil {
			return max(0, calls-retainedStreams)
		}
		n := 0
		for b := range urls {
			on := len(proxy.where(func(h hit) bool { return h.backend == b && strings.Contains(h.body, `"tools/call"`) }))
			n += max(0, on-retainedStreams)
		}
		return n
	}
	cl := mcp.NewClient(mcp.Implementation{Name: "c", Version: "1"}, mcp.WithProtocolVersion(mcp.Version20251125))
	if err := cl.Connect(ctx, mcp.NewHTTPTransport(endpoint)); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	calls := 0
	call := func() {
		t.Helper()
		var got atomic.Int64
		res, err := cl.CallTool(ctx, "progress", nil, mcp.WithProgress(func(mcp.Progress) { got.Add(1) }))
		if err != nil || res.IsError {
			t.Fatalf("CallTool: %+v, %v", res, err)
		}
		if n := got.Load(); n != reports {
			t.Fatalf("%d progress reports, want %d", n, reports)
		}
		calls++
	}
	// settle waits until every call's events are stored, and the streams
	// pushed out of the sessions' retained ones were dropped (but for the
	// last of each copy, which may wait for the next call): the calls'
	// Redis work is done, give or take one StreamDone a copy.
	settle := func() {
		t.Helper()
		deadline := time.After(waitBound)
		for {
			stored, dones, changed := counts(stores)
			if stored >= (reports+1)*calls && dones >= dropped(calls)-len(urls) {
				return
			}
			select {
			case <-changed[0]:
			case <-changed[1]:
			case <-deadline:
				t.Fatalf("after %d calls, %d events stored and %d streams dropped", calls, stored, dones)
			}
		}
	}
	// Enough calls first that every copy of the session retains as many
	// finished streams as it keeps: each call from now on pushes one out.
	for range 12 {
		call()
	}
	settle()
	admin := r.client()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := trips[0].trips.Load() + trips[1].trips.Load()

	const n = 20
	for range n {
		call()
	}
	settle()
	if proxy != nil {
		for b := range urls {
			if len(proxy.where(func(h hit) bool { return h.backend == b && strings.Contains(h.body, `"tools/call"`) })) < n/2-1 {
				t.Fatalf("instance %d served too few of the calls: the session is not shared", b)
			}
		}
	}
	tripsPerCall := float64(trips[0].trips.Load()+trips[1].trips.Load()-before) / n
	stats := commandStats(t, admin)
	delete(stats, "config|resetstat")
	delete(stats, "info")
	total := 0
	for name, c := range stats {
		if name != "hello" && !strings.HasPrefix(name, "client|") {
			total += c
		}
	}
	t.Logf("per call: %.2f round trips, %.2f Redis commands %v", tripsPerCall, float64(total)/n, stats)
	if tripsPerCall > 1 {
		t.Errorf("a call with %d progress reports costs %.2f Redis round trips, want at most 1", reports, tripsPerCall)
	}
}
