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
// a table of pending calls and a capped set of dispatched handlers. (Over an
// OS pipe a request that finds the connection idle starts on the reader's
// goroutine, which saves a thread wake-up; if it runs past 50 µs another
// goroutine takes over the reading. Likewise a client's caller that waits
// alone for its response reads it itself for up to 1 ms, then hands the
// reading back; between calls the reading rests for at most 100 µs.)
package mcp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
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

// ErrClosed is wrapped by every error that reports a call or a handler cut
// short because its connection ended.
var ErrClosed = errors.New("mcp: connection closed")

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
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ID{}, false
		}
		return StringID(s), true
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

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// appendJSONString appends s as a JSON string, escaping like encoding/json
// (invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are escaped) but without
// HTML escaping. Runs of plain ASCII are found eight bytes at a time and
// copied whole.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start, i := 0, 0
	for i < len(s) {
		i = plainRun(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// plainRun returns the end of the run of plain bytes from s[i] that
// appendString copies whole, a word of eight bytes at a time: it stops
// within eight bytes of the first byte that is not printable ASCII, or is
// '"' or '\\'.
func plainRun(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if specialBytes(word(s, i)) != 0 {
			break
		}
	}
	return i
}

// word is the eight bytes of s from i as a little-endian word; the
// compiler makes the shifts one load.
func word(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// specialBytes is nonzero when one of the eight bytes of w is not
// printable ASCII, or is '"' or '\\'. (Each test is exact as a whole: a
// borrow can only carry out of a byte that matched.)
func specialBytes(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(lo*'"'), w^(lo*'\\')
	return (w | (w-lo*0x20)&^w | (quote-lo)&^quote | (backslash-lo)&^backslash) & hi
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
	if !validJSON(data) {
		return invalidJSONError(data)
	}
	return decodeValidEnvelope(bytes.Clone(data), m)
}

// decodeOwnedEnvelope is decodeEnvelope for bytes nobody else will change
// or reuse: m's members are slices of data itself.
func decodeOwnedEnvelope(data []byte, m *wireMessage) error {
	if !validJSON(data) {
		return invalidJSONError(data)
	}
	return decodeValidEnvelope(data, m)
}

// invalidJSONError says what is wrong with data, which is not valid JSON,
// and where.
func invalidJSONError(data []byte) error {
	return errors.New(jsonSyntaxError(data))
}

// decodeValidEnvelope is the scan of decodeEnvelope over valid JSON.
func decodeValidEnvelope(data []byte, m *wireMessage) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errEnvelopeShape
	}
	i++
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			return nil
		}
		keyEnd := skipValue(data, i)
		key := data[i:keyEnd]
		i = skipSpace(data, keyEnd) + 1 // past ':'
		i = skipSpace(data, i)
		valEnd := skipValue(data, i)
		val := data[i:valEnd]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			json.Unmarshal(key, &k)
			key = []byte(strconv.Quote(k))
		}
		switch string(key) {
		case `"jsonrpc"`:
			if string(val) == `"2.0"` {
				m.JSONRPC = "2.0"
				break
			}
			v, ok := decodeString(val)
			if !ok {
				return errEnvelopeShape
			}
			m.JSONRPC = v
		case `"id"`:
			m.ID = val
		case `"method"`:
			if val[0] != '"' {
				return errEnvelopeShape
			}
			m.Method = methodName(val)
		case `"params"`:
			if string(val) != "null" {
				m.Params = val
			}
		case `"result"`:
			m.Result = val
		case `"error"`:
			if string(val) == "null" {
				break
			}
			e, ok := decodeError(val)
			if !ok {
				return errEnvelopeShape
			}
			m.Error = e
		}
		i = skipSpace(data, valEnd)
		if data[i] == ',' {
			i++
		}
	}
}

