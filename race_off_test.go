//go:build !race

package mcp

// raceEnabled: see race_on_test.go.
const raceEnabled = false
