package mcp

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSSEParser: the framing edge cases of server-sent events.
func TestSSEParser(t *testing.T) {
	t.Parallel()
	type ev struct {
		id, event, data string
		retry           time.Duration
	}
	cases := []struct {
		name string
		in   string
		want []ev
	}{
		{"LF", "data: a\n\ndata: b\n\n", []ev{{data: "a"}, {data: "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{data: "a"}, {data: "b"}}},
		{"CR", "data: a\r\rdata: b\r\r\n", []ev{{data: "a"}, {data: "b"}}},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", []ev{{data: "{\"a\":\n1}"}}},
		{"no space after colon", "data:x\n\n", []ev{{data: "x"}}},
		{"only one space stripped", "data:  x\n\n", []ev{{data: " x"}}},
		{"comments", ": hello\n:\ndata: a\n: mid\n\n", []ev{{data: "a"}}},
		{"id, event, retry", "id: 7_1\nevent: message\nretry: 500\ndata: a\n\n", []ev{{id: "7_1", event: "message", retry: 500 * time.Millisecond, data: "a"}}},
		{"priming event", "id: 3_0\ndata:\n\n", []ev{{id: "3_0"}}},
		{"retry alone", "retry: 1500\n\n", []ev{{retry: 1500 * time.Millisecond}}},
		{"bad retry ignored", "retry: 1s\ndata: a\n\n", []ev{{data: "a"}}},
		{"id with NUL ignored", "id: a\x00b\ndata: a\n\n", []ev{{data: "a"}}},
		{"field without colon", "data\n\n", []ev{{}}},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []ev{{data: "a"}}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n", []ev{{data: "a"}}},
		{"unterminated last event dropped", "data: a\n\ndata: b\n", []ev{{data: "a"}}},
		{"long line", "data: " + strings.Repeat("x", 100_000) + "\n\n", []ev{{data: strings.Repeat("x", 100_000)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newSSEParser(strings.NewReader(tc.in), 1<<20)
			var got []ev
			for {
				e, err := p.next()
				if err != nil {
					if err != io.EOF {
						t.Fatal(err)
					}
					break
				}
				got = append(got, ev{id: e.id, event: e.event, data: string(e.data), retry: e.retry})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events %+v, want %+v", len(got), got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("event %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	t.Run("oversized event skipped", func(t *testing.T) {
		p := newSSEParser(strings.NewReader("data: "+strings.Repeat("x", 5000)+"\n\ndata: ok\n\n"), 1000)
		e, err := p.next()
		if err != nil || !e.tooLarge {
			t.Fatalf("first event %+v %v, want tooLarge", e, err)
		}
		if e, err = p.next(); err != nil || string(e.data) != "ok" {
			t.Fatalf("second event %q %v", e.data, err)
		}
	})
}

// TestSSEWriterFraming: what the handler writes parses back to the same
// messages, line breaks inside a message included.
func TestSSEWriterFraming(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	out := &sseWriter{w: rec, rc: *http.NewResponseController(rec), ids: true, streamID: "4"}
	msgs := []string{`{"a":1}`, "{\n  \"pretty\": true\r\n}", `{"b":"x\ny"}`}
	var evs []streamEvent
	for i, m := range msgs {
		evs = append(evs, streamEvent{index: int64(i + 1), data: []byte(m)})
	}
	if err := out.events(evs); err != nil {
		t.Fatal(err)
	}
	p := newSSEParser(rec.Body, 1<<20)
	for i, m := range msgs {
		e, err := p.next()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(m, "\r\n", "\n")
		if string(e.data) != want || e.id != fmt.Sprintf("4_%d", i+1) {
			t.Fatalf("event %d: %q id %q, want %q", i, e.data, e.id, want)
		}
	}
}

func TestParseEventIDLeavesRoomForTheNext(t *testing.T) {
	if _, _, ok := parseEventID("s_9223372036854775807"); ok {
		t.Fatal("an event index of MaxInt64 was accepted; a store adding 1 to it overflows")
	}
	if id, n, ok := parseEventID("s_9223372036854775806"); !ok || id != "s" || n != math.MaxInt64-1 {
		t.Fatalf("parseEventID = %q %d %v", id, n, ok)
	}
}
