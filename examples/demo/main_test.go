package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/e6ac58cb/mcp"
)

// TestMain runs the demo itself when asked to by runDemo, so that the tests
// start it (and it starts its server) from the test binary.
func TestMain(m *testing.M) {
	if os.Getenv("MCP_DEMO_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// demoCommand is the demo with args, run from the test binary.
func demoCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCP_DEMO_MAIN=1")
	return cmd
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	half := mcp.Progress{Progress: 10, Total: 20, Message: "shard 10 of 20"}
	for _, tc := range []struct {
		name string
		p    mcp.Progress
		cols int
		want string
	}{
		{"unbounded", half, -1, "[###############...............]  50% shard 10 of 20"},
		{"room for all", half, 79, "[###############...............]  50% shard 10 of 20"},
		{"the bar narrows", half, 39, "[########.........]  50% shard 10 of 20"},
		{"the message is cut", half, 24, "[#####.....]  50% shard "},
		{"the bar goes", half, 16, " 50% shard 10 of"},
		{"nothing fits", half, 0, ""},
		{"no message", mcp.Progress{Progress: 1, Total: 4}, 20, "[###..........]  25%"},
		{"no total", mcp.Progress{Progress: 3}, -1, "[..............................]   0%"},
		{"past the total", mcp.Progress{Progress: 30, Total: 20}, -1, "[##############################] 100%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := progressLine(tc.p, tc.cols)
			if got != tc.want {
				t.Errorf("progressLine(%v, %d) = %q, want %q", tc.p, tc.cols, got, tc.want)
			}
			if tc.cols >= 0 && utf8.RuneCountInString(got) > tc.cols {
				t.Errorf("%q is wider than %d", got, tc.cols)
			}
		})
	}
}

// TestProgressLineFits: at every width from 0 to 100 and every step, the
// line fits.
func TestProgressLineFits(t *testing.T) {
	t.Parallel()
	for cols := range 101 {
		for i := range 21 {
			p := mcp.Progress{Progress: float64(i), Total: 20, Message: "shard 20 of 20, a longer message than most"}
			if line := progressLine(p, cols); utf8.RuneCountInString(line) > cols {
				t.Fatalf("at %d columns: %q", cols, line)
			}
		}
	}
}

// TestTerminalWidthFallback: a file the system gives no width of is as wide
// as $COLUMNS says, else 80.
func TestTerminalWidthFallback(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		columns string
		want    int
	}{{"132", 132}, {"", 80}, {"wide", 80}, {"0", 80}, {"-5", 80}} {
		t.Setenv("COLUMNS", tc.columns)
		if got := terminalWidth(w); got != tc.want {
			t.Errorf("COLUMNS=%q: width %d, want %d", tc.columns, got, tc.want)
		}
	}
}

// TestDemoToAPipe: with its output on a pipe the demo writes plain lines,
// one per progress update, with no carriage return or escape sequence.
func TestDemoToAPipe(t *testing.T) {
	t.Parallel()
	out, err := demoCommand("-steps", "5").Output()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if strings.ContainsAny(string(out), "\r\x1b") {
		t.Fatalf("a carriage return or escape in plain output: %q", out)
	}
	var updates []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "% shard") {
			updates = append(updates, strings.TrimSuffix(line, "\n"))
		}
	}
	want := []string{
		"[######........................]  20% shard 1 of 5",
		"[############..................]  40% shard 2 of 5",
		"[##################............]  60% shard 3 of 5",
		"[########################......]  80% shard 4 of 5",
		"[##############################] 100% shard 5 of 5",
	}
	if strings.Join(updates, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress lines:\n%s\nwant:\n%s\nin:\n%s", strings.Join(updates, "\n"), strings.Join(want, "\n"), out)
	}
}
