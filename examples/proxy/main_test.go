package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// waitBound bounds every wait of these tests.
const waitBound = 30 * time.Second

// bins holds the proxy and the upstream, built once by TestMain.
var bins struct{ proxy, upstream string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.proxy, bins.upstream = filepath.Join(dir, "proxy"), filepath.Join(dir, "upstream")
	for bin, pkg := range map[string]string{bins.proxy: ".", bins.upstream: "./testdata/upstream"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lineLog is an io.Writer that keeps what a process writes, line by line,
// and lets a test wait for a line.
type lineLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	lines   []string
	changed chan struct{} // closed at each new line
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // not a whole line yet
			return len(p), nil
		}
		l.lines = append(l.lines, strings.TrimSuffix(line, "\n"))
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// waitFor returns the first line that contains s, waiting for it.
func (l *lineLog) waitFor(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(waitBound)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no line with %q after %v; got:\n%s", s, waitBound, l)
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// start starts bin with args, its standard error going to a new lineLog;
// it is killed when the test ends.
func start(t *testing.T, bin string, args ...string) *lineLog {
	t.Helper()
	cmd := exec.Command(bin, args...)
	logs := newLineLog()
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s's standard error:\n%s", filepath.Base(bin), logs)
		}
	})
	return logs
}

// endpoint waits for the "serving MCP at <url>" line and returns the URL.
func endpoint(t *testing.T, logs *lineLog) string {
	t.Helper()
	_, url, _ := strings.Cut(logs.waitFor(t, "serving MCP at "), "serving MCP at ")
	return url
}

// TestProxy runs the proxy program in front of the upstream program, both
// over stdio (the proxy starts the upstream as its child, and the test
// starts the proxy as its own) and both over HTTP, and calls through it on
// each era as a downstream client: lists on every page, progress, tool
// errors, cancellation, resources, prompts, completion, and a tool list
// that changes upstream.
func TestProxy(t *testing.T) {
	t.Parallel()
	for _, ways := range []string{"stdio", "http"} {
		for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
			t.Run(ways+"/"+version, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(t.Context(), waitBound)
				defer cancel()
				client, toolsChanged := newDownstream(mcp.WithProtocolVersion(version))
				// upstreamLog is where the upstream's standard error goes:
				// through the proxy's logger when the upstream is its child.
				var transport mcp.Transport
				var upstreamLog *lineLog
				if ways == "stdio" {
					cmd := exec.Command(bins.proxy, "--", bins.upstream)
					upstreamLog = newLineLog()
					cmd.Stderr = upstreamLog
					transport = mcp.NewCommandTransport(cmd)
				} else {
					upstreamLog = start(t, bins.upstream, "-http", "127.0.0.1:0")
					proxyLog := start(t, bins.proxy, "-upstream", endpoint(t, upstreamLog), "-http", "127.0.0.1:0")
					transport = mcp.NewHTTPTransport(endpoint(t, proxyLog))
				}
				if err := client.Connect(ctx, transport); err != nil {
					t.Fatal(err)
				}
				defer client.Close()
				checkProxied(t, ctx, client, upstreamLog, toolsChanged)
			})
		}
	}
}

// newDownstream is a client of the proxy; the channel hears when its
// tools changed.
func newDownstream(opts ...mcp.ClientOption) (*mcp.Client, <-chan struct{}) {
	toolsChanged := make(chan struct{}, 1)
	opts = append(opts, mcp.WithToolListChangedHandler(func(context.Context) {
		select {
		case toolsChanged <- struct{}{}:
		default:
		}
	}))
	return mcp.NewClient(mcp.Implementation{Name: "downstream", Version: "1"}, opts...), toolsChanged
}

