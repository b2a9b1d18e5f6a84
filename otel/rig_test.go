package mcpotel

import (
	"context"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// peer is one side's telemetry, exported to memory: the client and the
// server each have their own, so a parent links them only through the
// messages.
type peer struct {
	tel     *Telemetry
	spans   *spanLog
	metrics *sdkmetric.ManualReader
	tp      *sdktrace.TracerProvider
	ended   chan mcp.SessionEnd // each session's end, once recorded
}

func newPeer() *peer {
	p := &peer{spans: newSpanLog(), metrics: sdkmetric.NewManualReader(), ended: make(chan mcp.SessionEnd, 16)}
	p.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p.spans))
	p.tel = New(WithTracerProvider(p.tp), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.metrics))))
	return p
}

// serverOptions and clientOptions wire the telemetry in, as the package
// doc shows, and tell p.ended of each session's end once it is recorded.
func (p *peer) serverOptions(more ...mcp.ServerOption) []mcp.ServerOption {
	return append([]mcp.ServerOption{mcp.WithInboundMiddleware(p.tel.Inbound()), mcp.WithOutboundMiddleware(p.tel.Outbound()),
		mcp.WithSessionEndHandler(p.sessionEnded(p.tel.ServerSessionEnded))}, more...)
}

func (p *peer) clientOptions(more ...mcp.ClientOption) []mcp.ClientOption {
	return append([]mcp.ClientOption{mcp.WithInboundMiddleware(p.tel.Inbound()), mcp.WithOutboundMiddleware(p.tel.Outbound()),
		mcp.WithSessionEndHandler(p.sessionEnded(p.tel.ClientSessionEnded))}, more...)
}

func (p *peer) sessionEnded(record func(mcp.SessionEnd)) func(mcp.SessionEnd) {
	return func(e mcp.SessionEnd) {
		record(e)
		select {
		case p.ended <- e:
		default:
		}
	}
}

// spanLog keeps the spans that ended and wakes those waiting for one.
type spanLog struct {
	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	changed chan struct{}
}

func newSpanLog() *spanLog { return &spanLog{changed: make(chan struct{})} }

func (l *spanLog) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (l *spanLog) Shutdown(context.Context) error                  { return nil }
func (l *spanLog) ForceFlush(context.Context) error                { return nil }

func (l *spanLog) OnEnd(s sdktrace.ReadOnlySpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans = append(l.spans, s)
	close(l.changed)
	l.changed = make(chan struct{})
}

// named returns the ended spans named name, of kind.
func (l *spanLog) named(name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sdktrace.ReadOnlySpan
	for _, s := range l.spans {
		if s.Name() == name && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// wait returns the spans named name, of kind, once n have ended. A span
// that never ends fails the test (in a synctest bubble, as soon as
// everything else is blocked).
func (l *spanLog) wait(t testing.TB, n int, name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		if got := l.named(name, kind); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("waited for %d %s spans named %q; have %d among %v", n, kind, name, len(l.named(name, kind)), l.names())
		}
	}
}

// one waits for the one span named name, of kind.
func (l *spanLog) one(t testing.TB, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	got := l.wait(t, 1, name, kind)
	if len(got) != 1 {
		t.Fatalf("%d %s spans named %q, want one", len(got), kind, name)
	}
	return got[0]
}

func (l *spanLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.spans {
		out = append(out, s.SpanKind().String()+" "+s.Name())
	}
	return out
}

// connect serves srv and connects cl to it over transport ("stdio": the
// newline-delimited framing on OS-less pipes; "http": Streamable HTTP on
// loopback). Cleanup closes the client and waits for the server.
func connect(t testing.TB, transport string, srv *mcp.Server, cl *mcp.Client) {
	t.Helper()
	ctx := context.Background()
	switch transport {
	case "stdio":
		toClient, fromServer := io.Pipe()
		toServer, fromClient := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, mcp.NewIOTransport(toServer, fromServer)) }()
		if err := cl.Connect(ctx, mcp.NewIOTransport(toClient, fromClient)); err != nil {
			t.Fatalf("Connect over stdio: %v", err)
		}
		t.Cleanup(func() {
			cl.Close()
			fromClient.Close()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	case "http":
		ts := httptest.NewServer(mcp.NewHTTPHandler(srv))
		if err := cl.Connect(ctx, mcp.NewHTTPTransport(ts.URL)); err != nil {
			t.Fatalf("Connect over HTTP: %v", err)
		}
		t.Cleanup(func() {
			cl.Close()
			ts.Close()
		})
	default:
		t.Fatalf("no transport %q", transport)
	}
}

// attrs returns a span's attributes as a map.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// histogramPoints returns the data points of the histogram named name,
// failing the test if it is not one in seconds with the conventions'
// buckets.
func histogramPoints(t testing.TB, r *sdkmetric.ManualReader, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if sm.Scope.Name != scope || m.Unit != "s" {
				t.Errorf("%s: scope %q unit %q, want %q and s", name, sm.Scope.Name, m.Unit, scope)
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
			}
			for _, dp := range h.DataPoints {
				if !slices.Equal(dp.Bounds, durationBuckets) {
					t.Errorf("%s: bounds %v, want %v", name, dp.Bounds, durationBuckets)
				}
			}
			return h.DataPoints
		}
	}
	return nil
}

// pointWith returns the data point whose attributes are exactly want.
func pointWith(t testing.TB, points []metricdata.HistogramDataPoint[float64], name string, want map[string]string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var seen []map[string]string
	for _, dp := range points {
		got := attrs(dp.Attributes.ToSlice())
		if maps.Equal(got, want) {
			return dp
		}
		seen = append(seen, got)
	}
	t.Fatalf("%s: no data point with attributes %v; have %v", name, want, seen)
	return metricdata.HistogramDataPoint[float64]{}
}
