// Command mcp-instance is one instance of an MCP server meant to run as
// several behind a load balancer with no affinity, sharing its state on
// Redis: sessions, their event logs, tasks, and the messages between
// instances. It serves a small set of tools that exercise each shared
// part, for the tests of this module and as an example to copy.
//
//	mcp-instance -addr 127.0.0.1:8001 -redis 127.0.0.1:6379 -name one -state-key $KEY
//
// It serves Streamable HTTP at /mcp, prints "listening on <addr>" to
// standard error once it accepts connections, and shuts down gracefully
// on SIGTERM or an interrupt. Every instance of one deployment takes the
// same -redis, -prefix and -state-key.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
	mcpredis "github.com/e6ac58cb/mcp/redis"
	"github.com/redis/go-redis/v9"
)

// counterURI is the resource that "touch" announces as updated by
// default; markerURI is a second one, which a test touches last to know
// that what it touched before has arrived.
const (
	counterURI = "test://counter"
	markerURI  = "test://marker"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "serve at `address` (path /mcp); port 0 picks a free one")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "the Redis server's `address`")
	prefix := flag.String("prefix", mcpredis.DefaultKeyPrefix, "start every Redis key and channel with `prefix`")
	name := flag.String("name", "", "the instance's `name`, which the whoami-instance tool returns (default: the address)")
	stateKey := flag.String("state-key", "", "the `hex` key, at least 32 bytes, that signs 2026-07-28 requestState; the same on every instance (default: a random one, fit for one instance only)")
	timeout := flag.Duration("redis-timeout", mcpredis.DefaultTimeout, "bound each Redis call whose request has no deadline of its own")
	lease := flag.Duration("task-lease", mcp.DefaultTaskLease, "fail a task whose instance stopped renewing it for this `long` (0: never)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mcp-instance: ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *redisAddr, *prefix, *name, *stateKey, *timeout, *lease); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, addr, redisAddr, prefix, name, stateKey string, timeout, lease time.Duration) error {
	var serverOpts []mcp.ServerOption
	if stateKey != "" {
		key, err := hex.DecodeString(stateKey)
		if err != nil || len(key) < 32 {
			return fmt.Errorf("-state-key must be at least 32 bytes in hex: %q", stateKey)
		}
		serverOpts = append(serverOpts, mcp.WithStateKey(key))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if name == "" {
		name = ln.Addr().String()
	}

	// One pool for the four pieces. ContextTimeoutEnabled lets each call's
	// deadline bound its socket reads and writes, so a Redis that stops
	// answering fails requests instead of holding them.
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	opts := []mcpredis.Option{mcpredis.WithKeyPrefix(prefix), mcpredis.WithTimeout(timeout)}
	bc := mcpredis.NewBroadcaster(rdb, opts...)
	defer bc.Close()

	serverOpts = append(serverOpts,
		mcp.WithBroadcaster(bc),
		mcp.WithTasks(mcp.TaskOptions{Store: mcpredis.NewTaskStore(rdb, opts...), Lease: leaseOrNone(lease)}))
	srv := mcp.NewServer(mcp.Implementation{Name: "mcp-instance", Version: "1.0.0"}, serverOpts...)
	addTools(srv, name)

	handler := mcp.NewHTTPHandler(srv,
		mcp.WithContext(ctx),
		mcp.WithSessionStore(mcpredis.NewSessionStore(rdb, opts...)),
		mcp.WithEventStore(mcpredis.NewEventStore(rdb, opts...)))
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	hs := mcp.NewHTTPServer("", mux) // timeouts that spare SSE streams
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "listening on %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

type progressIn struct {
	Steps int `json:"steps"`
}

type elicitIn struct {
	// Token goes into the question, so that whoever watches the wire can
	// tell which answer belongs to which call.
	Token string `json:"token"`
}

type elicitOut struct {
	Instance string         `json:"instance"` // where the handler ran
	Action   string         `json:"action"`
	Content  map[string]any `json:"content,omitempty"`
}

type touchIn struct {
	URI string `json:"uri"`
}

type slowTaskIn struct {
	Seconds float64 `json:"seconds"`
	// Tag is not used: it marks the call on the wire for whoever watches.
	Tag string `json:"tag,omitempty"`
}

// addTools registers the tools and the counter resource; name is what
// whoami-instance answers.
func addTools(srv *mcp.Server, name string) {
	var touches atomic.Int64
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: s}}}
	}

	mcp.AddTool(srv, mcp.Tool{Name: "whoami-instance", Description: "Returns the name of the instance that serves the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			return text(name), nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "progress", Description: "Reports progress 1..steps of steps, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := req.Gateway().Progress(float64(i), float64(in.Steps), ""); err != nil {
					return nil, err
				}
			}
			return text(fmt.Sprintf("%d steps", in.Steps)), nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "elicit", Description: "Asks the user for a word (elicitation) and returns the answer with the instance that asked."},
		func(ctx context.Context, req *mcp.CallToolRequest, in elicitIn) (elicitOut, error) {
			res, err := req.Gateway().Elicit(ctx, "token "+in.Token, json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`))
			if err != nil {
				return elicitOut{}, err
			}
			return elicitOut{Instance: name, Action: res.Action, Content: res.Content}, nil
		})

	mcp.AddTool(srv, mcp.Tool{Name: "touch", Description: "Announces that the resource at uri (default test://counter) changed, from this instance."},
		func(ctx context.Context, req *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, error) {
			uri := in.URI
			if uri == "" {
				uri = counterURI
			}
			touches.Add(1)
			srv.ResourceUpdated(uri)
			return text(name + " touched " + uri), nil
		})

	srv.AddResource(mcp.Resource{URI: counterURI, Name: "counter", Description: "How many times this instance was touched; subscribe to hear of each.", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: counterURI, MIMEType: "text/plain", Text: fmt.Sprint(touches.Load())}}}, nil
		})

	srv.AddResource(mcp.Resource{URI: markerURI, Name: "marker", Description: "Never changes unless touched; subscribe to hear of it.", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: markerURI, MIMEType: "text/plain", Text: name}}}, nil
		})

	// slow-task runs as a task when the client allows one. Its status
	// message counts the seconds; when its context ends before its time,
	// it says so on standard error ("slow-task ended early: <cause>"),
	// which the tests read to see that a cancellation made elsewhere
	// reached the handler here.
	mcp.AddTool(srv, mcp.Tool{Name: "slow-task", Description: "Works for the given seconds, reporting each in its status, until cancelled.",
		Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowTaskIn) (*mcp.CallToolResult, error) {
			end := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
			defer end.Stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			req.Gateway().Progress(0, in.Seconds, name+": started")
			for n := 1; ; n++ {
				select {
				case <-ctx.Done():
					fmt.Fprintf(os.Stderr, "slow-task ended early: %v\n", context.Cause(ctx))
					return nil, ctx.Err()
				case <-end.C:
					return text(fmt.Sprintf("%s: worked %g seconds", name, in.Seconds)), nil
				case <-tick.C:
					req.Gateway().Progress(float64(n), in.Seconds, fmt.Sprintf("%s: %d seconds", name, n))
				}
			}
		})
}

// leaseOrNone is the TaskOptions.Lease of the -task-lease flag, whose 0
// turns leases off.
func leaseOrNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
