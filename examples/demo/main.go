// Command demo runs an MCP client that starts an MCP server as a child
// process over stdio, calls a long tool while drawing a live progress bar,
// then calls a silent tool with a short timeout and shows the server's
// handler observing the cancellation.
//
//	go run ./examples/demo
//
// The same binary is the server: started with -server, it serves over its
// standard input and output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	serve := flag.Bool("server", false, "serve over stdio instead of running the client")
	steps := flag.Int("steps", 20, "steps of the long tool")
	flag.Parse()
	if *serve {
		if err := runServer(); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := runClient(*steps); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// cancellations records what the server's handlers saw, for the stats tool.
var cancellations struct {
	sync.Mutex
	last string
}

func runServer() error {
	srv := mcp.NewServer(mcp.Implementation{Name: "demo-server", Version: "1.0.0"})
	srv.AddTool(mcp.Tool{Name: "reindex", Description: "Reindexes, reporting progress at every step."},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Steps int `json:"steps"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Steps <= 0 {
				args.Steps = 20
			}
			for i := 1; i <= args.Steps; i++ {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				req.Gateway().Progress(float64(i), float64(args.Steps), fmt.Sprintf("shard %d of %d", i, args.Steps))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprintf("reindexed %d shards", args.Steps))}}, nil
		})
	srv.AddTool(mcp.Tool{Name: "silent", Description: "Works for 10s without a word."},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				cancellations.Lock()
				cancellations.last = context.Cause(ctx).Error()
				cancellations.Unlock()
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
			}
		})
	srv.AddTool(mcp.Tool{Name: "last_cancellation", Description: "Says how the last cancelled handler ended."},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cancellations.Lock()
			defer cancellations.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(cancellations.last)}}, nil
		})
	return srv.Serve(context.Background(), mcp.StdioTransport())
}

func runClient(steps int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	client := mcp.NewClient(mcp.Implementation{Name: "demo-client", Version: "1.0.0"},
		mcp.WithRequestTimeout(5*time.Second))
	if err := client.Connect(ctx, mcp.NewCommandTransport(exec.Command(self, "-server"))); err != nil {
		return err
	}
	defer client.Close()
	fmt.Printf("connected to %s over stdio (protocol %s)\n", client.ServerInfo().Name, client.ProtocolVersion())

	bar := newProgressBar(os.Stdout)
	res, err := client.CallTool(ctx, "reindex", map[string]int{"steps": steps}, mcp.WithProgress(bar.update))
	bar.finish()
	if err != nil {
		return err
	}
	fmt.Println("result:", res.Content[0].Text)

	fmt.Println("calling a silent tool with a 300ms timeout...")
	_, err = client.CallTool(ctx, "silent", nil, mcp.WithTimeout(300*time.Millisecond))
	var timeout *mcp.RequestTimeoutError
	if !errors.As(err, &timeout) {
		return fmt.Errorf("expected a timeout, got %v", err)
	}
	fmt.Printf("timed out: %v (bound: %s)\n", timeout, timeout.Bound)

	// The server saw notifications/cancelled; give its handler a moment to
	// record it, then ask.
	for range 50 {
		res, err = client.CallTool(ctx, "last_cancellation", nil)
		if err != nil {
			return err
		}
		if text := res.Content[0].Text; text != "" {
			fmt.Println("server handler observed:", text)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("the server never observed the cancellation")
}

// progressBar draws progress in place on a terminal and as lines elsewhere.
type progressBar struct {
	out      *os.File
	terminal bool
	drawn    bool
}

func newProgressBar(out *os.File) *progressBar {
	fi, err := out.Stat()
	return &progressBar{out: out, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (b *progressBar) update(p mcp.Progress) {
	const width = 30
	frac := 0.0
	if p.Total > 0 {
		frac = min(p.Progress/p.Total, 1)
	}
	filled := int(frac * width)
	line := fmt.Sprintf("[%s%s] %3.0f%% %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), frac*100, p.Message)
	if b.terminal {
		fmt.Fprintf(b.out, "\r\033[K%s", line)
		b.drawn = true
		return
	}
	fmt.Fprintln(b.out, line)
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.out)
	}
}
