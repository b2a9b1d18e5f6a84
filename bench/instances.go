package main

// The -instances mode: issue 27's benchmark. Ours alone, over Streamable
// HTTP on loopback, in three setups (one instance in memory, one instance
// on Redis, three instances on Redis behind a round-robin proxy with no
// affinity), for both eras; calls/s and p50/p99 of sequential and
// concurrent echo calls, and the Redis commands the hot path of a call
// costs, counted by a go-redis hook.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
	mcpredis "github.com/e6ac58cb/mcp/redis"
	"github.com/redis/go-redis/v9"
)

// instCounts sizes the -instances mode.
type instCounts struct {
	Calls      int `json:"calls"`      // measured calls per phase (sequential, concurrent)
	Goroutines int `json:"goroutines"` // callers sharing one client in the concurrent phase
	Warmup     int `json:"warmup"`     // unmeasured calls before each phase
	// SessionTimeout is the handlers' WithSessionTimeout; 0 keeps the
	// default (10 minutes: a cached legacy session is touched in the store
	// once per 2.5 minutes per instance).
	SessionTimeout time.Duration `json:"sessionTimeout,omitempty"`
}

// instSetup is one way of serving: how many instances, on what.
type instSetup struct {
	Key       string `json:"key"`
	Name      string `json:"name"`
	Instances int    `json:"instances"`
	Redis     bool   `json:"redis"`
}

var instSetups = []instSetup{
	{"memory", "1 instance, in memory", 1, false},
	{"redis", "1 instance, Redis", 1, true},
	{"redis3", "3 instances, Redis, proxy", 3, true},
}

// instPhase is one phase's figures: the calls, their rate and latency, and
// what they cost in Redis.
type instPhase struct {
	Goroutines  int         `json:"goroutines"`
	Calls       int         `json:"calls"`
	Seconds     float64     `json:"seconds"`
	CallsPerSec float64     `json:"callsPerSec"`
	P50Us       float64     `json:"p50Us"`
	P99Us       float64     `json:"p99Us"`
	Redis       *redisCount `json:"redis,omitempty"`
}

// redisCount is what the instances asked of Redis during a phase's
// measured calls.
type redisCount struct {
	// RoundTrips: commands sent alone plus pipelines (one round trip
	// each, however many commands they hold).
	RoundTrips int64 `json:"roundTrips"`
	// Commands: every command, each one in a pipeline included.
	Commands int64            `json:"commands"`
	ByName   map[string]int64 `json:"byName"`
	// Dials: new connections to Redis (their handshake commands are not
	// seen by the hook).
	Dials int64 `json:"dials"`
	// Subscribes and Unsubscribes: Broadcaster.Subscribe calls and their
	// stops, at the library's seam. A subscription new to the instance is
	// a SUBSCRIBE on the broadcaster's own connection, which the hook does
	// not see.
	Subscribes   int64   `json:"subscribes"`
	Unsubscribes int64   `json:"unsubscribes"`
	RoundTripsPC float64 `json:"roundTripsPerCall"`
	CommandsPC   float64 `json:"commandsPerCall"`
	// MaxRoundTrips is the most round trips between the start and the end
	// of one call (sequential phase only: with one caller every round trip
	// in the window falls to one call).
	MaxRoundTrips *int64 `json:"maxRoundTripsInOneCall,omitempty"`
}

// instRow is one setup and era.
type instRow struct {
	Setup   instSetup `json:"setup"`
	Version string    `json:"version"`
	// Connect: what the instances asked of Redis from their start to the
	// end of the first warm-up (the client's connect included); shows the
	// hook at work, not the hot path.
	Connect    *redisCount `json:"connect,omitempty"`
	Sequential *instPhase  `json:"sequential,omitempty"`
	Concurrent *instPhase  `json:"concurrent,omitempty"`
	// Requests is how many HTTP requests each instance served, all
	// phases and the connect included: the proxy's spread.
	Requests []int64 `json:"requestsPerInstance"`
	Error    string  `json:"error,omitempty"`
}

