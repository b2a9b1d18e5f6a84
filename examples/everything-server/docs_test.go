package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

const curlDoc = "../../docs/curl.md"

// TestDocsCurl sends every curl command of docs/curl.md, as curl would send
// it, to this server over loopback HTTP, in the order of the page, and
// checks each answer against the one the page shows below the command: the
// status line, every header shown, and the body, where "..." in JSON stands
// for members or items left out. Mcp-Session-Id is random: only its
// presence is checked, and $SESSION takes the real value.
func TestDocsCurl(t *testing.T) {
	data, err := os.ReadFile(curlDoc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux() // as serveHTTP builds it
	mux.Handle("/mcp", mcp.NewHTTPHandler(newServer(), mcp.WithContext(ctx)))
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		cancel()
		ts.Close()
	})

	vars := map[string]string{}
	addr := "" // where the page starts the server
	var pending *curlCommand
	sent := 0
	for _, b := range fencedBlocks(t, string(data)) {
		switch b.lang {
		case "sh":
			for _, line := range shellLines(b.text) {
				words, err := shellWords(line, vars)
				if err != nil {
					t.Fatalf("%s:%d: %v", curlDoc, b.line, err)
				}
				switch {
				case len(words) == 0:
				case len(words) == 5 && slices.Equal(words[:4], []string{"go", "run", "./examples/everything-server", "-http"}):
					addr = words[4]
				case len(words) == 1 && strings.HasPrefix(words[0], "SESSION="):
					// The reader copies the id; the test has the real one.
				case words[0] == "curl":
					if pending != nil {
						t.Fatalf("%s:%d: the curl command of line %d shows no answer", curlDoc, b.line, pending.line)
					}
					c, err := parseCurl(words)
					if err != nil {
						t.Fatalf("%s:%d: %v", curlDoc, b.line, err)
					}
					c.line = b.line
					pending = c
				default:
					t.Fatalf("%s:%d: a command the test cannot check: %q", curlDoc, b.line, line)
				}
			}
		case "http":
			if pending == nil {
				t.Fatalf("%s:%d: an answer without a curl command before it", curlDoc, b.line)
			}
			if err := checkExchange(ctx, ts, addr, pending, b.text, vars); err != nil {
				t.Errorf("%s:%d: %v", curlDoc, pending.line, err)
			}
			pending = nil
			sent++
		}
	}
	if pending != nil {
		t.Errorf("%s:%d: the curl command shows no answer", curlDoc, pending.line)
	}
	if sent == 0 {
		t.Fatalf("%s: no curl command", curlDoc)
	}
}

type fencedBlock struct {
	lang, text string
	line       int // of the opening fence
}

func fencedBlocks(t *testing.T, doc string) []fencedBlock {
	var blocks []fencedBlock
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		start := i
		var text strings.Builder
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			text.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: unclosed block", curlDoc, start+1)
		}
		blocks = append(blocks, fencedBlock{lang: strings.TrimSpace(lang), text: text.String(), line: start + 1})
	}
	return blocks
}

