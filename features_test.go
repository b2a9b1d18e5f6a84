package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The eras and carriers every feature is tested on.
var (
	featureVersions = []string{Version20251125, Version20260728}
	featureCarriers = []string{"memory", "stdio", "http"}
)

type addArgs struct {
	A int `json:"a" description:"The first addend."`
	B int `json:"b" schema:"default=10"`
}

type addResult struct {
	Sum int `json:"sum"`
	// Tags and Note are left nil: the result must still satisfy the
	// inferred schema.
	Tags []string `json:"tags"`
	Note *string  `json:"note"`
}

type failArgs struct {
	Mode string `json:"mode" schema:"enum=plain|protocol"`
}

// featureServer returns a server with one of every feature, for the tests
// that talk to it from a client.
func featureServer(opts ...ServerOption) *Server {
	opts = append([]ServerOption{WithCompletionHandler(completeFeature)}, opts...)
	s := NewServer(Implementation{Name: "feature-server", Version: "1.0.0"}, opts...)
	AddTool(s, Tool{Name: "add", Description: "Adds two numbers."}, func(ctx context.Context, req *CallToolRequest, in addArgs) (addResult, error) {
		return addResult{Sum: in.A + in.B}, nil
	})
	AddTool(s, Tool{Name: "fail"}, func(ctx context.Context, req *CallToolRequest, in failArgs) (struct{}, error) {
		if in.Mode == "protocol" {
			return struct{}{}, NewError(CodeInvalidParams, "refused on purpose", nil)
		}
		return struct{}{}, errors.New("it broke")
	})
	AddTool(s, Tool{Name: "rich"}, func(ctx context.Context, req *CallToolRequest, in struct{}) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{
			ImageContent("iVBORw0KGgo=", "image/png"),
			AudioContent("UklGRg==", "audio/wav"),
			ResourceLinkContent("test://static-text", "static", "text/plain"),
			EmbeddedResourceContent(ResourceContents{URI: "test://embedded", MIMEType: "text/plain", Text: "inside"}),
		}}, nil
	})
	AddTool(s, Tool{Name: "log"}, func(ctx context.Context, req *CallToolRequest, in struct{}) (*CallToolResult, error) {
		g := req.Gateway()
		for _, level := range []LoggingLevel{LevelDebug, LevelInfo, LevelWarning, LevelError} {
			if err := g.Log(level, "test", string(level)); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{}, g.Notify("test/marker", nil)
	})
	AddTool(s, Tool{Name: "slog"}, func(ctx context.Context, req *CallToolRequest, in struct{}) (*CallToolResult, error) {
		logger := slog.New(NewLoggingHandler(req.Gateway(), &LoggingHandlerOptions{Logger: "app"}))
		logger.With("request", 7).WithGroup("db").Info("query done", "rows", 3, slog.Group("timing", "took", time.Second))
		logger.Debug("too chatty")
		return &CallToolResult{}, req.Gateway().Notify("test/marker", nil)
	})
	s.AddResource(Resource{URI: "test://static-text", Name: "static-text", MIMEType: "text/plain"},
		func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{MIMEType: "text/plain", Text: "static text"}}}, nil
		})
	s.AddResource(Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png"},
		func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: "iVBORw0KGgo="}}}, nil
		})
	s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
			if req.Vars["id"] == "missing" {
				return nil, fmt.Errorf("item %s: %w", req.Vars["id"], ErrResourceNotFound)
			}
			return &ReadResourceResult{Contents: []ResourceContents{{Text: "item " + req.Vars["id"]}}}, nil
		})
	s.AddPrompt(Prompt{Name: "simple", Description: "A prompt without arguments."},
		func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("Say something.")}}}, nil
		})
	s.AddPrompt(Prompt{Name: "greet", Arguments: []PromptArgument{{Name: "name", Required: true}, {Name: "style"}}},
		func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error) {
			text := "Hello, " + req.Params.Arguments["name"]
			if style := req.Params.Arguments["style"]; style != "" {
				text += " (" + style + ")"
			}
			return &GetPromptResult{Messages: []PromptMessage{
				{Role: "user", Content: TextContent(text)},
				{Role: "assistant", Content: ImageContent("iVBORw0KGgo=", "image/png")},
			}}, nil
		})
	return s
}

