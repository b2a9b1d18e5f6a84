package mcp

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPeerDurationClampsBeforeConverting(t *testing.T) {
	maxMs := time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond
	maxS := time.Duration(math.MaxInt64/int64(time.Second)) * time.Second
	for _, c := range []struct {
		n    int64
		unit time.Duration
		want time.Duration
	}{
		{0, time.Millisecond, 0},
		{-1, time.Millisecond, 0},
		{math.MinInt64, time.Second, 0},
		{1500, time.Millisecond, 1500 * time.Millisecond},
		{9223372036855, time.Millisecond, maxMs}, // the TTL that once overflowed
		{math.MaxInt64, time.Millisecond, maxMs},
		{math.MaxInt64, time.Second, maxS},
		{5, 0, 0},
	} {
		if got := peerDuration(c.n, c.unit); got != c.want {
			t.Errorf("peerDuration(%d, %v) = %v, want %v", c.n, c.unit, got, c.want)
		}
	}
}

// FuzzPeerNumbers feeds every duration and count a peer sends, as a number
// and as text, through the code that reads it: nothing overflows, nothing
// comes out negative or past its cap, and nothing panics. (A task's TTL
// sent to a server in params.task runs through FuzzTaskDurations.)
func FuzzPeerNumbers(f *testing.F) {
	for _, n := range []int64{0, -1, 1, 999, 2147483647, 2147483648, 9223372036855, math.MaxInt64, math.MinInt64} {
		f.Add(n, strconv.FormatInt(n, 10))
	}
	f.Add(int64(0), "18446744073709551615")
	f.Add(int64(0), "1e400")
	f.Add(int64(0), "-0")
	f.Add(int64(0), "+5")
	f.Fuzz(func(t *testing.T, n int64, s string) {
		// Durations a peer counts in milliseconds or seconds.
		for _, unit := range []time.Duration{time.Millisecond, time.Second} {
			if d := peerDuration(n, unit); d < 0 || (n > 0) != (d > 0) {
				t.Fatalf("peerDuration(%d, %v) = %v", n, unit, d)
			}
		}
		// A server's task: ttl and pollInterval, both eras.
		for _, modern := range []bool{false, true} {
			raw := fmt.Sprintf(`{"taskId":"a","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","ttl":%d,"pollInterval":%d,"ttlMs":%d,"pollIntervalMs":%d}`, n, n, n, n)
			if task, err := decodeTask([]byte(raw), modern); err != nil || task.TTL < 0 || task.PollInterval < 0 {
				t.Fatalf("task ttl %d: %v %v (%v)", n, task.TTL, task.PollInterval, err)
			}
		}
		// A server's SSE retry hint, and the waits the client builds on it.
		for _, text := range []string{s, strconv.FormatInt(n, 10)} {
			if strings.ContainsAny(text, "\r\n") {
				continue
			}
			ev, err := newSSEParser(strings.NewReader("retry: "+text+"\ndata: x\n\n"), 1<<16).next()
			if err != nil || ev.retry < 0 || ev.retry > (1<<31-1)*time.Millisecond {
				t.Fatalf("retry %q read as %v (%v)", text, ev.retry, err)
			}
			for _, k := range []int{0, 1, 13, 16, 40} {
				if d := reconnectDelay(ev.retry, k); d <= 0 || d > 30*time.Second {
					t.Fatalf("retry %q, attempt %d: wait %v", text, k, d)
				}
			}
		}
		// A client's Last-Event-ID, as the event store reads it.
		if _, idx, ok := parseEventID("s_" + s); ok {
			if idx < 0 || idx == math.MaxInt64 {
				t.Fatalf("Last-Event-ID index %q read as %d", s, idx)
			}
			store := NewMemoryEventStore(1 << 20)
			for i := range int64(3) {
				store.Append(t.Context(), "sess", "s", i, []byte("x"))
			}
			events, ok, _ := store.After(t.Context(), "sess", "s", idx)
			if len(events) > 3 || (idx >= 2 && (!ok || len(events) != 0)) {
				t.Fatalf("After(%d): %d events, %v", idx, len(events), ok)
			}
		}
		// A client's list cursors: the registries' and the task store's.
		reg := &registry[int]{}
		for i := range 5 {
			reg.add(strconv.Itoa(i), i)
		}
		for _, text := range []string{s, strconv.FormatUint(uint64(n), 10)} {
			cursor := base64.RawURLEncoding.EncodeToString([]byte("tools:" + text))
			items, next, err := reg.page("tools", cursor, 2, nil)
			if err == nil && (len(items) > 2 || (next != "" && len(items) == 0)) {
				t.Fatalf("cursor %q: %v, next %q", text, items, next)
			}
			if last, perr := strconv.ParseUint(text, 10, 64); perr == nil && last >= 5 && len(items) > 0 {
				t.Fatalf("cursor %q, past every item, gave %v", text, items) // last+1 overflowed
			}
		}
		if items, _, err := reg.page("tools", s, 2, nil); err == nil && len(items) > 2 {
			t.Fatalf("cursor %q: %v", s, items)
		}
		if _, _, err := NewMemoryTaskStore(10, 1<<20).List(t.Context(), "o", s, 10); err != nil && s == "" {
			t.Fatalf("the first page of tasks: %v", err)
		}
		// An authorization server's expires_in.
		o := newOAuthTransport("https://mcp.example/mcp", nil, OAuthConfig{HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body := `{"access_token":"a","token_type":"Bearer","expires_in":` + strconv.Quote(s) + `}`
			if _, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xX_") {
				body = `{"access_token":"a","token_type":"Bearer","expires_in":` + s + `}`
			}
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		})}})
		if tok, err := o.requestToken(t.Context(), "token", "https://as.example/token", url.Values{}, tokenClient{id: "c", method: authMethodNone}); err == nil {
			if now := time.Now(); tok.lifetime < 0 || (!tok.Expiry.IsZero() && tok.Expiry.Before(now.Add(-time.Minute))) {
				t.Fatalf("expires_in %q: lifetime %v, expiry %v", s, tok.lifetime, tok.Expiry)
			}
		}
		// A key set's Cache-Control max-age.
		c := newJWKSCache(JWTVerifierConfig{})
		if d := c.lifetime(http.Header{"Cache-Control": {"max-age=" + s}}); d < c.minRefresh || d > c.max {
			t.Fatalf("max-age=%q: lifetime %v", s, d)
		}
		// A token's exp, nbf and iat (JWT claims, introspection fields).
		for _, v := range []float64{float64(n), math.Float64frombits(uint64(n))} {
			if at, ok := numericDate(v); ok && (at.Year() < -40000 || at.Year() > 40000) {
				t.Fatalf("NumericDate %v read as %v", v, at)
			}
		}
	})
}
