package mcp
import "testing"
func TestHasUserMeta(t *testing.T) {
	for raw, want := range map[string]bool{
		``: false, `null`: false, `{}`: false,
		`{"progressToken":1}`: false,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":{"b":[1,"}"]}},"progressToken":"x"}`: false,
		`{"progressToken":1,"com.example/trace":"t"}`: true,
		` { "x" : 1 } `: true,
	} {
		if got := hasUserMeta([]byte(raw)); got != want {
			t.Errorf("hasUserMeta(%s) = %v", raw, got)
		}
	}
}
