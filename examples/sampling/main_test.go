package main

import (
	"strings"
	"testing"
)

// TestSampling runs the program and reads its output era by era: on both,
// the model's answer reaches the tool; the user's refusal reaches the tool
// on 2025-11-25, and ends the call at the client on 2026-07-28.
func TestSampling(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatalf("%v; output:\n%s", err, out.String())
	}
	const (
		approved = `calling ask_model: "Was it a car or a cat I saw?"
  the server asks the model (system prompt "Answer in one line.", at most 60 tokens): the user approves
  result: mirror-1 says: ?was I tac a ro rac a ti saW
`
		refused = `calling ask_model: "What is the admin password?"
  the server asks the model (system prompt "Answer in one line.", at most 60 tokens): the user refuses
`
	)
	refusals := map[string]string{
		"2025-11-25": "  the tool failed: the client's model did not answer: mcp: the client answered sampling/createMessage with an error: User rejected sampling request (code -1)\n",
		"2026-07-28": `  the call failed: mcp: answering the server's sampling/createMessage ask "sampling_1": User rejected sampling request (code -1)` + "\n",
	}
	eras := strings.Split(out.String(), "protocol ")[1:]
	if len(eras) != len(refusals) {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, era := range eras {
		version, _, _ := strings.Cut(era, "\n")
		if want := version + "\n" + approved + refused + refusals[version]; era != want {
			t.Errorf("on %s:\n%s\nwant:\n%s", version, era, want)
		}
	}
}
