package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"unicode/utf8"
)

// The HTTP fuzz targets run as regression tests on their seeds in
// `go test`; .ci/run gives each a short bounded run. A longer hunt:
//
//	go test -run '^$' -fuzz '^FuzzHTTPHandler$' -fuzztime 10m .

// sseSeen is what a client learns from an SSE stream: each message (an
// event with data), with its type and the last event id at the time, and
// the last retry hint of a complete event.
type sseSeen struct {
	messages []string // "type|lastID|data"
	retry    int64    // ms; -1 when none
}

// sseReference parses an SSE stream by the letter of the HTML standard
// (9.2.6 "Interpreting an event stream"), as plainly as possible, to check
// sseParser against. One deliberate difference: a retry hint counts once
// its event is complete, as sseParser reports it with its event.
func sseReference(stream []byte) sseSeen {
	seen := sseSeen{retry: -1}
	stream = bytes.TrimPrefix(stream, []byte("\xef\xbb\xbf"))
	var lines []string
	var cur []byte
	complete := false // the last line had its terminator
	for i := 0; i < len(stream); i++ {
		switch c := stream[i]; c {
		case '\r':
			lines = append(lines, string(cur))
			cur = cur[:0]
			if i+1 < len(stream) && stream[i+1] == '\n' {
				i++
			}
			complete = true
		case '\n':
			lines = append(lines, string(cur))
			cur = cur[:0]
			complete = true
		default:
			cur = append(cur, c)
			complete = false
		}
	}
	_ = complete // an unterminated last line is never in lines: dropped
	var data, eventType, idBuffer, lastID string
	retry, pendingRetry := int64(-1), int64(-1)
	for _, line := range lines {
		if line == "" {
			lastID = idBuffer
			if pendingRetry >= 0 {
				retry = pendingRetry
			}
			if data != "" {
				d := strings.TrimSuffix(data, "\n")
				if d != "" {
					seen.messages = append(seen.messages, eventType+"|"+lastID+"|"+d)
				}
			}
			data, eventType, pendingRetry = "", "", -1
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		}
		switch field {
		case "event":
			eventType = value
		case "data":
			data += value + "\n"
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuffer = value
			}
		case "retry":
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && value != "" && value[0] >= '0' && value[0] <= '9' && n < 1<<31 {
				pendingRetry = n
			}
		}
	}
	seen.retry = retry
	return seen
}

// sseObserve runs sseParser over r the way the client does and returns
// what it learned.
func sseObserve(t *testing.T, r io.Reader, max int) sseSeen {
	seen := sseSeen{retry: -1}
	p := newSSEParser(r, max)
	lastID := ""
	for range 1 << 20 {
		ev, err := p.next()
		if err != nil {
			return seen
		}
		if ev.tooLarge {
			if len(ev.data) != 0 {
				t.Fatalf("an event over the limit kept %d bytes", len(ev.data))
			}
			continue
		}
		if len(ev.data) > max {
			t.Fatalf("an event of %d bytes passed the %d limit", len(ev.data), max)
		}
		if ev.hasID {
			lastID = ev.id
		}
		if ev.hasRetry {
			seen.retry = ev.retry.Milliseconds()
		}
		if len(ev.data) > 0 {
			seen.messages = append(seen.messages, ev.event+"|"+lastID+"|"+string(ev.data))
		}
	}
	t.Fatal("the parser never ended")
	return seen
}

// FuzzSSEParser: sseParser agrees with the standard's algorithm on any
// stream, however the stream is cut into reads, and never lets an event
// past the size limit.
func FuzzSSEParser(f *testing.F) {
	for _, seed := range []string{
		"data: a\n\ndata: b\n\n",
		"data: a\r\n\r\ndata: b\r\n\r\n",
		"data: a\r\rdata: b\r\r",
		"\xef\xbb\xbfdata: bom\n\n",
		"id: 1_1\nevent: message\nretry: 500\ndata: {\"a\":\ndata: 1}\n\n",
		": comment\nid\nretry: x\nretry: -1\ndata\n\n",
		"data: cut short",
		"id: a\x00b\ndata: x\n\ndata:y\r\n\n\r\n",
		"event: endpoint\ndata: /mcp?sessionId=1\n\n",
		"data:" + strings.Repeat("x", 100) + "\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		want := sseReference(stream)
		got := sseObserve(t, bytes.NewReader(stream), len(stream)+1)
		if !slices.Equal(got.messages, want.messages) || got.retry != want.retry {
			t.Fatalf("stream %q:\n got %q retry %d\nwant %q retry %d", stream, got.messages, got.retry, want.messages, want.retry)
		}
		if byByte := sseObserve(t, iotest.OneByteReader(bytes.NewReader(stream)), len(stream)+1); !slices.Equal(byByte.messages, got.messages) || byByte.retry != got.retry {
			t.Fatalf("stream %q read a byte at a time: %q, at once: %q", stream, byByte.messages, got.messages)
		}
		sseObserve(t, iotest.HalfReader(bytes.NewReader(stream)), 8) // the limit holds
	})
}

