package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gatewayClientOptions configure a client that answers every kind of ask.
func gatewayClientOptions() []ClientOption {
	return []ClientOption{
		WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			switch p.Message {
			case "decline":
				return &ElicitResult{Action: ActionDecline}, nil
			case "cancel":
				return &ElicitResult{Action: ActionCancel}, nil
			case "fail":
				return nil, errors.New("the user's screen is off")
			}
			if p.Mode == ElicitationURL {
				return &ElicitResult{Action: ActionAccept}, nil
			}
			return &ElicitResult{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
		}),
		WithURLElicitation(),
		WithSamplingHandler(func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
			text := "sampled: " + p.Messages[0].Content[0].Text
			if len(p.Tools) > 0 {
				text += " (with tools)"
			}
			return &CreateMessageResult{Role: "assistant", Content: SamplingContent{TextContent(text)}, Model: "test-model", StopReason: "endTurn"}, nil
		}),
		WithSamplingTools(),
		WithRoots(Root{URI: "file:///work", Name: "work"}),
		WithExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}),
	}
}

// connectGateway connects a client to the test server over a transport at
// revision v.
func connectGateway(t *testing.T, transport, v string, opts ...ClientOption) *Client {
	opts = append([]ClientOption{WithProtocolVersion(v)}, opts...)
	switch transport {
	case "stdio":
		return childServer(t, "", opts...)
	case "http":
		return connectHTTP(t, newTestServer(), opts...)
	}
	return pair(t, newTestServer(), opts...)
}

func callText(t *testing.T, cl *Client, tool string, args any) string {
	t.Helper()
	res, err := cl.CallTool(context.Background(), tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, res.Content[0].Text)
	}
	return res.Content[0].Text
}

// TestGatewayMethods runs every gateway method on a legacy revision and on
// 2026-07-28, over in-memory pipes and a child process.
func TestGatewayMethods(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		for _, transport := range []string{"memory", "stdio", "http"} {
			t.Run(v+"/"+transport, func(t *testing.T) {
				t.Parallel()
				custom := make(chan string, 1)
				opts := append(gatewayClientOptions(), WithNotificationHandler("notifications/custom", func(ctx context.Context, params json.RawMessage) {
					custom <- string(params)
				}))
				cl := connectGateway(t, transport, v, opts...)
				cases := []struct {
					tool string
					args any
					want string
				}{
					{"ask_elicitation", gatewayArgs{Message: "Your name?"}, `{"action":"accept","content":{"name":"Ada"}}`},
					{"ask_elicitation", gatewayArgs{Message: "decline"}, `{"action":"decline"}`},
					{"ask_elicitation", gatewayArgs{Message: "cancel"}, `{"action":"cancel"}`},
					{"ask_url", gatewayArgs{Message: "Connect", URL: "https://example.com/connect"}, `{"action":"accept"}`},
					{"ask_sampling", gatewayArgs{Message: "hi"}, `{"role":"assistant","content":{"type":"text","text":"sampled: hi"},"model":"test-model","stopReason":"endTurn"}`},
					{"ask_sampling", gatewayArgs{Message: "hi", Tools: true}, `{"role":"assistant","content":{"type":"text","text":"sampled: hi (with tools)"},"model":"test-model","stopReason":"endTurn"}`},
					{"ask_roots", nil, `{"roots":[{"uri":"file:///work","name":"work"}]}`},
					{"capabilities", nil, `{"elicitation":true,"elicitationURL":true,"roots":true,"sampling":true,"samplingContext":false,"samplingTools":true,"ui":true}`},
				}
				for _, tc := range cases {
					if got := callText(t, cl, tc.tool, tc.args); !jsonEqual(got, tc.want) {
						t.Errorf("%s %v: got %s, want %s", tc.tool, tc.args, got, tc.want)
					}
				}
				if got := callText(t, cl, "notify", nil); got != `"notified"` {
					t.Fatalf("notify: %s", got)
				}
				if got := <-custom; got != `{"hello":"world"}` {
					t.Fatalf("custom notification: %s", got)
				}
			})
		}
	}
}

