package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// attrRecorder is a slog handler at a level that keeps each record's
// message and attributes.
type attrRecorder struct {
	level slog.Level
	mu    sync.Mutex
	recs  []loggedRecord
	added chan struct{} // closed and replaced with each record
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

func (r *attrRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }
func (r *attrRecorder) Handle(_ context.Context, rec slog.Record) error {
	lr := loggedRecord{level: rec.Level, msg: rec.Message, attrs: map[string]slog.Value{}}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, lr)
	if r.added != nil {
		close(r.added)
		r.added = nil
	}
	r.mu.Unlock()
	return nil
}
func (r *attrRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *attrRecorder) WithGroup(string) slog.Handler      { return r }

// find returns the records with message msg whose method is method.
func (r *attrRecorder) find(msg, method string) []loggedRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []loggedRecord
	for _, rec := range r.recs {
		if rec.msg == msg && (method == "" || rec.attrs["mcp.method.name"].String() == method) {
			out = append(out, rec)
		}
	}
	return out
}

// waitFor waits until a record with message msg for method was logged:
// the server logs a request after its answer is written.
func (r *attrRecorder) waitFor(t *testing.T, msg, method string, n int) []loggedRecord {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		if r.added == nil {
			r.added = make(chan struct{})
		}
		added := r.added
		r.mu.Unlock()
		if recs := r.find(msg, method); len(recs) >= n {
			return recs
		}
		select {
		case <-added:
		case <-timeout:
			t.Fatalf("no %q record for %s", msg, method)
		}
	}
}

// checkRequestRecord checks a request's debug record attribute by
// attribute.
func checkRequestRecord(t *testing.T, rec loggedRecord, method, outcome, errType string) {
	t.Helper()
	a := rec.attrs
	if rec.level != slog.LevelDebug {
		t.Errorf("%s at level %v", rec.msg, rec.level)
	}
	if a["mcp.method.name"].String() != method {
		t.Errorf("mcp.method.name %v, want %s", a["mcp.method.name"], method)
	}
	if id, ok := a["jsonrpc.request.id"]; !ok || id.String() == "" {
		t.Errorf("jsonrpc.request.id missing: %v", a)
	}
	if d, ok := a["duration"]; !ok || d.Kind() != slog.KindDuration {
		t.Errorf("duration %v is no time.Duration", d)
	}
	if a["outcome"].String() != outcome {
		t.Errorf("outcome %v, want %s", a["outcome"], outcome)
	}
	if got, ok := a["error.type"]; (errType == "") == ok || (ok && got.String() != errType) {
		t.Errorf("error.type %v (present %v), want %q", got, ok, errType)
	}
}

func TestDebugLogRequests(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			srvLog, clLog := &attrRecorder{level: slog.LevelDebug}, &attrRecorder{level: slog.LevelDebug}
			srv := newTestServer(WithProtocolVersion(v), WithLogger(slog.New(srvLog)))
			srv.AddTool(Tool{Name: "fails"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				return nil, errors.New("tool failed")
			})
			srv.AddTool(Tool{Name: "refuses"}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				return nil, &Error{Code: CodeInvalidParams, Message: "no"}
			})
			cl := pair(t, srv, WithProtocolVersion(v), WithLogger(slog.New(clLog)))
			ctx := context.Background()

			if _, err := cl.CallTool(ctx, "echo", nil); err != nil {
				t.Fatal(err)
			}
			checkRequestRecord(t, clLog.waitFor(t, "sent a request", "tools/call", 1)[0], "tools/call", "ok", "")
			checkRequestRecord(t, srvLog.waitFor(t, "served a request", "tools/call", 1)[0], "tools/call", "ok", "")

			if res, err := cl.CallTool(ctx, "fails", nil); err != nil || !res.IsError {
				t.Fatalf("%+v, %v", res, err)
			}
			checkRequestRecord(t, clLog.waitFor(t, "sent a request", "tools/call", 2)[1], "tools/call", "error", "tool_error")
			checkRequestRecord(t, srvLog.waitFor(t, "served a request", "tools/call", 2)[1], "tools/call", "error", "tool_error")

			if _, err := cl.CallTool(ctx, "refuses", nil); err == nil {
				t.Fatal("no error")
			}
			checkRequestRecord(t, clLog.waitFor(t, "sent a request", "tools/call", 3)[2], "tools/call", "error", "-32602")
			checkRequestRecord(t, srvLog.waitFor(t, "served a request", "tools/call", 3)[2], "tools/call", "error", "-32602")

			_, err := cl.CallTool(ctx, "block", nil, WithTimeout(20*time.Millisecond))
			var timeout *RequestTimeoutError
			if !errors.As(err, &timeout) {
				t.Fatalf("%v, want a timeout", err)
			}
			checkRequestRecord(t, clLog.waitFor(t, "sent a request", "tools/call", 4)[3], "tools/call", "timeout", "")
			checkRequestRecord(t, srvLog.waitFor(t, "served a request", "tools/call", 4)[3], "tools/call", "cancelled", "")
		})
	}
}

func TestDebugLogSessionID(t *testing.T) {
	srvLog := &attrRecorder{level: slog.LevelDebug}
	srv := newTestServer(WithProtocolVersion(Version20251125), WithLogger(slog.New(srvLog)))
	ts := httptest.NewServer(NewHTTPHandler(srv))
	defer ts.Close()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	tr := NewHTTPTransport(ts.URL)
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	rec := srvLog.waitFor(t, "served a request", "tools/call", 1)[0]
	if got := rec.attrs["mcp.session.id"].String(); got == "" || got != tr.session() {
		t.Errorf("mcp.session.id %q, want %q", got, tr.session())
	}
}

func TestDebugLogOffAtInfo(t *testing.T) {
	srvLog, clLog := &attrRecorder{level: slog.LevelInfo}, &attrRecorder{level: slog.LevelInfo}
	srv := newTestServer(WithLogger(slog.New(srvLog)))
	cl := pair(t, srv, WithLogger(slog.New(clLog)))
	for range 3 {
		if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	for _, r := range []*attrRecorder{srvLog, clLog} {
		if n := len(r.find("served a request", "")) + len(r.find("sent a request", "")); n != 0 {
			t.Errorf("%d request records at info level", n)
		}
	}
}

func TestWarningAttributeNames(t *testing.T) {
	rec := &attrRecorder{level: slog.LevelDebug}
	srv := newTestServer(WithLogger(slog.New(rec)), WithMaxInFlight(1))
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	// The orphan is logged before the ping behind it is answered.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	p.recv()
	orphans := rec.find("discarding orphan success response for unknown request id", "")
	if len(orphans) != 1 || orphans[0].attrs["jsonrpc.request.id"].String() != "99" {
		t.Errorf("orphan records %+v", orphans)
	}
	// At the cap of one, a request behind a blocked one is shed.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block"}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	p.recv() // the overloaded error
	shed := rec.find("in-flight cap reached: shedding", "tools/list")
	if len(shed) != 1 {
		t.Errorf("shed records %+v", rec.find("in-flight cap reached: shedding", ""))
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
}
