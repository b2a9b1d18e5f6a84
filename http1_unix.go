//go:build unix

package mcp

import "syscall"

// aliveProbe is how a connection looks at itself while idle; made on the
// first look, so that a look allocates nothing.
type aliveProbe struct {
	rc    syscall.RawConn
	look  func(fd uintptr) bool // peek, as a value made once
	alive bool
	buf   [1]byte
}

func (p *aliveProbe) peek(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	return true // never wait for the descriptor
}

// peekAlive reports whether the server keeps the idle connection open:
// nothing is waiting to be read on it, neither data nor its end. It does
// not block. Only the goroutine that took c from the pool calls it.
func (c *http1Conn) peekAlive() bool {
	p := &c.probe
	if p.look == nil {
		sc, ok := c.nc.(syscall.Conn)
		if !ok {
			return true
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		p.rc, p.look = rc, p.peek
	}
	p.alive = false
	err := p.rc.Read(p.look)
	return err == nil && p.alive
}
