package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"
)

// The outcomes of a request in the debug log.
const (
	outcomeOK        = "ok"
	outcomeError     = "error"
	outcomeCancelled = "cancelled"
	outcomeTimeout   = "timeout"
)

// serveLogged is serveRequest when the logger takes debug records: it logs
// the request's method, id, duration and outcome once it is answered.
func (c *conn) serveLogged(ctx context.Context, r request) {
	start := time.Now()
	req := r.record()
	result, err := c.runHandler(ctx, r)
	err = c.answerRequest(req, result, err)
	// answerRequest took the request out of the table under the lock: no
	// cancellation can mark it after that.
	outcome, errType := outcomeOK, ""
	switch {
	case req.call.cancelled:
		outcome = outcomeCancelled
	case err != nil:
		outcome, errType = errorOutcome(err, strconv.Itoa(CodeInternalError))
	case isToolError(req.method, result):
		outcome, errType = outcomeError, "tool_error"
	}
	c.logRequest(ctx, "served a request", req.method, req.id, time.Since(start), outcome, errType)
}

// callLogged is call when the logger takes debug records: it logs the
// call's method, id, duration and outcome once it returns.
func (c *conn) callLogged(ctx context.Context, method string, params json.RawMessage, o *callOptions) (json.RawMessage, error) {
	if !o.id.IsValid() {
		c.mu.Lock()
		o.id = c.nextIDLocked()
		c.mu.Unlock()
	}
	id := o.id
	start := time.Now()
	res, err := c.roundTrip(ctx, method, params, o)
	o.id = ID{} // spent, or never sent
	outcome, errType := outcomeOK, ""
	switch {
	case err != nil:
		outcome, errType = errorOutcome(err, "")
	case isToolError(method, res):
		outcome, errType = outcomeError, "tool_error"
	}
	c.logRequest(ctx, "sent a request", method, id, time.Since(start), outcome, errType)
	return res, err
}

// errorOutcome names the outcome of a request that failed with err, and
// its error type: the JSON-RPC error code, or other for an error that has
// none.
func errorOutcome(err error, other string) (outcome, errType string) {
	var rpcErr *Error
	var timeout *RequestTimeoutError
	switch {
	case errors.As(err, &timeout), errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout, ""
	case errors.Is(err, context.Canceled):
		return outcomeCancelled, ""
	case errors.As(err, &rpcErr):
		return outcomeError, strconv.Itoa(rpcErr.Code)
	}
	return outcomeError, other
}

// isToolError reports whether result is a tool result with isError set.
func isToolError(method string, result any) bool {
	if method != "tools/call" {
		return false
	}
	switch r := result.(type) {
	case *CallToolResult:
		return r.IsError
	case json.RawMessage:
		return bytes.Contains(r, []byte(`"isError":true`))
	case *modernAnswer:
		return isToolError(method, r.result)
	}
	return false
}

// logRequest writes the debug record of one request.
func (c *conn) logRequest(ctx context.Context, msg, method string, id ID, d time.Duration, outcome, errType string) {
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String(attrMethod, method), slog.String(attrRequestID, id.String()))
	if _, session := c.describe(); session != "" {
		attrs = append(attrs, slog.String(attrSession, session))
	}
	attrs = append(attrs, slog.Duration(attrDuration, d), slog.String(attrOutcome, outcome))
	if errType != "" {
		attrs = append(attrs, slog.String(attrErrorType, errType))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}
