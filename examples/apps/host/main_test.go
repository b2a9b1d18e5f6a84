package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// viewHTML is the test server's view.
const viewHTML = `<!DOCTYPE html><html><body><p id="out">a view</p></body></html>`

// newServer returns a server with one tool linked to a view.
func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "viewer", Version: "1.0.0"})
	if err := srv.AddAppView(mcp.AppView{URI: "ui://viewer/view", Name: "view", HTML: viewHTML}); err != nil {
		panic(err)
	}
	srv.AddTool(mcp.AppTool(mcp.Tool{Name: "look", InputSchema: []byte(`{"type":"object"}`)}, "ui://viewer/view", 0),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("looked")}}, nil
		})
	return srv
}

// TestMain lets the test binary be the stdio server of the -stdio test.
func TestMain(m *testing.M) {
	if os.Getenv("APPS_HOST_TEST_STDIO_SERVER") == "1" {
		if err := newServer().Serve(context.Background(), mcp.StdioTransport()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHost builds the program and runs it against a server on Streamable
// HTTP and one over stdio: it prints its page's URL, lists the tool with a
// view, serves the host page with the sandboxed iframe and the view with
// its Content-Security-Policy, and stops on interrupt.
func TestHost(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sends SIGINT")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "host")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ts := httptest.NewServer(mcp.NewHTTPHandler(newServer()))
	defer ts.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"http":  {"-server", ts.URL},
		"stdio": {"-stdio", self + " -test.run=^$"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "APPS_HOST_TEST_STDIO_SERVER=1")
			cmd.Stderr = os.Stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			_, base, ok := strings.Cut(strings.TrimSpace(line), " at ")
			if err != nil || !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("first line %q, %v", line, err)
			}
			get := func(path string) (*http.Response, string) {
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, string(b)
			}
			if _, body := get(""); !strings.Contains(body, `href="app?tool=look"`) {
				t.Errorf("index: %s", body)
			}
			if resp, body := get("app?tool=look"); resp.StatusCode != 200 || !strings.Contains(body, `<iframe id="view"`) || !strings.Contains(body, `sandbox="allow-scripts allow-forms"`) {
				t.Errorf("host page: %d %s", resp.StatusCode, body)
			}
			if resp, body := get("view?tool=look"); body != viewHTML || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("view: %q with CSP %q", body, resp.Header.Get("Content-Security-Policy"))
			}
			cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit: %v", err)
			}
		})
	}
}
