package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"sync/atomic"
	"time"

	"github.com/e6ac58cb/mcp"
)

// The fixtures below are the ones the conformance suite's server scenarios
// call by name; their texts and schemas are the suite's (see
// conformance/NOTES.md §4–§6).

// noArgs is the input schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// redPixelPNG and beepWAV are the base64 image and audio the fixtures send.
var (
	redPixelPNG = encodePNG()
	beepWAV     = encodeWAV()
)

// encodePNG returns a 1x1 red PNG, base64-encoded.
func encodePNG() string {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// encodeWAV returns a short 8 kHz 8-bit mono WAV (a square wave),
// base64-encoded.
func encodeWAV() string {
	samples := make([]byte, 800) // 0.1s
	for i := range samples {
		samples[i] = 0x60
		if i/8%2 == 0 {
			samples[i] = 0xa0
		}
	}
	var buf bytes.Buffer
	le := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	le(uint32(36 + len(samples)))
	buf.WriteString("WAVEfmt ")
	le(uint32(16))   // fmt chunk size
	le(uint16(1))    // PCM
	le(uint16(1))    // mono
	le(uint32(8000)) // sample rate
	le(uint32(8000)) // byte rate
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	buf.WriteString("data")
	le(uint32(len(samples)))
	buf.Write(samples)
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}
}

// pause waits d, or less if ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// userSchema is the form of test_elicitation.
const userSchema = `{"type":"object","properties":{
	"username":{"type":"string","description":"User's response"},
	"email":{"type":"string","description":"User's email address"}},
	"required":["username","email"]}`

// defaultsSchema is the form of test_elicitation_sep1034_defaults: one
// property with a default of each primitive type.
const defaultsSchema = `{"type":"object","properties":{
	"name":{"type":"string","default":"John Doe"},
	"age":{"type":"integer","default":30},
	"score":{"type":"number","default":95.5},
	"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
	"verified":{"type":"boolean","default":true}}}`

// enumsSchema is the form of test_elicitation_sep1330_enums: every enum
// shape of SEP-1330.
const enumsSchema = `{"type":"object","properties":{
	"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
	"titledSingle":{"type":"string","oneOf":[
		{"const":"value1","title":"First Option"},
		{"const":"value2","title":"Second Option"},
		{"const":"value3","title":"Third Option"}]},
	"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
	"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
	"titledMulti":{"type":"array","items":{"anyOf":[
		{"const":"value1","title":"First Choice"},
		{"const":"value2","title":"Second Choice"},
		{"const":"value3","title":"Third Choice"}]}}}}`

// schema2020 is the input schema json-schema-2020-12 expects back verbatim.
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
	`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
	`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
	`"additionalProperties":false}`

// form returns a one-property form schema.
func form(property, typ string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, property, typ, property))
}

