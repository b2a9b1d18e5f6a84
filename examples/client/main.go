// Command client shows how an MCP client bounds its calls: progress that
// keeps a long call alive, the idle timeout that progress restarts
// (WithRequestTimeout), the ceiling that nothing extends
// (WithMaxRequestTimeout), a per-call timeout (WithTimeout), and
// cancellation through the call's context.
//
//	go run ./examples/client
//
// To stay self-contained it serves its own tools in the same process, over
// an in-memory connection; connect to a real server by giving Connect a
// CommandTransport or an HTTPTransport instead. It runs for about six
// seconds, as the timeouts it shows take time to elapse, and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/e6ac58cb/mcp"
)

// The client's two bounds, short so that the program shows them quickly.
// Defaults are 60s and 600s.
const (
	idle    = time.Second     // how long a call may go without a word
	ceiling = 2 * time.Second // how long a call may run, progress or not
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	// The server tells us, for the show, when a handler stops early and
	// why; a real client cannot see that.
	stopped := make(chan string, 1)
	clientSide, serverSide := mcp.NewInMemoryTransports()
	serving := make(chan error, 1)
	go func() { serving <- newServer(stopped).Serve(ctx, serverSide) }()

	client := mcp.NewClient(mcp.Implementation{Name: "client-example", Version: "1.0.0"},
		mcp.WithRequestTimeout(idle),
		mcp.WithMaxRequestTimeout(ceiling))
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	fmt.Fprintf(w, "connected to %s (protocol %s); idle bound %v, ceiling %v\n",
		client.ServerInfo().Name, client.ProtocolVersion(), idle, ceiling)

	// serverSaw prints why the server's handler stopped, once it has.
	serverSaw := func() error {
		select {
		case why := <-stopped:
			fmt.Fprintln(w, "   the server's handler stopped:", why)
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the server's handler never stopped")
		}
	}
	printProgress := func(p mcp.Progress) { fmt.Fprintf(w, "   %g/%g %s\n", p.Progress, p.Total, p.Message) }

	// 1. A call that reports progress outlives the idle bound: each report
	// restarts it.
	fmt.Fprintln(w, "1. reindex: 1.2s of work, reporting progress every 150ms")
	res, err := client.CallTool(ctx, "reindex", nil, mcp.WithProgress(printProgress))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "   result:", res.Content[0].Text)

	// 2. A call that works quietly for longer than the idle bound needs a
	// timeout of its own. WithTimeout replaces the idle bound for this call
	// (widening the ceiling if it must).
	fmt.Fprintln(w, "2. export: 1.3s of quiet work, called WithTimeout(5s)")
	res, err = client.CallTool(ctx, "export", nil, mcp.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "   result:", res.Content[0].Text)

	// 3. A call that says nothing is abandoned when the idle bound elapses.
	// The client tells the server (notifications/cancelled), which cancels
	// the handler's context, and returns a *RequestTimeoutError.
	fmt.Fprintln(w, "3. stall: never answers")
	_, err = client.CallTool(ctx, "stall", nil)
	if err := printTimeout(w, err); err != nil {
		return err
	}
	if err := serverSaw(); err != nil {
		return err
	}

	// 4. Progress does not keep a call alive past the ceiling.
	fmt.Fprintln(w, "4. chatty: reports progress every 100ms, forever")
	_, err = client.CallTool(ctx, "chatty", nil, mcp.WithProgress(func(mcp.Progress) {}))
	if err := printTimeout(w, err); err != nil {
		return err
	}
	if err := serverSaw(); err != nil {
		return err
	}

	// 5. Cancelling the call's context abandons it at once; the server is
	// told just the same. Here the user gives up after two steps.
	fmt.Fprintln(w, "5. reindex again, cancelled after two steps")
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	reports := 0
	_, err = client.CallTool(callCtx, "reindex", nil, mcp.WithProgress(func(p mcp.Progress) {
		if reports++; reports <= 2 {
			printProgress(p)
		}
		if reports == 2 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("a cancelled call returned %v", err)
	}
	fmt.Fprintln(w, "   error:", err)
	if err := serverSaw(); err != nil {
		return err
	}

	// Close ends the connection; the server's Serve then returns nil.
	if err := client.Close(); err != nil {
		return err
	}
	return <-serving
}

// printTimeout prints which bound abandoned a call.
func printTimeout(w io.Writer, err error) error {
	var timeout *mcp.RequestTimeoutError
	if !errors.As(err, &timeout) {
		return fmt.Errorf("expected a timeout, got %v", err)
	}
	fmt.Fprintf(w, "   timed out: the %s bound (%v) fired\n", timeout.Bound, timeout.Timeout)
	return nil
}

// newServer serves the tools the client calls. A handler that ends early
// sends why on stopped.
func newServer(stopped chan<- string) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "long-tools", Version: "1.0.0"})
	tool := func(name, done string, steps int, interval time.Duration, report bool) {
		srv.AddTool(mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := work(ctx, req, steps, interval, report); err != nil {
				// context.Cause says who cancelled: the client's
				// notifications/cancelled arrives as an *mcp.CancelledError.
				stopped <- fmt.Sprintf("%s: %v", name, context.Cause(ctx))
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(done)}}, nil
		})
	}
	tool("reindex", "reindexed 8 shards", 8, 150*time.Millisecond, true)
	tool("export", "exported", 13, 100*time.Millisecond, false)
	tool("stall", "", 0, time.Hour, false)
	tool("chatty", "", 0, 100*time.Millisecond, true)
	return srv
}

// work does steps steps of interval each, forever when steps is 0,
// reporting each as progress if report is set. Like every long handler it
// stops as soon as its context ends.
func work(ctx context.Context, req *mcp.CallToolRequest, steps int, interval time.Duration, report bool) error {
	for i := 1; steps == 0 || i <= steps; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		if report {
			req.Gateway().Progress(float64(i), float64(steps), fmt.Sprintf("step %d", i))
		}
	}
	return nil
}