// paramsReference is how the server's own decoding (encoding/json) reads
// the params members the HTTP layer checks headers against.
type paramsReference struct {
	Name      json.RawMessage `json:"name"`
	URI       json.RawMessage `json:"uri"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

// FuzzHTTPClassify: the HTTP layer's reading of a message (era, kind, id,
// method, name, uri, arguments) never panics, is the same whether it comes
// from the engine's envelope decoder (server) or from the non-validating
// scan (client), and sees in the params what encoding/json sees, so that a
// header is checked against what the server then acts on.
func FuzzHTTPClassify(f *testing.F) {
	for _, seed := range []string{
		modernRequest("1", "tools/call", `"name":"echo","arguments":{"a":1}`),
		modernRequest(`"x"`, "resources/read", `"uri":"file:///a%20b"`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a","NAME":"b","argumentſ":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"esc\"aped","_meta":{"io.modelcontextprotocol/protocolVersion":5}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":null}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"a":"\\"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"\ud800"}}`,
		`{`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"},"params":{"name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a"},"params":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		scanned := new(httpMessage)
		sniffMessage(data, scanned) // never panics, whatever data is
		eachMember(data, func(key, val []byte) bool {
			eachMember(val, func(key, val []byte) bool { return true })
			return true
		})
		decoded, isJSON := decodeHTTPMessage(data)
		if json.Valid(data) != isJSON && utf8.Valid(data) {
			t.Fatalf("%q: decodeHTTPMessage says JSON %v", data, isJSON)
		}
		if !decoded.decoded {
			return
		}
		// What the server reads, the client reads the same.
		type view struct {
			Kind             messageKind
			ID               ID
			Method           string
			Params           string
			HasVersion       bool
			Version          string
			HasCaps          bool
			Name, URI, Args  string
			HasError, HasRes bool
		}
		see := func(m *httpMessage) view {
			return view{m.kind, m.id, m.method, string(m.params), m.hasVersion, m.version, m.hasCaps,
				string(m.name), string(m.uri), string(m.args), m.wire.Error != nil, m.wire.Result != nil}
		}
		if a, b := see(decoded), see(scanned); a != b {
			t.Fatalf("%q:\nserver reads %+v\nclient reads %+v", data, a, b)
		}
		// The params members are those encoding/json decodes.
		var ref paramsReference
		if p := trimJSONSpace(decoded.params); len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &ref) != nil {
			return
		}
		if string(ref.Name) != string(decoded.name) || string(ref.URI) != string(decoded.uri) || string(ref.Arguments) != string(decoded.args) {
			t.Fatalf("%q: name %s uri %s arguments %s; encoding/json reads %s %s %s", data, decoded.name, decoded.uri, decoded.args, ref.Name, ref.URI, ref.Arguments)
		}
		if decoded.hasVersion != (ref.Meta.Version != nil) || decoded.hasCaps != (ref.Meta.Caps != nil && string(ref.Meta.Caps) != "null") {
			t.Fatalf("%q: _meta read as version %v caps %v", data, decoded.hasVersion, decoded.hasCaps)
		}
		var v string
		if json.Unmarshal(ref.Meta.Version, &v) == nil && v != decoded.version {
			t.Fatalf("%q: version %q, encoding/json reads %q", data, decoded.version, v)
		}
		if name, ok := jsonString(decoded.name); ok {
			var want string
			if json.Unmarshal(decoded.name, &want) != nil || want != name {
				t.Fatalf("%q: name %q, encoding/json reads %q", data, name, want)
			}
		}
	})
}

// fuzzServer is the server the handler fuzz target talks to: nothing in it
// waits for a client, so every request ends on its own.
func fuzzServer() *Server {
	s := NewServer(Implementation{Name: "fuzz", Version: "1"})
	s.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Gateway().Progress(1, 2, "half")
		return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments))}}, nil
	})
	s.AddTool(Tool{Name: "headers", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("ok")}}, nil
		})
	return s
}

