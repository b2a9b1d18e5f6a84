//go:build unix

package mcp

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// spinReader reads an OS pipe (or any pollable file): when nothing is there
// to read it tries again, yielding the processor between tries, for up to
// pipeSpinSpan (and pipeSpinTries) before it waits in the poller. On a
// machine with more than one processor an answer to what was just written
// usually comes within that span, and taking it there saves putting the
// reading thread to sleep and waking it, which costs more than the
// exchange itself (see readFor). With one processor it never spins.
type spinReader struct {
	f  *os.File
	rc syscall.RawConn

	// The read in progress, for readFD (a method value made once, so that
	// a read allocates nothing).
	p      []byte
	n      int
	err    error
	tries  int // tries again so far
	budget int // tries again allowed
	start  time.Time
	readFn func(fd uintptr) bool

	// onWait, when set (by tests), is called with the number of tries a
	// read made when it goes to wait in the poller.
	onWait func(tries int)
}

// How long, and how many times at most, a read tries again before it waits
// in the poller. The tries bound it where the clock does not move (a
// testing/synctest bubble).
const (
	pipeSpinSpan  = 200 * time.Microsecond
	pipeSpinTries = 2048
)

// newSpinReader returns a spinReader of f, or nil when f has no raw
// connection.
func newSpinReader(f *os.File) *spinReader {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	s := &spinReader{f: f, rc: rc}
	s.readFn = s.readFD
	return s
}

func (s *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.p, s.n, s.err, s.tries, s.budget = p, 0, nil, 0, pipeSpinTries
	if runtime.GOMAXPROCS(0) < 2 {
		s.budget = 0 // nothing else could answer while it spins
	}
	err := s.rc.Read(s.readFn)
	n, rerr := s.n, s.err
	s.p = nil
	if err != nil {
		// Closed, or past its deadline: os.File says so in its own words.
		return s.f.Read(p)
	}
	if rerr != nil {
		return 0, &os.PathError{Op: "read", Path: s.f.Name(), Err: rerr}
	}
	if n == 0 {
		return s.f.Read(p) // the end: os.File reports it as it does
	}
	return n, nil
}

// readFD is the raw read: it reports false to wait in the poller.
func (s *spinReader) readFD(fd uintptr) bool {
	for {
		n, err := syscall.Read(int(fd), s.p)
		switch err {
		case nil:
			s.n = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if s.tries == 0 {
				s.start = time.Now()
			}
			if s.tries >= s.budget || (s.tries > 0 && time.Since(s.start) > pipeSpinSpan) {
				if s.onWait != nil {
					s.onWait(s.tries)
				}
				return false
			}
			s.tries++
			runtime.Gosched()
			continue
		}
		s.err = err
		return true
	}
}
