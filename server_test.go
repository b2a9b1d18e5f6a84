package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHasUserMeta(t *testing.T) {
	for raw, want := range map[string]bool{
		``: false, `null`: false, `{}`: false,
		`{"progressToken":1}`: false,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":{"b":[1,"}"]}},"progressToken":"x"}`: false,
		`{"progressToken":1,"com.example/trace":"t"}`: true,
		` { "x" : 1 } `: true,
	} {
		if got := hasUserMeta([]byte(raw)); got != want {
			t.Errorf("hasUserMeta(%s) = %v", raw, got)
		}
	}
}

// TestFeaturesOverAChildProcess runs the read-only feature methods against
// featureServer in a real child process on stdio, on both eras.
func TestFeaturesOverAChildProcess(t *testing.T) {
	t.Parallel()
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "MCP_TEST_SERVE=", "MCP_TEST_SERVE_FEATURES=1")
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
			if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			var tools []string
			for tool, err := range cl.Tools(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				tools = append(tools, tool.Name)
			}
			if strings.Join(tools, ",") != "add,fail,rich,log,slog" {
				t.Fatalf("tools %v", tools)
			}
			res, err := cl.CallTool(ctx, "add", map[string]int{"a": 2, "b": 3})
			if err != nil || !strings.Contains(string(res.StructuredContent), `"sum":5`) {
				t.Fatalf("add: %v %+v", err, res)
			}
			if res, err := cl.CallTool(ctx, "add", map[string]any{"a": "two"}); err != nil || !res.IsError {
				t.Fatalf("invalid arguments: %v %+v", err, res)
			}
			read, err := cl.ReadResource(ctx, "test://items/42")
			if err != nil || read.Contents[0].Text != "item 42" {
				t.Fatalf("read: %v %+v", err, read)
			}
			_, err = cl.ReadResource(ctx, "test://items/missing")
			want := CodeResourceNotFound
			if isModernVersion(v) {
				want = CodeInvalidParams
			}
			if rpcCode(err) != want {
				t.Fatalf("missing resource: %v", err)
			}
			prompt, err := cl.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
			if err != nil || prompt.Messages[0].Content.Text != "Hello, Ada" {
				t.Fatalf("prompt: %v %+v", err, prompt)
			}
			var templates int
			for _, err := range cl.ResourceTemplates(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				templates++
			}
			if templates != 1 {
				t.Fatalf("%d templates", templates)
			}
		})
	}
}