// instTarget is one of issue 27's targets, checked against this run.
type instTarget struct {
	Setup   string `json:"setup"`
	Version string `json:"version"`
	Goal    string `json:"goal"`
	Got     string `json:"got"`
	Pass    bool   `json:"pass"`
}

type instRun struct {
	Started  time.Time    `json:"started"`
	Elapsed  string       `json:"elapsed"`
	Go       string       `json:"go"`
	CPUs     int          `json:"cpus"`
	Redis    string       `json:"redis,omitempty"`
	Counts   instCounts   `json:"counts"`
	Versions []string     `json:"versions"`
	Counted  string       `json:"counted"`
	Rows     []*instRow   `json:"rows"`
	Targets  []instTarget `json:"targets"`
	Errors   []string     `json:"errors"`
}

// countedNote says what the Redis figures count; printed and in the JSON.
const countedNote = "Redis round trips and commands are counted by a go-redis hook on every instance's client (ProcessHook: one command, one round trip; " +
	"ProcessPipelineHook: one round trip, each command in it counted; a new connection's handshake, HELLO and CLIENT SETINFO, comes through it too), " +
	"from the end of the phase's warm-up to its last measured call, divided by the measured calls; anything the instances do in the background in that window counts too. " +
	"Pub/sub deliveries are not commands and are not counted; nor are SUBSCRIBE, UNSUBSCRIBE and PING on the broadcaster's own connection, " +
	"which bypass the hook: Broadcaster.Subscribe calls and their stops are counted at the library's seam instead. " +
	"A cached legacy session is touched in the store (PEXPIRE) at most once per quarter of the session timeout per instance, inline on the request that finds it due."

// runInstances is the -instances mode.
func runInstances(ctx context.Context, n instCounts, versions, setupKeys []string, redisBin, jsonOut string) error {
	var setups []instSetup
	for _, k := range setupKeys {
		i := slices.IndexFunc(instSetups, func(s instSetup) bool { return s.Key == strings.TrimSpace(k) })
		if i < 0 {
			return fmt.Errorf("unknown setup %q (memory, redis, redis3)", k)
		}
		setups = append(setups, instSetups[i])
	}
	r := &instRun{Started: time.Now().UTC(), Go: runtime.Version(), CPUs: runtime.NumCPU(), Counts: n, Versions: versions, Counted: countedNote}

	var rp *redisProc
	if slices.ContainsFunc(setups, func(s instSetup) bool { return s.Redis }) {
		var err error
		if rp, err = startRedis(redisBin); err != nil {
			return err
		}
		defer rp.stop()
		// Interrupted: stop the server and wait for it before going.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		go func() {
			if _, ok := <-sig; ok {
				rp.stop()
				fmt.Fprintln(os.Stderr, "bench: interrupted")
				os.Exit(130)
			}
		}()
		r.Redis = rp.version
		fmt.Fprintf(os.Stderr, "[instances] redis-server on %s (%s)\n", rp.addr, rp.version)
	}
	for _, s := range setups {
		for _, v := range versions {
			t := time.Now()
			row := &instRow{Setup: s, Version: v}
			if err := measureSetup(ctx, row, rp, n); err != nil {
				row.Error = err.Error()
				r.Errors = append(r.Errors, fmt.Sprintf("%s, %s: %v", s.Name, v, err))
			}
			r.Rows = append(r.Rows, row)
			status := "ok"
			if row.Error != "" {
				status = row.Error
			}
			fmt.Fprintf(os.Stderr, "[instances] %-26s %s %5.1fs requests per instance %v %s\n", s.Name, v, time.Since(t).Seconds(), row.Requests, status)
		}
	}
	r.Elapsed = time.Since(r.Started).Round(time.Second).String()
	r.Targets = r.targets()
	r.print(os.Stdout)
	if jsonOut != "" {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if len(r.Errors) > 0 {
		return errors.New("some setups failed (see Errors)")
	}
	return nil
}

