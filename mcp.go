// Package mcp is a Model Context Protocol SDK: one package that is both an MCP
// client and an MCP server, on every protocol revision from 2024-11-05 to
// 2026-07-28, using only the standard library.
//
// A [Client] connects to a server over a [Transport] and calls its tools,
// resources and prompts. Long calls behave: each call may carry a progress
// callback ([WithProgress]), an idle timeout that progress restarts
// ([WithRequestTimeout]), a hard ceiling ([WithMaxRequestTimeout]) and a
// per-call override ([WithTimeout]). When a deadline elapses the client frees
// the call, tells the server with notifications/cancelled and returns a
// [*RequestTimeoutError]; a late reply is dropped.
//
// A [Server] registers tools, resources and prompts and serves them over a
// Transport. Handlers talk back to the client through a [ClientGateway]:
// progress, logs, notifications, and asks (elicitation, sampling, roots) that
// are live requests on the older revisions and replayed calls on 2026-07-28.
//
// Client and Server are thin layers over one engine: a reader goroutine that
// parses and routes and is never held up by a handler, a serialised writer,
// a table of pending calls and a capped set of dispatched handlers
// (ARCHITECTURE.md draws the road of a message).
//
// # Where to start
//
// A server: [NewServer], then [AddTool] (a typed handler; its schemas are
// inferred and its arguments validated) or [Server.AddTool],
// [Server.AddResource], [Server.AddResourceTemplate] and
// [Server.AddPrompt]. Serve it with [Server.Serve] over [StdioTransport], or
// over Streamable HTTP with [NewHTTPHandler] and [NewHTTPServer]. A
// handler's request ([CallToolRequest], [ReadResourceRequest],
// [GetPromptRequest]) reaches the client through its Gateway.
//
// A client: [NewClient], then [Client.Connect] over [NewCommandTransport]
// (a server run as a child process), [NewHTTPTransport] or
// [NewInMemoryTransports]; then [Client.CallTool] (or [CallToolAs] for typed
// output), [Client.Tools], [Client.ReadResource], [Client.GetPrompt].
//
// Options say where they go by their type: a [ServerOption] to NewServer, a
// [ClientOption] to NewClient, an [Option] to either, an
// [HTTPHandlerOption] to NewHTTPHandler, an [HTTPTransportOption] to
// NewHTTPTransport, a [CallOption] to one call.
//
// What is not the stdio core is turned on where it is named, and a program
// that does not name it does not link it: HTTP ([NewHTTPHandler],
// [NewHTTPTransport]); tasks ([WithTasks] on a server, [WithTask] on a
// call, [WithTaskRequests] on a client); OAuth ([WithOAuth] on a client
// transport; [WithAuthorizer] with a [BearerAuth] and [NewJWTVerifier] or
// [NewIntrospectionVerifier] on a handler); many instances
// ([WithSessionStore], [WithEventStore], [WithBroadcaster] and
// [TaskOptions].Store, which the module github.com/e6ac58cb/mcp/redis
// implements on Redis). Middleware ([WithInboundMiddleware],
// [WithOutboundMiddleware]) and logging ([WithLogger], [NewLoggingHandler])
// cost a nil check when unused.
//
// Read next: the examples of this package, each a program that runs as it
// is pasted into main; the programs under examples/ in the repository, one
// per topic; README.md for the quick start, and ARCHITECTURE.md for how it
// works inside.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Protocol revisions this package speaks.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"

	// LatestVersion is the newest revision, the one a client tries first.
	LatestVersion = Version20260728
	// LatestLegacyVersion is the newest revision that uses the initialize
	// handshake; a client falls back to it when a server does not speak
	// LatestVersion.
	LatestLegacyVersion = Version20251125
)

// SupportedVersions lists every revision this package speaks, newest first.
var SupportedVersions = slices.Clone(knownVersions[:])

// knownVersions are the revisions' names as constants, newest first,
// whatever a user does to SupportedVersions.
var knownVersions = [...]string{Version20260728, Version20251125, Version20250618, Version20250326, Version20241105}