// elicitSummary renders an elicitation's answer for a tool result.
func elicitSummary(res *mcp.ElicitResult) string {
	content, _ := json.Marshal(res.Content)
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

// sampledText returns the text of a sampled message, if any.
func sampledText(res *mcp.CreateMessageResult) string {
	for _, c := range res.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

func userMessage(text string) mcp.SamplingMessage {
	return mcp.SamplingMessage{Role: "user", Content: mcp.SamplingContent{mcp.TextContent(text)}}
}

func addConformanceTools(srv *mcp.Server) {
	fixed := func(name, description string, content ...mcp.Content) {
		srv.AddTool(mcp.Tool{Name: name, Description: description, InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: content}, nil
			})
	}
	fixed("test_simple_text", "Returns a simple text response.",
		mcp.TextContent("This is a simple text response for testing."))
	fixed("test_image_content", "Returns an image (a 1x1 red PNG).",
		mcp.ImageContent(redPixelPNG, "image/png"))
	fixed("test_audio_content", "Returns audio (a short WAV).",
		mcp.AudioContent(beepWAV, "audio/wav"))
	fixed("test_embedded_resource", "Returns an embedded text resource.",
		mcp.EmbeddedResourceContent(mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}))
	fixed("test_multiple_content_types", "Returns text, an image and an embedded resource.",
		mcp.TextContent("Multiple content types test:"),
		mcp.ImageContent(redPixelPNG, "image/png"),
		mcp.EmbeddedResourceContent(mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}))
	srv.AddTool(mcp.Tool{Name: "test_error_handling", Description: "Always fails, as a tool result with isError set.", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("This tool intentionally returns an error for testing")
		})

	srv.AddTool(mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three info log messages while it runs.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				req.Gateway().Log(mcp.LevelInfo, "conformance", msg)
			}
			return textResult("Tool with logging completed"), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 when asked for progress.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i, done := range []float64{0, 50, 100} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				req.Gateway().Progress(done, 100, fmt.Sprintf("%g%% done", done))
			}
			return textResult("Tool with progress completed"), nil
		})

	type promptArgs struct {
		Prompt string `json:"prompt" description:"The prompt to send to the client's model."`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "test_sampling", Description: "Asks the client's model to answer the prompt (sampling)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in promptArgs) (*mcp.CallToolResult, error) {
			if !req.Gateway().SupportsSampling() {
				return nil, fmt.Errorf("the client did not declare the sampling capability")
			}
			res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{userMessage(in.Prompt)},
				MaxTokens: 100,
			})
			if err != nil {
				return nil, err
			}
			return textResult("LLM response: " + sampledText(res)), nil
		})
	type messageArgs struct {
		Message string `json:"message" description:"The message to show the user."`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email (elicitation)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, in.Message, json.RawMessage(userSchema))
			if err != nil {
				return nil, err
			}
			return textResult("User response: " + elicitSummary(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields all have defaults (SEP-1034).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "Please review and update the form fields with defaults", json.RawMessage(defaultsSchema))
			if err != nil {
				return nil, err
			}
			return textResult("Elicitation completed: " + elicitSummary(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits a form with every enum shape (SEP-1330).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "Please select options from the enum fields", json.RawMessage(enumsSchema))
			if err != nil {
				return nil, err
			}
			return textResult("Elicitation completed: " + elicitSummary(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features", InputSchema: json.RawMessage(schema2020)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("Received: " + string(req.Params.Arguments)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_reconnection", Description: "Closes its SSE stream before answering, so that the client resumes it (SEP-1699).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.CloseStream(200 * time.Millisecond)
			if err := pause(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return textResult("Reconnection test completed successfully"), nil
		})

	// http-custom-header-server-validation (pending) looks for a string
	// argument mirrored in an Mcp-Param-* header (SEP-2243).
	srv.AddTool(mcp.Tool{Name: "test_header_param", Description: "Echoes its region, which clients also send in the Mcp-Param-Region header (2026-07-28).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Region string `json:"region"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return textResult("region: " + args.Region), nil
		})

	addStatelessTools(srv)
	addInputRequiredTools(srv)
}

// addStatelessTools registers the diagnostic tools of the 2026-07-28
// server-stateless scenario.
func addStatelessTools(srv *mcp.Server) {
	srv.AddTool(mcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability; without it the call fails with -32021 (2026-07-28).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{userMessage("Say hello.")},
				MaxTokens: 16,
			})
			if err != nil {
				return nil, err
			}
			return textResult("Sampled: " + sampledText(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_streaming_elicitation", Description: "Elicits a name: a live request on the older revisions, input_required on 2026-07-28.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "What is your name?", form("name", "string"))
			if err != nil {
				return nil, err
			}
			return textResult("Elicitation completed: " + elicitSummary(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_logging_tool", Description: "Logs three messages, sent only to a client that asked for a log level.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				req.Gateway().Log(mcp.LevelInfo, "conformance", fmt.Sprintf("log message %d of 3", i))
			}
			return textResult("Logged three messages"), nil
		})

	// Registering a tool or prompt again, changed, keeps its place in the
	// list and tells every subscriber that the list changed (a registration
	// that changes nothing tells nobody): each trigger counts itself in the
	// description.
	var changes atomic.Int64
	triggerTool := mcp.Tool{Name: "test_trigger_tool_change", Description: "Re-registers itself, which sends notifications/tools/list_changed.", InputSchema: noArgs}
	var triggerToolChange mcp.ToolHandler
	triggerToolChange = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		changed := triggerTool
		changed.Description += fmt.Sprintf(" (change %d)", changes.Add(1))
		srv.AddTool(changed, triggerToolChange)
		return textResult("The tool list changed"), nil
	}
	srv.AddTool(triggerTool, triggerToolChange)
	srv.AddTool(mcp.Tool{Name: "test_trigger_prompt_change", Description: "Re-registers test_simple_prompt, which sends notifications/prompts/list_changed.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			addSimplePrompt(srv, fmt.Sprintf(" (change %d)", changes.Add(1)))
			return textResult("The prompt list changed"), nil
		})
}

