package mcpotel

import (
	"context"
	"errors"
	"strconv"

	"github.com/e6ac58cb/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The error.type values this package reports besides a JSON-RPC error's
// code; the package doc lists when each applies.
const (
	errorTool      = "tool_error"
	errorTimeout   = "timeout"
	errorCancelled = "cancelled"
	errorClosed    = "connection_closed"
)

// operation is what the telemetry knows of one message before it is
// handled: the attributes its span starts with and its metric carries.
type operation struct {
	method  string
	version string
	session string
	id      string // empty for a notification
	tool    string // tools/call
	prompt  string // prompts/get
	uri     string // the resource methods
}

// newOperation reads req and its params p.
func newOperation(req *mcp.Request, p params) operation {
	op := operation{method: req.Method, version: req.ProtocolVersion, session: req.SessionID}
	if req.ID.IsValid() {
		op.id = req.ID.String()
	}
	switch req.Method {
	case "tools/call":
		op.tool = p.name
	case "prompts/get":
		op.prompt = p.name
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated":
		op.uri = p.uri
	}
	return op
}

// spanName is "{mcp.method.name} {target}", the target being the tool's or
// the prompt's name; the method alone when there is none. A resource's URI
// is not a target: it would make span names of unbounded variety.
func (op *operation) spanName() string {
	switch {
	case op.tool != "":
		return op.method + " " + op.tool
	case op.prompt != "":
		return op.method + " " + op.prompt
	}
	return op.method
}

// spanAttributes are the span's attributes known when it starts.
func (op *operation) spanAttributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, semconv.McpMethodNameKey.String(op.method))
	if op.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(op.version))
	}
	if op.session != "" {
		attrs = append(attrs, semconv.McpSessionID(op.session))
	}
	if op.id != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(op.id))
	}
	if op.uri != "" {
		attrs = append(attrs, semconv.McpResourceURI(op.uri))
	}
	return op.appendTarget(attrs)
}

// appendTarget appends the attributes spans and metrics share that name
// what the operation acts on.
func (op *operation) appendTarget(attrs []attribute.KeyValue) []attribute.KeyValue {
	if op.tool != "" {
		attrs = append(attrs, semconv.GenAIToolName(op.tool))
	}
	if op.method == "tools/call" {
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
	}
	if op.prompt != "" {
		attrs = append(attrs, semconv.GenAIPromptName(op.prompt))
	}
	return attrs
}

// metricAttributes are the operation duration's attributes: the method,
// the target, the revision and the outcome. The session, the request id
// and the URI are left out, as the conventions say, being of unbounded
// variety.
func (op *operation) metricAttributes(out outcome) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, semconv.McpMethodNameKey.String(op.method))
	if op.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(op.version))
	}
	attrs = op.appendTarget(attrs)
	return out.append(attrs)
}

// outcome is how an operation ended: the zero outcome is a success.
type outcome struct {
	errorType   string // error.type; empty on success
	code        string // the JSON-RPC error code, for rpc.response.status_code
	description string // the span status's description
}

// append appends the outcome's attributes.
func (out outcome) append(attrs []attribute.KeyValue) []attribute.KeyValue {
	if out.errorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(out.errorType))
	}
	if out.code != "" {
		attrs = append(attrs, semconv.RPCResponseStatusCode(out.code))
	}
	return attrs
}

// outcomeOf classifies how a handler ended. A JSON-RPC error is its code;
// a tool result with isError set is tool_error; a deadline is timeout, a
// cancellation cancelled, a connection gone connection_closed; any other
// error _OTHER, but on the receiving side, where the engine answers any
// error that is not an *mcp.Error as an internal error, that code.
// inbound tells the receiving side, whose ctx is the handler's: a request
// whose context ended (the peer cancelled it, the connection closed) gets
// no answer, whatever the handler returned.
func outcomeOf(ctx context.Context, inbound bool, method string, result []byte, err error) outcome {
	if inbound && ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, mcp.ErrClosed) {
			return outcome{errorType: errorClosed, description: cause.Error()}
		}
		out := contextOutcome(ctx.Err())
		out.description = cause.Error()
		return out
	}
	if err == nil {
		if method == "tools/call" && isToolError(result) {
			return outcome{errorType: errorTool}
		}
		return outcome{}
	}
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		code := strconv.Itoa(rpcErr.Code)
		return outcome{errorType: code, code: code, description: rpcErr.Message}
	}
	if out := contextOutcome(err); out.errorType != "" {
		return out
	}
	if inbound {
		code := strconv.Itoa(mcp.CodeInternalError)
		return outcome{errorType: code, code: code, description: err.Error()}
	}
	if errors.Is(err, mcp.ErrClosed) {
		return outcome{errorType: errorClosed, description: err.Error()}
	}
	return outcome{errorType: semconv.ErrorTypeOther.Value.AsString(), description: err.Error()}
}

// contextOutcome classifies a deadline (a *mcp.RequestTimeoutError among
// them) and a cancellation; the zero outcome for anything else.
func contextOutcome(err error) outcome {
	switch {
	case err == nil:
		return outcome{}
	case errors.Is(err, context.DeadlineExceeded):
		return outcome{errorType: errorTimeout, description: err.Error()}
	case errors.Is(err, context.Canceled):
		return outcome{errorType: errorCancelled, description: err.Error()}
	}
	return outcome{}
}

// isToolError reports whether a tools/call result has isError set to true.
func isToolError(result []byte) bool {
	isErr := false
	eachMember(result, func(key []byte, _, valStart, valEnd int) {
		if string(key) == "isError" {
			isErr = string(result[valStart:valEnd]) == "true"
		}
	})
	return isErr
}

// resultVersion returns the protocolVersion an initialize result names;
// empty when it names none.
func resultVersion(result []byte) string {
	var v string
	eachMember(result, func(key []byte, _, valStart, valEnd int) {
		if string(key) == "protocolVersion" {
			v, _ = jsonString(result[valStart:valEnd])
		}
	})
	return v
}