// instance is one server instance of a setup and what it holds.
type instance struct {
	ts    *httptest.Server
	reqs  atomic.Int64
	rdb   *redis.Client
	bc    *mcpredis.Broadcaster
	close context.CancelFunc
}

// benchStateKey is the requestState key every instance shares.
var benchStateKey = []byte("bench: the instances' shared requestState key, 32+ bytes")

// measureSetup builds setup row.Setup for row.Version, measures it and
// tears it down.
func measureSetup(ctx context.Context, row *instRow, rp *redisProc, n instCounts) error {
	s, v := row.Setup, row.Version
	counter := newCmdCounter()
	subs := &subCounter{}
	var insts []*instance
	defer func() {
		for _, in := range insts {
			row.Requests = append(row.Requests, in.reqs.Load())
			in.close() // the handler's context: sessions end, streams close
			in.ts.CloseClientConnections()
			in.ts.Close()
			if in.bc != nil {
				in.bc.Close()
			}
			if in.rdb != nil {
				in.rdb.Close()
			}
		}
	}()
	if s.Redis {
		// A clean Redis for each setup, through a client the hook does
		// not see.
		admin := redis.NewClient(&redis.Options{Addr: rp.addr})
		err := admin.FlushAll(ctx).Err()
		admin.Close()
		if err != nil {
			return fmt.Errorf("FLUSHALL: %w", err)
		}
	}
	for range s.Instances {
		hctx, cancel := context.WithCancel(ctx)
		in := &instance{close: cancel}
		hopts := []mcp.HTTPHandlerOption{mcp.WithContext(hctx)}
		if n.SessionTimeout > 0 {
			hopts = append(hopts, mcp.WithSessionTimeout(n.SessionTimeout))
		}
		var sopts []mcp.ServerOption
		if s.Redis {
			// Each instance its own client and pool, as separate
			// processes would have.
			in.rdb = redis.NewClient(&redis.Options{Addr: rp.addr, ContextTimeoutEnabled: true})
			in.rdb.AddHook(counter)
			in.bc = mcpredis.NewBroadcaster(in.rdb)
			sopts = append(sopts,
				mcp.WithTasks(mcp.TaskOptions{Store: mcpredis.NewTaskStore(in.rdb)}),
				mcp.WithBroadcaster(countingBroadcaster{in.bc, subs}),
				mcp.WithStateKey(benchStateKey))
			hopts = append(hopts,
				mcp.WithEventStore(mcpredis.NewEventStore(in.rdb)),
				mcp.WithSessionStore(mcpredis.NewSessionStore(in.rdb)))
		}
		h := mcp.NewHTTPHandler(oursServer(v, sopts...), hopts...)
		in.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			in.reqs.Add(1)
			h.ServeHTTP(w, r)
		}))
		insts = append(insts, in)
	}
	endpoint := insts[0].ts.URL
	if len(insts) > 1 {
		px, err := roundRobinProxy(insts)
		if err != nil {
			return err
		}
		defer func() {
			px.CloseClientConnections()
			px.Close()
		}()
		endpoint = px.URL
	}

	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	cl := mcp.NewClient(mcp.Implementation{Name: "bench", Version: "1.0.0"}, mcp.WithProtocolVersion(v))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := cl.Connect(cctx, mcp.NewHTTPTransport(endpoint, mcp.WithHTTPClient(hc)))
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	sess := &oursSession{cl: cl, cleanup: func() { cl.Close() }}
	defer sess.Close()
	if got := cl.ProtocolVersion(); got != v {
		return fmt.Errorf("negotiated protocol version %q, not %q", got, v)
	}

	pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, g := range []int{1, n.Goroutines} {
		if err := echoCalls(pctx, sess, n.Warmup, g, nil, nil); err != nil {
			return fmt.Errorf("warm-up, %d goroutines: %w", g, err)
		}
		if g == 1 && s.Redis {
			row.Connect = counter.snapshot(subs)
		}
		counter.reset()
		subs.reset()
		lat := make([]time.Duration, n.Calls)
		var after func()
		var most, last int64
		if g == 1 {
			after = func() {
				rt := counter.roundTripsNow()
				most, last = max(most, rt-last), rt
			}
		}
		start := time.Now()
		err := echoCalls(pctx, sess, n.Calls, g, lat, after)
		wall := time.Since(start)
		rc := counter.snapshot(subs)
		if g == 1 {
			rc.MaxRoundTrips = &most
		}
		if err != nil {
			return fmt.Errorf("%d goroutines: %w", g, err)
		}
		ph := &instPhase{Goroutines: g, Calls: n.Calls, Seconds: wall.Seconds(), CallsPerSec: float64(n.Calls) / wall.Seconds()}
		slices.Sort(lat)
		ph.P50Us = float64(lat[len(lat)/2].Nanoseconds()) / 1e3
		ph.P99Us = float64(lat[len(lat)*99/100].Nanoseconds()) / 1e3
		if s.Redis {
			rc.RoundTripsPC = float64(rc.RoundTrips) / float64(n.Calls)
			rc.CommandsPC = float64(rc.Commands) / float64(n.Calls)
			ph.Redis = rc
		}
		if g == 1 {
			row.Sequential = ph
		} else {
			row.Concurrent = ph
		}
	}
	return nil
}