// TestGatewayWithoutCapabilities: a client that declared nothing is asked
// nothing, on every revision: each ask fails before it is sent with -32021
// naming what is missing, and the client sees no request.
func TestGatewayWithoutCapabilities(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20250326, Version20250618, Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int64
			cl := pair(t, newTestServer(), WithProtocolVersion(v), WithInboundMiddleware(func(next MethodHandler) MethodHandler {
				return func(ctx context.Context, req *Request) (json.RawMessage, error) {
					if !req.IsNotification() {
						asked.Add(1)
					}
					return next(ctx, req)
				}
			}))
			if got := callText(t, cl, "capabilities", nil); !jsonEqual(got, `{"elicitation":false,"elicitationURL":false,"roots":false,"sampling":false,"samplingContext":false,"samplingTools":false,"ui":false}`) {
				t.Fatalf("capabilities: %s", got)
			}
			for _, tc := range []struct{ tool, missing string }{
				{"ask_elicitation", `{"elicitation":{"form":{}}}`},
				{"ask_sampling", `{"sampling":{}}`},
				{"ask_roots", `{"roots":{}}`},
				{"ask_url", `{"elicitation":{"url":{}}}`},
			} {
				res, err := cl.CallTool(context.Background(), tc.tool, gatewayArgs{Message: "m", URL: "https://x"})
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != CodeMissingRequiredClientCapability || !jsonEqual(string(rpcErr.Data), `{"requiredCapabilities":`+tc.missing+`}`) {
					t.Fatalf("%s: %v %+v", tc.tool, err, res)
				}
			}
			if n := asked.Load(); n != 0 {
				t.Fatalf("the client was sent %d requests", n)
			}
		})
	}
}

// TestSamplingToolsNeedTheirCapability: tools in a sampling request are
// refused unless the client declared sampling.tools.
func TestSamplingToolsNeedTheirCapability(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cl := pair(t, newTestServer(), WithProtocolVersion(v), WithSamplingHandler(func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
				return &CreateMessageResult{Role: "assistant", Content: SamplingContent{TextContent("x")}, Model: "m"}, nil
			}))
			callText(t, cl, "ask_sampling", gatewayArgs{Message: "plain"})
			res, err := cl.CallTool(context.Background(), "ask_sampling", gatewayArgs{Message: "m", Tools: true})
			var rpcErr *Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != CodeMissingRequiredClientCapability || !strings.Contains(string(rpcErr.Data), `"tools"`) {
				t.Fatalf("%v %+v", err, res)
			}
		})
	}
}

// TestClientErrorReplyIsAnError: a client handler's failure reaches the
// server's ask as an error (older revisions) or fails the client's input
// loop (2026-07-28); declining is not an error.
func TestClientErrorReplyIsAnError(t *testing.T) {
	t.Parallel()
	cl := pair(t, newTestServer(), append(gatewayClientOptions(), WithProtocolVersion(Version20251125))...)
	res, err := cl.CallTool(context.Background(), "ask_elicitation", gatewayArgs{Message: "fail"})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "screen is off") {
		t.Fatalf("%v %+v", err, res)
	}
	modern := pair(t, newTestServer(), append(gatewayClientOptions(), WithProtocolVersion(Version20260728))...)
	if _, err := modern.CallTool(context.Background(), "ask_elicitation", gatewayArgs{Message: "fail"}); err == nil || !strings.Contains(err.Error(), "screen is off") {
		t.Fatalf("modern: %v", err)
	}
}

// TestCapabilityChecksReadBothShapes: presence semantics hold whether the
// capabilities come from our live struct or from decoded JSON (hasSubCapability).
func TestCapabilityChecksReadBothShapes(t *testing.T) {
	t.Parallel()
	live := ClientCapabilities{
		Roots:       &RootsCapability{},
		Sampling:    &SamplingCapability{Tools: &struct{}{}},
		Elicitation: &ElicitationCapability{},
		Extensions:  map[string]json.RawMessage{"io.modelcontextprotocol/ui": json.RawMessage(`{}`)},
	}
	decoded := map[string]any{}
	b, _ := json.Marshal(live)
	json.Unmarshal(b, &decoded)
	cases := []struct {
		name string
		caps any
		want map[string]bool
	}{
		{"live struct", live, map[string]bool{"roots": true, "sampling": true, "tools": true, "context": false, "elicitation": true, "url": false, "ui": true, "other-ext": false}},
		{"decoded map", decoded, map[string]bool{"roots": true, "sampling": true, "tools": true, "context": false, "elicitation": true, "url": false, "ui": true, "other-ext": false}},
		{"values do not matter, keys do", json.RawMessage(`{"roots":null,"sampling":{"context":{"x":1}},"elicitation":{"url":{}}}`), map[string]bool{"roots": true, "sampling": true, "tools": false, "context": true, "elicitation": true, "url": true, "ui": false}},
		{"form only is not url", json.RawMessage(`{"elicitation":{"form":{}}}`), map[string]bool{"elicitation": true, "url": false}},
		{"nothing", json.RawMessage(`{}`), map[string]bool{"roots": false, "sampling": false, "elicitation": false}},
		{"a non-object sub-capability holder", json.RawMessage(`{"sampling":true,"extensions":[]}`), map[string]bool{"sampling": true, "tools": false, "ui": false}},
	}
	for _, tc := range cases {
		g := (&RequestInfo{caps: newCapabilitySet(tc.caps)}).Gateway()
		got := map[string]bool{
			"roots": g.SupportsRoots(), "sampling": g.SupportsSampling(), "tools": g.SupportsSamplingTools(),
			"context": g.SupportsSamplingContext(), "elicitation": g.SupportsElicitation(), "url": g.SupportsElicitationURL(),
			"ui": g.SupportsExtension("io.modelcontextprotocol/ui"), "other-ext": g.SupportsExtension("com.example/other"),
		}
		for k, want := range tc.want {
			if got[k] != want {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, got[k], want)
			}
		}
	}
}

