package mcp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Values the API takes as `any` for JSON (params, arguments, a requested
// schema, log data, error data) are encoded here. A json.RawMessage and a
// []byte are taken as the JSON they hold: encoding/json would send a []byte
// as a base64 string, which no peer expects where JSON was meant.

// rawJSONOf returns v itself when it is JSON already: a json.RawMessage or
// a []byte. It reports false for any other value.
func rawJSONOf(v any) (json.RawMessage, bool) {
	switch raw := v.(type) {
	case json.RawMessage:
		return raw, true
	case []byte:
		return raw, true
	}
	return nil, false
}

// marshalValue encodes v as one JSON value: raw JSON as it is (checked, since
// it is written to the wire unchanged), anything else with encoding/json. A
// nil v, or empty raw JSON, encodes to nothing.
func marshalValue(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, ok := rawJSONOf(v)
	if !ok {
		return json.Marshal(v)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	if !validJSON(raw) {
		return nil, fmt.Errorf("the %T given does not hold valid JSON (%s)", v, jsonSyntaxError(raw))
	}
	return raw, nil
}

// marshalObject is marshalValue for a place where the protocol requires a
// JSON object (params, tool arguments, a requested schema). JSON null counts
// as absent and encodes to nothing.
func marshalObject(v any) (json.RawMessage, error) {
	raw, err := marshalValue(v)
	if err != nil || len(raw) == 0 {
		return raw, err
	}
	if err := checkObject(v, raw); err != nil {
		return nil, err
	}
	if string(trimJSONSpace(raw)) == "null" {
		return nil, nil
	}
	return raw, nil
}

// checkObject reports an error unless raw, v's valid JSON encoding, is an
// object or null.
func checkObject(v any, raw []byte) error {
	t := trimJSONSpace(raw)
	if len(t) == 0 || t[0] == '{' || string(t) == "null" {
		return nil
	}
	return fmt.Errorf("a JSON object is required, but the %T given encodes to a JSON %s", v, jsonKind(t))
}

// jsonKind names the kind of the valid JSON value that starts data.
func jsonKind(data []byte) string {
	switch data[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonSyntaxError says what is wrong with invalid JSON and where, as
// encoding/json finds it: "at byte 23" counts from 1 at the start of data.
func jsonSyntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	if se, ok := err.(*json.SyntaxError); ok {
		if se.Offset >= int64(len(data)) {
			return fmt.Sprintf("%s after %d bytes", se.Error(), len(data))
		}
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	if len(data) == 0 || len(trimJSONSpace(data)) == 0 {
		return "no JSON value"
	}
	return "invalid JSON (nesting too deep)"
}

// jsonData is v ready for a struct field of type any that is encoded with
// encoding/json: raw JSON becomes a json.RawMessage, so that a []byte holding
// JSON is not sent as base64.
func jsonData(v any) (any, error) {
	if _, ok := rawJSONOf(v); !ok {
		return v, nil
	}
	raw, err := marshalValue(v)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw, nil
}

// describeJSON names what a valid JSON value is for an error text: "a
// string", "an array", or "nothing" when it is absent.
func describeJSON(data []byte) string {
	if len(data) == 0 {
		return "nothing"
	}
	if k := jsonKind(data); k == "object" || k == "array" {
		return "an " + k
	}
	return "a " + jsonKind(data)
}

// The wire codec: validJSON checks what must be valid JSON; the walker
// (eachMember, eachElement) reads JSON already checked, or only looked into,
// and never panics; strings are escaped and decoded here, and the buffers
// messages are encoded into are pooled here.

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

func skipSpace(data []byte, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
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

// eachMember calls f with the key (unescaped) and raw value of each member of
// the JSON object obj, in order, until f returns false. It reports whether it
// walked the whole object; it does not validate the values, and never panics
// on malformed input.
func eachMember(obj []byte, f func(key, val []byte) bool) bool {
	return walkJSON(obj, '{', f)
}

// eachElement is eachMember for the elements of the JSON array arr.
func eachElement(arr []byte, f func(val []byte) bool) bool {
	return walkJSON(arr, '[', func(_, val []byte) bool { return f(val) })
}

// walkJSON walks the object or array (open is '{' or '[') that data holds.
func walkJSON(data []byte, open byte, f func(key, val []byte) bool) bool {
	n, close := len(data), open+2 // '}' and ']' follow their openers by two
	i := skipSpace(data, 0)
	if i >= n || data[i] != open {
		return false
	}
	if i = skipSpace(data, i+1); i < n && data[i] == close {
		return skipSpace(data, i+1) == n
	}
	for {
		var key []byte
		if open == '{' {
			if i >= n || data[i] != '"' {
				return false
			}
			end, ok := stringEnd(data, i)
			if !ok {
				return false
			}
			if key = data[i+1 : end-1]; bytes.IndexByte(key, '\\') >= 0 {
				k, ok := jsonString(data[i:end])
				if !ok {
					return false
				}
				key = []byte(k)
			}
			if i = skipSpace(data, end); i >= n || data[i] != ':' {
				return false
			}
			i = skipSpace(data, i+1)
		}
		if i >= n {
			return false
		}
		end, ok := valueEnd(data, i)
		if !ok || !f(key, data[i:end]) {
			return false
		}
		if i = skipSpace(data, end); i >= n {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case close:
			return skipSpace(data, i+1) == n
		default:
			return false
		}
	}
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

// stringEnd returns the end of the JSON string that starts at data[i]. It
// jumps from quote to quote: a quote ends the string unless an odd run of
// backslashes precedes it.
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

// jsonString returns the value of raw when it is one JSON string, without
// encoding/json when it holds no escape.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && !hasControlByte(inner) && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// hasControlByte reports whether b holds a byte below 0x20, four words at a
// time. (The test of a word is exact as a whole: a borrow can only carry out
// of a byte below 0x20.)
func hasControlByte(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := func(b []byte) uint64 {
		x := binary.LittleEndian.Uint64(b)
		return (x - 0x20*ones) &^ x
	}
	for ; len(b) >= 32; b = b[32:] {
		if (below(b)|below(b[8:])|below(b[16:])|below(b[24:]))&highs != 0 {
			return true
		}
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

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
		return m, eachMember(raw, func(k, v []byte) bool {
			val, ok := decodeAny(v)
			m[string(k)] = val
			return ok
		})
	case '[':
		a := []any{}
		return a, eachElement(raw, func(v []byte) bool {
			val, ok := decodeAny(v)
			a = append(a, val)
			return ok
		})
	case '"':
		return jsonString(raw)
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
// them matters more than their size suggests: a fresh large buffer is
// zeroed, grows the heap, and its pages, which the runtime gives back to
// the system between collections, fault in again when touched. Like any
// sync.Pool they hold nothing across two collections in which nobody asked
// for a buffer.
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
	pool, size := &messagePool, max(n, 512)
	switch {
	case n > maxLargeMessage:
		return make([]byte, 0, n)
	case n > maxPooledMessage:
		class := bits.Len(uint(n-1)) - minLargeShift // 1<<(class+minLargeShift) >= n
		pool, size = &largePools[class], 1<<(class+minLargeShift)
	}
	if h, ok := pool.Get().(*[]byte); ok {
		b := *h
		*h = nil
		holderPool.Put(h)
		if cap(b) >= n {
			return b[:0]
		}
	}
	return make([]byte, 0, size)
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

// jsonAppender encodes a value with encoding/json (the same output and
// errors as json.Marshal) onto the end of a byte slice, without the copy
// json.Marshal returns: for a large value that copy is a second buffer of
// its size. Appenders are pooled, so encoding allocates nothing of its own.
type jsonAppender struct {
	b   []byte
	enc *json.Encoder
}

func (a *jsonAppender) Write(p []byte) (int, error) {
	a.b = append(growMessage(a.b, len(p)), p...)
	return len(p), nil
}

var jsonAppenderPool = sync.Pool{New: func() any {
	a := new(jsonAppender)
	a.enc = json.NewEncoder(a)
	return a
}}

// appendJSON appends the JSON encoding of v to b, as json.Marshal writes it,
// with a pooled json.Encoder. b is a message buffer (messageBuffer), which
// goes back to the pool when the encoding outgrows it.
func appendJSON(b []byte, v any) ([]byte, error) {
	a := jsonAppenderPool.Get().(*jsonAppender)
	a.b = b
	err := a.enc.Encode(v) // writes nothing on error
	b = a.b
	a.b = nil
	jsonAppenderPool.Put(a)
	if err != nil {
		return b, err
	}
	return b[:len(b)-1], nil // Encode ends the value with a newline
}

// appendResultJSON appends a handler's result to b, a message buffer, as
// marshalResult encodes it.
func appendResultJSON(b []byte, v any) ([]byte, error) {
	switch r := v.(type) {
	case json.RawMessage:
		if len(r) == 0 {
			return append(growMessage(b, 2), "{}"...), nil
		}
		return append(growMessage(b, len(r)), r...), nil
	case nil:
		return append(growMessage(b, 2), "{}"...), nil
	case *CallToolResult:
		return appendJSON(b, r.withTexts())
	}
	return appendJSON(b, v)
}

// hasMember reports whether the JSON object obj has a member name at its
// top level; obj must be valid JSON.
func hasMember(obj []byte, name string) bool {
	found := false
	eachMember(obj, func(key, _ []byte) bool {
		found = string(key) == name
		return !found
	})
	return found
}

// hasOtherMember reports whether the JSON object obj has a top-level
// member other than name; obj must be valid JSON.
func hasOtherMember(obj []byte, name string) bool {
	found := false
	eachMember(obj, func(key, _ []byte) bool {
		found = string(key) != name
		return !found
	})
	return found
}
