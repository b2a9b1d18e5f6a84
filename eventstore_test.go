package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var errStoreDown = errors.New("the store is down")

// failingStore is a MemoryEventStore whose methods named in fail return
// errStoreDown instead.
type failingStore struct {
	*MemoryEventStore
	fail string
}

func (f *failingStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	if strings.Contains(f.fail, "Append") {
		return errStoreDown
	}
	return f.MemoryEventStore.Append(ctx, sessionID, streamID, index, data)
}

func (f *failingStore) After(ctx context.Context, sessionID, streamID string, index int64) ([][]byte, bool, error) {
	if strings.Contains(f.fail, "After") {
		return nil, false, errStoreDown
	}
	return f.MemoryEventStore.After(ctx, sessionID, streamID, index)
}

func (f *failingStore) SessionClosed(ctx context.Context, sessionID string) error {
	if strings.Contains(f.fail, "SessionClosed") {
		return errStoreDown
	}
	return f.MemoryEventStore.SessionClosed(ctx, sessionID)
}

// openStream opens a GET stream of session sid, resuming after last unless
// it is empty; the stream ends with the test.
func openStream(t *testing.T, url, sid, last string) (*sseParser, error) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return openStreamCtx(t, ctx, url, sid, last)
}

// openStreamCtx is openStream until ctx ends.
func openStreamCtx(t *testing.T, ctx context.Context, url, sid, last string) (*sseParser, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET after %q: %s", last, resp.Status)
	}
	return newSSEParser(resp.Body, 1<<20), nil
}

// nextEvent reads the next event with data, or, with priming, the next
// event of any kind.
func nextEvent(t *testing.T, p *sseParser, priming bool) sseEvent {
	t.Helper()
	for {
		e, err := p.next()
		if err != nil {
			t.Fatal(err)
		}
		if priming || len(e.data) > 0 {
			return e
		}
	}
}

// TestEventStoreErrors: when the event store fails, the live stream still
// delivers every message, the error is logged, and a resume that needs
// what the store failed to keep or to read is refused as if the events had
// been evicted.
func TestEventStoreErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fail, logged string }{
		{"Append After SessionClosed", "cannot store an SSE event"},
		{"After", "cannot read SSE events"},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			ts := serveHTTP(t, newTestServer(WithLogger(slog.New(rec))), WithEventStore(&failingStore{NewMemoryEventStore(1 << 20), tc.fail}))
			sid := legacySession(t, ts.URL, Version20251125)
			r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p"}}}`, postHeaders("Mcp-Session-Id", sid))
			p := newSSEParser(strings.NewReader(r.body), 1<<20)
			var ids, got []string
			for e, err := p.next(); err == nil; e, err = p.next() {
				if len(e.data) > 0 {
					ids = append(ids, e.id)
					got = append(got, fmt.Sprint(field(t, string(e.data), "params.progress"), field(t, string(e.data), "id")))
				}
			}
			if want := "[1 <nil> 2 <nil> 3 <nil> <nil> 1]"; r.status != 200 || fmt.Sprint(got) != want || !strings.Contains(r.body, "3 steps") {
				t.Fatalf("live stream: %d %v, want %s", r.status, got, want)
			}
			resume := doHTTP(t, "GET", ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": ids[0]})
			if resume.status != 400 || !strings.Contains(resume.body, "no longer available") {
				t.Fatalf("resuming through a failing store: %d %s", resume.status, resume.body)
			}
			if rec.count(tc.logged) == 0 {
				t.Errorf("no %q in the log", tc.logged)
			}
			if d := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}); d.status != 204 {
				t.Fatalf("DELETE: %d %s", d.status, d.body)
			}
			if strings.Contains(tc.fail, "SessionClosed") && rec.count("closed session") == 0 {
				t.Error("the failed SessionClosed was not logged")
			}
		})
	}
}

// blockingStore is a MemoryEventStore whose Appends announce themselves on
// appending and then wait until release is closed.
type blockingStore struct {
	*MemoryEventStore
	appending chan int64
	release   chan struct{}
}

