//go:build race

package mcp

// raceEnabled: under the race detector sync.Pool drops a quarter of what
// it is given, on purpose, so that allocation counts through a pool vary.
const raceEnabled = true
