package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/e6ac58cb/mcp"
)

// A long call streams progress to a callback of its own. Every report the
// server sent before its result has been delivered when CallTool returns.
func ExampleWithProgress() {
	srv := mcp.NewServer(mcp.Implementation{Name: "indexer", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "reindex"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			req.Gateway().Progress(float64(i), 3, fmt.Sprintf("shard %d", i))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("reindexed")}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "reindex", nil, mcp.WithProgress(func(p mcp.Progress) {
		fmt.Printf("%g/%g %s\n", p.Progress, p.Total, p.Message)
	}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// 1/3 shard 1
	// 2/3 shard 2
	// 3/3 shard 3
	// reindexed
}

// Every request has two bounds: an idle timeout that each progress report
// of the call restarts, and a ceiling nothing extends.
func ExampleWithRequestTimeout() {
	srv := mcp.NewServer(mcp.Implementation{Name: "slow", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Busy for 300ms in all, but never silent for 200ms at a stretch.
		for i := 1; i <= 5; i++ {
			time.Sleep(60 * time.Millisecond)
			req.Gateway().Progress(float64(i), 5, "")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"},
		mcp.WithRequestTimeout(200*time.Millisecond), // idle bound
		mcp.WithMaxRequestTimeout(10*time.Second),    // ceiling
	)
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "chatty", nil, mcp.WithProgress(func(mcp.Progress) {}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: done
}

// A long call that reports no progress needs a wider idle bound of its own.
// WithTimeout may exceed the client's ceiling.
func ExampleWithTimeout() {
	srv := mcp.NewServer(mcp.Implementation{Name: "batch", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "export"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		time.Sleep(200 * time.Millisecond) // works quietly
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("exported")}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithRequestTimeout(50*time.Millisecond))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var res mcp.CallToolResult
	err := client.SendRequest(ctx, "tools/call", mcp.CallToolParams{Name: "export"}, &res,
		mcp.WithTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: exported
}

// When a bound elapses the call returns a *RequestTimeoutError naming the
// request and the bound; the server was told with notifications/cancelled.
func ExampleRequestTimeoutError() {
	srv := mcp.NewServer(mcp.Implementation{Name: "stuck", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "hang"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done() // cancelled by the client's notifications/cancelled
		return nil, ctx.Err()
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithProtocolVersion(mcp.Version20251125))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	_, err := client.CallTool(ctx, "hang", nil, mcp.WithTimeout(20*time.Millisecond))
	var timeout *mcp.RequestTimeoutError
	if errors.As(err, &timeout) {
		fmt.Println(timeout.Method, timeout.Bound, timeout.Timeout)
		fmt.Println(err)
	}
	// Output:
	// tools/call idle 20ms
	// request 2 (tools/call) went unanswered for 20ms
}

// A tool asks the user for input. On the older revisions this is a live
// request to the client; on 2026-07-28 the first Elicit returns
// ErrInputRequired, the handler returns it, and it runs again with the
// answer once the client (automatically) re-sends the call.
func ExampleClientGateway_Elicit() {
	srv := mcp.NewServer(mcp.Implementation{Name: "booking", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "book"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		schema := `{"type":"object","properties":{"seat":{"type":"string"}},"required":["seat"]}`
		answer, err := req.Gateway().Elicit(ctx, "Which seat?", []byte(schema))
		if err != nil {
			return nil, err // on 2026-07-28: ErrInputRequired, the round ends here
		}
		if answer.Action != mcp.ActionAccept {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("no booking")}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprint("booked ", answer.Content["seat"]))}}, nil
	})
	ctx := context.Background()
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		clientSide, serverSide := mcp.NewInMemoryTransports()
		go srv.Serve(ctx, serverSide)
		client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithProtocolVersion(version),
			mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"seat": "12A"}}, nil
			}))
		if err := client.Connect(ctx, clientSide); err != nil {
			log.Fatal(err)
		}
		res, err := client.CallTool(ctx, "book", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(version, res.Content[0].Text)
		client.Close()
	}
	// Output:
	// 2025-11-25 booked 12A
	// 2026-07-28 booked 12A
}

// url-mode elicitation sends the user somewhere else; the client must have
// declared it.
func ExampleClientGateway_ElicitURL() {
	srv := mcp.NewServer(mcp.Implementation{Name: "drive", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "connect"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g := req.Gateway()
		if !g.SupportsElicitationURL() {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("visit https://drive.example/connect")}}, nil
		}
		answer, err := g.ElicitURL(ctx, "Connect your drive", "https://drive.example/connect")
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("user said " + answer.Action)}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithURLElicitation(),
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			fmt.Println("open", p.URL, "?")
			return &mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		}))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "connect", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// open https://drive.example/connect ?
	// user said accept
}