func (b *blockingStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	select {
	case b.appending <- index:
	default:
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.MemoryEventStore.Append(ctx, sessionID, streamID, index, data)
}

// TestEventStoreBlockedAppend: while the store holds an Append, the event
// still reaches the live client, the session and others serve requests,
// and a resume waits for the store, then replays the event once before the
// live ones.
func TestEventStoreBlockedAppend(t *testing.T) {
	t.Parallel()
	store := &blockingStore{NewMemoryEventStore(1 << 20), make(chan int64, 1), make(chan struct{})}
	srv := newTestServer()
	ts := serveHTTP(t, srv, WithEventStore(store))
	sid := legacySession(t, ts.URL, Version20251125)
	p, err := openStream(t, ts.URL, sid, "")
	if err != nil {
		t.Fatal(err)
	}
	primed := nextEvent(t, p, true)

	added := make(chan struct{})
	go func() {
		defer close(added)
		srv.AddPrompt(Prompt{Name: "first"}, nil) // its notification waits for the store
	}()
	<-store.appending
	if e := nextEvent(t, p, false); field(t, string(e.data), "method") != "notifications/prompts/list_changed" {
		t.Fatalf("live event %s", e.data)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if r := doHTTP(t, "POST", ts.URL, list, postHeaders("Mcp-Session-Id", sid)); r.status != 200 {
		t.Fatalf("the same session's request while the store blocks: %d %s", r.status, r.body)
	}
	other := legacySession(t, ts.URL, Version20250326)
	if r := doHTTP(t, "POST", ts.URL, list, postHeaders("Mcp-Session-Id", other)); r.status != 200 {
		t.Fatalf("another session's request while the store blocks: %d %s", r.status, r.body)
	}

	var resumeErr error
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		p, resumeErr = openStream(t, ts.URL, sid, primed.id)
	}()
	st := ts.Config.Handler.(*httpHandler).session(sid).standaloneStream()
	for waiting := false; !waiting; runtime.Gosched() { // until the resume waits for the store
		select {
		case <-resumed:
			t.Fatalf("the resume did not wait for the store: %v", resumeErr)
		default:
		}
		st.mu.Lock()
		waiting = st.drained != nil
		st.mu.Unlock()
	}
	close(store.release)
	<-added
	if <-resumed; resumeErr != nil {
		t.Fatal(resumeErr)
	}
	srv.AddPrompt(Prompt{Name: "second"}, nil)
	stream, _, _ := parseEventID(primed.id)
	for _, want := range []string{stream + "_1", stream + "_2"} {
		if e := nextEvent(t, p, false); e.id != want {
			t.Fatalf("resumed stream: event %s (%s), want %s", e.id, e.data, want)
		}
	}
}

// lockingStore is a MemoryEventStore whose every method takes the handler's
// lock and those of the session and stream it names: called while the
// handler held any of them, it would wait forever, so it reports that
// after a while instead.
type lockingStore struct {
	*MemoryEventStore
	t *testing.T
	h *httpHandler

	mu       sync.Mutex
	sessions map[string]*httpSession // seen, for the calls made after they are gone
	streams  map[string]*httpStream
	calls    map[string]int
}

// takeLock takes mu on another goroutine and runs then under it; it fails
// the test, naming method and what the lock guards, when mu stays held:
// method was called by the goroutine that holds it.
func takeLock(t *testing.T, method, what string, mu *sync.Mutex, then func()) bool {
	done := make(chan struct{})
	go func() {
		mu.Lock()
		then()
		mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		t.Errorf("%s was called while the %s's lock was held", method, what)
		return false
	}
}

// takeLocks locks and unlocks the handler, the session sid and its stream
// streamID (if not ""), one at a time.
func (l *lockingStore) takeLocks(method, sid, streamID string) {
	take := func(what string, mu *sync.Mutex, then func()) bool {
		return takeLock(l.t, method, what, mu, then)
	}
	var sess *httpSession
	if !take("handler", &l.h.mu, func() { sess = l.h.sessions[sid] }) {
		return
	}
	l.mu.Lock()
	l.calls[method]++
	if sess != nil {
		l.sessions[sid] = sess
	} else {
		sess = l.sessions[sid]
	}
	l.mu.Unlock()
	if sess == nil || streamID == "" {
		return
	}
	var st *httpStream
	if !take("session", &sess.mu, func() {
		if st = sess.streams[streamID]; streamID == standaloneStreamID {
			st = sess.standalone
		}
	}) {
		return
	}
	l.mu.Lock()
	if st != nil {
		l.streams[sid+" "+streamID] = st
	} else {
		st = l.streams[sid+" "+streamID]
	}
	l.mu.Unlock()
	if st != nil {
		take("stream", &st.mu, func() {})
	}
}

func (l *lockingStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	l.takeLocks("Append", sessionID, streamID)
	return l.MemoryEventStore.Append(ctx, sessionID, streamID, index, data)
}

func (l *lockingStore) After(ctx context.Context, sessionID, streamID string, index int64) ([][]byte, bool, error) {
	l.takeLocks("After", sessionID, streamID)
	return l.MemoryEventStore.After(ctx, sessionID, streamID, index)
}

func (l *lockingStore) StreamDone(ctx context.Context, sessionID, streamID string) error {
	l.takeLocks("StreamDone", sessionID, streamID)
	return l.MemoryEventStore.StreamDone(ctx, sessionID, streamID)
}

func (l *lockingStore) SessionClosed(ctx context.Context, sessionID string) error {
	l.takeLocks("SessionClosed", sessionID, "")
	return l.MemoryEventStore.SessionClosed(ctx, sessionID)
}

// TestEventStoreNeverCalledUnderLock: every method of the store is called
// while the handler holds none of its locks, those of its sessions or of
// their streams, on each path that reaches the store: SSE answers,
// streams pushed out of the retained ones, the standalone stream, a
// resume, and the session's end.
func TestEventStoreNeverCalledUnderLock(t *testing.T) {
	t.Parallel()
	store := &lockingStore{MemoryEventStore: NewMemoryEventStore(1 << 20), t: t, sessions: map[string]*httpSession{}, streams: map[string]*httpStream{}, calls: map[string]int{}}
	srv := newTestServer()
	ts := serveHTTP(t, srv, WithEventStore(store))
	store.h = ts.Config.Handler.(*httpHandler)
	sid := legacySession(t, ts.URL, Version20251125)
	for i := range retainedStreams + 2 {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`, i)
		if r := doHTTP(t, "POST", ts.URL, call, postHeaders("Mcp-Session-Id", sid)); r.status != 200 || !strings.Contains(r.body, "2 steps") {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	p, err := openStream(t, ts.URL, sid, "")
	if err != nil {
		t.Fatal(err)
	}
	primed := nextEvent(t, p, true)
	srv.AddPrompt(Prompt{Name: "one"}, nil)
	nextEvent(t, p, false)
	if p, err = openStream(t, ts.URL, sid, primed.id); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, p, false); field(t, string(e.data), "method") != "notifications/prompts/list_changed" {
		t.Fatalf("resumed with %s", e.data)
	}
	if r := doHTTP(t, "DELETE", ts.URL, "", map[string]string{"Mcp-Session-Id": sid}); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, m := range []string{"Append", "After", "StreamDone", "SessionClosed"} {
		if store.calls[m] == 0 {
			t.Errorf("%s was never called: %v", m, store.calls)
		}
	}
}

// batchStore is a MemoryEventStore that stores batches (EventBatchStore)
// and records how it was called; with fail set, its batches fail.
type batchStore struct {
	*MemoryEventStore
	fail    bool
	mu      sync.Mutex
	appends int
	batches [][]int64  // the indexes of each batch
	stored  chan int64 // if not nil, gets the last index of each store
}

func (b *batchStore) tell(index int64) {
	if b.stored != nil {
		b.stored <- index
	}
}

func (b *batchStore) Append(ctx context.Context, sessionID, streamID string, index int64, data []byte) error {
	b.mu.Lock()
	b.appends++
	b.mu.Unlock()
	err := b.MemoryEventStore.Append(ctx, sessionID, streamID, index, data)
	b.tell(index)
	return err
}

func (b *batchStore) AppendBatch(ctx context.Context, sessionID, streamID string, first int64, data [][]byte) error {
	b.mu.Lock()
	var idx []int64
	for i := range data {
		idx = append(idx, first+int64(i))
	}
	b.batches = append(b.batches, idx)
	b.mu.Unlock()
	if b.fail {
		return errStoreDown
	}
	for i, d := range data {
		if err := b.MemoryEventStore.Append(ctx, sessionID, streamID, first+int64(i), d); err != nil {
			return err
		}
	}
	b.tell(first + int64(len(data)) - 1)
	return nil
}

// TestEventBatchStore: the events of a POST's SSE stream, written as they
// come, reach an EventBatchStore in one batch once the stream ends, and a
// client that resumes the stream gets them; a batch that fails is logged
// and a resume that needs it refused.
func TestEventBatchStore(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			store := &batchStore{MemoryEventStore: NewMemoryEventStore(1 << 20), fail: fail}
			ts := serveHTTP(t, newTestServer(WithLogger(slog.New(rec))), WithEventStore(store))
			sid := legacySession(t, ts.URL, Version20251125)
			r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p"}}}`, postHeaders("Mcp-Session-Id", sid))
			p := newSSEParser(strings.NewReader(r.body), 1<<20)
			var ids []string
			for e, err := p.next(); err == nil; e, err = p.next() {
				if len(e.data) > 0 {
					ids = append(ids, e.id)
				}
			}
			if r.status != 200 || len(ids) != 4 {
				t.Fatalf("live stream: %d, %d events", r.status, len(ids))
			}
			// The resume waits for the store to have the stream's events.
			resume := doHTTP(t, "GET", ts.URL, "", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": ids[0]})
			store.mu.Lock()
			appends, batches := store.appends, fmt.Sprint(store.batches)
			store.mu.Unlock()
			if appends != 0 || batches != "[[1 2 3 4]]" {
				t.Fatalf("%d Appends and batches %s, want one batch of the four events", appends, batches)
			}
			if fail {
				if resume.status != 400 || rec.count("cannot store SSE events") == 0 {
					t.Fatalf("resuming past a failed batch: %d %s", resume.status, resume.body)
				}
				return
			}
			if resume.status != 200 || strings.Count(resume.body, "id: ") != 3 || !strings.Contains(resume.body, "3 steps") {
				t.Fatalf("resume: %d %q", resume.status, resume.body)
			}
		})
	}
}

