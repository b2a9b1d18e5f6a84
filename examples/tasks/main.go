// Command tasks runs a long tool as a task: work that outlives the request
// that started it. A server offers "reindex", a tool that may run as a
// task and reports each step. On each protocol era in turn, a client
// starts it as a task and polls its status until it ends (StartTool,
// ToolTask.Get), then reads the result (ToolTask.Wait); calls it with
// WithTask, which waits on the task as if the call were synchronous and
// reports the task's status messages as progress; and starts it once more
// to cancel it (ToolTask.Cancel).
//
//	go run ./examples/tasks
//	go run ./examples/tasks -steps 10 -step 500ms
//
// The server and the client run in one process and talk Streamable HTTP
// on a loopback port, as they would across machines.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	steps := flag.Int("steps", 5, "steps of the long tool")
	step := flag.Duration("step", 300*time.Millisecond, "how long each step takes")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *steps, *step); err != nil {
		fmt.Fprintln(os.Stderr, "tasks:", err)
		os.Exit(1)
	}
}

type reindexIn struct {
	Steps int `json:"steps" description:"How many shards to reindex."`
}

// newServer is a server whose reindex tool takes step per shard.
func newServer(step time.Duration) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "tasks-server", Version: "1.0.0"},
		mcp.WithTasks(mcp.TaskOptions{
			// How often the server suggests that clients poll its tasks.
			PollInterval: step / 2,
			// How long a task and its result are kept after it was created.
			TTL: 10 * time.Minute,
		}))
	mcp.AddTool(srv, mcp.Tool{Name: "reindex", Description: "Reindexes the shards, one step each; may run as a task.",
		// TaskOptional: a client may ask for a task or call it as usual.
		// TaskRequired would make every call a task.
		Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		// The handler is an ordinary one: run as a task, it goes on after
		// the call returned, its progress message becomes the task's
		// status message, and its context ends when the task is cancelled.
		func(ctx context.Context, req *mcp.CallToolRequest, in reindexIn) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(step):
				}
				req.Gateway().Progress(float64(i), float64(in.Steps), fmt.Sprintf("shard %d of %d", i, in.Steps))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprintf("reindexed %d shards", in.Steps))}}, nil
		})
	return srv
}

// run serves newServer on a loopback port and runs the client's three
// scenes on each era, printing what it sees to out.
func run(ctx context.Context, out io.Writer, steps int, step time.Duration) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := mcp.NewHTTPServer("", mcp.NewHTTPHandler(newServer(step)))
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String()

	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		fmt.Fprintf(out, "== %s\n", version)
		if err := tour(ctx, out, url, version, steps); err != nil {
			return fmt.Errorf("%s: %w", version, err)
		}
	}
	return nil
}

// tour connects to url on version and runs the three scenes.
func tour(ctx context.Context, out io.Writer, url, version string, steps int) error {
	client := mcp.NewClient(mcp.Implementation{Name: "tasks-client", Version: "1.0.0"},
		mcp.WithProtocolVersion(version),
		// The idle bound restarts with every answer of a poll; the ceiling
		// bounds the whole wait on a task.
		mcp.WithRequestTimeout(30*time.Second), mcp.WithMaxRequestTimeout(5*time.Minute))
	if err := client.Connect(ctx, mcp.NewHTTPTransport(url)); err != nil {
		return err
	}
	defer client.Close()
	args := reindexIn{Steps: steps}

	// 1. Start the task and poll it by hand. StartTool returns as soon as
	// the server created the task.
	task, err := client.StartTool(ctx, "reindex", args, mcp.WithTask(time.Hour))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "started: %s\n", task.Task().Status)
	last := task.Task()
	for !last.Status.Terminal() {
		// Wait as long as the server suggests between polls.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(last.PollInterval, 50*time.Millisecond)):
		}
		t, err := task.Get(ctx)
		if err != nil {
			return err
		}
		if t.Status != last.Status || t.StatusMessage != last.StatusMessage {
			fmt.Fprintf(out, "status: %s %s\n", t.Status, t.StatusMessage)
		}
		last = t
	}
	res, err := task.Wait(ctx) // the task ended: its result at once
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "result:", res.Content[0].Text)

	// 2. The same with CallTool: WithTask asks for a task, and CallTool
	// waits on it, polling, with the status messages as progress.
	res, err = client.CallTool(ctx, "reindex", args, mcp.WithTask(time.Hour),
		mcp.WithProgress(func(p mcp.Progress) { fmt.Fprintln(out, "progress:", p.Message) }))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "called:", res.Content[0].Text)

	// 3. Start a long one and cancel it. Cancelling is cooperative: the
	// handler's context ends, and Wait tells how the task ended.
	task, err = client.StartTool(ctx, "reindex", reindexIn{Steps: 1000}, mcp.WithTask(time.Hour))
	if err != nil {
		return err
	}
	if err := task.Cancel(ctx); err != nil {
		return err
	}
	_, err = task.Wait(ctx)
	if !errors.Is(err, mcp.ErrTaskCancelled) {
		return fmt.Errorf("waiting on a cancelled task: %v", err)
	}
	t, err := task.Get(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "after cancel:", t.Status)
	return nil
}
