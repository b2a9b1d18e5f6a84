package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestExampleShowsOneTrace runs the example and reads its output: the
// client's tools/call span and the server's are in the trace of the
// client's root span, the server's the child of the client's, and the
// handler's own span the server span's child.
func TestExampleShowsOneTrace(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	type line struct{ side, trace, span, parent, kind, name string }
	var spans []line
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			t.Fatalf("line %q: want side, trace, span, parent, kind and name", l)
		}
		spans = append(spans, line{f[0], strings.TrimPrefix(f[1], "trace="), strings.TrimPrefix(f[2], "span="),
			strings.TrimPrefix(f[3], "parent="), f[4], strings.Join(f[5:], " ")})
	}
	find := func(side, kind, name string) line {
		t.Helper()
		for _, s := range spans {
			if s.side == side && s.kind == kind && s.name == name {
				return s
			}
		}
		t.Fatalf("no %s %s span %q in\n%s", side, kind, name, out.String())
		return line{}
	}
	root := find("client", "internal", "say hello")
	call := find("client", "client", "tools/call greet")
	served := find("server", "server", "tools/call greet")
	work := find("server", "internal", "compose greeting")
	for _, s := range []line{call, served, work} {
		if s.trace != root.trace {
			t.Errorf("%s span %q in trace %s, want the root's %s", s.side, s.name, s.trace, root.trace)
		}
	}
	if call.parent != root.span || served.parent != call.span || work.parent != served.span {
		t.Errorf("want say hello → tools/call greet (client) → tools/call greet (server) → compose greeting; got\n%s", out.String())
	}
}
