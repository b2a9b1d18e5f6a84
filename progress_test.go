package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// TestCallToolWithProgressMintsTokenIntoMetaAndStreamsToCallback.
func TestCallToolWithProgressMintsTokenIntoMetaAndStreamsToCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t)
		var got []Progress
		done := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "count_down", map[string]int{"count": 2}, WithProgress(func(pr Progress) { got = append(got, pr) }))
			done <- err
		}()
		req := p.recv()
		token := field(t, req, "params._meta.progressToken")
		if token == nil {
			t.Fatalf("no progress token: %s", req)
		}
		if field(t, req, "params.arguments.count") != 2.0 {
			t.Fatalf("arguments lost: %s", req)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":0.5,"total":1,"message":"halfway"}}`, token))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":1}}`, token))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []Progress{{Progress: 0.5, Total: 1, Message: "halfway"}, {Progress: 1}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %+v", got)
		}
	})
}

// TestCallToolWithoutProgressSendsNoToken.
func TestCallToolWithoutProgressSendsNoToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t)
		go cl.CallTool(context.Background(), "x", nil)
		req := p.recv()
		if strings.Contains(req, "progressToken") {
			t.Fatalf("token sent without WithProgress: %s", req)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
	})
}

// TestCallToolDisposesProgressListenerAfterTheResponse: progress after the
// response reaches the fallback handler, never the call's callback.
func TestCallToolDisposesProgressListenerAfterTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fallback := make(chan string, 4)
		cl, p := rawServerPeer(t, WithNotificationHandler("notifications/progress", func(ctx context.Context, params json.RawMessage) {
			fallback <- string(params)
		}))
		var mu sync.Mutex
		var got []Progress
		done := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "x", nil, WithProgress(func(pr Progress) {
				mu.Lock()
				got = append(got, pr)
				mu.Unlock()
			}))
			done <- err
		}()
		req := p.recv()
		token := field(t, req, "params._meta.progressToken")
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":1}}`, token))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":2}}`, token))
		late := <-fallback
		if !strings.Contains(late, `"progress":2`) {
			t.Fatalf("fallback got %s", late)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("callback got %+v after the call returned", got)
		}
	})
}

// TestBuildTimeProgressHandlerReceivesNotificationsWithNoPerCallListener:
// per-call listeners take their own tokens, the handler sees the rest.
func TestBuildTimeProgressHandlerReceivesNotificationsWithNoPerCallListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fallback := make(chan string, 4)
		cl, p := rawServerPeer(t, WithNotificationHandler("notifications/progress", func(ctx context.Context, params json.RawMessage) {
			fallback <- string(params)
		}))
		calls := make(chan Progress, 4)
		go cl.CallTool(context.Background(), "x", nil, WithProgress(func(pr Progress) { calls <- pr }))
		req := p.recv()
		token := field(t, req, "params._meta.progressToken")
		p.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"someone-else","progress":7}}`)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":1}}`, token))
		if got := <-fallback; !strings.Contains(got, "someone-else") {
			t.Fatalf("fallback got %s", got)
		}
		if got := <-calls; got.Progress != 1 {
			t.Fatalf("call got %+v", got)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
	})
}

// TestProgressTokensAreTypeSensitive: the integer 2 and the string "2" are
// different tokens.
func TestProgressTokensAreTypeSensitive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fallback := make(chan string, 4)
		cl, p := rawServerPeer(t, WithNotificationHandler("notifications/progress", func(ctx context.Context, params json.RawMessage) {
			fallback <- string(params)
		}))
		calls := make(chan Progress, 4)
		go cl.CallTool(context.Background(), "x", nil, WithProgress(func(pr Progress) { calls <- pr }))
		req := p.recv()
		token := field(t, req, "params._meta.progressToken")
		if _, isNumber := token.(float64); !isNumber {
			t.Fatalf("token %v", token)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"%v","progress":1}}`, token))
		if got := <-fallback; !strings.Contains(got, fmt.Sprintf(`"%v"`, token)) {
			t.Fatalf("fallback got %s", got)
		}
		select {
		case pr := <-calls:
			t.Fatalf("the string token reached the call: %+v", pr)
		default:
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
	})
}

// TestProgressCallbacksNeverRunOnTheReader: a callback that blocks does not
// stop other calls' responses from being read.
func TestProgressCallbacksNeverRunOnTheReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t)
		release := make(chan struct{})
		inCallback := make(chan struct{})
		slowDone := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil, WithProgress(func(Progress) {
				close(inCallback)
				<-release
			}))
			slowDone <- err
		}()
		slow := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":1}}`, field(t, slow, "params._meta.progressToken")))
		<-inCallback
		fastDone := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "fast", nil)
			fastDone <- err
		}()
		fast := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, fast, "id")))
		if err := <-fastDone; err != nil {
			t.Fatal(err)
		}
		close(release)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, slow, "id")))
		if err := <-slowDone; err != nil {
			t.Fatal(err)
		}
	})
}

