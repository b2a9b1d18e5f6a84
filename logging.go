package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// setLoggingLevel serves logging/setLevel (older revisions): the session's
// handlers then log at that level and above.
func (ss *serverSession) setLoggingLevel(params json.RawMessage) (any, error) {
	var p struct {
		Level LoggingLevel `json:"level"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if !validLevel(p.Level) {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown logging level %q", p.Level)}
	}
	ss.mu.Lock()
	ss.logLevel = string(p.Level)
	ss.mu.Unlock()
	if err := ss.changed(sessionChange{LogLevel: string(p.Level)}); err != nil {
		return nil, err
	}
	return json.RawMessage("{}"), nil
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
// source and may be empty. data is any JSON value; a json.RawMessage or
// []byte is taken as the JSON it holds. A message sent returns
// ErrStreamClosed when it can no longer reach the client.
//
// Deprecated: Logging is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); log to standard error or use
// OpenTelemetry instead. It keeps working on every revision.
func (g *ClientGateway) Log(level LoggingLevel, logger string, data any) error {
	if !validLevel(level) {
		return errorf("unknown logging level %q", level)
	}
	data, err := jsonData(data)
	if err != nil {
		return errorf("the log data: %w", err)
	}
	if threshold, ok := clientLogThreshold(g.req); !ok || levelRank[level] < levelRank[threshold] {
		return nil
	}
	return g.Notify("notifications/message", logMessage{Level: level, Logger: logger, Data: data})
}

// LoggingHandlerOptions configure a handler made by NewLoggingHandler.
type LoggingHandlerOptions struct {
	// Logger names the source of the messages; empty sends none.
	Logger string
	// Level is the least severe level forwarded, on top of the client's own
	// choice; nil forwards every level the client asks for.
	Level slog.Leveler
}

// NewLoggingHandler returns a slog.Handler that sends each record to the
// client as a notifications/message through g, when the client asked for
// its level (logging/setLevel on the older revisions, the request's
// io.modelcontextprotocol/logLevel on 2026-07-28). The message's data is a
// JSON object holding "msg" and the record's attributes, groups nested.
// slog levels map to the protocol's as debug below Info, info from Info,
// notice from Info+2, warning from Warn, error from Error, and critical,
// alert and emergency from Error+4, +8 and +12.
//
// Deprecated: Logging is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); log to standard error or use
// OpenTelemetry instead. It keeps working on every revision.
func NewLoggingHandler(g *ClientGateway, opts *LoggingHandlerOptions) slog.Handler {
	h := &loggingHandler{gateway: g}
	if opts != nil {
		h.opts = *opts
	}
	return h
}

type loggingHandler struct {
	gateway *ClientGateway
	opts    LoggingHandlerOptions
	// steps are the WithGroup and WithAttrs calls, in order.
	steps []loggingStep
}

// loggingStep is one WithGroup (group set) or WithAttrs (attrs set) call.
type loggingStep struct {
	group string
	attrs []slog.Attr
}

func (h *loggingHandler) Enabled(_ context.Context, level slog.Level) bool {
	if h.opts.Level != nil && level < h.opts.Level.Level() {
		return false
	}
	threshold, ok := clientLogThreshold(h.gateway.req)
	return ok && levelRank[loggingLevelOf(level)] >= levelRank[threshold]
}

func (h *loggingHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.Enabled(ctx, r.Level) {
		return nil
	}
	root := map[string]any{"msg": r.Message}
	current := root
	for _, step := range h.steps {
		if step.group != "" {
			group := map[string]any{}
			current[step.group] = group
			current = group
			continue
		}
		for _, a := range step.attrs {
			addLogAttr(current, a)
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		addLogAttr(current, a)
		return true
	})
	pruneEmptyGroups(root)
	return h.gateway.Log(loggingLevelOf(r.Level), h.opts.Logger, root)
}

func (h *loggingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(loggingStep{attrs: slices.Clone(attrs)})
}

func (h *loggingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(loggingStep{group: name})
}

func (h *loggingHandler) with(step loggingStep) *loggingHandler {
	h2 := *h
	h2.steps = append(slices.Clip(h.steps), step)
	return &h2
}

// addLogAttr puts an attribute into a message object as slog's JSON
// handler would: empty attributes are dropped, groups nest, a group
// without a key is inlined.
func addLogAttr(obj map[string]any, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	switch v := a.Value; v.Kind() {
	case slog.KindGroup:
		target := obj
		if a.Key != "" {
			target = map[string]any{}
			obj[a.Key] = target
		}
		for _, member := range v.Group() {
			addLogAttr(target, member)
		}
	case slog.KindTime:
		obj[a.Key] = v.Time().Format(time.RFC3339Nano)
	case slog.KindDuration:
		obj[a.Key] = v.Duration().String()
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			obj[a.Key] = err.Error()
		} else {
			obj[a.Key] = v.Any()
		}
	default:
		obj[a.Key] = v.Any()
	}
}

// pruneEmptyGroups removes groups left without members, as slog does.
func pruneEmptyGroups(obj map[string]any) bool {
	for k, v := range obj {
		if group, ok := v.(map[string]any); ok && pruneEmptyGroups(group) {
			delete(obj, k)
		}
	}
	return len(obj) == 0
}

// loggingLevelOf maps a slog level to the protocol's.
func loggingLevelOf(l slog.Level) LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return LevelDebug
	case l < slog.LevelInfo+2:
		return LevelInfo
	case l < slog.LevelWarn:
		return LevelNotice
	case l < slog.LevelError:
		return LevelWarning
	case l < slog.LevelError+4:
		return LevelError
	case l < slog.LevelError+8:
		return LevelCritical
	case l < slog.LevelError+12:
		return LevelAlert
	}
	return LevelEmergency
}

// clientLogThreshold returns the least severe level the client wants for
// messages about r, and false when it wants none: on the older revisions
// everything until logging/setLevel says otherwise, on 2026-07-28 only what
// the request's logLevel asks for.
func clientLogThreshold(r *RequestInfo) (LoggingLevel, bool) {
	if r.modern {
		return LoggingLevel(r.logLevel), validLevel(LoggingLevel(r.logLevel))
	}
	threshold := LevelDebug
	if r.session != nil {
		r.session.mu.Lock()
		if r.session.logLevel != "" {
			threshold = LoggingLevel(r.session.logLevel)
		}
		r.session.mu.Unlock()
	}
	return threshold, true
}