// FuzzHTTPHandler drives the Streamable HTTP handler with arbitrary POST,
// DELETE and OPTIONS requests (body and the headers it classifies:
// version, method, name, a mirrored parameter, Accept, Content-Type,
// session, Origin; a body shorter or longer than its Content-Length, or
// of no announced length; CORS on or off) and checks that every answer is
// well formed: a known status, no body with 202/204, JSON-RPC in every
// JSON body and SSE event, no session id given to a 2026-07-28 request,
// and the request's own id on its answer; a foreign or malformed Origin
// refused, CORS headers only for the CORS origin, a body cut short never
// served. Each request runs in a synctest bubble: one still running when
// everything is blocked waits for its client (a listen stream), which then
// goes away.
//
// The handler has an authorizer: who picks the request's principal (alice,
// who opens the live sessions, bob, anonymous, or none: 401), and with
// session bit 8 sid is a session id of any bytes. A session id that is not
// visible ASCII, or alice's session named by another principal, never gets
// a legacy request through (an odd id is not even looked up: no 404), and
// alice's session outlives the others' requests.
func FuzzHTTPHandler(f *testing.F) {
	add := func(method, body, version, mcpMethod, name, param, accept, ctype string, session uint8) {
		f.Add(method, []byte(body), version, mcpMethod, name, param, accept, ctype, session, "", 0, "", uint8(0))
	}
	const both = "application/json, text/event-stream"
	add("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}`, "", "", "", "", both, "application/json", 0)
	add("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":1}}}`, "2025-11-25", "", "", "", both, "application/json", 1)
	add("POST", modernRequest("3", "tools/call", `"name":"headers","arguments":{"region":"eu","n":4}`), "2026-07-28", "tools/call", "headers", "eu", both, "application/json", 0)
	add("POST", modernRequest("4", "tools/call", `"name":"echo"`), "2026-07-28", "tools/call", "=?base64?ZWNobw==?=", "", "*/*", "application/json; charset=utf-8", 2)
	add("POST", modernRequest("5", "server/discover", ""), "2026-07-28", "server/discover", "", "", both, "application/json", 0)
	add("POST", `[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`, "2025-03-26", "", "", "", both, "application/json", 1)
	add("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, "2025-11-25", "", "", "", both, "application/json", 1)
	add("POST", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"x\":\"\xff\"}", "", "", "", "", both, "application/json", 1)
	add("POST", `{"jsonrpc":"2.0","id":8,"method":"ping"}`, "2099-01-01", "", "", "", "text/plain", "text/plain", 3)
	add("DELETE", ``, "2025-11-25", "", "", "", "", "", 1)
	// Origins, CORS (session bit 4 turns it on), announced lengths.
	discover := []byte(modernRequest("9", "server/discover", ""))
	for _, origin := range []string{"http://example.com", "https://example.com/", "http://evil.com@example.com", "ftp://example.com", "null", "https://app.example.com", "HTTP://EXAMPLE.COM", "http://example.com/mcp", "http://example.com?"} {
		f.Add("POST", discover, "2026-07-28", "server/discover", "", "", both, "application/json", uint8(4), origin, 0, "", uint8(0))
		f.Add("OPTIONS", []byte(nil), "", "", "Content-Type, Mcp-Param-Region, bad name", "", "", "", uint8(4), origin, 0, "", uint8(0))
	}
	f.Add("OPTIONS", []byte(nil), "", "", "Mcp-Session-Id", "", "", "", uint8(0), "https://app.example.com", 0, "", uint8(0))
	for _, delta := range []int{-10, -1, 1, 10, 1 << 16, -1 << 20} {
		f.Add("POST", discover, "2026-07-28", "server/discover", "", "", both, "application/json", uint8(0), "", delta, "", uint8(0))
		f.Add("POST", []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), "2025-11-25", "", "", "", both, "application/json", uint8(1), "", delta, "", uint8(0))
	}
	// Principals and session ids of any bytes (session bit 8).
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	for who := range uint8(4) {
		f.Add("POST", []byte(ping), "2025-11-25", "", "", "", both, "application/json", uint8(1), "", 0, "", who)
		f.Add("DELETE", []byte{}, "2025-11-25", "", "", "", "", "", uint8(1), "", 0, "", who)
		f.Add("POST", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "", "", "", "", both, "application/json", uint8(1), "", 0, "", who)
	}
	for _, sid := range []string{"a b", "a\tb", "\x7f", "s\xc3\xa9", "\xff", "\x00", " ", "ok-id"} {
		f.Add("POST", []byte(ping), "2025-11-25", "", "", "", both, "application/json", uint8(8), "", 0, sid, uint8(0))
		f.Add("DELETE", []byte{}, "", "", "", "", "", "", uint8(8), "", 0, sid, uint8(2))
	}
	f.Fuzz(func(t *testing.T, method string, body []byte, version, mcpMethod, name, param, accept, ctype string, session uint8, origin string, delta int, sid string, who uint8) {
		synctest.Test(t, func(t *testing.T) {
			fuzzHandlerOnce(t, method, body, version, mcpMethod, name, param, accept, ctype, session, origin, delta, sid, who)
		})
	})
}

// aliceSession initializes a legacy session as alice on h.
func aliceSession(tb testing.TB, h http.Handler) string {
	rec := serveDirect(h, "POST", initBody, postHeaders("Authorization", "Bearer alice"))
	sid := rec.Header().Get("Mcp-Session-Id")
	if rec.Code != 200 || sid == "" {
		tb.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	if rec := serveDirect(h, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, postHeaders("Mcp-Session-Id", sid, "Authorization", "Bearer alice")); rec.Code != 202 {
		tb.Fatalf("initialized: %d %s", rec.Code, rec.Body)
	}
	return sid
}

// fuzzCORSOrigin is the origin the handler fuzz target lets in with
// WithAllowedOrigins, when it turns CORS on.
const fuzzCORSOrigin = "https://app.example.com"

// announcedBody is a request body as net/http gives it to a handler when
// the client announces length bytes and sends data: cut at length, and
// failing once data ends short of it.
type announcedBody struct {
	data []byte
	left int64
}

func (b *announcedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if len(b.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p[:min(int64(len(p)), b.left)], b.data)
	b.data, b.left = b.data[n:], b.left-int64(n)
	return n, nil
}

// fuzzPrincipals are the Authorization headers of the handler fuzz
// target's principals: alice, bob, anonymous, and none (refused).
var fuzzPrincipals = [4]string{"Bearer alice", "Bearer bob", "Bearer -", ""}

func fuzzHandlerOnce(t *testing.T, method string, body []byte, version, mcpMethod, name, param, accept, ctype string, session uint8, origin string, delta int, sid string, who uint8) {
	opts := []HTTPHandlerOption{WithMaxBodyBytes(1 << 16), WithKeepAlive(0), WithAuthorizer(AuthorizerFunc(tokenAuthorizer))}
	cors := session&4 != 0
	if cors {
		opts = append(opts, WithAllowedOrigins(fuzzCORSOrigin))
	}
	h := NewHTTPHandler(fuzzServer(), opts...).(*httpHandler)
	defer h.shutdown()
	if method != "DELETE" && method != "OPTIONS" {
		method = "POST"
	}
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	req := httptest.NewRequestWithContext(ctx, method, "/mcp", bytes.NewReader(body))
	if announced := int64(len(body)) + int64(delta); delta != 0 {
		if announced < 0 {
			req.ContentLength = -1 // chunked: the whole body, its length unknown
		} else {
			req.ContentLength = announced
			req.Body = io.NopCloser(&announcedBody{data: body, left: announced})
		}
	}
	set := func(k, v string) {
		if v != "" {
			req.Header[k] = []string{v}
		}
	}
	set("Mcp-Protocol-Version", version)
	set("Mcp-Method", mcpMethod)
	set("Mcp-Name", name)
	set("Mcp-Param-Region", param)
	set("Accept", accept)
	set("Content-Type", ctype)
	set("Origin", origin)
	if method == "OPTIONS" {
		set("Access-Control-Request-Method", "POST")
		set("Access-Control-Request-Headers", name)
	}
	set("Authorization", fuzzPrincipals[who%4])
	live := ""
	switch session % 4 {
	case 1: // a live session of alice's
		live = aliceSession(t, h)
		set("Mcp-Session-Id", live)
	case 2: // a forged one
		set("Mcp-Session-Id", "forged")
	case 3: // an ended one
		sid := aliceSession(t, h)
		serveDirect(h, "DELETE", "", map[string]string{"Mcp-Session-Id": sid, "Authorization": "Bearer alice"})
		set("Mcp-Session-Id", sid)
	}
	odd := false
	if session&8 != 0 { // any bytes
		set("Mcp-Session-Id", sid)
		live = ""
		odd = sid != "" && strings.ContainsFunc(sid, func(r rune) bool { return r < 0x21 || r > 0x7e })
	}
	// Whether the request takes the legacy road, where its session id
	// counts, as the handler judges it.
	legacy := !isModernVersion(version)
	if method == "POST" {
		msgs, batch, ok, one := readPOSTBody(body)
		legacy = ok && !h.isModern(req, msgs, batch)
		one.release()
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, req)
	}()
	synctest.Wait()
	select {
	case <-done:
	default:
		leave()
		<-done
	}
	checkAdmission(t, req, body, delta, cors, rec)
	foreign := live != "" && who%4 != 0
	// An odd id is refused before any lookup: never the 404 of one.
	if legacy && (foreign || odd) && (rec.Code < 300 || odd && rec.Code == 404) {
		t.Fatalf("%s with session id %q as %q: %d %s", method, req.Header.Get(headerSessionID), fuzzPrincipals[who%4], rec.Code, rec.Body)
	}
	if foreign && h.session(live) == nil {
		t.Fatalf("%s as %q ended alice's session", method, fuzzPrincipals[who%4])
	}
	if rec.Code == http.StatusForbidden || method == "OPTIONS" {
		return // answered before the body was looked at
	}
	checkHTTPAnswer(t, req, body, rec)
}

// checkAdmission checks what the handler fuzz target's answer says of the
// request's origin, CORS and announced length. The handler serves the
// host example.com and, with CORS on, fuzzCORSOrigin.
func checkAdmission(t *testing.T, req *http.Request, body []byte, delta int, cors bool, rec *httptest.ResponseRecorder) {
	t.Helper()
	origin := req.Header.Get("Origin")
	trimmed := strings.TrimSuffix(origin, "/")
	own := strings.EqualFold(trimmed, "http://example.com") || strings.EqualFold(trimmed, "https://example.com")
	listedCORS := cors && strings.EqualFold(trimmed, fuzzCORSOrigin)
	switch {
	case origin == "":
	case strings.Contains(origin, "@"):
		if rec.Code != http.StatusForbidden {
			t.Fatalf("Origin %q with userinfo: %d", origin, rec.Code)
		}
	case own || listedCORS:
		if rec.Code == http.StatusForbidden {
			t.Fatalf("Origin %q refused: %s", origin, rec.Body)
		}
	default:
		if rec.Code != http.StatusForbidden {
			t.Fatalf("Origin %q (CORS %v) let in: %d", origin, cors, rec.Code)
		}
	}
	acao := rec.Header().Get("Access-Control-Allow-Origin")
	if acao != "" && (!listedCORS || acao != origin) {
		t.Fatalf("Access-Control-Allow-Origin %q for Origin %q (CORS %v)", acao, origin, cors)
	}
	if cors != slices.Contains(rec.Header().Values("Vary"), "Origin") && rec.Code != http.StatusForbidden {
		t.Fatalf("CORS %v, Vary %q", cors, rec.Header().Values("Vary"))
	}
	if req.Method == "OPTIONS" {
		want := http.StatusMethodNotAllowed
		if listedCORS {
			want = http.StatusNoContent
		} else if req.Header.Get("Authorization") == "" {
			// Not a preflight: the authorizer refuses it before its
			// method is looked at.
			want = http.StatusUnauthorized
		}
		if rec.Code != want && rec.Code != http.StatusForbidden {
			t.Fatalf("OPTIONS from %q (CORS %v): %d, want %d", origin, cors, rec.Code, want)
		}
		if rec.Code == http.StatusNoContent && (acao != origin || rec.Header().Get("Access-Control-Allow-Methods") == "") {
			t.Fatalf("a preflight without its headers: %v", rec.Header())
		}
		return
	}
	if delta > 0 && req.Method == "POST" && (rec.Code == 200 || rec.Code == 202) {
		t.Fatalf("a body %d bytes short of its Content-Length served: %d %s", delta, rec.Code, rec.Body)
	}
	if announced := int64(len(body)) + int64(delta); announced > 1<<16 && req.Method == "POST" && (rec.Code == 200 || rec.Code == 202) {
		t.Fatalf("a body of %d bytes served over the cap: %d", announced, rec.Code)
	}
}

// checkHTTPAnswer checks one recorded answer of the handler fuzz target.
func checkHTTPAnswer(t *testing.T, req *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch rec.Code {
	case 200, 202, 204, 400, 401, 404, 405, 406, 409, 413, 415, 503:
	default:
		t.Fatalf("status %d for %s %q: %s", rec.Code, req.Method, body, rec.Body)
	}
	out := rec.Body.Bytes()
	if rec.Code == 202 || rec.Code == 204 {
		if len(out) != 0 {
			t.Fatalf("%d with a body: %s", rec.Code, out)
		}
		return
	}
	modern := isModernVersion(req.Header.Get(headerProtocolVersion)) || bytes.Contains(body, []byte(metaProtocolVersion))
	if modern && rec.Header().Get(headerSessionID) != "" && !bytes.Contains(body, []byte(`"initialize"`)) {
		t.Fatalf("a session id for a 2026-07-28 request %q", body)
	}
	var messages [][]byte
	switch ct := mediaTypeOf(rec.Header().Get("Content-Type")); ct {
	case "application/json":
		var items []json.RawMessage
		if trimmed := trimJSONSpace(out); len(trimmed) == 0 || trimmed[0] != '[' || json.Unmarshal(trimmed, &items) != nil {
			items = []json.RawMessage{out}
		}
		for _, it := range items {
			messages = append(messages, it)
		}
	case "text/event-stream":
		p := newSSEParser(bytes.NewReader(out), 1<<20)
		for {
			ev, err := p.next()
			if err != nil {
				break
			}
			if len(ev.data) > 0 {
				messages = append(messages, ev.data)
			}
		}
	default:
		t.Fatalf("status %d with content type %q: %s", rec.Code, ct, out)
	}
	var single wireMessage
	singleID := ID{}
	if decodeEnvelope(trimJSONSpace(body), &single) == nil && len(single.ID) > 0 && single.Method != "" {
		singleID, _ = parseID(single.ID)
	}
	for _, msg := range messages {
		var m wireMessage
		if err := decodeEnvelope(msg, &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("not JSON-RPC: %s (%v)", msg, err)
		}
		kind, _ := m.kind()
		if kind == kindResponse && singleID.IsValid() && len(m.ID) > 0 {
			if id, _ := parseID(m.ID); id != singleID {
				t.Fatalf("the answer to %s names id %s: %s", singleID, id, msg)
			}
		}
		if kind == kindInvalid {
			t.Fatalf("an invalid message: %s", msg)
		}
	}
	if rec.Code >= 400 && len(messages) != 1 {
		t.Fatalf("%d with %d messages: %s", rec.Code, len(messages), out)
	}
}

// FuzzHTTPHeaderValue: an Mcp-Name or Mcp-Param-* value survives encoding
// and decoding whatever it is, is always sent as visible ASCII, and
// decoding never panics; an argument matches the header the client
// derives from it.
func FuzzHTTPHeaderValue(f *testing.F) {
	for _, seed := range []string{"us-west1", " padded ", "日本", "=?base64?SGVsbG8=?=", "=?base64?!!?=", "", "\x00\n", "42", "-1.5e3", "1e400", "true", `"quoted"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := encodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] < 0x20 || enc[i] > 0x7e {
				t.Fatalf("encodeHeaderValue(%q) = %q: not visible ASCII", s, enc)
			}
		}
		if dec, ok := decodeHeaderValue(enc); !ok || dec != s {
			t.Fatalf("decodeHeaderValue(encodeHeaderValue(%q)) = %q, %v", s, dec, ok)
		}
		decodeHeaderValue(s)
		arg, _ := json.Marshal(s)
		if v, ok := headerValueOf(arg); ok {
			if dec, _ := decodeHeaderValue(v); !headerMatchesArgument(dec, arg) {
				t.Fatalf("argument %s does not match its own header %q", arg, v)
			}
		}
		if json.Valid([]byte(s)) && len(trimJSONSpace([]byte(s))) > 0 {
			arg := trimJSONSpace([]byte(s))
			if v, ok := headerValueOf(arg); ok {
				if dec, _ := decodeHeaderValue(v); !headerMatchesArgument(dec, arg) {
					t.Fatalf("argument %s does not match its own header %q", arg, v)
				}
			}
		}
		// Event ids written by the handler read back.
		if s != "" && !strings.ContainsAny(s, "\r\n\x00") {
			o := &sseWriter{streamID: s}
			line := strings.TrimSuffix(strings.TrimPrefix(string(o.appendID(nil, 7)), "id: "), "\n")
			if id, n, ok := parseEventID(line); !ok || id != s || n != 7 {
				t.Fatalf("event id of stream %q reads back as %q %d %v", s, id, n, ok)
			}
		}
	})
}