// knownVersion returns the constant of the revision raw names, a JSON
// string, if this package knows it: the version every 2026-07-28 message
// carries then costs no allocation. (Every revision's name has the same
// length.)
func knownVersion(raw []byte) (string, bool) {
	if len(raw) == len(Version20260728)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, v := range knownVersions {
			if string(raw[1:len(raw)-1]) == v {
				return v, true
			}
		}
	}
	return "", false
}

// isSupportedVersion reports whether v is a revision this package speaks.
func isSupportedVersion(v string) bool { return slices.Contains(SupportedVersions, v) }

// isModernVersion reports whether v is a stateless revision (2026-07-28 and
// later), which has no handshake and carries its metadata on every request.
func isModernVersion(v string) bool { return v >= Version20260728 }

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeOverloaded answers a request that arrives while the in-flight
	// dispatch cap is reached; the request was not started and may be retried.
	CodeOverloaded = -32000
	// CodeResourceNotFound is the resource-not-found code of the revisions up
	// to 2025-11-25; 2026-07-28 uses CodeInvalidParams instead.
	CodeResourceNotFound = -32002
	// CodeHeaderMismatch: an HTTP header disagrees with the body (2026-07-28).
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability: serving the request needs a client
	// capability the request did not declare (2026-07-28).
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the request names a revision the server
	// does not speak (2026-07-28).
	CodeUnsupportedProtocolVersion = -32022
	// CodeURLElicitationRequired: the request needs the user to complete a
	// URL elicitation first (2025-11-25 only).
	CodeURLElicitationRequired = -32042
)

// Error is a JSON-RPC error: a peer's error reply, or one a handler returns to
// be sent as is. Use errors.As to recover it from an error chain.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("mcp: %s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("mcp: %s (code %d)", e.Message, e.Code)
}

// NewError returns an *Error with the given code and message, for either
// side. data, when not nil, is marshalled into the error's data member; a
// json.RawMessage or []byte is taken as the JSON it holds. Data that cannot
// be encoded is left out and its error put in the message.
func NewError(code int, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data != nil {
		raw, err := marshalValue(data)
		if err != nil {
			e.Message += " (data left out: " + err.Error() + ")"
		}
		e.Data = raw
	}
	return e
}

// internalError is the protocol error of a request that could not be
// served for err.
func internalError(err error) *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}

// ErrClosed is wrapped by every error that reports a call or a handler cut
// short because its connection ended.
var ErrClosed = errors.New("mcp: connection closed")

// ErrStreamClosed is returned, server side, by a ClientGateway's Notify,
// Progress and Log (and its asks) when what they send can no longer reach
// the client: the stream that carries the request's messages was dropped
// or closed (on Streamable HTTP the client went away and cannot resume the
// stream, or the session ended), or the connection closed. The handler may
// stop its work. Test for it with errors.Is.
var ErrStreamClosed = errors.New("mcp: the request's stream to the client is closed")

// streamClosedError is the error of a send on a closed connection: both
// ErrClosed, with its cause, and ErrStreamClosed.
type streamClosedError struct{ err error }

func (e *streamClosedError) Error() string   { return e.err.Error() }
func (e *streamClosedError) Unwrap() []error { return []error{ErrStreamClosed, e.err} }

// streamErr makes the error of a send on a closed connection an
// ErrStreamClosed too.
func streamErr(err error) error {
	if err != nil && errors.Is(err, ErrClosed) && !errors.Is(err, ErrStreamClosed) {
		return &streamClosedError{err}
	}
	return err
}

// errorf is fmt.Errorf for an error of this package: its text starts with
// "mcp: " once, however many of the package's errors it wraps, so that a
// chain reads as one sentence. format is written without the prefix.
func errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok && strings.HasPrefix(err.Error(), errPrefix) {
			args[i] = untitled{err}
		}
	}
	return fmt.Errorf(errPrefix+format, args...)
}

// errPrefix starts the text of every error the package makes.
const errPrefix = "mcp: "

// untitled is an error of the package inside another: its text without the
// prefix, which the outer error has.
type untitled struct{ err error }

func (u untitled) Error() string { return untitledText(u.err) }
func (u untitled) Unwrap() error { return u.err }

// untitledText is err's text without the package's prefix: for an error
// wrapped in another of the package's, or sent to the peer as a JSON-RPC
// error message, whose *Error adds the prefix again.
func untitledText(err error) string { return strings.TrimPrefix(err.Error(), errPrefix) }