// A tool borrows the client's model.
func ExampleClientGateway_Sample() {
	srv := mcp.NewServer(mcp.Implementation{Name: "summariser", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "summarise"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
			MaxTokens: 100,
			Messages:  []mcp.SamplingMessage{{Role: "user", Content: mcp.SamplingContent{mcp.TextContent("Summarise: MCP connects models to tools.")}}},
		})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(res.Model + ": " + res.Content[0].Text)}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"},
		mcp.WithSamplingHandler(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			prompt := p.Messages[0].Content[0].Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "tiny", Content: mcp.SamplingContent{mcp.TextContent(strings.ToUpper(prompt[11:14]))}}, nil
		}))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "summarise", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: tiny: MCP
}

// A tool asks which directories it may work on.
func ExampleClientGateway_ListRoots() {
	srv := mcp.NewServer(mcp.Implementation{Name: "files", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "where"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		roots, err := req.Gateway().ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(roots.Roots[0].URI)}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"},
		mcp.WithRoots(mcp.Root{URI: "file:///home/ada/project", Name: "project"}))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "where", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: file:///home/ada/project
}

// A client declares what it can answer by the handlers it is given; the
// same handlers serve live requests on the older revisions and the input
// rounds of 2026-07-28.
func ExampleNewClient_withHandlers() {
	client := mcp.NewClient(mcp.Implementation{Name: "desktop-app", Version: "2.0.0"},
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			// Show p.Message and a form built from p.RequestedSchema.
			return &mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}),
		mcp.WithSamplingHandler(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			// Ask the user to approve, then call the model.
			return &mcp.CreateMessageResult{Role: "assistant", Model: "my-model", Content: mcp.SamplingContent{mcp.TextContent("...")}}, nil
		}),
		mcp.WithRoots(mcp.Root{URI: "file:///workspace", Name: "workspace"}),
		mcp.WithRequestTimeout(30*time.Second),
	)
	srv := mcp.NewServer(mcp.Implementation{Name: "probe", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "caps"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g := req.Gateway()
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprint(g.SupportsElicitation(), g.SupportsSampling(), g.SupportsRoots(), g.SupportsElicitationURL()))}}, nil
	})
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(context.Background(), serverSide)
	if err := client.Connect(context.Background(), clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	res, err := client.CallTool(context.Background(), "caps", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: true true true false
}

// A typed tool: its input and output schemas come from Go types, its
// arguments are validated (defaults filled in) before the handler runs, and
// its result carries structured content with a JSON text copy for older
// clients. Invalid arguments come back as a tool error the model can read.
func ExampleAddTool() {
	type SearchArgs struct {
		Query string `json:"query" description:"What to look for." schema:"minLength=1"`
		Limit int    `json:"limit" schema:"minimum=1,maximum=50,default=10"`
	}
	type SearchResult struct {
		Hits []string `json:"hits"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "catalogue", Version: "1.0.0"})
	mcp.AddTool(srv, mcp.Tool{Name: "search", Description: "Searches the catalogue."},
		func(ctx context.Context, req *mcp.CallToolRequest, args SearchArgs) (SearchResult, error) {
			return SearchResult{Hits: []string{fmt.Sprintf("%s (%d at most)", args.Query, args.Limit)}}, nil
		})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "search", map[string]any{"query": "otters"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.StructuredContent))
	res, err = client.CallTool(ctx, "search", map[string]any{"query": "otters", "limit": 500})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError, res.Content[0].Text)
	// Output:
	// {"hits":["otters (10 at most)"]}
	// true invalid arguments: /limit: 500 is greater than the maximum 50
}

// The client reads a typed tool's output as a Go value; a failure of the
// tool is a *ToolError.
func ExampleCallToolAs() {
	type Args struct {
		A, B float64
	}
	type Quotient struct {
		Value float64 `json:"value"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "calculator", Version: "1.0.0"})
	mcp.AddTool(srv, mcp.Tool{Name: "divide"}, func(ctx context.Context, req *mcp.CallToolRequest, in Args) (Quotient, error) {
		if in.B == 0 {
			return Quotient{}, errors.New("division by zero")
		}
		return Quotient{Value: in.A / in.B}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	q, err := mcp.CallToolAs[Quotient](ctx, client, "divide", Args{A: 7, B: 2})
	fmt.Println(q.Value, err)
	_, err = mcp.CallToolAs[Quotient](ctx, client, "divide", Args{A: 1})
	var failed *mcp.ToolError
	fmt.Println(errors.As(err, &failed), err)
	// Output:
	// 3.5 <nil>
	// true mcp: tool divide failed: division by zero
}

// A resource template serves a family of URIs; the handler gets the
// variables matched in the one asked for, and reports a missing resource
// with ErrResourceNotFound.
func ExampleServer_AddResourceTemplate() {
	profiles := map[string]string{"42": "Ada, engineer"}
	srv := mcp.NewServer(mcp.Implementation{Name: "directory", Version: "1.0.0"})
	srv.AddResourceTemplate(mcp.ResourceTemplate{URITemplate: "users://{id}/profile", Name: "profile", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			profile, ok := profiles[req.Vars["id"]]
			if !ok {
				return nil, mcp.ErrResourceNotFound
			}
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{MIMEType: "text/plain", Text: profile}}}, nil
		})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.ReadResource(ctx, "users://42/profile")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Contents[0].URI, res.Contents[0].Text)
	_, err = client.ReadResource(ctx, "users://7/profile")
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		fmt.Println(rpcErr.Code, string(rpcErr.Data))
	}
	// Output:
	// users://42/profile Ada, engineer
	// -32602 {"uri":"users://7/profile"}
}