// TestEventStoreDelay: a report a POST's stream wrote is stored once
// WithEventStoreDelay passed (at once with 0), while its call still runs.
func TestEventStoreDelay(t *testing.T) {
	t.Parallel()
	for _, delay := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			t.Parallel()
			store := &batchStore{MemoryEventStore: NewMemoryEventStore(1 << 20), stored: make(chan int64, 16)}
			srv := newTestServer()
			srv.AddTool(Tool{Name: "waits"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				for i := range 2 {
					req.Gateway().Progress(float64(i+1), 2, "")
					select {
					case got := <-store.stored:
						if got != int64(i+1) {
							return nil, fmt.Errorf("stored up to %d, want %d", got, i+1)
						}
					case <-time.After(10 * time.Second):
						return nil, fmt.Errorf("report %d was not stored while the call ran", i+1)
					}
				}
				return &CallToolResult{Content: []Content{TextContent("stored")}}, nil
			})
			ts := serveHTTP(t, srv, WithEventStore(store), WithEventStoreDelay(delay))
			sid := legacySession(t, ts.URL, Version20251125)
			r := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"waits","_meta":{"progressToken":"p"}}}`, postHeaders("Mcp-Session-Id", sid))
			if r.status != 200 || !strings.Contains(r.body, `"text":"stored"`) {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
}
