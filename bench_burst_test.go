//go:build unix

package mcp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// burstStarts records when each handler of a burst started its sleep.
type burstStarts struct {
	mu sync.Mutex
	at []time.Time
}

func (s *burstStarts) mark() {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
}

// since returns the first and last start after t0, in milliseconds, and
// forgets them.
func (s *burstStarts) since(t0 time.Time) (first, last float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := make([]float64, len(s.at))
	for i, t := range s.at {
		ms[i] = float64(t.Sub(t0)) / 1e6
	}
	s.at = s.at[:0]
	if len(ms) == 0 {
		return 0, 0
	}
	return slices.Min(ms), slices.Max(ms)
}

// burstCalls calls of a tool that sleeps burstSleep make a burst, as in
// the bench's 64 × sleep(100 ms).
const burstCalls, burstSleep = 64, 100 * time.Millisecond

// BenchmarkHTTPBurst measures what the bench's HTTP 64 × sleep(100 ms)
// width is made of, ours beside net/http's floor (a handler that only
// sleeps, 64 raw clients on connections of their own), with the client and
// the server in this process: each iteration pauses ("after-calls":
// sequential echo calls for 1 s; "after-big": 1 MiB echo calls for 1 s, as
// the bench's 1 MiB echo comes before its burst; "back-to-back": 1 ms
// idle), collects garbage (as the bench does before its burst), then times
// one burst. Reported, as medians over the iterations: the width, the
// process's CPU and page faults for the burst, when the first and the last
// handler started their sleep after the burst began, and the tail: how
// long the burst went on after the last-started sleep was due to end.
// Run it with -benchtime 12x or so: an iteration takes over a second.
func BenchmarkHTTPBurst(b *testing.B) {
	// A pause lasts length: echo calls with args for that long, or idle
	// when args is nil (the floor, which has no SDK client, always idles).
	pauses := []struct {
		name   string
		length time.Duration
		args   any
	}{
		{"after-calls", time.Second, benchEchoArgs{Text: "hello"}},
		{"after-big", time.Second, benchEchoArgs{Text: strings.Repeat("x", 1<<20)}},
		{"back-to-back", time.Millisecond, nil},
	}
	for _, p := range pauses {
		for _, v := range benchVersions {
			b.Run(p.name+"/ours/"+v, func(b *testing.B) {
				var starts burstStarts
				srv := benchServer(WithProtocolVersion(v))
				srv.AddTool(Tool{Name: "marked-sleep"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
					starts.mark()
					return benchSleepTool(ctx, req)
				})
				ts := httptest.NewServer(NewHTTPHandler(srv))
				defer ts.Close()
				cl := NewClient(Implementation{Name: "bench-client", Version: "1.0.0"}, WithProtocolVersion(v))
				if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				burst := func() {
					var wg sync.WaitGroup
					for range burstCalls {
						wg.Go(func() {
							if _, err := cl.CallTool(context.Background(), "marked-sleep", map[string]int{"ms": int(burstSleep / time.Millisecond)}); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
				burst() // connections and workers for 64 callers
				pause := func() { time.Sleep(p.length) }
				if p.args != nil {
					pause = func() {
						for end := time.Now().Add(p.length); time.Now().Before(end); {
							cl.CallTool(context.Background(), "echo", p.args)
						}
					}
				}
				measureBursts(b, &starts, pause, burst)
			})
		}
		b.Run(p.name+"/net-http-floor", func(b *testing.B) {
			var starts burstStarts
			answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept"}]}}`)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				starts.mark()
				time.Sleep(burstSleep)
				w.Header().Set("Content-Type", "application/json")
				w.Write(answer)
			}))
			defer ts.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":` + strconv.Itoa(int(burstSleep/time.Millisecond)) + `}}}`
			request := []byte("POST / HTTP/1.1\r\nHost: " + ts.Listener.Addr().String() +
				"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
				strconv.Itoa(len(body)) + "\r\n\r\n" + body)
			conns := make([]net.Conn, burstCalls)
			for i := range conns {
				c, err := net.Dial("tcp", ts.Listener.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				conns[i] = c
			}
			burst := func() {
				var wg sync.WaitGroup
				for _, c := range conns {
					wg.Go(func() {
						if _, err := c.Write(request); err != nil {
							b.Error(err)
							return
						}
						buf := make([]byte, 1024)
						for got := 0; !bytes.HasSuffix(buf[:got], answer); {
							n, err := c.Read(buf[got:])
							if err != nil {
								b.Error(err)
								return
							}
							got += n
						}
					})
				}
				wg.Wait()
			}
			burst() // the server's connection goroutines
			// The floor has no SDK client to make calls with: it pauses
			// idle for as long as the others pause.
			measureBursts(b, &starts, func() { time.Sleep(p.length) }, burst)
		})
	}
}

// perfCtl, when PERFCTL names a perf control FIFO, confines a perf record
// to the timed bursts:
//
//	mkfifo /tmp/pctl
//	PERFCTL=/tmp/pctl perf record -D -1 --control fifo:/tmp/pctl -e page-faults -g ./mcp.test -test.bench HTTPBurst ...
var perfCtl, _ = os.OpenFile(os.Getenv("PERFCTL"), os.O_WRONLY, 0)

// measureBursts runs pause and then a timed burst b.N times and reports the
// medians of BenchmarkHTTPBurst.
func measureBursts(b *testing.B, starts *burstStarts, pause, burst func()) {
	var width, cpu, first, last, tail, faults []float64
	starts.since(time.Now()) // the warm-up's
	for b.Loop() {
		b.StopTimer()
		pause()
		starts.since(time.Now()) // the pause's, if any
		runtime.GC()
		b.StartTimer()
		if perfCtl != nil {
			perfCtl.WriteString("enable\n")
		}
		c0, f0 := processUsage()
		t0 := time.Now()
		burst()
		wall := time.Since(t0)
		c1, f1 := processUsage()
		if perfCtl != nil {
			perfCtl.WriteString("disable\n")
		}
		used := c1 - c0
		faults = append(faults, float64(f1-f0))
		f, l := starts.since(t0)
		width = append(width, burstCalls*float64(burstSleep)/float64(wall))
		cpu = append(cpu, float64(used)/1e6)
		first, last = append(first, f), append(last, l)
		tail = append(tail, float64(wall-burstSleep)/1e6-l)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(width), "width")
	b.ReportMetric(median(cpu), "cpu-ms/burst")
	b.ReportMetric(median(first), "first-start-ms")
	b.ReportMetric(median(last), "last-start-ms")
	b.ReportMetric(median(tail), "tail-ms")
	b.ReportMetric(median(faults), "faults")
}
