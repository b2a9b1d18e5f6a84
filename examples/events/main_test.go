package main

import (
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// TestEvents runs the program on both protocol eras, which read the same.
func TestEvents(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			if err := run(t.Context(), &out, mcp.WithProtocolVersion(version)); err != nil {
				t.Fatalf("%v; output:\n%s", err, out.String())
			}
			want := `poll: deploy.finished {"service":"api","version":"v1"}
stream: deploy.finished {"service":"api","version":"v2"}
webhook subscribed: the endpoint answered the challenge (36-char id)
webhook: deploy.finished {"service":"api","version":"v3"} (signature verified)
`
			if out.String() != want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}