// echoCalls makes calls echo calls from g goroutines sharing the client,
// each recording its calls' durations in lat (nil: not recorded) and
// calling after, if not nil, once each call is timed.
func echoCalls(ctx context.Context, s *oursSession, calls, g int, lat []time.Duration, after func()) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for range g {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) {
					return
				}
				t := time.Now()
				got, err := s.Echo(ctx, "hello")
				if lat != nil {
					lat[i] = time.Since(t)
				}
				if after != nil {
					after()
				}
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
	close(errs)
	return <-errs
}

// roundRobinProxy is the load balancer: a reverse proxy on loopback that
// sends each request to the next instance in turn, with no affinity, and
// flushes what it relays at once (SSE).
func roundRobinProxy(insts []*instance) (*httptest.Server, error) {
	var backends []*url.URL
	for _, in := range insts {
		u, err := url.Parse(in.ts.URL)
		if err != nil {
			return nil, err
		}
		backends = append(backends, u)
	}
	var turn atomic.Uint64
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 128
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(backends[(turn.Add(1)-1)%uint64(len(backends))])
		},
		FlushInterval: -1,
		Transport:     tr,
	}
	px := httptest.NewServer(rp)
	px.Config.RegisterOnShutdown(tr.CloseIdleConnections)
	return px, nil
}

// cmdCounter is a go-redis hook that counts what the instances send to
// Redis while it is on.
type cmdCounter struct {
	mu         sync.Mutex
	roundTrips int64
	commands   int64
	dials      int64
	byName     map[string]int64
}

func newCmdCounter() *cmdCounter { return &cmdCounter{byName: map[string]int64{}} }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		c.dials++
		c.mu.Unlock()
		return next(ctx, network, addr)
	}
}

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.roundTrips++
		c.commands++
		c.byName[cmdName(cmd)]++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.roundTrips++
		for _, cmd := range cmds {
			c.commands++
			c.byName[cmdName(cmd)]++
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// cmdName is a command's name, with the subcommand for those that have one
// (CLIENT SETINFO, SCRIPT LOAD).
func cmdName(cmd redis.Cmder) string {
	name := strings.ToUpper(cmd.Name())
	switch name {
	case "CLIENT", "SCRIPT", "CONFIG", "XINFO", "OBJECT":
		if args := cmd.Args(); len(args) > 1 {
			name += " " + strings.ToUpper(fmt.Sprint(args[1]))
		}
	}
	return name
}

func (c *cmdCounter) roundTripsNow() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roundTrips
}

