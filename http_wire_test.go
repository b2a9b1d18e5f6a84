package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Golden HTTP transcripts: testdata/wire/http/*.txt are Streamable HTTP
// conversations, played against the handler (the transcript's requests
// sent to NewHTTPHandler, its responses checked) and, unless marked
// handler-only, against the client (a real Client on NewHTTPTransport
// drives the conversation, a fake server answers from the transcript and
// checks the client's requests). The format:
//
//	# a comment
//	mode: both | handler          (handler: the client never does this)
//	server: default | tasks | auth
//
//	> call POST /mcp              a request named call (~: it may arrive
//	Content-Type: application/json    after the requests that follow it)
//	Mcp-Session-Id: $sid
//
//	{"jsonrpc":"2.0","id":2,...}
//
//	< call 200                    its response: status, headers, body
//	Content-Type: text/event-stream
//
//	id: $e1                       SSE events, a blank line between them
//	data: {...}
//
//	< call +                      more of call's stream, later
//	data: {...}
//
//	x call                        the client closes call's stream
//	cut call                      the connection of call's stream breaks
//	                              (the player, or the fake server, drops it)
//
// A stream ends after its last part unless an x line closes it. The
// headers that matter are checked both ways, absent when not listed
// (httpWireRequestHeaders, httpWireResponseHeaders); others only when
// listed. Bodies are compared as JSON values (wireMatch). "$name" (a whole
// header value, an SSE id, a JSON string) is a value the side that
// produces it picks and the other side captures the first time and checks
// afterwards: the handler's session and event ids, ask ids, requestState,
// task ids; the fake server makes up "wire-name". "$time…" is any RFC 3339
// time, never captured. Every body is sent by one side or the other, so
// none has the "…" of the stdio transcripts. Requests of one stream are played in the order of
// the file; a response part waits for every request and close above it.
//
// go test -run TestHTTPWireTranscripts -update rewrites the responses from
// what the handler answers, volatile values named in order of appearance
// ($sid, $e1…, $ask1…, $state1…, $task1…, $time); the requests, the
// comments and where a stream's parts split stay as they are (a part
// before the last reads as many events as it lists).

var updateWire = flag.Bool("update", false, "rewrite the responses of testdata/wire/http from the handler")

// The headers checked whether or not the transcript lists them.
var (
	httpWireRequestHeaders  = []string{"Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Mcp-Method", "Mcp-Name", "Authorization"}
	httpWireResponseHeaders = []string{"Content-Type", "Mcp-Session-Id", "Www-Authenticate", "Allow", "Retry-After"}
)

type httpWireStepKind int

const (
	stepRequest httpWireStepKind = iota
	stepResponse
	stepClose
	stepCut
)

// httpWireStep is one block of a transcript.
type httpWireStep struct {
	kind   httpWireStepKind
	line   int
	name   string
	method string // request
	path   string
	late   bool // request: may arrive after the requests below it
	status int  // response: 0 for a continuation
	header [][2]string
	body   string          // request, JSON response
	events []httpWireEvent // SSE response
	sse    bool
	last   bool     // the last part of its stream
	open   bool     // its stream is closed by an x line, not ended
	text   []string // the block's lines, its head left out
	lead   []string // the comments above it
}

// httpWireEvent is an SSE event: its fields in order, comments left out.
type httpWireEvent [][2]string

type httpWireTranscript struct {
	path   string
	mode   string
	server string
	head   []string // the lines before the first block
	tail   []string // the comments after the last
	steps  []*httpWireStep
}

func readHTTPTranscript(t *testing.T, path string) *httpWireTranscript {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := &httpWireTranscript{path: path, mode: "both", server: "default"}
	var cur *httpWireStep
	var block, pending []string // pending: comments and blank lines not yet placed
	flush := func() {
		if cur == nil {
			return
		}
		cur.text = block
		tr.parseBlock(t, cur, block)
		tr.steps = append(tr.steps, cur)
		cur, block = nil, nil
	}
	for n, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		n++
		if cur != nil && (strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "") {
			pending = append(pending, line)
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == ">" || f[0] == "<" || f[0] == "x" || f[0] == "cut") {
			flush()
			cur = &httpWireStep{line: n, name: f[1]}
			// The comments above a block are its own.
			for len(pending) > 0 && strings.TrimSpace(pending[0]) == "" {
				pending = pending[1:]
			}
			cur.lead, pending = pending, nil
			switch f[0] {
			case ">":
				if len(f) < 4 {
					t.Fatalf("%s:%d: want > name METHOD path [~]", path, n)
				}
				cur.kind, cur.method, cur.path, cur.late = stepRequest, f[2], f[3], len(f) > 4 && f[4] == "~"
			case "<":
				cur.kind = stepResponse
				if len(f) != 3 {
					t.Fatalf("%s:%d: want < name STATUS, or < name +", path, n)
				}
				if f[2] != "+" {
					if cur.status, err = strconv.Atoi(f[2]); err != nil {
						t.Fatalf("%s:%d: bad status %q", path, n, f[2])
					}
				}
			case "x":
				cur.kind = stepClose
			case "cut":
				cur.kind = stepCut
			}
			continue
		}
		if cur == nil {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "mode" || k == "server") {
				if k == "mode" {
					tr.mode = strings.TrimSpace(v)
				} else {
					tr.server = strings.TrimSpace(v)
				}
			} else if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
				t.Fatalf("%s:%d: a line outside a block must be a comment, mode: or server:", path, n)
			}
			tr.head = append(tr.head, line)
			continue
		}
		block = append(block, pending...)
		block = append(block, line)
		pending = nil
	}
	for len(pending) > 0 && strings.TrimSpace(pending[len(pending)-1]) == "" {
		pending = pending[:len(pending)-1]
	}
	tr.tail = pending
	flush()
	// Which part is the last of its stream, and which streams the client
	// closes.
	seen := map[string]bool{}
	for i := len(tr.steps) - 1; i >= 0; i-- {
		s := tr.steps[i]
		switch s.kind {
		case stepClose, stepCut:
			seen["x "+s.name] = true
		case stepResponse:
			if !seen["< "+s.name] {
				s.last, s.open = true, seen["x "+s.name]
				seen["< "+s.name] = true
			}
		}
	}
	if tr.mode != "both" && tr.mode != "handler" {
		t.Fatalf("%s: mode must be both or handler", path)
	}
	return tr
}

// parseBlock reads a block's headers and body.
func (tr *httpWireTranscript) parseBlock(t *testing.T, s *httpWireStep, block []string) {
	var body []string
	inHeader := s.kind == stepRequest || s.status != 0
	for i, line := range block {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if inHeader {
			if line == "" {
				inHeader = false
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("%s:%d: want a header", tr.path, s.line+1+i)
			}
			s.header = append(s.header, [2]string{http.CanonicalHeaderKey(k), strings.TrimSpace(v)})
			continue
		}
		body = append(body, line)
	}
	switch s.kind {
	case stepClose, stepCut:
		if len(s.header)+len(body) > 0 {
			t.Fatalf("%s:%d: an x or cut line stands alone", tr.path, s.line)
		}
	case stepRequest:
		s.body = strings.TrimSpace(strings.Join(body, "\n"))
	case stepResponse:
		s.sse = s.status == 0 || headerOf(s.header, "Content-Type") == "text/event-stream"
		if s.status == 0 {
			for _, p := range tr.steps {
				if p.kind == stepResponse && p.name == s.name && p.status != 0 && !p.sse {
					t.Fatalf("%s:%d: only an SSE stream goes on", tr.path, s.line)
				}
			}
		}
		if !s.sse {
			s.body = strings.TrimSpace(strings.Join(body, "\n"))
			return
		}
		evs, err := readSSEEvents(bufio.NewReader(strings.NewReader(strings.Join(body, "\n")+"\n\n")), -1)
		if err != nil && err != io.EOF {
			t.Fatalf("%s:%d: %v", tr.path, s.line, err)
		}
		s.events = evs
	}
}

func headerOf(h [][2]string, key string) string {
	for _, kv := range h {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// readSSEEvent reads the next event of an SSE stream, skipping comments
// and comment-only events; io.EOF at the stream's clean end.
func readSSEEvent(r *bufio.Reader) (httpWireEvent, error) {
	var ev httpWireEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && len(ev) == 0 {
				return nil, io.EOF
			}
			if err == io.EOF {
				return ev, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(ev) > 0 {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		default:
			k, v, _ := strings.Cut(line, ":")
			ev = append(ev, [2]string{k, strings.TrimPrefix(v, " ")})
		}
	}
}

// readSSEEvents reads n events, or all of them when n < 0.
func readSSEEvents(r *bufio.Reader, n int) ([]httpWireEvent, error) {
	var evs []httpWireEvent
	for n < 0 || len(evs) < n {
		ev, err := readSSEEvent(r)
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// httpWireValues holds the values of a transcript's $names.
type httpWireValues map[string]json.RawMessage

// produce is text (a JSON body) with its "$name"s replaced by their
// values; a name not yet bound gets one made up.
func (v httpWireValues) produce(text string) string {
	return wireCapture.ReplaceAllStringFunc(text, func(q string) string {
		return string(v.value(strings.Trim(q, `"$`)))
	})
}

func (v httpWireValues) value(name string) json.RawMessage {
	if strings.HasPrefix(name, "time") {
		return json.RawMessage(`"2026-07-28T00:00:00Z"`)
	}
	if raw, ok := v[name]; ok {
		return raw
	}
	raw, _ := json.Marshal("wire-" + name)
	v[name] = raw
	return raw
}

// produceText is a header value or SSE id with its $name replaced.
func (v httpWireValues) produceText(s string) string {
	name, ok := placeholder(s)
	if !ok {
		return s
	}
	raw := v.value(name)
	var out string
	if json.Unmarshal(raw, &out) != nil {
		return string(raw) // a number
	}
	return out
}

// check compares a header value or SSE id with the transcript's; "" when
// they match.
func (v httpWireValues) check(want, got string) string {
	name, ok := placeholder(want)
	if !ok {
		if want != got {
			return fmt.Sprintf("%q, want %q", got, want)
		}
		return ""
	}
	raw, _ := json.Marshal(got)
	if prev, ok := v[name]; ok {
		var s string
		if json.Unmarshal(prev, &s) != nil {
			s = string(prev)
		}
		if s != got {
			return fmt.Sprintf("%q, but $%s is %s", got, name, prev)
		}
		return ""
	}
	if strings.HasPrefix(name, "time") {
		return ""
	}
	if got == "" {
		return "missing, want $" + name
	}
	v[name] = raw
	return ""
}

func placeholder(s string) (string, bool) {
	if len(s) > 1 && s[0] == '$' && wireCapture.MatchString(`"`+s+`"`) {
		return s[1:], true
	}
	return "", false
}

// checkJSON compares a body with the transcript's as JSON values.
func (v httpWireValues) checkJSON(want, got string) string {
	if want == "" || got == "" {
		if strings.TrimSpace(want) != strings.TrimSpace(got) {
			return fmt.Sprintf("body %q, want %q", got, want)
		}
		return ""
	}
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return "the transcript's body is not JSON: " + err.Error()
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return fmt.Sprintf("body %q is not JSON", got)
	}
	if why := wireMatch(w, g, "", v); why != "" {
		return fmt.Sprintf("%s\n got  %s\n want %s", why, got, want)
	}
	return ""
}

// checkHeader compares headers: the watched ones, and those listed.
func (v httpWireValues) checkHeader(want [][2]string, got http.Header, watched []string) string {
	for _, k := range headerKeys(watched, want) {
		w := headerOf(want, k)
		g := got.Get(k)
		if w == "" && g != "" {
			return fmt.Sprintf("header %s: %q, not in the transcript", k, g)
		}
		if w == "" {
			continue
		}
		if why := v.check(w, g); why != "" {
			return "header " + k + ": " + why
		}
	}
	return ""
}

// headerKeys lists the watched headers and those listed in h.
func headerKeys(watched []string, h [][2]string) []string {
	keys := slices.Clone(watched)
	for _, kv := range h {
		if !slices.Contains(keys, kv[0]) {
			keys = append(keys, kv[0])
		}
	}
	return keys
}

// checkEvents compares SSE events with the transcript's.
func (v httpWireValues) checkEvents(want, got []httpWireEvent) string {
	for i := range want {
		if i >= len(got) {
			return fmt.Sprintf("event %d missing", i+1)
		}
		w, g := want[i], got[i]
		if len(w) != len(g) {
			return fmt.Sprintf("event %d: %q, want %q", i+1, g, w)
		}
		for j := range w {
			if w[j][0] != g[j][0] {
				return fmt.Sprintf("event %d: field %q, want %q", i+1, g[j][0], w[j][0])
			}
			var why string
			switch w[j][0] {
			case "id":
				why = v.check(w[j][1], g[j][1])
			case "data":
				why = v.checkJSON(w[j][1], g[j][1])
			default:
				if w[j][1] != g[j][1] {
					why = fmt.Sprintf("%q, want %q", g[j][1], w[j][1])
				}
			}
			if why != "" {
				return fmt.Sprintf("event %d, %s: %s", i+1, w[j][0], why)
			}
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("event %d not in the transcript: %q", len(want)+1, got[len(want)])
	}
	return ""
}

// TestHTTPWireTranscripts plays every HTTP transcript against the handler
// and, unless it is handler-only, against the client.
func TestHTTPWireTranscripts(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("testdata/wire/http/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	both := 0
	for _, path := range paths {
		tr := readHTTPTranscript(t, path)
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		if tr.mode == "both" {
			both++
			if httpWireDrivers[name] == nil {
				t.Errorf("%s: no client driver for a transcript played both ways", path)
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("handler", func(t *testing.T) {
				if *updateWire {
					updateHTTPTranscript(t, tr)
					return
				}
				playHTTPHandler(t, tr, nil)
			})
			if tr.mode == "both" && !*updateWire {
				t.Run("client", func(t *testing.T) { playHTTPClient(t, tr, httpWireDrivers[name]) })
			}
		})
	}
	if both < 12 {
		t.Errorf("%d transcripts are played both ways, want at least 12", both)
	}
}

// httpWireTimeout bounds a transcript's play.
const httpWireTimeout = 20 * time.Second

// httpWireExchange is a request of the player in flight.
type httpWireExchange struct {
	cancel context.CancelFunc
	done   chan struct{}
	resp   *http.Response
	err    error
	r      *bufio.Reader
}

// playHTTPHandler sends the transcript's requests to a handler and checks
// its responses; with rec set it records them instead (-update).
func playHTTPHandler(t *testing.T, tr *httpWireTranscript, rec *httpWireRecorder) {
	ctx, cancel := context.WithTimeout(context.Background(), httpWireTimeout)
	defer cancel()
	hctx, stop := context.WithCancel(ctx)
	ts := httptest.NewServer(newHTTPWireHandler(hctx, tr.server))
	defer ts.Close()
	defer stop() // the sessions end, and their handlers with them
	vals := httpWireValues{}
	if rec != nil {
		rec.vals = vals
	}
	exchanges := map[string]*httpWireExchange{}
	defer func() {
		for _, ex := range exchanges {
			ex.cancel()
			<-ex.done
			if ex.resp != nil {
				ex.resp.Body.Close()
			}
		}
	}()
	fail := func(s *httpWireStep, format string, args ...any) {
		t.Helper()
		t.Fatalf("%s:%d: %s %s: %s", tr.path, s.line, map[httpWireStepKind]string{stepRequest: ">", stepResponse: "<", stepClose: "x", stepCut: "cut"}[s.kind], s.name, fmt.Sprintf(format, args...))
	}
	for _, s := range tr.steps {
		switch s.kind {
		case stepRequest:
			if exchanges[s.name] != nil {
				fail(s, "the name is taken")
			}
			rctx, rcancel := context.WithCancel(ctx)
			var body io.Reader
			if s.body != "" {
				body = strings.NewReader(vals.produce(s.body))
			}
			req, err := http.NewRequestWithContext(rctx, s.method, ts.URL+s.path, body)
			if err != nil {
				rcancel()
				fail(s, "%v", err)
			}
			for _, kv := range s.header {
				req.Header.Set(kv[0], vals.produceText(kv[1]))
			}
			ex := &httpWireExchange{cancel: rcancel, done: make(chan struct{})}
			exchanges[s.name] = ex
			go func() {
				defer close(ex.done)
				ex.resp, ex.err = ts.Client().Do(req)
			}()
		case stepResponse:
			ex := exchanges[s.name]
			if ex == nil {
				fail(s, "no such request")
			}
			select {
			case <-ex.done:
			case <-ctx.Done():
				fail(s, "no response")
			}
			if ex.err != nil {
				fail(s, "%v", ex.err)
			}
			if s.status != 0 {
				if ex.r != nil {
					fail(s, "a second head")
				}
				ex.r = bufio.NewReader(ex.resp.Body)
				if rec != nil {
					rec.head(s, ex.resp)
				} else {
					if ex.resp.StatusCode != s.status {
						fail(s, "status %d, want %d", ex.resp.StatusCode, s.status)
					}
					if why := vals.checkHeader(s.header, ex.resp.Header, httpWireResponseHeaders); why != "" {
						fail(s, "%s", why)
					}
				}
			}
			if !s.sse {
				body, err := io.ReadAll(ex.r)
				if err != nil {
					fail(s, "reading the body: %v", err)
				}
				if rec != nil {
					rec.body(s, string(body))
				} else if why := vals.checkJSON(s.body, strings.TrimSpace(string(body))); why != "" {
					fail(s, "%s", why)
				}
				continue
			}
			n := len(s.events)
			if rec != nil && s.last && !s.open {
				n = -1 // to its end
			}
			evs, err := readSSEEvents(ex.r, n)
			if err != nil && !(n < 0 && err == io.EOF) {
				fail(s, "reading event %d: %v (read %q)", len(evs)+1, err, evs)
			}
			if rec != nil {
				rec.events(s, evs)
				continue
			}
			if why := vals.checkEvents(s.events, evs); why != "" {
				fail(s, "%s", why)
			}
			if s.last && !s.open {
				if ev, err := readSSEEvent(ex.r); err != io.EOF {
					fail(s, "the stream goes on: %q, %v", ev, err)
				}
			}
		case stepClose, stepCut:
			ex := exchanges[s.name]
			if ex == nil || ex.resp == nil {
				fail(s, "no stream to close")
			}
			ex.cancel()
			ex.resp.Body.Close()
		}
	}
}

// httpWireRecorder writes a transcript's responses as the handler gave
// them (-update).
type httpWireRecorder struct {
	vals  httpWireValues
	names map[string]string // a volatile value → its $name
	count map[string]int    // per kind of name, how many so far
	out   map[*httpWireStep][]string
}

// name returns the $name of a volatile value of a kind, binding it.
func (r *httpWireRecorder) name(kind string, raw json.RawMessage) string {
	if kind == "time" {
		return "$time"
	}
	key := kind + " " + string(raw)
	if n, ok := r.names[key]; ok {
		return n
	}
	r.count[kind]++
	n := kind
	if kind != "sid" || r.count[kind] > 1 {
		n += strconv.Itoa(r.count[kind])
	}
	r.names[key] = "$" + n
	r.vals[n] = raw
	return "$" + n
}

func (r *httpWireRecorder) text(kind, s string) string {
	raw, _ := json.Marshal(s)
	return r.name(kind, raw)
}

func (r *httpWireRecorder) head(s *httpWireStep, resp *http.Response) {
	lines := []string{}
	for _, k := range headerKeys(httpWireResponseHeaders, s.header) {
		v := resp.Header.Get(k)
		if v == "" {
			continue
		}
		if k == "Mcp-Session-Id" {
			v = r.text("sid", v)
		}
		lines = append(lines, k+": "+v)
	}
	r.out[s] = append(lines, "")
	s.status = resp.StatusCode
}

func (r *httpWireRecorder) body(s *httpWireStep, body string) {
	if strings.TrimSpace(body) != "" {
		r.out[s] = append(r.out[s], r.normalize(body))
	}
}

func (r *httpWireRecorder) events(s *httpWireStep, evs []httpWireEvent) {
	for i, ev := range evs {
		if i > 0 {
			r.out[s] = append(r.out[s], "")
		}
		for _, kv := range ev {
			v := kv[1]
			switch kv[0] {
			case "id":
				v = r.text("e", v)
			case "data":
				if v != "" {
					v = r.normalize(v)
				}
			}
			if v == "" {
				r.out[s] = append(r.out[s], kv[0]+":")
			} else {
				r.out[s] = append(r.out[s], kv[0]+": "+v)
			}
		}
	}
}

// normalize replaces the volatile values of a JSON message by $names,
// leaving the rest as the handler wrote it.
func (r *httpWireRecorder) normalize(msg string) string {
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal([]byte(msg), &probe) != nil {
		return msg
	}
	if probe.Method != "" && len(probe.ID) > 0 {
		// A request of the server's: its id is the server's to pick.
		key := `"id":` + string(probe.ID)
		msg = strings.Replace(msg, key, `"id":"`+r.name("ask", probe.ID)+`"`, 1)
	}
	return httpWireVolatile.ReplaceAllStringFunc(msg, func(m string) string {
		sub := httpWireVolatile.FindStringSubmatch(m)
		kind := map[string]string{"requestState": "state", "taskId": "task", "createdAt": "time", "lastUpdatedAt": "time"}[sub[1]]
		return `"` + sub[1] + `":"` + r.name(kind, json.RawMessage(sub[2])) + `"`
	})
}

// httpWireVolatile finds the members whose values the handler makes up.
var httpWireVolatile = regexp.MustCompile(`"(requestState|taskId|createdAt|lastUpdatedAt)":("(?:[^"\\]|\\.)*")`)

// updateHTTPTranscript rewrites a transcript's responses from the handler.
func updateHTTPTranscript(t *testing.T, tr *httpWireTranscript) {
	rec := &httpWireRecorder{names: map[string]string{}, count: map[string]int{}, out: map[*httpWireStep][]string{}}
	playHTTPHandler(t, tr, rec)
	var out []string
	out = append(out, tr.head...)
	for _, s := range tr.steps {
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
		out = append(out, s.lead...)
		switch s.kind {
		case stepRequest, stepClose, stepCut:
			out = append(out, tr.rawHead(s))
			out = append(out, s.text...)
		case stepResponse:
			if s.status != 0 {
				out = append(out, fmt.Sprintf("< %s %d", s.name, s.status))
			} else {
				out = append(out, "< "+s.name+" +")
			}
			for _, line := range s.text {
				if strings.HasPrefix(line, "#") {
					out = append(out, line) // comments stay, first
				}
			}
			out = append(out, rec.out[s]...)
		}
	}
	if len(tr.tail) > 0 {
		out = append(append(out, ""), tr.tail...)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if err := os.WriteFile(tr.path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tr *httpWireTranscript) rawHead(s *httpWireStep) string {
	switch s.kind {
	case stepRequest:
		h := fmt.Sprintf("> %s %s %s", s.name, s.method, s.path)
		if s.late {
			h += " ~"
		}
		return h
	case stepCut:
		return "cut " + s.name
	default:
		return "x " + s.name
	}
}

// playHTTPClient has drive run a real client against a fake server that
// answers from the transcript and checks the client's requests.
func playHTTPClient(t *testing.T, tr *httpWireTranscript, drive httpWireDriver) {
	ctx, cancel := context.WithTimeout(context.Background(), httpWireTimeout)
	defer cancel()
	f := &httpWireFake{t: t, tr: tr, ctx: ctx, vals: httpWireValues{}, done: make([]bool, len(tr.steps)), changed: make(chan struct{})}
	ts := httptest.NewServer(f)
	defer ts.Close()
	if err := drive(ctx, t, ts.URL+"/mcp"); err != nil {
		t.Errorf("the client: %v", err)
	}
	if !f.await(func() bool { return f.allDone() }) {
		f.mu.Lock()
		for i, s := range tr.steps {
			if !f.done[i] {
				t.Errorf("%s:%d: %s never happened", tr.path, s.line, tr.rawHead(s))
				break
			}
		}
		f.mu.Unlock()
	}
	cancel()
	ts.CloseClientConnections()
}

// httpWireDriver drives a client through a transcript's conversation
// with the server at url.
type httpWireDriver func(ctx context.Context, t *testing.T, url string) error

// httpWireFake is the server of the client's play.
type httpWireFake struct {
	t   *testing.T
	tr  *httpWireTranscript
	ctx context.Context

	mu      sync.Mutex
	vals    httpWireValues
	done    []bool // each step: the request came, the part was written, the stream closed
	changed chan struct{}
	failed  bool
}

func (f *httpWireFake) allDone() bool {
	for _, d := range f.done {
		if !d {
			return false
		}
	}
	return true
}

// await waits until cond (called under f.mu) holds; false when the
// transcript's time ran out or the play failed.
func (f *httpWireFake) await(cond func() bool) bool {
	for {
		f.mu.Lock()
		ok, ch, failed := cond(), f.changed, f.failed
		f.mu.Unlock()
		if ok {
			return true
		}
		if failed {
			return false
		}
		select {
		case <-ch:
		case <-f.ctx.Done():
			return false
		}
	}
}

// markLocked records step i as done and wakes the waiters.
func (f *httpWireFake) markLocked(i int) {
	f.done[i] = true
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *httpWireFake) failLocked(w http.ResponseWriter, format string, args ...any) {
	f.t.Errorf(format, args...)
	if !f.failed {
		f.failed = true
		close(f.changed)
		f.changed = make(chan struct{})
	}
	http.Error(w, "not in the transcript", http.StatusTeapot)
}

func (f *httpWireFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	if f.failed {
		f.mu.Unlock()
		http.Error(w, "failed", http.StatusTeapot)
		return
	}
	// The request is the first one not yet come, or one that may come
	// late before it.
	at, why := -1, ""
	for i, s := range f.tr.steps {
		if s.kind != stepRequest || f.done[i] {
			continue
		}
		scratch := httpWireValues{}
		for k, v := range f.vals {
			scratch[k] = v
		}
		w := f.matchRequest(s, r, body, scratch)
		if w == "" {
			at, f.vals = i, scratch
			break
		}
		if why == "" {
			why = fmt.Sprintf("%s:%d: %s: %s", f.tr.path, s.line, f.tr.rawHead(s), w)
		}
		if !s.late {
			break
		}
	}
	if at < 0 {
		f.failLocked(w, "the client sent %s %s %s, which is not the transcript's next request: %s", r.Method, r.URL.Path, body, why)
		f.mu.Unlock()
		return
	}
	f.markLocked(at)
	f.mu.Unlock()
	name := f.tr.steps[at].name
	rc := http.NewResponseController(w)
	for i := at + 1; i < len(f.tr.steps); i++ {
		s := f.tr.steps[i]
		if s.name != name || s.kind == stepRequest {
			continue
		}
		// Everything the client does before this part, it has done.
		if !f.await(func() bool {
			for j := range i {
				if k := f.tr.steps[j].kind; k != stepResponse && !f.done[j] {
					return false
				}
			}
			return true
		}) {
			return
		}
		if s.kind == stepCut {
			f.mu.Lock()
			f.markLocked(i)
			f.mu.Unlock()
			panic(http.ErrAbortHandler) // the connection breaks
		}
		if s.kind == stepClose {
			select {
			case <-r.Context().Done():
			case <-f.ctx.Done():
				return
			}
		} else {
			f.mu.Lock()
			f.writePart(w, s)
			f.mu.Unlock()
			rc.Flush()
		}
		f.mu.Lock()
		f.markLocked(i)
		f.mu.Unlock()
	}
}

// matchRequest checks a request of the client's against step s; "" when
// it matches.
func (f *httpWireFake) matchRequest(s *httpWireStep, r *http.Request, body []byte, vals httpWireValues) string {
	if r.Method != s.method || r.URL.Path != s.path {
		return fmt.Sprintf("%s %s, want %s %s", r.Method, r.URL.Path, s.method, s.path)
	}
	if why := vals.checkHeader(s.header, r.Header, httpWireRequestHeaders); why != "" {
		return why
	}
	return vals.checkJSON(s.body, strings.TrimSpace(string(body)))
}

// writePart writes a response part of the transcript's.
func (f *httpWireFake) writePart(w http.ResponseWriter, s *httpWireStep) {
	if s.status != 0 {
		for _, kv := range s.header {
			w.Header().Set(kv[0], f.vals.produceText(kv[1]))
		}
		w.WriteHeader(s.status)
	}
	if !s.sse {
		io.WriteString(w, f.vals.produce(s.body))
		return
	}
	var b strings.Builder
	for _, ev := range s.events {
		for _, kv := range ev {
			v := kv[1]
			switch kv[0] {
			case "id":
				v = f.vals.produceText(v)
			case "data":
				v = f.vals.produce(v)
			}
			b.WriteString(kv[0] + ": " + v + "\n")
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}
