package mcp

import (
	"math"
	"testing"
	"time"
)

func TestPeerDurationClampsBeforeConverting(t *testing.T) {
	maxMs := time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond
	maxS := time.Duration(math.MaxInt64/int64(time.Second)) * time.Second
	for _, c := range []struct {
		n    int64
		unit time.Duration
		want time.Duration
	}{
		{0, time.Millisecond, 0},
		{-1, time.Millisecond, 0},
		{math.MinInt64, time.Second, 0},
		{1500, time.Millisecond, 1500 * time.Millisecond},
		{9223372036855, time.Millisecond, maxMs}, // the TTL that once overflowed
		{math.MaxInt64, time.Millisecond, maxMs},
		{math.MaxInt64, time.Second, maxS},
		{5, 0, 0},
	} {
		if got := peerDuration(c.n, c.unit); got != c.want {
			t.Errorf("peerDuration(%d, %v) = %v, want %v", c.n, c.unit, got, c.want)
		}
	}
}
