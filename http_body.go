package mcp

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// bodyChunkSize is the size of the pooled buffer a POST body is read into
// as it arrives: what a request that announces a body and sends nothing
// holds while the handler waits for it.
const bodyChunkSize = 16 << 10

var errBodyTooLong = errors.New("the body is longer than its Content-Length")

var bodyChunks = sync.Pool{New: func() any { return new([bodyChunkSize]byte) }}

// readArriving reads an HTTP body (a POST's at the handler, a JSON answer's
// at the client) to its end, at most limit bytes, as it arrives: each read lands in a pooled chunk, and the body grows only by
// what was received, never to an announced length that the client has
// not sent. announced (the Content-Length, or -1) caps the growth, so
// that a body that does arrive whole ends in a buffer of its size, and a
// body that ends short of it, or runs past it, is an error.
//
// The body is a fresh buffer, never pooled: the envelope and the params
// handed to handlers slice it, and a handler may keep them.
func readArriving(r io.Reader, announced, limit int64) ([]byte, error) {
	chunk := bodyChunks.Get().(*[bodyChunkSize]byte)
	defer bodyChunks.Put(chunk)
	body := []byte{} // an empty body is not a refused one (nil)
	for {
		n, err := r.Read(chunk[:])
		if n > 0 {
			if int64(len(body)+n) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			if announced >= 0 && int64(len(body)+n) > announced {
				// net/http cuts a body at its length; a reader that
				// does not is not to be trusted.
				return nil, errBodyTooLong
			}
			body = appendArrived(body, chunk[:n], announced)
		}
		if err == io.EOF {
			if announced >= 0 && int64(len(body)) < announced {
				return nil, io.ErrUnexpectedEOF
			}
			return body, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// appendArrived appends data to body, doubling its capacity when it must
// grow, but never past announced when that is enough: a body that arrives
// in one read costs one buffer of its size, a long one at most twice what
// arrived.
func appendArrived(body, data []byte, announced int64) []byte {
	need := len(body) + len(data)
	if need > cap(body) {
		size := max(2*cap(body), need)
		if announced >= int64(need) && int64(size) > announced {
			size = int(announced)
		}
		grown := make([]byte, len(body), size)
		copy(grown, body)
		body = grown
	}
	return append(body, data...)
}
