package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTasks runs the program with short steps and reads what it printed
// on each era: the polled statuses move forward and end completed, the
// result comes, the status messages of the waited-on call arrive in order
// as progress, and the cancelled task ends cancelled.
func TestTasks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out strings.Builder
	const steps = 4
	if err := run(ctx, &out, steps, 20*time.Millisecond); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())

	eras := strings.Split(out.String(), "== ")[1:]
	if len(eras) != 2 || !strings.HasPrefix(eras[0], "2025-11-25\n") || !strings.HasPrefix(eras[1], "2026-07-28\n") {
		t.Fatalf("want a part for each era:\n%s", out.String())
	}
	for _, part := range eras {
		lines := strings.Split(strings.TrimSpace(part), "\n")
		era := lines[0]
		// shard reads the step n of "shard n of steps" at the end of line
		// and checks that it moved forward from *last.
		shard := func(line string, last *int) {
			t.Helper()
			var n, of int
			if _, err := fmt.Sscanf(line[strings.Index(line, "shard"):], "shard %d of %d", &n, &of); err != nil || of != steps || n <= *last || n > steps {
				t.Errorf("%s: line %q after shard %d", era, line, *last)
			}
			*last = n
		}
		var next int // the index of the line to read
		expect := func(want string) {
			t.Helper()
			if next >= len(lines) || lines[next] != want {
				t.Fatalf("%s: line %d: want %q in\n%s", era, next, want, part)
			}
			next++
		}
		next = 1
		expect("started: working")
		polled := 0
		for next < len(lines) && strings.HasPrefix(lines[next], "status: working shard") {
			shard(lines[next], &polled)
			next++
		}
		if next < len(lines) && strings.HasPrefix(lines[next], "status: completed") {
			next++
		} else {
			t.Fatalf("%s: the polling did not see the task complete:\n%s", era, part)
		}
		expect(fmt.Sprintf("result: reindexed %d shards", steps))
		progressed := 0
		for next < len(lines) && strings.HasPrefix(lines[next], "progress: ") {
			shard(lines[next], &progressed)
			next++
		}
		expect(fmt.Sprintf("called: reindexed %d shards", steps))
		expect("after cancel: cancelled")
		if next != len(lines) {
			t.Errorf("%s: more lines than expected:\n%s", era, part)
		}
	}
}
