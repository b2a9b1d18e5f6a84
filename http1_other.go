//go:build !unix

package mcp

// aliveProbe has nothing to hold where a connection cannot look at itself.
type aliveProbe struct{}

// peekAlive reports whether the server keeps the idle connection open.
// Here it cannot look without blocking and assumes so. A request on a
// connection the server did close goes again on a new one only if none of
// it went out, or if it is idempotent and got no answer; a POST the
// server may have seen fails.
func (c *http1Conn) peekAlive() bool { return true }
