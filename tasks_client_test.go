package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// scriptedRequest is one request or notification a scripted task server
// received.
type scriptedRequest struct {
	id     string
	method string
	params json.RawMessage
	at     time.Time
	name   string // the Mcp-Name header (HTTP)
}

// taskServer plays a server that runs tools as tasks, answering from a
// script written as raw JSON of one revision's wire shape.
type taskServer struct {
	modern bool
	// handle answers a request the server does not answer itself: the
	// result's JSON, or an error.
	handle func(method string, params json.RawMessage) (string, *Error)

	mu   sync.Mutex
	seen []scriptedRequest
}

// answer returns the reply to one message, or nil for a notification.
func (s *taskServer) answer(msg []byte) []byte { return s.answerNamed(msg, "") }

// answerNamed is answer for a message whose POST carried the Mcp-Name
// header name.
func (s *taskServer) answerNamed(msg []byte, name string) []byte {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" {
		return nil
	}
	s.mu.Lock()
	s.seen = append(s.seen, scriptedRequest{string(m.ID), m.Method, bytes.Clone(m.Params), time.Now(), name})
	s.mu.Unlock()
	if m.ID == nil {
		return nil
	}
	var result string
	var rpcErr *Error
	switch {
	case m.Method == "initialize" && !s.modern:
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"scripted","version":"1"}}`
	case m.Method == "server/discover" && s.modern:
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"scripted","version":"1"}}}`
	case m.Method == "server/discover":
		rpcErr = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	default:
		result, rpcErr = s.handle(m.Method, m.Params)
	}
	if rpcErr != nil {
		e, _ := json.Marshal(rpcErr)
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, m.ID, e)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
}

// requests returns the requests received with the method.
func (s *taskServer) requests(method string) []scriptedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []scriptedRequest
	for _, r := range s.seen {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// connect connects a client to s over the carrier: "memory" (in-memory
// pipes, the server a goroutine) or "http" (an httptest server on
// loopback answering each POST with JSON).
func (s *taskServer) connect(t *testing.T, carrier string, opts ...ClientOption) *Client {
	t.Helper()
	version := Version20251125
	if s.modern {
		version = Version20260728
	}
	opts = append([]ClientOption{WithProtocolVersion(version)}, opts...)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, opts...)
	var tr Transport
	switch carrier {
	case "memory":
		ct, st := NewInMemoryTransports()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				msg, err := st.ReadMessage()
				if err != nil {
					st.Close()
					return
				}
				if reply := s.answer(msg); reply != nil {
					if st.WriteMessage(reply) != nil {
						return
					}
				}
			}
		}()
		t.Cleanup(func() { <-done })
		tr = ct
	case "http":
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			body, _ := io.ReadAll(r.Body)
			reply := s.answerNamed(body, r.Header.Get("Mcp-Name"))
			if reply == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(reply)
		}))
		t.Cleanup(ts.Close)
		tr = NewHTTPTransport(ts.URL)
	default:
		t.Fatalf("unknown carrier %q", carrier)
	}
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// scriptedTask writes a task's members as the revision names them.
func scriptedTask(modern bool, status TaskStatus, message string, pollMs int) string {
	ttl, poll := "ttl", "pollInterval"
	if modern {
		ttl, poll = "ttlMs", "pollIntervalMs"
	}
	s := fmt.Sprintf(`"taskId":"t-1","status":%q,"createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:01Z","%s":60000`, status, ttl)
	if message != "" {
		s += fmt.Sprintf(`,"statusMessage":%q`, message)
	}
	if pollMs > 0 {
		s += fmt.Sprintf(`,"%s":%d`, poll, pollMs)
	}
	return s
}

// created is a CreateTaskResult in the revision's shape.
func created(modern bool, pollMs int) string {
	if modern {
		return `{"resultType":"task",` + scriptedTask(true, TaskWorking, "", pollMs) + `}`
	}
	return `{"task":{` + scriptedTask(false, TaskWorking, "", pollMs) + `}}`
}