// completeFeature completes the greet prompt's name, and the item
// template's id with 150 candidates.
func completeFeature(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	var candidates []string
	switch req.Params.Ref.Type {
	case "ref/prompt":
		candidates = []string{"alice", "albert", "bob"}
		if req.Params.Context != nil && req.Params.Context.Arguments["style"] == "formal" {
			candidates = []string{"Alice", "Albert"}
		}
	case "ref/resource":
		for i := range 150 {
			candidates = append(candidates, fmt.Sprint(i))
		}
	}
	var values []string
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), strings.ToLower(req.Params.Argument.Value)) {
			values = append(values, c)
		}
	}
	return &CompleteResult{Completion: Completion{Values: values}}, nil
}

// pipeTransports returns two connected Transports over operating-system
// pipes with the stdio framing: what a client and a server it spawned see.
func pipeTransports(t testing.TB) (clientSide, serverSide Transport) {
	t.Helper()
	cr, sw := osPipe(t)
	sr, cw := osPipe(t)
	return NewIOTransport(cr, cw), NewIOTransport(sr, sw)
}

// osPipe returns the two ends of an operating-system pipe.
func osPipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// connectOver serves srv over the carrier ("memory" or "stdio") and
// connects a client pinned to version.
func connectOver(t testing.TB, srv *Server, carrier, version string, clientOpts ...ClientOption) *Client {
	t.Helper()
	var ct, st Transport
	switch carrier {
	case "memory":
		ct, st = NewInMemoryTransports()
	case "stdio":
		ct, st = pipeTransports(t)
	case "http":
		return connectHTTP(t, srv, append([]ClientOption{WithProtocolVersion(version)}, clientOpts...)...)
	default:
		t.Fatalf("unknown carrier %q", carrier)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	opts := append([]ClientOption{WithProtocolVersion(version)}, clientOpts...)
	cl := NewClient(Implementation{Name: "feature-client", Version: "1.0.0"}, opts...)
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		cl.Close()
		// A server still writing when the pipe closes may see EPIPE.
		if err := <-served; err != nil && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Serve: %v", err)
		}
	})
	return cl
}

// eachEra runs fn on every feature version and carrier, in parallel.
func eachEra(t *testing.T, fn func(t *testing.T, version, carrier string)) {
	for _, v := range featureVersions {
		for _, carrier := range featureCarriers {
			t.Run(v+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				fn(t, v, carrier)
			})
		}
	}
}

// rpcCode returns the JSON-RPC error code in err, or 0.
func rpcCode(err error) int {
	var rpcErr *Error
	if errors.As(err, &rpcErr) {
		return rpcErr.Code
	}
	return 0
}

