package mcp

import (
	"bytes"
	"encoding/json"
	"sync"
	"unicode/utf8"
)

// httpMessage is what the HTTP layer reads from a message before the engine
// does: enough to judge its era, route it and check headers against it.
type httpMessage struct {
	kind       messageKind
	invalid    string
	id         ID
	method     string
	params     json.RawMessage
	hasVersion bool   // params._meta carries the 2026-07-28 protocolVersion
	version    string // its value, when a string
	hasCaps    bool
	name, uri  json.RawMessage // raw, read when a header needs them
	args       json.RawMessage

	// wire is the decoded envelope, which the engine takes as is when
	// decoded is set, so that a POST body is decoded once.
	wire    wireMessage
	decoded bool
}

// onePOSTMessage is the storage of a POST body of one message, which the
// handler takes from a pool and gives back (release) once the POST is
// served: nothing of the engine's keeps the envelope it hands over.
type onePOSTMessage struct {
	m    httpMessage
	list [1]*httpMessage
	iw   inlineWriter // the writer of the POST's stream, if it must start one
}

var onePOSTPool = sync.Pool{New: func() any { return new(onePOSTMessage) }}

// release gives one back to the pool; nil is a batch's, which has none.
func (one *onePOSTMessage) release() {
	if one == nil {
		return
	}
	one.m, one.iw = httpMessage{}, inlineWriter{}
	onePOSTPool.Put(one)
}

// readPOSTBody decodes a POST body once: one message, or a batch. ok is
// false when it is not JSON at all. A single message is in storage of the
// pool's, one: the caller gives it back with one.release once done with
// msgs.
func readPOSTBody(body []byte) (msgs []*httpMessage, batch, ok bool, one *onePOSTMessage) {
	trimmed := trimJSONSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(trimmed, &items) != nil {
			return nil, true, false, nil
		}
		msgs = make([]*httpMessage, len(items))
		for i, item := range items {
			msgs[i], _ = decodeHTTPMessage(item)
		}
		return msgs, true, true, nil
	}
	one = onePOSTPool.Get().(*onePOSTMessage)
	if !decodeHTTPMessageInto(trimmed, &one.m) {
		one.release()
		return nil, false, false, nil
	}
	one.list[0] = &one.m
	return one.list[:], false, true, one
}

// decodeHTTPMessage decodes one message with the engine's envelope decoder
// and classifies it; isJSON is false when data is not JSON at all. data is
// the message's own (a POST body read for this request, or a batch item
// copied out of one): the envelope slices it rather than a copy.
func decodeHTTPMessage(data []byte) (m *httpMessage, isJSON bool) {
	m = &httpMessage{}
	return m, decodeHTTPMessageInto(data, m)
}

// decodeHTTPMessageInto is decodeHTTPMessage into m.
func decodeHTTPMessageInto(data []byte, m *httpMessage) (isJSON bool) {
	if err := decodeOwnedEnvelope(data, &m.wire); err != nil {
		m.kind, m.invalid = kindInvalid, err.Error()
		m.id = idOf(data)
		return err == errEnvelopeShape
	}
	m.decoded = true
	m.classify()
	return true
}

// classify reads m.wire: the message's kind, id and method, and the params
// members the HTTP layer checks.
func (m *httpMessage) classify() {
	w := &m.wire
	m.kind, m.invalid = w.kind()
	m.method, m.params = w.Method, w.Params
	if len(w.ID) > 0 {
		m.id, _ = parseID(w.ID)
	}
	if m.kind == kindRequest && !m.id.IsValid() {
		m.kind, m.invalid = kindInvalid, "the id must be a string or an integer"
	}
	// Members match as encoding/json matches struct fields: ignoring case,
	// the last one winning, so that the server's own decoding of the params
	// sees what the headers were checked against.
	walkObject(w.Params, func(key, val []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("name")):
			m.name = val
		case bytes.EqualFold(key, []byte("uri")):
			m.uri = val
		case bytes.EqualFold(key, []byte("arguments")):
			m.args = val
		case bytes.EqualFold(key, []byte("_meta")):
			walkObject(val, func(key, val []byte) bool {
				switch {
				case bytes.EqualFold(key, []byte(metaProtocolVersion)):
					m.hasVersion = true
					var ok bool
					if m.version, ok = knownVersion(val); !ok {
						m.version, _ = jsonString(val)
					}
				case bytes.EqualFold(key, []byte(metaClientCapabilities)):
					m.hasCaps = string(val) != "null"
				}
				return true
			})
		}
		return true
	})
}

