package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// listenRig is a 2026-07-28 feature server on an in-memory connection
// whose listen streams the test can end, or refuse, from the server's
// side, and a client that records its updates and gaps.
type listenRig struct {
	srv     *Server
	cl      *Client
	updates chan string
	gaps    chan ListenGap
	served  chan error

	mu      sync.Mutex
	listens int                  // subscriptions/listen requests served or refused
	ends    []context.CancelFunc // ends each listen stream, in order
	refuse  bool                 // refuse every listen from now on
}

func newListenRig(t *testing.T, opts ...ClientOption) *listenRig {
	t.Helper()
	r := &listenRig{updates: make(chan string, 64), gaps: make(chan ListenGap, 8), served: make(chan error, 1)}
	r.srv = featureServer(WithInboundMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (json.RawMessage, error) {
			if req.Method != "subscriptions/listen" {
				return next(ctx, req)
			}
			ctx, end := context.WithCancel(ctx)
			defer end()
			r.mu.Lock()
			r.listens++
			refuse := r.refuse
			r.ends = append(r.ends, end)
			r.mu.Unlock()
			if refuse {
				return nil, errors.New("no listening now")
			}
			return next(ctx, req)
		}
	}))
	ct, st := NewInMemoryTransports()
	go func() { r.served <- r.srv.Serve(context.Background(), st) }()
	opts = append([]ClientOption{
		WithProtocolVersion(LatestVersion),
		WithResourceUpdatedHandler(func(_ context.Context, uri string) { r.updates <- uri }),
		WithListenGapHandler(func(_ context.Context, gap ListenGap) { r.gaps <- gap }),
	}, opts...)
	r.cl = NewClient(Implementation{Name: "c", Version: "1"}, opts...)
	if err := r.cl.Connect(context.Background(), ct); err != nil {
		t.Fatal(err)
	}
	return r
}

// close closes the client and waits for the server to end.
func (r *listenRig) close(t *testing.T) {
	t.Helper()
	r.cl.Close()
	if err := <-r.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// count is how many listen requests the server has seen.
func (r *listenRig) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listens
}

// endLatest ends the newest listen stream from the server's side, as a
// server that shuts down does.
func (r *listenRig) endLatest() {
	r.mu.Lock()
	end := r.ends[len(r.ends)-1]
	r.mu.Unlock()
	end()
}

// gap waits for the client to be told of a gap, a minute at most.
func (r *listenRig) gap(t *testing.T) ListenGap {
	t.Helper()
	select {
	case gap := <-r.gaps:
		return gap
	case <-time.After(time.Minute):
		t.Fatal("the application was not told of the gap")
		return ListenGap{}
	}
}

// update waits for the client to be told of an update, a minute at most.
func (r *listenRig) update(t *testing.T) string {
	t.Helper()
	select {
	case uri := <-r.updates:
		return uri
	case <-time.After(time.Minute):
		t.Fatal("no update arrived")
		return ""
	}
}

// noGap fails the test if the client was told of a gap.
func (r *listenRig) noGap(t *testing.T) {
	t.Helper()
	select {
	case gap := <-r.gaps:
		t.Fatalf("told of a gap: %+v", gap)
	default:
	}
}

// TestListenResumedWhenTheServerEndsIt: a 2026-07-28 client whose listen
// stream the server ends reopens it with the same subscription, tells the
// application of the gap, and gets the updates made since; a stream the
// client ends itself (Unsubscribe, Close) is not reopened.
func TestListenResumedWhenTheServerEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newListenRig(t)
		defer r.close(t)
		ctx := context.Background()
		if err := r.cl.Subscribe(ctx, "test://static-text"); err != nil {
			t.Fatal(err)
		}
		if n := r.count(); n != 1 {
			t.Fatalf("%d listen requests after Subscribe, want 1", n)
		}
		start := time.Now()
		r.endLatest()
		gap := r.gap(t)
		if gap.Err != nil || gap.Cause == nil {
			t.Fatalf("gap %+v: want a cause and no error", gap)
		}
		if got := gap.Subscriptions.ResourceSubscriptions; !slices.Equal(got, []string{"test://static-text"}) {
			t.Fatalf("the resumed stream carries %v", got)
		}
		if waited := time.Since(start); waited != 250*time.Millisecond {
			t.Errorf("reopened after %v, want 250ms", waited)
		}
		if n := r.count(); n != 2 {
			t.Fatalf("%d listen requests after the break, want 2", n)
		}
		for range 3 {
			r.srv.ResourceUpdated("test://static-text")
			if uri := r.update(t); uri != "test://static-text" {
				t.Fatalf("update of %s", uri)
			}
		}

		// The client ends its subscription: the stream closes, for good.
		if err := r.cl.Unsubscribe(ctx, "test://static-text"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Fatalf("%d listen requests after Unsubscribe, want 2", n)
		}
		r.noGap(t)

		// Nor after Close.
		if err := r.cl.Subscribe(ctx, "test://items/1"); err != nil {
			t.Fatal(err)
		}
		r.cl.Close()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := r.count(); n != 3 {
			t.Fatalf("%d listen requests after Close, want 3", n)
		}
		r.noGap(t)
	})
}