func TestTypedTools(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		cl := connectOver(t, featureServer(), carrier, version)
		ctx := context.Background()
		tests := []struct {
			name, tool string
			args       any
			wantError  bool   // isError
			wantText   string // a substring of the first text block
			wantStruct string // the structured content, exactly
			wantCode   int    // a protocol error
		}{
			{name: "defaults applied, nils conformed", tool: "add", args: map[string]any{"a": 2}, wantText: `{"sum":12,"tags":[]}`, wantStruct: `{"sum":12,"tags":[]}`},
			{name: "both arguments", tool: "add", args: map[string]any{"a": 2, "b": 3}, wantStruct: `{"sum":5,"tags":[]}`},
			{name: "wrong type", tool: "add", args: map[string]any{"a": "two"}, wantError: true, wantText: "invalid arguments: /a: got string, want integer"},
			{name: "missing required", tool: "add", args: map[string]any{"b": 1}, wantError: true, wantText: "/a: required property missing"},
			{name: "unknown property", tool: "add", args: map[string]any{"a": 1, "c": 1}, wantError: true, wantText: "/c"},
			{name: "no arguments at all", tool: "add", wantError: true, wantText: "required property missing"},
			{name: "enum violated", tool: "fail", args: map[string]any{"mode": "loud"}, wantError: true, wantText: "/mode"},
			{name: "plain error", tool: "fail", args: map[string]any{"mode": "plain"}, wantError: true, wantText: "it broke"},
			{name: "protocol error", tool: "fail", args: map[string]any{"mode": "protocol"}, wantCode: CodeInvalidParams},
			{name: "unknown tool", tool: "nope", wantCode: CodeInvalidParams},
		}
		for _, tt := range tests {
			res, err := cl.CallTool(ctx, tt.tool, tt.args)
			if tt.wantCode != 0 {
				if rpcCode(err) != tt.wantCode {
					t.Errorf("%s: got %v, %v; want error code %d", tt.name, res, err, tt.wantCode)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			if res.IsError != tt.wantError {
				t.Errorf("%s: isError %v, want %v (%+v)", tt.name, res.IsError, tt.wantError, res.Content)
			}
			if len(res.Content) == 0 || res.Content[0].Type != "text" || !strings.Contains(res.Content[0].Text, tt.wantText) {
				t.Errorf("%s: content %+v, want text containing %q", tt.name, res.Content, tt.wantText)
			}
			if tt.wantStruct != "" && string(res.StructuredContent) != tt.wantStruct {
				t.Errorf("%s: structured %s, want %s", tt.name, res.StructuredContent, tt.wantStruct)
			}
			if tt.wantStruct != "" && res.Content[0].Text != string(res.StructuredContent) {
				t.Errorf("%s: text copy %q differs from the structured content %s", tt.name, res.Content[0].Text, res.StructuredContent)
			}
		}

		res, err := cl.CallTool(ctx, "rich", nil)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, c := range res.Content {
			types = append(types, c.Type)
		}
		if got := strings.Join(types, ","); got != "image,audio,resource_link,resource" || res.Content[3].Resource.Text != "inside" {
			t.Errorf("rich content: %+v", res.Content)
		}
		if res.StructuredContent != nil {
			t.Errorf("a *CallToolResult output got structured content %s", res.StructuredContent)
		}

		tools, err := cl.ListTools(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tools.Tools, func(tool *Tool) bool { return tool.Name == "add" })
		add := tools.Tools[i]
		wantIn := `{"type":"object","properties":{"a":{"type":"integer","description":"The first addend."},"b":{"type":"integer","default":10}},"required":["a"],"additionalProperties":false}`
		wantOut := `{"type":"object","properties":{"sum":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"note":{"type":"string"}},"required":["sum","tags"],"additionalProperties":false}`
		if string(add.InputSchema) != wantIn || string(add.OutputSchema) != wantOut || add.Description != "Adds two numbers." {
			t.Errorf("add tool:\n in  %s\n out %s", add.InputSchema, add.OutputSchema)
		}
	})
}

