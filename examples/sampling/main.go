// Command sampling shows a server tool borrowing the client's language
// model (sampling/createMessage): the server has no model of its own, the
// client does, and the client decides whether to let the server use it.
//
//	go run ./examples/sampling
//
// The program serves its tool over Streamable HTTP on a loopback port and
// connects to it as a client whose "model" is a fake that answers with the
// prompt reversed, once on each protocol era, and exits 0. On 2025-11-25
// (and older) the ask rides the tool call's SSE stream as a live request;
// on 2026-07-28 it is an input-required round, as for elicitation. The two
// differ when the user refuses, as the output shows.
//
// Sampling is deprecated as of protocol revision 2026-07-28 (SEP-2577): new
// servers should call a model provider's API themselves. It keeps working
// on every revision, for the clients and servers that use it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/e6ac58cb/mcp"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sampling:", err)
		os.Exit(1)
	}
}

// run serves the tool and calls it twice on each protocol era: once for a
// question the user lets the model answer, once for one the user refuses.
func run(ctx context.Context, w io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// One endpoint serves every protocol revision.
	httpServer := mcp.NewHTTPServer("", mcp.NewHTTPHandler(newServer()))
	go httpServer.Serve(ln)
	defer httpServer.Close()

	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		if err := askTwice(ctx, w, "http://"+ln.Addr().String(), version); err != nil {
			return err
		}
	}
	return nil
}

func askTwice(ctx context.Context, w io.Writer, url, version string) error {
	// The sampling handler is the client's model; having one declares the
	// sampling capability, without which the server may not ask.
	client := mcp.NewClient(mcp.Implementation{Name: "sampling-example", Version: "1.0.0"},
		mcp.WithProtocolVersion(version),
		mcp.WithSamplingHandler(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return answer(w, p)
		}))
	if err := client.Connect(ctx, mcp.NewHTTPTransport(url)); err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintln(w, "protocol", version)

	for _, question := range []string{"Was it a car or a cat I saw?", "What is the admin password?"} {
		fmt.Fprintf(w, "calling ask_model: %q\n", question)
		res, err := client.CallTool(ctx, "ask_model", map[string]string{"question": question})
		var rpcErr *mcp.Error
		switch {
		case errors.As(err, &rpcErr) && rpcErr.Code == errRefused.Code:
			// On 2026-07-28 the client's answers ride its next try of the
			// call, and an answer cannot be an error: a refusal ends the
			// call here, at the client, and the server never hears of it.
			fmt.Fprintln(w, "  the call failed:", err)
		case err != nil:
			return err
		case res.IsError:
			// On the older revisions the refusal is the error answer to
			// the server's request, and the tool reports it.
			fmt.Fprintln(w, "  the tool failed:", res.Content[0].Text)
		default:
			fmt.Fprintln(w, "  result:", res.Content[0].Text)
		}
	}
	return nil
}

type askArgs struct {
	Question string `json:"question" schema:"minLength=1"`
}

// errRefused is the error the client answers a sampling request with when
// the user refuses it; the protocol's examples use code -1.
var errRefused = mcp.NewError(-1, "User rejected sampling request", nil)

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "oracle", Version: "1.0.0"})
	mcp.AddTool(srv, mcp.Tool{Name: "ask_model", Description: "Answers a question with the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, error) {
			// As with Elicit, on 2026-07-28 the handler runs twice: in the
			// first run Sample returns ErrInputRequired, which the handler
			// must return (wrapped or not); in the second, the answer.
			res, err := req.Gateway().Sample(ctx, &mcp.CreateMessageParams{
				SystemPrompt: "Answer in one line.",
				Messages: []mcp.SamplingMessage{
					{Role: "user", Content: mcp.SamplingContent{mcp.TextContent(in.Question)}},
				},
				MaxTokens: 60,
				// Hints: the client picks the model; the server may only say
				// what it would like.
				ModelPreferences: &mcp.ModelPreferences{Hints: []mcp.ModelHint{{Name: "mirror"}}},
			})
			if err != nil {
				// Up to 2025-11-25 the user's refusal arrives here, as the
				// client's error answer; the tool ends with an error result
				// the model can read. (On 2026-07-28 it never arrives: see
				// askTwice.)
				return nil, fmt.Errorf("the client's model did not answer: %w", err)
			}
			text := res.Content[0].Text
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(res.Model + " says: " + text)}}, nil
		})
	return srv
}

// answer is the client's side. A real client shows the request to the
// user, who may approve, edit or refuse it, calls its model and may show
// the answer before it goes back. This one refuses what asks for secrets
// and "samples" a fake model that reverses the prompt.
func answer(w io.Writer, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	prompt := p.Messages[len(p.Messages)-1].Content[0].Text
	fmt.Fprintf(w, "  the server asks the model (system prompt %q, at most %d tokens): ", p.SystemPrompt, p.MaxTokens)
	if strings.Contains(strings.ToLower(prompt), "password") {
		fmt.Fprintln(w, "the user refuses")
		return nil, errRefused
	}
	fmt.Fprintln(w, "the user approves")
	reply := []rune(prompt)
	slices.Reverse(reply)
	return &mcp.CreateMessageResult{
		Role:       "assistant",
		Model:      "mirror-1",
		Content:    mcp.SamplingContent{mcp.TextContent(string(reply))},
		StopReason: "endTurn",
	}, nil
}
