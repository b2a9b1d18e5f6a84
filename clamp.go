package mcp

import (
	"math"
	"time"
)

// peerDuration converts n units that a peer sent (a TTL in milliseconds,
// an expires_in in seconds) into a Duration. n is clamped before it is
// multiplied, so no value can overflow: a negative n is 0 and one too
// large for a Duration is the largest whole number of units. Callers then
// cap the result by their own limit.
func peerDuration(n int64, unit time.Duration) time.Duration {
	if n <= 0 || unit <= 0 {
		return 0
	}
	if limit := int64(math.MaxInt64 / unit); n > limit {
		n = limit
	}
	return time.Duration(n) * unit
}