// polled is a tasks/get result in the revision's shape; extra members
// (result, error, inputRequests) are 2026-07-28's.
func polled(modern bool, status TaskStatus, message, extra string) string {
	s := "{" + scriptedTask(modern, status, message, 1)
	if modern {
		s += `,"resultType":"complete"`
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

var taskEras = []struct {
	name   string
	modern bool
}{{"2025-11-25", false}, {"2026-07-28", true}}

// eachTaskCase runs fn on both revisions over memory and HTTP.
func eachTaskCase(t *testing.T, fn func(t *testing.T, modern bool, carrier string)) {
	for _, era := range taskEras {
		for _, carrier := range []string{"memory", "http"} {
			t.Run(era.name+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				fn(t, era.modern, carrier)
			})
		}
	}
}

// fastPolls makes a client poll every millisecond.
var fastPolls = []ClientOption{WithTaskPolling(time.Millisecond, time.Millisecond)}

// TestCallToolTaskOutcomes: CallTool with WithTask creates a task, polls
// it and returns its end as a synchronous call would: a result, a tool
// error, a protocol error, or a cancelled task.
func TestCallToolTaskOutcomes(t *testing.T) {
	t.Parallel()
	const text = `{"content":[{"type":"text","text":"done"}]}`
	const toolError = `{"content":[{"type":"text","text":"boom"}],"isError":true}`
	tests := []struct {
		name  string
		final func(modern bool) string // the tasks/get answer that ends the task
		after string                   // 2025-11-25: what tasks/result answers
		check func(t *testing.T, res *CallToolResult, err error)
	}{
		{"completes", func(m bool) string { return polled(m, TaskCompleted, "", `"result":`+text) }, text,
			func(t *testing.T, res *CallToolResult, err error) {
				if err != nil || len(res.Content) != 1 || res.Content[0].Text != "done" || res.IsError {
					t.Fatalf("%+v, %v", res, err)
				}
			}},
		{"tool error", func(m bool) string { return polled(m, TaskCompleted, "", `"result":`+toolError) }, toolError,
			func(t *testing.T, res *CallToolResult, err error) {
				if err != nil || !res.IsError || res.Content[0].Text != "boom" {
					t.Fatalf("%+v, %v", res, err)
				}
			}},
		{"protocol error", func(m bool) string {
			return polled(m, TaskFailed, "", `"error":{"code":-32603,"message":"disk full"}`)
		}, "",
			func(t *testing.T, res *CallToolResult, err error) {
				var rpcErr *Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInternalError || rpcErr.Message != "disk full" {
					t.Fatalf("%+v, %v", res, err)
				}
			}},
		{"cancelled", func(m bool) string { return polled(m, TaskCancelled, "", "") }, "",
			func(t *testing.T, res *CallToolResult, err error) {
				if !errors.Is(err, ErrTaskCancelled) {
					t.Fatalf("%+v, %v", res, err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachTaskCase(t, func(t *testing.T, modern bool, carrier string) {
				polls := 0
				s := &taskServer{modern: modern}
				s.handle = func(method string, params json.RawMessage) (string, *Error) {
					switch method {
					case "tools/call":
						return created(modern, 0), nil
					case "tasks/get":
						polls++
						if polls == 1 {
							return polled(modern, TaskWorking, "halfway", ""), nil
						}
						return tc.final(modern), nil
					case "tasks/result":
						if tc.after == "" {
							return "", &Error{Code: CodeInternalError, Message: "disk full"}
						}
						return tc.after, nil
					}
					return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
				}
				cl := s.connect(t, carrier, fastPolls...)
				var messages []string
				res, err := cl.CallTool(context.Background(), "slow", map[string]any{"n": 1}, WithTask(time.Minute),
					WithProgress(func(p Progress) { messages = append(messages, p.Message) }))
				tc.check(t, res, err)
				if len(messages) != 1 || messages[0] != "halfway" {
					t.Errorf("progress %q, want the status message", messages)
				}
				call := s.requests("tools/call")[0]
				if modern {
					if !bytes.Contains(call.params, []byte(`"extensions":{"io.modelcontextprotocol/tasks":{}}`)) {
						t.Errorf("tools/call does not declare the tasks extension: %s", call.params)
					}
					if len(s.requests("tasks/result")) != 0 {
						t.Error("tasks/result sent on 2026-07-28")
					}
				} else if !bytes.Contains(call.params, []byte(`"task":{"ttl":60000}`)) {
					t.Errorf("tools/call has no task param: %s", call.params)
				}
				if len(s.requests("tasks/cancel")) != 0 {
					t.Error("a task that ended was cancelled")
				}
				if modern && carrier == "http" {
					for _, r := range s.requests("tasks/get") {
						if r.name != "t-1" {
							t.Errorf("tasks/get with Mcp-Name %q, want the task id", r.name)
						}
					}
				}
			})
		})
	}
}

// TestCallToolTaskAbandoned: a wait ended by the caller's context or by
// the call's ceiling sends tasks/cancel for the task, never
// notifications/cancelled for it, and returns the usual typed error.
func TestCallToolTaskAbandoned(t *testing.T) {
	t.Parallel()
	eachTaskCase(t, func(t *testing.T, modern bool, carrier string) {
		for _, how := range []string{"context", "ceiling"} {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &taskServer{modern: modern}
			s.handle = func(method string, params json.RawMessage) (string, *Error) {
				switch method {
				case "tools/call":
					return created(modern, 0), nil
				case "tasks/get":
					if how == "context" {
						cancel()
					}
					return polled(modern, TaskWorking, "", ""), nil
				case "tasks/cancel":
					if modern {
						return `{"resultType":"complete"}`, nil
					}
					return polled(false, TaskCancelled, "", ""), nil
				}
				return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
			}
			opts := append([]ClientOption{WithRequestTimeout(300 * time.Millisecond), WithMaxRequestTimeout(300 * time.Millisecond)}, fastPolls...)
			cl := s.connect(t, carrier, opts...)
			_, err := cl.CallTool(ctx, "slow", nil, WithTask(0))
			var timeout *RequestTimeoutError
			switch how {
			case "context":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s: %v", how, err)
				}
			case "ceiling":
				if !errors.As(err, &timeout) || timeout.Bound != BoundCeiling {
					t.Fatalf("%s: %v", how, err)
				}
			}
			cancels := s.requests("tasks/cancel")
			if len(cancels) != 1 || !bytes.Contains(cancels[0].params, []byte(`"taskId":"t-1"`)) {
				t.Fatalf("%s: tasks/cancel %v", how, cancels)
			}
			if modern && carrier == "http" && cancels[0].name != "t-1" {
				t.Errorf("%s: tasks/cancel with Mcp-Name %q", how, cancels[0].name)
			}
			// A poll in flight may be abandoned; the task's own call never is.
			call := s.requests("tools/call")[0]
			for _, n := range s.requests("notifications/cancelled") {
				if field(t, string(n.params), "requestId") == field(t, `{"id":`+call.id+`}`, "id") {
					t.Errorf("%s: notifications/cancelled sent for the task: %s", how, n.params)
				}
			}
			cl.Close()
		}
	})
}

// TestCallToolTaskInputTwice: a 2026-07-28 task that asks for input twice
// gets each ask answered once, through tasks/update, however many polls
// repeat it, and then completes.
func TestCallToolTaskInputTwice(t *testing.T) {
	t.Parallel()
	for _, carrier := range []string{"memory", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			answered := map[string]bool{}
			polls := 0
			s := &taskServer{modern: true}
			ask := func(key, message string) string {
				return fmt.Sprintf(`"inputRequests":{%q:{"method":"elicitation/create","params":{"mode":"form","message":%q,"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}`, key, message)
			}
			s.handle = func(method string, params json.RawMessage) (string, *Error) {
				mu.Lock()
				defer mu.Unlock()
				switch method {
				case "tools/call":
					return created(true, 0), nil
				case "tasks/get":
					polls++
					switch {
					case !answered["first"]:
						return polled(true, TaskInputRequired, "", ask("first", "one?")), nil
					case polls < 4: // the answer is not taken in yet: the same ask again
						return polled(true, TaskInputRequired, "", ask("first", "one?")), nil
					case !answered["second"]:
						return polled(true, TaskInputRequired, "", ask("second", "two?")), nil
					}
					return polled(true, TaskCompleted, "", `"result":{"content":[{"type":"text","text":"both"}]}`), nil
				case "tasks/update":
					var p struct {
						TaskID         string                     `json:"taskId"`
						InputResponses map[string]json.RawMessage `json:"inputResponses"`
					}
					json.Unmarshal(params, &p)
					for k, v := range p.InputResponses {
						if p.TaskID == "t-1" && strings.Contains(string(v), `"accept"`) {
							answered[k] = true
						}
					}
					return `{"resultType":"complete"}`, nil
				}
				return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
			}
			var asked []string
			opts := append([]ClientOption{WithElicitationHandler(func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				asked = append(asked, p.Message)
				return &ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
			})}, fastPolls...)
			cl := s.connect(t, carrier, opts...)
			res, err := cl.CallTool(context.Background(), "confirm", nil, WithTask(0))
			if err != nil || res.Content[0].Text != "both" {
				t.Fatalf("%+v, %v", res, err)
			}
			if strings.Join(asked, ",") != "one?,two?" {
				t.Errorf("asked %q, want each ask once", asked)
			}
			updates := s.requests("tasks/update")
			if len(updates) != 2 {
				t.Errorf("%d tasks/update, want 2", len(updates))
			}
			for _, r := range updates {
				if carrier == "http" && r.name != "t-1" {
					t.Errorf("tasks/update with Mcp-Name %q, want the task id", r.name)
				}
			}
		})
	}
}

