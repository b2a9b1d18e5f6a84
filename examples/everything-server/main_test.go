package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// suiteTools are the tools the conformance suite's server scenarios look
// for in the first page of tools/list (conformance/NOTES.md §4–§6).
var suiteTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_error_handling", "test_tool_with_logging", "test_tool_with_progress",
	"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
	"json_schema_2020_12_tool", "test_reconnection", "test_header_param",
	"test_missing_capability", "test_streaming_elicitation", "test_logging_tool",
	"test_trigger_tool_change", "test_trigger_prompt_change",
	"test_input_required_result_elicitation", "test_input_required_result_sampling",
	"test_input_required_result_list_roots", "test_input_required_result_request_state",
	"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
	"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
}

var interopTools = []string{"echo", "progress", "sleep", "sleep_stats", "ask_elicitation", "ask_sampling", "ask_roots", "log"}

var versions = []string{mcp.Version20251125, mcp.Version20260728}

// connect serves a fresh everything-server in memory and connects a client
// that answers every ask, speaking version.
func connect(t *testing.T, version string) *mcp.Client {
	t.Helper()
	srv := newServer()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ctx, serverSide)
	}()
	client := mcp.NewClient(mcp.Implementation{Name: "test", Version: "1"},
		mcp.WithProtocolVersion(version),
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada", "count": 3, "ok": true}}, nil
		}),
		mcp.WithSamplingHandler(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", StopReason: "endTurn", Content: mcp.SamplingContent{mcp.TextContent("hi")}}, nil
		}),
		mcp.WithRoots(mcp.Root{URI: "file:///w", Name: "w"}))
	if err := client.Connect(ctx, clientSide); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		cancel()
		<-served
	})
	return client
}

// TestToolsListPages: the suite's tools are all on the first page and the
// interop tools spill onto a second one.
func TestToolsListPages(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			client := connect(t, v)
			first, err := client.ListTools(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range first.Tools {
				names = append(names, tool.Name)
				if tool.Description == "" || len(tool.InputSchema) == 0 {
					t.Errorf("tool %s lacks a description or an input schema", tool.Name)
				}
			}
			for _, want := range suiteTools {
				if !slices.Contains(names, want) {
					t.Errorf("%s is not on the first page", want)
				}
			}
			if first.NextCursor == "" {
				t.Fatal("tools/list has a single page")
			}
			var all []string
			for tool, err := range client.Tools(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, tool.Name)
			}
			for _, want := range interopTools {
				if !slices.Contains(all, want) {
					t.Errorf("%s is not listed", want)
				}
			}
		})
	}
}

func TestInteropTools(t *testing.T) {
	tests := []struct {
		tool string
		args map[string]any
		// want is the text result on each version (or on both when one).
		want map[string]string
	}{
		{"echo", map[string]any{"text": "héllo"}, map[string]string{"": "héllo"}},
		{"progress", map[string]any{"steps": 2, "delayMs": 1}, map[string]string{"": "completed 2 steps"}},
		{"sleep", map[string]any{"ms": 1}, map[string]string{"": "slept 1ms"}},
		{"ask_elicitation", nil, map[string]string{"": `{"action":"accept","content":{"count":3,"name":"Ada","ok":true}}`}},
		{"ask_sampling", map[string]any{"prompt": "say hi"}, map[string]string{"": `{"model":"m","role":"assistant","text":"hi","stopReason":"endTurn"}`}},
		{"ask_roots", nil, map[string]string{"": `{"roots":[{"uri":"file:///w","name":"w"}]}`}},
		// On 2026-07-28 a request carries no log level unless the client set
		// one, and then nothing is logged.
		{"log", map[string]any{"level": "warning", "count": 2}, map[string]string{
			mcp.Version20251125: "logged 2 of 2", mcp.Version20260728: "logged 0 of 2"}},
	}
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			client := connect(t, v)
			for _, tt := range tests {
				var progress []float64
				res, err := client.CallTool(context.Background(), tt.tool, tt.args,
					mcp.WithProgress(func(p mcp.Progress) { progress = append(progress, p.Progress) }))
				if err != nil {
					t.Fatalf("%s: %v", tt.tool, err)
				}
				want, ok := tt.want[v]
				if !ok {
					want = tt.want[""]
				}
				if res.IsError || len(res.Content) == 0 || res.Content[0].Text != want {
					t.Errorf("%s = %+v, want text %s", tt.tool, res, want)
				}
				if tt.tool == "progress" && !slices.Equal(progress, []float64{1, 2}) {
					t.Errorf("progress reported %v", progress)
				}
			}
			res, err := client.CallTool(context.Background(), "sleep_stats", nil)
			if err != nil {
				t.Fatal(err)
			}
			var stats sleepCounts
			if err := json.Unmarshal([]byte(res.Content[0].Text), &stats); err != nil || stats.Started < 1 || stats.Completed < 1 {
				t.Errorf("sleep_stats = %s (%v)", res.Content[0].Text, err)
			}
		})
	}
}

// TestInputRequiredTools runs the MRTR fixtures end to end with this
// package's client, which answers the asks by itself on either era.
func TestInputRequiredTools(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			client := connect(t, v)
			stateWant := "confirmed"
			if v == mcp.Version20260728 {
				stateWant = "(state-ok)"
			}
			for tool, want := range map[string]string{
				"test_input_required_result_elicitation":     "Hello, Ada!",
				"test_input_required_result_multi_round":     "Ada likes",
				"test_input_required_result_multiple_inputs": "greeting: hi",
				"test_input_required_result_request_state":   stateWant,
			} {
				res, err := client.CallTool(context.Background(), tool, nil)
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				if res.IsError || !strings.Contains(res.Content[0].Text, want) {
					t.Errorf("%s = %+v, want %q", tool, res, want)
				}
			}
			prompt, err := client.GetPrompt(context.Background(), "test_input_required_result_prompt", nil)
			if err != nil || !strings.Contains(prompt.Messages[0].Content.Text, "context") {
				t.Errorf("test_input_required_result_prompt = %+v, %v", prompt, err)
			}
		})
	}
}