// A prompt with arguments; the server checks that the required ones are
// there before the handler runs.
func ExampleServer_AddPrompt() {
	srv := mcp.NewServer(mcp.Implementation{Name: "reviewer", Version: "1.0.0"})
	srv.AddPrompt(mcp.Prompt{
		Name:        "review",
		Description: "Asks for a code review.",
		Arguments: []mcp.PromptArgument{
			{Name: "code", Required: true},
			{Name: "focus", Description: "What to look at first."},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		text := "Review this code"
		if args["focus"] != "" {
			text += ", looking at " + args["focus"] + " first"
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
			{Role: "user", Content: mcp.TextContent(text + ":")},
			{Role: "user", Content: mcp.TextContent(args["code"])},
		}}, nil
	})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.GetPrompt(ctx, "review", map[string]string{"code": "x := 1", "focus": "naming"})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Messages {
		fmt.Println(m.Role, m.Content.Text)
	}
	_, err = client.GetPrompt(ctx, "review", nil)
	fmt.Println(err)
	// Output:
	// user Review this code, looking at naming first:
	// user x := 1
	// mcp: Invalid params: prompt "review" needs the argument "code" (code -32602)
}

// Completion suggests values for a prompt's arguments (or a resource
// template's variables) as the user types; the other arguments already
// filled in come as context.
func ExampleWithCompletionHandler() {
	languages := []string{"go", "gleam", "haskell", "python"}
	srv := mcp.NewServer(mcp.Implementation{Name: "snippets", Version: "1.0.0"},
		mcp.WithCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, l := range languages {
				if strings.HasPrefix(l, req.Params.Argument.Value) {
					values = append(values, l)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.Completion{Values: values}}, nil
		}))
	srv.AddPrompt(mcp.Prompt{Name: "snippet", Arguments: []mcp.PromptArgument{{Name: "language", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Write " + req.Params.Arguments["language"])}}}, nil
		})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.Complete(ctx, &mcp.CompleteParams{
		Ref:      mcp.PromptReference("snippet"),
		Argument: mcp.CompleteArgument{Name: "language", Value: "g"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Completion.Values)
	// Output: [go gleam]
}

// Tools iterates over every tool, fetching pages as the loop needs them.
func ExampleClient_Tools() {
	srv := mcp.NewServer(mcp.Implementation{Name: "toolbox", Version: "1.0.0"}, mcp.WithPageSize(2))
	for _, name := range []string{"hammer", "saw", "drill", "level", "chisel"} {
		srv.AddTool(mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	for tool, err := range client.Tools(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name)
	}
	// Output:
	// hammer
	// saw
	// drill
	// level
	// chisel
}

// Subscribing to a resource works on every revision: resources/subscribe on
// the older ones, a subscriptions/listen stream on 2026-07-28.
func ExampleClient_Subscribe() {
	srv := mcp.NewServer(mcp.Implementation{Name: "config", Version: "1.0.0"})
	srv.AddResource(mcp.Resource{URI: "config://app", Name: "app config"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{Text: "debug=true"}}}, nil
		})
	ctx := context.Background()
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		updated := make(chan string, 1)
		clientSide, serverSide := mcp.NewInMemoryTransports()
		go srv.Serve(ctx, serverSide)
		client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithProtocolVersion(version),
			mcp.WithResourceUpdatedHandler(func(ctx context.Context, uri string) { updated <- uri }))
		if err := client.Connect(ctx, clientSide); err != nil {
			log.Fatal(err)
		}
		if err := client.Subscribe(ctx, "config://app"); err != nil {
			log.Fatal(err)
		}
		srv.ResourceUpdated("config://app")
		fmt.Println(version, <-updated)
		client.Close()
	}
	// Output:
	// 2025-11-25 config://app
	// 2026-07-28 config://app
}