// TestTaskPollInterval: the client polls at the server's suggested
// interval, at WithTaskPolling's interval when it suggests none, and never
// more often than its minimum (each at the limit).
func TestTaskPollInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pollMs int
		opts   []ClientOption
		want   time.Duration
	}{
		{"the server's", 5000, nil, 5 * time.Second},
		{"the default", 0, nil, DefaultTaskPollInterval},
		{"the option", 0, []ClientOption{WithTaskPolling(3*time.Second, 0)}, 3 * time.Second},
		{"the default floor", 1, nil, DefaultMinTaskPollInterval},
		{"at the floor", 200, []ClientOption{WithTaskPolling(0, 200*time.Millisecond)}, 200 * time.Millisecond},
		{"under the floor", 199, []ClientOption{WithTaskPolling(0, 200*time.Millisecond)}, 200 * time.Millisecond},
	}
	for _, tc := range tests {
		for _, era := range taskEras {
			t.Run(tc.name+"/"+era.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					polls := 0
					s := &taskServer{modern: era.modern}
					s.handle = func(method string, params json.RawMessage) (string, *Error) {
						switch method {
						case "tools/call":
							return created(era.modern, tc.pollMs), nil
						case "tasks/get":
							polls++
							status := TaskWorking
							if polls == 3 {
								status = TaskCompleted
							}
							ttl, poll := "ttl", "pollInterval"
							if era.modern {
								ttl, poll = "ttlMs", "pollIntervalMs"
							}
							r := fmt.Sprintf(`{"taskId":"t-1","status":%q,"createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","%s":null,"result":{"content":[]}`, status, ttl)
							if tc.pollMs > 0 {
								r += fmt.Sprintf(`,"%s":%d`, poll, tc.pollMs)
							}
							return r + "}", nil
						case "tasks/result":
							return `{"content":[]}`, nil
						}
						return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
					}
					cl := s.connect(t, "memory", tc.opts...)
					if _, err := cl.CallTool(context.Background(), "slow", nil, WithTask(0)); err != nil {
						t.Fatal(err)
					}
					at := []time.Time{s.requests("tools/call")[0].at}
					for _, r := range s.requests("tasks/get") {
						at = append(at, r.at)
					}
					for i := 1; i < len(at); i++ {
						if got := at[i].Sub(at[i-1]); got != tc.want {
							t.Errorf("poll %d after %v, want %v", i, got, tc.want)
						}
					}
					cl.Close()
				})
			})
		}
	}
}

