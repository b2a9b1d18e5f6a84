// Command fleet runs one MCP server as three instances that share their
// state on Redis, behind a round-robin balancer with no affinity, and
// shows one client served by all three: each of its requests goes to the
// next instance, yet its session, its tasks, the answers to its server's
// questions and its subscriptions work as with a single server.
//
//	go run ./examples/fleet -redis redis://127.0.0.1:6379
//	go run ./examples/fleet -redis redis://127.0.0.1:6379 -serve -addr 127.0.0.1:3000
//
// What each instance shares, and through what (see the README of this
// module): legacy sessions (mcpredis.SessionStore), the events of their
// streams (mcpredis.EventStore), tasks (mcpredis.TaskStore), and the
// messages between instances, such as an answer that reached another
// instance than the one waiting for it, or a resource update for a client
// whose stream another instance holds (mcpredis.Broadcaster). 2026-07-28
// requests carry their state with them, signed with a key every instance
// shares (mcp.WithStateKey). In production each instance is its own
// process; here they are three servers in one program, each with its own
// Redis connections, so that nothing but Redis is shared.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/e6ac58cb/mcp"
	mcpredis "github.com/e6ac58cb/mcp/redis"
	"github.com/redis/go-redis/v9"
)

func main() {
	redisURL := flag.String("redis", "redis://127.0.0.1:6379", "the Redis server's `url` (redis://, rediss:// or unix://)")
	prefix := flag.String("prefix", "fleet:", "start every Redis key and channel with `prefix`")
	addr := flag.String("addr", "127.0.0.1:0", "the balancer's `address`; port 0 picks a free one")
	serve := flag.Bool("serve", false, "after the tour, keep serving at the balancer until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := startFleet(ctx, *redisURL, *prefix, *addr, 3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	defer f.Close()
	if err := tour(ctx, os.Stdout, f); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	if *serve {
		fmt.Fprintf(os.Stderr, "serving MCP at %s\n", f.url)
		<-ctx.Done()
	}
}

// fleet is the instances and the balancer in front of them.
type fleet struct {
	instances []*instance
	balancer  *balancer
	front     *http.Server
	url       string // the balancer's MCP endpoint
}

// startFleet starts n instances on loopback ports, sharing the Redis at
// redisURL under prefix, and the balancer at addr.
func startFleet(ctx context.Context, redisURL, prefix, addr string, n int) (*fleet, error) {
	redisOpts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	// Let each call's deadline bound its socket reads and writes, so that
	// a Redis that stops answering fails requests instead of holding them.
	redisOpts.ContextTimeoutEnabled = true

	// Every instance signs and checks 2026-07-28 requestState with this
	// key. A real deployment keeps it in a secret, the same for all.
	stateKey := make([]byte, 32)
	rand.Read(stateKey)

	f := &fleet{}
	var backends []string
	for i := range n {
		in, err := startInstance(ctx, fmt.Sprintf("i%d", i+1), redisOpts, prefix, stateKey)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.instances = append(f.instances, in)
		backends = append(backends, in.url)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.balancer = newBalancer(backends)
	f.front = mcp.NewHTTPServer("", f.balancer)
	go f.front.Serve(ln)
	f.url = "http://" + ln.Addr().String() + "/mcp"
	return f, nil
}

// Close stops the balancer and the instances.
func (f *fleet) Close() {
	if f.front != nil {
		f.front.Close()
	}
	for _, in := range f.instances {
		in.Close()
	}
}

// instance is one MCP server with its own connections to Redis.
type instance struct {
	name string
	url  string // without the path, /mcp
	rdb  *redis.Client
	bc   *mcpredis.Broadcaster
	hs   *http.Server
	stop context.CancelFunc
}

// startInstance starts the instance named name on a loopback port.
func startInstance(ctx context.Context, name string, redisOpts *redis.Options, prefix string, stateKey []byte) (*instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, url: "http://" + ln.Addr().String()}
	ctx, in.stop = context.WithCancel(ctx)

	// One pool for the stores, and one connection more for the
	// broadcaster's subscriptions.
	o := *redisOpts // a copy: NewClient fills in its defaults
	in.rdb = redis.NewClient(&o)
	opts := []mcpredis.Option{mcpredis.WithKeyPrefix(prefix)}
	in.bc = mcpredis.NewBroadcaster(in.rdb, opts...)

	srv := mcp.NewServer(mcp.Implementation{Name: "fleet", Version: "1.0.0"},
		mcp.WithStateKey(stateKey),
		mcp.WithBroadcaster(in.bc),
		mcp.WithTasks(mcp.TaskOptions{Store: mcpredis.NewTaskStore(in.rdb, opts...), PollInterval: 50 * time.Millisecond}))
	addTools(srv, name)
	h := mcp.NewHTTPHandler(srv,
		mcp.WithContext(ctx),
		mcp.WithSessionStore(mcpredis.NewSessionStore(in.rdb, opts...)),
		mcp.WithEventStore(mcpredis.NewEventStore(in.rdb, opts...)))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	in.hs = mcp.NewHTTPServer("", mux)
	go in.hs.Serve(ln)
	return in, nil
}

// Close ends the instance's sessions and streams, then its server and its
// Redis connections.
func (in *instance) Close() {
	in.stop()
	in.hs.Close()
	in.bc.Close()
	in.rdb.Close()
}

const counterURI = "fleet://counter"

type countIn struct {
	N int `json:"n"`
}

// addTools registers the tools; each says which instance ran it.
func addTools(srv *mcp.Server, name string) {
	text := func(format string, args ...any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprintf(format, args...))}}
	}
	mcp.AddTool(srv, mcp.Tool{Name: "whoami", Description: "Says which instance serves the call, and in which session."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			session := req.SessionID()
			if session == "" {
				session = "none (2026-07-28 has no sessions)"
			}
			return text("%s serves session %s", name, session), nil
		})

	// confirm asks the client a question and waits for the answer. On
	// 2025-11-25 the answer is a POST of its own, which the balancer may
	// send to any instance: the broadcaster brings it here. On 2026-07-28
	// the client sends the call again with the answer, to any instance,
	// which runs the handler again with it.
	mcp.AddTool(srv, mcp.Tool{Name: "confirm", Description: "Asks the user to confirm, and says who asked."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			res, err := req.Gateway().Elicit(ctx, "Proceed?",
				json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`), mcp.WithKey("proceed"))
			if err != nil {
				return nil, err
			}
			return text("%s got the answer %s %v", name, res.Action, res.Content["ok"]), nil
		})

	// touch announces that the counter changed. The client's subscription
	// lives on whichever instance holds its stream: the broadcaster
	// carries the news there.
	var touches atomic.Int64
	mcp.AddTool(srv, mcp.Tool{Name: "touch", Description: "Announces that the counter resource changed."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			touches.Add(1)
			srv.ResourceUpdated(counterURI)
			return text("%s touched %s", name, counterURI), nil
		})
	srv.AddResource(mcp.Resource{URI: counterURI, Name: "counter", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: counterURI, MIMEType: "text/plain", Text: fmt.Sprint(touches.Load())}}}, nil
		})

	// count may run as a task: it runs on the instance that got the call,
	// keeps its status and result in the task store, and any instance
	// answers the client's polls from there.
	mcp.AddTool(srv, mcp.Tool{Name: "count", Description: "Counts to n, a step each 50ms; may run as a task.",
		Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.N; i++ {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
				req.Gateway().Progress(float64(i), float64(in.N), fmt.Sprintf("%s counted %d of %d", name, i, in.N))
			}
			return text("%s counted to %d", name, in.N), nil
		})
}

// balancer sends each HTTP request to the next instance in turn, with no
// affinity, as a load balancer without sticky sessions does. It notes
// which instance got each message, for the tour to show.
type balancer struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64

	mu    sync.Mutex
	route []string // "method>instance", in the order sent; at most maxRoute
}

// maxRoute bounds the balancer's notes, which nothing takes once the tour
// is over.
const maxRoute = 1000

func newBalancer(backends []string) *balancer {
	b := &balancer{}
	for _, backend := range backends {
		u, err := url.Parse(backend)
		if err != nil {
			panic(err)
		}
		b.proxies = append(b.proxies, &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
			FlushInterval: -1, // pass SSE events on at once
		})
	}
	return b
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int((b.next.Add(1) - 1) % uint64(len(b.proxies)))
	what := r.Method // GET (a stream) or DELETE (the end of a session)
	if r.Method == http.MethodPost {
		// Peek at the JSON-RPC method, for the record only.
		const maxBody = 16 << 20 // mcp.DefaultMaxMessageSize
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(body) > maxBody {
			http.Error(w, "balancer: cannot read the body", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal(body, &m)
		what = m.Method
		if what == "" {
			what = "answer" // a response to the server's request
		}
	}
	b.mu.Lock()
	if len(b.route) < maxRoute {
		b.route = append(b.route, fmt.Sprintf("%s>i%d", what, i+1))
	}
	b.mu.Unlock()
	b.proxies[i].ServeHTTP(w, r)
}

// takeRoute returns the route noted since the last call.
func (b *balancer) takeRoute() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	route := b.route
	b.route = nil
	return route
}

// tour connects a client through the balancer on each era and shows each
// shared part at work, printing to out.
func tour(ctx context.Context, out io.Writer, f *fleet) error {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		fmt.Fprintf(out, "== %s\n", version)
		if err := tourOn(ctx, out, f, version); err != nil {
			return fmt.Errorf("%s: %w", version, err)
		}
		fmt.Fprintf(out, "route: %s\n", strings.Join(f.balancer.takeRoute(), " "))
	}
	return nil
}

func tourOn(ctx context.Context, out io.Writer, f *fleet, version string) error {
	updated := make(chan string, 16)
	client := mcp.NewClient(mcp.Implementation{Name: "fleet-client", Version: "1.0.0"},
		mcp.WithProtocolVersion(version),
		mcp.WithRequestTimeout(10*time.Second),
		mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"ok": true}}, nil
		}),
		mcp.WithResourceUpdatedHandler(func(ctx context.Context, uri string) {
			select {
			case updated <- uri:
			default:
			}
		}))
	if err := client.Connect(ctx, mcp.NewHTTPTransport(f.url)); err != nil {
		return err
	}
	defer client.Close()

	call := func(name string, args any, opts ...mcp.CallOption) (string, error) {
		res, err := client.CallTool(ctx, name, args, opts...)
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("%s: %s", name, res.Content[0].Text)
		}
		return res.Content[0].Text, nil
	}

	// Three calls in a row: each goes to the next instance.
	for range 3 {
		text, err := call("whoami", nil)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "whoami:", text)
	}

	text, err := call("confirm", nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "confirm:", text)

	if err := client.Subscribe(ctx, counterURI); err != nil {
		return err
	}
	if text, err = call("touch", nil); err != nil {
		return err
	}
	select {
	case uri := <-updated:
		fmt.Fprintf(out, "touch: %s; the client heard that %s changed\n", text, uri)
	case <-time.After(10 * time.Second):
		return errors.New("the client heard of no update after ten seconds")
	}

	var statuses []string
	text, err = call("count", countIn{N: 3}, mcp.WithTask(time.Minute),
		mcp.WithProgress(func(p mcp.Progress) { statuses = append(statuses, p.Message) }))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "count (a task): %s; statuses seen: %s\n", text, strings.Join(statuses, ", "))
	return nil
}
