package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/e6ac58cb/mcp"
)

// taskOptional and taskRequired are the execution of the task fixtures.
var (
	taskOptional = &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}
	taskRequired = &mcp.ToolExecution{TaskSupport: mcp.TaskRequired}
)

// addTaskTools registers the fixtures of the tasks-* scenarios (the
// io.modelcontextprotocol/tasks extension, 2026-07-28): a synchronous tool
// beside tools that run as tasks, fail in each way, and ask for input.
func addTaskTools(srv *mcp.Server) {
	type greetIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "greet", Description: "Greets name; never runs as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, error) {
			return textResult("Hello, " + in.Name + "!"), nil
		})
	type computeIn struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label,omitempty"`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "slow_compute", Description: "Works for the given seconds, as a task when the client allows one.", Execution: taskOptional},
		func(ctx context.Context, req *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(0, in.Seconds, "computing "+in.Label)
			if err := pause(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("Computed %s after %g seconds", in.Label, in.Seconds)), nil
		})
	srv.AddTool(mcp.Tool{Name: "failing_job", Description: "Runs only as a task, and fails with a tool error after a second.", InputSchema: noArgs, Execution: taskRequired},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := pause(ctx, time.Second); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("the job failed, as it always does")
		})
	srv.AddTool(mcp.Tool{Name: "protocol_error_job", Description: "Runs as a task that fails with a protocol error.", InputSchema: noArgs, Execution: taskOptional},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error: the job broke"}
		})
	type deleteIn struct {
		Filename string `json:"filename"`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "confirm_delete", Description: "Asks the user to confirm, then deletes filename (nothing is deleted).", Execution: taskOptional},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "Delete "+in.Filename+"?", form("confirm", "boolean"), mcp.WithKey("confirm"))
			if err != nil {
				return nil, err
			}
			if res.Action != mcp.ActionAccept || res.Content["confirm"] != true {
				return textResult("Kept " + in.Filename), nil
			}
			return textResult("Deleted " + in.Filename), nil
		})
	srv.AddTool(mcp.Tool{Name: "multi_input", Description: "Asks two questions at once, then reports both answers.", InputSchema: noArgs, Execution: taskOptional},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Both asks are made before either answer is needed, so that
			// the task waits on both at once.
			g := req.Gateway()
			first, err1 := g.Elicit(ctx, "First question: your name?", form("name", "string"), mcp.WithKey("first"))
			second, err2 := g.Elicit(ctx, "Second question: proceed?", form("confirm", "boolean"), mcp.WithKey("second"))
			if err1 != nil {
				return nil, err1
			}
			if err2 != nil {
				return nil, err2
			}
			return textResult("Answers: " + elicitSummary(first) + "; " + elicitSummary(second)), nil
		})
	withTask := mcp.Tool{Name: "test_tool_with_task", Description: "Asks the user's name (key user_name) before its task exists, then greets them from the task.", InputSchema: noArgs, Execution: taskRequired}
	askName := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.ElicitResult, error) {
		return req.Gateway().Elicit(ctx, "What is your name?", form("name", "string"), mcp.WithKey("user_name"))
	}
	srv.AddTool(withTask, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := askName(ctx, req)
		if err != nil {
			return nil, err
		}
		name, _ := json.Marshal(res.Content["name"])
		return textResult("Hello from the task, " + string(name)), nil
	})
	srv.SetTaskPreflight(withTask.Name, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := askName(ctx, req)
		return nil, err
	})
}
