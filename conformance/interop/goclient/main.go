// Command goclient drives a TypeScript SDK server (conformance/interop/ts-server.mjs)
// with this module's client, for conformance/interop.sh.
//
//	goclient -stdio node ts-server.mjs --stdio
//	goclient -http http://127.0.0.1:PORT/mcp
//
// It prints "PLAN name ...", then "PASS name" or "FAIL name: what differed"
// per check, and exits 0 even when checks fail (interop.sh counts them).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/e6ac58cb/mcp"
)

const checkTimeout = 10 * time.Second

var checks = []string{
	"initialize", "tools-list", "tools-call-echo", "progress", "cancel",
	"elicitation-accept", "elicitation-decline", "sampling", "roots", "logging",
	"resources-list", "resources-read", "resource-templates", "prompts-list", "prompts-get",
}

const form = `{"type":"object","properties":{
	"name":{"type":"string","description":"Your name"},
	"count":{"type":"integer","minimum":0,"maximum":100},
	"ok":{"type":"boolean"}},"required":["name"]}`

var root = mcp.Root{URI: "file:///tmp/go-interop", Name: "go-interop"}

// seen is what the TS server asked of us and told us.
type seen struct {
	mu       sync.Mutex
	elicit   []*mcp.ElicitParams
	sampling []*mcp.CreateMessageParams
	logs     []*mcp.LoggingMessageParams
}

func (s *seen) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.elicit, s.sampling, s.logs = nil, nil, nil
}