// TestProgressIsNeverShedAtTheCap: progress routing takes no dispatch slot.
func TestProgressIsNeverShedAtTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		cl, p := rawServerPeer(t, WithMaxInFlight(1), WithNotificationHandler("notifications/busy", func(context.Context, json.RawMessage) { <-block }))
		p.send(`{"jsonrpc":"2.0","method":"notifications/busy"}`)
		synctest.Wait() // the one slot is now taken
		var got []Progress
		done := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "x", nil, WithProgress(func(pr Progress) { got = append(got, pr) }))
			done <- err
		}()
		req := p.recv()
		respondAfterProgress(p, req, 50, 0, true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(got) != 50 {
			t.Fatalf("%d of 50 progress reports delivered at the cap", len(got))
		}
		close(block)
	})
}

// TestTenThousandProgressNotifications: every report arrives, in order,
// before CallTool returns, in memory and over a child process.
func TestTenThousandProgressNotifications(t *testing.T) {
	t.Parallel()
	const n = 10_000
	for _, transport := range []string{"memory", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var cl *Client
			if transport == "memory" {
				cl = pair(t, newTestServer())
			} else {
				cl = childServer(t, "")
			}
			var got []float64
			returned := false
			_, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": n}, WithProgress(func(pr Progress) {
				if returned {
					t.Error("progress delivered after CallTool returned")
				}
				got = append(got, pr.Progress)
			}))
			returned = true
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d of %d delivered before return", len(got), n)
			}
			for i, v := range got {
				if v != float64(i+1) {
					t.Fatalf("report %d is %g: out of order", i, v)
				}
			}
		})
	}
}

// TestGatewayProgressWithoutATokenSendsNothing and must increase.
func TestGatewayProgress(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 3)
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "report"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		errs <- req.Gateway().Progress(1, 2, "one")
		errs <- req.Gateway().Progress(1, 2, "again")
		errs <- req.Gateway().Progress(0.5, 2, "backwards")
		return &CallToolResult{}, nil
	})
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report"}}`)
	if got := p.recv(); field(t, got, "id") != 1.0 {
		t.Fatalf("without a token, expected only the result: %s", got)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("without a token Progress is a no-op, got %v", err)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report","_meta":{"progressToken":"tk"}}}`)
	p.expect(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tk","progress":1,"total":2,"message":"one"}}`)
	if got := p.recv(); field(t, got, "id") != 2.0 {
		t.Fatalf("a non-increasing report was sent: %s", got)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "must increase") {
			t.Fatalf("non-increasing progress: %v", err)
		}
	}
}

// The seed's "Inbound cancellation" paragraph, on the server side of our
// engine (the client side runs the same code; see gateway tests).

// TestAUserCancelledHandlerReplacesTheDefaultBelowTheCap.
func TestAUserCancelledHandlerReplacesTheDefaultBelowTheCap(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 1)
	srv := newTestServer(WithNotificationHandler("notifications/cancelled", func(ctx context.Context, params json.RawMessage) {
		seen <- string(params)
	}))
	p := rawServer(t, srv)
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	<-seen
	// The request was not cancelled: a duplicate of its id is still refused.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if got := p.recv(); field(t, got, "error.code") != float64(CodeInvalidRequest) {
		t.Fatalf("the user handler did not replace the default: %s", got)
	}
}

