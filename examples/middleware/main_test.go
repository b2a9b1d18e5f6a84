package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// record is one JSON log record of the program.
type record map[string]any

func (r record) str(key string) string { s, _ := r[key].(string); return s }

// TestMiddlewareLogs runs the program with JSON records at debug level and
// reads its log: each call appears once on each side with its method, id,
// tool, duration and outcome; the server's progress passes its outbound
// middleware; the handler's record carries the request's attributes; and
// the engine adds its own records.
func TestMiddlewareLogs(t *testing.T) {
	t.Parallel()
	var out, logs bytes.Buffer
	if err := run(t.Context(), &out, newLogger(&logs, true, true)); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, logs.String())
	}
	want := `progress 1/2 looking up Ada
progress 2/2 writing the greeting
greet: Hello, Ada!
divide: isError=true division by zero
no_such_tool: error -32602
tools: greet, divide
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}

	var records []record
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		records = append(records, r)
	}
	find := func(msg, side, method, tool string) []record {
		var found []record
		for _, r := range records {
			if r.str("msg") == msg && r.str("side") == side && r.str("mcp.method.name") == method && r.str("gen_ai.tool.name") == tool {
				found = append(found, r)
			}
		}
		return found
	}
	one := func(msg, side, method, tool string) record {
		t.Helper()
		found := find(msg, side, method, tool)
		if len(found) != 1 {
			t.Fatalf("%d records %s/%s/%s/%s, want 1; log:\n%s", len(found), msg, side, method, tool, logs.String())
		}
		return found[0]
	}

	calls := []struct{ method, tool, outcome, errType string }{
		{"tools/call", "greet", "ok", ""},
		{"tools/call", "divide", "error", "tool_error"},
		{"tools/call", "no_such_tool", "error", "-32602"},
		{"tools/list", "", "ok", ""},
	}
	for _, c := range calls {
		served := one("served", "server", c.method, c.tool)
		called := one("called", "client", c.method, c.tool)
		for _, r := range []record{served, called} {
			if r.str("outcome") != c.outcome || r.str("error.type") != c.errType {
				t.Errorf("%s %s %s: outcome %q error.type %q, want %q %q", r.str("side"), c.method, c.tool,
					r.str("outcome"), r.str("error.type"), c.outcome, c.errType)
			}
			if d, ok := r["duration"].(float64); !ok || d < 0 {
				t.Errorf("%s %s %s: duration %v", r.str("side"), c.method, c.tool, r["duration"])
			}
			if wantLevel := map[bool]string{true: "INFO", false: "WARN"}[c.errType == ""]; r.str("level") != wantLevel {
				t.Errorf("%s %s %s: level %s, want %s", r.str("side"), c.method, c.tool, r.str("level"), wantLevel)
			}
		}
		if served.str("jsonrpc.request.id") == "" || served.str("jsonrpc.request.id") != called.str("jsonrpc.request.id") {
			t.Errorf("%s %s: id %q served, %q called", c.method, c.tool, served.str("jsonrpc.request.id"), called.str("jsonrpc.request.id"))
		}
		// The engine logs the same request at debug level.
		engine := 0
		for _, r := range find("served a request", "server", c.method, "") {
			if r.str("from") == "engine" && r.str("jsonrpc.request.id") == served.str("jsonrpc.request.id") && r.str("outcome") == c.outcome {
				engine++
			}
		}
		if engine != 1 {
			t.Errorf("%s %s: %d engine records, want 1", c.method, c.tool, engine)
		}
	}

	if n := len(find("sent", "server", "notifications/progress", "")); n != 2 {
		t.Errorf("%d progress notifications through the server's outbound middleware, want 2", n)
	}
	greet := one("served", "server", "tools/call", "greet")
	handler := one("looking up", "server", "tools/call", "greet")
	if handler.str("name") != "Ada" || handler.str("jsonrpc.request.id") != greet.str("jsonrpc.request.id") {
		t.Errorf("the handler's record %v does not carry its request's attributes", handler)
	}
}

// TestMiddlewareTextLog runs the program as it runs by default: text
// records at info level, the middleware's and none of the engine's.
func TestMiddlewareTextLog(t *testing.T) {
	t.Parallel()
	var out, logs bytes.Buffer
	if err := run(t.Context(), &out, newLogger(&logs, false, false)); err != nil {
		t.Fatal(err)
	}
	text := logs.String()
	for _, want := range []string{
		"level=INFO msg=served side=server mcp.method.name=tools/call jsonrpc.request.id=2 gen_ai.tool.name=greet duration=",
		"level=WARN msg=called side=client mcp.method.name=tools/call jsonrpc.request.id=3 gen_ai.tool.name=divide duration=",
		"outcome=error error.type=tool_error",
		"msg=sent side=server mcp.method.name=notifications/progress",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "from=engine") || strings.Contains(text, "time=") {
		t.Errorf("at info level the log has the engine's records, or times:\n%s", text)
	}
}