func (c *cmdCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roundTrips, c.commands, c.dials = 0, 0, 0
	clear(c.byName)
}

func (c *cmdCounter) snapshot(s *subCounter) *redisCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &redisCount{RoundTrips: c.roundTrips, Commands: c.commands, ByName: maps.Clone(c.byName), Dials: c.dials,
		Subscribes: s.subscribes.Load(), Unsubscribes: s.stops.Load()}
}

// subCounter counts Broadcaster.Subscribe calls and their stops.
type subCounter struct{ subscribes, stops atomic.Int64 }

func (s *subCounter) reset() { s.subscribes.Store(0); s.stops.Store(0) }

// countingBroadcaster passes everything to b and counts Subscribe calls
// and stops in n.
type countingBroadcaster struct {
	b mcp.Broadcaster
	n *subCounter
}

func (c countingBroadcaster) Publish(ctx context.Context, channel string, msg []byte) error {
	return c.b.Publish(ctx, channel, msg)
}

func (c countingBroadcaster) Subscribe(ctx context.Context, channel string, deliver func([]byte)) (func(), error) {
	c.n.subscribes.Add(1)
	stop, err := c.b.Subscribe(ctx, channel, deliver)
	if err != nil {
		return nil, err
	}
	return func() { c.n.stops.Add(1); stop() }, nil
}

// targets evaluates issue 27's targets for the Redis setups, in both
// phases: a legacy call with a cached session makes at most one round
// trip (the most one sequential call made, and the mean of each phase),
// a plain 2026-07-28 call none. A Broadcaster.Subscribe during the
// measured calls fails either: it may be a round trip the hook does not
// see.
func (r *instRun) targets() []instTarget {
	var ts []instTarget
	for _, row := range r.Rows {
		if !row.Setup.Redis {
			continue
		}
		goal, limit := "Redis round trips per call ≤ 1 (cached legacy session)", 1.0
		if row.Version >= mcp.Version20260728 {
			goal, limit = "Redis round trips per call = 0 (plain call)", 0
		}
		var got []string
		pass := row.Error == "" && row.Sequential != nil && row.Concurrent != nil
		for _, ph := range []*instPhase{row.Sequential, row.Concurrent} {
			if ph == nil || ph.Redis == nil {
				continue
			}
			rc := ph.Redis
			g := fmtPerCall(rc.RoundTripsPC)
			if rc.MaxRoundTrips != nil {
				g += fmt.Sprintf(", at most %d in one call", *rc.MaxRoundTrips)
				if float64(*rc.MaxRoundTrips) > limit {
					pass = false
				}
			}
			if rc.Subscribes > 0 {
				g += fmt.Sprintf(", %d Subscribe", rc.Subscribes)
			}
			got = append(got, g+" ("+phaseName(ph)+")")
			if rc.RoundTripsPC > limit || rc.Subscribes > 0 {
				pass = false
			}
		}
		if row.Error != "" {
			got = append(got, "error")
		}
		ts = append(ts, instTarget{row.Setup.Name, row.Version, goal, strings.Join(got, "; "), pass})
	}
	return ts
}

func phaseName(ph *instPhase) string {
	if ph.Goroutines == 1 {
		return "sequential"
	}
	return fmt.Sprintf("%d goroutines", ph.Goroutines)
}

// fmtPerCall prints a per-call count with enough digits to tell 0 from a
// rare command.
func fmtPerCall(x float64) string {
	if x == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3f", x)
}