// TestToolTaskHandle: the handle API starts a task, reads it, waits on it
// and cancels it; OpenTask reads a task by id; a server that answers at
// once gives a handle that is already done.
func TestToolTaskHandle(t *testing.T) {
	t.Parallel()
	eachTaskCase(t, func(t *testing.T, modern bool, carrier string) {
		status := TaskWorking
		immediate := false
		s := &taskServer{modern: modern}
		s.handle = func(method string, params json.RawMessage) (string, *Error) {
			switch method {
			case "tools/call":
				if immediate {
					return `{"content":[{"type":"text","text":"at once"}]}`, nil
				}
				return created(modern, 0), nil
			case "tasks/get":
				return polled(modern, status, "busy", `"result":{"content":[{"type":"text","text":"late"}]}`), nil
			case "tasks/result":
				return `{"content":[{"type":"text","text":"late"}]}`, nil
			case "tasks/cancel":
				return `{}`, nil
			}
			return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
		}
		cl := s.connect(t, carrier, fastPolls...)
		ctx := context.Background()
		task, err := cl.StartTool(ctx, "slow", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := task.Task(); got.ID != "t-1" || got.Status != TaskWorking || got.TTL != time.Minute {
			t.Fatalf("started %+v", got)
		}
		if got, err := task.Get(ctx); err != nil || got.StatusMessage != "busy" {
			t.Fatalf("Get: %+v, %v", got, err)
		}
		if err := task.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(s.requests("tasks/cancel")); n != 1 {
			t.Fatalf("%d tasks/cancel", n)
		}
		status = TaskCompleted
		res, err := cl.OpenTask("t-1").Wait(ctx)
		if err != nil || res.Content[0].Text != "late" {
			t.Fatalf("Wait: %+v, %v", res, err)
		}
		immediate = true
		task, err = cl.StartTool(ctx, "quick", nil)
		if err != nil || task.Task().ID != "" {
			t.Fatalf("%+v, %v", task, err)
		}
		if res, err := task.Wait(ctx); err != nil || res.Content[0].Text != "at once" {
			t.Fatalf("Wait: %+v, %v", res, err)
		}
	})
}

// TestCallToolRequiredTask: a tool listed with taskSupport required is
// called as a task without WithTask; a forbidden one as an ordinary call
// even with it; and -32021 says what to do.
func TestCallToolRequiredTask(t *testing.T) {
	t.Parallel()
	for _, era := range taskEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			modern := era.modern
			s := &taskServer{modern: modern}
			s.handle = func(method string, params json.RawMessage) (string, *Error) {
				switch method {
				case "tools/list":
					return `{"tools":[{"name":"must","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},{"name":"never","inputSchema":{"type":"object"}}]}`, nil
				case "tools/call":
					if bytes.Contains(params, []byte(`"name":"refuse"`)) {
						return "", &Error{Code: CodeMissingRequiredClientCapability, Message: "task required", Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)}
					}
					if bytes.Contains(params, []byte(`"name":"never"`)) {
						return `{"content":[{"type":"text","text":"plain"}]}`, nil
					}
					return created(modern, 0), nil
				case "tasks/get":
					return polled(modern, TaskCompleted, "", `"result":{"content":[{"type":"text","text":"tasked"}]}`), nil
				case "tasks/result":
					return `{"content":[{"type":"text","text":"tasked"}]}`, nil
				}
				return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
			}
			cl := s.connect(t, "memory", fastPolls...)
			ctx := context.Background()
			res, err := cl.CallTool(ctx, "must", nil)
			if err != nil || res.Content[0].Text != "tasked" {
				t.Fatalf("%+v, %v", res, err)
			}
			if n := len(s.requests("tools/list")); modern && n != 0 || !modern && n != 1 {
				t.Errorf("%d tools/list", n)
			}
			res, err = cl.CallTool(ctx, "never", nil, WithTask(time.Second))
			if err != nil || res.Content[0].Text != "plain" {
				t.Fatalf("%+v, %v", res, err)
			}
			calls := s.requests("tools/call")
			if last := calls[len(calls)-1].params; !modern && bytes.Contains(last, []byte(`"task"`)) {
				t.Errorf("a forbidden tool was called with a task: %s", last)
			}
			if modern {
				_, err = cl.CallTool(ctx, "refuse", nil)
				if rpcCode(err) != CodeMissingRequiredClientCapability || !strings.Contains(err.Error(), "runs only as a task") {
					t.Fatalf("%v", err)
				}
			}
		})
	}
}

