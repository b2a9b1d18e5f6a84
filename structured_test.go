package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type sumArgs struct {
	A, B int
}

type sumOut struct {
	Sum int `json:"sum"`
}

// TestCallToolAsDecodesTheTypedOutput: a typed tool's Out comes back as a
// Go value on both eras; a failure is a *ToolError with the tool's text,
// and a result without structured content says so.
func TestCallToolAsDecodesTheTypedOutput(t *testing.T) {
	t.Parallel()
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	AddTool(srv, Tool{Name: "sum"}, func(ctx context.Context, req *CallToolRequest, in sumArgs) (sumOut, error) {
		if in.A < 0 {
			return sumOut{}, errors.New("a must not be negative")
		}
		return sumOut{Sum: in.A + in.B}, nil
	})
	srv.AddTool(Tool{Name: "plain"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("no structure")}}, nil
	})
	for _, v := range []string{Version20251125, Version20260728} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cl := pair(t, srv, WithProtocolVersion(v))
			ctx := context.Background()
			out, err := CallToolAs[sumOut](ctx, cl, "sum", sumArgs{A: 2, B: 3})
			if err != nil || out.Sum != 5 {
				t.Fatalf("sum: %+v, %v", out, err)
			}
			res, err := cl.CallTool(ctx, "sum", sumArgs{A: 4, B: 4})
			if err != nil {
				t.Fatal(err)
			}
			if m, err := StructuredContent[map[string]int](res); err != nil || m["sum"] != 8 {
				t.Fatalf("StructuredContent: %v, %v", m, err)
			}
			if _, err := StructuredContent[[]string](res); err == nil || !strings.Contains(err.Error(), "decoding the structured content into []string") {
				t.Fatalf("a result that does not fit: %v", err)
			}
			_, err = CallToolAs[sumOut](ctx, cl, "sum", sumArgs{A: -1})
			var te *ToolError
			if !errors.As(err, &te) || te.Name != "sum" || err.Error() != "mcp: tool sum failed: a must not be negative" {
				t.Fatalf("a failing tool: %v", err)
			}
			if _, err := CallToolAs[sumOut](ctx, cl, "plain", nil); !errors.Is(err, ErrNoStructuredContent) || err.Error() != "mcp: tool plain: the tool result has no structured content" {
				t.Fatalf("no structured content: %v", err)
			}
			if _, err := StructuredContent[sumOut](nil); !errors.Is(err, ErrNoStructuredContent) {
				t.Fatalf("nil result: %v", err)
			}
		})
	}
}
