package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// counts sizes the scenarios; -quick shrinks them for a smoke run.
type counts struct {
	SeqCalls    int `json:"seqCalls"`    // sequential echo calls, at least
	SeqMinMs    int `json:"seqMinMs"`    // and for at least this long
	Goroutines  int `json:"goroutines"`  // callers sharing one session
	ConcCalls   int `json:"concCalls"`   // calls across all those callers
	Progress    int `json:"progress"`    // notifications in one call
	BigCalls    int `json:"bigCalls"`    // 1 MiB echo calls, at least
	BigMinMs    int `json:"bigMinMs"`    // and for at least this long
	Sessions    int `json:"sessions"`    // idle HTTP sessions opened
	SleepCalls  int `json:"sleepCalls"`  // parallel sleep calls
	SleepMs     int `json:"sleepMs"`     // each sleep's length
	SleepBursts int `json:"sleepBursts"` // bursts of them, one after the other
	FloorRounds int `json:"floorRounds"` // JSON floor iterations
}

var (
	fullCounts  = counts{SeqCalls: 2000, SeqMinMs: 500, Goroutines: 64, ConcCalls: 6400, Progress: 10_000, BigCalls: 8, BigMinMs: 1000, Sessions: 1000, SleepCalls: 64, SleepMs: 100, SleepBursts: 5, FloorRounds: 50_000}
	quickCounts = counts{SeqCalls: 100, Goroutines: 64, ConcCalls: 256, Progress: 1000, BigCalls: 1, Sessions: 50, SleepCalls: 64, SleepMs: 100, SleepBursts: 1, FloorRounds: 5000}
)

// A metric is one figure a scenario reports.
type metric struct {
	Scenario string
	Name     string
	Unit     string
	Higher   bool // higher is better
}

// The metrics of the per-carrier scenarios, in table order.
var (
	mSeqRate     = metric{"sequential echo", "calls/s", "calls/s", true}
	mSeqP50      = metric{"sequential echo", "p50", "µs", false}
	mSeqP99      = metric{"sequential echo", "p99", "µs", false}
	mBytes       = metric{"per echo call", "bytes", "B/call", false}
	mAllocs      = metric{"per echo call", "allocs", "allocs/call", false}
	mConcRate    = metric{"64 goroutines", "calls/s", "calls/s", true}
	mProgRate    = metric{"progress stream", "rate", "notif/s", true}
	mProgTotal   = metric{"progress stream", "delivered", "count", true}
	mProgBefore  = metric{"progress stream", "before return", "count", true}
	mBigRate     = metric{"1 MiB echo", "throughput", "MiB/s", true}
	mSleepWidth  = metric{"64 × sleep(100ms)", "width", "calls", true}
	mSleepFirst  = metric{"64 × sleep(100ms), first burst", "width", "calls", true}
	mSessOpen    = metric{"1,000 HTTP sessions", "time to open", "ms", false}
	mSessHeap    = metric{"1,000 HTTP sessions", "heap/session", "B", false}
	mSessGor     = metric{"1,000 HTTP sessions", "goroutines/session", "count", false}
	mFloor       = metric{"JSON floor", "round trip", "µs", false}
	mSleepFloor  = metric{"64 × sleep(100ms), net/http floor", "width", "calls", true}
	carrierTable = []metric{mSeqRate, mSeqP50, mSeqP99, mBytes, mAllocs, mConcRate, mProgRate, mProgTotal, mProgBefore, mBigRate, mSleepWidth, mSleepFirst}
)

// sample is one scenario's figures in one repetition.
type sample map[metric]float64