// TestDecodeRequestEnvelope: the scan of a request's _meta reads what the
// server needs and refuses wrong types, as a decode into requestEnvelope
// would.
func TestDecodeRequestEnvelope(t *testing.T) {
	cases := []struct {
		params               string
		version, level, caps string
		token                string
		err                  bool
	}{
		{params: `{"name":"x"}`},
		{params: `{"_meta":null}`},
		{params: `{"_meta":{}}`},
		{params: `{"_meta":{"progressToken":7}}`, token: `7`},
		{params: `{"a":{"_meta":{"progressToken":7}},"_meta":{"progressToken":"t"}}`, token: `"t"`},
		{params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/logLevel":"info"}}`, version: "2026-07-28", caps: `{"roots":{}}`, level: "info"},
		{params: `{"_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2026-07-28"}}`, version: "2026-07-28"},
		{params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}`, version: "2026-07-28"},
		{params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`},
		{params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}`, err: true},
		{params: `{"_meta":{"io.modelcontextprotocol/logLevel":{}}}`, err: true},
		{params: `{"_meta":[]}`, err: true},
		{params: `{"_meta":"x"}`, err: true},
	}
	for _, tc := range cases {
		var env requestEnvelope
		err := decodeRequestEnvelope([]byte(tc.params), &env)
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.params, err, tc.err)
			continue
		}
		m := env.Meta
		version := ""
		if m.ProtocolVersion != nil {
			version = *m.ProtocolVersion
		}
		if err == nil && (version != tc.version || m.LogLevel != tc.level || string(m.ClientCapabilities) != tc.caps || string(m.ProgressToken) != tc.token) {
			t.Errorf("%s: got version %q level %q caps %s token %s", tc.params, version, m.LogLevel, m.ClientCapabilities, m.ProgressToken)
		}
	}
}

// TestPipelinedStartUp writes initialize, notifications/initialized and
// tools/list in one write to a child process, as a shell pipe or an eager
// client does, and expects initialize's answer first and the tools next,
// every time (MCP_PIPELINE_RUNS times, 1000 unless set). The lifecycle takes
// effect in the order the messages were sent: the request after
// initialize is never refused as "not initialized". Every other run closes
// the child's input right after the write, as a shell pipe does: what was
// sent before the end of input is still answered, and the child exits 0.
func TestPipelinedStartUp(t *testing.T) {
	t.Parallel()
	runs := 1000
	if n, err := strconv.Atoi(os.Getenv("MCP_PIPELINE_RUNS")); err == nil && n > 0 {
		runs = n
	}
	const start = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	run := func(closeAtOnce bool) error {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		// The race detector otherwise waits a second at every exit.
		cmd.Env = append(os.Environ(), "MCP_TEST_SERVE=", "GORACE=atexit_sleep_ms=0")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer cmd.Process.Kill()
		if _, err := io.WriteString(stdin, start); err != nil {
			return err
		}
		if closeAtOnce {
			stdin.Close()
		}
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 1<<20)
		var got []string
		for len(got) < 2 && lines.Scan() {
			got = append(got, lines.Text())
		}
		if len(got) < 2 {
			return fmt.Errorf("answers %q, then the output ended (input closed at once: %v): %v", got, closeAtOnce, lines.Err())
		}
		var first, second struct {
			ID     int `json:"id"`
			Result *struct {
				ProtocolVersion string            `json:"protocolVersion"`
				Tools           []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(got[0]), &first) != nil || first.ID != 1 || first.Result == nil || first.Result.ProtocolVersion != Version20251125 {
			return fmt.Errorf("first answer %s, want initialize's result", got[0])
		}
		if json.Unmarshal([]byte(got[1]), &second) != nil || second.ID != 2 || second.Result == nil || len(second.Result.Tools) == 0 {
			return fmt.Errorf("second answer %s, want tools/list's result", got[1])
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("the server exited with %v after a clean end of input", err)
		}
		return nil
	}
	// A few children at a time: each run is a whole process start.
	const parallel = 4
	errs := make(chan error, runs)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range runs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := run(i%2 == 0); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d pipelined start-ups went wrong", failed, runs)
	}
}

// TestModernAnswer: a 2026-07-28 result gets resultType, serverInfo and,
// when it may be cached, the caching hint, in front of its own members,
// whether the answer writes it into the response or middleware has it
// encoded; a result that has a _meta or a resultType of its own keeps them.
func TestModernAnswer(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithCacheHints(2*time.Second, CacheScopePublic))
	info := `"_meta":{"` + metaServerInfo + `":` + string(srv.infoJSON()) + `}`
	hint := srv.cacheHintMembers()
	cases := []struct {
		result any
		cache  bool
		want   string
	}{
		{nil, false, `{"resultType":"complete",` + info + `}`},
		{json.RawMessage(nil), false, `{"resultType":"complete",` + info + `}`},
		{json.RawMessage(` { } `), false, `{"resultType":"complete",` + info + ` }`},
		{json.RawMessage(`{"a":1}`), false, `{"resultType":"complete",` + info + `,"a":1}`},
		{json.RawMessage("\n{ \"a\" : [1] }\n"), false, `{"resultType":"complete",` + info + `, "a" : [1] }`},
		{json.RawMessage(`{"a":1}`), true, `{"resultType":"complete",` + hint + `,` + info + `,"a":1}`},
		{&CallToolResult{Content: []Content{TextContent("<hi>")}}, false, `{"resultType":"complete",` + info + `,"content":[{"type":"text","text":"\u003chi\u003e"}]}`},
		{json.RawMessage(`{"resultType":"input_required","a":1}`), false, `{` + info + `,"resultType":"input_required","a":1}`},
		{json.RawMessage(`{"_meta":{"x":1},"a":1}`), false, `{"resultType":"complete","_meta":{"` + metaServerInfo + `":` + string(srv.infoJSON()) + `,"x":1},"a":1}`},
	}
	for _, c := range cases {
		a := &modernAnswer{srv: srv, result: c.result, cache: c.cache}
		msg, err := encodeAppendedResult(Int64ID(7), a)
		if err != nil {
			t.Fatalf("%v: %v", c.result, err)
		}
		if want := `{"jsonrpc":"2.0","id":7,"result":` + c.want + `}`; string(msg) != want {
			t.Errorf("%s:\n got %s\nwant %s", c.result, msg, want)
		}
		if !json.Valid(msg) {
			t.Errorf("%s: invalid JSON %s", c.result, msg)
		}
		if raw, err := marshalResult(a); err != nil || !jsonEqual(string(raw), c.want) {
			t.Errorf("%s: marshalled %s, %v", c.result, raw, err)
		}
	}
	if _, err := encodeAppendedResult(Int64ID(7), &modernAnswer{srv: srv, result: make(chan int)}); err == nil {
		t.Error("an unencodable result was encoded")
	}
}
