package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startRedis starts a redis-server of the test's own, listening on a unix
// socket in a temporary directory (no port to pick or to race for) and
// keeping nothing on disk; it returns its URL. Without redis-server the
// test is skipped, unless CI is set: there a missing Redis is a failure.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed (in CI a missing Redis is a failure): %v", err)
		}
		t.Skipf("redis-server is not installed: %v", err)
	}
	dir := t.TempDir()
	socket := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700",
		"--dir", dir, "--save", "", "--appendonly", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		said := false
		for sc := bufio.NewScanner(out); sc.Scan(); {
			// "Ready to accept connections" on TCP; "The server is now
			// ready to accept connections at <socket>" on a socket.
			if !said && strings.Contains(strings.ToLower(sc.Text()), "ready to accept connections") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("redis-server ended before it was ready")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server was not ready after ten seconds")
	}
	return "unix://" + socket
}

// TestFleet runs the tour against three instances on a Redis of its own,
// and reads what it printed: on 2025-11-25 one session is served by
// several instances and the balancer spread its requests over all three;
// on both eras the answer to the server's question, the resource update
// and the task each came back although they crossed instances.
func TestFleet(t *testing.T) {
	url := startRedis(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f, err := startFleet(ctx, url, "fleet-test:", "127.0.0.1:0", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	if err := tour(ctx, &out, f); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())

	eras := strings.Split(out.String(), "== ")[1:]
	if len(eras) != 2 || !strings.HasPrefix(eras[0], "2025-11-25\n") || !strings.HasPrefix(eras[1], "2026-07-28\n") {
		t.Fatalf("want a part for each era:\n%s", out.String())
	}
	whoami := regexp.MustCompile(`(?m)^whoami: (i[123]) serves session (.+)$`)
	for i, part := range eras {
		legacy := i == 0
		instances, sessions := map[string]bool{}, map[string]bool{}
		for _, m := range whoami.FindAllStringSubmatch(part, -1) {
			instances[m[1]], sessions[m[2]] = true, true
		}
		// Three calls in a row go to at least two instances, whatever
		// other requests of the client come between them.
		if len(instances) < 2 || len(sessions) != 1 {
			t.Errorf("whoami served by %v in sessions %v:\n%s", instances, sessions, part)
		}
		if legacy && sessions["none (2026-07-28 has no sessions)"] {
			t.Errorf("a 2025-11-25 call had no session:\n%s", part)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^confirm: i[123] got the answer accept true$`),
			regexp.MustCompile(`(?m)^touch: i[123] touched fleet://counter; the client heard that fleet://counter changed$`),
			regexp.MustCompile(`(?m)^count \(a task\): i[123] counted to 3; `),
			regexp.MustCompile(`(?m)^route: .*i1.*$`),
		} {
			if !want.MatchString(part) {
				t.Errorf("no line matches %s in\n%s", want, part)
			}
		}
		route := regexp.MustCompile(`(?m)^route: (.*)$`).FindStringSubmatch(part)
		if route == nil {
			continue
		}
		for _, in := range []string{">i1", ">i2", ">i3"} {
			if !strings.Contains(route[1], in) {
				t.Errorf("no request went to %s: %s", in[1:], route[1])
			}
		}
		// On 2025-11-25 the answer to the question is a POST of its own.
		if legacy && !strings.Contains(route[1], "answer>") {
			t.Errorf("no answer in the route: %s", route[1])
		}
	}
}
