package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// endlessLists answers tools/list with page(n) for the n-th request, the
// way a hostile server would, and counts the requests.
func endlessLists(page func(n int64) string) (*Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := newTestServer(WithInboundMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (json.RawMessage, error) {
			if req.Method != "tools/list" {
				return next(ctx, req)
			}
			n := calls.Add(1)
			if n > 1000 { // ends the list, so an iterator without a bound fails rather than hangs
				return json.RawMessage(`{"tools":[]}`), nil
			}
			return json.RawMessage(page(n)), nil
		}
	}))
	return srv, &calls
}

// TestListIteratorsStop: a server that keeps handing out cursors, with the
// same items, with none, or with the cursor it was given, cannot keep a
// list iterator paging; the iteration ends with an error after the bound.
func TestListIteratorsStop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		opts  []ClientOption
		page  func(n int64) string
		calls int64 // requests the iteration makes
		tools int   // tools it yields
		err   string
	}{
		{"empty pages, new cursors", nil, func(n int64) string {
			return fmt.Sprintf(`{"tools":[],"nextCursor":"c%d"}`, n)
		}, DefaultMaxBarrenPages, 0, "nothing new"},
		{"the same tools, new cursors", nil, func(n int64) string {
			return fmt.Sprintf(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}`, n)
		}, DefaultMaxBarrenPages + 1, 1, "nothing new"},
		{"a bound of its own", []ClientOption{WithMaxBarrenPages(3)}, func(n int64) string {
			return fmt.Sprintf(`{"tools":[],"nextCursor":"c%d"}`, n)
		}, 3, 0, "nothing new"},
		{"a cursor given before", nil, func(n int64) string {
			return fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}`, n, n%2)
		}, 3, 3, "cursor it had given before"},
		{"new tools keep coming", []ClientOption{WithMaxBarrenPages(1)}, func(n int64) string {
			if n == 20 {
				return `{"tools":[]}`
			}
			return fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}`, n, n)
		}, 20, 19, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, calls := endlessLists(tc.page)
			cl := pair(t, srv, tc.opts...)
			tools, err := 0, error(nil)
			for tool, e := range cl.Tools(context.Background()) {
				if e != nil {
					err = e
					break
				}
				if tool == nil {
					t.Fatal("nil tool without an error")
				}
				tools++
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
			if got := calls.Load(); got != tc.calls || tools != tc.tools {
				t.Fatalf("%d requests, %d tools; want %d, %d", got, tools, tc.calls, tc.tools)
			}
		})
	}
}
