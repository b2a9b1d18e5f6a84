package mcp

import (
	"bytes"
	"encoding/json"
	"sync"
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
	taskID     json.RawMessage // params.taskId, which Mcp-Name carries on tasks/* (2026-07-28)
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
	eachMember(w.Params, func(key, val []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("name")):
			m.name = val
		case bytes.EqualFold(key, []byte("uri")):
			m.uri = val
		case bytes.EqualFold(key, []byte("arguments")):
			m.args = val
		case bytes.EqualFold(key, []byte("taskId")):
			m.taskID = val
		case bytes.EqualFold(key, []byte("_meta")):
			eachMember(val, func(key, val []byte) bool {
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
	if !scanEnvelope(data, &m.wire, false) {
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