// sniffMessage classifies into m a message the client transport is about
// to send (or the SSE transport was refused), without validating or
// copying it.
func sniffMessage(data []byte, m *httpMessage) {
	if !scanEnvelope(data, &m.wire) {
		m.kind, m.invalid = kindInvalid, "not a JSON-RPC message object"
		m.id = idOf(data)
		return
	}
	m.classify()
}

// sentMessage is what a client POST keeps of the message it carries.
type sentMessage struct {
	kind   messageKind
	id     ID
	method string
	modern bool // params._meta carries the 2026-07-28 protocolVersion
}

func (m *httpMessage) sent() sentMessage {
	return sentMessage{kind: m.kind, id: m.id, method: m.method, modern: m.hasVersion}
}

// scanEnvelope reads the envelope members of data into w without decoding
// its values (Error is a placeholder that only says one is present). It
// reports false when data is not a JSON object it can walk; it never
// panics on malformed input.
func scanEnvelope(data []byte, w *wireMessage) bool {
	return walkObject(data, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc":
			w.JSONRPC = "2.0"
			if string(val) != `"2.0"` {
				w.JSONRPC, _ = jsonString(val)
			}
		case "id":
			w.ID = val
		case "method":
			if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
				return false
			}
			w.Method = methodName(val)
		case "params":
			w.Params = nil
			if string(val) != "null" {
				w.Params = val
			}
		case "result":
			w.Result = val
		case "error":
			w.Error = nil
			if string(val) != "null" {
				w.Error = &Error{}
			}
		}
		return true
	})
}

// eachMember calls f with the key (unescaped) and raw value of each member
// of the JSON object obj, in order, until f returns false. It reports
// whether it walked the whole object; it does not validate the values, and
// never panics on malformed input.
func walkObject(obj []byte, f func(key, val []byte) bool) bool {
	n := len(obj)
	i := skipSpace(obj, 0)
	if i >= n || obj[i] != '{' {
		return false
	}
	if i = skipSpace(obj, i+1); i < n && obj[i] == '}' {
		return skipSpace(obj, i+1) == n
	}
	for {
		if i >= n || obj[i] != '"' {
			return false
		}
		end, ok := stringEnd(obj, i)
		if !ok {
			return false
		}
		key := obj[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(obj[i:end], &k) != nil {
				return false
			}
			key = []byte(k)
		}
		if i = skipSpace(obj, end); i >= n || obj[i] != ':' {
			return false
		}
		if i = skipSpace(obj, i+1); i >= n {
			return false
		}
		end, ok = valueEnd(obj, i)
		if !ok || !f(key, obj[i:end]) {
			return false
		}
		if i = skipSpace(obj, end); i >= n {
			return false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return skipSpace(obj, i+1) == n
		default:
			return false
		}
	}
}

// stringEnd returns the end of the JSON string that starts at data[i]: the
// first quote after it that an even run of backslashes precedes.
func stringEnd(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return 0, false
		}
		i += q
		escapes := 0
		for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			return i + 1, true
		}
	}
	return 0, false
}

// valueEnd returns the end of the JSON value that starts at data[i],
// matching brackets without validating what is between them.
func valueEnd(data []byte, i int) (int, bool) {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, ok := stringEnd(data, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, i > start
		}
		i++
	}
	return i, i > start
}

// jsonString returns the value of raw when it is a JSON string.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && utf8.Valid(inner) && !hasControl(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
