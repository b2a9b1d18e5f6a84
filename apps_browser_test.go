package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The browser tests start node (testdata/browser/driver.mjs), which drives
// Debian's Chromium with puppeteer-core on loopback. Without node, Chromium
// or the installed driver (npm ci in testdata/browser) they are skipped,
// unless CI is set: there that is a failure.

// browserTooling returns the node to run the driver with and the driver's
// directory, or skips (fails under CI) when something is missing.
func browserTooling(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = testNode(t, "the browser tests", "browser", "puppeteer-core")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("in CI the browser tests must run: chromium is not installed: %v", err)
		}
		t.Skipf("chromium is not installed: %v", err)
	}
	return node, dir
}

// browserStep is one step of a driver job (see driver.mjs).
type browserStep struct {
	Frame      string         `json:"frame,omitempty"`
	Host       string         `json:"host,omitempty"`
	Match      string         `json:"match,omitempty"`
	Differs    bool           `json:"differs,omitempty"`
	Click      string         `json:"click,omitempty"`
	Type       string         `json:"type,omitempty"`
	Text       string         `json:"text,omitempty"`
	Goto       string         `json:"goto,omitempty"`
	Screenshot string         `json:"screenshot,omitempty"`
	Clip       map[string]int `json:"clip,omitempty"` // x, y, width, height
}

// browserOutcome is what the driver reports.
type browserOutcome struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error"`
	Texts   []string `json:"texts"`
	Console []string `json:"console"`
}

// runBrowser runs one driver job and fails the test unless it succeeded.
func runBrowser(t *testing.T, mode string, job any) browserOutcome {
	t.Helper()
	node, dir := browserTooling(t)
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "driver.mjs", mode, string(raw))
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	stdout, err := cmd.Output()
	t.Logf("browser %s: %v", mode, time.Since(start).Round(time.Millisecond))
	var out browserOutcome
	line := strings.TrimSpace(string(stdout))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal([]byte(line), &out); jerr != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("driver %s: %v; stdout %q; stderr %s", mode, err, stdout, stderr)
	}
	if !out.OK {
		t.Fatalf("browser %s: %s\nconsole:\n%s", mode, out.Error, strings.Join(out.Console, "\n"))
	}
	return out
}

// startExampleAppServer starts the official basic example server
// (@modelcontextprotocol/server-basic-vanillajs) on 127.0.0.1 and returns
// its Streamable HTTP URL; it stops when the test ends.
func startExampleAppServer(t *testing.T) string {
	t.Helper()
	node, dir := browserTooling(t)
	cmd := exec.Command(node, "driver.mjs", "example-server")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server's cue to stop
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the example server did not start: %v", err)
	}
	var v struct{ URL string }
	if err := json.Unmarshal([]byte(line), &v); err != nil || v.URL == "" {
		t.Fatalf("the example server said %q", line)
	}
	return v.URL
}

