package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// HTTP header names of Streamable HTTP.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"
	headerLastEventID     = "Last-Event-Id"
)

// checkModernHeaders checks a 2026-07-28 request's headers against its body,
// in the order the conformance suite expects; the protocol version itself
// and capabilities are left to the engine.
func (h *httpHandler) checkModernHeaders(r *http.Request, m *httpMessage) (int, *Error) {
	mismatch := func(format string, args ...any) (int, *Error) {
		return http.StatusBadRequest, &Error{Code: CodeHeaderMismatch, Message: "Header mismatch: " + fmt.Sprintf(format, args...)}
	}
	hv, ok := singleHeader(r, headerProtocolVersion)
	if !ok {
		return mismatch("%s", headerMissing(r, "MCP-Protocol-Version"))
	}
	if !m.hasVersion || !m.hasCaps {
		missing := metaProtocolVersion
		if m.hasVersion {
			missing = metaClientCapabilities
		}
		return http.StatusBadRequest, &Error{Code: CodeInvalidParams, Message: "Invalid params: missing required _meta[\"" + missing + "\"]"}
	}
	if hv != m.version {
		return mismatch("MCP-Protocol-Version %q does not match _meta protocolVersion %q", hv, m.version)
	}
	if !isSupportedVersion(m.version) || !isModernVersion(m.version) {
		return 0, nil // the engine answers -32022
	}
	if v, ok := singleHeader(r, headerMethod); !ok {
		return mismatch("%s (it names the method, %q)", headerMissing(r, headerMethod), m.method)
	} else if v != m.method {
		return mismatch("Mcp-Method %q does not match the method %q", v, m.method)
	}
	var named json.RawMessage
	switch m.method {
	case "tools/call", "prompts/get":
		named = m.name
	case "resources/read":
		named = m.uri
	case "tasks/get", "tasks/update", "tasks/cancel":
		named = m.taskID
	}
	if want, ok := jsonString(named); ok {
		v, ok := singleHeader(r, headerName)
		if !ok {
			return mismatch("%s for %s", headerMissing(r, headerName), m.method)
		}
		decoded, ok := decodeHeaderValue(v)
		if !ok || decoded != want {
			return mismatch("Mcp-Name %q does not match %q", v, want)
		}
	}
	if name, ok := jsonString(m.name); ok && m.method == "tools/call" {
		params, _ := toolParamHeaders(h.srv.toolInputSchema(name))
		for _, p := range params {
			key := headerParamPrefix + p.name
			arg, present := argumentAt(m.args, p.path)
			v, sent := singleHeader(r, key)
			if !present {
				if sent {
					return mismatch("%s is set but the argument %s is absent", key, strings.Join(p.path, "."))
				}
				continue
			}
			if !sent {
				return mismatch("%s: argument %s is set", headerMissing(r, key), strings.Join(p.path, "."))
			}
			decoded, ok := decodeHeaderValue(v)
			if !ok || !headerMatchesArgument(decoded, arg) {
				return mismatch("%s %q does not match the argument %s", key, v, strings.Join(p.path, "."))
			}
		}
	}
	return 0, nil
}

// headerMissing says why singleHeader found no value for key: the header is
// absent, or sent more than once.
func headerMissing(r *http.Request, key string) string {
	if n := len(r.Header.Values(key)); n > 1 {
		return fmt.Sprintf("the %s header must be sent once, not %d times", key, n)
	}
	return "the " + key + " header is required"
}

// singleHeader returns a header's only value; ok is false when it is absent
// or repeated. An empty value counts as present.
func singleHeader(r *http.Request, key string) (string, bool) {
	vs := r.Header.Values(key)
	if len(vs) != 1 {
		return "", false
	}
	return vs[0], true
}

// toolInputSchema returns the input schema of a registered tool, or nil.
func (s *Server) toolInputSchema(name string) json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t, ok := s.tools.get(name); ok && t != nil {
		return t.tool.InputSchema
	}
	return nil
}

// paramHeader is a tool argument mirrored into an Mcp-Param-* header, per
// its schema's x-mcp-header annotation (2026-07-28).
type paramHeader struct {
	name string   // the header is Mcp-Param-<name>
	path []string // where the argument is, through properties
}

