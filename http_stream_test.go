package mcp

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
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
