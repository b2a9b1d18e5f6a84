package main

import (
	"strings"
	"testing"

	"github.com/e6ac58cb/mcp"
)

// TestElicitation runs the program with a user who answers in different
// ways, on both protocol eras, which must read the same: a live
// elicitation/create request on 2025-11-25, an input-required round on
// 2026-07-28.
func TestElicitation(t *testing.T) {
	const (
		ask1 = "calling book_table for Chez Gopher\n" +
			"server asks: Booking a table at Chez Gopher. Answer each question, or type decline or cancel.\n"
		ask2 = "calling book_table for The Rusty Crab\n" +
			"server asks: Booking a table at The Rusty Crab. Answer each question, or type decline or cancel.\n"
		guests = "  guests (integer) How many people? "
		when   = "  time (string) At what time (HH:MM)? "
		window = "  window (boolean, optional) A table by the window? "
	)
	tests := []struct {
		name, answers, want string
	}{{
		name:    "the scripted user",
		answers: "4\n19:30\ny\ndecline\n",
		want: ask1 + guests + "4\n" + when + "19:30\n" + window + "y\n" +
			"result: Booked a table for 4 at 19:30 by the window at Chez Gopher.\n" +
			ask2 + guests + "decline\n" +
			"result: No table booked at The Rusty Crab: you declined.\n",
	}, {
		name:    "an optional field left empty, and a cancel",
		answers: "2\n12:00\n\ncancel\n",
		want: ask1 + guests + "2\n" + when + "12:00\n" + window + "\n" +
			"result: Booked a table for 2 at 12:00 at Chez Gopher.\n" +
			ask2 + guests + "cancel\n" +
			"result: No table booked at The Rusty Crab: you cancelled.\n",
	}, {
		name:    "answers of the wrong type are asked again",
		answers: "four\n4\n19:30\nmaybe\nno\ndecline\n",
		want: ask1 + guests + "four\n  integer, please: 4\n" + when + "19:30\n" + window + "maybe\n  boolean, please: no\n" +
			"result: Booked a table for 4 at 19:30 at Chez Gopher.\n" +
			ask2 + guests + "decline\n" +
			"result: No table booked at The Rusty Crab: you declined.\n",
	}, {
		name:    "the server checks the answer",
		answers: "2\n8pm\nn\n",
		want: ask1 + guests + "2\n" + when + "8pm\n" + window + "n\n" +
			`result: cannot book 2 guests at "8pm"` + "\n" +
			ask2 + guests + "\n" + // the input ends: the user walked away
			"result: No table booked at The Rusty Crab: you cancelled.\n",
	}}
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				var out strings.Builder
				if err := run(t.Context(), version, strings.NewReader(tt.answers), true, &out); err != nil {
					t.Fatalf("%v; output:\n%s", err, out.String())
				}
				if want := "connected (protocol " + version + ")\n" + tt.want; out.String() != want {
					t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
				}
			})
		}
	}
}