// checkProxied makes the calls of TestProxy through client.
func checkProxied(t *testing.T, ctx context.Context, client *mcp.Client, upstreamLog *lineLog, toolsChanged <-chan struct{}) {
	if got := client.ServerInfo().Name; got != "upstream (proxied)" {
		t.Errorf("server name %q", got)
	}
	if got := client.Instructions(); got != "An upstream for the proxy's tests." {
		t.Errorf("instructions %q", got)
	}
	toolNames := func() []string {
		t.Helper()
		var names []string
		for tool, err := range client.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		return names
	}
	// The upstream pages by two: five tools are three pages upstream.
	if got, want := toolNames(), []string{"add_tool", "count", "echo", "fail", "wait"}; !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}

	res, err := client.CallTool(ctx, "echo", map[string]string{"text": "hi"})
	if err != nil || res.IsError || res.Content[0].Text != "echo: hi" {
		t.Errorf("echo: %v %+v", err, res)
	}

	var progress []string
	res, err = client.CallTool(ctx, "count", map[string]int{"n": 3}, mcp.WithProgress(func(p mcp.Progress) {
		progress = append(progress, fmt.Sprintf("%g/%g %s", p.Progress, p.Total, p.Message))
	}))
	if err != nil || res.Content[0].Text != "counted to 3" {
		t.Errorf("count: %v %+v", err, res)
	}
	if want := []string{"1/3 step 1 of 3", "2/3 step 2 of 3", "3/3 step 3 of 3"}; !slices.Equal(progress, want) {
		t.Errorf("count's progress %q, want %q", progress, want)
	}

	res, err = client.CallTool(ctx, "fail", nil)
	if err != nil || !res.IsError || res.Content[0].Text != "the upstream tool failed" {
		t.Errorf("fail: %v %+v", err, res)
	}

	// The caller cancels once the upstream handler says it waits; the
	// upstream handler sees its context end.
	callCtx, cancelCall := context.WithCancel(ctx)
	_, err = client.CallTool(callCtx, "wait", nil, mcp.WithProgress(func(mcp.Progress) { cancelCall() }))
	if err == nil {
		t.Errorf("a cancelled call succeeded")
	}
	upstreamLog.waitFor(t, "wait: cancelled: ")

	r, err := client.ReadResource(ctx, "upstream://motd")
	if err != nil || r.Contents[0].Text != "hello from upstream" {
		t.Errorf("motd: %v %+v", err, r)
	}
	r, err = client.ReadResource(ctx, "upstream://items/42")
	if err != nil || r.Contents[0].Text != "item 42" {
		t.Errorf("item: %v %+v", err, r)
	}
	var templates []string
	for tmpl, err := range client.ResourceTemplates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, tmpl.URITemplate)
	}
	if !slices.Equal(templates, []string{"upstream://items/{id}"}) {
		t.Errorf("templates %v", templates)
	}
	p, err := client.GetPrompt(ctx, "greeting", map[string]string{"name": "Ada"})
	if err != nil || p.Messages[0].Content.Text != "Say hello to Ada" {
		t.Errorf("greeting: %v %+v", err, p)
	}
	c, err := client.Complete(ctx, &mcp.CompleteParams{Ref: mcp.PromptReference("greeting"), Argument: mcp.CompleteArgument{Name: "name", Value: "A"}})
	if err != nil || !slices.Equal(c.Completion.Values, []string{"Ada", "Alan"}) {
		t.Errorf("completion: %v %+v", err, c)
	}

	// A tool added upstream appears downstream, announced.
	if res, err := client.CallTool(ctx, "add_tool", nil); err != nil || res.IsError {
		t.Fatalf("add_tool: %v %+v", err, res)
	}
	select {
	case <-toolsChanged:
	case <-ctx.Done():
		t.Fatal("the downstream client heard of no new tool")
	}
	if names := toolNames(); !slices.Contains(names, "added") {
		t.Fatalf("tools after add_tool: %v", names)
	}
	if res, err := client.CallTool(ctx, "added", nil); err != nil || res.Content[0].Text != "I was added" {
		t.Errorf("added: %v %+v", err, res)
	}
}

// TestProxyInProcess runs the proxy's own code in the test, under the race
// detector when the test has it: newProxy in front of the upstream program
// as its child, served to a client over an in-memory connection. Once the
// upstream is gone, calls get tool errors.
func TestProxyInProcess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), waitBound)
	defer cancel()
	logs := newLineLog() // the upstream's standard error arrives through the logger
	p, err := newProxy(ctx, mcp.NewCommandTransport(exec.Command(bins.upstream)), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	clientSide, serverSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- p.srv.Serve(ctx, serverSide) }()
	client, toolsChanged := newDownstream()
	if err := client.Connect(ctx, clientSide); err != nil {
		t.Fatal(err)
	}
	checkProxied(t, ctx, client, logs, toolsChanged)

	// With the upstream gone, a call is answered with a tool error.
	p.Close()
	res, err := client.CallTool(ctx, "echo", map[string]string{"text": "anyone?"})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].Text, "upstream: ") {
		t.Errorf("echo without an upstream: %v %+v", err, res)
	} else {
		t.Logf("echo without an upstream: %s", res.Content[0].Text)
	}
	client.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