// byNameText lists a phase's commands, most frequent first, per call
// (calls 0: totals).
func byNameText(rc *redisCount, calls int) string {
	names := slices.Collect(maps.Keys(rc.ByName))
	slices.SortFunc(names, func(a, b string) int {
		if d := rc.ByName[b] - rc.ByName[a]; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, name := range names {
		x := fmt.Sprint(rc.ByName[name])
		if calls > 0 {
			x = fmtPerCall(float64(rc.ByName[name]) / float64(calls))
		}
		parts = append(parts, name+" "+x)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (r *instRun) print(w *os.File) {
	fmt.Fprintf(w, "\n### Many instances — ours over Streamable HTTP on loopback (%s, %d CPUs", r.Go, r.CPUs)
	if r.Redis != "" {
		fmt.Fprintf(w, "; %s", r.Redis)
	}
	fmt.Fprintf(w, ")\n\n")
	fmt.Fprintf(w, "%s echo calls per phase after %d warm-up calls: one caller, then %d goroutines sharing one client",
		commas(int64(r.Counts.Calls)), r.Counts.Warmup, r.Counts.Goroutines)
	if r.Counts.SessionTimeout > 0 {
		fmt.Fprintf(w, "; session timeout %s", r.Counts.SessionTimeout)
	}
	fmt.Fprint(w, ".\n\n")
	fmt.Fprintf(w, "| setup | revision | sequential calls/s | p50 µs | p99 µs | %d goroutines calls/s | p50 µs | p99 µs | Redis round trips/call | Redis commands/call |\n", r.Counts.Goroutines)
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, row := range r.Rows {
		cols := []string{row.Setup.Name, row.Version}
		var rt, cmds []string
		for _, ph := range []*instPhase{row.Sequential, row.Concurrent} {
			if ph == nil {
				cols = append(cols, "err", "err", "err")
				continue
			}
			cols = append(cols, fmtNum(ph.CallsPerSec), fmtNum(ph.P50Us), fmtNum(ph.P99Us))
			if ph.Redis != nil {
				rt = append(rt, fmtPerCall(ph.Redis.RoundTripsPC))
				cmds = append(cmds, fmtPerCall(ph.Redis.CommandsPC))
			}
		}
		switch {
		case !row.Setup.Redis:
			rt, cmds = []string{"—"}, []string{"—"}
		case len(rt) == 0:
			rt, cmds = []string{"err"}, []string{"err"}
		}
		cols = append(cols, strings.Join(rt, " · "), strings.Join(cmds, " · "))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
	}
	if r.Redis == "" { // no setup on Redis ran
		r.printErrors(w)
		return
	}
	fmt.Fprintf(w, "\nRedis figures: sequential · %d goroutines.\n", r.Counts.Goroutines)

	fmt.Fprintln(w, "\n#### Redis on the hot path, by command (per call)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| setup | revision | phase | commands | new connections | Broadcaster.Subscribe / stop |")
	fmt.Fprintln(w, "|---|---|---|---|--:|--:|")
	for _, row := range r.Rows {
		for _, ph := range []*instPhase{row.Sequential, row.Concurrent} {
			if ph == nil || ph.Redis == nil {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %d / %d |\n", row.Setup.Name, row.Version, phaseName(ph), byNameText(ph.Redis, ph.Calls), ph.Redis.Dials, ph.Redis.Subscribes, ph.Redis.Unsubscribes)
		}
		if c := row.Connect; c != nil {
			fmt.Fprintf(w, "| %s | %s | connect + %d warm-up calls (not per call: totals) | %s | %d | %d / %d |\n", row.Setup.Name, row.Version, r.Counts.Warmup, byNameText(c, 0), c.Dials, c.Subscribes, c.Unsubscribes)
		}
	}
	fmt.Fprintln(w, "\n"+r.Counted)

	fmt.Fprintln(w, "\n### Issue 27 targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| setup | revision | target | this run | pass |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range r.Targets {
		mark := "MISS"
		if t.Pass {
			mark = "pass"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", t.Setup, t.Version, t.Goal, t.Got, mark)
	}
	r.printErrors(w)
}

func (r *instRun) printErrors(w *os.File) {
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nErrors:")
		for _, e := range r.Errors {
			fmt.Fprintln(w, "  -", e)
		}
	}
	fmt.Fprintf(w, "\nElapsed %s.\n", r.Elapsed)
}
