package mcp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// What a server pays for: a capability other than the stdio core is reached
// only from the constructor or option that turns it on (ARCHITECTURE.md,
// "Pay only for what you use"). These tests build programs the way a user
// does and read what the linker kept.

// stdioLinkBudget bounds the symbols of each package that importing it
// unused already costs a program (package init, types), and that the one-tool
// stdio server may therefore link; calling into it costs hundreds.
const stdioLinkBudget = 50

// budgetedPackages are the packages the stdio server imports through the
// package's HTTP, OAuth and verifier rooms without calling them.
var budgetedPackages = []string{"net/http", "crypto/tls", "crypto/x509", "crypto/ecdsa", "crypto/rsa"}

// optionalRooms are the files of the capabilities a stdio server without
// options must not link: HTTP and SSE, OAuth and verifiers, tasks, the
// shared-state stores, the many-instance wing (cluster_), CORS, MCP
// Apps (apps: reached only from AddAppView on a server, NewAppHost and
// Client.ReadAppView on a client), Skills (skills: reached only from
// AddSkills on a server and the Client's skill methods) and Events
// (events: reached only from AddEventType on a server, the events calls on
// a client).
var optionalRooms = []string{"http_", "transport_http", "transport_sse", "sse.go", "auth_", "tasks", "task_store", "eventstore", "cluster_", "apps", "skills", "events"}

// stdioServerMaxBytes is the quick-start server's size ceiling, a guard
// against a capability leaking back into every binary (bench/RESULTS.md has
// the sizes and what they are made of).
const stdioServerMaxBytes = 7_500_000

// TestStdioServerLinksOnlyTheCore builds the README's quick-start server
// (CGO_ENABLED=0, -trimpath, linux/amd64) and checks that it links no room
// of an optional capability and at most stdioLinkBudget symbols of each
// budgeted package.
func TestStdioServerLinksOnlyTheCore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	server := readmeBlocks(t, "README.md")["server/main.go"]
	if server == "" {
		t.Fatal("README.md has no quick-start server block")
	}
	bin := buildUserProgram(t, server)
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	counts := linkedPackages(t, bin)
	t.Logf("quick-start stdio server: %d bytes; %s", info.Size(), budgetReport(counts))
	for _, p := range budgetedPackages {
		if counts[p] > stdioLinkBudget {
			t.Errorf("the stdio server links %d symbols of %s (budget %d): something reaches it", counts[p], p, stdioLinkBudget)
		}
	}
	if rooms := linkedRooms(t, bin); len(rooms) > 0 {
		t.Errorf("the stdio server links code of optional capabilities:\n%s", strings.Join(rooms, "\n"))
	}
	if info.Size() > stdioServerMaxBytes {
		t.Errorf("the stdio server is %d bytes, over its ceiling of %d", info.Size(), stdioServerMaxBytes)
	}
}

// TestHTTPServerLinksHTTP is the other side of the same check: the server
// that calls NewHTTPHandler and AddAppView links net/http, the HTTP rooms
// and apps.go, so the counting above sees what it looks for.
func TestHTTPServerLinksHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := buildUserProgram(t, `package main

import (
	"log"
	"net/http"

	"github.com/e6ac58cb/mcp"
)

func main() {
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"})
	if err := srv.AddAppView(mcp.AppView{URI: "ui://greeter/view", Name: "view", HTML: "<p>hi</p>"}); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:0", mcp.NewHTTPHandler(srv)))
}
`)
	counts := linkedPackages(t, bin)
	if counts["net/http"] <= stdioLinkBudget {
		t.Errorf("the HTTP server links only %d symbols of net/http; the count is not seeing the linker's output", counts["net/http"])
	}
	rooms := strings.Join(linkedRooms(t, bin), "\n")
	for _, room := range []string{"http_server.go", "apps.go"} {
		if !strings.Contains(rooms, room) {
			t.Errorf("the HTTP server links no code of %s; linked rooms:\n%s", room, rooms)
		}
	}
}

// buildUserProgram builds src as the main package of a fresh module that
// requires this one from the working tree, as a user's program would, and
// returns the binary's path.
func buildUserProgram(t *testing.T, src string) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/user\n\ngo 1.25\n\nrequire github.com/e6ac58cb/mcp v0.0.0\n\nreplace github.com/e6ac58cb/mcp => %s\n", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "program")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// goTool runs "go tool name args..." and returns its standard output.
func goTool(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"tool", name}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool %s: %v\n%s", name, err, stderr.Bytes())
	}
	return out
}

// linkedPackages counts bin's symbols by the budgeted package they belong to.
func linkedPackages(t *testing.T, bin string) map[string]int {
	counts := make(map[string]int)
	sc := bufio.NewScanner(bytes.NewReader(goTool(t, nil, "nm", bin)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		for _, p := range budgetedPackages {
			if strings.HasPrefix(f[len(f)-1], p+".") {
				counts[p]++
			}
		}
	}
	return counts
}

// linkedRooms lists the functions of this package in bin that come from an
// optional capability's file, as "file: function".
func linkedRooms(t *testing.T, bin string) []string {
	var addrs bytes.Buffer
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(goTool(t, nil, "nm", bin)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[1] == "T" && strings.HasPrefix(f[2], "github.com/e6ac58cb/mcp.") {
			fmt.Fprintf(&addrs, "0x%s\n", f[0])
			names = append(names, f[2])
		}
	}
	lines := strings.Split(strings.TrimSpace(string(goTool(t, addrs.Bytes(), "addr2line", bin))), "\n")
	if len(lines) != 2*len(names) {
		t.Fatalf("addr2line answered %d lines for %d addresses", len(lines), len(names))
	}
	var found []string
	for i, name := range names {
		file, _, _ := strings.Cut(lines[2*i+1], ":")
		base := filepath.Base(file)
		if !strings.Contains(file, "e6ac58cb/mcp") {
			continue // a generic instantiated from another package
		}
		for _, room := range optionalRooms {
			if strings.HasPrefix(base, room) {
				found = append(found, base+": "+name)
				break
			}
		}
	}
	sort.Strings(found)
	return found
}

// budgetReport renders counts for the log.
func budgetReport(counts map[string]int) string {
	var b strings.Builder
	for i, p := range budgetedPackages {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", p, counts[p])
	}
	return b.String()
}
