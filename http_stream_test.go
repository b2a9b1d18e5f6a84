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
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestErrorCodeOf: the code of an error response is read whatever the
// members' order; a result, however large and whatever text it holds, is
// not an error; malformed input is none either, and never a panic.
func TestErrorCodeOf(t *testing.T) {
	big := strings.Repeat(`"error":{"code":1}`, 1000)
	for _, tc := range []struct {
		data string
		code int
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, -32601, true},
		{` { "error" : { "message":"m", "code" : 400 } , "id" : "x" } `, 400, true},
		{`{"id":{"a":[1,"}"]},"jsonrpc":"2.0","error":{"code":7}}`, 7, true},
		{`{"\u0065rror":{"code":9},"id":1}`, 9, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"text":` + strconv.Quote(big) + `}}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":3}}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":null}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":"no"}`, 0, false},
		{`{"jsonrpc":"2.0","id":1}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":`, 0, false},
		{`{"jsonrpc`, 0, false},
		{`{"a":1 "error":{"code":2}}`, 0, false},
		{`[]`, 0, false},
		{``, 0, false},
	} {
		code, ok := errorCodeOf([]byte(tc.data))
		if code != tc.code || ok != tc.ok {
			t.Errorf("errorCodeOf(%.60s) = %d, %v; want %d, %v", tc.data, code, ok, tc.code, tc.ok)
		}
	}
}

// TestHTTPSessionBacklogLimits: what waits for a session's standalone
// stream keeps exactly the newest messages within WithSessionBacklog's
// count and byte bounds, the drops are logged in two lines whatever their
// number, and a client that resumes with Last-Event-ID still gets every
// event the event store kept.
func TestHTTPSessionBacklogLimits(t *testing.T) {
	t.Parallel()
	const uri = "test://static-text"
	size := len(encodeRequest(ID{}, "notifications/resources/updated", []byte(`{"uri":"`+uri+`"}`)))
	for _, tc := range []struct {
		name        string
		bytes, msgs int
		sent, kept  int
	}{
		{"count at the limit", 1 << 20, 4, 4, 4},
		{"count over the limit", 1 << 20, 4, 7, 4},
		{"bytes at the limit", 4 * size, 1000, 4, 4},
		{"bytes over the limit", 4 * size, 1000, 7, 4},
		{"bytes one short", 4*size - 1, 1000, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			srv := featureServer(WithLogger(slog.New(rec)))
			ts := serveHTTP(t, srv, WithSessionBacklog(tc.bytes, tc.msgs))
			sid := legacySession(t, ts.URL, Version20251125)
			sub := `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"` + uri + `"}}`
			if r := doHTTP(t, "POST", ts.URL, sub, postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125)); r.status != 200 {
				t.Fatalf("subscribe: %d %s", r.status, r.body)
			}
			for range tc.sent {
				srv.ResourceUpdated(uri)
			}
			p, err := openStream(t, ts.URL, sid, "")
			if err != nil {
				t.Fatal(err)
			}
			primed := nextEvent(t, p, true)
			stream, _, ok := parseEventID(primed.id)
			if !ok {
				t.Fatalf("priming event id %q", primed.id)
			}
			eventID := func(i int) string { return stream + "_" + strconv.Itoa(i) }
			for i := tc.sent - tc.kept + 1; i <= tc.sent; i++ {
				if e := nextEvent(t, p, false); e.id != eventID(i) || len(e.data) != size {
					t.Fatalf("backlog event %s (%d bytes), want %s (%d bytes)", e.id, len(e.data), eventID(i), size)
				}
			}
			srv.AddPrompt(Prompt{Name: "marker"}, nil)
			if e := nextEvent(t, p, false); field(t, string(e.data), "method") != "notifications/prompts/list_changed" {
				t.Fatalf("more than the newest %d kept: event %s %s", tc.kept, e.id, e.data)
			}
			dropped := tc.sent - tc.kept
			full := rec.count("backlog is full")
			counted := rec.count("dropped undelivered messages")
			if dropped == 0 && full+counted != 0 || dropped > 0 && (full != 1 || counted != 1 || rec.count("dropped="+strconv.Itoa(dropped)) != 1) {
				rec.mu.Lock()
				t.Fatalf("%d dropped; logged:\n%s", dropped, strings.Join(rec.msgs, "\n"))
			}
			resumed, err := openStream(t, ts.URL, sid, primed.id)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tc.sent+1; i++ {
				if e := nextEvent(t, resumed, false); e.id != eventID(i) {
					t.Fatalf("resumed: event %s, want %s", e.id, eventID(i))
				}
			}
		})
	}
}

