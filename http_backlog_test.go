package mcp

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestHTTPSessionBacklogBudget: 200 sessions that once opened a GET stream
// and 20 server-wide messages of 76 KB each hold, together, no more than
// the handler's backlog budget: the oldest messages of any session go
// first, the newest message stays, and the drops are logged.
func TestHTTPSessionBacklogBudget(t *testing.T) {
	const (
		sessions = 200
		messages = 20
		size     = 76 << 10
		budget   = 2 << 20
	)
	logs := &logRecorder{}
	// No event store: what the backlogs hold is all the heap keeps.
	srv := newTestServer(WithLogger(slogOf(logs)))
	h := NewHTTPHandler(srv, WithSessionBacklogBudget(budget), WithEventStore(nil)).(*httpHandler)
	var streams []*httpStream
	for range sessions {
		// A GET stream opened once, and no client reading it now.
		streams = append(streams, h.session(directSession(t, h)).standaloneStream())
	}
	params, _ := json.Marshal(map[string]string{"level": "info", "data": strings.Repeat("x", size)})
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	for range messages {
		srv.broadcast("notifications/message", params, "", func(*serverSession) bool { return true }, func(*SubscriptionFilter) bool { return false })
	}
	grown := heap() - before
	held, heldMessages := 0, 0
	for _, st := range streams {
		st.mu.Lock()
		held += st.pendBytes
		heldMessages += len(st.pending)
		st.mu.Unlock()
	}
	t.Logf("%d sessions, %d messages of %d KiB: %d held (%.1f MiB, counted %.1f MiB), heap grew %.1f MiB; budget %d MiB",
		sessions, messages, size>>10, heldMessages, float64(held)/(1<<20), float64(h.backlog.bytes.Load())/(1<<20), float64(grown)/(1<<20), budget>>20)
	if held > budget || int64(held) != h.backlog.bytes.Load() {
		t.Fatalf("the backlogs hold %d bytes, counted %d; budget %d", held, h.backlog.bytes.Load(), budget)
	}
	if grown > 2*budget { // the budget, and buffers the engine pools

		t.Fatalf("the heap grew by %d bytes; budget %d", grown, budget)
	}
	// The oldest went first: what is held is of the last two messages,
	// the newest included.
	newest, oldest := 0, int64(messages)
	for _, st := range streams {
		st.mu.Lock()
		for _, ev := range st.pending {
			oldest = min(oldest, ev.index)
			if ev.index == messages {
				newest++
			}
		}
		st.mu.Unlock()
	}
	if newest == 0 || oldest < messages-1 {
		t.Fatalf("%d sessions hold the newest message; the oldest held is message %d", newest, oldest)
	}
	h.shutdown()
	if n := logs.count("over the handler's budget"); n != 1 {
		t.Fatalf("the budget's first drop logged %d times", n)
	}
	if n := logs.count("dropped undelivered messages"); n < sessions/2 {
		t.Fatalf("%d sessions logged their drops", n)
	}
	if n := h.backlog.bytes.Load(); n != 0 {
		t.Fatalf("%d bytes counted after every session ended", n)
	}
}
