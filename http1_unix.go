//go:build unix

package mcp

import (
	"net"
	"syscall"
)

// peekAlive reports whether the server keeps the idle connection nc open:
// nothing is waiting to be read on it, neither data nor its end. It does
// not block.
func peekAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait for the descriptor
	})
	return err == nil && alive
}