// answerHook is a ResponseWriter that calls hook once, as the answer's
// header is written, before the client can have any of it.
type answerHook struct {
	http.ResponseWriter
	hook func()
}

func (w *answerHook) WriteHeader(code int) {
	if f := w.hook; f != nil {
		w.hook = nil
		f()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerHook) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestHTTPSessionBacklogAnsweredGET: what waits for a session's standalone
// stream when a GET takes it, up to WithSessionBacklog's count, is the
// GET's to write before it is answered: a message that comes as it is
// answered, before its writer could take anything, drops none of it, nor
// leaves a gap in the event ids. (When a GET took over a shared session's
// stream, what the other copies handed over waits there so:
// TestSharedSessionHolderKilledBounded lost one to that now and then.)
func TestHTTPSessionBacklogAnsweredGET(t *testing.T) {
	t.Parallel()
	srv := newTestServer()
	uris := []string{"res://1", "res://2", "res://3", "res://end"}
	for _, uri := range uris {
		srv.AddResource(Resource{URI: uri, Name: uri}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := NewHTTPHandler(srv, WithContext(ctx), WithEventStore(NewMemoryEventStore(1<<20)), WithSessionBacklog(0, 2))
	var answered atomic.Pointer[func()]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			if f := answered.Swap(nil); f != nil {
				w = &answerHook{ResponseWriter: w, hook: *f}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	sid := legacySession(t, ts.URL, Version20251125)
	subscribeAt(t, ts.URL, sid, uris...)
	for _, uri := range uris[:3] {
		srv.ResourceUpdated(uri) // the first is dropped: room for 2
	}
	hook := func() { srv.ResourceUpdated("res://end") }
	answered.Store(&hook)
	p, err := openStream(t, ts.URL, sid, "")
	if err != nil {
		t.Fatal(err)
	}
	primed := nextEvent(t, p, true)
	stream, _, _ := parseEventID(primed.id)
	var got []string
	for len(got) == 0 || got[len(got)-1] != "res://end" {
		e := nextEvent(t, p, false)
		got = append(got, fmt.Sprint(field(t, string(e.data), "params.uri")))
		if want := stream + "_" + strconv.Itoa(len(got)+1); e.id != want {
			t.Errorf("event %s (%s), want %s", e.id, got[len(got)-1], want)
		}
	}
	if want := []string{"res://2", "res://3", "res://end"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a message came as the GET was answered: the stream has %v, want %v", got, want)
	}
}

// TestHTTPGatewayLearnsItsStreamIsGone: once the client dropped the
// connection of its call mid-call, the handler's next Progress, Log and
// Notify return ErrStreamClosed where what they send can no longer reach
// the client: a legacy session without an event store, and 2026-07-28
// (whose handler is cancelled too). With an event store the client may
// resume the stream, so they succeed: what they send waits in the store;
// unless the client deleted the session.
func TestHTTPGatewayLearnsItsStreamIsGone(t *testing.T) {
	t.Parallel()
	const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug",`
	for _, tc := range []struct {
		name    string
		modern  bool
		opts    []HTTPHandlerOption
		deleted bool // the client deletes the session instead
		gone    bool
	}{
		{"legacy without an event store", false, []HTTPHandlerOption{WithEventStore(nil)}, false, true},
		{"legacy with an event store", false, nil, false, false},
		{"legacy session deleted", false, nil, true, true},
		{"2026-07-28", true, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			left := make(chan struct{})
			sent := make(chan []error, 1)
			srv := newTestServer()
			srv.AddTool(Tool{Name: "watch"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				g := req.Gateway()
				if err := g.Progress(1, 0, "before"); err != nil {
					return nil, err
				}
				<-left
				sent <- []error{g.Progress(2, 0, "after"), g.Log(LevelInfo, "", "after"), g.Notify("notifications/after", nil)}
				return &CallToolResult{}, nil
			})
			inner := NewHTTPHandler(srv, tc.opts...)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Watched") != "" {
					// Runs once the request's context, which the handler's
					// writer watches, has ended: the client is gone.
					context.AfterFunc(r.Context(), func() { close(left) })
				}
				inner.ServeHTTP(w, r)
			}))
			defer ts.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"watch","_meta":{"progressToken":"p"}}}`
			header := postHeaders("X-Watched", "1")
			if tc.deleted {
				delete(header, "X-Watched")
			}
			if tc.modern {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"watch","_meta":{` + meta + `"progressToken":"p"}}}`
				header = modernHeaders("tools/call", "Mcp-Name", "watch", "X-Watched", "1")
			} else {
				header["Mcp-Session-Id"] = legacySession(t, ts.URL, Version20251125)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(body))
			for k, v := range header {
				req.Header.Set(k, v)
			}
			resp, err := testHTTPClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if e := nextEvent(t, newSSEParser(resp.Body, 1<<20), false); field(t, string(e.data), "params.message") != "before" {
				t.Fatalf("first event %s", e.data)
			}
			if tc.deleted {
				if r := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": header["Mcp-Session-Id"]}); r.status != 204 {
					t.Fatalf("DELETE: %d %s", r.status, r.body)
				}
				close(left) // the session ended before DELETE was answered
			} else {
				cancel() // the client drops the connection mid-call
			}
			resp.Body.Close()
			for i, err := range <-sent {
				what := []string{"Progress", "Log", "Notify"}[i]
				if tc.gone && !errors.Is(err, ErrStreamClosed) {
					t.Errorf("%s after the client left: %v, want ErrStreamClosed", what, err)
				}
				if !tc.gone && err != nil {
					t.Errorf("%s on a stream the client may resume: %v", what, err)
				}
			}
		})
	}
}

