package mcpotel

import (
	"bytes"
	"encoding/json"
	"slices"

	"go.opentelemetry.io/otel/propagation"
)

// params is what the middleware reads of a message's params: the target
// (a tool's or prompt's name), a resource's URI and the trace context in
// _meta. Nothing else is decoded.
type params struct {
	name  string
	uri   string
	meta  []byte // the _meta member's value, as sent; nil when none
	valid bool   // the params are a JSON object this file could read
}

// readParams reads data, a message's params, without decoding the members
// it does not need. Params that are not a readable JSON object read as
// empty: the engine answers them as the protocol says, the telemetry only
// has less to report.
func readParams(data []byte) params {
	var p params
	p.valid = eachMember(data, func(key []byte, _, valStart, valEnd int) {
		val := data[valStart:valEnd]
		switch string(key) {
		case "name":
			p.name, _ = jsonString(val)
		case "uri":
			p.uri, _ = jsonString(val)
		case "_meta":
			p.meta = val
		}
	})
	if !p.valid {
		return params{}
	}
	return p
}

// carrier returns the members of _meta that the propagator reads, as a
// carrier for Extract; nil when there are none.
func (p params) carrier(fields []string) propagation.MapCarrier {
	var c propagation.MapCarrier
	eachMember(p.meta, func(key []byte, _, valStart, valEnd int) {
		if !slices.Contains(fields, string(key)) {
			return
		}
		if s, ok := jsonString(p.meta[valStart:valEnd]); ok {
			if c == nil {
				c = make(propagation.MapCarrier, len(fields))
			}
			c[string(key)] = s
		}
	})
	return c
}

// injectMeta returns data, a message's params, with the carrier's members
// in its _meta: an existing _meta keeps every other member as it was sent,
// and loses only the propagator's own fields (a stale traceparent would
// name the wrong parent). Every other member of the params is kept byte for
// byte. Params that are not an object, or whose _meta is neither an object
// nor null, are returned unchanged.
func injectMeta(data []byte, c propagation.MapCarrier, fields []string) []byte {
	if len(c) == 0 {
		return data
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return appendCarrier(append(make([]byte, 0, 64), `{"_meta":`...), c, nil, nil, fields, '}')
	}
	metaStart, metaEnd := -1, -1
	members := 0
	if !eachMember(data, func(key []byte, _, valStart, valEnd int) {
		members++
		if string(key) == "_meta" {
			metaStart, metaEnd = valStart, valEnd
		}
	}) {
		return data
	}
	out := make([]byte, 0, len(data)+128)
	if metaStart < 0 {
		// No _meta: it goes first, the rest follows as it was.
		open := bytes.IndexByte(data, '{')
		out = append(out, data[:open+1]...)
		out = append(out, `"_meta":`...)
		out = appendCarrier(out, c, nil, nil, fields, 0)
		if members > 0 {
			out = append(out, ',')
		}
		return append(out, data[open+1:]...)
	}
	old := data[metaStart:metaEnd]
	var kept [][2]int
	if string(old) != "null" {
		if !eachMember(old, func(key []byte, keyStart, _, valEnd int) {
			if !slices.Contains(fields, string(key)) {
				kept = append(kept, [2]int{keyStart, valEnd})
			}
		}) {
			return data
		}
	}
	out = append(out, data[:metaStart]...)
	out = appendCarrier(out, c, old, kept, fields, 0)
	return append(out, data[metaEnd:]...)
}

// appendCarrier appends a _meta object: the carrier's members in a fixed
// order, then the kept members of old as they were. A non-zero closing byte
// is appended after it.
func appendCarrier(out []byte, c propagation.MapCarrier, old []byte, kept [][2]int, fields []string, closing byte) []byte {
	out = append(out, '{')
	n := 0
	for _, k := range fields {
		v, ok := c[k]
		if !ok {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = appendJSONString(out, v)
		n++
	}
	for _, span := range kept {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, old[span[0]:span[1]]...)
		n++
	}
	out = append(out, '}')
	if closing != 0 {
		out = append(out, closing)
	}
	return out
}

// appendJSONString appends s as a JSON string.
func appendJSONString(out []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(out, b...)
}

// jsonString returns the string a JSON value holds; false when it is not a
// string.
func jsonString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(val, '\\') < 0 {
		return string(val[1 : len(val)-1]), true
	}
	var s string
	if json.Unmarshal(val, &s) != nil {
		return "", false
	}
	return s, true
}

// eachMember calls f for each member of the JSON object in data, with its
// key (unescaped), where its key starts and where its value starts and
// ends. It reports false, having perhaps called f, when data is not an
// object it can read. It checks no more of the JSON than it must to find
// the members: the engine has validated the message already.
func eachMember(data []byte, f func(key []byte, keyStart, valStart, valEnd int)) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		keyStart := i
		keyEnd, ok := skipString(data, i)
		if !ok {
			return false
		}
		key := data[keyStart+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, ok := jsonString(data[keyStart:keyEnd])
			if !ok {
				return false
			}
			key = []byte(s)
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		valStart := skipSpace(data, i+1)
		valEnd, ok := skipValue(data, valStart)
		if !ok {
			return false
		}
		f(key, keyStart, valStart, valEnd)
		i = skipSpace(data, valEnd)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string that starts at i.
func skipString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the JSON value that starts at i:
// strings and nested objects and arrays by their delimiters, anything else
// up to the next delimiter.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				end, ok := skipString(data, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	n := bytes.IndexAny(data[i:], ",}] \t\n\r")
	if n < 0 {
		n = len(data) - i
	}
	return i + n, n > 0
}
