package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeBlocks returns the fenced blocks of a Markdown file that follow a
// "<!-- quickstart: NAME -->" line, by NAME.
func readmeBlocks(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	blocks := make(map[string]string)
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- quickstart:")
		if !ok {
			continue
		}
		name = strings.TrimSpace(strings.TrimSuffix(name, "-->"))
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: marker %q is not followed by a fenced block", path, i+1, name)
		}
		var body strings.Builder
		j := i + 2
		for ; j < len(lines) && lines[j] != "```"; j++ {
			body.WriteString(lines[j] + "\n")
		}
		if j == len(lines) {
			t.Fatalf("%s:%d: block %q is not closed", path, i+1, name)
		}
		if _, dup := blocks[name]; dup {
			t.Fatalf("%s: two blocks named %q", path, name)
		}
		blocks[name] = body.String()
		i = j
	}
	return blocks
}

// TestREADMEQuickStart copies the README's quick start into a fresh module,
// runs its commands as written, compares the client's output with the one
// the README shows, and checks that the server exits 0 when a client that
// initialized cleanly closes its stdin.
func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, "README.md")
	for _, name := range []string{"setup", "server/main.go", "client/main.go", "run", "output"} {
		if _, ok := blocks[name]; !ok {
			t.Fatalf("README.md has no quickstart block %q", name)
		}
	}

	// The setup block makes the module; the test's go.mod stands for it,
	// with the repository in place of the download.
	dir := t.TempDir()
	modulePath := ""
	for line := range strings.Lines(blocks["setup"]) {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case len(f) == 4 && f[0] == "go" && f[1] == "mod" && f[2] == "init":
			modulePath = f[3]
		case slices.Equal(f, []string{"go", "get", "github.com/e6ac58cb/mcp"}):
		default:
			t.Fatalf("setup block: unexpected command %q", line)
		}
	}
	if modulePath == "" {
		t.Fatal("setup block: no go mod init")
	}
	gomod := fmt.Sprintf("module %s\n\ngo 1.25\n\nrequire github.com/e6ac58cb/mcp v0.0.0\n\nreplace github.com/e6ac58cb/mcp => %s\n", modulePath, root)
	writeFile(t, filepath.Join(dir, "go.mod"), gomod)
	for _, name := range []string{"server/main.go", "client/main.go"} {
		writeFile(t, filepath.Join(dir, name), blocks[name])
	}

	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The run block: go build and go run lines, run as written.
	serverBinary := ""
	var stdout bytes.Buffer
	for line := range strings.Lines(blocks["run"]) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || f[0] != "go" || (f[1] != "build" && f[1] != "run") {
			t.Fatalf("run block: unexpected command %q", line)
		}
		if f[1] == "build" && len(f) == 5 && f[2] == "-o" && f[4] == "./server" {
			serverBinary = filepath.Join(dir, f[3])
		}
		cmd := exec.CommandContext(ctx, goTool, f[1:]...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.TrimSpace(line), err, stderr.Bytes())
		}
	}
	if got, want := stdout.String(), blocks["output"]; got != want {
		t.Errorf("the client printed\n%s\nthe README shows\n%s", got, want)
	}
	if serverBinary == "" {
		t.Fatal("run block: no go build -o NAME ./server")
	}

	// A clean disconnect: initialize, initialized, end of stdin.
	cmd := exec.CommandContext(ctx, serverBinary)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`+"\n", Version20251125)
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer to initialize: %v\n%s", err, stderr.Bytes())
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string         `json:"protocolVersion"`
			ServerInfo      Implementation `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &answer); err != nil || answer.ID != 1 || answer.Result.ProtocolVersion != Version20251125 {
		t.Fatalf("initialize answered %s (%v)", line, err)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("the server exited with %d after a clean disconnect; stderr: %q", exit.ExitCode(), stderr.String())
		}
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