// decodeString decodes a JSON string value; it reports false for any
// other value.
func decodeString(val []byte) (string, bool) {
	var v string
	if json.Unmarshal(val, &v) != nil {
		return "", false
	}
	return v, true
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
	if bytes.IndexByte(raw, '\\') < 0 {
		switch s := raw[1 : len(raw)-1]; string(s) {
		case "tools/call":
			return "tools/call"
		case "notifications/progress":
			return "notifications/progress"
		case "notifications/cancelled":
			return "notifications/cancelled"
		case "tools/list":
			return "tools/list"
		case "ping":
			return "ping"
		case "resources/read":
			return "resources/read"
		case "prompts/get":
			return "prompts/get"
		default:
			return string(s)
		}
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at i. data must be
// valid JSON.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the end of the JSON string starting at i. It jumps
// from quote to quote: a quote ends the string unless an odd run of
// backslashes precedes it.
func skipString(data []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data)
		}
		q := i + j
		run := 0
		for k := q - 1; k >= i && data[k] == '\\'; k-- {
			run++
		}
		if run%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// validJSON reports whether data is one valid JSON value, like json.Valid
// but several times faster on the long strings that large messages are
// made of. UTF-8 is checked separately.
func validJSON(data []byte) bool {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	i, n := 0, len(data)
	const (
		wantValue = iota
		wantKey
		afterValue
	)
	state := wantValue
	for {
		i = skipSpace(data, i)
		switch state {
		case wantKey:
			if i >= n || data[i] != '"' {
				return false
			}
			var ok bool
			if i, ok = scanValidString(data, i); !ok {
				return false
			}
			if i = skipSpace(data, i); i >= n || data[i] != ':' {
				return false
			}
			i++
			state = wantValue
		case wantValue:
			if i >= n {
				return false
			}
			switch c := data[i]; c {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return false
				}
				i++
				close := byte('}')
				if c == '[' {
					close = ']'
				}
				if j := skipSpace(data, i); j < n && data[j] == close {
					i, state = j+1, afterValue
					continue
				}
				stack = append(stack, c)
				state = wantValue
				if c == '{' {
					state = wantKey
				}
			case '"':
				var ok bool
				if i, ok = scanValidString(data, i); !ok {
					return false
				}
				state = afterValue
			case 't':
				if !bytes.HasPrefix(data[i:], []byte("true")) {
					return false
				}
				i, state = i+4, afterValue
			case 'f':
				if !bytes.HasPrefix(data[i:], []byte("false")) {
					return false
				}
				i, state = i+5, afterValue
			case 'n':
				if !bytes.HasPrefix(data[i:], []byte("null")) {
					return false
				}
				i, state = i+4, afterValue
			default:
				var ok bool
				if i, ok = scanValidNumber(data, i); !ok {
					return false
				}
				state = afterValue
			}
		case afterValue:
			if len(stack) == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			top := stack[len(stack)-1]
			switch {
			case data[i] == ',':
				i++
				state = wantValue
				if top == '{' {
					state = wantKey
				}
			case top == '{' && data[i] == '}', top == '[' && data[i] == ']':
				i++
				stack = stack[:len(stack)-1]
			default:
				return false
			}
		}
	}
}

// scanValidString checks the string starting at data[i] and returns its
// end. A plain run (no escape, no control character) is checked a word at a
// time; escapes are checked byte by byte.
func scanValidString(data []byte, i int) (int, bool) {
	i++
	if j := bytes.IndexByte(data[i:], '"'); j >= 0 {
		seg := data[i : i+j]
		if bytes.IndexByte(seg, '\\') < 0 && !hasControlByte(seg) {
			return i + j + 1, true
		}
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		default:
			return i, false // a control character
		}
	}
	return i, false
}

