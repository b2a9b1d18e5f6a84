package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSSE2024Wire: the 2024-11-05 HTTP+SSE transport on the wire: the
// endpoint event first, messages POSTed there and answered on the stream,
// unknown sessions refused; the client refuses an endpoint on another
// origin.
func TestSSE2024Wire(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(NewSSEHandler(newTestServer()))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := newSSEParser(resp.Body, 1<<20)
	ev, err := p.next()
	if err != nil || ev.event != "endpoint" || !strings.HasPrefix(string(ev.data), "/sse?sessionId=") {
		t.Fatalf("first event %+v %v", ev, err)
	}
	endpoint := ts.URL + string(ev.data)
	if r := doHTTP(t, "POST", endpoint, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Content-Type": "application/json"}); r.status != 202 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	ev, err = p.next()
	if err != nil || ev.event != "message" || !jsonEqual(string(ev.data), `{"jsonrpc":"2.0","id":1,"result":{}}`) {
		t.Fatalf("answer %+v %v", ev, err)
	}
	for _, tc := range []struct {
		url, contentType string
		status           int
	}{
		{ts.URL + "/sse?sessionId=nope", "application/json", 404},
		{endpoint, "text/plain", 415},
	} {
		if r := doHTTP(t, "POST", tc.url, `{}`, map[string]string{"Content-Type": tc.contentType}); r.status != tc.status {
			t.Errorf("POST %s (%s): %d, want %d", tc.url, tc.contentType, r.status, tc.status)
		}
	}

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: http://evil.example.com/steal\n\n")
	}))
	defer evil.Close()
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	if err := cl.Connect(context.Background(), NewSSETransport(evil.URL)); err == nil || !strings.Contains(err.Error(), "origin") {
		t.Fatalf("Connect to a server naming a foreign endpoint = %v", err)
	}
}
