// Command middleware shows middleware on both peers of an MCP connection,
// logging every message with log/slog: a server's inbound middleware logs
// each request it serves (method, tool, duration, outcome) and hands the
// handler a logger that carries the request's attributes; its outbound
// middleware logs what it sends on its own (progress here); the client's
// outbound middleware times each call it makes.
//
//	go run ./examples/middleware          # text records on standard error
//	go run ./examples/middleware -json    # JSON records
//	go run ./examples/middleware -debug   # also the engine's own records (WithLogger)
//
// The client and the server run in one process over an in-memory
// connection, so that their records interleave in one log; over stdio or
// HTTP the same options apply unchanged.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	asJSON := flag.Bool("json", false, "write the log as JSON records")
	debug := flag.Bool("debug", false, "also log the engine's own records (WithLogger at debug level)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, newLogger(os.Stderr, *asJSON, *debug)); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

// newLogger writes records to w without their time, so that two runs
// print the same lines but for the durations.
func newLogger(w io.Writer, asJSON, debug bool) *slog.Logger {
	opts := &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}
	if debug {
		opts.Level = slog.LevelDebug
	}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// The attribute names, those the engine uses (see mcp.WithLogger), so that
// the records of the middleware and of the engine read alike.
const (
	attrMethod   = "mcp.method.name"
	attrID       = "jsonrpc.request.id"
	attrTool     = "gen_ai.tool.name"
	attrDuration = "duration"
	attrOutcome  = "outcome"
	attrError    = "error.type"
)

// logMessages returns a middleware that logs each message that passes it
// once it was handled: msg says which way it went. It works on either
// side and either direction, since a Middleware is the same type for all.
func logMessages(logger *slog.Logger, msg string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, r *mcp.Request) (json.RawMessage, error) {
			attrs := []any{slog.String(attrMethod, r.Method)}
			if !r.IsNotification() {
				attrs = append(attrs, slog.String(attrID, r.ID.String()))
			}
			if tool := toolName(r); tool != "" {
				attrs = append(attrs, slog.String(attrTool, tool))
			}
			// A logger with the request's attributes travels in the
			// context, for the handler's own records (see requestLogger).
			ctx = context.WithValue(ctx, loggerKey{}, logger.With(attrs...))

			start := time.Now()
			result, err := next(ctx, r)
			attrs = append(attrs, slog.Duration(attrDuration, time.Since(start)))

			outcome, errType := "ok", ""
			var rpcErr *mcp.Error
			switch {
			case errors.As(err, &rpcErr):
				outcome, errType = "error", strconv.Itoa(rpcErr.Code)
			case err != nil:
				outcome, errType = "error", err.Error()
			case isToolError(r.Method, result):
				// The call succeeded but the tool failed: a result with
				// isError, which the model gets to read.
				outcome, errType = "error", "tool_error"
			}
			attrs = append(attrs, slog.String(attrOutcome, outcome))
			level := slog.LevelInfo
			if errType != "" {
				level = slog.LevelWarn
				attrs = append(attrs, slog.String(attrError, errType))
			}
			logger.Log(ctx, level, msg, attrs...)
			return result, err
		}
	}
}

// toolName is the tool a tools/call names; "" for other methods.
func toolName(r *mcp.Request) string {
	if r.Method != "tools/call" {
		return ""
	}
	var p mcp.CallToolParams
	if json.Unmarshal(r.Params, &p) != nil {
		return ""
	}
	return p.Name
}

// isToolError reports whether result is a tools/call result with isError.
func isToolError(method string, result json.RawMessage) bool {
	if method != "tools/call" || result == nil {
		return false
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &res) == nil && res.IsError
}

type loggerKey struct{}

// requestLogger is the logger logMessages put in ctx, or slog.Default.
func requestLogger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

type greetIn struct {
	Name string `json:"name" description:"Who to greet."`
}

type divideIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// newServer is a server with a tool that reports progress and one that
// fails, its middleware logging to logger.
func newServer(logger *slog.Logger) *mcp.Server {
	logger = logger.With("side", "server")
	srv := mcp.NewServer(mcp.Implementation{Name: "middleware-server", Version: "1.0.0"},
		// The first middleware given is the outermost.
		mcp.WithInboundMiddleware(logMessages(logger, "served")),
		// Outbound: what the server sends by itself (notifications,
		// asks of the client), not its answers.
		mcp.WithOutboundMiddleware(logMessages(logger, "sent")),
		// The engine's own records ("served a request" at debug level);
		// the logger's level decides whether there are any.
		mcp.WithLogger(logger.With("from", "engine")))

	mcp.AddTool(srv, mcp.Tool{Name: "greet", Description: "Greets someone, in two steps."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, error) {
			log := requestLogger(ctx) // carries the method, id and tool
			log.Info("looking up", "name", in.Name)
			req.Gateway().Progress(1, 2, "looking up "+in.Name)
			req.Gateway().Progress(2, 2, "writing the greeting")
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("Hello, " + in.Name + "!")}}, nil
		})
	mcp.AddTool(srv, mcp.Tool{Name: "divide", Description: "Divides a by b."},
		func(ctx context.Context, req *mcp.CallToolRequest, in divideIn) (*mcp.CallToolResult, error) {
			if in.B == 0 {
				// Any error but an *mcp.Error becomes a tool result with
				// isError set, for the model to read.
				return nil, errors.New("division by zero")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprint(in.A / in.B))}}, nil
		})
	return srv
}

// run serves newServer on one end of an in-memory connection and makes a
// few calls from a client on the other: it prints their results to out
// and logs both peers to logger.
func run(ctx context.Context, out io.Writer, logger *slog.Logger) error {
	srv := newServer(logger)
	clientSide, serverSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, serverSide) }()

	clog := logger.With("side", "client")
	client := mcp.NewClient(mcp.Implementation{Name: "middleware-client", Version: "1.0.0"},
		// A client's inbound middleware (not used here) would see the
		// server's asks on 2025-11-25 and older, and its notifications
		// but the progress of the client's own calls.
		mcp.WithOutboundMiddleware(logMessages(clog, "called")),
		mcp.WithLogger(clog.With("from", "engine")))
	if err := client.Connect(ctx, clientSide); err != nil {
		return err
	}
	err := calls(ctx, client, out)
	client.Close()
	// Serve returns once the client hung up and every handler ended, so
	// that nothing logs after run returns.
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// calls makes the client's calls: a tool with progress, a tool that fails,
// a tool that does not exist, and the list of tools.
func calls(ctx context.Context, client *mcp.Client, out io.Writer) error {
	res, err := client.CallTool(ctx, "greet", greetIn{Name: "Ada"}, mcp.WithProgress(func(p mcp.Progress) {
		fmt.Fprintf(out, "progress %g/%g %s\n", p.Progress, p.Total, p.Message)
	}))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "greet:", res.Content[0].Text)

	res, err = client.CallTool(ctx, "divide", divideIn{A: 1, B: 0})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "divide: isError=%v %s\n", res.IsError, res.Content[0].Text)

	_, err = client.CallTool(ctx, "no_such_tool", nil)
	var rpcErr *mcp.Error
	if !errors.As(err, &rpcErr) {
		return fmt.Errorf("calling a tool that does not exist: want an *mcp.Error, got %v", err)
	}
	fmt.Fprintf(out, "no_such_tool: error %d\n", rpcErr.Code)

	var names []string
	for tool, err := range client.Tools(ctx) {
		if err != nil {
			return err
		}
		names = append(names, tool.Name)
	}
	fmt.Fprintln(out, "tools:", strings.Join(names, ", "))
	return nil
}