// runCarrier runs every per-carrier scenario on one session.
func runCarrier(ctx context.Context, s session, n counts) (sample, error) {
	out := sample{}
	steps := []func(context.Context, session, counts, sample) error{
		runSequential, runConcurrent, runProgress, runBig, runSleep,
	}
	for _, step := range steps {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := step(sctx, s, n, out)
		cancel()
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// maxSeqCalls bounds the sequential echo calls of one repetition.
const maxSeqCalls = 200_000

// runSequential times sequential echo calls and counts what they allocate
// (client and, in-process, server): n.SeqCalls calls, and more until
// n.SeqMinMs have passed, so that a fast SDK's mean is not taken over a
// window a single pause of the machine can move (2,000 calls of 20 µs are
// 40 ms). Every SDK gets the same rule.
func runSequential(ctx context.Context, s session, n counts, out sample) error {
	for range 20 { // warm up
		if _, err := s.Echo(ctx, "hello"); err != nil {
			return fmt.Errorf("sequential echo: %w", err)
		}
	}
	limit := n.SeqCalls
	if n.SeqMinMs > 0 {
		limit = max(limit, maxSeqCalls)
	}
	// Room for every call, made before counting: growing it would be
	// counted against the SDK.
	lat := make([]time.Duration, 0, limit)
	minWall := time.Duration(n.SeqMinMs) * time.Millisecond
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for len(lat) < n.SeqCalls || (time.Since(start) < minWall && len(lat) < limit) {
		t := time.Now()
		got, err := s.Echo(ctx, "hello")
		lat = append(lat, time.Since(t))
		if err == nil {
			err = checkEcho(got, "hello")
		}
		if err != nil {
			return fmt.Errorf("sequential echo: %w", err)
		}
	}
	wall := time.Since(start)
	runtime.ReadMemStats(&after)
	calls := float64(len(lat))
	slices.Sort(lat)
	out[mSeqRate] = calls / wall.Seconds()
	out[mSeqP50] = float64(lat[len(lat)/2].Nanoseconds()) / 1e3
	out[mSeqP99] = float64(lat[len(lat)*99/100].Nanoseconds()) / 1e3
	out[mBytes] = float64(after.TotalAlloc-before.TotalAlloc) / calls
	out[mAllocs] = float64(after.Mallocs-before.Mallocs) / calls
	return nil
}

// runConcurrent shares one session among n.Goroutines callers.
func runConcurrent(ctx context.Context, s session, n counts, out sample) error {
	per := n.ConcCalls / n.Goroutines
	var wg sync.WaitGroup
	errs := make(chan error, n.Goroutines)
	start := time.Now()
	for range n.Goroutines {
		wg.Go(func() {
			for range per {
				got, err := s.Echo(ctx, "hello")
				if err == nil {
					err = checkEcho(got, "hello")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("64 goroutines: %w", err)
	}
	out[mConcRate] = float64(per*n.Goroutines) / wall.Seconds()
	return nil
}

// runProgress makes one call that streams n.Progress notifications. It
// counts those the callback saw before the call returned, then waits for
// stragglers until all arrived or none came for 300 ms. The rate is over the
// time to the later of the return and the last delivery.
func runProgress(ctx context.Context, s session, n counts, out sample) error {
	var got, last atomic.Int64
	start := time.Now()
	err := s.Progress(ctx, n.Progress, func() {
		got.Add(1)
		last.Store(time.Now().UnixNano())
	})
	returned := time.Now()
	before := got.Load()
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	seen, quiet := got.Load(), time.Now()
	for got.Load() < int64(n.Progress) && time.Since(quiet) < 300*time.Millisecond {
		time.Sleep(2 * time.Millisecond)
		if g := got.Load(); g != seen {
			seen, quiet = g, time.Now()
		}
	}
	end := returned
	if l := time.Unix(0, last.Load()); l.After(end) {
		end = l
	}
	total := got.Load()
	out[mProgRate] = float64(total) / end.Sub(start).Seconds()
	out[mProgTotal] = float64(total)
	out[mProgBefore] = float64(before)
	return nil
}

// bigText is the 1 MiB payload: printable ASCII that needs no escaping.
var bigText = strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", (1<<20)/32)

// maxBigCalls bounds the 1 MiB echo calls of one repetition.
const maxBigCalls = 200

// runBig echoes 1 MiB texts: n.BigCalls calls, and more until n.BigMinMs
// have passed, the same rule for every SDK (8 calls were 0.2 s for ours, a
// window one garbage collection could move by a fifth). The rate counts
// one MiB per call.
func runBig(ctx context.Context, s session, n counts, out sample) error {
	if got, err := s.Echo(ctx, bigText); err != nil || len(got) != len(bigText) { // warm up
		return fmt.Errorf("1 MiB echo: %v (got %d bytes)", err, len(got))
	}
	minWall := time.Duration(n.BigMinMs) * time.Millisecond
	calls := 0
	start := time.Now()
	for calls < n.BigCalls || (time.Since(start) < minWall && calls < maxBigCalls) {
		got, err := s.Echo(ctx, bigText)
		if err == nil {
			err = checkEcho(got, bigText)
		}
		if err != nil {
			return fmt.Errorf("1 MiB echo: %w", err)
		}
		calls++
	}
	out[mBigRate] = float64(calls) / time.Since(start).Seconds()
	return nil
}

// runSleep starts n.SleepCalls calls of a tool that sleeps n.SleepMs at once;
// the width is how many ran side by side on average. Each burst starts
// after a garbage collection (as testing.B starts each benchmark), so that
// it pays for its own garbage, not for what the scenario before it left
// (the 1 MiB echo's): on ours, a collection inside a burst made it about
// 4 ms longer (a median width of 57.4 against 59.7), a lottery between SDKs
// and runs. The width is the median of n.SleepBursts bursts, one after the
// other: one burst is one sample of a 100 ms event on a shared machine, and
// five bursts in a row of ours spread over 59.1–61.8 (every other scenario
// reports a mean over many operations). The first burst's width, the one
// right after the 1 MiB echo and all that runs 1–72 measured, is reported
// beside it, so that the median hides no burst that goes worse.
func runSleep(ctx context.Context, s session, n counts, out sample) error {
	widths := make([]float64, n.SleepBursts)
	for i := range widths {
		var wg sync.WaitGroup
		errs := make(chan error, n.SleepCalls)
		runtime.GC()
		start := time.Now()
		for range n.SleepCalls {
			wg.Go(func() {
				if err := s.Sleep(ctx, n.SleepMs); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("parallel sleep: %w", err)
		}
		widths[i] = float64(n.SleepCalls) * float64(n.SleepMs) * 1e6 / float64(wall.Nanoseconds())
	}
	out[mSleepFirst] = widths[0] // the first, right after the 1 MiB echo: the figure before medians
	out[mSleepWidth] = medianOf(widths)
	return nil
}

// runSessions opens n legacy (2025-11-25) sessions on h with a raw HTTP
// client (initialize, then notifications/initialized, nothing else), lets
// them go idle, and reports the time to open them and the heap and
// goroutines each idle session holds on the server. The raw client is the
// same for every SDK and keeps no connection open while measuring.
func runSessions(ctx context.Context, h http.Handler, n int, out sample) error {
	ts := httptest.NewServer(h)
	defer ts.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ids := make([]string, n)

	settleGoroutines(0)
	g0 := runtime.NumGoroutine()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				id, err := openLegacySession(ctx, hc, ts.URL)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	open := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	tr.CloseIdleConnections()
	g1 := settleGoroutines(g0)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	out[mSessOpen] = float64(open.Microseconds()) / 1e3
	out[mSessHeap] = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
	out[mSessGor] = float64(g1-g0) / float64(n)

	// End the sessions so the next measurement starts clean.
	next.Store(0)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, ts.URL, nil)
				req.Header.Set("Mcp-Session-Id", ids[i])
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
				if resp, err := hc.Do(req); err == nil {
					drainClose(resp.Body)
				}
			}
		})
	}
	wg.Wait()
	tr.CloseIdleConnections()
	ts.CloseClientConnections()
	return nil
}

// settleGoroutines waits (at most 3 s) until the goroutine count stops
// changing for 100 ms, and returns it; it returns early when the count is
// at or below floor.
func settleGoroutines(floor int) int {
	deadline := time.Now().Add(3 * time.Second)
	last, since := runtime.NumGoroutine(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		g := runtime.NumGoroutine()
		if g <= floor {
			return g
		}
		if g != last {
			last, since = g, time.Now()
			continue
		}
		if time.Since(since) >= 100*time.Millisecond {
			return g
		}
	}
	return runtime.NumGoroutine()
}

// openLegacySession runs the 2025-11-25 handshake on url and returns the
// session id.
func openLegacySession(ctx context.Context, hc *http.Client, url string) (string, error) {
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}`
	resp, err := post(ctx, hc, url, initBody, "")
	if err != nil {
		return "", err
	}
	id := resp.Header.Get("Mcp-Session-Id")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || id == "" || !bytes.Contains(body, []byte(`"protocolVersion"`)) {
		return "", fmt.Errorf("initialize: status %d, session %q, body %.200s", resp.StatusCode, id, body)
	}
	resp, err = post(ctx, hc, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	if err != nil {
		return "", err
	}
	drainClose(resp.Body)
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("notifications/initialized: status %d", resp.StatusCode)
	}
	return id, nil
}

func post(ctx context.Context, hc *http.Client, url, body, session string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return hc.Do(req)
}

// The floor messages: one echo round trip encoded and decoded once each
// with encoding/json and plain structs, no SDK. On 2026-07-28 the same
// round trip carries what that revision puts in every request and result:
// the request's _meta (protocol version, client capabilities and info) and
// the result's resultType and _meta (server info).
type (
	floorInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	floorRequestMeta struct {
		ProtocolVersion    string         `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
		ClientInfo         floorInfo      `json:"io.modelcontextprotocol/clientInfo"`
	}
	floorRequest struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  struct {
			Meta      *floorRequestMeta `json:"_meta,omitempty"`
			Name      string            `json:"name"`
			Arguments echoArgs          `json:"arguments"`
		} `json:"params"`
	}
	floorContent struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	floorResultMeta struct {
		ServerInfo floorInfo `json:"io.modelcontextprotocol/serverInfo"`
	}
	floorResponse struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Result  struct {
			ResultType string           `json:"resultType,omitempty"`
			Meta       *floorResultMeta `json:"_meta,omitempty"`
			Content    []floorContent   `json:"content"`
		} `json:"result"`
	}
)