// toolParamHeaders reads the x-mcp-header annotations of an input schema.
// It reports an error for an annotation the protocol forbids: empty or not
// an HTTP token, on a property that is not a string, integer or boolean,
// reached other than through properties, or repeated (ignoring case).
func toolParamHeaders(schema json.RawMessage) ([]paramHeader, error) {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, nil
	}
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return nil, nil
	}
	var out []paramHeader
	seen := map[string]bool{}
	var walk func(node any, path []string, chain bool) error
	walk = func(node any, path []string, chain bool) error {
		switch n := node.(type) {
		case []any:
			for _, v := range n {
				if err := walk(v, path, false); err != nil {
					return err
				}
			}
		case map[string]any:
			if raw, ok := n["x-mcp-header"]; ok {
				name, _ := raw.(string)
				switch typ, _ := n["type"].(string); {
				case !chain || len(path) == 0:
					return errors.New("x-mcp-header is allowed only on properties reached through properties")
				case !isHTTPToken(name):
					return fmt.Errorf("x-mcp-header %q is not a valid header name", raw)
				case typ != "string" && typ != "integer" && typ != "boolean":
					return fmt.Errorf("x-mcp-header %q is on a property of type %q; only string, integer and boolean may be mirrored", name, typ)
				case seen[strings.ToLower(name)]:
					return fmt.Errorf("x-mcp-header %q is repeated", name)
				}
				seen[strings.ToLower(name)] = true
				out = append(out, paramHeader{name: name, path: slices.Clone(path)})
			}
			for k, v := range n {
				switch k {
				case "const", "default", "enum", "examples":
					// Data, not schemas.
				case "properties":
					props, ok := v.(map[string]any)
					if !ok {
						continue
					}
					for pk, pv := range props {
						if err := walk(pv, append(path[:len(path):len(path)], pk), chain); err != nil {
							return err
						}
					}
				default:
					if err := walk(v, path, false); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := walk(root, nil, true); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func isHTTPToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte[s[i]] {
			return false
		}
	}
	return true
}

// tokenByte says which bytes an HTTP token (RFC 9110, 5.6.2) may hold:
// visible ASCII except the delimiters. A header name of every request is
// checked against it.
var tokenByte = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// argumentAt returns the argument at path; absent and null are the same.
func argumentAt(args json.RawMessage, path []string) (json.RawMessage, bool) {
	v := args
	for _, k := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return nil, false
		}
		if v = obj[k]; v == nil {
			return nil, false
		}
	}
	if v = trimJSONSpace(v); len(v) == 0 || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// headerValueOf renders an argument as an Mcp-Param-* value: strings (in
// base64 when they are not plain ASCII), numbers and booleans as written.
func headerValueOf(arg json.RawMessage) (string, bool) {
	switch arg[0] {
	case '"':
		s, ok := jsonString(arg)
		if !ok {
			return "", false
		}
		return encodeHeaderValue(s), true
	case '{', '[':
		return "", false
	}
	return string(arg), true
}

// headerMatchesArgument compares a decoded header value with the argument
// it mirrors: numbers by value (42 is 42.0), the rest as text.
func headerMatchesArgument(h string, arg json.RawMessage) bool {
	switch arg[0] {
	case '"':
		s, ok := jsonString(arg)
		return ok && s == h
	case 't', 'f':
		return h == string(arg)
	case '{', '[':
		return false
	}
	h = strings.TrimSpace(h)
	if h == string(arg) {
		return true // also for numbers no float64 holds, like 1e400
	}
	a, err1 := strconv.ParseFloat(string(arg), 64)
	b, err2 := strconv.ParseFloat(h, 64)
	return err1 == nil && err2 == nil && a == b
}

const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// encodeHeaderValue writes a value as is when it is plain visible ASCII
// without surrounding spaces, and as =?base64?…?= otherwise.
func encodeHeaderValue(s string) string {
	plain := !(strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix))
	for i := 0; i < len(s) && plain; i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
		}
	}
	if plain && s == strings.TrimSpace(s) {
		return s
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
}

