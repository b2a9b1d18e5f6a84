package main

import (
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// TestResources runs the program on both protocol eras, which must read
// the same: subscriptions are resources/subscribe up to 2025-11-25 and a
// subscriptions/listen stream on 2026-07-28.
func TestResources(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			if err := run(t.Context(), &out, mcp.WithProtocolVersion(version)); err != nil {
				t.Fatalf("%v; output:\n%s", err, out.String())
			}
			want := "connected (protocol " + version + `)
resources:
  notes://shopping  shopping (text/plain)
  notes://todo  todo (text/plain)
templates:
  notes://{note}/lines/{n}  One line of a note, counting from 1.
read notes://shopping: "eggs\nmilk"
read notes://shopping/lines/2: "milk"
read notes://shopping/lines/9: not there (Resource not found: notes://shopping/lines/9)
subscribed to notes://shopping
called add_line: {"uri":"notes://shopping","lines":3}
updated: notes://shopping
read notes://shopping: "eggs\nmilk\nbread"
called new_note: {"uri":"notes://ideas","lines":1}
the list of resources changed
resources:
  notes://shopping  shopping (text/plain)
  notes://todo  todo (text/plain)
  notes://ideas  ideas (text/plain)
`
			if out.String() != want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}
