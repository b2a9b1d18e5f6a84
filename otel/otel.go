package mcpotel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/e6ac58cb/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// scope names this package to the tracer and meter providers.
const scope = "github.com/e6ac58cb/mcp/otel"

// durationBuckets are the explicit bucket boundaries, in seconds, the
// conventions give all four MCP duration histograms.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Telemetry makes the spans and metrics of MCP operations on one or more
// peers. It is safe for concurrent use; one Telemetry may serve a client
// and a server in the same process. Both sides.
type Telemetry struct {
	tracer        trace.Tracer
	propagator    propagation.TextMapPropagator
	fields        []string // the propagator's fields, read once
	clientOp      metric.Float64Histogram
	serverOp      metric.Float64Histogram
	clientSession metric.Float64Histogram
	serverSession metric.Float64Histogram
}

// An Option configures [New]. Both sides.
type Option func(*config)

type config struct {
	tracers    trace.TracerProvider
	meters     metric.MeterProvider
	propagator propagation.TextMapPropagator
}

// WithTracerProvider makes the spans with tp rather than the global tracer
// provider. Both sides.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithMeterProvider records the metrics with mp rather than the global
// meter provider. Both sides.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithPropagator carries the trace context in params._meta with p rather
// than W3C Trace Context alone: give it a composite with
// propagation.Baggage to carry baggage too, or otel.GetTextMapPropagator()
// to use the global one. Both sides.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

// New returns a Telemetry that uses the global tracer and meter providers
// and W3C Trace Context unless options say otherwise. Both sides.
func New(opts ...Option) *Telemetry {
	c := config{tracers: otel.GetTracerProvider(), meters: otel.GetMeterProvider(), propagator: propagation.TraceContext{}}
	for _, o := range opts {
		o(&c)
	}
	meter := c.meters.Meter(scope, metric.WithSchemaURL(semconv.SchemaURL))
	return &Telemetry{
		tracer:     c.tracers.Tracer(scope, trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: c.propagator,
		fields:     c.propagator.Fields(),
		clientOp: histogram(meter, "mcp.client.operation.duration",
			"The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."),
		serverOp: histogram(meter, "mcp.server.operation.duration",
			"MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		clientSession: histogram(meter, "mcp.client.session.duration", "The duration of the MCP session as observed on the MCP client."),
		serverSession: histogram(meter, "mcp.server.session.duration", "The duration of the MCP session as observed on the MCP server."),
	}
}

// histogram makes one of the duration histograms. An error (the meter
// refusing the instrument) goes to OpenTelemetry's error handler; the
// instrument returned then records nothing.
func histogram(m metric.Meter, name, description string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(description),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	return h
}

// Outbound returns the middleware for what a peer sends: a client's calls
// and notifications, a server's asks and notifications. Each message gets a
// CLIENT span, a child of the span in the caller's context, whose trace
// context goes in the message's params._meta, and its duration goes to
// mcp.client.operation.duration. Give it to [mcp.WithOutboundMiddleware].
// Both sides.
func (t *Telemetry) Outbound() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			start := time.Now()
			op := newOperation(req, readParams(req.Params))
			ctx, span := t.tracer.Start(ctx, op.spanName(), trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(op.spanAttributes()...), trace.WithTimestamp(start))
			c := propagation.MapCarrier{}
			t.propagator.Inject(ctx, c)
			if len(c) > 0 {
				sent := *req
				sent.Params = injectMeta(req.Params, c, t.fields)
				req = &sent
			}
			result, err := next(ctx, req)
			t.end(ctx, span, &op, false, start, result, err, t.clientOp)
			return result, err
		}
	}
}

// Inbound returns the middleware for what a peer receives: a server's
// every method, a client's answers to the server's asks and its
// notification handlers. Each message gets a SERVER span whose parent is
// the trace context in its params._meta (the sender's CLIENT span) and
// that links the span already in the handler's context, if another, and
// its duration goes to mcp.server.operation.duration. The handler's
// context carries the span. Give it to [mcp.WithInboundMiddleware]. Both
// sides.
func (t *Telemetry) Inbound() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			start := time.Now()
			p := readParams(req.Params)
			op := newOperation(req, p)
			opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(op.spanAttributes()...), trace.WithTimestamp(start)}
			if c := p.carrier(t.fields); c != nil {
				ambient := trace.SpanContextFromContext(ctx)
				ctx = t.propagator.Extract(ctx, c)
				if parent := trace.SpanContextFromContext(ctx); ambient.IsValid() && !ambient.Equal(parent) {
					opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
				}
			}
			ctx, span := t.tracer.Start(ctx, op.spanName(), opts...)
			defer func() {
				// The engine answers a handler's panic as an internal
				// error; the span ends as that answer says.
				if p := recover(); p != nil {
					t.end(ctx, span, &op, true, start, nil, fmt.Errorf("handler panicked: %v", p), t.serverOp)
					panic(p)
				}
			}()
			result, err := next(ctx, req)
			t.end(ctx, span, &op, true, start, result, err, t.serverOp)
			return result, err
		}
	}
}

// end ends an operation's span and records its duration.
func (t *Telemetry) end(ctx context.Context, span trace.Span, op *operation, inbound bool, start time.Time, result []byte, err error, h metric.Float64Histogram) {
	elapsed := time.Since(start)
	out := outcomeOf(ctx, inbound, op.method, result, err)
	if op.version == "" && op.method == "initialize" && err == nil {
		if op.version = resultVersion(result); op.version != "" {
			span.SetAttributes(semconv.McpProtocolVersion(op.version))
		}
	}
	if out.errorType != "" {
		span.SetAttributes(out.append(nil)...)
		span.SetStatus(codes.Error, out.description)
	}
	span.End(trace.WithTimestamp(start.Add(elapsed)))
	h.Record(ctx, elapsed.Seconds(), metric.WithAttributes(op.metricAttributes(out)...))
}
