package mcp

import (
	"context"
	"time"
)

// sharedCallTimeout bounds a call to a shared store or the broadcaster
// that no request's context bounds: stores bound their own calls (as
// mcpredis's WithTimeout does), this is the backstop, so that nothing waits
// on one for ever.
const sharedCallTimeout = 10 * time.Second

// storeCtx is the context of such a call.
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), sharedCallTimeout)
}