// floorPair returns the echo request of version, with id 1 and the text
// "hello", and its answer without an id.
func floorPair(version string) (req floorRequest, resp floorResponse) {
	req.JSONRPC, req.ID, req.Method = "2.0", 1, "tools/call"
	req.Params.Name, req.Params.Arguments.Text = "echo", "hello"
	resp.JSONRPC = "2.0"
	resp.Result.Content = []floorContent{{"text", "hello"}}
	if version >= "2026-07-28" {
		req.Params.Meta = &floorRequestMeta{ProtocolVersion: version, ClientCapabilities: map[string]any{}, ClientInfo: floorInfo{"bench", "1.0.0"}}
		resp.Result.ResultType = "complete"
		resp.Result.Meta = &floorResultMeta{ServerInfo: floorInfo{"bench", "1.0.0"}}
	}
	return req, resp
}

// runFloor measures the JSON floor of one echo round trip of version:
// marshal and unmarshal the request, then the response
// (BenchmarkJSONFloor/roundtrip in the library).
func runFloor(rounds int, version string, out sample) error {
	req, resp := floorPair(version)
	start := time.Now()
	for range rounds {
		data, err := json.Marshal(&req)
		if err != nil {
			return err
		}
		var gotReq floorRequest
		if err := json.Unmarshal(data, &gotReq); err != nil {
			return err
		}
		resp.ID = gotReq.ID
		if data, err = json.Marshal(&resp); err != nil {
			return err
		}
		var gotResp floorResponse
		if err := json.Unmarshal(data, &gotResp); err != nil {
			return err
		}
		if len(gotResp.Result.Content) != 1 {
			return errors.New("floor: lost content")
		}
	}
	out[mFloor] = float64(time.Since(start).Nanoseconds()) / float64(rounds) / 1e3
	return nil
}

