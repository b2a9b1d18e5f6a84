package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestClient runs the program and checks that each call ended the way it
// says: by progress outliving the idle bound, by its own timeout, by each
// bound, and by cancellation, with the server told each time.
func TestClient(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatalf("%v; output:\n%s", err, out.String())
	}
	// Request ids depend on how many requests came before.
	got := regexp.MustCompile(`request \d+`).ReplaceAllString(out.String(), "request N")
	want := `connected to long-tools (protocol 2026-07-28); idle bound 1s, ceiling 2s
1. reindex: 1.2s of work, reporting progress every 150ms
   1/8 step 1
   2/8 step 2
   3/8 step 3
   4/8 step 4
   5/8 step 5
   6/8 step 6
   7/8 step 7
   8/8 step 8
   result: reindexed 8 shards
2. export: 1.3s of quiet work, called WithTimeout(5s)
   result: exported
3. stall: never answers
   timed out: the idle bound (1s) fired
   the server's handler stopped: stall: mcp: request cancelled by the peer: The request timed out.
4. chatty: reports progress every 100ms, forever
   timed out: the ceiling bound (2s) fired
   the server's handler stopped: chatty: mcp: request cancelled by the peer: The request timed out.
5. reindex again, cancelled after two steps
   1/8 step 1
   2/8 step 2
   error: mcp: request N (tools/call) abandoned: context canceled
   the server's handler stopped: reindex: mcp: request cancelled by the peer: The request was cancelled by the caller: context canceled
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
