// Command stdio-server is an MCP server with two tools, served over its
// standard input and output: the way a desktop app or an IDE runs a local
// server, as a child process it talks to through pipes.
//
//	go run ./examples/stdio-server
//
// Run by hand it waits for JSON-RPC messages on standard input, one per
// line, and exits 0 when standard input ends (Ctrl-D); its test starts it
// as a child process with mcp.NewCommandTransport, as a client would.
// Standard output carries the protocol, so anything else (logs) goes to
// standard error.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"unicode"

	"github.com/e6ac58cb/mcp"
)

// convertArgs are the arguments of convert_temperature. The tags make the
// input schema that clients see, and the server checks every call against
// it before the handler runs: an unknown unit never reaches the handler.
type convertArgs struct {
	Value float64 `json:"value" description:"The temperature to convert."`
	From  string  `json:"from" description:"The unit of value." schema:"enum=celsius|fahrenheit"`
}

// temperature is convert_temperature's result. As the handler's output
// type it also gives the tool its output schema, and it travels as
// structured content, with a JSON text copy for older clients.
type temperature struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

type countArgs struct {
	Text string `json:"text" description:"The text to count the words of." schema:"minLength=1"`
}

type wordCount struct {
	Words   int    `json:"words"`
	Longest string `json:"longest"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("stdio-server: ")
	if err := newServer().Serve(context.Background(), mcp.StdioTransport()); err != nil {
		log.Fatal(err)
	}
	// Serve returned nil: the client closed our standard input.
}

// newServer registers the tools. mcp.AddTool infers each tool's input
// and output schemas from the handler's Go types.
func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "stdio-server", Version: "1.0.0"},
		mcp.WithInstructions("Converts temperatures and counts words."))

	mcp.AddTool(srv, mcp.Tool{Name: "convert_temperature", Description: "Converts between Celsius and Fahrenheit."},
		func(ctx context.Context, req *mcp.CallToolRequest, in convertArgs) (temperature, error) {
			if in.From == "celsius" {
				return temperature{Value: in.Value*9/5 + 32, Unit: "fahrenheit"}, nil
			}
			return temperature{Value: (in.Value - 32) * 5 / 9, Unit: "celsius"}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "count_words", Description: "Counts the words of a text and finds the longest."},
		func(ctx context.Context, req *mcp.CallToolRequest, in countArgs) (wordCount, error) {
			words := strings.FieldsFunc(in.Text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
			if len(words) == 0 {
				// An error that is not an *mcp.Error becomes a tool result
				// with IsError set, which the model can read and act on.
				return wordCount{}, fmt.Errorf("%q has no words", in.Text)
			}
			c := wordCount{Words: len(words)}
			for _, w := range words {
				if len(w) > len(c.Longest) {
					c.Longest = w
				}
			}
			return c, nil
		})
	return srv
}
