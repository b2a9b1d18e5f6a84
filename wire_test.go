package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Golden wire transcripts: testdata/wire/*.txt are conversations with the
// test server (newTestServer over stdio framing), one message a line:
//
//	# a comment; blank lines are skipped
//	client: {"jsonrpc":"2.0","id":1,"method":"ping"}
//	server: {"jsonrpc":"2.0","id":1,"result":{}}
//
// A client line is sent as it is, but for captured values (below). A server
// line is the next message the server must write, compared as JSON values:
// the string "…" matches any value, an object with the member "…" may have
// members it does not list, and a string "$name" matches any value the
// first time, which it captures, and that value afterwards. Client lines
// put a captured value where they say "$name". The apps-*.txt transcripts
// talk to newAppsTestServer (apps_test.go) instead. The Streamable HTTP
// transcripts, testdata/wire/http, have a format and a test of their own
// (http_wire_test.go).

// wireStep is one line of a transcript.
type wireStep struct {
	line   int
	client bool
	msg    string
}

func readTranscript(t *testing.T, path string) []wireStep {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []wireStep
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
		case strings.HasPrefix(text, "client:"):
			steps = append(steps, wireStep{n, true, strings.TrimSpace(strings.TrimPrefix(text, "client:"))})
		case strings.HasPrefix(text, "server:"):
			steps = append(steps, wireStep{n, false, strings.TrimSpace(strings.TrimPrefix(text, "server:"))})
		default:
			t.Fatalf("%s:%d: a line must start with client:, server: or #", path, n)
		}
	}
	return steps
}

var wireCapture = regexp.MustCompile(`"\$[a-z_0-9]+"`)

// TestWireTranscripts plays every transcript against the test server.
func TestWireTranscripts(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("testdata/wire/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			steps := readTranscript(t, path)
			srv := newTestServer()
			if strings.HasPrefix(filepath.Base(path), "apps-") {
				srv = newAppsTestServer()
			}
			p := rawServer(t, srv)
			captured := map[string]json.RawMessage{}
			for _, s := range steps {
				if s.client {
					msg := wireCapture.ReplaceAllStringFunc(s.msg, func(name string) string {
						v, ok := captured[strings.Trim(name, `"$`)]
						if !ok {
							t.Fatalf("%s:%d: %s was not captured", path, s.line, name)
						}
						return string(v)
					})
					p.send(msg)
					continue
				}
				var want any
				if err := json.Unmarshal([]byte(s.msg), &want); err != nil {
					t.Fatalf("%s:%d: not JSON: %v", path, s.line, err)
				}
				got := p.recv()
				var have any
				if err := json.Unmarshal([]byte(got), &have); err != nil {
					t.Fatalf("%s:%d: the server wrote what is not JSON: %s", path, s.line, got)
				}
				if why := wireMatch(want, have, "", captured); why != "" {
					t.Fatalf("%s:%d: %s\n got  %s\n want %s", path, s.line, why, got, s.msg)
				}
			}
		})
	}
}

// wireMatch compares a value the server wrote with the transcript's; it
// returns what differs, at which path, or "" when they match.
func wireMatch(want, got any, at string, captured map[string]json.RawMessage) string {
	if s, ok := want.(string); ok {
		if s == "…" {
			return ""
		}
		if strings.HasPrefix(s, "$time") {
			// Any time, never captured (HTTP transcripts).
			if g, ok := got.(string); !ok || !isRFC3339(g) {
				return fmt.Sprintf("%s: %v, want a time", at, got)
			}
			return ""
		}
		if strings.HasPrefix(s, "$") && wireCapture.MatchString(`"`+s+`"`) {
			raw, _ := json.Marshal(got)
			name := s[1:]
			if prev, ok := captured[name]; ok && string(prev) != string(raw) {
				return fmt.Sprintf("%s: %s is %s, captured as %s before", at, s, raw, prev)
			}
			captured[name] = raw
			return ""
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object", at)
		}
		_, open := w["…"]
		for k, wv := range w {
			if k == "…" {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", at, k)
			}
			if why := wireMatch(wv, gv, at+"."+k, captured); why != "" {
				return why
			}
		}
		if !open {
			for k := range g {
				if _, ok := w[k]; !ok {
					return fmt.Sprintf("%s.%s: not in the transcript", at, k)
				}
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want an array of %d", at, len(w))
		}
		for i := range w {
			if why := wireMatch(w[i], g[i], fmt.Sprintf("%s[%d]", at, i), captured); why != "" {
				return why
			}
		}
		return ""
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		return fmt.Sprintf("%s: %s, want %s", at, gj, wj)
	}
	return ""
}

func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
