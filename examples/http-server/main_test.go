package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestHTTPServer builds the program, starts it on a port of the system's
// choosing, calls its tools over Streamable HTTP on both protocol eras,
// then interrupts it while a legacy session's stream is still open: it
// must shut down cleanly and exit 0.
func TestHTTPServer(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sends SIGINT")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "http-server")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	server := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	server.Stderr = os.Stderr
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10) // more than it ever prints
	exited := make(chan struct{})
	var exitErr error
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		exitErr = server.Wait() // after the last read, as StdoutPipe asks
		close(exited)
	}()
	t.Cleanup(func() {
		server.Process.Kill()
		<-exited
	})
	endpoint, ok := strings.CutPrefix(<-lines, "serving MCP at ")
	if !ok || !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("the first line does not say where it serves: %q", endpoint)
	}

	var legacy *mcp.Client
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		client := mcp.NewClient(mcp.Implementation{Name: "test", Version: "1"}, mcp.WithProtocolVersion(version))
		if err := client.Connect(ctx, mcp.NewHTTPTransport(endpoint)); err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		defer client.Close()
		res, err := client.CallTool(ctx, "greet", map[string]string{"name": "Ada"})
		if want := "Hello, Ada! (protocol " + version + ")"; err != nil || res.Content[0].Text != want {
			t.Fatalf("%s: greet: %+v, %v; want %q", version, res, err, want)
		}
		var counted []string
		res, err = client.CallTool(ctx, "countdown", map[string]int{"from": 3},
			mcp.WithProgress(func(p mcp.Progress) { counted = append(counted, p.Message) }))
		if err != nil || res.Content[0].Text != "liftoff" || strings.Join(counted, " ") != "3 2 1" {
			t.Fatalf("%s: countdown: %+v, %v, progress %q", version, res, err, counted)
		}
		if version == mcp.Version20251125 {
			legacy = client // its session keeps a GET stream open
		}
	}

	if err := server.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for line := range lines {
		rest = append(rest, line)
	}
	<-exited
	if exitErr != nil {
		t.Fatalf("after SIGINT: %v; output %q", exitErr, rest)
	}
	if strings.Join(rest, "\n") != "shutting down\nshut down cleanly" {
		t.Errorf("output after SIGINT: %q", rest)
	}
	if _, err := legacy.CallTool(ctx, "greet", map[string]string{"name": "Ada"}); err == nil {
		t.Error("a call after the shutdown succeeded")
	}
}