// TestListTasks: tasks/list pages through on 2025-11-25; on 2026-07-28,
// where it does not exist, ListTasks says so without asking.
func TestListTasks(t *testing.T) {
	t.Parallel()
	for _, era := range taskEras {
		s := &taskServer{modern: era.modern}
		s.handle = func(method string, params json.RawMessage) (string, *Error) {
			if method != "tasks/list" {
				return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
			}
			if bytes.Contains(params, []byte(`"cursor":"2"`)) {
				return `{"tasks":[{` + strings.Replace(scriptedTask(false, TaskCompleted, "", 0), "t-1", "t-2", 1) + `}]}`, nil
			}
			return `{"tasks":[{` + scriptedTask(false, TaskWorking, "", 0) + `}],"nextCursor":"2"}`, nil
		}
		cl := s.connect(t, "memory")
		var ids []string
		for task, err := range cl.Tasks(context.Background()) {
			if err != nil {
				ids = append(ids, "error: "+err.Error())
				break
			}
			ids = append(ids, task.ID+"="+string(task.Status))
		}
		got := strings.Join(ids, ",")
		if !era.modern && got != "t-1=working,t-2=completed" {
			t.Errorf("%s: %s", era.name, got)
		}
		if era.modern && (!strings.Contains(got, "only on protocol revision 2025-11-25") || len(s.requests("tasks/list")) != 0) {
			t.Errorf("%s: %s", era.name, got)
		}
	}
}

