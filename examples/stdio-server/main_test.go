package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestMain lets the test binary stand in for the program: started with
// STDIO_SERVER_MAIN=1 in its environment it runs main, serving over its
// standard input and output, and exits as main would.
func TestMain(m *testing.M) {
	if os.Getenv("STDIO_SERVER_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command returns a command that runs the program.
func command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "STDIO_SERVER_MAIN=1")
	return cmd
}

// TestStdioServer runs the program as a client would: a child process
// spoken to over its standard input and output, on both protocol eras;
// then as a shell pipe would, with input that ends.
func TestStdioServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			client := mcp.NewClient(mcp.Implementation{Name: "test", Version: "1"}, mcp.WithProtocolVersion(version))
			if err := client.Connect(ctx, mcp.NewCommandTransport(command(ctx))); err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if got := client.ServerInfo().Name; got != "stdio-server" {
				t.Errorf("server name %q", got)
			}
			var names []string
			for tool, err := range client.Tools(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
				if len(tool.OutputSchema) == 0 {
					t.Errorf("%s has no output schema", tool.Name)
				}
			}
			if strings.Join(names, " ") != "convert_temperature count_words" {
				t.Errorf("tools %v", names)
			}

			temp, err := mcp.CallToolAs[temperature](ctx, client, "convert_temperature", map[string]any{"value": 100, "from": "celsius"})
			if err != nil || temp != (temperature{Value: 212, Unit: "fahrenheit"}) {
				t.Errorf("100 celsius: %+v, %v", temp, err)
			}
			count, err := mcp.CallToolAs[wordCount](ctx, client, "count_words", map[string]any{"text": "Go is expressive, concise, clean."})
			if err != nil || count != (wordCount{Words: 5, Longest: "expressive"}) {
				t.Errorf("count_words: %+v, %v", count, err)
			}

			// Arguments outside the schema, and a failing handler, are
			// tool results with IsError set: the model reads them.
			for args, want := range map[string]string{
				`{"value":1,"from":"kelvin"}`: "invalid arguments: /from:",
				`{"value":1}`:                 "invalid arguments:",
			} {
				res, err := client.CallTool(ctx, "convert_temperature", []byte(args))
				if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].Text, want) {
					t.Errorf("convert_temperature %s: %+v, %v; want an error starting %q", args, res, err, want)
				}
			}
			res, err := client.CallTool(ctx, "count_words", map[string]any{"text": "..."})
			if err != nil || !res.IsError || res.Content[0].Text != `"..." has no words` {
				t.Errorf("count_words of no words: %+v, %v", res, err)
			}
		})
	}

	t.Run("pipe", func(t *testing.T) {
		// Three messages, then the end of input: the server answers and
		// exits 0, with nothing on standard error.
		cmd := command(ctx)
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"convert_temperature","arguments":{"value":-40,"from":"fahrenheit"}}}
`)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v; stderr:\n%s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], `"id":2`) || !strings.Contains(lines[1], `"structuredContent":{"value":-40,"unit":"celsius"}`) {
			t.Errorf("stdout:\n%s", stdout.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("stderr:\n%s", stderr.String())
		}
	})
}
