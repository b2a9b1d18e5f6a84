package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/e6ac58cb/mcp"
)

// The interop set: small tools other MCP clients exercise against any
// everything-server, registered after the suite's fixtures so that they
// fill tools/list's second page.

// sleepStats counts the sleep calls of this process.
var sleepStats struct {
	started, completed, cancelled atomic.Int64
}

type echoArgs struct {
	Text string `json:"text" description:"The text to send back."`
}

type progressArgs struct {
	Steps   int `json:"steps" description:"How many progress notifications to send." schema:"minimum=1,maximum=1000,default=3"`
	DelayMs int `json:"delayMs" description:"Milliseconds to wait before each step." schema:"minimum=0,maximum=60000,default=20"`
}

type sleepArgs struct {
	Ms int `json:"ms" description:"Milliseconds to sleep." schema:"minimum=0,maximum=3600000"`
}

type sleepCounts struct {
	Started   int64 `json:"started"`
	Completed int64 `json:"completed"`
	Cancelled int64 `json:"cancelled"`
}

type askElicitationArgs struct {
	Message string `json:"message,omitempty" description:"The message to show the user."`
}

type elicitationAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type askSamplingArgs struct {
	Prompt string `json:"prompt" description:"The prompt to send to the client's model."`
}

type samplingAnswer struct {
	Model      string `json:"model"`
	Role       string `json:"role"`
	Text       string `json:"text"`
	StopReason string `json:"stopReason"`
}

type rootsAnswer struct {
	Roots []mcp.Root `json:"roots"`
}

type logArgs struct {
	Level mcp.LoggingLevel `json:"level" description:"The level of the messages." schema:"enum=debug|info|notice|warning|error|critical|alert|emergency,default=info"`
	Count int              `json:"count" description:"How many messages to send." schema:"minimum=0,maximum=1000,default=3"`
}

// interopForm is what ask_elicitation asks for.
const interopForm = `{"type":"object","properties":{
	"name":{"type":"string","description":"Your name"},
	"count":{"type":"integer","minimum":0,"maximum":100,"description":"A number from 0 to 100"},
	"ok":{"type":"boolean","description":"Whether all is well"}},
	"required":["name"]}`

// slogLevels maps the protocol's levels to the slog levels that
// mcp.NewLoggingHandler maps back to them.
var slogLevels = map[mcp.LoggingLevel]slog.Level{
	mcp.LevelDebug: slog.LevelDebug, mcp.LevelInfo: slog.LevelInfo, mcp.LevelNotice: slog.LevelInfo + 2,
	mcp.LevelWarning: slog.LevelWarn, mcp.LevelError: slog.LevelError, mcp.LevelCritical: slog.LevelError + 4,
	mcp.LevelAlert: slog.LevelError + 8, mcp.LevelEmergency: slog.LevelError + 12,
}

func addInteropTools(srv *mcp.Server) {
	mcp.AddTool(srv, mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
			return textResult(in.Text), nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "progress", Description: "Reports progress 1..steps of steps, one step every delayMs, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := pause(ctx, time.Duration(in.DelayMs)*time.Millisecond); err != nil {
					return nil, err
				}
				if err := req.Gateway().Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps)); err != nil {
					return nil, err
				}
			}
			return textResult(fmt.Sprintf("completed %d steps", in.Steps)), nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "sleep", Description: "Sleeps ms milliseconds; a cancelled call stops at once and gets no response."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, error) {
			sleepStats.started.Add(1)
			if err := pause(ctx, time.Duration(in.Ms)*time.Millisecond); err != nil {
				sleepStats.cancelled.Add(1)
				return nil, err
			}
			sleepStats.completed.Add(1)
			return textResult(fmt.Sprintf("slept %dms", in.Ms)), nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "sleep_stats", Description: "Counts the sleep calls of this process: started, completed, cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (sleepCounts, error) {
			return sleepCounts{
				Started:   sleepStats.started.Load(),
				Completed: sleepStats.completed.Load(),
				Cancelled: sleepStats.cancelled.Load(),
			}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "ask_elicitation", Description: "Asks the user for a name, a count (0..100) and a yes/no, and returns the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askElicitationArgs) (elicitationAnswer, error) {
			message := in.Message
			if message == "" {
				message = "Please fill in the form"
			}
			res, err := req.Gateway().Elicit(ctx, message, json.RawMessage(interopForm))
			if err != nil {
				return elicitationAnswer{}, err
			}
			return elicitationAnswer{Action: res.Action, Content: res.Content}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "ask_sampling", Description: "Asks the client's model to answer the prompt (at most 64 tokens)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askSamplingArgs) (samplingAnswer, error) {
			res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{userMessage(in.Prompt)},
				MaxTokens: 64,
			})
			if err != nil {
				return samplingAnswer{}, err
			}
			return samplingAnswer{Model: res.Model, Role: res.Role, Text: sampledText(res), StopReason: res.StopReason}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "ask_roots", Description: "Returns the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (rootsAnswer, error) {
			res, err := req.Gateway().ListRoots(ctx)
			if err != nil {
				return rootsAnswer{}, err
			}
			return rootsAnswer{Roots: res.Roots}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "log", Description: "Sends count log messages at level (logger interop), as far as the client's log level lets them through."},
		func(ctx context.Context, req *mcp.CallToolRequest, in logArgs) (*mcp.CallToolResult, error) {
			g := req.Gateway()
			sent := 0
			if mcp.NewLoggingHandler(g, nil).Enabled(ctx, slogLevels[in.Level]) {
				for i := 1; i <= in.Count; i++ {
					if err := g.Log(in.Level, "interop", fmt.Sprintf("log %d/%d", i, in.Count)); err != nil {
						return nil, err
					}
					sent++
				}
			}
			return textResult(fmt.Sprintf("logged %d of %d", sent, in.Count)), nil
		})

	// The interop set's task tool: a client that declares the tasks
	// extension gets a task to poll; others get the answer at the end.
	mcp.AddTool(srv, mcp.Tool{Name: "sleep_task", Description: "Sleeps ms milliseconds, as a task when the client declares the tasks extension; its status message says it is sleeping.",
		Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(0, float64(in.Ms), fmt.Sprintf("sleeping %dms", in.Ms))
			if err := pause(ctx, time.Duration(in.Ms)*time.Millisecond); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("slept %dms", in.Ms)), nil
		})
}