// shellLines joins the lines of a script that end in a backslash with the
// next one.
func shellLines(script string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(script) {
		line = strings.TrimSuffix(line, "\n")
		if joined, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(joined)
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// shellWords splits a command line as a POSIX shell does, for the quoting
// the page uses: single quotes, double quotes with $NAME inside, and #
// comments.
func shellWords(line string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(s string, i int) (int, error) { // s[i] == '$'
		j := i + 1
		for j < len(s) && (s[j] == '_' || 'A' <= s[j] && s[j] <= 'Z' || 'a' <= s[j] && s[j] <= 'z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		v, ok := vars[s[i+1:j]]
		if !ok {
			return 0, fmt.Errorf("$%s is not set: only $SESSION is, from an answer's Mcp-Session-Id header", s[i+1:j])
		}
		w.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case c == '#' && !inWord:
			i = len(line)
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			inWord = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`, line[i+1]) >= 0:
					w.WriteByte(line[i+1])
					i++
				case line[i] == '$':
					j, err := expand(line, i)
					if err != nil {
						return nil, err
					}
					i = j - 1
				default:
					w.WriteByte(line[i])
				}
			}
			if i == len(line) {
				return nil, fmt.Errorf("unclosed \" in %q", line)
			}
			i++
		case c == '$':
			j, err := expand(line, i)
			if err != nil {
				return nil, err
			}
			inWord = true
			i = j
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord = true
			i += 2
		default:
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

type curlCommand struct {
	line    int
	method  string
	url     *url.URL
	headers [][2]string
	body    string
	hasBody bool
}

// parseCurl reads the options of curl the page uses. Like curl, it sends a
// POST when there is a body, with Content-Type
// application/x-www-form-urlencoded and Accept */* unless given.
func parseCurl(words []string) (*curlCommand, error) {
	c := &curlCommand{}
	include := false
	for i := 1; i < len(words); i++ {
		arg := words[i]
		value := func() (string, error) {
			if i+1 == len(words) {
				return "", fmt.Errorf("curl %s needs a value", arg)
			}
			i++
			return words[i], nil
		}
		var err error
		switch {
		case arg == "-i":
			include = true
		case arg == "-X":
			c.method, err = value()
		case arg == "-H":
			var h string
			if h, err = value(); err == nil {
				k, v, ok := strings.Cut(h, ":")
				if !ok {
					return nil, fmt.Errorf("header %q has no colon", h)
				}
				c.headers = append(c.headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
		case arg == "-d":
			c.body, err = value()
			c.hasBody = true
		case !strings.HasPrefix(arg, "-") && c.url == nil:
			if c.url, err = url.Parse(arg); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("curl option %q is not one the test knows", arg)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.url == nil {
		return nil, fmt.Errorf("curl without a URL")
	}
	if !include {
		return nil, fmt.Errorf("curl without -i: the page shows the headers")
	}
	if c.method == "" {
		c.method = http.MethodGet
		if c.hasBody {
			c.method = http.MethodPost
		}
	}
	has := func(name string) bool {
		return slices.ContainsFunc(c.headers, func(h [2]string) bool { return strings.EqualFold(h[0], name) })
	}
	if c.hasBody && !has("Content-Type") {
		c.headers = append(c.headers, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
	}
	if !has("Accept") {
		c.headers = append(c.headers, [2]string{"Accept", "*/*"})
	}
	return c, nil
}

// checkExchange sends c to ts and compares the answer with shown.
func checkExchange(ctx context.Context, ts *httptest.Server, addr string, c *curlCommand, shown string, vars map[string]string) error {
	if addr == "" {
		return fmt.Errorf("the page does not start the server before its first curl command")
	}
	if c.url.Scheme != "http" || c.url.Host != addr {
		return fmt.Errorf("curl sends to %s, not to the server the page starts at %s", c.url, addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, ts.URL+c.url.RequestURI(), strings.NewReader(c.body))
	if err != nil {
		return err
	}
	for _, h := range c.headers {
		req.Header.Add(h[0], h[1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}

	head, wantBody, _ := strings.Cut(shown, "\n\n")
	lines := strings.Split(strings.TrimSpace(head), "\n")
	if got := resp.Proto + " " + resp.Status; lines[0] != got {
		return fmt.Errorf("the page shows %q, the server answered %q: %s", lines[0], got, body)
	}
	sse := false
	for _, line := range lines[1:] {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("shown header %q has no colon", line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		got := resp.Header.Values(k)
		if http.CanonicalHeaderKey(k) == "Mcp-Session-Id" {
			if len(got) != 1 || got[0] == "" {
				return fmt.Errorf("the page shows an %s header, the server sent %q", k, got)
			}
			vars["SESSION"] = got[0]
			continue
		}
		if !slices.Contains(got, v) {
			return fmt.Errorf("the page shows %s: %s, the server sent %q", k, v, got)
		}
		if http.CanonicalHeaderKey(k) == "Content-Type" && v == "text/event-stream" {
			sse = true
		}
	}
	wantBody = strings.TrimSpace(wantBody)
	switch {
	case wantBody == "":
		if len(strings.TrimSpace(string(body))) != 0 {
			return fmt.Errorf("the page shows no body, the server sent %s", body)
		}
	case sse:
		return matchEvents(wantBody, string(body))
	default:
		return matchShownJSON("body", wantBody, string(body))
	}
	return nil
}

type sseEvent struct {
	id, data string
	hasID    bool
}

// parseEvents reads a text/event-stream, leaving out comments.
func parseEvents(s string) []sseEvent {
	var events []sseEvent
	var ev sseEvent
	seen := false
	var data []string
	flush := func() {
		if seen {
			ev.data = strings.Join(data, "\n")
			events = append(events, ev)
		}
		ev, seen, data = sseEvent{}, false, nil
	}
	for line := range strings.Lines(strings.ReplaceAll(s, "\r\n", "\n")) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		seen = true
		switch field {
		case "id":
			ev.id, ev.hasID = value, true
		case "data":
			data = append(data, value)
		}
	}
	flush()
	return events
}

func matchEvents(shown, real string) error {
	want, got := parseEvents(shown), parseEvents(real)
	if len(want) != len(got) {
		return fmt.Errorf("the page shows %d events, the server sent %d:\n%s", len(want), len(got), real)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.hasID != g.hasID || w.id != g.id {
			return fmt.Errorf("event %d: the page shows id %q, the server sent %q", i+1, w.id, g.id)
		}
		if w.data == "" || g.data == "" {
			if w.data != g.data {
				return fmt.Errorf("event %d: the page shows data %q, the server sent %q", i+1, w.data, g.data)
			}
			continue
		}
		if err := matchShownJSON(fmt.Sprintf("event %d", i+1), w.data, g.data); err != nil {
			return err
		}
	}
	return nil
}

// elided stands for a "..." of the page once the shown JSON is parsed.
const elided = "\x00..."

// parseShownJSON parses JSON in which "..." may stand for members of an
// object, items of an array, or a value.
func parseShownJSON(s string) (any, error) {
	var b strings.Builder
	var open []byte // the enclosing { and [
	last := byte(0) // the last significant byte outside strings
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			end := i + 1
			for ; end < len(s) && s[end] != '"'; end++ {
				if s[end] == '\\' {
					end++
				}
			}
			b.WriteString(s[i:min(end+1, len(s))])
			i, last = end, '"'
		case strings.HasPrefix(s[i:], "..."):
			if last == ':' || len(open) == 0 || open[len(open)-1] == '[' {
				b.WriteString(`"\u0000..."`)
			} else {
				b.WriteString(`"\u0000...":null`)
			}
			i, last = i+2, '"'
		default:
			switch c {
			case '{', '[':
				open = append(open, c)
			case '}', ']':
				if len(open) > 0 {
					open = open[:len(open)-1]
				}
			}
			b.WriteByte(c)
			if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
				last = c
			}
		}
	}
	return decodeJSON(b.String())
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func matchShownJSON(where, shown, real string) error {
	want, err := parseShownJSON(shown)
	if err != nil {
		return fmt.Errorf("%s: the page's JSON: %v", where, err)
	}
	got, err := decodeJSON(real)
	if err != nil {
		return fmt.Errorf("%s: the server's answer is not JSON (%v): %s", where, err, real)
	}
	if err := matchJSON(where, want, got); err != nil {
		return fmt.Errorf("%v\nthe server sent %s", err, real)
	}
	return nil
}

func matchJSON(path string, want, got any) error {
	switch w := want.(type) {
	case string:
		if w == elided {
			return nil
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: the page shows an object, the server sent %s", path, compact(got))
		}
		_, open := w[elided]
		for k, wv := range w {
			if k == elided {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: the page shows %q, the server sent none", path, k)
			}
			if err := matchJSON(path+"."+k, wv, gv); err != nil {
				return err
			}
		}
		if !open {
			for k := range g {
				if _, ok := w[k]; !ok {
					return fmt.Errorf("%s: the server sent %q, which the page neither shows nor marks left out", path, k)
				}
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: the page shows a list, the server sent %s", path, compact(got))
		}
		return matchItems(path, w, g, 0)
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%s: the page shows %s, the server sent %s", path, compact(want), compact(got))
	}
	return nil
}

// matchItems matches a shown list, whose "..." items stand for any run of
// items, against got[from:].
func matchItems(path string, want, got []any, from int) error {
	if len(want) == 0 {
		if len(got) > 0 {
			return fmt.Errorf("%s: the server sent %d more items than the page shows", path, len(got))
		}
		return nil
	}
	if want[0] == elided {
		for skip := 0; skip <= len(got); skip++ {
			if matchItems(path, want[1:], got[skip:], from+skip) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: the items the page shows are not in the server's list, in that order", path)
	}
	if len(got) == 0 {
		return fmt.Errorf("%s: the page shows more items than the server sent", path)
	}
	if err := matchJSON(fmt.Sprintf("%s[%d]", path, from), want[0], got[0]); err != nil {
		return err
	}
	return matchItems(path, want[1:], got[1:], from+1)
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), `\u0000...`, "...")
}
