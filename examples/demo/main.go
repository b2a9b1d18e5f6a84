// Command demo runs an MCP client that starts an MCP server as a child
// process over stdio, calls a long tool while drawing a live progress bar,
// then calls a silent tool with a short timeout and shows the server's
// handler observing the cancellation. On a terminal the bar is redrawn in
// place and fits its width; elsewhere each update is a plain line.
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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// progressBar draws progress in place on a terminal, fitted to its width
// and redrawn after a carriage return, and as plain lines elsewhere.
type progressBar struct {
	out      *os.File
	terminal bool
	drawn    bool
	cols     int // columns of the line on screen
}

func newProgressBar(out *os.File) *progressBar {
	fi, err := out.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	if _, ok := windowWidth(out); !ok && askWidth {
		terminal = false // a device such as /dev/null
	}
	return &progressBar{out: out, terminal: terminal}
}

func (b *progressBar) update(p mcp.Progress) {
	if !b.terminal {
		fmt.Fprintln(b.out, progressLine(p, -1))
		return
	}
	// One column short of the width, so the cursor never wraps: a wrapped
	// line cannot be redrawn from its start. The width is asked at every
	// update, since the terminal may be resized.
	cols := max(terminalWidth(b.out)-1, 0)
	line := progressLine(p, cols)
	n := utf8.RuneCountInString(line)
	// Spaces, not an escape sequence, clear what is left of a longer line.
	fmt.Fprint(b.out, "\r"+line+strings.Repeat(" ", max(min(b.cols, cols)-n, 0)))
	b.drawn, b.cols = true, n
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.out)
	}
}

// barCells bounds the bar: it is barCells wide when there is room, gives way
// to the message down to minBarCells, and is left out below that.
const barCells, minBarCells = 30, 10

// progressLine is one update as "[####......]  45% message", at most cols
// columns wide (no bound if cols < 0): the bar narrows for the message,
// then the message is cut, then the bar goes.
func progressLine(p mcp.Progress, cols int) string {
	frac := 0.0
	if p.Total > 0 {
		frac = max(min(p.Progress/p.Total, 1), 0)
	}
	pct := fmt.Sprintf("%3.0f%%", frac*100)
	msg := ""
	if p.Message != "" {
		msg = " " + p.Message
	}
	cells := barCells
	if cols >= 0 {
		// "[" cells "] " pct msg
		cells = min(barCells, max(cols-3-len(pct)-utf8.RuneCountInString(msg), minBarCells))
		if cells+3+len(pct) > cols {
			cells = 0
		}
	}
	line := pct + msg
	if cells > 0 {
		filled := int(frac * float64(cells))
		line = "[" + strings.Repeat("#", filled) + strings.Repeat(".", cells-filled) + "] " + line
	}
	if cols >= 0 && utf8.RuneCountInString(line) > cols {
		line = string([]rune(line)[:cols])
	}
	return line
}

// terminalWidth is the number of columns of the terminal f is on, as the
// system tells it, else as $COLUMNS says, else 80.
func terminalWidth(f *os.File) int {
	if n, ok := windowWidth(f); ok && n > 0 {
		return n
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}