// TestTwoAsksRunTheHandlerThreeTimes: on 2026-07-28 a handler asking twice
// runs three times; answers come back by position and by key. On a legacy
// revision it runs once.
func TestTwoAsksRunTheHandlerThreeTimes(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			srv := NewServer(Implementation{Name: "s", Version: "1"})
			srv.AddTool(Tool{Name: "book"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				runs.Add(1)
				when, err := req.Gateway().Elicit(ctx, "When?", nil)
				if err != nil {
					return nil, err
				}
				seat, err := req.Gateway().Elicit(ctx, "Seat?", nil, WithKey("seat"))
				if err != nil {
					return nil, err
				}
				return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(when.Content["answer"], " ", seat.Content["answer"]))}}, nil
			})
			cl := pair(t, srv, WithProtocolVersion(v), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				return &ElicitResult{Action: ActionAccept, Content: map[string]any{"answer": strings.TrimSuffix(p.Message, "?") + "!"}}, nil
			}))
			if got := callText(t, cl, "book", nil); got != "When! Seat!" {
				t.Fatalf("got %q", got)
			}
			want := int32(1)
			if isModernVersion(v) {
				want = 3
			}
			if runs.Load() != want {
				t.Fatalf("handler ran %d times, want %d", runs.Load(), want)
			}
		})
	}
}

// modernCall sends a raw 2026-07-28 tools/call with extra params members.
func modernCall(p *rawPeer, id int, caps, extra string) string {
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask_elicitation","arguments":{"message":"Name?"}%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`, id, extra, caps))
	return p.recv()
}