// ID is a JSON-RPC request id. It keeps its JSON type: the number 1 and the
// string "1" are different ids, and an id is echoed back as it came.
// The zero ID is "no id".
type ID struct {
	text  string // the number's text, or the string's value
	isStr bool
	valid bool
}

// Int64ID returns a numeric ID.
func Int64ID(n int64) ID { return ID{text: strconv.FormatInt(n, 10), valid: true} }

// StringID returns a string ID.
func StringID(s string) ID { return ID{text: s, isStr: true, valid: true} }

// IsValid reports whether id is set.
func (id ID) IsValid() bool { return id.valid }

// IsString reports whether id is a JSON string.
func (id ID) IsString() bool { return id.isStr }

// String returns the id as it would appear in a log line: a number bare, a
// string quoted.
func (id ID) String() string {
	if !id.valid {
		return "<none>"
	}
	if id.isStr {
		return strconv.Quote(id.text)
	}
	return id.text
}

// MarshalJSON encodes the id with its original JSON type.
func (id ID) MarshalJSON() ([]byte, error) {
	if !id.valid {
		return []byte("null"), nil
	}
	return id.appendJSON(nil), nil
}

func (id ID) appendJSON(b []byte) []byte {
	if !id.valid {
		return append(b, "null"...)
	}
	if id.isStr {
		return appendJSONString(b, id.text)
	}
	return append(b, id.text...)
}

// UnmarshalJSON decodes a string or integer id. Anything else (null, a
// fraction, an object) is an error.
func (id *ID) UnmarshalJSON(data []byte) error {
	parsed, ok := parseID(data)
	if !ok {
		return fmt.Errorf("mcp: invalid request id %s", data)
	}
	*id = parsed
	return nil
}

// parseID reads a raw JSON id: a string, or an integer written without a
// fraction or exponent.
func parseID(raw []byte) (ID, bool) {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return ID{}, false
	}
	if raw[0] == '"' {
		if s, ok := jsonString(raw); ok {
			return StringID(s), true
		}
		return ID{}, false
	}
	i := 0
	if raw[0] == '-' {
		i = 1
	}
	if i == len(raw) || len(raw) > 40 {
		return ID{}, false
	}
	for _, c := range raw[i:] {
		if c < '0' || c > '9' {
			return ID{}, false
		}
	}
	return ID{text: string(raw), valid: true}, true
}

// wireMessage is the JSON-RPC envelope every message is decoded into, once.
// Params, result and id stay raw until the method or the caller says what
// they are.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// messageKind is what a JSON-RPC message is.
type messageKind uint8

// The JSON-RPC message kinds.
const (
	kindInvalid messageKind = iota
	kindRequest
	kindNotification
	kindResponse
)

// kind classifies a decoded envelope, or reports why it is invalid.
func (m *wireMessage) kind() (messageKind, string) {
	if m.JSONRPC != "2.0" {
		return kindInvalid, `jsonrpc must be "2.0"`
	}
	hasID := len(m.ID) > 0
	switch {
	case m.Method != "":
		if m.Result != nil || m.Error != nil {
			return kindInvalid, "a request carries no result or error"
		}
		if len(m.Params) > 0 {
			if p := trimJSONSpace(m.Params); len(p) == 0 || (p[0] != '{' && p[0] != '[') {
				return kindInvalid, "params must be an object"
			}
		}
		if !hasID {
			return kindNotification, ""
		}
		return kindRequest, ""
	case m.Result != nil || m.Error != nil:
		if m.Result != nil && m.Error != nil {
			return kindInvalid, "a response carries result or error, not both"
		}
		return kindResponse, ""
	}
	return kindInvalid, "not a request, notification or response"
}

