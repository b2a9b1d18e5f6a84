package mcpredis

import (
	"os"
	"os/exec"
	"testing"
)

// TestExamplesPaste has the root module's TestExamplesPaste check this
// module's examples: each, pasted into a program of its own, builds (none
// has an Output to print: they need a Redis).
func TestExamplesPaste(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example as a program of its own")
	}
	cmd := exec.Command("go", "test", "-count=1", "-run=^TestExamplesPaste$", ".")
	cmd.Dir, cmd.Env = "..", append(os.Environ(), "MCP_PASTE_MODULE=redis")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
