package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrInputRequired is returned by an ask (Elicit, Sample, ListRoots) on the
// 2026-07-28 revision when the client has not answered it yet. Return it (or
// an error wrapping it) from the handler: the request then ends with an
// input_required result carrying the ask, and the handler runs again from
// the top once the client re-sends the request with the answer. Whatever
// the handler returns in a round that left an ask unanswered is discarded.
var ErrInputRequired = errors.New("mcp: input required from the client")

// LoggingLevel is the severity of a log message, as in RFC 5424.
type LoggingLevel string

// The logging levels, least severe first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

var levelRank = map[LoggingLevel]int{
	LevelDebug: 0, LevelInfo: 1, LevelNotice: 2, LevelWarning: 3,
	LevelError: 4, LevelCritical: 5, LevelAlert: 6, LevelEmergency: 7,
}

// validLevel reports whether l is one of the eight levels.
func validLevel(l LoggingLevel) bool {
	_, ok := levelRank[l]
	return ok
}

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

// logMessage is the wire shape of notifications/message.
type logMessage struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
}

// Log sends a log message to the client unless the client asked for a
// higher level. On the older revisions everything is sent until the client
// sets a level with logging/setLevel; on 2026-07-28 nothing is sent unless
// the request carries io.modelcontextprotocol/logLevel. logger names the
// source and may be empty.
//
// Deprecated: Logging is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); log to standard error or use
// OpenTelemetry instead. It keeps working on every revision.
func (g *ClientGateway) Log(level LoggingLevel, logger string, data any) error {
	if !validLevel(level) {
		return fmt.Errorf("mcp: unknown logging level %q", level)
	}
	threshold := g.req.logLevel
	if !g.req.modern {
		threshold = string(LevelDebug)
		if g.req.session != nil {
			g.req.session.mu.Lock()
			if g.req.session.logLevel != "" {
				threshold = g.req.session.logLevel
			}
			g.req.session.mu.Unlock()
		}
	}
	if threshold == "" || levelRank[level] < levelRank[LoggingLevel(threshold)] {
		return nil
	}
	return g.Notify("notifications/message", logMessage{Level: level, Logger: logger, Data: data})
}