// TestReplayWire pins the 2026-07-28 wire shapes and the requestState rules
// (ElicitationReplayTest, StatelessProtocolTest twins).
func TestReplayWire(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	form := `{"elicitation":{}}`

	first := modernCall(p, 1, form, "")
	if field(t, first, "result.resultType") != "input_required" {
		t.Fatalf("round 1: %s", first)
	}
	ask := field(t, first, "result.inputRequests.elicitation_1")
	if ask == nil || field(t, first, "result.inputRequests.elicitation_1.method") != "elicitation/create" ||
		field(t, first, "result.inputRequests.elicitation_1.params.mode") != "form" {
		t.Fatalf("round 1 ask: %s", first)
	}
	state, _ := field(t, first, "result.requestState").(string)

	answer := `,"inputResponses":{"elicitation_1":{"action":"accept","content":{"name":"Ada"}}}`
	done := modernCall(p, 2, form, answer)
	if field(t, done, "result.resultType") != "complete" || !strings.Contains(done, `\"Ada\"`) {
		t.Fatalf("retry: %s", done)
	}

	t.Run("a forged state is -32602", func(t *testing.T) {
		got := modernCall(p, 3, form, answer+`,"requestState":"`+state+`x"`)
		if field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("a state replayed against other arguments is -32602", func(t *testing.T) {
		p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_elicitation","arguments":{"message":"Other?"},"requestState":"` + state + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
		if got := p.recv(); field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s", got)
		}
	})
	t.Run("the genuine state is accepted", func(t *testing.T) {
		got := modernCall(p, 5, form, `,"requestState":"`+state+`"`)
		if field(t, got, "result.resultType") != "input_required" {
			t.Fatalf("%s", got)
		}
	})
	t.Run("a malformed answer is asked again", func(t *testing.T) {
		for _, bad := range []string{`{"action":"accept","content":[1]}`, `12345`, `{"action":"maybe"}`} {
			got := modernCall(p, 6, form, `,"inputResponses":{"elicitation_1":`+bad+`}`)
			if field(t, got, "result.resultType") != "input_required" || field(t, got, "result.inputRequests.elicitation_1") == nil {
				t.Fatalf("%s: %s", bad, got)
			}
		}
		got := modernCall(p, 7, form, `,"inputResponses":null`)
		if field(t, got, "result.resultType") != "input_required" {
			t.Fatalf("null inputResponses: %s", got)
		}
	})
	t.Run("a form accepted with no content is an empty form", func(t *testing.T) {
		// A Go client's empty Content map is left out of its JSON; asking
		// again would loop until the client's round limit.
		got := modernCall(p, 10, form, `,"inputResponses":{"elicitation_1":{"action":"accept"}}`)
		if field(t, got, "result.resultType") != "complete" {
			t.Fatalf("%s", got)
		}
	})
	t.Run("extra answers are ignored", func(t *testing.T) {
		got := modernCall(p, 8, form, `,"inputResponses":{"elicitation_1":{"action":"decline"},"unknown":{"x":1}}`)
		if field(t, got, "result.resultType") != "complete" {
			t.Fatalf("%s", got)
		}
	})
	t.Run("an undeclared capability is -32021", func(t *testing.T) {
		got := modernCall(p, 9, `{"sampling":{}}`, "")
		if field(t, got, "error.code") != float64(CodeMissingRequiredClientCapability) || field(t, got, "error.data.requiredCapabilities.elicitation") == nil {
			t.Fatalf("%s", got)
		}
	})
}

// TestExpiredStateIsRejected.
func TestExpiredStateIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := rawServer(t, newTestServer(WithStateTTL(time.Minute)))
		first := modernCall(p, 1, `{"elicitation":{}}`, "")
		state := field(t, first, "result.requestState").(string)
		time.Sleep(2 * time.Minute)
		got := modernCall(p, 2, `{"elicitation":{}}`, `,"requestState":"`+state+`"`)
		if field(t, got, "error.code") != float64(CodeInvalidParams) {
			t.Fatalf("%s", got)
		}
	})
}

// TestStateCodec: round trip, and every kind of tampering is refused alike.
// editedMAC changes one character of a sealed state's MAC, the one before
// the last, whose six bits all count: writing "AA" over the end, as this
// test once did, left the MAC as it was about once in a thousand runs.
func editedMAC(sealed string) string {
	c := byte('A')
	if sealed[len(sealed)-2] == c {
		c = 'B'
	}
	return sealed[:len(sealed)-2] + string(c) + sealed[len(sealed)-1:]
}

func TestStateCodec(t *testing.T) {
	t.Parallel()
	c := stateCodec{key: make([]byte, 32), ttl: time.Minute}
	sealed := c.seal(&sealedState{Binding: "b", Answers: map[string]json.RawMessage{"k": json.RawMessage(`{"action":"decline"}`)}})
	st, err := c.open(sealed, "b")
	if err != nil || string(st.Answers["k"]) != `{"action":"decline"}` {
		t.Fatalf("%v %+v", err, st)
	}
	other := stateCodec{key: []byte(strings.Repeat("k", 32)), ttl: time.Minute}
	dot := strings.LastIndexByte(sealed, '.')
	swapped := c.seal(&sealedState{Binding: "other"})
	for name, bad := range map[string]string{
		"foreign key":     other.seal(&sealedState{Binding: "b"}),
		"edited payload":  "A" + sealed[1:],
		"edited mac":      editedMAC(sealed),
		"swapped payload": swapped[:strings.LastIndexByte(swapped, '.')] + sealed[dot:],
		"no dot":          "abc",
		"non-canonical base64 (found by FuzzStateCodec)": nonCanonical(sealed[:dot]) + sealed[dot:],
		"empty":         "",
		"not base64":    "!!!.???",
		"other binding": sealed,
	} {
		binding := "b"
		if name == "other binding" {
			binding = "c"
		}
		if _, err := c.open(bad, binding); !errors.Is(err, errBadState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a short key was accepted")
		}
	}()
	WithStateKey([]byte("short"))
}

// TestHandlerReturnedInputRequired: a handler may return its own asks. On
// 2026-07-28 they go out as input_required with the handler's signed state;
// on a legacy revision the server asks live and runs the handler again.
func TestHandlerReturnedInputRequired(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Implementation{Name: "s", Version: "1"})
			srv.AddTool(Tool{Name: "confirm"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				answer, ok := req.InputResponse("confirm")
				if !ok {
					return nil, &InputRequiredError{
						Requests: map[string]InputRequest{"confirm": {Method: "elicitation/create", Params: json.RawMessage(`{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`)}},
						State:    map[string]string{"step": "confirming"},
					}
				}
				var state map[string]string
				if _, err := req.State(&state); err != nil {
					return nil, err
				}
				return &CallToolResult{Content: []Content{TextContent(string(answer) + " " + state["step"])}}, nil
			})
			cl := pair(t, srv, WithProtocolVersion(v), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				return &ElicitResult{Action: ActionAccept, Content: map[string]any{"ok": true}}, nil
			}))
			if got := callText(t, cl, "confirm", nil); got != `{"action":"accept","content":{"ok":true}} confirming` {
				t.Fatalf("got %q", got)
			}
		})
	}
}

// TestInputRequiredWhateverTheHandlerReturned: a handler that swallows the
// ask's error still ends the round as input_required.
func TestInputRequiredWhateverTheHandlerReturned(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "careless"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if _, err := req.Gateway().Elicit(ctx, "x", nil); err != nil {
			return &CallToolResult{Content: []Content{TextContent("pretending all is well")}}, nil
		}
		return &CallToolResult{Content: []Content{TextContent("answered")}}, nil
	})
	cl := pair(t, srv, WithProtocolVersion(Version20260728), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: ActionDecline}, nil
	}))
	if got := callText(t, cl, "careless", nil); got != "answered" {
		t.Fatalf("got %q", got)
	}
}

// TestClientInputLoopIsBounded: a server that never stops asking makes the
// client give up after its round limit.
func TestClientInputLoopIsBounded(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "greedy"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		n := runs.Add(1)
		_, err := req.Gateway().Elicit(ctx, "again", nil, WithKey(fmt.Sprint("ask", n)))
		return nil, err
	})
	cl := pair(t, srv, WithProtocolVersion(Version20260728), WithMaxInputRounds(4), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: ActionDecline}, nil
	}))
	_, err := cl.CallTool(context.Background(), "greedy", nil)
	if err == nil || !strings.Contains(err.Error(), "after 4 rounds") || runs.Load() != 4 {
		t.Fatalf("err %v after %d runs", err, runs.Load())
	}
}

// TestProgressStaysAttachedAcrossRounds.
func TestProgressStaysAttachedAcrossRounds(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "steps"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, have := req.InputResponse("elicitation_1")
		start := 1.0
		if have {
			start = 2
		}
		req.Gateway().Progress(start, 2, "")
		if _, err := req.Gateway().Elicit(ctx, "go on?", nil); err != nil {
			return nil, err
		}
		return &CallToolResult{}, nil
	})
	cl := pair(t, srv, WithProtocolVersion(Version20260728), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: ActionCancel}, nil
	}))
	var got []float64
	if _, err := cl.CallTool(context.Background(), "steps", nil, WithProgress(func(p Progress) { got = append(got, p.Progress) })); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("progress %v", got)
	}
}

// TestLegacyAskWithoutAnswerTimesOut: a handler blocked in a live ask whose
// client never answers ends at the request timeout, the ask is cancelled on
// the wire, and no goroutine is left.
func TestLegacyAskWithoutAnswerTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := runtime.NumGoroutine()
		p := rawServer(t, newTestServer(WithRequestTimeout(5*time.Second)))
		p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}`)
		p.recv()
		start := time.Now()
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_elicitation","arguments":{"message":"Name?"}}}`)
		ask := p.recv()
		if field(t, ask, "method") != "elicitation/create" {
			t.Fatalf("ask %s", ask)
		}
		cancel := p.recv()
		if field(t, cancel, "method") != "notifications/cancelled" || field(t, cancel, "params.requestId") != field(t, ask, "id") {
			t.Fatalf("cancel %s", cancel)
		}
		if time.Since(start) != 5*time.Second {
			t.Fatalf("after %v", time.Since(start))
		}
		res := p.recv()
		if field(t, res, "id") != 1.0 || field(t, res, "result.isError") != true || !strings.Contains(res, "went unanswered for 5s") {
			t.Fatalf("result %s", res)
		}
		p.w.Close()
		synctest.Wait()
		if n := runtime.NumGoroutine(); n > before+1 {
			t.Fatalf("%d goroutines, started with %d", n, before)
		}
	})
}

// TestHandlerCtxEndCancelsTheAsk: when the handler's ctx ends during a live
// ask, the ask is cancelled on the wire and the client's handler sees it
// (inbound cancellation on the client side).
func TestHandlerCtxEndCancelsTheAsk(t *testing.T) {
	t.Parallel()
	clientSaw := make(chan error, 1)
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "impatient"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := req.Gateway().Elicit(ctx, "quick!", nil)
		return nil, err
	})
	rec := &logRecorder{}
	cl := pair(t, srv, WithProtocolVersion(Version20251125), WithLogger(slog.New(rec)), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		<-ctx.Done()
		clientSaw <- context.Cause(ctx)
		return &ElicitResult{Action: ActionDecline}, nil
	}))
	res, err := cl.CallTool(context.Background(), "impatient", nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "deadline exceeded") {
		t.Fatalf("%v %+v", err, res)
	}
	if cause := <-clientSaw; !strings.Contains(cause.Error(), "cancelled by the caller") {
		t.Fatalf("client handler saw %v", cause)
	}
}