// TestTaskStatusNotifications: on 2025-11-25 a notifications/tasks/status
// ends the wait between polls and its status message is reported.
func TestTaskStatusNotifications(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithTaskPolling(time.Hour, time.Hour))
		var messages []string
		done := make(chan error, 1)
		go func() {
			res, err := cl.CallTool(context.Background(), "slow", nil, WithTask(0), WithTimeout(2*time.Hour),
				WithProgress(func(pr Progress) { messages = append(messages, pr.Message) }))
			if err == nil && res.Content[0].Text != "ok" {
				err = fmt.Errorf("result %+v", res)
			}
			done <- err
		}()
		call := p.recv()
		if field(t, call, "params.task") == nil {
			t.Fatalf("no task param: %s", call)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"task":{%s}}}`, field(t, call, "id"), scriptedTask(false, TaskWorking, "", 0)))
		synctest.Wait()
		p.send(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{` + scriptedTask(false, TaskWorking, "step 2", 0) + `}}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{` + scriptedTask(false, TaskCompleted, "step 3", 0) + `}}`)
		result := p.recv()
		if field(t, result, "method") != "tasks/result" {
			t.Fatalf("got %s", result)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"ok"}]}}`, field(t, result, "id")))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if strings.Join(messages, ",") != "step 2,step 3" && strings.Join(messages, ",") != "step 3" {
			t.Errorf("progress %q", messages)
		}
	})
}

// TestTaskGoroutines: waiting on many tasks, to every end, leaves no
// goroutine behind once the client closes.
func TestTaskGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, era := range taskEras {
		for _, carrier := range []string{"memory", "http"} {
			t.Run(era.name+"/"+carrier, func(t *testing.T) {
				s := &taskServer{modern: era.modern}
				s.handle = func(method string, params json.RawMessage) (string, *Error) {
					switch method {
					case "tools/call":
						return created(era.modern, 0), nil
					case "tasks/get":
						return polled(era.modern, TaskCompleted, "", `"result":{"content":[]}`), nil
					case "tasks/result":
						return `{"content":[]}`, nil
					}
					return "", &Error{Code: CodeMethodNotFound, Message: "Method not found"}
				}
				cl := s.connect(t, carrier, fastPolls...)
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						if _, err := cl.CallTool(context.Background(), "slow", nil, WithTask(0)); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			})
		}
	}
	http.DefaultClient.CloseIdleConnections()
	settleGoroutines(t, before)
}

// TestCallToolTaskLegacyInput: on 2025-11-25 a task that needs input is
// waited on with tasks/result, through which the server asks with a live
// elicitation/create that the client's handler answers.
func TestCallToolTaskLegacyInput(t *testing.T) {
	t.Parallel()
	cl, p := rawServerPeer(t, WithElicitationHandler(func(ctx context.Context, ep *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: "accept", Content: map[string]any{"ok": ep.Message == "proceed?"}}, nil
	}), WithTaskPolling(time.Millisecond, time.Millisecond))
	done := make(chan error, 1)
	go func() {
		res, err := cl.CallTool(context.Background(), "confirm", nil, WithTask(0))
		if err == nil && res.Content[0].Text != "confirmed" {
			err = fmt.Errorf("result %+v", res)
		}
		done <- err
	}()
	call := p.recv()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"task":{%s}}}`, field(t, call, "id"), scriptedTask(false, TaskWorking, "", 0)))
	get := p.recv()
	if field(t, get, "method") != "tasks/get" {
		t.Fatalf("got %s", get)
	}
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{%s}}`, field(t, get, "id"), scriptedTask(false, TaskInputRequired, "", 0)))
	result := p.recv()
	if field(t, result, "method") != "tasks/result" || field(t, result, "params.taskId") != "t-1" {
		t.Fatalf("got %s", result)
	}
	p.send(`{"jsonrpc":"2.0","id":"ask-1","method":"elicitation/create","params":{"message":"proceed?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}}`)
	p.expect(`{"jsonrpc":"2.0","id":"ask-1","result":{"action":"accept","content":{"ok":true}}}`)
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"content":[{"type":"text","text":"confirmed"}]}}`, field(t, result, "id")))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCallToolTaskIdle: a server that stops answering polls ends the wait
// at the idle bound with a RequestTimeoutError, and the task is cancelled.
func TestCallToolTaskIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cl, p := rawServerPeer(t, WithRequestTimeout(10*time.Second), WithTaskPolling(time.Second, 0))
		done := make(chan error, 1)
		go func() {
			_, err := cl.CallTool(context.Background(), "slow", nil, WithTask(0))
			done <- err
		}()
		call := p.recv()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"task":{%s}}}`, field(t, call, "id"), scriptedTask(false, TaskWorking, "", 0)))
		start := time.Now()
		get := p.recv() // never answered
		if field(t, get, "method") != "tasks/get" {
			t.Fatalf("got %s", get)
		}
		if n := p.recv(); field(t, n, "method") != "notifications/cancelled" || field(t, n, "params.requestId") != field(t, get, "id") {
			t.Fatalf("got %s, want the poll abandoned", n)
		}
		cancel := p.recv()
		if field(t, cancel, "method") != "tasks/cancel" || field(t, cancel, "params.taskId") != "t-1" {
			t.Fatalf("got %s", cancel)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{%s}}`, field(t, cancel, "id"), scriptedTask(false, TaskCancelled, "", 0)))
		err := <-done
		var timeout *RequestTimeoutError
		if !errors.As(err, &timeout) || timeout.Bound != BoundIdle || timeout.Timeout != 10*time.Second {
			t.Fatalf("%v", err)
		}
		if waited := time.Since(start); waited != 10*time.Second {
			t.Errorf("gave up after %v, want the idle bound since the server's last answer", waited)
		}
	})
}

// TestOverdue: a bound whose timer tick was taken elsewhere is still
// found elapsed, and one not yet elapsed is not.
func TestOverdue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var armed deadlines
		d := armDeadline(time.Second, 2*time.Second, &armed)
		defer d.release()
		if _, _, ok := overdue(d); ok {
			t.Fatal("overdue at once")
		}
		<-d.C() // the tick a racing answer takes
		time.Sleep(time.Second)
		d.extend()
		if bound, elapsed, ok := overdue(d); !ok || bound != BoundCeiling || elapsed != 2*time.Second {
			t.Fatalf("%s %v %v", bound, elapsed, ok)
		}
		if _, _, ok := overdue(nil); ok {
			t.Fatal("a call without bounds is overdue")
		}
	})
}
