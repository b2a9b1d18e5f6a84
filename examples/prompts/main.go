// Command prompts shows a server offering prompts, templates of messages
// a user picks (a slash command, say) and fills in, and completing their
// arguments as the user types.
//
//	go run ./examples/prompts
//
// Client and server run in one process over an in-memory connection; the
// program lists the prompts, completes arguments, gets a prompt filled in
// and exits 0.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"text/template"

	"github.com/e6ac58cb/mcp"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("prompts: ")
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer) error {
	clientSide, serverSide := mcp.NewInMemoryTransports()
	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	go newServer().Serve(serverCtx, serverSide)

	client := mcp.NewClient(mcp.Implementation{Name: "prompts-example", Version: "1.0.0"})
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	defer client.Close()

	// What a client shows in its menu of prompts.
	for p, err := range client.Prompts(ctx) {
		if err != nil {
			return err
		}
		var args []string
		for _, a := range p.Arguments {
			if !a.Required {
				a.Name = "[" + a.Name + "]"
			}
			args = append(args, a.Name)
		}
		fmt.Fprintf(w, "/%s %s: %s\n", p.Name, strings.Join(args, " "), p.Description)
	}

	// As the user types an argument, the client asks for completions. The
	// arguments already filled in come along as context, so that one
	// argument's suggestions can depend on another's value.
	for _, c := range []struct {
		prompt, arg, typed string
		language           string // filled in already, or ""
	}{
		{"code_review", "language", "g", ""},
		{"code_review", "style", "", "go"},
		{"code_review", "style", "p", "python"},
		{"commit_message", "kind", "f", ""},
	} {
		params := &mcp.CompleteParams{
			Ref:      mcp.PromptReference(c.prompt),
			Argument: mcp.CompleteArgument{Name: c.arg, Value: c.typed},
		}
		given := ""
		if c.language != "" {
			params.Context = &mcp.CompleteContext{Arguments: map[string]string{"language": c.language}}
			given = " (language=" + c.language + ")"
		}
		res, err := client.Complete(ctx, params)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "complete /%s %s=%q%s: %s\n", c.prompt, c.arg, c.typed, given, strings.Join(res.Completion.Values, ", "))
	}

	// The server checks the argument exists before the handler runs.
	_, err := client.Complete(ctx, &mcp.CompleteParams{
		Ref:      mcp.PromptReference("commit_message"),
		Argument: mcp.CompleteArgument{Name: "scope"},
	})
	fmt.Fprintln(w, "complete /commit_message scope:", err)

	// The user picked values: the server fills them in.
	prompt, err := client.GetPrompt(ctx, "code_review", map[string]string{
		"language": "go", "style": "effective-go", "code": "func add(a, b int) int { return a + b }",
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "code_review:", prompt.Description)
	for _, m := range prompt.Messages {
		fmt.Fprintf(w, "  %s: %s\n", m.Role, m.Content.Text)
	}

	commit, err := client.GetPrompt(ctx, "commit_message", map[string]string{"kind": "fix", "summary": "close the file on error"})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "commit_message:", commit.Messages[0].Content.Text)

	// A required argument left out is refused before the handler runs.
	_, err = client.GetPrompt(ctx, "commit_message", map[string]string{"kind": "fix"})
	fmt.Fprintln(w, "commit_message without a summary:", err)
	return nil
}

var (
	languages = []string{"gleam", "go", "haskell", "python", "rust"}
	styles    = map[string][]string{
		"go":     {"effective-go", "google-go", "uber-go"},
		"python": {"black", "google-python", "pep8"},
	}
	commitKinds = []string{"docs", "feat", "fix", "refactor", "test"}
)

func newServer() *mcp.Server {
	// The completion handler serves every prompt's arguments. The server
	// has already checked that the prompt and the argument exist.
	srv := mcp.NewServer(mcp.Implementation{Name: "prompt-library", Version: "1.0.0"},
		mcp.WithCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var candidates []string
			switch req.Params.Ref.Name + "." + req.Params.Argument.Name {
			case "code_review.language":
				candidates = languages
			case "code_review.style":
				if req.Params.Context != nil {
					candidates = styles[req.Params.Context.Arguments["language"]]
				}
			case "commit_message.kind":
				candidates = commitKinds
			}
			// Suggest what starts with what the user typed. (The server
			// sends at most 100 values, with hasMore set, if there are more.)
			var values []string
			for _, c := range candidates {
				if strings.HasPrefix(c, req.Params.Argument.Value) {
					values = append(values, c)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.Completion{Values: values, Total: len(values)}}, nil
		}))

	srv.AddPrompt(mcp.Prompt{
		Name:        "code_review",
		Description: "Asks for a review of a piece of code.",
		Arguments: []mcp.PromptArgument{
			{Name: "language", Description: "The code's language.", Required: true},
			{Name: "code", Description: "The code to review.", Required: true},
			{Name: "style", Description: "A style guide to hold it to."},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		ask := "Review this " + args["language"] + " code"
		if args["style"] != "" {
			ask += " against the " + args["style"] + " style guide"
		}
		return &mcp.GetPromptResult{
			Description: "A review of " + args["language"] + " code",
			Messages: []mcp.PromptMessage{
				{Role: "user", Content: mcp.TextContent(ask + ":")},
				{Role: "user", Content: mcp.TextContent(args["code"])},
			},
		}, nil
	})

	// A prompt whose one message is a text/template, filled in with the
	// arguments: a way to keep many prompts as data.
	addTemplatePrompt(srv, mcp.Prompt{
		Name:        "commit_message",
		Description: "Drafts a conventional commit message.",
		Arguments: []mcp.PromptArgument{
			{Name: "kind", Description: "feat, fix, docs, refactor or test.", Required: true},
			{Name: "summary", Description: "What the change does.", Required: true},
		},
	}, "Write a commit message starting {{.kind}}: for this change: {{.summary}}")
	return srv
}

// addTemplatePrompt registers a prompt of one user message, text (a
// text/template) executed with the prompt's arguments.
func addTemplatePrompt(srv *mcp.Server, p mcp.Prompt, text string) {
	tmpl := template.Must(template.New(p.Name).Option("missingkey=zero").Parse(text))
	srv.AddPrompt(p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		var b strings.Builder
		if err := tmpl.Execute(&b, req.Params.Arguments); err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(b.String())}}}, nil
	})
}