func main() {
	stdio := flag.Bool("stdio", false, "start the server given by the remaining arguments and speak over its stdio")
	url := flag.String("http", "", "connect over Streamable HTTP to `url`")
	flag.Parse()
	if *stdio == (*url != "") || (*stdio && flag.NArg() == 0) {
		fmt.Fprintln(os.Stderr, "usage: goclient -stdio command [args...] | goclient -http url")
		os.Exit(2)
	}
	fmt.Println("PLAN " + strings.Join(checks, " "))

	s := &seen{}
	client := mcp.NewClient(mcp.Implementation{Name: "go-interop-client", Version: "1.0.0"},
		mcp.WithRequestTimeout(checkTimeout),
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			s.mu.Lock()
			s.elicit = append(s.elicit, p)
			s.mu.Unlock()
			if strings.Contains(p.Message, "decline") {
				return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
			}
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada", "count": 7, "ok": true}}, nil
		}),
		mcp.WithSamplingHandler(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			s.mu.Lock()
			s.sampling = append(s.sampling, p)
			s.mu.Unlock()
			prompt := ""
			if len(p.Messages) > 0 && len(p.Messages[0].Content) > 0 {
				prompt = p.Messages[0].Content[0].Text
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "go-model", StopReason: "endTurn",
				Content: mcp.SamplingContent{mcp.TextContent("echo: " + prompt)}}, nil
		}),
		mcp.WithRoots(root),
		mcp.WithLoggingMessageHandler(func(ctx context.Context, m *mcp.LoggingMessageParams) {
			s.mu.Lock()
			s.logs = append(s.logs, m)
			s.mu.Unlock()
		}))

	var transport mcp.Transport
	if *stdio {
		cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
		cmd.Stderr = os.Stderr
		transport = mcp.NewCommandTransport(cmd)
	} else {
		transport = mcp.NewHTTPTransport(*url)
	}

	connected := run("initialize", func(ctx context.Context) error {
		start := time.Now()
		if err := client.Connect(ctx, transport); err != nil {
			return err
		}
		// Our client tries 2026-07-28's server/discover first; a server
		// that does not know it must answer at once, not let it time out.
		if d := time.Since(start); d >= mcp.DefaultDiscoverTimeout {
			return fmt.Errorf("connect took %v, the server/discover timeout", d.Round(time.Millisecond))
		}
		caps := client.ServerCapabilities()
		return errors.Join(
			equal("protocol version", client.ProtocolVersion(), mcp.Version20251125),
			equal("server name", client.ServerInfo().Name, "ts-interop-server"),
			equal("capabilities tools/resources/prompts/logging",
				[]bool{caps.Tools != nil, caps.Resources != nil, caps.Prompts != nil, caps.Logging != nil},
				[]bool{true, true, true, true}))
	})
	if !connected {
		for _, name := range checks[1:] {
			fmt.Printf("FAIL %s: not run: initialize failed\n", name)
		}
		client.Close()
		return
	}
	defer client.Close()

	run("tools-list", func(ctx context.Context) error {
		var names []string
		var echo *mcp.Tool
		for tool, err := range client.Tools(ctx) {
			if err != nil {
				return err
			}
			names = append(names, tool.Name)
			if tool.Name == "echo" {
				echo = tool
			}
		}
		if err := equal("names", names, []string{"echo", "progress", "slow", "slow_stats", "ask_elicitation", "ask_sampling", "ask_roots", "log"}); err != nil {
			return err
		}
		var schema struct {
			Type       string                       `json:"type"`
			Properties map[string]map[string]string `json:"properties"`
			Required   []string                     `json:"required"`
		}
		if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
			return fmt.Errorf("echo input schema %s: %v", echo.InputSchema, err)
		}
		return errors.Join(
			equal("echo schema type", schema.Type, "object"),
			equal("echo text type", schema.Properties["text"]["type"], "string"),
			equal("echo required", schema.Required, []string{"text"}))
	})

	run("tools-call-echo", func(ctx context.Context) error {
		const text = "héllo, wörld ✓ \"quoted\"\n"
		res, err := client.CallTool(ctx, "echo", map[string]any{"text": text})
		if err != nil {
			return err
		}
		return equalJSON("result", res, `{"content":[{"type":"text","text":"héllo, wörld ✓ \"quoted\"\n"}]}`)
	})

	run("progress", func(ctx context.Context) error {
		var got []mcp.Progress
		res, err := client.CallTool(ctx, "progress", map[string]any{"steps": 3, "delayMs": 10},
			mcp.WithProgress(func(p mcp.Progress) { got = append(got, p) }))
		if err != nil {
			return err
		}
		return errors.Join(
			equal("progress", got, []mcp.Progress{{Progress: 1, Total: 3, Message: "step 1 of 3"},
				{Progress: 2, Total: 3, Message: "step 2 of 3"}, {Progress: 3, Total: 3, Message: "step 3 of 3"}}),
			equalJSON("result", res, `{"content":[{"type":"text","text":"completed 3 steps"}]}`))
	})

	run("cancel", func(ctx context.Context) error {
		base, err := slowStats(ctx, client)
		if err != nil {
			return err
		}
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		var once sync.Once
		var cancelledAt time.Time
		res, err := client.CallTool(callCtx, "slow", map[string]any{"ms": 30000},
			mcp.WithProgress(func(p mcp.Progress) {
				if p.Message == "started" {
					once.Do(func() { cancelledAt = time.Now(); cancel() })
				}
			}))
		if err == nil {
			return fmt.Errorf("cancelled call returned %s", show(res))
		}
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("cancelled call: got error %v, want context.Canceled", err)
		}
		if cancelledAt.IsZero() {
			return errors.New("the slow call never reported that it started")
		}
		if d := time.Since(cancelledAt); d > time.Second {
			return fmt.Errorf("CallTool returned %v after the cancel", d.Round(time.Millisecond))
		}
		// The server aborts on notifications/cancelled; give it a moment.
		var now stats
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if now, err = slowStats(ctx, client); err != nil || now.Aborted > base.Aborted {
				break
			}
		}
		if err != nil {
			return err
		}
		return equal("slow_stats change (started, completed, aborted)",
			[]int{now.Started - base.Started, now.Completed - base.Completed, now.Aborted - base.Aborted}, []int{1, 0, 1})
	})

	run("elicitation-accept", func(ctx context.Context) error {
		s.reset()
		res, err := callOK(ctx, client, "ask_elicitation", map[string]any{"message": "Tell us about you"})
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := equal("asks seen", len(s.elicit), 1); err != nil {
			return err
		}
		return errors.Join(
			equalJSON("structuredContent", res.StructuredContent, `{"action":"accept","content":{"name":"Ada","count":7,"ok":true}}`),
			equal("message", s.elicit[0].Message, "Tell us about you"),
			equalJSON("requestedSchema", s.elicit[0].RequestedSchema, form))
	})

	run("elicitation-decline", func(ctx context.Context) error {
		s.reset()
		res, err := callOK(ctx, client, "ask_elicitation", map[string]any{"message": "Please decline this"})
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return errors.Join(
			equalJSON("structuredContent", res.StructuredContent, `{"action":"decline"}`),
			equal("asks seen", len(s.elicit), 1))
	})

	run("sampling", func(ctx context.Context) error {
		s.reset()
		res, err := callOK(ctx, client, "ask_sampling", map[string]any{"prompt": "What is 2+2?"})
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := equal("asks seen", len(s.sampling), 1); err != nil {
			return err
		}
		p := s.sampling[0]
		return errors.Join(
			equalJSON("structuredContent", res.StructuredContent, `{"model":"go-model","role":"assistant","text":"echo: What is 2+2?","stopReason":"endTurn"}`),
			equalJSON("messages", p.Messages, `[{"role":"user","content":{"type":"text","text":"What is 2+2?"}}]`),
			equal("systemPrompt", p.SystemPrompt, "Answer in one word."),
			equal("maxTokens", p.MaxTokens, 64))
	})

	run("roots", func(ctx context.Context) error {
		res, err := callOK(ctx, client, "ask_roots", nil)
		if err != nil {
			return err
		}
		return equalJSON("structuredContent", res.StructuredContent, `{"roots":[{"uri":"file:///tmp/go-interop","name":"go-interop"}]}`)
	})

	run("logging", func(ctx context.Context) error {
		s.reset()
		if err := client.SetLoggingLevel(ctx, mcp.LevelWarning); err != nil {
			return err
		}
		res, err := callOK(ctx, client, "log", map[string]any{"levels": []string{"debug", "info", "warning", "error"}})
		if err != nil {
			return err
		}
		if err := equalJSON("result", res, `{"content":[{"type":"text","text":"offered 4"}]}`); err != nil {
			return err
		}
		// The TS server sends log messages on no request's stream (on HTTP,
		// the GET stream), so they may come after the response.
		count := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.logs) }
		for deadline := time.Now().Add(3 * time.Second); count() < 2 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // and nothing more
		s.mu.Lock()
		defer s.mu.Unlock()
		return equalJSON("notifications/message", s.logs,
			`[{"level":"warning","logger":"ts-interop","data":"message at warning"},{"level":"error","logger":"ts-interop","data":"message at error"}]`)
	})

	run("resources-list", func(ctx context.Context) error {
		res, err := client.ListResources(ctx, "")
		if err != nil {
			return err
		}
		return equalJSON("resources", res.Resources, `[
			{"uri":"ts://static/greeting","name":"greeting","description":"A static greeting.","mimeType":"text/plain"},
			{"uri":"ts://static/bytes","name":"bytes","description":"Six bytes.","mimeType":"application/octet-stream"}]`)
	})

	run("resources-read", func(ctx context.Context) error {
		text, err := client.ReadResource(ctx, "ts://static/greeting")
		if err != nil {
			return err
		}
		if err := equalJSON("greeting", text.Contents, `[{"uri":"ts://static/greeting","mimeType":"text/plain","text":"Hello from the TypeScript server."}]`); err != nil {
			return err
		}
		bin, err := client.ReadResource(ctx, "ts://static/bytes")
		if err != nil {
			return err
		}
		if err := equal("bytes: contents", len(bin.Contents), 1); err != nil {
			return err
		}
		c := bin.Contents[0]
		data, err := base64.StdEncoding.DecodeString(c.Blob)
		return errors.Join(err,
			equal("bytes: uri, mimeType, text", []string{c.URI, c.MIMEType, c.Text}, []string{"ts://static/bytes", "application/octet-stream", ""}),
			equal("bytes: blob", data, []byte{0, 1, 2, 253, 254, 255}))
	})

	run("resource-templates", func(ctx context.Context) error {
		res, err := client.ListResourceTemplates(ctx, "")
		if err != nil {
			return err
		}
		if err := equalJSON("templates", res.ResourceTemplates,
			`[{"uriTemplate":"ts://items/{id}","name":"item","description":"An item by id.","mimeType":"application/json"}]`); err != nil {
			return err
		}
		read, err := client.ReadResource(ctx, "ts://items/42")
		if err != nil {
			return err
		}
		return equalJSON("ts://items/42", read.Contents, `[{"uri":"ts://items/42","mimeType":"application/json","text":"{\"id\":\"42\",\"kind\":\"item\"}"}]`)
	})

	run("prompts-list", func(ctx context.Context) error {
		res, err := client.ListPrompts(ctx, "")
		if err != nil {
			return err
		}
		return equalJSON("prompts", res.Prompts, `[
			{"name":"greet","description":"Greets someone.","arguments":[{"name":"name","description":"Who to greet","required":true}]},
			{"name":"plain","description":"A prompt without arguments."}]`)
	})

	run("prompts-get", func(ctx context.Context) error {
		greet, err := client.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
		if err != nil {
			return err
		}
		plain, err := client.GetPrompt(ctx, "plain", nil)
		if err != nil {
			return err
		}
		return errors.Join(
			equalJSON("greet", greet.Messages, `[{"role":"user","content":{"type":"text","text":"Please greet Ada warmly."}}]`),
			equalJSON("plain", plain.Messages, `[{"role":"assistant","content":{"type":"text","text":"A prompt without arguments."}}]`))
	})
}