// addInputRequiredTools registers the tools of the input-required-result
// scenarios (2026-07-28, SEP-2322). Each ask has the key the suite answers
// under; on the older revisions the same asks are live requests.
func addInputRequiredTools(srv *mcp.Server) {
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_elicitation", Description: "Asks the user's name (key user_name), then greets them.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "What is your name?", form("name", "string"), mcp.WithKey("user_name"))
			if err != nil {
				return nil, err
			}
			if res.Action != mcp.ActionAccept {
				return textResult("The user did not give a name (" + res.Action + ")"), nil
			}
			return textResult(fmt.Sprintf("Hello, %v!", res.Content["name"])), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_sampling", Description: "Asks the client's model a question (key capital_question).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{userMessage("What is the capital of France?")},
				MaxTokens: 100,
			}, mcp.WithKey("capital_question"))
			if err != nil {
				return nil, err
			}
			return textResult("The model answered: " + sampledText(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_list_roots", Description: "Asks the client for its roots (key client_roots).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().ListRoots(ctx, mcp.WithKey("client_roots"))
			if err != nil {
				return nil, err
			}
			return textResult("Roots: " + rootList(res.Roots)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_request_state", Description: "Asks for a confirmation (key confirm) and carries state between the rounds.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Rounds exist on 2026-07-28 only; the older revisions ask live,
			// within one run of the handler.
			var carried string
			if req.ProtocolVersion() == mcp.Version20260728 {
				hasState, err := req.State(&carried)
				if err != nil {
					return nil, err
				}
				if !hasState {
					if err := req.SetState("awaiting-confirmation"); err != nil {
						return nil, err
					}
				}
			}
			res, err := req.Gateway().Elicit(ctx, "Please confirm", form("ok", "boolean"), mcp.WithKey("confirm"))
			if err != nil {
				return nil, err
			}
			text := "confirmed: " + elicitSummary(res)
			if carried == "awaiting-confirmation" {
				text += " (state-ok)"
			}
			return textResult(text), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_multiple_inputs", Description: "Asks three things in one round: an elicitation, a sampling and the roots.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g := req.Gateway()
			// All three asks go out in the same round: a handler that stopped at
			// the first unanswered one would need three rounds.
			name, errName := g.Elicit(ctx, "What is your name?", form("name", "string"), mcp.WithKey("user_name"))
			greeting, errGreeting := g.Sample(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{userMessage("Generate a greeting")},
				MaxTokens: 50,
			}, mcp.WithKey("greeting"))
			roots, errRoots := g.ListRoots(ctx, mcp.WithKey("client_roots"))
			if err := errors.Join(errName, errGreeting, errRoots); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("name: %s; greeting: %s; roots: %s", elicitSummary(name), sampledText(greeting), rootList(roots.Roots))), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_multi_round", Description: "Asks two questions, one round each (keys step1, step2).", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g := req.Gateway()
			name, err := g.Elicit(ctx, "Step 1: What is your name?", form("name", "string"), mcp.WithKey("step1"))
			if err != nil {
				return nil, err
			}
			color, err := g.Elicit(ctx, "Step 2: What is your favorite color?", form("color", "string"), mcp.WithKey("step2"))
			if err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("%v likes %v", name.Content["name"], color.Content["color"])), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_tampered_state", Description: "Asks for a confirmation; its signed requestState must come back untouched.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "Please confirm", form("ok", "boolean"), mcp.WithKey("confirm"))
			if err != nil {
				return nil, err
			}
			return textResult("confirmed: " + elicitSummary(res)), nil
		})
	srv.AddTool(mcp.Tool{Name: "test_input_required_result_capabilities", Description: "Asks only for what the client declared it can answer.", InputSchema: noArgs},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g := req.Gateway()
			var answers []string
			var errs []error
			if g.SupportsElicitation() {
				res, err := g.Elicit(ctx, "What is your name?", form("name", "string"), mcp.WithKey("user_name"))
				errs = append(errs, err)
				if err == nil {
					answers = append(answers, "elicitation: "+elicitSummary(res))
				}
			}
			if g.SupportsSampling() {
				res, err := g.Sample(ctx, &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{userMessage("Say hello.")}, MaxTokens: 50}, mcp.WithKey("greeting"))
				errs = append(errs, err)
				if err == nil {
					answers = append(answers, "sampling: "+sampledText(res))
				}
			}
			if g.SupportsRoots() {
				res, err := g.ListRoots(ctx, mcp.WithKey("client_roots"))
				errs = append(errs, err)
				if err == nil {
					answers = append(answers, "roots: "+rootList(res.Roots))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			if len(answers) == 0 {
				return textResult("The client declared nothing to ask for"), nil
			}
			return textResult(strings.Join(answers, "; ")), nil
		})
}

