// Command bench runs the same MCP scenarios on this SDK
// (github.com/e6ac58cb/mcp), the official go-sdk and mcp-go, in one process
// and one run, and prints each figure with ours as a ratio to the best peer.
//
// Usage, from this directory:
//
//	go run . [-quick] [-reps 3] [-version all|2025-11-25|2026-07-28] [-json out.json]
//	go run . -instances [-n 2000] [-goroutines 16] [-setups memory,redis,redis3] [-json out.json]
//
// -instances measures ours alone as one instance in memory, one instance on
// Redis and three instances on Redis behind a round-robin proxy (issue
// 27), with a redis-server of its own; instances.go.
//
// With -serve=<sdk> the binary is instead that SDK's stdio server: the
// "stdio" carrier re-executes the binary that way as its child process.
// README.md describes the scenarios and the fairness rules.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

var adapters = []adapter{ours{}, gosdk{}, mcpgo{}}

func main() {
	var (
		serve    = flag.String("serve", "", "run as the stdio server of this SDK (ours, go-sdk, mcp-go) and exit")
		version  = flag.String("version", "all", "protocol version to pin: 2025-11-25, 2026-07-28 or all")
		reps     = flag.Int("reps", 3, "repetitions; each figure is the median")
		jsonOut  = flag.String("json", "", "write the results as JSON to this file")
		quick    = flag.Bool("quick", false, "small counts and one repetition: a smoke run of seconds")
		sdkList  = flag.String("sdks", "ours,go-sdk,mcp-go", "SDKs to run")
		carriers = flag.String("carriers", "pipe,stdio,http", "carriers to run: pipe, stdio, http")

		instances  = flag.Bool("instances", false, "instead: ours alone, one instance in memory, one on Redis, three on Redis behind a round-robin proxy (issue 27)")
		instN      = flag.Int("n", 10000, "-instances: measured echo calls per phase")
		instG      = flag.Int("goroutines", 16, "-instances: goroutines sharing the client in the concurrent phase")
		instWarm   = flag.Int("warmup", 500, "-instances: unmeasured calls before each phase")
		instSetups = flag.String("setups", "memory,redis,redis3", "-instances: setups to run: memory, redis, redis3")
		redisBin   = flag.String("redis-server", "redis-server", "-instances: the redis-server binary to start")
		instTTL    = flag.Duration("session-timeout", 0, "-instances: the handlers' WithSessionTimeout (0: the default, 10m); shorter makes the cached session's touch show")
	)
	flag.Parse()

	if *serve != "" {
		a := findAdapter(*serve)
		if a == nil {
			fmt.Fprintf(os.Stderr, "bench: unknown SDK %q\n", *serve)
			os.Exit(2)
		}
		if err := a.ServeStdio(context.Background(), *version); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s server: %v\n", *serve, err)
			os.Exit(1)
		}
		return
	}

	versions := []string{"2025-11-25", "2026-07-28"}
	if *version != "all" {
		versions = []string{*version}
	}
	if *instances {
		if *instN < 1 || *instG < 2 || *instWarm < 0 {
			fmt.Fprintln(os.Stderr, "bench: -n must be at least 1, -goroutines at least 2, -warmup at least 0")
			os.Exit(2)
		}
		n := instCounts{Calls: *instN, Goroutines: *instG, Warmup: *instWarm, SessionTimeout: *instTTL}
		if err := runInstances(context.Background(), n, versions, strings.Split(*instSetups, ","), *redisBin, *jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	n := fullCounts
	if *quick {
		n = quickCounts
		if !isFlagSet("reps") {
			*reps = 1
		}
	}
	var sdks []adapter
	for _, name := range strings.Split(*sdkList, ",") {
		a := findAdapter(strings.TrimSpace(name))
		if a == nil {
			fmt.Fprintf(os.Stderr, "bench: unknown SDK %q\n", name)
			os.Exit(2)
		}
		sdks = append(sdks, a)
	}

	r := &run{
		Started:  time.Now().UTC(),
		Go:       runtime.Version(),
		CPUs:     runtime.NumCPU(),
		Reps:     *reps,
		Counts:   n,
		Versions: versions,
		Carriers: strings.Split(*carriers, ","),
		store:    newStore(),
	}
	for _, a := range sdks {
		r.SDKs = append(r.SDKs, a.Name())
	}
	ctx := context.Background()
	for _, v := range versions {
		r.measure(ctx, v, sdks, n)
	}
	r.Elapsed = time.Since(r.Started).Round(time.Second).String()

	for _, v := range versions {
		r.printTable(os.Stdout, v)
	}
	r.printTargets(os.Stdout)
	for _, a := range sdks {
		r.Workarounds = append(r.Workarounds, a.Notes()...)
	}
	fmt.Println("\nWorkarounds and settings:")
	for _, w := range r.Workarounds {
		fmt.Println("  -", w)
	}
	if len(r.Errors) > 0 {
		fmt.Println("\nErrors:")
		for _, e := range r.Errors {
			fmt.Println("  -", e)
		}
	}
	if *jsonOut != "" {
		if err := r.writeJSON(*jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

func findAdapter(name string) adapter {
	for _, a := range adapters {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run is one invocation: its settings, what it measured and what failed.
type run struct {
	Started     time.Time `json:"started"`
	Elapsed     string    `json:"elapsed"`
	Go          string    `json:"go"`
	CPUs        int       `json:"cpus"`
	Reps        int       `json:"reps"`
	Counts      counts    `json:"counts"`
	Versions    []string  `json:"versions"`
	Carriers    []string  `json:"carriers"`
	SDKs        []string  `json:"sdks"`
	Workarounds []string  `json:"workarounds"`
	Errors      []string  `json:"errors"`
	store       *store
}

// cell addresses one figure.
type cell struct {
	version, carrier string
	m                metric
	sdk              string
}

type store struct {
	vals map[cell][]float64
	errs map[cell]string
}

func newStore() *store {
	return &store{vals: map[cell][]float64{}, errs: map[cell]string{}}
}

// median returns the median of a cell's repetitions, or NaN.
func (s *store) median(c cell) float64 {
	v := slices.Clone(s.vals[c])
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (r *run) fail(c cell, err error) {
	msg := fmt.Sprintf("%s %s %s: %v", c.version, c.carrier, c.sdk, err)
	if !slices.Contains(r.Errors, msg) {
		r.Errors = append(r.Errors, msg)
	}
	r.store.errs[c] = err.Error()
}

// measure runs every repetition of one protocol version. SDKs take turns
// within each carrier, in a rotating order, so drift spreads evenly. The
// JSON floor is measured right before ours' turn on the pipe (the first
// SDK's when ours does not run), whose round trip it is compared to, so
// that both see the machine alike; without a pipe carrier, at the end of
// the repetition. The HTTP floors likewise come right before that SDK's
// turn on HTTP.
func (r *run) measure(ctx context.Context, version string, sdks []adapter, n counts) {
	floor := func() {
		out := sample{}
		if err := runFloor(n.FloorRounds, version, out); err == nil {
			c := cell{version, "-", mFloor, "encoding/json"}
			r.store.vals[c] = append(r.store.vals[c], out[mFloor])
		}
	}
	floorBefore := sdks[0].Name() // ours when it runs
	for _, a := range sdks {
		if a.Name() == "ours" {
			floorBefore = a.Name()
		}
	}
	for rep := range r.Reps {
		for _, carrier := range r.Carriers {
			for i := range sdks {
				a := sdks[(i+rep)%len(sdks)]
				if carrier == "pipe" && a.Name() == floorBefore {
					floor()
				}
				if carrier == "http" && a.Name() == floorBefore {
					r.measureHTTPFloors(ctx, version, n)
				}
				t := time.Now()
				err := r.measureCarrier(ctx, a, carrier, version, n)
				status := "ok"
				if err != nil {
					status = err.Error()
				}
				fmt.Fprintf(os.Stderr, "[%s rep %d/%d] %-5s %-6s %5.1fs %s\n", version, rep+1, r.Reps, carrier, a.Name(), time.Since(t).Seconds(), status)
			}
		}
		if version < "2026-07-28" && slices.Contains(r.Carriers, "http") {
			for i := range sdks {
				a := sdks[(i+rep)%len(sdks)]
				t := time.Now()
				err := r.measureSessions(ctx, a, version, n)
				status := "ok"
				if err != nil {
					status = err.Error()
				}
				fmt.Fprintf(os.Stderr, "[%s rep %d/%d] %d sessions %-6s %5.1fs %s\n", version, rep+1, r.Reps, n.Sessions, a.Name(), time.Since(t).Seconds(), status)
			}
		}
		if !slices.Contains(r.Carriers, "pipe") {
			floor()
		}
		out := sample{}
		if slices.Contains(r.Carriers, "http") {
			c := cell{version, "http", mSleepFloor, "net/http"}
			if err := runSleepFloor(n, out); err != nil {
				r.fail(c, err)
			} else {
				r.store.vals[c] = append(r.store.vals[c], out[mSleepFloor])
			}
		}
	}
}

// measureHTTPFloors measures the net/http floor and the same floor with the
// JSON in place, one after the other.
func (r *run) measureHTTPFloors(ctx context.Context, version string, n counts) {
	floors := []struct {
		name string
		run  func(sample) error
	}{
		{"net/http", func(out sample) error { return runHTTPFloor(ctx, version, n, out) }},
		{"net/http+json", func(out sample) error { return runHTTPJSONFloor(ctx, version, n, out) }},
	}
	for _, f := range floors {
		out := sample{}
		if err := f.run(out); err != nil {
			r.fail(cell{version, "http", mSeqRate, f.name}, err)
		}
		for _, m := range httpFloorTable {
			if v, ok := out[m]; ok {
				c := cell{version, "http", m, f.name}
				r.store.vals[c] = append(r.store.vals[c], v)
			}
		}
	}
}

// httpFloorTable lists the figures taken on the HTTP carrier with no SDK.
var httpFloorTable = []metric{mSeqRate, mBytes, mAllocs, mConcRate}

func (r *run) measureCarrier(ctx context.Context, a adapter, carrier, version string, n counts) error {
	record := func(out sample, err error) {
		for _, m := range carrierTable {
			c := cell{version, carrier, m, a.Name()}
			if v, ok := out[m]; ok {
				r.store.vals[c] = append(r.store.vals[c], v)
			} else if err != nil {
				r.fail(c, err)
			}
		}
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := a.Open(octx, carrier, version)
	cancel()
	if err != nil {
		record(nil, fmt.Errorf("connect: %w", err))
		return err
	}
	defer s.Close()
	if got := s.Version(); got != version {
		err := fmt.Errorf("negotiated protocol version %q, not %q", got, version)
		record(nil, err)
		return err
	}
	out, err := runCarrier(ctx, s, n)
	record(out, err)
	return err
}

func (r *run) measureSessions(ctx context.Context, a adapter, version string, n counts) error {
	ms := []metric{mSessOpen, mSessHeap, mSessGor}
	h, err := a.LegacyHandler()
	if err == nil {
		out := sample{}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = runSessions(sctx, h, n.Sessions, out)
		cancel()
		if err == nil {
			for _, m := range ms {
				c := cell{version, "http", m, a.Name()}
				r.store.vals[c] = append(r.store.vals[c], out[m])
			}
			return nil
		}
	}
	for _, m := range ms {
		r.fail(cell{version, "http", m, a.Name()}, err)
	}
	return err
}

// ratio compares ours with the best peer: above 1 means ours is better, for
// either direction of metric. ok is false when a figure is missing.
func (r *run) ratio(version, carrier string, m metric) (ratio float64, best string, ok bool) {
	o := r.store.median(cell{version, carrier, m, "ours"})
	bestV := math.NaN()
	for _, sdk := range r.SDKs {
		if sdk == "ours" {
			continue
		}
		v := r.store.median(cell{version, carrier, m, sdk})
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(bestV) || (m.Higher && v > bestV) || (!m.Higher && v < bestV) {
			bestV, best = v, sdk
		}
	}
	if math.IsNaN(o) || math.IsNaN(bestV) {
		return 0, best, false
	}
	if m.Higher {
		if bestV == 0 {
			return math.Inf(1), best, true
		}
		return o / bestV, best, true
	}
	if o == 0 {
		if bestV == 0 {
			return 1, best, true
		}
		return math.Inf(1), best, true
	}
	return bestV / o, best, true
}

// fmtNum prints a figure with a precision that suits its size.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.Abs(v) >= 1000:
		return commas(int64(math.Round(v)))
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtRatio(x float64, ok bool) string {
	if !ok {
		return "—"
	}
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.2f×", x)
}

// cellText is a cell's median, or "err" / "n/a" when it has none.
func (r *run) cellText(c cell) string {
	v := r.store.median(c)
	if !math.IsNaN(v) {
		return fmtNum(v)
	}
	if e, ok := r.store.errs[c]; ok {
		if strings.Contains(e, errUnsupported.Error()) {
			return "n/a"
		}
		return "err"
	}
	return "—"
}

// printTable prints one protocol version's figures as a Markdown table.
func (r *run) printTable(w *os.File, version string) {
	fmt.Fprintf(w, "\n### Protocol %s — median of %d (%s, %d CPUs)\n\n", version, r.Reps, r.Go, r.CPUs)
	fmt.Fprintf(w, "| carrier | scenario | metric | unit | %s | ours vs best peer |\n", strings.Join(r.SDKs, " | "))
	fmt.Fprintf(w, "|---|---|---|---|%s---|\n", strings.Repeat("--:|", len(r.SDKs)))
	row := func(carrier string, m metric) {
		cols := make([]string, 0, len(r.SDKs))
		for _, sdk := range r.SDKs {
			cols = append(cols, r.cellText(cell{version, carrier, m, sdk}))
		}
		x, best, ok := r.ratio(version, carrier, m)
		rt := fmtRatio(x, ok)
		if ok {
			rt += " (" + best + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", carrier, m.Scenario, m.Name, m.Unit, strings.Join(cols, " | "), rt)
	}
	for _, carrier := range r.Carriers {
		for _, m := range carrierTable {
			row(carrier, m)
		}
	}
	if version < "2026-07-28" && slices.Contains(r.Carriers, "http") {
		for _, m := range []metric{mSessOpen, mSessHeap, mSessGor} {
			row("http", m)
		}
	}
	if slices.Contains(r.Carriers, "http") {
		fmt.Fprintf(w, "| http | 64 × sleep(100ms), net/http floor (raw client, no SDK) | width | calls | %s |  |\n", fmtNum(r.store.median(cell{version, "http", mSleepFloor, "net/http"})))
		for _, m := range httpFloorTable {
			fmt.Fprintf(w, "| http | %s, net/http floor (raw client, no SDK, no JSON) | %s | %s | %s |  |\n", m.Scenario, m.Name, m.Unit, fmtNum(r.store.median(cell{version, "http", m, "net/http"})))
		}
		for _, m := range httpFloorTable {
			fmt.Fprintf(w, "| http | %s, net/http floor with the JSON in place (no SDK) | %s | %s | %s |  |\n", m.Scenario, m.Name, m.Unit, fmtNum(r.store.median(cell{version, "http", m, "net/http+json"})))
		}
	}
	fmt.Fprintf(w, "| - | JSON floor (encoding/json, no SDK) | round trip | µs | %s |  |\n", fmtNum(r.store.median(cell{version, "-", mFloor, "encoding/json"})))
	if slices.Contains(r.Carriers, "http") {
		for _, m := range []metric{mSeqRate, mConcRate} {
			limit, share := r.httpLimit(version, m, "ours")
			_, inPlace := r.httpLimit(version, m, "net/http+json")
			ours := "—"
			if !math.IsNaN(share) {
				ours = fmt.Sprintf("ours %.0f%% of it", 100*share)
			}
			if !math.IsNaN(inPlace) {
				ours += fmt.Sprintf("; the floor with the JSON in place %.0f%%", 100*inPlace)
			}
			fmt.Fprintf(w, "| http | %s, limit (net/http floor + JSON round trip) | calls/s | calls/s | %s | %s |\n", m.Scenario, fmtNum(limit), ours)
		}
	}
	fmt.Fprintf(w, "\nRatios above 1 favour ours. Bytes and allocations per call count both ends on pipe and http, the client only on stdio (the server is a child process). Progress streams %s notifications in one call.\n", commas(int64(r.Counts.Progress)))
}

// httpLimit is what an echo over HTTP can reach at most, sequential or
// with 64 goroutines (m): the net/http floor's time per call plus one JSON
// round trip (the JSON floor), 1/(1/floor + round trip) calls/s, and sdk's
// calls/s as a share of it; NaN where a figure is missing.
func (r *run) httpLimit(version string, m metric, sdk string) (limit, share float64) {
	floor := r.store.median(cell{version, "http", m, "net/http"})
	roundTrip := r.store.median(cell{version, "-", mFloor, "encoding/json"}) / 1e6
	limit = 1 / (1/floor + roundTrip)
	return limit, r.store.median(cell{version, "http", m, sdk}) / limit
}

// limitJSON is httpLimit in the JSON output: the limit, ours' share of it
// and the share the net/http floor with the JSON in place reaches.
type limitJSON struct {
	Version      string   `json:"version"`
	Scenario     string   `json:"scenario"`
	Limit        float64  `json:"callsPerSecond"`
	Share        *float64 `json:"oursShare,omitempty"`
	InPlaceShare *float64 `json:"jsonInPlaceShare,omitempty"`
}

// target is one of issue 37's targets, checked against this run.
type target struct {
	Version string `json:"version"`
	Carrier string `json:"carrier"`
	Goal    string `json:"goal"`
	Got     string `json:"got"`
	Pass    bool   `json:"pass"`
}

// targets evaluates issue 37's targets on the medians: over HTTP, calls/s
// as a share of the limit (httpLimit) and bytes per call against the
// net/http floor's; on pipe and stdio, against the best peer (and issue
// 23's bytes per call there, still held).
func (r *run) targets() []target {
	var ts []target
	add := func(version, carrier, goal, got string, pass bool) {
		ts = append(ts, target{version, carrier, goal, got, pass})
	}
	med := func(version, carrier string, m metric, sdk string) float64 {
		return r.store.median(cell{version, carrier, m, sdk})
	}
	for _, v := range r.Versions {
		for _, c := range r.Carriers {
			if c == "http" {
				for _, m := range []metric{mSeqRate, mConcRate} {
					limit, share := r.httpLimit(v, m, "ours")
					_, inPlace := r.httpLimit(v, m, "net/http+json")
					add(v, c, m.Scenario+" ≥ 90% of the limit (net/http floor + JSON round trip)",
						fmt.Sprintf("%.0f%% (%s of %s calls/s; the floor with the JSON in place %.0f%%)", 100*share, fmtNum(med(v, c, m, "ours")), fmtNum(limit), 100*inPlace),
						share >= 0.9)
				}
				o, f := med(v, c, mBytes, "ours"), med(v, c, mBytes, "net/http")
				add(v, c, "bytes per echo call ≤ 1.2× the net/http floor's", fmt.Sprintf("%.2f× (%s B against %s B)", o/f, fmtNum(o), fmtNum(f)), o/f <= 1.2)
			} else {
				for _, g := range []struct {
					m    metric
					goal string
					want float64
				}{
					{mSeqRate, "sequential echo ≥ 2.5× best peer", 2.5},
					{mConcRate, "64 goroutines ≥ 2.5× best peer", 2.5},
					{mBytes, "bytes per echo call ≤ ⅓ best peer", 3},
				} {
					x, best, ok := r.ratio(v, c, g.m)
					add(v, c, g.goal, fmtRatio(x, ok)+" vs "+best, ok && x >= g.want)
				}
			}
			x, best, ok := r.ratio(v, c, mProgRate)
			total, before := med(v, c, mProgTotal, "ours"), med(v, c, mProgBefore, "ours")
			full := float64(r.Counts.Progress)
			add(v, c, "progress ≥ 2.5× best peer, all delivered before return",
				fmt.Sprintf("%s vs %s; %s/%s delivered, %s before return", fmtRatio(x, ok), best, fmtNum(total), fmtNum(full), fmtNum(before)),
				ok && x >= 2.5 && total == full && before == full)
			o, g := med(v, c, mBigRate, "ours"), med(v, c, mBigRate, "go-sdk")
			add(v, c, "1 MiB echo ≥ 3.5× go-sdk", fmtRatio(o/g, !math.IsNaN(o/g)), o/g >= 3.5)
			w := med(v, c, mSleepWidth, "ours")
			got := fmtNum(w)
			if c == "http" {
				got += " (net/http floor " + fmtNum(med(v, c, mSleepFloor, "net/http")) + ")"
			}
			add(v, c, "64 × sleep width ≥ 60", got, w >= 60)
		}
		if v < "2026-07-28" && slices.Contains(r.Carriers, "http") {
			h, gr := med(v, "http", mSessHeap, "ours"), med(v, "http", mSessGor, "ours")
			add(v, "http", "idle legacy session ≤ 4 KiB heap, 0 goroutines", fmt.Sprintf("%s B, %s goroutines", fmtNum(h), fmtNum(gr)), h <= 4096 && gr < 0.005)
		}
	}
	return ts
}

func (r *run) printTargets(w *os.File) {
	fmt.Fprintln(w, "\n### Issue 37 targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| version | carrier | target | this run | pass |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range r.targets() {
		mark := "MISS"
		if t.Pass {
			mark = "pass"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", t.Version, t.Carrier, t.Goal, t.Got, mark)
	}
}

// resultJSON is one figure in the JSON output.
type resultJSON struct {
	Version        string    `json:"version"`
	Carrier        string    `json:"carrier"`
	Scenario       string    `json:"scenario"`
	Metric         string    `json:"metric"`
	Unit           string    `json:"unit"`
	HigherIsBetter bool      `json:"higherIsBetter"`
	SDK            string    `json:"sdk"`
	Values         []float64 `json:"values,omitempty"`
	Median         *float64  `json:"median,omitempty"`
	Error          string    `json:"error,omitempty"`
}

func (r *run) writeJSON(path string) error {
	var results []resultJSON
	seen := map[cell]bool{}
	cells := make([]cell, 0, len(r.store.vals)+len(r.store.errs))
	for c := range r.store.vals {
		cells = append(cells, c)
	}
	for c := range r.store.errs {
		cells = append(cells, c)
	}
	slices.SortFunc(cells, func(a, b cell) int {
		return strings.Compare(a.version+a.carrier+a.m.Scenario+a.m.Name+a.sdk, b.version+b.carrier+b.m.Scenario+b.m.Name+b.sdk)
	})
	for _, c := range cells {
		if seen[c] {
			continue
		}
		seen[c] = true
		res := resultJSON{Version: c.version, Carrier: c.carrier, Scenario: c.m.Scenario, Metric: c.m.Name, Unit: c.m.Unit, HigherIsBetter: c.m.Higher, SDK: c.sdk, Values: r.store.vals[c], Error: r.store.errs[c]}
		if m := r.store.median(c); !math.IsNaN(m) {
			res.Median = &m
		}
		results = append(results, res)
	}
	var limits []limitJSON
	if slices.Contains(r.Carriers, "http") {
		for _, v := range r.Versions {
			for _, m := range []metric{mSeqRate, mConcRate} {
				limit, share := r.httpLimit(v, m, "ours")
				if math.IsNaN(limit) {
					continue
				}
				_, inPlace := r.httpLimit(v, m, "net/http+json")
				l := limitJSON{Version: v, Scenario: m.Scenario, Limit: limit}
				if !math.IsNaN(share) {
					l.Share = &share
				}
				if !math.IsNaN(inPlace) {
					l.InPlaceShare = &inPlace
				}
				limits = append(limits, l)
			}
		}
	}
	doc := struct {
		*run
		Results []resultJSON `json:"results"`
		Targets []target     `json:"targets"`
		Limits  []limitJSON  `json:"httpLimits,omitempty"`
	}{r, results, r.targets(), limits}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
