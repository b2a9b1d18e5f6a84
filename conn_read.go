package mcp

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// A client connection over an OS pipe lets the caller waiting for a
// response read it itself, when nobody else is reading: the response then
// needs no hand-off from the reader's goroutine to the caller's, which on
// a multi-core machine costs a thread wake-up on each side of the pipe.
// The reading goroutine stops after a response when no call waits for
// one; the next call's caller reads (readFor) until its own response has
// come, and hands the reading back. Whenever nobody reads for
// callerReadIdle, or a caller stops reading before its response came
// (callerReadSpan, its context, its deadline), the reading goroutine
// starts again, so that what the server sends unprompted is read without
// waiting for a call.
const (
	readerRuns   = iota // the reading goroutine reads
	readerFree          // nobody reads: the idle timer runs
	readerCaller        // a waiting caller reads (readFor)
)

// reader is who reads a stream connection.
type reader struct {
	state atomic.Int32 // readerRuns, readerFree or readerCaller
	// callerReads: a client's callers read their own responses (readFor),
	// when asked for (connMode) and the transport allows it.
	callerReads bool
	idleFor     time.Duration // how long the reading may rest
	idle        *time.Timer   // starts the reader when nobody reads
}

// callerReadIdle is how long the reading may rest between a response and
// the next call before the reading goroutine starts again (reader.idleFor).
const callerReadIdle = 100 * time.Microsecond

// pauseReading stops the reading goroutine after a response when no call
// waits and nothing read waits to be handled; it reports whether the
// goroutine is to return.
func (c *conn) pauseReading() bool {
	if c.t.(pipeTransport).buffered() > 0 || c.waiting() || !c.r.state.CompareAndSwap(readerRuns, readerFree) {
		return false
	}
	if c.waiting() && c.r.state.CompareAndSwap(readerFree, readerRuns) {
		// A call was sent in between and its caller found the reading
		// still taken: read for it.
		return false
	}
	c.r.idle.Reset(c.r.idleFor)
	return true
}

// waiting reports whether a call waits for its response.
func (c *conn) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// resumeReading starts the reading goroutine if nobody reads.
func (c *conn) resumeReading() {
	if !c.holdReader() {
		return
	}
	if c.r.state.CompareAndSwap(readerFree, readerRuns) {
		go c.readLoop()
		return
	}
	c.wg.Done()
}

// callerReadSpan is how long a caller reads for its own response before it
// hands the reading to a goroutine and waits as any caller does: a call
// that takes longer gains nothing from it, and a cancelled context is
// noticed, at the latest, when the span ends.
const callerReadSpan = time.Millisecond

// readFor reads on the caller's goroutine until call is answered, for at
// most callerReadSpan, or less if ctx or the call's deadline ends sooner;
// then it hands the reading back. The caller's await takes it from there,
// as if another goroutine had read. Progress for the call is delivered as
// it is read.
func (c *conn) readFor(ctx context.Context, call *pendingCall) {
	// The idle timer is left running: if it runs while this caller reads,
	// it finds the reading taken and does nothing, and the caller sets it
	// again when it hands the reading back. Stopping it here would cost a
	// timer update a call.
	t := c.t.(pipeTransport)
	until := time.Now().Add(callerReadSpan)
	if call.deadline != nil {
		if next := call.deadline.next(); next.Before(until) {
			until = next
		}
	}
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	t.setReadDeadline(until)
	for ctx.Err() == nil {
		select {
		case <-call.done:
			c.handReading(false)
			return
		default:
		}
		data, err := c.t.ReadMessage()
		switch {
		case err == nil:
			c.readFrame(data, false)
			call.runProgress()
			continue
		case errors.Is(err, ErrMessageTooLarge):
			c.log.Warn("dropping an oversized message", "err", err)
			c.queueError(ID{}, &Error{Code: CodeInvalidRequest, Message: untitledText(err)}, nil)
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
		default:
			c.close(err)
			return
		}
		break
	}
	c.handReading(true)
}

// handReading ends a caller's reading: to the reading goroutine if other
// calls wait, something read waits, or the caller was interrupted;
// otherwise the next caller may read, or the idle timer starts the goroutine.
func (c *conn) handReading(interrupted bool) {
	t := c.t.(pipeTransport)
	t.setReadDeadline(time.Time{})
	if !interrupted && t.buffered() == 0 && !c.waiting() {
		c.r.state.Store(readerFree)
		if !c.waiting() || !c.r.state.CompareAndSwap(readerFree, readerRuns) {
			c.r.idle.Reset(c.r.idleFor)
			return
		}
	} else {
		c.r.state.Store(readerRuns)
	}
	if c.holdReader() {
		go c.readLoop()
	}
}

// holdReader counts a reading goroutine about to start, unless the
// connection is closed, when it reports false: counted before the reading
// changes hands, so that the old reader, which returns once it sees the
// change, never lets the count reach zero in between, and never after
// close's wait may be over.
func (c *conn) holdReader() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}
