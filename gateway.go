package mcp

import (
	"encoding/json"
	"fmt"
	"sync"
)

// ClientGateway is how a server handler talks back to the client that sent
// the request: notifications, progress, log messages, and asks (elicitation,
// sampling, roots). Everything it sends belongs to the request it was
// obtained from, so on Streamable HTTP it rides that request's stream.
type ClientGateway struct {
	req *RequestInfo

	mu           sync.Mutex
	lastProgress float64
	sentProgress bool
}

// Gateway returns the gateway to the client that sent this request.
func (r *RequestInfo) Gateway() *ClientGateway {
	if r.gateway == nil {
		r.gateway = &ClientGateway{req: r}
	}
	return r.gateway
}

// Notify sends a notification to the client, fire and forget: it returns
// once the notification is queued for writing.
func (g *ClientGateway) Notify(method string, params any) error {
	return g.req.conn.notify(method, params, g.req.id, g.req.route)
}

// Progress reports progress on the request, if the client asked for it by
// sending a progress token; otherwise it does nothing. progress must
// increase with every call: a value not above the last one is an error and
// is not sent. total and message may be zero values when unknown.
func (g *ClientGateway) Progress(progress, total float64, message string) error {
	if len(g.req.token) == 0 {
		return nil
	}
	g.mu.Lock()
	if g.sentProgress && progress <= g.lastProgress {
		last := g.lastProgress
		g.mu.Unlock()
		return fmt.Errorf("mcp: progress must increase: %g does not follow %g", progress, last)
	}
	g.sentProgress, g.lastProgress = true, progress
	g.mu.Unlock()
	return g.Notify("notifications/progress", progressParams{Token: json.RawMessage(g.req.token), Progress: progress, Total: total, Message: message})
}