func TestPrompts(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		cl := connectOver(t, featureServer(), carrier, version)
		ctx := context.Background()
		list, err := cl.ListPrompts(ctx, "")
		if err != nil || len(list.Prompts) != 2 || list.Prompts[1].Name != "greet" || !list.Prompts[1].Arguments[0].Required {
			t.Fatalf("prompts/list: %+v %v", list, err)
		}
		tests := []struct {
			name     string
			args     map[string]string
			wantText string
			wantCode int
		}{
			{name: "simple", wantText: "Say something."},
			{name: "greet", args: map[string]string{"name": "Ada"}, wantText: "Hello, Ada"},
			{name: "greet", args: map[string]string{"name": "Ada", "style": "warm"}, wantText: "Hello, Ada (warm)"},
			{name: "greet", args: map[string]string{"style": "warm"}, wantCode: CodeInvalidParams},
			{name: "greet", wantCode: CodeInvalidParams},
			{name: "nope", wantCode: CodeInvalidParams},
		}
		for _, tt := range tests {
			res, err := cl.GetPrompt(ctx, tt.name, tt.args)
			if tt.wantCode != 0 {
				if rpcCode(err) != tt.wantCode {
					t.Errorf("%s %v: %v, want code %d", tt.name, tt.args, err, tt.wantCode)
				}
				continue
			}
			if err != nil || len(res.Messages) == 0 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != tt.wantText {
				t.Errorf("%s %v: %+v %v", tt.name, tt.args, res, err)
			}
		}
		res, err := cl.GetPrompt(ctx, "greet", map[string]string{"name": "Ada"})
		if err != nil || res.Messages[1].Content.Type != "image" || res.Messages[1].Role != "assistant" {
			t.Errorf("image message: %+v %v", res, err)
		}
	})
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		cl := connectOver(t, featureServer(), carrier, version)
		if cl.ServerCapabilities().Completions == nil {
			t.Error("completions not advertised")
		}
		tests := []struct {
			name        string
			params      CompleteParams
			wantValues  []string
			wantCount   int
			wantHasMore bool
			wantCode    int
		}{
			{name: "prompt argument", params: CompleteParams{Ref: PromptReference("greet"), Argument: CompleteArgument{Name: "name", Value: "al"}},
				wantValues: []string{"alice", "albert"}},
			{name: "with context", params: CompleteParams{Ref: PromptReference("greet"), Argument: CompleteArgument{Name: "name", Value: "al"}, Context: &CompleteContext{Arguments: map[string]string{"style": "formal"}}},
				wantValues: []string{"Alice", "Albert"}},
			{name: "no match", params: CompleteParams{Ref: PromptReference("greet"), Argument: CompleteArgument{Name: "name", Value: "z"}},
				wantValues: []string{}},
			{name: "template variable, capped at 100", params: CompleteParams{Ref: ResourceTemplateReference("test://items/{id}"), Argument: CompleteArgument{Name: "id"}},
				wantCount: 100, wantHasMore: true},
			{name: "unknown prompt", params: CompleteParams{Ref: PromptReference("nope"), Argument: CompleteArgument{Name: "name"}}, wantCode: CodeInvalidParams},
			{name: "undeclared argument", params: CompleteParams{Ref: PromptReference("greet"), Argument: CompleteArgument{Name: "mood"}}, wantCode: CodeInvalidParams},
			{name: "unknown template", params: CompleteParams{Ref: ResourceTemplateReference("test://x/{id}"), Argument: CompleteArgument{Name: "id"}}, wantCode: CodeInvalidParams},
			{name: "unknown variable", params: CompleteParams{Ref: ResourceTemplateReference("test://items/{id}"), Argument: CompleteArgument{Name: "ix"}}, wantCode: CodeInvalidParams},
			{name: "unknown reference type", params: CompleteParams{Ref: CompleteReference{Type: "ref/tool"}}, wantCode: CodeInvalidParams},
		}
		for _, tt := range tests {
			res, err := cl.Complete(context.Background(), &tt.params)
			if tt.wantCode != 0 {
				if rpcCode(err) != tt.wantCode {
					t.Errorf("%s: %v, want code %d", tt.name, err, tt.wantCode)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			c := res.Completion
			if tt.wantValues != nil && !slices.Equal(c.Values, tt.wantValues) {
				t.Errorf("%s: values %q, want %q", tt.name, c.Values, tt.wantValues)
			}
			if tt.wantCount != 0 && (len(c.Values) != tt.wantCount || c.Total != 150) {
				t.Errorf("%s: %d values, total %d", tt.name, len(c.Values), c.Total)
			}
			if c.HasMore != tt.wantHasMore {
				t.Errorf("%s: hasMore %v", tt.name, c.HasMore)
			}
		}
	})
}

