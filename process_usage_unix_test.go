//go:build unix

package mcp

import (
	"syscall"
	"time"
)

// processUsage is the CPU time the process has used, user and system, and
// its page faults that took no I/O (a page the runtime had given back to
// the system, touched again).
func processUsage() (cpu time.Duration, faults int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Minflt) // int32 on some 32-bit systems
}