// nonCanonical respells base64 whose last character carries unused bits,
// changing only those bits.
func nonCanonical(b64 string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, b64[len(b64)-1])
	return b64[:len(b64)-1] + string(alphabet[last^1])
}

func TestURLElicitationRequiredError(t *testing.T) {
	e := URLElicitationRequired("Authorization needed", URLElicitation{ElicitationID: "e-41", URL: "https://srv.example/connect", Message: "Connect"})
	if e.Code != CodeURLElicitationRequired || !jsonEqual(string(e.Data), `{"elicitations":[{"mode":"url","elicitationId":"e-41","url":"https://srv.example/connect","message":"Connect"}]}`) {
		t.Fatalf("%+v %s", e, e.Data)
	}
}

// replayServer serves one tool whose handler is given, on a raw 2026-07-28
// connection.
func replayServer(t *testing.T, h ToolHandler) *rawPeer {
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "t"}, h)
	srv.AddResourceTemplate(ResourceTemplate{URITemplate: "test://ask/{id}", Name: "ask"}, func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
		answer, err := req.Gateway().Elicit(ctx, "Which?", nil, WithKey("which"))
		if err != nil {
			return nil, err
		}
		return &ReadResourceResult{Contents: []ResourceContents{{URI: req.Params.URI, Text: fmt.Sprint(answer.Content["v"])}}}, nil
	})
	return rawServer(t, srv)
}