// runSleepFloor measures the 64 × sleep width with no SDK at either end:
// net/http's server (httptest, as every SDK's handler is served here) with
// a handler that reads the body, sleeps n.SleepMs and writes a fixed JSON
// answer, and a client that writes fixed request bytes on n.SleepCalls
// connections opened beforehand and reads until the answer's last byte. It
// is the width the machine, the kernel's loopback and net/http allow an
// SDK's 64 × sleep over HTTP; an SDK's own work at both ends comes on top.
func runSleepFloor(n counts, out sample) error {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}`)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		t := time.NewTimer(time.Duration(n.SleepMs) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	defer ts.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":` + strconv.Itoa(n.SleepMs) + `}}}`
	request := []byte("POST / HTTP/1.1\r\nHost: " + ts.Listener.Addr().String() +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	conns := make([]net.Conn, n.SleepCalls)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			return fmt.Errorf("sleep floor: %w", err)
		}
		conns[i] = c
	}
	burst := func() (time.Duration, error) {
		var wg sync.WaitGroup
		errs := make(chan error, len(conns))
		runtime.GC() // as runSleep does
		start := time.Now()
		for _, c := range conns {
			wg.Go(func() {
				if _, err := c.Write(request); err != nil {
					errs <- err
					return
				}
				buf := make([]byte, 1024)
				got := 0
				for !bytes.HasSuffix(buf[:got], answer) {
					if got == len(buf) {
						errs <- errors.New("answer too long")
						return
					}
					m, err := c.Read(buf[got:])
					if err != nil {
						errs <- err
						return
					}
					got += m
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		close(errs)
		if err := <-errs; err != nil {
			return 0, fmt.Errorf("sleep floor: %w", err)
		}
		return wall, nil
	}
	if _, err := burst(); err != nil { // warm up: the server's connection goroutines
		return err
	}
	widths := make([]float64, n.SleepBursts) // as runSleep measures
	for i := range widths {
		wall, err := burst()
		if err != nil {
			return err
		}
		widths[i] = float64(n.SleepCalls) * float64(n.SleepMs) * 1e6 / float64(wall.Nanoseconds())
	}
	out[mSleepFloor] = medianOf(widths)
	return nil
}

// medianOf returns the median of xs, which it sorts.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