// run runs one check bounded by checkTimeout and prints its line.
func run(name string, fn func(ctx context.Context) error) bool {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	err := fn(ctx)
	if err == nil {
		fmt.Printf("PASS %s\n", name)
		return true
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	fmt.Printf("FAIL %s: %s\n", name, msg)
	return false
}

type stats struct {
	Started, Completed, Aborted int
}

func slowStats(ctx context.Context, c *mcp.Client) (stats, error) {
	res, err := callOK(ctx, c, "slow_stats", nil)
	if err != nil {
		return stats{}, err
	}
	var st stats
	if err := json.Unmarshal(res.StructuredContent, &st); err != nil {
		return stats{}, fmt.Errorf("slow_stats: %s: %v", res.StructuredContent, err)
	}
	return st, nil
}

// callOK calls a tool and turns a tool error into an error.
func callOK(ctx context.Context, c *mcp.Client, name string, args any) (*mcp.CallToolResult, error) {
	res, err := c.CallTool(ctx, name, args)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			texts = append(texts, c.Text)
		}
		return nil, fmt.Errorf("tool error: %s", strings.Join(texts, " "))
	}
	return res, nil
}

func equal(label string, got, want any) error {
	if reflect.DeepEqual(got, want) {
		return nil
	}
	return fmt.Errorf("%s: got %s, want %s", label, show(got), show(want))
}

// equalJSON compares got, as JSON, with the JSON text want.
func equalJSON(label string, got any, want string) error {
	var g, w any
	raw, err := json.Marshal(got)
	if err != nil {
		return fmt.Errorf("%s: %v", label, err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("%s: %s: %v", label, raw, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		panic(fmt.Sprintf("%s: bad want: %v", label, err))
	}
	if reflect.DeepEqual(g, w) {
		return nil
	}
	var compact bytes.Buffer
	json.Compact(&compact, []byte(want))
	return fmt.Errorf("%s: got %s, want %s", label, raw, compact.String())
}

func show(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