// isoTime matches the basic example's server time.
const isoTime = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`

// TestAppsBrowserHostShowsExampleView: our host (NewAppHost) renders the
// view of the official basic example server in Chromium; the tool result
// the host forwards shows in the view, and the view's own tools/call
// (its button) reaches the server and its fresh result shows too.
func TestAppsBrowserHostShowsExampleView(t *testing.T) {
	browserTooling(t)
	server := startExampleAppServer(t)
	c := NewClient(Implementation{Name: "apps-host-test", Version: "1.0.0"}, WithApps())
	if err := c.Connect(t.Context(), NewHTTPTransport(server)); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	host := httptest.NewServer(NewAppHost(c))
	defer host.Close()
	shot := screenshotPath(t, "example-view.png")
	out := runBrowser(t, "page", map[string]any{
		"url": host.URL + "/app?tool=get-time",
		"steps": []browserStep{
			{Frame: "#server-time", Match: isoTime}, // from ui/notifications/tool-result
			{Host: "#status", Match: "^done$"},
			{Click: "#get-time-btn"},
			{Frame: "#server-time", Match: isoTime, Differs: true}, // the view's own tools/call
			{Screenshot: shot},
		},
	})
	t.Logf("server times shown: %q; screenshot %s", out.Texts, shot)
	checkPNG(t, shot)
}

// screenshotPath is where a test saves a screenshot: in the directory
// MCP_APPS_SCREENSHOTS names, to be kept, or else in the test's temporary
// directory.
func screenshotPath(t *testing.T, name string) string {
	if dir := os.Getenv("MCP_APPS_SCREENSHOTS"); dir != "" {
		return filepath.Join(dir, name)
	}
	return filepath.Join(t.TempDir(), name)
}

// checkPNG checks that a screenshot was written.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, %v", path, len(b), err)
	}
}

// TestAppsBrowserBridgeShowsGoView: the official AppBridge of
// @modelcontextprotocol/ext-apps, in a host page of the driver's, renders
// the view of our example server (examples/apps/server, over Streamable
// HTTP, through the official client): the tool result the bridge forwards
// shows in the view, and the view's call of the app-only greet tool reaches
// our server and its answer shows too.
func TestAppsBrowserBridgeShowsGoView(t *testing.T) {
	browserTooling(t)
	_, server, _ := strings.Cut(startGoExample(t, "server", "-addr", "127.0.0.1:0"), " at ")
	shot := screenshotPath(t, "bridge-view.png")
	out := runBrowser(t, "bridge", map[string]any{
		"server": server, "tool": "open_greeter", "args": map[string]any{"name": "Ada"},
		"steps": []browserStep{
			{Frame: "#result", Match: "^Hello, Ada!$"}, // from ui/notifications/tool-result
			{Type: "#name", Text: "Grace"},
			{Click: "#greet"},
			{Frame: "#result", Match: "^Hello, Grace!$"}, // the view's tools/call of greet
			{Screenshot: shot},
		},
	})
	t.Logf("view texts: %q", out.Texts)
	checkPNG(t, shot)
}

// TestAppsBrowserExamples: the example host (examples/apps/host) shows the
// example server's view (examples/apps/server) in Chromium, the tool's
// result in it, and the view's own call answered; the screenshot is the
// README's picture (docs/apps-host.png, with MCP_APPS_SCREENSHOTS=docs).
func TestAppsBrowserExamples(t *testing.T) {
	browserTooling(t)
	_, server, _ := strings.Cut(startGoExample(t, "server", "-addr", "127.0.0.1:0"), " at ")
	_, host, _ := strings.Cut(startGoExample(t, "host", "-server", server), " at ")
	shot := screenshotPath(t, "apps-host.png")
	runBrowser(t, "page", map[string]any{
		"url": host,
		"steps": []browserStep{
			{Host: "li a", Match: "Greeter|open_greeter"},
			{Goto: "app?tool=open_greeter&args=" + url.QueryEscape(`{"name":"Ada"}`)},
			{Frame: "#result", Match: "^Hello, Ada!$"},
			{Host: "#status", Match: "^done$"},
			{Type: "#name", Text: "Grace"},
			{Click: "#greet"},
			{Frame: "#result", Match: "^Hello, Grace!$"},
			{Screenshot: shot, Clip: map[string]int{"x": 0, "y": 0, "width": 820, "height": 300}},
		},
	})
	checkPNG(t, shot)
}

// startGoExample builds and starts examples/apps/<name> with args and
// returns the first line it prints; it is interrupted when the test ends.
func startGoExample(t *testing.T, name string, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/apps/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("%s printed nothing", name)
		}
		return strings.TrimSpace(line)
	case <-time.After(time.Minute):
		t.Fatalf("%s did not start", name)
	}
	return ""
}

// TestAppsBrowserHostRefusesBadViews: our host in Chromium with views that
// misbehave; each is refused with a clear error, and the host still shows a
// good view afterwards.
func TestAppsBrowserHostRefusesBadViews(t *testing.T) {
	browserTooling(t)
	srv, counted := newAppHostTestServer(t)
	c := connectAppHostClient(t, srv, WithMaxAppViewSize(64<<10))
	host := httptest.NewServer(NewAppHost(c))
	defer host.Close()
	page := func(tool string, args any) string {
		raw, _ := json.Marshal(args)
		return host.URL + "/app?" + url.Values{"tool": {tool}, "args": {string(raw)}}.Encode()
	}
	shot := screenshotPath(t, "after-bad-input.png")
	runBrowser(t, "page", map[string]any{
		"url": page("wrongmime", map[string]any{}),
		"steps": []browserStep{
			{Host: "#error", Match: `MIME type "text/html", want "text/html;profile=mcp-app"`},
			{Goto: page("huge", map[string]any{})},
			{Host: "#error", Match: "larger than the limit of 65536 bytes"},
			// A view that calls a tool only the model may call.
			{Goto: page("show", map[string]any{"name": "Bo", "probe": "hidden"})},
			{Frame: "#probe", Match: `^refused -32602 tools/call: tool "secret" is not visible to apps$`},
			{Frame: "#after", Match: "^count 1$"},
			// A view that posts garbage: not JSON, then JSON that is no request, then an unknown method.
			{Goto: page("show", map[string]any{"name": "Cy", "probe": "garbage"})},
			{Frame: "#probe", Match: `^refused -32700 -32600 -32601$`},
			{Frame: "#after", Match: "^count 2$"},
			{Frame: "#result", Match: "^Hello, Cy!$"},
			{Screenshot: shot},
		},
	})
	if n := counted.Load(); n != 2 {
		t.Errorf("the server counted %d calls of the app-only tool, want 2", n)
	}
	checkPNG(t, shot)
}

// connectAppHostClient connects a client with opts to srv in memory.
func connectAppHostClient(t *testing.T, srv *Server, opts ...ClientOption) *Client {
	t.Helper()
	ct, st := NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, st); close(done) }()
	c := NewClient(Implementation{Name: "apps-host-test", Version: "1.0.0"}, append([]ClientOption{WithApps()}, opts...)...)
	if err := c.Connect(t.Context(), ct); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return c
}