// TestAtTheCapTheDispatcherItselfCancels: at the cap the engine performs the
// cancel (even with a user handler, which then also runs); a cancel that
// cancels nothing is shed.
func TestAtTheCapTheDispatcherItselfCancels(t *testing.T) {
	t.Parallel()
	for _, withUser := range []bool{false, true} {
		t.Run(fmt.Sprint("user handler ", withUser), func(t *testing.T) {
			t.Parallel()
			seen := make(chan string, 2)
			observed := make(chan error, 1)
			rec := &logRecorder{}
			opts := []ServerOption{WithMaxInFlight(1), WithLogger(slog.New(rec))}
			if withUser {
				opts = append(opts, WithNotificationHandler("notifications/cancelled", func(ctx context.Context, params json.RawMessage) {
					seen <- string(params)
				}))
			}
			srv := NewServer(Implementation{Name: "s", Version: "1"}, opts...)
			srv.AddTool(Tool{Name: "wait"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				<-ctx.Done()
				observed <- context.Cause(ctx)
				return nil, ctx.Err()
			})
			p := rawServer(t, srv)
			p.initialize(Version20251125)
			p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
			p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // proves the cap is reached
			if got := p.recv(); field(t, got, "error.code") != float64(CodeOverloaded) {
				t.Fatalf("expected overloaded: %s", got)
			}
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"stop"}}`)
			if err := <-observed; !strings.Contains(err.Error(), "stop") {
				t.Fatalf("cause %v", err)
			}
			if withUser {
				if got := <-seen; !strings.Contains(got, `"requestId":1`) {
					t.Fatalf("user handler got %s", got)
				}
			}
			// The cancel gave the slot back before the next message was
			// read (the user's handler runs on the cancelled request's
			// allowance, not in a slot): the next request is admitted.
			p.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			p.expect(`{"jsonrpc":"2.0","id":3,"result":{}}`)
			if rec.count("shedding") == 0 {
				t.Fatal("the cancel for an unknown id was not shed")
			}
			select {
			case s := <-seen:
				t.Fatalf("a shed cancel ran the user handler: %s", s)
			default:
			}
		})
	}
}

// TestNotificationsAtTheCapAreDropped.
func TestNotificationsAtTheCapAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		block := make(chan struct{})
		cl, p := rawServerPeer(t, WithMaxInFlight(1),
			WithNotificationHandler("notifications/a", func(context.Context, json.RawMessage) { <-block }),
			WithNotificationHandler("notifications/b", func(ctx context.Context, params json.RawMessage) {
				mu.Lock()
				got = append(got, string(params))
				mu.Unlock()
			}))
		_ = cl
		p.send(`{"jsonrpc":"2.0","method":"notifications/a"}`)
		synctest.Wait()
		p.send(`{"jsonrpc":"2.0","method":"notifications/b","params":{"n":1}}`)
		synctest.Wait()
		close(block)
		synctest.Wait()
		p.send(`{"jsonrpc":"2.0","method":"notifications/b","params":{"n":2}}`)
		synctest.Wait()
		p.send(`{"jsonrpc":"2.0","method":"notifications/b","params":{"n":3}}`)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(got, "") != `{"n":2}{"n":3}` {
			t.Fatalf("got %v", got)
		}
	})
}

// TestInboundNotificationHandlerPanickingIsLoggedNotAnswered.
func TestInboundNotificationHandlerPanickingIsLoggedNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		cl, p := rawServerPeer(t, WithLogger(slog.New(rec)), WithNotificationHandler("notifications/boom", func(context.Context, json.RawMessage) {
			panic("handler bug")
		}))
		p.send(`{"jsonrpc":"2.0","method":"notifications/boom"}`)
		synctest.Wait()
		if rec.count("notification handler panicked") != 1 {
			t.Fatalf("not logged: %v", rec.msgs)
		}
		select {
		case l := <-p.lines:
			t.Fatalf("a notification was answered: %s", l)
		default:
		}
		// The connection still works.
		go cl.Ping(context.Background())
		ping := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{}}`, field(t, ping, "id")))
	})
}

// TestATaggedProgressNotificationKeepsItsOwnRoute: a progress notification
// carrying a subscription id in _meta still reaches its call.
func TestATaggedProgressNotificationKeepsItsOwnRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t)
		got := make(chan Progress, 1)
		go cl.CallTool(context.Background(), "x", nil, WithProgress(func(pr Progress) { got <- pr }))
		req := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%v,"progress":3,"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}}`, field(t, req, "params._meta.progressToken")))
		if pr := <-got; pr.Progress != 3 {
			t.Fatalf("%+v", pr)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[]}}`, field(t, req, "id")))
	})
}

// FuzzProgressParams: the walk that decodes progress notifications agrees
// with encoding/json on every input that is JSON, which is all the engine
// hands it.
func FuzzProgressParams(f *testing.F) {
	for _, s := range []string{
		`{"progressToken":1,"progress":5,"total":10,"message":"half"}`,
		`{"progressToken":"t","progress":0.5}`,
		`{"progressToken":1,"progress":1e400}`,
		`{"progressToken":1,"progress":"5"}`,
		`{"progressToken":1,"PROGRESS":3,"Message":"a"}`,
		`{"progressToken":1,"progress":null,"message":"\u00e9\n"}`,
		`{"progressToken":1,"progress":-0.0,"total":2E-3,"extra":{"a":[1,2]}}`,
		`{"progress":1,"progress":2}`,
		`[1,2]`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want progressParams
		wantOK := json.Unmarshal(data, &want) == nil
		var got progressParams
		gotOK := decodeProgressParams(data, &got)
		if gotOK != wantOK {
			t.Fatalf("%s: decoded %v, encoding/json %v", data, gotOK, wantOK)
		}
		if !gotOK {
			return
		}
		if string(got.Token) != string(want.Token) || got.Progress != want.Progress {
			t.Fatalf("%s: got %s %+v, encoding/json %s %+v", data, got.Token, got.Progress, want.Token, want.Progress)
		}
	})
}
