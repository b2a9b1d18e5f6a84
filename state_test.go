package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestCanonicalNumber: a number has one spelling in a binding, from its
// text: the spellings of one value agree, different values never do, not
// even where a float64 cannot tell them apart.
func TestCanonicalNumber(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"1", "1.0", "1e0", "10E-1", "0.1e1", "1E+0", "100e-2", "0.00001e5", "1.00"},
		{"123.45", "1.2345e2", "12345E-2", "123.4500", "0.0012345e5"},
		{"-7", "-7.0", "-0.7e1", "-700e-2"},
		{"0", "0.0", "0e10", "0E-5", "0.000"},
		{"-0", "-0.0", "-0e3"},
		{"1e400", "10e399", "0.1e401"},
		{"1e99999999999999999999", "10e99999999999999999998"},
	}
	var firsts []string
	for _, group := range same {
		want := canonicalNumber(group[0])
		for _, s := range group[1:] {
			if got := canonicalNumber(s); got != want {
				t.Errorf("canonicalNumber(%q) = %q, want %q as for %q", s, got, want, group[0])
			}
		}
		firsts = append(firsts, want)
	}
	apart := []string{"9007199254740992", "9007199254740993", "1e400", "1e401", "1e-400", "0", "-0", "1", "-1", "0.1", "1.0000000000000000000001", "12345678901234567890123", "12345678901234567890124"}
	seen := map[string]string{}
	for _, s := range append(apart, firsts...) {
		c := canonicalNumber(s)
		if other, ok := seen[c]; ok && canonicalNumber(other) == c && !sameGroup(same, s, other) {
			t.Errorf("%q and %q share the spelling %q", s, other, c)
		}
		seen[c] = s
		if !json.Valid([]byte(c)) {
			t.Errorf("canonicalNumber(%q) = %q is not a JSON number", s, c)
		}
	}
}

func sameGroup(groups [][]string, a, b string) bool {
	if a == b {
		return true
	}
	for _, g := range groups {
		in := func(s string) bool {
			for _, x := range g {
				if x == s {
					return true
				}
			}
			return false
		}
		if in(a) && in(b) {
			return true
		}
	}
	return false
}

// TestRequestBinding: the binding sees numbers exactly and the principal,
// and not key order, spacing or escapes of the same text.
func TestRequestBinding(t *testing.T) {
	t.Parallel()
	b := func(principal, params string) string {
		return requestBinding(principal, "tools/call", json.RawMessage(params))
	}
	equal := [][2]string{
		{`{"name":"t","arguments":{"amount":1,"list":[1.5,2]}}`, `{ "arguments" : {"list":[15e-1, 2.0], "amount":1e0}, "name":"t", "_meta":{"x":1}}`},
		{`{"arguments":{"s":"é"}}`, `{"arguments":{"s":"\u00e9"}}`},
	}
	for _, p := range equal {
		if b("", p[0]) != b("", p[1]) {
			t.Errorf("%s and %s bound apart", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"arguments":{"amount":9007199254740992}}`, `{"arguments":{"amount":9007199254740993}}`},
		{`{"arguments":{"amount":0}}`, `{"arguments":{"amount":-0}}`},
		{`{"arguments":{"amount":1}}`, `{"arguments":{"amount":"1"}}`},
		{`{"arguments":{"a":1}}`, `{"arguments":{"a":[1]}}`},
		{`{"a\u0000b":1}`, `{"a":1}`},
	}
	for _, p := range differ {
		if b("", p[0]) == b("", p[1]) {
			t.Errorf("%s and %s bound alike", p[0], p[1])
		}
	}
	params := `{"arguments":{"amount":1}}`
	if b("alice", params) == b("bob", params) || b("alice", params) == b("", params) {
		t.Error("the principal is not bound")
	}
	if requestBinding("", "tools/call", json.RawMessage(params)) == requestBinding("", "prompts/get", json.RawMessage(params)) {
		t.Error("the method is not bound")
	}
}

// TestRequestStateExactNumbers: a state minted for amount
// 9007199254740992 does not complete a retry with 9007199254740993 (the
// same float64), while the same amount spelled otherwise is accepted.
func TestRequestStateExactNumbers(t *testing.T) {
	t.Parallel()
	p := replayServer(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		answer, err := req.Gateway().Elicit(ctx, "Sure?", nil, WithKey("sure"))
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments) + " " + answer.Action)}}, nil
	})
	first := rawModernCall(p, 1, "tools/call", `"name":"t","arguments":{"amount":9007199254740992}`)
	state, _ := field(t, first, "result.requestState").(string)
	if state == "" {
		t.Fatalf("round 1: %s", first)
	}
	answer := `"inputResponses":{"sure":{"action":"accept","content":{}}}`
	for i, tc := range []struct {
		amount string
		ok     bool
	}{
		{"9007199254740993", false},
		{"9007199254740991", false},
		{"9007199254740992.5", false},
		{"9.007199254740992e15", true},
		{"9007199254740992.000", true},
		{"9007199254740992", true},
	} {
		got := rawModernCall(p, 10+i, "tools/call", `"name":"t","arguments":{"amount":`+tc.amount+`},"requestState":"`+state+`",`+answer)
		accepted := field(t, got, "result.resultType") == "complete"
		if accepted != tc.ok || (!tc.ok && field(t, got, "error.code") != float64(CodeInvalidParams)) {
			t.Errorf("a retry with amount %s: %s, want accepted %v", tc.amount, got, tc.ok)
		}
	}
}

// TestRequestStateBoundToPrincipal: over HTTP with an authorizer, a state
// minted for one principal is refused, as a forged one, for another or for
// an anonymous request; its own principal completes the call, and the
// handler sees who it is.
func TestRequestStateBoundToPrincipal(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "t"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		answer, err := req.Gateway().Elicit(ctx, "Sure?", nil, WithKey("sure"))
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(req.Principal() + " " + answer.Action)}}, nil
	})
	ts := serveHTTP(t, srv, WithAuthorizer(AuthorizerFunc(tokenAuthorizer)))
	call := func(who, extra string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"amount":1}` + extra +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`
		r := doHTTP(t, "POST", ts.URL, body, modernHeaders("tools/call", "Mcp-Name", "t", "Authorization", "Bearer "+who))
		if r.status != 200 {
			t.Fatalf("as %s: %d %s", who, r.status, r.body)
		}
		return r.body
	}
	first := call("alice", "")
	state, _ := field(t, first, "result.requestState").(string)
	if state == "" {
		t.Fatalf("round 1: %s", first)
	}
	retry := `,"requestState":"` + state + `","inputResponses":{"sure":{"action":"accept","content":{}}}`
	for _, who := range []string{"bob", "-"} {
		if got := call(who, retry); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Errorf("alice's state used by %q: %s", who, got)
		}
	}
	got := call("alice", retry)
	if field(t, got, "result.resultType") != "complete" || !strings.Contains(got, `"alice accept"`) {
		t.Fatalf("alice's retry: %s", got)
	}
	// A state minted anonymously is anonymous's only.
	anon := call("-", "")
	state, _ = field(t, anon, "result.requestState").(string)
	retry = `,"requestState":"` + state + `","inputResponses":{"sure":{"action":"accept","content":{}}}`
	if got := call("alice", retry); field(t, got, "error.code") != float64(CodeInvalidParams) {
		t.Errorf("an anonymous state used by alice: %s", got)
	}
	if got := call("-", retry); field(t, got, "result.resultType") != "complete" {
		t.Errorf("an anonymous state used anonymously: %s", got)
	}
}