// A server is an http.Handler: mount it on any mux, behind any middleware.
// One endpoint serves every protocol revision. Here httptest stands in for
// an http.Server (in production, one with ReadHeaderTimeout, ReadTimeout and
// IdleTimeout set), and a client connects over Streamable HTTP.
func ExampleNewHTTPHandler() {
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("hello over " + req.ProtocolVersion())}}, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv,
		mcp.WithAllowedOrigins("https://app.example.com"), // browsers from elsewhere get 403
		mcp.WithSessionTimeout(5*time.Minute),             // idle legacy sessions end
	))
	httpServer := httptest.NewServer(mux)
	defer httpServer.Close()

	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithProtocolVersion(version))
		if err := client.Connect(context.Background(), mcp.NewHTTPTransport(httpServer.URL+"/mcp")); err != nil {
			log.Fatal(err)
		}
		res, err := client.CallTool(context.Background(), "greet", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].Text)
		client.Close()
	}
	// Output:
	// hello over 2025-11-25
	// hello over 2026-07-28
}

// A client connects to a remote server by URL. It tries 2026-07-28 first
// and falls back to the initialize handshake by itself; options add
// headers (a bearer token here) or replace the http.Client.
func ExampleNewHTTPTransport() {
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "forecast"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Gateway().Progress(1, 2, "fetching")
		req.Gateway().Progress(2, 2, "done")
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("sunny")}}, nil
	})
	remote := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithAuthorizer(mcp.AuthorizerFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			return "", errors.New("a valid bearer token is required")
		}
		return "the token's user", nil
	}))))
	defer remote.Close()

	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	transport := mcp.NewHTTPTransport(remote.URL,
		mcp.WithHeader("Authorization", "Bearer s3cret"),
		mcp.WithHTTPClient(&http.Client{Transport: http.DefaultTransport}))
	if err := client.Connect(context.Background(), transport); err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	fmt.Println("speaking", client.ProtocolVersion())
	res, err := client.CallTool(context.Background(), "forecast", nil,
		mcp.WithProgress(func(p mcp.Progress) { fmt.Println(p.Progress, p.Message) }),
		mcp.WithTimeout(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// speaking 2026-07-28
	// 1 fetching
	// 2 done
	// sunny
}

// A tool that may take long says it may run as a task. Its handler is an
// ordinary one: when a client asks for a task, the call answers at once
// with the task, the handler runs on detached, its progress message
// becomes the task's status message, and the client reads the result
// later. Here a 2025-11-25 client drives the task methods by hand.
func ExampleServer_taskTool() {
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, mcp.WithTasks(mcp.TaskOptions{}))
	type reportIn struct {
		Month string `json:"month"`
	}
	mcp.AddTool(srv, mcp.Tool{Name: "build_report", Description: "Builds the monthly report; it takes a while.",
		Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest, in reportIn) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(1, 2, "adding up "+in.Month)
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("report for " + in.Month + ": 42")}}, nil
		})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"}, mcp.WithProtocolVersion(mcp.Version20251125))
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
	}
	err := client.SendRequest(ctx, "tools/call", map[string]any{
		"name": "build_report", "arguments": map[string]any{"month": "May"}, "task": map[string]any{},
	}, &created)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task:", created.Task.Status)

	// tasks/result waits for the task to end, then gives the call's result.
	var result mcp.CallToolResult
	if err := client.SendRequest(ctx, "tasks/result", map[string]any{"taskId": created.Task.TaskID}, &result); err != nil {
		log.Fatal(err)
	}
	fmt.Println(result.Content[0].Text)
	// Output:
	// task: working
	// report for May: 42
}

// A tool call may run as a task: the server answers at once with a
// handle and does the work in the background. CallTool waits on the task
// as if the call were synchronous, reporting the task's status messages
// as progress; WithTask asks for a task, and a tool that requires one is
// called as one anyway.
func ExampleClient_CallTool_task() {
	seen := make(chan bool, 1) // the handler ends once the client saw its status
	srv := mcp.NewServer(mcp.Implementation{Name: "studio", Version: "1.0.0"},
		mcp.WithTasks(mcp.TaskOptions{PollInterval: 100 * time.Millisecond}))
	srv.AddTool(mcp.Tool{Name: "render", Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Gateway().Progress(40, 80, "rendering frame 40 of 80") // the task's status message
			<-seen
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("video.mp4 is ready")}}, nil
		})
	ctx := context.Background()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, serverSide)
	client := mcp.NewClient(mcp.Implementation{Name: "app", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "render", map[string]any{"scene": "intro"},
		mcp.WithTask(time.Hour),
		mcp.WithProgress(func(p mcp.Progress) {
			fmt.Println("status:", p.Message)
			seen <- true
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// status: rendering frame 40 of 80
	// video.mp4 is ready
}
