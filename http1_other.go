//go:build !unix

package mcp

import "net"

// peekAlive reports whether the server keeps the idle connection nc open.
// Here it cannot look without blocking and assumes so; a request that then
// fails to go out is sent again on a fresh connection.
func peekAlive(net.Conn) bool { return true }
