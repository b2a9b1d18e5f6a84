package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// openPTY opens a pseudo-terminal cols columns wide: its master, read by
// the test, and its slave, the demo's standard output.
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("TIOCSPTLCK: %v", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("TIOCGPTN: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	size := winsize{rows: 24, cols: cols}
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&size)); err != nil {
		t.Fatalf("TIOCSWINSZ: %v", err)
	}
	return master, slave
}

// TestDemoOnANarrowTerminal: on a 40-column terminal the bar is redrawn in
// place on one line that never reaches the last column, so it never wraps
// (it stacked 20 half-lines). $COLUMNS says 200: the terminal's own width
// wins.
func TestDemoOnANarrowTerminal(t *testing.T) {
	t.Parallel()
	const cols, steps = 40, 20
	master, slave := openPTY(t, cols)
	if got := terminalWidth(slave); got != cols {
		t.Fatalf("terminalWidth of the pty: %d, want %d", got, cols)
	}
	cmd := demoCommand("-steps", fmt.Sprint(steps))
	cmd.Env = append(cmd.Env, "COLUMNS=200")
	cmd.Stdout = slave
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the master reads EIO once the demo has closed it too
	read := make(chan string)
	go func() {
		var out []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil {
				read <- string(out)
				return
			}
		}
	}()
	err := cmd.Wait()
	out := <-read
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out, stderr.String())
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence in the output: %q", out)
	}

	// The terminal turns each \n into \r\n; the bar's line is the one that
	// holds the updates, each after a \r.
	var bar string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "% shard") {
			if bar != "" {
				t.Fatalf("updates on more than one line:\n%q", out)
			}
			bar = strings.TrimSuffix(line, "\r\n")
		}
	}
	frames := strings.Split(strings.TrimPrefix(bar, "\r"), "\r")
	if len(frames) != steps {
		t.Fatalf("%d updates drawn, want %d: %q", len(frames), steps, bar)
	}
	for _, frame := range frames {
		if n := utf8.RuneCountInString(frame); n > cols-1 {
			t.Errorf("an update %d columns wide on a %d-column terminal: %q", n, cols, frame)
		}
	}
	// What a terminal shows: one row, the last update alone on it.
	rows := render(bar, cols)
	want := "[#################] 100% shard 20 of 20"
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("the terminal shows %q, want [%q]", rows, want)
	}
}

// render is what a terminal cols wide shows of line: a \r takes the cursor
// to the start of its row, a character past the last column goes on a new
// row. Rows are trimmed of trailing spaces.
func render(line string, cols int) []string {
	rows := [][]rune{make([]rune, cols)}
	col := 0
	for _, r := range line {
		switch {
		case r == '\r':
			col = 0
		case col == cols:
			rows = append(rows, make([]rune, cols))
			col = 0
			fallthrough
		default:
			rows[len(rows)-1][col] = r
			col++
		}
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = strings.TrimRight(strings.ReplaceAll(string(row), "\x00", " "), " ")
	}
	return out
}

// TestDevNullIsNoTerminal: /dev/null is a character device, but no
// terminal; the demo writes plain lines to it (as CI runs it).
func TestDevNullIsNoTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgressBar(f).terminal {
		t.Fatal("/dev/null taken for a terminal")
	}
}
