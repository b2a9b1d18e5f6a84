package mcp

import (
	"syscall"
	"time"
)

// processUsage is the CPU time the process has used, user and system; the
// page faults are not counted here.
func processUsage() (cpu time.Duration, faults int64) {
	var created, exited, kernel, user syscall.Filetime
	h, _ := syscall.GetCurrentProcess()
	syscall.GetProcessTimes(h, &created, &exited, &kernel, &user)
	ticks := func(f syscall.Filetime) time.Duration { // of 100 ns
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user), 0
}
