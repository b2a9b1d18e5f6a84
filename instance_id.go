package mcp

// This file holds the name an instance of a server draws for itself, which
// both the broadcaster's fan-out and the shared legacy sessions use.

import "crypto/rand"

// newInstanceID names a handler or a fan-out among the instances of a
// server: short, random, and without the '_' that ends a stream id in an
// SSE event id.
func newInstanceID() string {
	return rand.Text()[:12]
}
