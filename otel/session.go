package mcpotel

import (
	"context"

	"github.com/e6ac58cb/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ClientSessionEnded records a client's session in
// mcp.client.session.duration. Give it to [mcp.WithSessionEndHandler] on
// the client: an [mcp.SessionEnd] does not say which side it comes from,
// so each side has its method. Client side.
func (t *Telemetry) ClientSessionEnded(e mcp.SessionEnd) { recordSession(t.clientSession, e) }

// ServerSessionEnded records a server's session in
// mcp.server.session.duration. Give it to [mcp.WithSessionEndHandler] on
// the server. Server side.
func (t *Telemetry) ServerSessionEnded(e mcp.SessionEnd) { recordSession(t.serverSession, e) }

// recordSession records a session's duration with its revision and, when
// it ended with an error, the error's class.
func recordSession(h metric.Float64Histogram, e mcp.SessionEnd) {
	attrs := make([]attribute.KeyValue, 0, 3)
	if e.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(e.ProtocolVersion))
	}
	if e.Err != nil {
		attrs = outcomeOf(context.Background(), false, "", nil, e.Err).append(attrs)
	}
	h.Record(context.Background(), e.Duration.Seconds(), metric.WithAttributes(attrs...))
}
