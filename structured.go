package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// ErrNoStructuredContent is returned, on the client, by [StructuredContent]
// and [CallToolAs] for a result that carries no structured content.
var ErrNoStructuredContent = errors.New("mcp: the tool result has no structured content")

// A ToolError is returned, on the client, by [CallToolAs] when the tool
// reported a failure (a result with IsError set). Result is that result.
type ToolError struct {
	Name   string
	Result *CallToolResult
}

// Error reads like "mcp: tool add failed: b must be a number".
func (e *ToolError) Error() string {
	var texts []string
	for _, c := range e.Result.Content {
		if c.Type == "text" && c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	if len(texts) == 0 {
		return "mcp: tool " + e.Name + " failed"
	}
	return "mcp: tool " + e.Name + " failed: " + strings.Join(texts, "; ")
}

// StructuredContent decodes, on the client, a tool result's structured
// content into a value of type T. It returns ErrNoStructuredContent when the
// result has none, and the decoding error when it does not fit T.
func StructuredContent[T any](r *CallToolResult) (T, error) {
	var v T
	if r == nil || len(r.StructuredContent) == 0 || string(r.StructuredContent) == "null" {
		return v, ErrNoStructuredContent
	}
	if err := json.Unmarshal(r.StructuredContent, &v); err != nil {
		return v, errorf("decoding the structured content into %T: %w", v, err)
	}
	return v, nil
}

// CallToolAs calls, on the client, a tool whose output is structured (such
// as one a server registered with the generic [AddTool]) and decodes that
// output into Out. A tool that failed returns a *ToolError; a result without
// structured content, ErrNoStructuredContent.
func CallToolAs[Out any](ctx context.Context, c *Client, name string, args any, opts ...CallOption) (Out, error) {
	res, err := c.CallTool(ctx, name, args, opts...)
	if err != nil {
		var zero Out
		return zero, err
	}
	if res.IsError {
		var zero Out
		return zero, &ToolError{Name: name, Result: res}
	}
	out, err := StructuredContent[Out](res)
	if errors.Is(err, ErrNoStructuredContent) {
		return out, errorf("tool %s: %w", name, err)
	}
	return out, err
}