// batchSize is the size of the batch issue 24 measured: a 4 MiB body of
// pings.
const batchSize = 93000

// batchIDs are the ids of a batch of n requests.
func batchIDs(n int) []ID {
	ids := make([]ID, n)
	for i := range ids {
		ids[i] = Int64ID(int64(i + 1))
	}
	return ids
}

// TestBatchSettlesInLinearTime: a stream awaiting the answers of a
// 93,000-request batch settles them, in order, in reverse and twice over
// for a repeated id, for under half a second of the process's CPU each
// (settling deleted each answer from a slice, which took seconds). Not
// parallel: the process's CPU is measured.
func TestBatchSettlesInLinearTime(t *testing.T) {
	const bound = 500 * time.Millisecond
	for _, order := range []string{"in order", "in reverse"} {
		t.Run(order, func(t *testing.T) {
			ids := batchIDs(batchSize)
			ids = append(ids, ids[batchSize/2]) // a batch may repeat an id
			st := newHTTPStream(nil, "", slices.Clone(ids), slog.New(slog.DiscardHandler))
			st.frameDone()
			if order == "in reverse" {
				slices.Reverse(ids)
			}
			runtime.GC()
			start, _ := processUsage()
			for i, id := range ids {
				if !st.settle(id) {
					t.Fatalf("answer %d (id %s) was not awaited", i, id)
				}
				if i%1000 == 0 {
					if spent, _ := processUsage(); spent-start > bound {
						t.Fatalf("settling %d of %d answers took %v of CPU, over %v", i, len(ids), spent-start, bound)
					}
				}
			}
			spent, _ := processUsage()
			t.Logf("settling %d answers took %v of CPU", len(ids), spent-start)
			if spent-start > bound {
				t.Fatalf("settling %d answers took %v of CPU, over %v", len(ids), spent-start, bound)
			}
			if st.settle(ids[0]) {
				t.Fatal("an answer settled twice")
			}
			st.mu.Lock()
			finished := st.finished
			st.mu.Unlock()
			if !finished {
				t.Fatal("the stream did not finish after its last answer")
			}
		})
	}
}

// BenchmarkBatchSettle settles the answers of a 93,000-request batch.
func BenchmarkBatchSettle(b *testing.B) {
	ids := batchIDs(batchSize)
	log := slog.New(slog.DiscardHandler)
	b.ReportAllocs()
	for b.Loop() {
		st := newHTTPStream(nil, "", slices.Clone(ids), log)
		st.frameDone()
		for _, id := range ids {
			st.settle(id)
		}
	}
}

