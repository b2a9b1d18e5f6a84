package mcp

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
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
