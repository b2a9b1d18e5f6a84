package mcp

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// changeRecorder turns notifications into values on a channel.
type changeRecorder struct{ got chan string }

func newChangeRecorder() *changeRecorder { return &changeRecorder{got: make(chan string, 64)} }

func (r *changeRecorder) options() []ClientOption {
	return []ClientOption{
		WithToolListChangedHandler(func(context.Context) { r.got <- "tools" }),
		WithPromptListChangedHandler(func(context.Context) { r.got <- "prompts" }),
		WithResourceListChangedHandler(func(context.Context) { r.got <- "resources" }),
		WithResourceUpdatedHandler(func(_ context.Context, uri string) { r.got <- "updated " + uri }),
	}
}

func (r *changeRecorder) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-r.got:
		if got != want {
			t.Fatalf("got notification %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q notification", want)
	}
}

func TestListChangedAndSubscriptions(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		srv := featureServer()
		rec := newChangeRecorder()
		cl := connectOver(t, srv, carrier, version, rec.options()...)
		ctx := context.Background()
		// On 2026-07-28, changes travel on the listen stream, which
		// Subscribe opens; on the older revisions they come anyway.
		if err := cl.Subscribe(ctx, "test://static-text"); err != nil {
			t.Fatal(err)
		}
		noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
		steps := []struct {
			change func()
			want   string
		}{
			{func() { srv.AddTool(Tool{Name: "added"}, noop) }, "tools"},
			{func() { srv.RemoveTools("added") }, "tools"},
			{func() { srv.RemoveTools("never-there") }, ""},
			{func() { srv.AddPrompt(Prompt{Name: "p2"}, nil) }, "prompts"},
			{func() { srv.RemovePrompts("p2") }, "prompts"},
			{func() {
				srv.AddResource(Resource{URI: "test://r2", Name: "r2"}, nil)
			}, "resources"},
			{func() { srv.RemoveResources("test://r2") }, "resources"},
			{func() { srv.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t2/{x}", Name: "t2"}, nil) }, "resources"},
			{func() { srv.RemoveResourceTemplates("test://t2/{x}") }, "resources"},
			{func() { srv.ResourceUpdated("test://static-binary") }, ""}, // not subscribed
			{func() { srv.ResourceUpdated("test://static-text") }, "updated test://static-text"},
		}
		for _, step := range steps {
			step.change()
			if step.want != "" {
				rec.expect(t, step.want)
			}
		}
		// Unsubscribed, updates stop: the next notification is the tool
		// change made after the update.
		if err := cl.Unsubscribe(ctx, "test://static-text"); err != nil {
			t.Fatal(err)
		}
		if err := cl.Subscribe(ctx, "test://items/7"); err != nil {
			t.Fatal(err)
		}
		srv.ResourceUpdated("test://static-text")
		srv.ResourceUpdated("test://items/7")
		rec.expect(t, "updated test://items/7")
		if err := cl.Subscribe(ctx, "test://nowhere"); err == nil {
			t.Error("subscribing to a resource that does not exist succeeded")
		}
		srv.ResourceUpdated("test://items/7")
		rec.expect(t, "updated test://items/7")
	})
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestListenStreamOnTheWire(t *testing.T) {
	t.Parallel()
	srv := featureServer()
	p := rawServer(t, srv)
	p.send(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://static-text"]},` + modernMeta + `}}`)
	p.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://static-text"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}}`)
	// Each change names its announcement, a new one each time.
	announced := regexp.MustCompile(`"` + regexp.QuoteMeta(metaAnnouncement) + `":"(local-[0-9]+)"`)
	seen := map[string]bool{}
	expectAnnounced := func(want string) {
		t.Helper()
		got := p.recv()
		m := announced.FindStringSubmatch(got)
		if m == nil || seen[m[1]] {
			t.Fatalf("no new announcement in %s", got)
		}
		seen[m[1]] = true
		if got = strings.Replace(got, m[1], "ANN", 1); !jsonEqual(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	// Prompts were not asked for: their change is not sent.
	srv.AddPrompt(Prompt{Name: "p2"}, nil)
	srv.AddTool(Tool{Name: "added"}, nil)
	expectAnnounced(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1","` + metaAnnouncement + `":"ANN"}}}`)
	srv.ResourceUpdated("test://static-text")
	expectAnnounced(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1","` + metaAnnouncement + `":"ANN"},"uri":"test://static-text"}}`)
	// Cancelled, the stream ends without a response; the next message is
	// the answer to the next request.
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-1"}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{` + modernMeta + `}}`)
	if msg := p.recv(); field(t, msg, "id") != float64(2) {
		t.Fatalf("got %s", msg)
	}
	srv.AddTool(Tool{Name: "added-later"}, nil)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{` + modernMeta + `}}`)
	if msg := p.recv(); field(t, msg, "id") != float64(3) {
		t.Fatalf("a notification after the stream ended: %s", msg)
	}
}

func TestListenHonoursWhatIsServed(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "tools-only", Version: "1"})
	s.AddTool(Tool{Name: "t"}, nil)
	p := rawServer(t, s)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["x://y"]},` + modernMeta + `}}`)
	p.expect(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`)

	empty := rawServer(t, NewServer(Implementation{Name: "empty", Version: "1"}))
	empty.send(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`)
	if msg := empty.recv(); field(t, msg, "error.code") != float64(CodeMethodNotFound) {
		t.Fatalf("listen on a server with nothing to change: %s", msg)
	}
}

// TestListChangesWithoutSubscribe: on 2026-07-28 a client with list-change
// handlers listens for the changes the server announces from the start.
func TestListChangesWithoutSubscribe(t *testing.T) {
	t.Parallel()
	for _, carrier := range featureCarriers {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Implementation{Name: "tools-only", Version: "1"})
			noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
			srv.AddTool(Tool{Name: "first"}, noop)
			rec := newChangeRecorder()
			cl := connectOver(t, srv, carrier, Version20260728, rec.options()...)
			cl.listenForChanges(context.Background())
			srv.AddTool(Tool{Name: "second"}, noop)
			rec.expect(t, "tools")
			srv.RemoveTools("first")
			rec.expect(t, "tools")
		})
	}
}

// TestHTTPBroadcastsNeedAStandaloneStream: a legacy HTTP session gets
// broadcasts only once it has somewhere to put them. One that never opened
// its GET stream holds nothing and, opening it later, starts with what
// came after; one with an open GET gets them live; one that subscribed
// before opening its GET finds them waiting there.
func TestHTTPBroadcastsNeedAStandaloneStream(t *testing.T) {
	t.Parallel()
	srv := featureServer()
	ts := serveHTTP(t, srv)
	h := ts.Config.Handler.(*httpHandler)
	idle := legacySession(t, ts.URL, Version20251125)
	live := legacySession(t, ts.URL, Version20251125)
	subscribed := legacySession(t, ts.URL, Version20251125)
	sub := `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://static-text"}}`
	if r := doHTTP(t, "POST", ts.URL, sub, postHeaders("Mcp-Session-Id", subscribed, "MCP-Protocol-Version", Version20251125)); r.status != 200 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	liveStream, err := openStream(t, ts.URL, live, "")
	if err != nil {
		t.Fatal(err)
	}

	srv.AddTool(Tool{Name: "late"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
	srv.ResourceUpdated("test://static-text")

	if ok, n := heldBacklog(h.session(idle)); ok {
		t.Fatalf("a session that never opened its GET stream holds a backlog of %d messages", n)
	}
	method := func(e sseEvent) string { return field(t, string(e.data), "method").(string) }
	if m := method(nextEvent(t, liveStream, false)); m != "notifications/tools/list_changed" {
		t.Fatalf("open GET stream: %s", m)
	}
	subStream, err := openStream(t, ts.URL, subscribed, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"notifications/tools/list_changed", "notifications/resources/updated"} {
		if m := method(nextEvent(t, subStream, false)); m != want {
			t.Fatalf("subscribed session's GET stream: %s, want %s", m, want)
		}
	}
	idleStream, err := openStream(t, ts.URL, idle, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddPrompt(Prompt{Name: "later"}, nil)
	if m := method(nextEvent(t, idleStream, false)); m != "notifications/prompts/list_changed" {
		t.Fatalf("the idle session's first GET stream starts with %s, sent before it opened", m)
	}
}

// TestBroadcastsSkipIdleHTTPSessions is issue 24's bound: 2,000 initialized
// legacy sessions that never opened a GET stream and 3,000 list changes
// grow the heap by less than 64 MB, and no session holds a backlog.
func TestBroadcastsSkipIdleHTTPSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const sessions, changes = 2000, 3000
	srv := newTestServer()
	h := NewHTTPHandler(srv).(*httpHandler)
	defer h.shutdown()
	directSession(t, h) // warm up lazily built state
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	srv.AddTool(Tool{Name: "flip"}, noop)
	srv.RemoveTools("flip")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range sessions {
		directSession(t, h)
	}
	for i := range changes {
		if i%2 == 0 {
			srv.AddTool(Tool{Name: "flip"}, noop)
		} else {
			srv.RemoveTools("flip")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	h.mu.Lock()
	all := slices.Collect(maps.Values(h.sessions))
	h.mu.Unlock()
	holding, held := 0, 0
	for _, s := range all {
		if ok, n := heldBacklog(s); ok {
			holding, held = holding+1, held+n
		}
	}
	t.Logf("%d idle sessions, %d list changes: heap grew %.1f MB; %d sessions hold %d messages", len(all), changes, float64(growth)/(1<<20), holding, held)
	if len(all) != sessions+1 {
		t.Fatalf("%d sessions, want %d", len(all), sessions+1)
	}
	if holding > 0 {
		t.Errorf("%d idle sessions hold a backlog (%d messages)", holding, held)
	}
	if growth > 64<<20 {
		t.Errorf("the heap grew by %.1f MB, want under 64 MB", float64(growth)/(1<<20))
	}
}

// heldBacklog reports whether s has a standalone stream, which holds what
// waits for the GET, and how many messages wait there.
func heldBacklog(s *httpSession) (bool, int) {
	s.mu.Lock()
	st := s.standalone
	s.mu.Unlock()
	if st == nil {
		return false, 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return true, len(st.pending)
}

// TestListenStreamBound: a caller holds at most WithMaxListenStreams
// listen streams (one more is refused with CodeOverloaded), and the open
// ones hold no WithMaxInFlight slot: requests run beside three streams
// under a cap of two, and a stream the caller ends makes room for another.
func TestListenStreamBound(t *testing.T) {
	t.Parallel()
	srv := featureServer(WithMaxInFlight(2), WithMaxListenStreams(3))
	p := rawServer(t, srv)
	listen := func(id string) {
		p.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`)
	}
	for _, id := range []string{"l1", "l2", "l3"} {
		listen(id)
		if msg := p.recv(); !strings.Contains(msg, "notifications/subscriptions/acknowledged") || !strings.Contains(msg, `"`+id+`"`) {
			t.Fatalf("listen %s: %s", id, msg)
		}
	}
	listen("l4")
	if msg := p.recv(); field(t, msg, "id") != "l4" || !strings.Contains(msg, `"code":-32000`) {
		t.Fatalf("a fourth listen: %s", msg)
	}
	for i := range 3 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"prompts/list","params":{`+modernMeta+`}}`, 10+i))
		if msg := p.recv(); field(t, msg, "id") != float64(10+i) || strings.Contains(msg, `"error"`) {
			t.Fatalf("a request beside three listens under a cap of two: %s", msg)
		}
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l1"}}`)
	// The server ends l1 in its own time: the next listen may still find
	// three; it is admitted once l1 is gone.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		id := fmt.Sprintf("l5-%d", i)
		listen(id)
		msg := p.recv()
		if strings.Contains(msg, "notifications/subscriptions/acknowledged") {
			break
		}
		if field(t, msg, "id") != id || !strings.Contains(msg, `"code":-32000`) || time.Now().After(deadline) {
			t.Fatalf("a listen after one ended: %s", msg)
		}
		time.Sleep(time.Millisecond)
	}
}
