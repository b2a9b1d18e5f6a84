package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// relayWatch collects the kinds published on session sid's channel, with
// their publisher.
func relayWatch(t *testing.T, c *sessionCluster, sid string) <-chan relayMessage {
	t.Helper()
	got := make(chan relayMessage, 64)
	stop, err := c.bc.MemoryBroadcaster.Subscribe(context.Background(), sessionChannel(sid), func(msg []byte) {
		var m relayMessage
		json.Unmarshal(msg, &m)
		select {
		case got <- m:
		default:
			t.Errorf("relay watch full")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return got
}

// awaitRelay waits for a message of kind from instance from.
func awaitRelay(t *testing.T, got <-chan relayMessage, kind, from string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-got:
			if m.Kind == kind && m.From == from {
				return
			}
		case <-timeout:
			t.Fatalf("no %q from %s on the session's channel", kind, from)
		}
	}
}

// awaitConfirmed waits until instance from, which holds the GET stream,
// has said that n messages are on it, counting repeats.
func awaitConfirmed(t *testing.T, got <-chan relayMessage, from string, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for n > 0 {
		select {
		case m := <-got:
			var note deliveredNote
			if m.Kind == relayDelivered && m.From == from && json.Unmarshal(m.Message, &note) == nil {
				n -= len(note.IDs)
			}
		case <-timeout:
			t.Fatalf("%s did not confirm %d more messages", from, n)
		}
	}
}

// getStream opens the GET stream of session sid on url, resuming after
// last unless it is empty, until ctx ends.
func getStream(t *testing.T, ctx context.Context, url, sid, last string) *sseParser {
	t.Helper()
	p, err := openStreamCtx(t, ctx, url, sid, last)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedSessionAnswerElsewhere: a handler on one instance asks the
// client; the client's answer lands on another instance, which hands it on
// through the broadcaster to the waiting handler, alone or in a 2025-03-26
// batch. The ask's id is a string naming its instance, so that no other
// instance's call could take it.
func TestSharedSessionAnswerElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version, caps, tool, answer, want string
		batch                             bool
	}{
		{Version20251125, `{"elicitation":{}}`, "ask_elicitation", `{"action":"accept","content":{"name":"Ada"}}`, "Ada", false},
		{Version20250326, `{"roots":{}}`, "ask_roots", `{"roots":[{"uri":"file:///ada","name":"ada"}]}`, "file:///ada", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			c := newSessionCluster(t, 2)
			init := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"`+tc.version+`","capabilities":`+tc.caps+`,"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
			sid := init.header.Get("Mcp-Session-Id")
			if init.status != 200 || sid == "" {
				t.Fatalf("initialize: %d %s", init.status, init.body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", c.url(0), strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tc.tool+`","arguments":{"message":"name?"}}}`))
			for k, v := range postHeaders("Mcp-Session-Id", sid) {
				req.Header.Set(k, v)
			}
			resp, err := testHTTPClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			p := newSSEParser(resp.Body, 1<<20)
			ask := nextEvent(t, p, false)
			id, _ := field(t, string(ask.data), "id").(string)
			if !strings.HasPrefix(id, c.handlers[0].cluster.instance+"-") {
				t.Fatalf("the ask: %s", ask.data)
			}
			answer := `{"jsonrpc":"2.0","id":"` + id + `","result":` + tc.answer + `}`
			if tc.batch {
				answer = `[` + answer + `,{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`
			}
			if r := doHTTP(t, "POST", c.url(1), answer, postHeaders("Mcp-Session-Id", sid)); r.status != http.StatusAccepted {
				t.Fatalf("the answer on the other instance: %d %s", r.status, r.body)
			}
			res := nextEvent(t, p, false)
			if field(t, string(res.data), "id") != float64(7) || !strings.Contains(string(res.data), tc.want) {
				t.Fatalf("the call's result: %s", res.data)
			}
			if n := c.bc.count(relayResponse); n != 1 {
				t.Fatalf("%d responses relayed, want 1", n)
			}
		})
	}
}

// TestSharedSessionElicitationsThroughProxy: a 2025-11-25 client behind
// the round-robin proxy answers many elicitations; every answer reaches its
// handler whichever instance it lands on, and most land elsewhere.
func TestSharedSessionElicitationsThroughProxy(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	var asked atomic.Int32
	cl := connectCluster(t, c, Version20251125, WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		n := asked.Add(1)
		return &ElicitResult{Action: "accept", Content: map[string]any{"name": fmt.Sprintf("n%d", n)}}, nil
	}))
	defer cl.Close()
	const calls = 12
	for i := range calls {
		res, err := cl.CallTool(context.Background(), "ask_elicitation", map[string]string{"message": "name?"})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if want := fmt.Sprintf(`"name":"n%d"`, i+1); !strings.Contains(textOf(res), want) {
			t.Fatalf("call %d: %q, want %s", i, textOf(res), want)
		}
	}
	if n := asked.Load(); n != calls {
		t.Fatalf("%d asks, want %d", n, calls)
	}
	if n := c.bc.count(relayResponse); n < calls/2 {
		t.Fatalf("%d of %d answers relayed to another instance: the proxy did not spread them", n, calls)
	}
}

// TestSharedSessionCancelElsewhere: the client's notifications/cancelled
// for a request running on one instance lands on another; the handler's
// context is cancelled with the client's reason and its POST ends.
func TestSharedSessionCancelElsewhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	c.servers[0].AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	sid := legacySession(t, c.url(0), Version20251125)
	done := make(chan httpReply, 1)
	go func() {
		done <- doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait"}}`, postHeaders("Mcp-Session-Id", sid))
	}()
	<-started
	if r := doHTTP(t, "POST", c.url(1), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"changed my mind"}}`, postHeaders("Mcp-Session-Id", sid)); r.status != http.StatusAccepted {
		t.Fatalf("cancel on the other instance: %d %s", r.status, r.body)
	}
	var ce *CancelledError
	if err := <-cause; !errors.As(err, &ce) || ce.Reason != "changed my mind" {
		t.Fatalf("the handler's context ended with %v", err)
	}
	if r := <-done; r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("the cancelled call's POST: %d %s", r.status, r.body)
	}
}

// TestSharedSessionGETElsewhere: the GET stream is resumed on another
// instance with Last-Event-ID, then on a third: each replays from the
// shared event store what the client missed, then carries live what the
// session's copy on any instance sends it, and, of a server-wide message
// that every instance sends, one copy. No event is lost or repeated.
func TestSharedSessionGETElsewhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	a, b, cx := c.handlers[0].cluster.instance, c.handlers[1].cluster.instance, c.handlers[2].cluster.instance
	sid := legacySession(t, c.url(0), Version20251125)
	watch := relayWatch(t, c, sid)
	type ev struct{ method, id string }
	next := func(p *sseParser) ev {
		e := nextEvent(t, p, false)
		return ev{fmt.Sprint(field(t, string(e.data), "method")), e.id}
	}
	// everywhere adds a prompt on one instance: the change reaches every
	// instance through the broadcaster, and the session once.
	everywhere := func(name string) { c.servers[2].AddPrompt(Prompt{Name: name}, nil) }
	// mine sends the session a message of its own from instance i.
	mine := func(i int) {
		if err := c.handlers[i].session(sid).conn.(*conn).notify("notifications/message", map[string]string{"level": "info", "data": "x"}, ID{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	const listChanged, message = "notifications/prompts/list_changed", "notifications/message"

	ctxA, cancelA := context.WithTimeout(context.Background(), time.Minute) // a bound on a failing read
	pa := getStream(t, ctxA, c.url(0), sid, "")
	nextEvent(t, pa, true) // priming
	everywhere("p1")
	e1 := next(pa)
	if e1 != (ev{listChanged, a + "-0_1"}) {
		t.Fatalf("first event %+v", e1)
	}
	cancelA()
	awaitRelay(t, watch, relayRelease, a)
	mine(0) // missed: stored

	ctxB, cancelB := context.WithTimeout(context.Background(), time.Minute)
	pb := getStream(t, ctxB, c.url(1), sid, e1.id)
	mine(0) // made on A, sent on B's stream
	everywhere("p2")
	mine(1)
	want := []ev{
		{message, a + "-0_2"}, // replayed
		{message, b + "-0_1"},
		{listChanged, b + "-0_2"},
		{message, b + "-0_3"},
	}
	for i, w := range want {
		if got := next(pb); got != w {
			t.Fatalf("event %d on the second instance: %+v, want %+v", i, got, w)
		}
	}
	cancelB()
	awaitRelay(t, watch, relayRelease, b)
	everywhere("p3") // missed: stored on A's stream and B's

	ctxC, cancelC := context.WithTimeout(context.Background(), time.Minute)
	defer cancelC()
	pc := getStream(t, ctxC, c.url(2), sid, b+"-0_2")
	everywhere("p4")
	mine(0)
	want = []ev{
		{message, b + "-0_3"},     // replayed
		{listChanged, b + "-0_4"}, // replayed
		{listChanged, cx + "-0_1"},
		{message, cx + "-0_2"},
	}
	for i, w := range want {
		if got := next(pc); got != w {
			t.Fatalf("event %d on the third instance: %+v, want %+v", i, got, w)
		}
	}
}

// TestSharedSessionGETFreshElsewhere: what waited for the GET stream on
// one instance while none was open is handed to the instance where the
// client opens it fresh, once: a message of the session's own, and a
// server-wide message, which that instance had no copy of (it made its
// copy of the session with the GET).
func TestSharedSessionGETFreshElsewhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	a := c.handlers[0].cluster.instance
	sid := legacySession(t, c.url(0), Version20251125)
	watch := relayWatch(t, c, sid)
	ctxA, cancelA := context.WithTimeout(context.Background(), time.Minute)
	pa := getStream(t, ctxA, c.url(0), sid, "")
	nextEvent(t, pa, true)
	cancelA()
	awaitRelay(t, watch, relayRelease, a)
	c.handlers[0].session(sid).conn.(*conn).notify("notifications/message", map[string]string{"level": "info", "data": "waiting"}, ID{}, nil)
	c.servers[0].AddPrompt(Prompt{Name: "everywhere"}, nil)
	if c.handlers[1].session(sid) != nil {
		t.Fatal("the second instance has a copy of the session already")
	}

	ctxB, cancelB := context.WithTimeout(context.Background(), time.Minute)
	defer cancelB()
	pb := getStream(t, ctxB, c.url(1), sid, "")
	// What is handed over comes after what is live meanwhile.
	awaitConfirmed(t, watch, c.handlers[1].cluster.instance, 2)
	sayFrom(t, c, 1, sid, "end")
	for _, want := range []string{"notifications/message", "notifications/prompts/list_changed", "notifications/message"} {
		if e := nextEvent(t, pb, false); field(t, string(e.data), "method") != want {
			t.Fatalf("%s, want %s", e.data, want)
		}
	}
	if st := c.handlers[0].session(sid).unsolicitedStream(); len(st.takeBacklog()) != 0 {
		t.Fatal("the first instance still holds the messages it handed on")
	}
}

// TestSharedSessionSubscriptionsFollow: a resource subscription made on
// one instance is the session's on another, whose updates reach the GET
// stream the client opened there.
func TestSharedSessionSubscriptionsFollow(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	for _, srv := range c.servers {
		srv.AddResource(Resource{URI: "res://a", Name: "a"}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
	}
	sid := legacySession(t, c.url(0), Version20251125)
	if r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"res://a"}}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := getStream(t, ctx, c.url(1), sid, "")
	c.servers[1].ResourceUpdated("res://a")
	e := nextEvent(t, p, false)
	if field(t, string(e.data), "method") != "notifications/resources/updated" || field(t, string(e.data), "params.uri") != "res://a" {
		t.Fatalf("on the other instance's stream: %s", e.data)
	}
}

// TestSharedSessionPOSTStreamElsewhere: a POST's SSE stream written by one
// instance is resumed on another from the shared event store, with the
// first instance's event ids, and ends there.
func TestSharedSessionPOSTStreamElsewhere(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 2)
	sid := legacySession(t, c.url(0), Version20251125)
	r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p"}}}`, postHeaders("Mcp-Session-Id", sid))
	ids := eventIDs(newSSEParser(strings.NewReader(r.body), 1<<20))
	if len(ids) != 4 || !strings.HasPrefix(ids[0], c.handlers[0].cluster.instance+"-") {
		t.Fatalf("the POST's events: %v", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := eventIDs(getStream(t, ctx, c.url(1), sid, ids[1]))
	if fmt.Sprint(got) != fmt.Sprint(ids[2:]) {
		t.Fatalf("resumed elsewhere after %s: %v, want %v", ids[1], got, ids[2:])
	}
}

// TestSharedSessionKeptAliveByStream: a session busy only with an open
// stream is touched in the store at the stream's keep-alive, once due.
func TestSharedSessionKeptAliveByStream(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1, WithKeepAlive(time.Millisecond))
	sid := legacySession(t, c.url(0), Version20251125)
	touched := make(chan struct{})
	c.store.onTouch(func() { close(touched) })
	s := c.handlers[0].session(sid)
	s.mu.Lock()
	s.replica.lastTouch = time.Time{} // due
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	getStream(t, ctx, c.url(0), sid, "")
	select {
	case <-touched:
	case <-ctx.Done():
		t.Fatal("the session was not touched while its stream was open")
	}
}

// eventIDs reads a stream to its end and returns the ids of its events
// with data.
func eventIDs(p *sseParser) []string {
	var ids []string
	for {
		e, err := p.next()
		if err != nil {
			return ids
		}
		if len(e.data) > 0 {
			ids = append(ids, e.id)
		}
	}
}

// TestSharedSessionSubscribedAfterGET: a subscription and a log level set
// on one instance after the client opened its GET stream on another are
// the stream holder's too: its updates reach the stream.
func TestSharedSessionSubscribedAfterGET(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	addResources(c, "res://a")
	sid := legacySession(t, c.url(0), Version20251125)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := getStream(t, ctx, c.url(1), sid, "")
	nextEvent(t, p, true) // priming
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"res://a"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}`,
	} {
		if r := doHTTP(t, "POST", c.url(i*2), body, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	c.servers[2].ResourceUpdated("res://a")
	e := nextEvent(t, p, false)
	if field(t, string(e.data), "method") != "notifications/resources/updated" || field(t, string(e.data), "params.uri") != "res://a" {
		t.Fatalf("on the holder's stream: %s", e.data)
	}
	ss := c.handlers[1].session(sid).ss
	ss.mu.Lock()
	level := ss.logLevel
	ss.mu.Unlock()
	if level != "error" {
		t.Errorf("the holder's log level: %q, want error", level)
	}
}

// addResources adds a resource for each of uris on every instance.
func addResources(c *sessionCluster, uris ...string) {
	for _, srv := range c.servers {
		for _, uri := range uris {
			srv.AddResource(Resource{URI: uri, Name: uri}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
		}
	}
}

// subscribeAt subscribes session sid to each of uris with requests to url.
func subscribeAt(t *testing.T, url, sid string, uris ...string) {
	t.Helper()
	for _, uri := range uris {
		if r := doHTTP(t, "POST", url, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
			t.Fatalf("subscribe to %s: %d %s", uri, r.status, r.body)
		}
	}
}

// killHolder ends instance i's copy of session sid, and with it the GET
// stream it holds, as a kill would: it never says that it let it go.
func killHolder(c *sessionCluster, i int, sid string) {
	c.bc.kill(c.handlers[i].cluster.instance)
	c.handlers[i].session(sid).conn.close(errors.New("killed"))
}

// updatesUntil reads the URIs of the resource updates on p up to the
// first of last; after the nth, it calls then, if not nil.
func updatesUntil(t *testing.T, p *sseParser, last string, n int, then func()) []string {
	t.Helper()
	var got []string
	for len(got) == 0 || got[len(got)-1] != last {
		got = append(got, fmt.Sprint(field(t, string(nextEvent(t, p, false).data), "params.uri")))
		if len(got) == n && then != nil {
			then()
		}
	}
	return got
}

// heldAtOne makes a session on instance 0, subscribed to at0 there and to
// at2 on instance 2 (none for ""), whose copies then know of it; watches
// its channel; and opens its GET stream on instance 1, read past its
// priming event, whose id it returns.
func heldAtOne(t *testing.T, c *sessionCluster, at0, at2 string) (sid string, watch <-chan relayMessage, p1 *sseParser, primed string, cancel1 context.CancelFunc) {
	t.Helper()
	sid = legacySession(t, c.url(0), Version20251125)
	for i, uri := range []string{at0, "", at2} {
		if uri != "" {
			subscribeAt(t, c.url(i), sid, uri)
		}
	}
	// After the copies on instances 0 and 2: the memory broadcaster
	// delivers in the order of subscription, so what the watch sees they
	// have seen.
	watch = relayWatch(t, c, sid)
	ctx1, cancel1 := context.WithTimeout(context.Background(), 10*time.Second)
	p1 = getStream(t, ctx1, c.url(1), sid, "")
	return sid, watch, p1, nextEvent(t, p1, true).id, cancel1
}

// TestSharedSessionHolderKilled: the instance holding a session's GET
// stream dies without a word; what every session gets meanwhile is not
// lost with it: the stream resumed on another instance replays what the
// dead one stored and confirmed, then the updates made after its death,
// then what comes live, each once.
func TestSharedSessionHolderKilled(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	addResources(c, "res://a", "res://b")
	sid, watch, p1, _, cancel1 := heldAtOne(t, c, "res://a", "res://b")
	c.servers[2].ResourceUpdated("res://a")
	e := nextEvent(t, p1, false)
	if uri := field(t, string(e.data), "params.uri"); uri != "res://a" {
		t.Fatalf("first update: %s", uri)
	}
	// Confirmed: a message delivered just before the holder dies, whose
	// confirmation it had not sent, would come twice (docs/deploying.md).
	awaitRelay(t, watch, relayDelivered, c.handlers[1].cluster.instance)

	killHolder(c, 1, sid)
	cancel1()
	c.servers[0].ResourceUpdated("res://a")
	c.servers[2].ResourceUpdated("res://a")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	p2 := getStream(t, ctx2, c.url(2), sid, e.id)
	c.servers[0].ResourceUpdated("res://a")
	c.servers[0].ResourceUpdated("res://b")
	got := updatesUntil(t, p2, "res://b", 0, nil)
	if want := []string{"res://a", "res://a", "res://a", "res://b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the holder died, the resumed stream got %v, want %v", got, want)
	}
}

// TestSharedSessionHolderKilledJoined: as TestSharedSessionHolderKilled,
// where the instance that takes the stream over made its copy of the
// session after the stream was opened, and learnt who held it from the
// holder.
func TestSharedSessionHolderKilledJoined(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	addResources(c, "res://a")
	sid, watch, p1, _, cancel1 := heldAtOne(t, c, "", "")
	subscribeAt(t, c.url(2), sid, "res://a")
	awaitRelay(t, watch, relayHolding, c.handlers[1].cluster.instance)
	c.servers[0].ResourceUpdated("res://a")
	e := nextEvent(t, p1, false)

	killHolder(c, 1, sid)
	cancel1()
	c.servers[0].ResourceUpdated("res://a")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	p2 := getStream(t, ctx2, c.url(2), sid, e.id)
	if e := nextEvent(t, p2, false); field(t, string(e.data), "method") != "notifications/resources/updated" {
		t.Fatalf("after the holder died: %s", e.data)
	}
}

// TestSharedSessionHolderKilledBounded: what a copy keeps for a holder
// that never confirms it is bounded by WithSessionBacklog's count: the
// newest are kept.
func TestSharedSessionHolderKilledBounded(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3, WithSessionBacklog(0, 2))
	uris := []string{"res://1", "res://2", "res://3", "res://end"}
	addResources(c, uris...)
	sid := legacySession(t, c.url(0), Version20251125)
	subscribeAt(t, c.url(2), sid, uris...)
	ctx1, cancel1 := context.WithTimeout(context.Background(), 10*time.Second)
	p1 := getStream(t, ctx1, c.url(1), sid, "")
	e := nextEvent(t, p1, true) // priming
	killHolder(c, 1, sid)
	cancel1()
	for _, uri := range uris[:3] {
		c.servers[0].ResourceUpdated(uri)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	p2 := getStream(t, ctx2, c.url(2), sid, e.id)
	c.servers[0].ResourceUpdated("res://end")
	got := updatesUntil(t, p2, "res://end", 0, nil)
	if want := []string{"res://2", "res://3", "res://end"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("resumed after the holder died, with room for 2: %v, want %v", got, want)
	}
}

// TestSharedSessionHolderKilledNoCopy: the stream of a holder that died
// is resumed on an instance that had no copy of the session: the copies
// that kept what the dead one left hand it over, and each message comes
// once, in order, before what comes live.
func TestSharedSessionHolderKilledNoCopy(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 4)
	addResources(c, "res://a", "res://b", "res://end")
	sid := legacySession(t, c.url(0), Version20251125)
	subscribeAt(t, c.url(2), sid, "res://a", "res://b", "res://end")
	ctx1, cancel1 := context.WithTimeout(context.Background(), 10*time.Second)
	p1 := getStream(t, ctx1, c.url(1), sid, "")
	e := nextEvent(t, p1, true) // priming
	killHolder(c, 1, sid)
	cancel1()
	c.servers[0].ResourceUpdated("res://a")
	c.servers[2].ResourceUpdated("res://b")
	if c.handlers[3].session(sid) != nil {
		t.Fatal("the fourth instance has a copy of the session already")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	p2 := getStream(t, ctx2, c.url(3), sid, e.id)
	// Handed over, maybe by one copy of two: the other's comes before
	// the live update or is dropped.
	got := updatesUntil(t, p2, "res://end", 2, func() { c.servers[0].ResourceUpdated("res://end") })
	if want := []string{"res://a", "res://b", "res://end"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("resumed where no copy was, after the holder died: %v, want %v", got, want)
	}
}

// sayFrom sends session sid a log message of its own, carrying text, from
// instance i's copy.
func sayFrom(t *testing.T, c *sessionCluster, i int, sid, text string) {
	t.Helper()
	if err := c.handlers[i].session(sid).conn.(*conn).notify("notifications/message", map[string]string{"level": "info", "data": text}, ID{}, nil); err != nil {
		t.Fatal(err)
	}
}

// eventsUntil reads p up to the first event that mentions last and
// returns, for each event, its resource URI or its log message's text.
func eventsUntil(t *testing.T, p *sseParser, last string) []string {
	t.Helper()
	var got []string
	for len(got) == 0 || got[len(got)-1] != last {
		var m struct {
			Params struct{ URI, Data string }
		}
		if err := json.Unmarshal(nextEvent(t, p, false).data, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Params.URI+m.Params.Data)
	}
	return got
}

// TestSharedSessionHolderKilledOwnMessage: a message of the session's own
// made on an instance that does not hold the GET stream, handed to a
// holder that died before it wrote it, is not lost: the instance that made
// it keeps it until the holder says it stored it, and hands it to the
// instance that takes the stream over.
func TestSharedSessionHolderKilledOwnMessage(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 3)
	sid := legacySession(t, c.url(0), Version20251125)
	watch := relayWatch(t, c, sid)
	ctx1, cancel1 := context.WithTimeout(context.Background(), 10*time.Second)
	p1 := getStream(t, ctx1, c.url(1), sid, "")
	e := nextEvent(t, p1, true) // priming
	killHolder(c, 1, sid)
	cancel1()
	sayFrom(t, c, 0, sid, "handed to the dead")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	p2 := getStream(t, ctx2, c.url(2), sid, e.id)
	// What is handed over comes after what is live meanwhile.
	awaitConfirmed(t, watch, c.handlers[2].cluster.instance, 1)
	sayFrom(t, c, 2, sid, "end")
	if got, want := eventsUntil(t, p2, "end"), []string{"handed to the dead", "end"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("resumed after the holder died: %q, want %q", got, want)
	}
}

// TestSharedSessionHolderKilledLastInstant: the holder writes and stores
// a resource update and a message of the session's own made elsewhere,
// then dies before it says so; the stream resumed on another instance has
// each once, whether the client had read them (resumed after them) or not
// (resumed before them, replayed from the store).
func TestSharedSessionHolderKilledLastInstant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		after int // how many of the two the client read before resuming
		want  []string
	}{
		{"read", 2, []string{"res://end"}},
		{"unread", 0, []string{"res://a", "made elsewhere", "res://end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newSessionCluster(t, 3)
			addResources(c, "res://a", "res://end")
			sid, watch, p1, last, cancel1 := heldAtOne(t, c, "res://a", "res://end")
			c.bc.kill(c.handlers[1].cluster.instance) // from now on its words are lost
			c.servers[0].ResourceUpdated("res://a")
			sayFrom(t, c, 0, sid, "made elsewhere")
			for range 2 {
				e := nextEvent(t, p1, false) // written, and stored first
				if tc.after > 0 {
					last = e.id
				}
			}
			c.handlers[1].session(sid).conn.close(errors.New("killed"))
			cancel1()

			ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel2()
			p2 := getStream(t, ctx2, c.url(2), sid, last)
			// Both copies kept the update, one the message: each is
			// confirmed once taken over, repeats skipped or not.
			awaitConfirmed(t, watch, c.handlers[2].cluster.instance, 3)
			c.servers[0].ResourceUpdated("res://end")
			if got := eventsUntil(t, p2, "res://end"); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("resumed after %s: %q, want %q", last, got, tc.want)
			}
		})
	}
}

// TestSharedSessionHolderKilledJoinWindow: a copy of the session made
// after the GET stream was opened, whose holder died before it answered
// the copy's 'join', keeps the server-wide messages that come meanwhile
// for whoever takes the stream over: the instance that resumes it, with a
// copy of its own or not.
func TestSharedSessionHolderKilledJoinWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		resume int // the instance where the client resumes
	}{{"at the copy", 2}, {"elsewhere", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newSessionCluster(t, 4)
			addResources(c, "res://a")
			sid, watch, _, primed, cancel1 := heldAtOne(t, c, "", "")
			// Only the holder has a copy; it dies before the next is made.
			c.handlers[0].session(sid).conn.close(errors.New("idle here"))
			killHolder(c, 1, sid)
			cancel1()
			subscribeAt(t, c.url(2), sid, "res://a")
			c.servers[2].ResourceUpdated("res://a")

			ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel2()
			p2 := getStream(t, ctx2, c.url(tc.resume), sid, primed)
			awaitConfirmed(t, watch, c.handlers[tc.resume].cluster.instance, 1)
			sayFrom(t, c, tc.resume, sid, "end")
			if got, want := eventsUntil(t, p2, "end"), []string{"res://a", "end"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("resumed on instance %d: %q, want %q", tc.resume, got, want)
			}
		})
	}
}

// TestSharedSessionTakeOverBounded: what other copies hand over while the
// stream's replay is read waits for it, at most twice WithSessionBacklog's
// count of messages: the newest.
func TestSharedSessionTakeOverBounded(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1, WithSessionBacklog(0, 2))
	sid := legacySession(t, c.url(0), Version20251125)
	s := c.handlers[0].session(sid)
	s.replica.hold(context.Background(), s.standaloneStream(), "elsewhere-0")
	for _, b := range [][]string{{"m1", "m2", "m3"}, {"m4", "m5", "m6"}} {
		var batch keptBatch
		for _, id := range b {
			batch.Messages = append(batch.Messages, keptMessage{ID: id, Data: json.RawMessage(`{}`)})
		}
		s.replica.takeKept(batch)
	}
	s.mu.Lock()
	var got []string
	for _, b := range s.replica.handover.batches {
		for _, w := range b.Messages {
			got = append(got, w.ID)
		}
	}
	s.mu.Unlock()
	if want := []string{"m3", "m4", "m5", "m6"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("waiting for the replay: %v, want %v", got, want)
	}
}

// TestSharedSessionResumedOlderStream: a client resumes its GET stream on
// a second instance, which replays the first's stream and then carries
// what comes live on its own, until the client goes before it read any of
// that; it resumes on a third instance with the first stream's last event
// id, and gets what the second stored meanwhile, once, whether the second
// let the stream go (and kept what came after in its backlog) or died.
func TestSharedSessionResumedOlderStream(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		t.Run(fmt.Sprintf("killed=%v", killed), func(t *testing.T) {
			t.Parallel()
			c := newSessionCluster(t, 3)
			addResources(c, "res://a")
			sid, watch, pa, _, cancelA := heldAtOne(t, c, "res://a", "res://a")
			c.servers[0].ResourceUpdated("res://a")
			e := nextEvent(t, pa, false)
			cancelA()
			awaitRelay(t, watch, relayRelease, c.handlers[1].cluster.instance)

			ctxB, cancelB := context.WithTimeout(context.Background(), 10*time.Second)
			getStream(t, ctxB, c.url(0), sid, e.id)
			sayFrom(t, c, 0, sid, "unread")
			sayFrom(t, c, 2, sid, "unread elsewhere")
			awaitConfirmed(t, watch, c.handlers[0].cluster.instance, 1)
			if killed {
				killHolder(c, 0, sid)
			}
			cancelB()
			want := []string{"unread", "unread elsewhere", "end"}
			if !killed {
				awaitRelay(t, watch, relayRelease, c.handlers[0].cluster.instance)
				sayFrom(t, c, 0, sid, "after")
				want = []string{"unread", "unread elsewhere", "after", "end"}
			}

			ctxC, cancelC := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancelC()
			pc := getStream(t, ctxC, c.url(2), sid, e.id)
			awaitConfirmed(t, watch, c.handlers[2].cluster.instance, 1)
			sayFrom(t, c, 2, sid, "end")
			if got := eventsUntil(t, pc, "end"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("resumed after %s on a third instance: %q, want %q", e.id, got, want)
			}
		})
	}
}
