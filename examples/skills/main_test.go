package main

import (
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// TestSkills runs the program on both protocol eras, which read the same.
func TestSkills(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			if err := run(t.Context(), &out, mcp.WithProtocolVersion(version)); err != nil {
				t.Fatalf("%v; output:\n%s", err, out.String())
			}
			want := "connected (protocol " + version + `)
skill release-notes: Write the release notes of a version from its merged changes. (2 files)
loaded skill://release-notes/SKILL.md: "# Release notes"
read skill://release-notes/templates/NOTES.md (text/markdown): "## vX.Y.Z"
`
			if out.String() != want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}