// TestHTTPBatchOf93000Requests: a 2025-03-26 batch of 93,000 pings, about
// 4 MiB, is answered in full, one answer per id (a result, or overloaded
// past the in-flight cap, which is raised but kept below the race
// detector's goroutine limit). Not parallel: the process's CPU for the
// whole POST is measured and logged, and bounded loosely (the settling
// alone took seconds when each answer was deleted from a slice).
func TestHTTPBatchOf93000Requests(t *testing.T) {
	ts := serveHTTP(t, newTestServer(WithMaxInFlight(4096)), WithMaxBodyBytes(8<<20))
	sid := legacySession(t, ts.URL, Version20250326)
	var body strings.Builder
	body.WriteByte('[')
	for i := 1; i <= batchSize; i++ {
		if i > 1 {
			body.WriteByte(',')
		}
		body.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`)
	}
	body.WriteByte(']')
	start, _ := processUsage()
	r := doHTTP(t, "POST", ts.URL, body.String(), postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20250326, "Accept", "application/json, text/event-stream"))
	spent, _ := processUsage()
	t.Logf("a %d-byte batch of %d pings took %v of CPU", body.Len(), batchSize, spent-start)
	if r.status != 200 {
		t.Fatalf("status %d: %.200s", r.status, r.body)
	}
	var answers []struct {
		ID     int64           `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &answers); err != nil {
		t.Fatalf("not a JSON array (%v): %.200s", err, r.body)
	}
	seen := make([]bool, batchSize+1)
	overloaded := 0
	for _, a := range answers {
		if a.ID < 1 || a.ID > batchSize || seen[a.ID] {
			t.Fatalf("answer with id %d: unknown or repeated", a.ID)
		}
		seen[a.ID] = true
		switch {
		case a.Error != nil && a.Error.Code == CodeOverloaded:
			overloaded++
		case a.Error != nil || string(a.Result) != "{}":
			t.Fatalf("answer %d: %+v %s", a.ID, a.Error, a.Result)
		}
	}
	if len(answers) != batchSize {
		t.Fatalf("%d answers to %d requests", len(answers), batchSize)
	}
	t.Logf("%d answered overloaded", overloaded)
	if bound := 20 * time.Second; spent-start > bound {
		t.Fatalf("the batch took %v of CPU, over %v", spent-start, bound)
	}
}

// keepAliveProbe records, for the POSTs of the tool calls it watches, the
// answer's Content-Type and when each keep-alive comment was written,
// counted from the POST's arrival.
type keepAliveProbe struct {
	mu       sync.Mutex
	tool     string
	kind     string
	comments []time.Duration
}

func (p *keepAliveProbe) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		watch := p.tool != "" && bytes.Contains(body, []byte(`"name":"`+p.tool+`"`))
		p.mu.Unlock()
		if !watch {
			h.ServeHTTP(w, r)
			return
		}
		rw := &probeWriter{ResponseWriter: w, p: p, start: time.Now()}
		h.ServeHTTP(rw, r)
		p.mu.Lock()
		p.kind = mediaTypeOf(w.Header().Get("Content-Type"))
		p.mu.Unlock()
	})
}

// watch starts recording the POSTs of tool and returns what the last one
// recorded, once the test's goroutines settled.
func (p *keepAliveProbe) watch(tool string) (result func() (string, []time.Duration)) {
	p.mu.Lock()
	p.tool, p.kind, p.comments = tool, "", nil
	p.mu.Unlock()
	return func() (string, []time.Duration) {
		synctest.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.kind, p.comments
	}
}

type probeWriter struct {
	http.ResponseWriter
	p     *keepAliveProbe
	start time.Time
}

func (w *probeWriter) Write(b []byte) (int, error) {
	if bytes.HasPrefix(b, []byte(":")) {
		w.p.mu.Lock()
		w.p.comments = append(w.p.comments, time.Since(w.start))
		w.p.mu.Unlock()
	}
	return w.ResponseWriter.Write(b)
}

