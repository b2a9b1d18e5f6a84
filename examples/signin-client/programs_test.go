package main

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSignInAgainstProtectedServer builds both example programs and runs
// them as a user would: protected-server with its toy issuer, and
// signin-client signing in through it (a plain GET in place of the
// browser) and calling whoami.
func TestSignInAgainstProtectedServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	dir := t.TempDir()
	for _, name := range []string{"protected-server", "signin-client"} {
		out, err := exec.Command(goTool, "build", "-o", filepath.Join(dir, name), "../"+name).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	server := exec.CommandContext(ctx, filepath.Join(dir, "protected-server"), "-dev-issuer", "-addr", "127.0.0.1:0")
	logs, err := server.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	// The server logs "serving MCP at <url>" once it listens.
	lines := bufio.NewScanner(logs)
	var endpoint string
	for endpoint == "" && lines.Scan() {
		if _, url, ok := strings.Cut(lines.Text(), "serving MCP at "); ok {
			endpoint = url
		}
	}
	if endpoint == "" {
		t.Fatalf("protected-server never said where it serves: %v", lines.Err())
	}
	go func() { // keep draining its log so that it never blocks
		for lines.Scan() {
		}
	}()

	tokens := filepath.Join(dir, "tokens.json")
	for run := 1; run <= 2; run++ {
		out, err := exec.CommandContext(ctx, filepath.Join(dir, "signin-client"),
			"-url", endpoint, "-open-with-http-get", "-token-file", tokens, "-timeout", "30s").CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: signin-client: %v\n%s", run, err, out)
		}
		if !strings.Contains(string(out), "whoami: dev-user") {
			t.Fatalf("run %d: whoami did not answer with the dev issuer's user:\n%s", run, out)
		}
		// The first run signs in; the second uses the kept token.
		if signedIn := strings.Contains(string(out), "Sign in at: "); signedIn != (run == 1) {
			t.Fatalf("run %d: signed in %v:\n%s", run, signedIn, out)
		}
	}
}