func rawModernCall(p *rawPeer, id int, method, params string) string {
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}}}}`, id, method, params))
	return p.recv()
}

// TestReplayKeys: positional keys count every ask, named or not.
func TestReplayKeys(t *testing.T) {
	t.Parallel()
	p := replayServer(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		_, e1 := g.Elicit(ctx, "one", nil)
		_, e2 := g.Elicit(ctx, "two", nil, WithKey("named"))
		_, e3 := g.Elicit(ctx, "three", nil)
		return nil, errors.Join(e1, e2, e3)
	})
	got := rawModernCall(p, 1, "tools/call", `"name":"t"`)
	for _, key := range []string{"elicitation_1", "named", "elicitation_3"} {
		if field(t, got, "result.inputRequests."+key) == nil {
			t.Fatalf("no ask under %s: %s", key, got)
		}
	}
	if field(t, got, "result.inputRequests.elicitation_2") != nil {
		t.Fatalf("the named ask took no position: %s", got)
	}
}

// TestReplayThisRoundOverridesCarried: an answer in this round's
// inputResponses wins over one carried in the state.
func TestReplayThisRoundOverridesCarried(t *testing.T) {
	t.Parallel()
	p := replayServer(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		a, err := req.Gateway().Elicit(ctx, "first", nil, WithKey("a"))
		if err != nil {
			return nil, err
		}
		if _, err := req.Gateway().Elicit(ctx, "second", nil, WithKey("b")); err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(a.Content["v"]))}}, nil
	})
	rawModernCall(p, 1, "tools/call", `"name":"t"`)
	r2 := rawModernCall(p, 2, "tools/call", `"name":"t","inputResponses":{"a":{"action":"accept","content":{"v":"old"}}}`)
	state := field(t, r2, "result.requestState").(string)
	r3 := rawModernCall(p, 3, "tools/call", `"name":"t","requestState":"`+state+`","inputResponses":{"a":{"action":"accept","content":{"v":"new"}},"b":{"action":"decline"}}`)
	if !strings.Contains(r3, `"text":"new"`) {
		t.Fatalf("this round's answer did not win: %s", r3)
	}
}

// TestReplayURLAnswersAreValidatedInURLMode: a url-mode accept carries no
// content; one that does is asked again.
func TestReplayURLAnswersAreValidatedInURLMode(t *testing.T) {
	t.Parallel()
	p := replayServer(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := req.Gateway().ElicitURL(ctx, "Connect", "https://example.com/connect")
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(res.Action)}}, nil
	})
	first := rawModernCall(p, 1, "tools/call", `"name":"t"`)
	if field(t, first, "result.inputRequests.elicitation_1.params.mode") != "url" || field(t, first, "result.inputRequests.elicitation_1.params.elicitationId") != nil {
		t.Fatalf("%s", first)
	}
	bad := rawModernCall(p, 2, "tools/call", `"name":"t","inputResponses":{"elicitation_1":{"action":"accept","content":{"x":1}}}`)
	if field(t, bad, "result.resultType") != "input_required" {
		t.Fatalf("a url answer with content was accepted: %s", bad)
	}
	good := rawModernCall(p, 3, "tools/call", `"name":"t","inputResponses":{"elicitation_1":{"action":"accept"}}`)
	if !strings.Contains(good, `"text":"accept"`) {
		t.Fatalf("%s", good)
	}
}

// TestResourceReadCanAskForInput, and the retry's result is not cacheable.
func TestResourceReadCanAskForInput(t *testing.T) {
	t.Parallel()
	p := replayServer(t, nil)
	first := rawModernCall(p, 1, "resources/read", `"uri":"test://ask/1"`)
	if field(t, first, "result.resultType") != "input_required" || field(t, first, "result.inputRequests.which") == nil {
		t.Fatalf("%s", first)
	}
	done := rawModernCall(p, 2, "resources/read", `"uri":"test://ask/1","inputResponses":{"which":{"action":"accept","content":{"v":"blue"}}}`)
	if !strings.Contains(done, `"text":"blue"`) || field(t, done, "result.resultType") != "complete" {
		t.Fatalf("%s", done)
	}
	if field(t, done, "result.ttlMs") != nil || field(t, done, "result.cacheScope") != nil {
		t.Fatalf("a retry round's result carries a cache hint: %s", done)
	}
}

// TestAsksOnlyWhereInputMayBeRequired: tools/list and prompts/list never
// answer input_required; an ask outside the three methods is an error.
func TestAsksOnlyWhereInputMayBeRequired(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithCompletionHandler(func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
		_, err := req.Gateway().Elicit(ctx, "?", nil)
		return nil, err
	}))
	srv.AddPrompt(Prompt{Name: "p"}, func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("x")}}}, nil
	})
	p := rawServer(t, srv)
	got := rawModernCall(p, 1, "completion/complete", `"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}`)
	if field(t, got, "error") == nil || strings.Contains(got, "input_required") {
		t.Fatalf("%s", got)
	}
}