func TestCapabilitiesFollowRegistrations(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	tests := []struct {
		name     string
		setup    func(s *Server)
		opts     []ServerOption
		want     string
		notFound []string // methods answered with -32601
	}{
		{name: "nothing", setup: func(*Server) {}, want: `{"logging":{}}`,
			notFound: []string{"tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list", "prompts/list", "prompts/get", "completion/complete", "subscriptions/listen"}},
		{name: "a tool", setup: func(s *Server) { s.AddTool(Tool{Name: "t"}, noop) }, want: `{"logging":{},"tools":{"listChanged":true}}`,
			notFound: []string{"resources/list", "prompts/list", "completion/complete"}},
		{name: "a tool, removed", setup: func(s *Server) { s.AddTool(Tool{Name: "t"}, noop); s.RemoveTools("t") }, want: `{"logging":{},"tools":{"listChanged":true}}`},
		{name: "a template", setup: func(s *Server) { s.AddResourceTemplate(ResourceTemplate{URITemplate: "a://{b}", Name: "a"}, nil) },
			want: `{"logging":{},"resources":{"subscribe":true,"listChanged":true}}`, notFound: []string{"tools/list"}},
		{name: "a prompt and completion", setup: func(s *Server) { s.AddPrompt(Prompt{Name: "p"}, nil) }, opts: []ServerOption{WithCompletionHandler(completeFeature)},
			want: `{"logging":{},"completions":{},"prompts":{"listChanged":true}}`},
		{name: "an extension", setup: func(*Server) {}, opts: []ServerOption{WithExtension("com.example/x", map[string]int{"v": 1})},
			want: `{"logging":{},"extensions":{"com.example/x":{"v":1}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewServer(Implementation{Name: "caps", Version: "1"}, tt.opts...)
			tt.setup(s)
			got, _ := json.Marshal(s.capabilities(LatestVersion))
			if !jsonEqual(string(got), tt.want) {
				t.Errorf("capabilities %s, want %s", got, tt.want)
			}
			p := rawServer(t, s)
			for i, method := range tt.notFound {
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, i, method, modernMeta))
				if msg := p.recv(); field(t, msg, "error.code") != float64(CodeMethodNotFound) {
					t.Errorf("%s: %s", method, msg)
				}
			}
		})
	}
}

func TestCacheHints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      []ServerOption
		wantTTL   float64
		wantScope string
	}{
		{name: "default", wantTTL: 0, wantScope: "private"},
		{name: "set", opts: []ServerOption{WithCacheHints(90*time.Second, CacheScopePublic)}, wantTTL: 90000, wantScope: "public"},
	}
	methods := []struct{ method, params string }{
		{"server/discover", ""}, {"tools/list", ""}, {"resources/list", ""}, {"resources/templates/list", ""},
		{"prompts/list", ""}, {"resources/read", `"uri":"test://static-text",`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := rawServer(t, featureServer(tt.opts...))
			for i, m := range methods {
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, i, m.method, m.params, modernMeta))
				msg := p.recv()
				if field(t, msg, "result.ttlMs") != tt.wantTTL || field(t, msg, "result.cacheScope") != tt.wantScope || field(t, msg, "result.resultType") != "complete" {
					t.Errorf("%s: %s", m.method, msg)
				}
			}
			// Not on results that are not cacheable, nor on the older
			// revisions.
			p.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"add","arguments":{"a":1},` + modernMeta + `}}`)
			if msg := p.recv(); field(t, msg, "result.ttlMs") != nil {
				t.Errorf("tools/call: %s", msg)
			}
			legacy := rawServer(t, featureServer(tt.opts...))
			legacy.initialize(Version20251125)
			legacy.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if msg := legacy.recv(); field(t, msg, "result.ttlMs") != nil || field(t, msg, "result.resultType") != nil {
				t.Errorf("legacy tools/list: %s", msg)
			}
		})
	}
}

func TestListsKeepRegistrationOrder(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "order", Version: "1"})
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	for _, name := range []string{"zeta", "alpha", "mid"} {
		s.AddTool(Tool{Name: name}, noop)
	}
	s.AddTool(Tool{Name: "alpha", Description: "replaced"}, noop)
	cl := pair(t, s)
	for range 3 {
		res, err := cl.ListTools(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if !slices.Equal(names, []string{"zeta", "alpha", "mid"}) || res.Tools[1].Description != "replaced" {
			t.Fatalf("order %q", names)
		}
	}
}

func TestAddToolPanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	tests := []struct {
		name      string
		add       func(s *Server)
		wantPanic bool
	}{
		{"plain name", func(s *Server) { s.AddTool(Tool{Name: "get_weather.v2-beta"}, noop) }, false},
		{"128 characters", func(s *Server) { s.AddTool(Tool{Name: strings.Repeat("a", 128)}, noop) }, false},
		{"empty name", func(s *Server) { s.AddTool(Tool{}, noop) }, true},
		{"129 characters", func(s *Server) { s.AddTool(Tool{Name: strings.Repeat("a", 129)}, noop) }, true},
		{"a space", func(s *Server) { s.AddTool(Tool{Name: "get weather"}, noop) }, true},
		{"a slash", func(s *Server) { s.AddTool(Tool{Name: "a/b"}, noop) }, true},
		{"non-ASCII", func(s *Server) { s.AddTool(Tool{Name: "météo"}, noop) }, true},
		{"typed, bad name", func(s *Server) {
			AddTool(s, Tool{Name: "a b"}, func(context.Context, *CallToolRequest, struct{}) (struct{}, error) { return struct{}{}, nil })
		}, true},
		{"typed, input not an object", func(s *Server) {
			AddTool(s, Tool{Name: "t"}, func(context.Context, *CallToolRequest, []int) (struct{}, error) { return struct{}{}, nil })
		}, true},
		{"typed, input any", func(s *Server) {
			AddTool(s, Tool{Name: "t"}, func(context.Context, *CallToolRequest, any) (struct{}, error) { return struct{}{}, nil })
		}, true},
		{"typed, bad tag", func(s *Server) {
			type bad struct {
				N int `json:"n" schema:"minimum=x"`
			}
			AddTool(s, Tool{Name: "t"}, func(context.Context, *CallToolRequest, bad) (struct{}, error) { return struct{}{}, nil })
		}, true},
		{"typed, output a channel", func(s *Server) {
			AddTool(s, Tool{Name: "t"}, func(context.Context, *CallToolRequest, struct{}) (chan int, error) { return nil, nil })
		}, true},
		{"typed, map input and slice output", func(s *Server) {
			AddTool(s, Tool{Name: "t"}, func(context.Context, *CallToolRequest, map[string]any) ([]string, error) { return nil, nil })
		}, false},
		{"resource without a name", func(s *Server) { s.AddResource(Resource{URI: "a://b"}, nil) }, true},
		{"template that does not parse", func(s *Server) { s.AddResourceTemplate(ResourceTemplate{URITemplate: "a://{b", Name: "b"}, nil) }, true},
		{"prompt without a name", func(s *Server) { s.AddPrompt(Prompt{}, nil) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := recover(); (p != nil) != tt.wantPanic {
					t.Errorf("panic %v, want a panic: %v", p, tt.wantPanic)
				}
			}()
			tt.add(NewServer(Implementation{Name: "s", Version: "1"}))
		})
	}
}