// encodeRequest writes a request or notification envelope. A zero id writes a
// notification.
func encodeRequest(id ID, method string, params []byte) []byte {
	b := appendRequestHead(messageBuffer(len(params)+len(method)+48), id, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendRequestHead appends a request's (or, with a zero id, a
// notification's) envelope up to its method, without closing it.
func appendRequestHead(b []byte, id ID, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id.valid {
		b = append(b, `"id":`...)
		b = id.appendJSON(b)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	return appendJSONString(b, method)
}

// encodeResult writes a success response envelope.
func encodeResult(id ID, result []byte) []byte {
	b := messageBuffer(len(result) + 40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.appendJSON(b)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// resultAppender is a result that writes its own JSON into its response
// (modernAnswer), so that it is not encoded first and copied in after.
type resultAppender interface {
	appendResult(b []byte) ([]byte, error)
}

// encodeAppendedResult is encodeResult for a result that writes itself.
func encodeAppendedResult(id ID, r resultAppender) ([]byte, error) {
	b := messageBuffer(256)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.appendJSON(b)
	b = append(b, `,"result":`...)
	b, err := r.appendResult(b)
	if err != nil {
		recycleMessage(b)
		return nil, err
	}
	return append(growMessage(b, 1), '}'), nil
}

// encodeError writes an error response envelope. A zero id writes id null,
// as JSON-RPC asks when the request's id could not be read.
func encodeError(id ID, e *Error) []byte {
	body, _ := json.Marshal(e)
	b := make([]byte, 0, len(body)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = id.appendJSON(b)
	b = append(b, `,"error":`...)
	b = append(b, body...)
	return append(b, '}')
}

// errEnvelopeShape reports well-formed JSON that is not a JSON-RPC message
// object, or one whose members have the wrong types.
var errEnvelopeShape = errors.New("not a JSON-RPC message object")

// decodeEnvelope reads one message into m with a single validating pass and
// a single scanning pass: params, result and id stay raw slices of one copy
// of data. It is the hot path of every message; encoding/json would validate,
// reflect and copy each member separately. A syntax error is returned as
// is; errEnvelopeShape means valid JSON of the wrong shape.
func decodeEnvelope(data []byte, m *wireMessage) error {
	return decodeOwnedEnvelope(bytes.Clone(data), m)
}

// decodeOwnedEnvelope is decodeEnvelope for bytes nobody else will change
// or reuse: m's members are slices of data itself.
func decodeOwnedEnvelope(data []byte, m *wireMessage) error {
	if !validJSON(data) {
		return errors.New(jsonSyntaxError(data))
	}
	if !scanEnvelope(data, m, true) {
		return errEnvelopeShape
	}
	return nil
}

// scanEnvelope reads the envelope members of data into m, the last of a
// repeated member winning. With decode, data is valid JSON and the members
// must have their types, the error member decoded; without, data is what
// the client transport is about to send, not validated, and Error only says
// one is present. It reports false when data is not a message object it
// can read; it never panics.
func scanEnvelope(data []byte, m *wireMessage, decode bool) bool {
	return eachMember(data, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc":
			m.JSONRPC = "2.0"
			if string(val) != `"2.0"` {
				var ok bool
				m.JSONRPC, ok = jsonString(val)
				// Decoding refuses a jsonrpc of another type; null reads as "".
				return ok || !decode || string(val) == "null"
			}
		case "id":
			m.ID = val
		case "method":
			if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
				return false
			}
			m.Method = methodName(val)
		case "params":
			m.Params = nil
			if string(val) != "null" {
				m.Params = val
			}
		case "result":
			m.Result = val
		case "error":
			m.Error = nil
			if string(val) == "null" {
				break
			}
			if !decode {
				m.Error = &Error{}
				break
			}
			var ok bool
			m.Error, ok = decodeError(val)
			return ok
		}
		return true
	})
}

// decodeError decodes a response's error member.
func decodeError(val []byte) (*Error, bool) {
	e := new(Error)
	if json.Unmarshal(val, e) != nil {
		return nil, false
	}
	return e, true
}

// methodName returns a JSON string's value, without allocating for the
// methods every connection uses.
func methodName(raw []byte) string {
	switch string(raw) {
	case `"tools/call"`:
		return "tools/call"
	case `"notifications/progress"`:
		return "notifications/progress"
	case `"notifications/cancelled"`:
		return "notifications/cancelled"
	case `"tools/list"`:
		return "tools/list"
	case `"ping"`:
		return "ping"
	case `"resources/read"`:
		return "resources/read"
	case `"prompts/get"`:
		return "prompts/get"
	}
	s, _ := jsonString(raw)
	return s
}
