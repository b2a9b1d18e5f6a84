// Command upstream is the MCP server the proxy's tests put behind the
// proxy: a few tools (one reports progress, one fails, one waits until it
// is cancelled, one adds a tool), a resource, a resource template, a prompt
// and completion. It serves stdio, or Streamable HTTP with -http, printing
// "serving MCP at <url>" to standard error once it listens.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/e6ac58cb/mcp"
)

func main() {
	listen := flag.String("http", "", "serve Streamable HTTP at `address` instead of stdio")
	flag.Parse()
	srv := newServer()
	if *listen == "" {
		if err := srv.Serve(context.Background(), mcp.StdioTransport()); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv))
	fmt.Fprintf(os.Stderr, "serving MCP at http://%s/mcp\n", ln.Addr())
	log.Fatal(mcp.NewHTTPServer("", mux).Serve(ln))
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(s)}}
}

type echoIn struct {
	Text string `json:"text"`
}

type countIn struct {
	N int `json:"n"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "upstream", Version: "0.1.0"},
		mcp.WithInstructions("An upstream for the proxy's tests."),
		// Pages of two, so that the proxy must read every page.
		mcp.WithPageSize(2),
		mcp.WithCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range []string{"Ada", "Alan", "Grace"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.Completion{Values: values}}, nil
		}))

	mcp.AddTool(srv, mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, error) {
			return text("echo: " + in.Text), nil
		})
	mcp.AddTool(srv, mcp.Tool{Name: "count", Description: "Counts to n, reporting each step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.N; i++ {
				req.Gateway().Progress(float64(i), float64(in.N), fmt.Sprintf("step %d of %d", i, in.N))
			}
			return text(fmt.Sprintf("counted to %d", in.N)), nil
		})
	mcp.AddTool(srv, mcp.Tool{Name: "fail", Description: "Fails."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("the upstream tool failed")
		})
	mcp.AddTool(srv, mcp.Tool{Name: "wait", Description: "Reports that it waits, then waits until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(1, 0, "waiting")
			<-ctx.Done()
			// The tests read this line to see the cancellation arrive.
			fmt.Fprintf(os.Stderr, "wait: cancelled: %v\n", context.Cause(ctx))
			return nil, ctx.Err()
		})
	mcp.AddTool(srv, mcp.Tool{Name: "add_tool", Description: "Adds a tool named added, which says so."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			srv.AddTool(mcp.Tool{Name: "added"}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("I was added"), nil
			})
			return text("added a tool"), nil
		})

	srv.AddResource(mcp.Resource{URI: "upstream://motd", Name: "motd", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from upstream"}}}, nil
		})
	srv.AddResourceTemplate(mcp.ResourceTemplate{URITemplate: "upstream://items/{id}", Name: "item", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + req.Vars["id"]}}}, nil
		})
	srv.AddPrompt(mcp.Prompt{Name: "greeting", Arguments: []mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Say hello to " + req.Params.Arguments["name"])}}}, nil
		})
	return srv
}