func rootList(roots []mcp.Root) string {
	parts := make([]string, len(roots))
	for i, r := range roots {
		parts[i] = r.URI
		if r.Name != "" {
			parts[i] += " (" + r.Name + ")"
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func addResources(srv *mcp.Server) {
	// test://static-text comes first: the caching scenario reads resources[0].
	text := func(uri, mimeType, text string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, MIMEType: mimeType, Text: text}}}, nil
		}
	}
	srv.AddResource(mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource.", MIMEType: "text/plain"},
		text("test://static-text", "text/plain", "This is the content of the static text resource."))
	srv.AddResource(mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (a 1x1 PNG).", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: "test://static-binary", MIMEType: "image/png", Blob: redPixelPNG}}}, nil
		})
	srv.AddResource(mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource clients may subscribe to.", MIMEType: "text/plain"},
		text("test://watched-resource", "text/plain", "This is the content of the watched resource."))
	srv.AddResourceTemplate(mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data", Description: "Data for any id.", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := req.Vars["id"]
			data, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(data)}}}, nil
		})
}

// addSimplePrompt registers test_simple_prompt; note ends its description.
func addSimplePrompt(srv *mcp.Server, note string) {
	srv.AddPrompt(mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments." + note},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("This is a simple prompt for testing.")}}}, nil
		})
}

func addPrompts(srv *mcp.Server) {
	addSimplePrompt(srv, "")
	srv.AddPrompt(mcp.Prompt{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt with two required arguments.",
		Arguments: []mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(text)}}}, nil
	})
	srv.AddPrompt(mcp.Prompt{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt that embeds the resource it is given.",
		Arguments:   []mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		uri := req.Params.Arguments["resourceUri"]
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
			{Role: "user", Content: mcp.EmbeddedResourceContent(mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing."})},
			{Role: "user", Content: mcp.TextContent("Please process the embedded resource above.")},
		}}, nil
	})
	srv.AddPrompt(mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				{Role: "user", Content: mcp.ImageContent(redPixelPNG, "image/png")},
				{Role: "user", Content: mcp.TextContent("Please analyze the image above.")},
			}}, nil
		})
	srv.AddPrompt(mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks the user for context (key user_context) before it is rendered."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res, err := req.Gateway().Elicit(ctx, "What context should the prompt use?", form("context", "string"), mcp.WithKey("user_context"))
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				{Role: "user", Content: mcp.TextContent(fmt.Sprintf("Use this context: %v", res.Content["context"]))},
			}}, nil
		})
}

// complete suggests values for the arguments of test_prompt_with_arguments
// and the id of the template, by prefix.
func complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	candidates := []string{"test", "testValue1", "testValue2", "example"}
	if req.Params.Ref.Type == "ref/resource" {
		candidates = []string{"1", "2", "3", "123"}
	}
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, req.Params.Argument.Value) {
			values = append(values, c)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.Completion{Values: values, Total: len(values)}}, nil
}
