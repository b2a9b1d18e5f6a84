package mcp

import (
	"context"
	"slices"
	"testing"
)

// TestMemoryBroadcaster: every subscriber of a channel gets each message
// in order, another channel's subscriber none, and a stopped one no more.
func TestMemoryBroadcaster(t *testing.T) {
	ctx := context.Background()
	b := NewMemoryBroadcaster()
	var got1, got2, other []string
	stop1, _ := b.Subscribe(ctx, "c", func(m []byte) { got1 = append(got1, string(m)) })
	b.Subscribe(ctx, "c", func(m []byte) { got2 = append(got2, string(m)) })
	b.Subscribe(ctx, "d", func(m []byte) { other = append(other, string(m)) })
	b.Publish(ctx, "c", []byte("a"))
	b.Publish(ctx, "c", []byte("b"))
	stop1()
	stop1() // twice is harmless
	b.Publish(ctx, "c", []byte("c"))
	if !slices.Equal(got1, []string{"a", "b"}) || !slices.Equal(got2, []string{"a", "b", "c"}) || other != nil {
		t.Fatalf("got %q, %q, %q", got1, got2, other)
	}
	// A subscriber may stop itself from within deliver.
	var stop3 func()
	n := 0
	stop3, _ = b.Subscribe(ctx, "e", func([]byte) { n++; stop3() })
	b.Publish(ctx, "e", nil)
	b.Publish(ctx, "e", nil)
	if n != 1 {
		t.Fatalf("delivered %d times after stopping", n)
	}
}