// TestSetStateOnEveryRevision: a handler may set state on a first run on
// any revision; it comes back on the next run.
func TestSetStateOnEveryRevision(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Implementation{Name: "s", Version: "1"})
			srv.AddTool(Tool{Name: "stateful"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				var step string
				if ok, err := req.State(&step); err != nil || !ok {
					if err := req.SetState("step-1"); err != nil {
						return nil, err
					}
					return nil, &InputRequiredError{Requests: map[string]InputRequest{"ok": {Method: "elicitation/create", Params: json.RawMessage(`{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}`)}}}
				}
				return &CallToolResult{Content: []Content{TextContent("resumed at " + step)}}, nil
			})
			cl := pair(t, srv, WithProtocolVersion(v), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				return &ElicitResult{Action: ActionAccept, Content: map[string]any{}}, nil
			}))
			if got := callText(t, cl, "stateful", nil); got != "resumed at step-1" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

// TestGatewayNotifyEncodesParamsAsJSONMarshal: Notify's params reach the
// client as json.Marshal writes them, raw JSON as given, none for nil;
// params that cannot be encoded are the handler's error and nothing is
// sent, and the session goes on.
func TestGatewayNotifyEncodesParamsAsJSONMarshal(t *testing.T) {
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "notify"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		if err := g.Notify("notifications/custom", make(chan int)); err == nil {
			return nil, errors.New("unencodable params were accepted")
		}
		for _, p := range []any{map[string]string{"a": "<b>"}, json.RawMessage(`{"x": 1}`), nil} {
			if err := g.Notify("notifications/custom", p); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent("ok")}}, nil
	})
	got := make(chan string, 8)
	cl := pair(t, srv, WithNotificationHandler("notifications/custom", func(ctx context.Context, params json.RawMessage) {
		got <- string(params)
	}))
	if _, err := cl.CallTool(context.Background(), "notify", nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"a":"\u003cb\u003e"}`, `{"x": 1}`, ``} {
		select {
		case p := <-got:
			if p != want {
				t.Errorf("notification params = %q, want %q", p, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification with params %q", want)
		}
	}
}

// TestGatewayAfterTheConnectionClosed: on a stdio-like connection the
// gateway's sends fail once the connection closed, with an error that is
// both ErrClosed, as before, and ErrStreamClosed, as on HTTP.
func TestGatewayAfterTheConnectionClosed(t *testing.T) {
	t.Parallel()
	running := make(chan struct{})
	sent := make(chan []error, 1)
	srv := newTestServer()
	srv.AddTool(Tool{Name: "outlive"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		close(running)
		<-ctx.Done() // the connection closed
		g := req.Gateway()
		sent <- []error{g.Progress(1, 0, ""), g.Log(LevelInfo, "", "late"), g.Notify("notifications/late", nil)}
		return &CallToolResult{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, st) }()
	// 2025-11-25: every log message is sent until the client sets a level.
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go cl.CallTool(context.Background(), "outlive", nil, WithProgress(func(Progress) {}))
	<-running
	cancel()
	for i, err := range <-sent {
		if !errors.Is(err, ErrStreamClosed) || !errors.Is(err, ErrClosed) {
			t.Errorf("%s after the connection closed: %v, want ErrStreamClosed and ErrClosed", []string{"Progress", "Log", "Notify"}[i], err)
		}
	}
	<-served
}

// TestElicitStructSchema: a struct given to Elicit as its schema stands for
// its type, on every revision: the client is asked for the struct's fields,
// not sent the value's JSON. A struct whose inferred schema is not an
// object, or cannot be inferred, is refused before anything is sent.
func TestElicitStructSchema(t *testing.T) {
	t.Parallel()
	type form struct {
		Name string `json:"name" description:"Your name."`
		Age  int    `json:"age,omitempty"`
	}
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "ask"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := req.Gateway().Elicit(ctx, "who?", form{Name: "default"})
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(res.Action)}}, nil
	})
	srv.AddTool(Tool{Name: "ask_pointer"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		res, err := req.Gateway().Elicit(ctx, "who?", &form{})
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(res.Action)}}, nil
	})
	srv.AddTool(Tool{Name: "ask_bad"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, err := req.Gateway().Elicit(ctx, "who?", struct{ C chan int }{})
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint(err))}}, nil
	})
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			schemas := make(chan string, 4)
			cl := pair(t, srv, WithProtocolVersion(v), WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				schemas <- string(p.RequestedSchema)
				return &ElicitResult{Action: ActionDecline}, nil
			}))
			for _, tool := range []string{"ask", "ask_pointer"} {
				if got := callText(t, cl, tool, nil); got != ActionDecline {
					t.Fatalf("%s: %s", tool, got)
				}
				var schema struct {
					Type       string `json:"type"`
					Properties map[string]struct {
						Type        string `json:"type"`
						Description string `json:"description"`
					} `json:"properties"`
				}
				got := <-schemas
				if err := json.Unmarshal([]byte(got), &schema); err != nil || schema.Type != "object" ||
					schema.Properties["name"].Type != "string" || schema.Properties["name"].Description != "Your name." || schema.Properties["age"].Type != "integer" {
					t.Fatalf("%s: the requested schema %s", tool, got)
				}
			}
			if got := callText(t, cl, "ask_bad", nil); !strings.Contains(got, "chan") {
				t.Fatalf("ask_bad: %s", got)
			}
			if len(schemas) != 0 {
				t.Fatalf("ask_bad sent %s", <-schemas)
			}
		})
	}
}
