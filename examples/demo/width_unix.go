//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// askWidth says that windowWidth asks the system, so a device it gets no
// width of is no terminal.
const askWidth = true

// windowWidth asks the terminal driver for the width of the terminal f is
// on (the TIOCGWINSZ ioctl); ok is false when f is not a terminal.
func windowWidth(f *os.File) (cols int, ok bool) {
	var size winsize
	if err := ioctl(f, syscall.TIOCGWINSZ, unsafe.Pointer(&size)); err != nil {
		return 0, false
	}
	return int(size.cols), true
}

// winsize is the terminal size the TIOCGWINSZ and TIOCSWINSZ ioctls use.
type winsize struct{ rows, cols, xpixels, ypixels uint16 }

// ioctl makes the ioctl req on f with arg.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := conn.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