func (w *probeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestHTTPKeepAliveSilentCall: on a fake clock, a call that sends nothing
// for nine and a half keep-alive intervals gets its answer as SSE, begun
// with a comment after one interval and given one every interval after,
// on both eras, and the call succeeds; a quick call is still answered
// with JSON, and with the keep-alive off so is the silent one.
func TestHTTPKeepAliveSilentCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newTestServer()
		srv.AddTool(Tool{Name: "silent"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			time.Sleep(9500 * time.Millisecond)
			return &CallToolResult{Content: []Content{TextContent("done")}}, nil
		})
		var every []time.Duration
		for i := 1; i <= 9; i++ {
			every = append(every, time.Duration(i)*time.Second)
		}
		for _, keep := range []time.Duration{time.Second, 0} {
			probe := &keepAliveProbe{}
			_, hc := servePipe(t, &http.Server{Handler: probe.wrap(NewHTTPHandler(srv, WithKeepAlive(keep)))})
			for _, v := range eras {
				cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
				if err := cl.Connect(context.Background(), NewHTTPTransport(pipeURL, WithHTTPClient(hc))); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cl.Close() })
				recorded := probe.watch("silent")
				res, err := cl.CallTool(context.Background(), "silent", nil)
				if err != nil || res.Content[0].Text != "done" {
					t.Fatalf("%s, keep-alive %v: the silent call: %+v %v", v, keep, res, err)
				}
				kind, comments := recorded()
				wantKind, wantComments := "text/event-stream", every
				if keep == 0 {
					wantKind, wantComments = "application/json", nil
				}
				if kind != wantKind || !slices.Equal(comments, wantComments) {
					t.Fatalf("%s, keep-alive %v: the silent call was answered as %s with comments at %v, want %s with %v", v, keep, kind, comments, wantKind, wantComments)
				}
				recorded = probe.watch("echo")
				if res, err := cl.CallTool(context.Background(), "echo", map[string]string{"text": "hi"}); err != nil || !strings.Contains(res.Content[0].Text, "hi") {
					t.Fatalf("%s: echo: %+v %v", v, res, err)
				}
				if kind, comments := recorded(); kind != "application/json" || len(comments) > 0 {
					t.Fatalf("%s, keep-alive %v: a quick call was answered as %s with comments at %v", v, keep, kind, comments)
				}
			}
		}
	})
}

// TestHTTPKeepAliveSilentBatch: a 2025-03-26 batch, whose requests do not
// run on the HTTP goroutine, that stays silent past the keep-alive gets
// its answers as SSE with comments, and every answer comes once the
// silent request ends (which it does when the client saw a comment).
func TestHTTPKeepAliveSilentBatch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTestServer()
	srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &CallToolResult{Content: []Content{TextContent("released")}}, nil
	})
	ts := serveHTTP(t, srv, WithKeepAlive(20*time.Millisecond))
	sid := legacySession(t, ts.URL, Version20250326)
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}]`
	// Bounded: without a keep-alive the answer's headers would never come.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(body))
	for k, v := range postHeaders("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20250326) {
		req.Header.Set(k, v)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if mediaTypeOf(resp.Header.Get("Content-Type")) != "text/event-stream" {
		t.Fatalf("a silent batch was answered as %s", resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	answers := map[string]bool{}
	for len(answers) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended with answers %v: %v", answers, err)
		}
		switch {
		case strings.HasPrefix(line, ":"):
			select {
			case <-release:
			default:
				close(release)
			}
		case strings.HasPrefix(line, "data: "):
			var m struct{ ID json.RawMessage }
			json.Unmarshal([]byte(line[len("data: "):]), &m)
			answers[string(m.ID)] = true
		}
	}
	select {
	case <-release:
	default:
		t.Fatal("every answer came before any comment")
	}
}

// TestHTTPKeepAliveDuringInitialize: a POST's keep-alive that fires while
// a legacy initialize runs with a SessionStore turns its answer to SSE, and
// the answer arrives: the stream's keep-alive touched the session in the
// store before initialize saved it, found nothing, and ended the session
// (the client got comments and no result).
func TestHTTPKeepAliveDuringInitialize(t *testing.T) {
	t.Parallel()
	c := newSessionCluster(t, 1, WithKeepAlive(time.Millisecond))
	var wg sync.WaitGroup
	var lost atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 300 {
				r := doHTTP(t, "POST", c.url(0), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders())
				if !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) {
					if lost.Add(1) == 1 {
						t.Errorf("initialize: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := lost.Load(); n > 0 {
		t.Fatalf("%d of 2,400 initializes lost their answer", n)
	}
}