func TestTypedToolOutputKinds(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "s", Version: "1"})
	type node struct {
		Name     string  `json:"name"`
		Children []*node `json:"children"`
		Parent   *node   `json:"parent,omitempty"`
	}
	AddTool(s, Tool{Name: "list"}, func(context.Context, *CallToolRequest, struct{}) ([]string, error) { return nil, nil })
	AddTool(s, Tool{Name: "tree"}, func(context.Context, *CallToolRequest, struct{}) (*node, error) {
		return &node{Name: "root", Children: []*node{{Name: "leaf"}}}, nil
	})
	AddTool(s, Tool{Name: "any"}, func(context.Context, *CallToolRequest, struct{}) (any, error) { return map[string]int{"n": 1}, nil })
	AddTool(s, Tool{Name: "own-schema", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}`)},
		func(_ context.Context, _ *CallToolRequest, in map[string]int) (map[string]int, error) { return in, nil })
	cl := pair(t, s)
	ctx := context.Background()
	tests := []struct {
		tool       string
		args       any
		wantText   string
		wantStruct string
		wantError  bool
	}{
		{tool: "list", wantText: "null"},
		{tool: "tree", wantText: `{"name":"root","children":[{"name":"leaf","children":[]}]}`, wantStruct: `{"name":"root","children":[{"name":"leaf","children":[]}]}`},
		{tool: "any", wantText: `{"n":1}`},
		{tool: "own-schema", args: map[string]int{"n": 2}, wantText: `{"n":2}`, wantStruct: `{"n":2}`},
		{tool: "own-schema", args: map[string]int{"n": 4}, wantError: true},
	}
	for _, tt := range tests {
		res, err := cl.CallTool(ctx, tt.tool, tt.args)
		if err != nil {
			t.Fatalf("%s: %v", tt.tool, err)
		}
		if res.IsError != tt.wantError || (!tt.wantError && res.Content[0].Text != tt.wantText) || string(res.StructuredContent) != tt.wantStruct {
			t.Errorf("%s: %+v structured %s", tt.tool, res.Content, res.StructuredContent)
		}
	}
	tools, _ := cl.ListTools(ctx, "")
	for _, tool := range tools.Tools {
		if (tool.OutputSchema != nil) != (tool.Name == "tree" || tool.Name == "own-schema") {
			t.Errorf("%s: output schema %s", tool.Name, tool.OutputSchema)
		}
	}
}

func TestConformOutput(t *testing.T) {
	t.Parallel()
	type inner struct {
		X int `json:"x"`
	}
	type shapes struct {
		List     []int            `json:"list"`
		Map      map[string]int   `json:"map"`
		Ptr      *inner           `json:"ptr"`
		Str      *string          `json:"str"`
		Required *inner           `json:"required" schema:"required"`
		Nested   []map[string]any `json:"nested"`
		Lists    map[string][]int `json:"lists"`
		Omitted  []int            `json:"omitted,omitempty"`
		Raw      json.RawMessage  `json:"raw"`
	}
	schema, err := SchemaFor[shapes]()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{`{"list":[1],"map":{},"ptr":{"x":1},"str":"s","required":{"x":2},"nested":[],"lists":{},"raw":1}`, ""},
		{`{"list":null,"map":null,"ptr":null,"str":null,"required":null,"nested":null,"lists":null,"raw":null}`,
			`{"list":[],"map":{},"required":null,"nested":[],"lists":{},"raw":null}`},
		{`{"list":[],"map":{},"required":{"x":1},"nested":[null,{"a":null}],"lists":{"a":null,"b":[1]},"raw":"null"}`,
			`{"list":[],"map":{},"required":{"x":1},"nested":[{},{"a":null}],"lists":{"a":[],"b":[1]},"raw":"null"}`},
	}
	for _, tt := range tests {
		got := string(conformOutput(schema, []byte(tt.in)))
		want := tt.want
		if want == "" {
			want = tt.in
		}
		if got != want {
			t.Errorf("conformOutput(%s)\n got  %s\n want %s", tt.in, got, want)
		}
	}
	// What comes out satisfies the schema, but for the explicit choice of a
	// required pointer.
	fixed := conformOutput(schema, []byte(tests[2].in))
	v, _ := schemaDecodeAny(fixed)
	if err := schema.Validate(v); err != nil {
		t.Errorf("conformed output does not validate: %v", err)
	}
}

// BenchmarkCallTypedTool measures a typed tool call: validation with a
// default filled in, decoding into the input type, structured output.
func BenchmarkCallTypedTool(b *testing.B) {
	for _, v := range featureVersions {
		b.Run(v, func(b *testing.B) {
			cl := connectOver(b, featureServer(), "memory", v)
			ctx := context.Background()
			args := map[string]any{"a": 2}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.CallTool(ctx, "add", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
