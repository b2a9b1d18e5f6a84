//go:build !unix && !windows

package mcp

import "time"

var processStart = time.Now()

// processUsage is the time since the tests started, where the process's
// CPU time is not at hand (js and wasip1 run on one thread, so it is never
// less than the CPU used); the page faults are not counted.
func processUsage() (cpu time.Duration, faults int64) {
	return time.Since(processStart), 0
}
