// Package size holds the programs bench/size.sh measures: the quick-start
// one-tool stdio server in each SDK (ours, gosdk, mcpgo) and two floors.
// This test checks that each server answers over stdio, and that ours is
// the README's quick-start server word for word.
package size

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOursIsTheQuickStart checks that ours/main.go is the block after
// <!-- quickstart: server/main.go --> in the repository's README.md.
func TestOursIsTheQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- quickstart: server/main.go -->\n```go\n")
	if !ok {
		t.Fatal("README.md has no quick-start server block")
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	ours, err := os.ReadFile("ours/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != block+"\n" {
		t.Error("ours/main.go differs from README.md's quick-start server; copy the block again")
	}
}

// TestServersAnswer builds each server and calls its tool over stdio, one
// message at a time as a client would (mcp-go serves requests concurrently,
// so a tools/call piped in before initialize was answered may run on an
// uninitialised session). Ours must send its two progress notifications
// before the result; the peers only need to answer.
func TestServersAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	dir := t.TempDir()
	for _, name := range []string{"ours", "gosdk", "mcpgo"} {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			if out, err := exec.Command("go", "build", "-o", bin, "./"+name).CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			s := start(t, bin)
			s.call(t, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"size_test","version":"0"}}}`)
			s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			res, notes := s.call(t, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"progressToken":"p"}}}`)
			if want := `{"content":[{"type":"text","text":"Hello, Ada!"}]}`; string(res) != want {
				t.Errorf("tools/call result %s, want %s", res, want)
			}
			if name != "ours" {
				return
			}
			want := []string{
				`{"progressToken":"p","progress":1,"total":2,"message":"looking up Ada"}`,
				`{"progressToken":"p","progress":2,"total":2,"message":"writing the greeting"}`,
			}
			if strings.Join(notes, "\n") != strings.Join(want, "\n") {
				t.Errorf("progress before the result:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

type server struct {
	in    io.WriteCloser
	lines chan []byte
}

func start(t *testing.T, bin string) *server {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{in: in, lines: make(chan []byte, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		in.Close() // end of stdin: the server returns and exits 0
		if err := cmd.Wait(); err != nil {
			t.Errorf("server exited: %v", err)
		}
		cancel()
	})
	return s
}

func (s *server) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// call sends a request and reads until the response with its id, returning
// the result and the params of the notifications that came before it.
func (s *server) call(t *testing.T, id int, line string) (json.RawMessage, []string) {
	t.Helper()
	s.send(t, line)
	var notes []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case b, ok := <-s.lines:
			if !ok {
				t.Fatalf("stdout closed before the answer to %d", id)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("not JSON: %s", b)
			}
			if m.Method != "" {
				notes = append(notes, string(m.Params))
				continue
			}
			if string(m.ID) != fmt.Sprint(id) {
				t.Fatalf("answer to %s while waiting for %d: %s", m.ID, id, b)
			}
			if m.Error != nil {
				t.Fatalf("error answer: %s", b)
			}
			return m.Result, notes
		case <-timeout:
			t.Fatalf("no answer to %d within 10 s", id)
		}
	}
}
