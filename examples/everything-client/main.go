// Command everything-client is the client program the official MCP
// conformance suite drives: the suite starts a mock server for a scenario
// and runs
//
//	everything-client [flags] <server-url>
//
// with the scenario's name in MCP_CONFORMANCE_SCENARIO, its context (JSON)
// in MCP_CONFORMANCE_CONTEXT when it has one, and, from suite 0.2.0 on, the
// protocol revision to speak in MCP_CONFORMANCE_PROTOCOL_VERSION. Unset, the
// client connects as any client of this package does: it tries 2026-07-28
// and falls back to the initialize handshake of the older revisions.
//
// The server URL, the last argument, is used exactly as given (some
// scenarios serve at the root, others at /mcp). The program exits 0 when
// the scenario's flow completed and 1 otherwise, at once for scenarios it
// does not implement. The auth/* scenarios run over an OAuth client
// transport (auth.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/e6ac58cb/mcp"
)

// scenarioTimeout bounds a whole run, below the suite's own client timeout
// (run.sh gives 15s), so that a hang is reported by this program.
const scenarioTimeout = 12 * time.Second

// scenario is one flow the suite can ask for.
type scenario func(ctx context.Context, c *mcp.Client, sc *scenarioContext) error

// scenarioContext is MCP_CONFORMANCE_CONTEXT, as far as this program reads
// it.
type scenarioContext struct {
	Name      string `json:"name"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

var scenarios = map[string]scenario{
	// 2025-11-25 (suite 0.1.16)
	"initialize":                          listTools,
	"tools_call":                          callAddNumbers,
	"elicitation-sep1034-client-defaults": callTool("test_client_elicitation_defaults"),
	"sse-retry":                           callTool("test_reconnection"),
	// 2026-07-28 (suite 0.2.0)
	"request-metadata":              listTools,
	"sep-2322-client-request-state": callEveryTool,
	"http-standard-headers":         exerciseEverything,
	"http-custom-headers":           callContextTools,
	"http-invalid-tool-headers":     callEveryTool,
	"json-schema-ref-no-deref":      listTools,
	// the Skills extension (SEP-2640, suite 0.2.0)
	"sep-2640-client-no-prefetch":        listSkills,
	"sep-2640-client-verify-digest":      loadFirstSkill,
	"sep-2640-client-verify-size":        loadFirstSkill,
	"sep-2640-client-verify-frontmatter": loadFirstSkill,
	// not in run.sh's sets (added after the 2026-07-28 release)
	"json-schema-2020-12-preservation": echoSchema,
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: everything-client <server-url>  (scenario in MCP_CONFORMANCE_SCENARIO)")
	}
	flag.Parse()
	log.SetFlags(log.Lmicroseconds)
	log.SetPrefix("everything-client: ")
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(flag.NArg() - 1)); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(url string) error {
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	flow, ok := scenarios[name]
	var topts []mcp.HTTPTransportOption
	if isAuthScenario(name) {
		o, err := oauthOption(name)
		if err != nil {
			return err
		}
		flow, ok, topts = authFlow, true, append(topts, o)
	}
	if !ok {
		return fmt.Errorf("scenario %q is not implemented", name)
	}
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()

	opts := []mcp.ClientOption{
		mcp.WithElicitationHandler(acceptWithDefaults),
		mcp.WithSamplingHandler(sample),
		mcp.WithRoots(mcp.Root{URI: "file:///workspace", Name: "workspace"}),
		mcp.WithRequestTimeout(10 * time.Second),
	}
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v != "" {
		opts = append(opts, mcp.WithProtocolVersion(v))
	}
	client := mcp.NewClient(mcp.Implementation{Name: "mcp-go-everything-client", Version: "1.0.0"}, opts...)
	log.Printf("scenario %s: connecting to %s", name, url)
	if err := client.Connect(ctx, mcp.NewHTTPTransport(url, topts...)); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	log.Printf("connected, protocol version %s", client.ProtocolVersion())
	return flow(ctx, client, &sc)
}

func listTools(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	_, err := tools(ctx, c)
	return err
}

// tools lists every tool of the server, page by page.
func tools(ctx context.Context, c *mcp.Client) ([]*mcp.Tool, error) {
	var all []*mcp.Tool
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		all = append(all, tool)
	}
	log.Printf("%d tools", len(all))
	return all, nil
}

func callAddNumbers(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	if _, err := tools(ctx, c); err != nil {
		return err
	}
	return call(ctx, c, "add_numbers", map[string]any{"a": 5, "b": 3})
}

// callTool lists the tools, then calls one without arguments.
func callTool(name string) scenario {
	return func(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
		if _, err := tools(ctx, c); err != nil {
			return err
		}
		return call(ctx, c, name, nil)
	}
}

// callEveryTool calls every listed tool with arguments made from its input
// schema. Tools the client refused to list (an invalid x-mcp-header
// annotation, say) are never called.
func callEveryTool(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	all, err := tools(ctx, c)
	if err != nil {
		return err
	}
	for _, tool := range all {
		if err := call(ctx, c, tool.Name, argumentsFor(tool.InputSchema)); err != nil {
			return err
		}
	}
	return nil
}

// echoSchema sends json_schema_2020_12_tool's input schema back, exactly as
// listed, through json_schema_echo.
func echoSchema(ctx context.Context, c *mcp.Client, _ *scenarioContext) error {
	all, err := tools(ctx, c)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(all, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
	if i < 0 {
		return errors.New("the server does not list json_schema_2020_12_tool")
	}
	return call(ctx, c, "json_schema_echo", map[string]json.RawMessage{"schema": all[i].InputSchema})
}

// callContextTools makes the tool calls the scenario's context lists, with
// their arguments exactly as given.
func callContextTools(ctx context.Context, c *mcp.Client, sc *scenarioContext) error {
	if _, err := tools(ctx, c); err != nil {
		return err
	}
	if len(sc.ToolCalls) == 0 {
		return errors.New("MCP_CONFORMANCE_CONTEXT lists no toolCalls")
	}
	for _, tc := range sc.ToolCalls {
		var args any
		if len(tc.Arguments) > 0 {
			args = tc.Arguments
		}
		if err := call(ctx, c, tc.Name, args); err != nil {
			return err
		}
	}
	return nil
}

// exerciseEverything sends every kind of request of the server's features:
// it lists the tools, resources and prompts, and calls, reads and gets each.
func exerciseEverything(ctx context.Context, c *mcp.Client, sc *scenarioContext) error {
	if err := callEveryTool(ctx, c, sc); err != nil {
		return err
	}
	for res, err := range c.Resources(ctx) {
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if _, err := c.ReadResource(ctx, res.URI); err != nil {
			return fmt.Errorf("resources/read %s: %w", res.URI, err)
		}
		log.Printf("read %s", res.URI)
	}
	for prompt, err := range c.Prompts(ctx) {
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		args := map[string]string{}
		for _, a := range prompt.Arguments {
			args[a.Name] = "example"
		}
		if _, err := c.GetPrompt(ctx, prompt.Name, args); err != nil {
			return fmt.Errorf("prompts/get %s: %w", prompt.Name, err)
		}
		log.Printf("got prompt %s", prompt.Name)
	}
	return nil
}

// call calls a tool. A result with isError set is the tool's answer, not a
// failure of the flow.
func call(ctx context.Context, c *mcp.Client, name string, args any) error {
	res, err := c.CallTool(ctx, name, args)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	out, _ := json.Marshal(res.Content)
	log.Printf("called %s: isError=%t content=%s", name, res.IsError, out)
	return nil
}

// argumentsFor makes arguments that satisfy a simple input schema: a value
// for each property of a primitive type (its default, else its first enum
// value, else a plain one). Properties of other shapes are left out.
func argumentsFor(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	args := map[string]any{}
	for name, prop := range s.Properties {
		if v, ok := valueFor(prop); ok {
			args[name] = v
		}
	}
	return args
}

// valueFor returns a value for one property schema.
func valueFor(prop json.RawMessage) (any, bool) {
	var p struct {
		Type    any               `json:"type"`
		Default json.RawMessage   `json:"default"`
		Enum    []json.RawMessage `json:"enum"`
		OneOf   []struct {
			Const json.RawMessage `json:"const"`
		} `json:"oneOf"`
	}
	if json.Unmarshal(prop, &p) != nil {
		return nil, false
	}
	var v any
	switch {
	case len(p.Default) > 0:
		return p.Default, true
	case len(p.Enum) > 0:
		return p.Enum[0], true
	case len(p.OneOf) > 0 && len(p.OneOf[0].Const) > 0:
		return p.OneOf[0].Const, true
	}
	switch p.Type {
	case "string":
		v = "example"
	case "integer", "number":
		v = 1
	case "boolean":
		v = true
	case "array":
		v = []any{}
	default:
		return nil, false
	}
	return v, true
}

// acceptWithDefaults answers every form by accepting it with each field
// filled in: its default if the schema gives one (SEP-1034), else a plain
// value of its type.
func acceptWithDefaults(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p.Mode == mcp.ElicitationURL {
		return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
	}
	content := map[string]any{}
	for name, v := range argumentsFor(p.RequestedSchema) {
		if raw, ok := v.(json.RawMessage); ok {
			var decoded any
			_ = json.Unmarshal(raw, &decoded)
			v = decoded
		}
		content[name] = v
	}
	log.Printf("elicitation %q: accepting %v", p.Message, content)
	return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
}

// sample stands in for a language model.
func sample(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		Role:       "assistant",
		Content:    mcp.SamplingContent{mcp.TextContent("This is a test response from the client")},
		Model:      "everything-client",
		StopReason: "endTurn",
	}, nil
}