// TestListenResumeGivesUp: a client that cannot reopen its listen stream
// tries the number of times WithListenResumeAttempts says, waiting twice as
// long each time, then tells the application with an error; a Subscribe
// later opens a stream again.
func TestListenResumeGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []ClientOption
		attempts int
		waited   time.Duration
	}{
		{"default", nil, DefaultListenResumeAttempts, 7750 * time.Millisecond},
		{"two", []ClientOption{WithListenResumeAttempts(2)}, 2, 750 * time.Millisecond},
		{"none", []ClientOption{WithListenResumeAttempts(0)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newListenRig(t, tc.opts...)
				defer r.close(t)
				ctx := context.Background()
				if err := r.cl.Subscribe(ctx, "test://static-text"); err != nil {
					t.Fatal(err)
				}
				r.mu.Lock()
				r.refuse = true
				r.mu.Unlock()
				start := time.Now()
				r.endLatest()
				gap := r.gap(t)
				if gap.Err == nil || gap.Cause == nil {
					t.Fatalf("gap %+v: want a cause and an error", gap)
				}
				if waited := time.Since(start); waited != tc.waited {
					t.Errorf("gave up after %v, want %v", waited, tc.waited)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := r.count(); n != 1+tc.attempts {
					t.Errorf("%d listen requests, want %d", n, 1+tc.attempts)
				}
				r.noGap(t)
				r.mu.Lock()
				r.refuse = false
				r.mu.Unlock()
				if err := r.cl.Subscribe(ctx, "test://static-text"); err != nil {
					t.Fatal(err)
				}
				r.srv.ResourceUpdated("test://static-text")
				if uri := r.update(t); uri != "test://static-text" {
					t.Fatalf("update of %s", uri)
				}
			})
		})
	}
}

// TestListenResumedWhenItsInstanceDies: the instance holding a 2026-07-28
// client's listen stream, one of two behind a round-robin proxy, dies; the
// client reopens the stream on the other with the same resource
// subscription and list changes, tells the application of the gap, and
// gets every update and list change made after that.
func TestListenResumedWhenItsInstanceDies(t *testing.T) {
	t.Parallel()
	c := newFanCluster(t, 2, featureServer)
	updates := make(chan string, 64)
	gaps := make(chan ListenGap, 4)
	cl := dial(t, c.proxy.URL, WithProtocolVersion(LatestVersion),
		WithResourceUpdatedHandler(func(_ context.Context, uri string) { updates <- uri }),
		WithToolListChangedHandler(func(context.Context) { updates <- "tools" }),
		WithListenGapHandler(func(_ context.Context, gap ListenGap) { gaps <- gap }))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Subscribe(ctx, "test://static-text"); err != nil {
		t.Fatal(err)
	}
	listens := c.instancesOf("subscriptions/listen")
	holder := listens[len(listens)-1]
	live := 1 - holder
	c.backends[holder].CloseClientConnections()
	c.backends[holder].Close()
	var gap ListenGap
	select {
	case gap = <-gaps:
	case <-ctx.Done():
		t.Fatal("the application was not told of the gap")
	}
	if gap.Err != nil || gap.Cause == nil {
		t.Fatalf("gap %+v: want a cause and no error", gap)
	}
	if !gap.Subscriptions.ToolsListChanged || !slices.Equal(gap.Subscriptions.ResourceSubscriptions, []string{"test://static-text"}) {
		t.Fatalf("the resumed stream carries %+v", gap.Subscriptions)
	}
	if listens = c.instancesOf("subscriptions/listen"); listens[len(listens)-1] != live {
		t.Fatalf("listen streams went to instances %v; %d died", listens, holder)
	}
	const n = 20
	for range n {
		c.servers[live].ResourceUpdated("test://static-text")
	}
	c.servers[live].AddTool(Tool{Name: "added"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	var got []string
	for len(got) < n+1 {
		select {
		case u := <-updates:
			got = append(got, u)
		case <-ctx.Done():
			t.Fatalf("%d of %d updates and list changes arrived: %v", len(got), n+1, got)
		}
	}
	if i := slices.Index(got, "tools"); i < 0 || slices.ContainsFunc(got, func(u string) bool { return u != "tools" && u != "test://static-text" }) {
		t.Fatalf("updates %v", got)
	}
}
