package mcpotel

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// TestOutcome: every way an operation ends maps to the error.type the
// package doc lists, the same on spans and metrics.
func TestOutcome(t *testing.T) {
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(&mcp.CancelledError{Reason: "user"})
	closed, closeConn := context.WithCancelCause(context.Background())
	closeConn(fmt.Errorf("%w: end of input", mcp.ErrClosed))
	live := context.Background()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		inbound  bool
		method   string
		result   string
		err      error
		errType  string
		code     string
		describe bool
	}{
		{name: "success", ctx: live, method: "tools/call", result: `{"content":[]}`},
		{name: "isError false", ctx: live, method: "tools/call", result: `{"content":[],"isError":false}`},
		{name: "isError true", ctx: live, method: "tools/call", result: `{"content":[],"isError":true}`, errType: "tool_error"},
		{name: "isError inside content", ctx: live, method: "tools/call", result: `{"content":[{"isError":true}]}`},
		{name: "isError outside tools/call", ctx: live, method: "prompts/get", result: `{"isError":true}`},
		{name: "JSON-RPC error", ctx: live, err: fmt.Errorf("call: %w", &mcp.Error{Code: -32602, Message: "unknown tool"}),
			errType: "-32602", code: "-32602", describe: true},
		{name: "timeout", ctx: live, err: &mcp.RequestTimeoutError{Method: "tools/call", Bound: mcp.BoundIdle}, errType: "timeout", describe: true},
		{name: "deadline", ctx: live, err: context.DeadlineExceeded, errType: "timeout", describe: true},
		{name: "cancelled", ctx: live, err: context.Canceled, errType: "cancelled", describe: true},
		{name: "connection closed", ctx: live, err: fmt.Errorf("%w: EOF", mcp.ErrClosed), errType: "connection_closed", describe: true},
		{name: "other", ctx: live, err: errors.New("disk full"), errType: "_OTHER", describe: true},
		{name: "inbound other error", ctx: live, inbound: true, err: errors.New("disk full"), errType: "-32603", code: "-32603", describe: true},
		{name: "inbound JSON-RPC error", ctx: live, inbound: true, err: &mcp.Error{Code: -32601, Message: "no"}, errType: "-32601", code: "-32601", describe: true},
		{name: "inbound cancelled by the peer", ctx: cancelled, inbound: true, method: "tools/call", result: `{"isError":true}`, errType: "cancelled", describe: true},
		{name: "inbound connection closed", ctx: closed, inbound: true, result: `{}`, errType: "connection_closed", describe: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := outcomeOf(tc.ctx, tc.inbound, tc.method, []byte(tc.result), tc.err)
			if out.errorType != tc.errType || out.code != tc.code || (out.description != "") != tc.describe {
				t.Errorf("outcome %+v, want error.type %q, code %q, a description %v", out, tc.errType, tc.code, tc.describe)
			}
		})
	}
}

// TestSpanName: the tool's or prompt's name is the target; a resource's
// URI never is.
func TestSpanName(t *testing.T) {
	for _, tc := range []struct{ method, params, want string }{
		{"tools/call", `{"name":"get-weather","arguments":{"name":"x"}}`, "tools/call get-weather"},
		{"prompts/get", `{"name":"analyze-code"}`, "prompts/get analyze-code"},
		{"resources/read", `{"uri":"file:///a"}`, "resources/read"},
		{"tools/call", `{"name":7}`, "tools/call"},
		{"tools/call", `not json`, "tools/call"},
		{"tools/list", `{"name":"x"}`, "tools/list"},
		{"notifications/initialized", ``, "notifications/initialized"},
	} {
		op := newOperation(&mcp.Request{Method: tc.method, Params: []byte(tc.params)}, readParams([]byte(tc.params)))
		if got := op.spanName(); got != tc.want {
			t.Errorf("%s %s: span name %q, want %q", tc.method, tc.params, got, tc.want)
		}
	}
}