// hasControlByte reports whether b holds a byte below 0x20, eight bytes at
// a time.
func hasControlByte(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// scanValidNumber checks the number starting at data[i] and returns its end.
func scanValidNumber(data []byte, i int) (int, bool) {
	n := len(data)
	digits := func(i int) (int, bool) {
		start := i
		for i < n && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if data[i] == '-' {
		i++
	}
	if i >= n {
		return i, false
	}
	if data[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < n && data[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// eachMember calls fn with the raw key (quoted) and value of every member of
// a JSON object that is already known to be valid. It reports false if raw
// is not an object.
func eachMember(raw []byte, fn func(key, value []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	for i++; ; {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			return true
		}
		keyEnd := skipValue(raw, i)
		valStart := skipSpace(raw, skipSpace(raw, keyEnd)+1)
		valEnd := skipValue(raw, valStart)
		fn(raw[i:keyEnd], raw[valStart:valEnd])
		if i = skipSpace(raw, valEnd); i < len(raw) && raw[i] == ',' {
			i++
		}
	}
}

// messagePool recycles the buffers messages are encoded into: the writer
// returns a buffer once a stream transport has written it. A pool holds
// pointers; the *[]byte that carried a buffer in goes to holderPool when
// the buffer is taken out, and carries the next one back, so that neither
// taking nor giving back allocates.
var messagePool, holderPool sync.Pool

// maxPooledMessage is the largest buffer messagePool keeps; larger ones go
// to largePools.
const maxPooledMessage = 16 << 10

// largePools recycle message buffers above maxPooledMessage, one pool per
// power-of-two capacity from 32 KiB (largePools[0]) to maxLargeMessage,
// so that a large message's buffer is not taken for a small one. Reusing
// them matters more than their size suggests: a fresh buffer of a
// megabyte is zeroed, grows the heap, and its pages, which the runtime
// gives back to the system between collections, fault in again when
// touched. 1 MiB echo over HTTP in-package, before these pools: about 490
// page faults and 8.7 MB allocated a call, 19.3 ms a call (16.4 ms with
// the runtime keeping its pages, GODEBUG=madvdontneed=0); with them, about
// 155 faults and 5.0 MB. Like any sync.Pool they hold nothing across two
// collections in which nobody asked for a buffer.
var largePools [largeClasses]sync.Pool

const (
	minLargeShift   = 15 // 32 KiB
	largeClasses    = 9  // up to 8 MiB
	maxLargeMessage = 1 << (minLargeShift + largeClasses - 1)
)

// messageBuffer returns an empty buffer with room for at least n bytes,
// from a pool when one has it. A buffer goes back with recycleMessage once
// nothing refers to it.
func messageBuffer(n int) []byte {
	if n <= maxPooledMessage {
		if h, ok := messagePool.Get().(*[]byte); ok {
			b := *h
			*h = nil
			holderPool.Put(h)
			if cap(b) >= n {
				return b[:0]
			}
		}
		n = max(n, 512)
		return make([]byte, 0, n)
	}
	if n > maxLargeMessage {
		return make([]byte, 0, n)
	}
	class := bits.Len(uint(n-1)) - minLargeShift // 1<<(class+minLargeShift) >= n
	if h, ok := largePools[class].Get().(*[]byte); ok {
		b := *h
		*h = nil
		holderPool.Put(h)
		return b[:0]
	}
	return make([]byte, 0, 1<<(class+minLargeShift))
}

// recycleMessage gives b back to its pool; b must not be used after.
func recycleMessage(b []byte) {
	var pool *sync.Pool
	switch c := cap(b); {
	case c < 512 || c > maxLargeMessage:
		return
	case c <= maxPooledMessage:
		pool = &messagePool
	default:
		// The largest class whose size c covers: every buffer in a class
		// has room for its size.
		class := bits.Len(uint(c)) - 1 - minLargeShift
		if class < 0 {
			return
		}
		pool = &largePools[class]
	}
	h, _ := holderPool.Get().(*[]byte)
	if h == nil {
		h = new([]byte)
	}
	*h = b[:0]
	pool.Put(h)
}

// growMessage returns b, a message buffer, with room for n more bytes: b
// itself when it has it, or a buffer from the pools holding b's bytes, b
// going back to its pool.
func growMessage(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := append(messageBuffer(max(len(b)+n, 2*cap(b))), b...)
	recycleMessage(b)
	return nb
}

// eachElement calls fn with every element of a JSON array that is already
// known to be valid. It reports false if raw is not an array.
func eachElement(raw []byte, fn func(value []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	for i++; ; {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == ']' {
			return true
		}
		end := skipValue(raw, i)
		fn(raw[i:end])
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i++
		}
	}
}

// fastString decodes a JSON string that is already known to be valid,
// without encoding/json when it holds no escape.
func fastString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// decodeAny decodes raw, valid JSON into the values json.Unmarshal puts in
// an any (map[string]any, []any, string, float64, bool, nil), without
// reflection. It reports false where it defers to json.Unmarshal: a number
// float64 cannot hold, or a string it cannot unescape.
func decodeAny(raw []byte) (any, bool) {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	switch raw[0] {
	case '{':
		m := make(map[string]any)
		ok := eachMember(raw, func(k, v []byte) {
			key, kok := fastString(k)
			val, vok := decodeAny(v)
			if !kok || !vok {
				m = nil
				return
			}
			if m != nil {
				m[key] = val
			}
		})
		return m, ok && m != nil
	case '[':
		a := []any{}
		ok := eachElement(raw, func(v []byte) {
			val, vok := decodeAny(v)
			if !vok {
				a = nil
				return
			}
			if a != nil {
				a = append(a, val)
			}
		})
		return a, ok && a != nil
	case '"':
		return fastString(raw)
	case 't':
		return true, string(raw) == "true"
	case 'f':
		return false, string(raw) == "false"
	case 'n':
		return nil, string(raw) == "null"
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// decodeMeta decodes a _meta value into m as json.Unmarshal would.
func decodeMeta(raw []byte, m *Meta) error {
	if v, ok := decodeAny(raw); ok {
		if obj, isObj := v.(map[string]any); isObj {
			if *m == nil {
				*m = obj
				return nil
			}
			maps.Copy(*m, obj)
			return nil
		}
	}
	return json.Unmarshal(raw, m)
}