// decodeHeaderValue undoes encodeHeaderValue; ok is false for a malformed
// base64 value.
func decodeHeaderValue(s string) (string, bool) {
	if len(s) < len(base64Prefix)+len(base64Suffix) || !strings.HasPrefix(s, base64Prefix) || !strings.HasSuffix(s, base64Suffix) {
		return s, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s[len(base64Prefix) : len(s)-len(base64Suffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerLocked builds the headers of a POST carrying m. Messages that
// carry the same headers share one map, which net/http only reads.
func (t *HTTPTransport) headerLocked(m *httpMessage) http.Header {
	if !m.hasVersion {
		if t.legacyHeader == nil || t.legacySession != t.sessionID || t.legacyVersion != t.version {
			t.legacyHeader, t.legacySession, t.legacyVersion = t.newHeader(m, "", false), t.sessionID, t.version
		}
		return t.legacyHeader
	}
	key := modernHeaderKey{version: m.version}
	named := false
	if m.kind == kindRequest {
		key.method = m.method
		key.name, named = m.mirroredName()
	}
	if named && m.method == "tools/call" && len(t.toolHeaders[key.name]) > 0 {
		return t.newHeader(m, key.name, named) // the arguments' headers vary by call
	}
	if h := t.modernHeaders[key]; h != nil {
		return h
	}
	h := t.newHeader(m, key.name, named)
	if len(t.modernHeaders) >= maxModernHeaders {
		clear(t.modernHeaders)
	}
	putEntry(&t.modernHeaders, key, h)
	return h
}

// modernHeaderKey is what the headers of a 2026-07-28 message depend on
// besides the transport's own: its revision, and a request's method and the
// name it mirrors.
type modernHeaderKey struct{ version, method, name string }

// maxModernHeaders bounds the header maps an HTTPTransport keeps for
// 2026-07-28 messages; past it they are made afresh.
const maxModernHeaders = 64

// mirroredName is what a 2026-07-28 request's Mcp-Name header carries, if
// it has one: the tool or prompt name, the resource URI, the task id.
func (m *httpMessage) mirroredName() (string, bool) {
	switch m.method {
	case "tools/call", "prompts/get":
		return jsonString(m.name)
	case "resources/read":
		return jsonString(m.uri)
	case "tasks/get", "tasks/update", "tasks/cancel":
		return jsonString(m.taskID)
	}
	return "", false
}

// newHeader makes the headers of a POST carrying m; name is what its
// Mcp-Name mirrors, if named.
func (t *HTTPTransport) newHeader(m *httpMessage, name string, named bool) http.Header {
	h := make(http.Header, len(t.cfg.header)+6)
	for k, v := range t.cfg.header {
		h[k] = slices.Clone(v)
	}
	// The values share one array, and the keys are canonical already: a
	// header costs no allocation of its own.
	vals := headerValues{h: h, vals: make([]string, 0, 5)}
	vals.set("Content-Type", "application/json")
	vals.set("Accept", "application/json, text/event-stream")
	if !m.hasVersion {
		if t.sessionID != "" {
			vals.set(headerSessionID, t.sessionID)
		}
		if t.version != "" {
			vals.set(headerProtocolVersion, t.version)
		}
		return h
	}
	vals.set(headerProtocolVersion, m.version)
	if m.kind != kindRequest {
		return h
	}
	vals.set(headerMethod, m.method)
	if named {
		vals.set(headerName, encodeHeaderValue(name))
	}
	if m.method == "tools/call" && named {
		for _, p := range t.toolHeaders[name] {
			if arg, ok := argumentAt(m.args, p.path); ok {
				if v, ok := headerValueOf(arg); ok {
					h.Set(headerParamPrefix+p.name, v)
				}
			}
		}
	}
	return h
}

// headerValues sets headers whose canonical keys are known, their values
// sharing one array.
type headerValues struct {
	h    http.Header
	vals []string
}

func (v *headerValues) set(key, value string) {
	v.vals = append(v.vals, value)
	n := len(v.vals)
	v.h[key] = v.vals[n-1 : n : n]
}

// learnTools records the x-mcp-header arguments of listed tools and drops
// the tools whose annotations are invalid, as 2026-07-28 requires of HTTP
// clients.
func (t *HTTPTransport) learnTools(msg []byte, result json.RawMessage) []byte {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return msg
	}
	var tools []json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return msg
	}
	kept := tools[:0:0]
	learned := make(map[string][]paramHeader)
	for _, raw := range tools {
		var tool struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &tool) != nil {
			kept = append(kept, raw)
			continue
		}
		params, err := toolParamHeaders(tool.InputSchema)
		if err != nil {
			t.log.Warn("dropping a tool with an invalid x-mcp-header annotation", "tool", tool.Name, "err", err)
			continue
		}
		learned[tool.Name] = params
		kept = append(kept, raw)
	}
	t.mu.Lock()
	for name, params := range learned {
		if len(params) == 0 {
			delete(t.toolHeaders, name)
		} else {
			t.toolHeaders[name] = params
		}
	}
	t.mu.Unlock()
	if len(kept) == len(tools) {
		return msg
	}
	res["tools"], _ = json.Marshal(kept)
	var envelope map[string]json.RawMessage
	if json.Unmarshal(msg, &envelope) != nil {
		return msg
	}
	envelope["result"], _ = json.Marshal(res)
	out, err := json.Marshal(envelope)
	if err != nil {
		return msg
	}
	return out
}
