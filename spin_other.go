//go:build !unix

package mcp

import (
	"io"
	"os"
)

// newSpinReader is unix only: elsewhere an OS pipe is read as it is.
func newSpinReader(f *os.File) io.Reader { return nil }
