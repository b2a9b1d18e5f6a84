package mcp

import (
	"errors"
	"fmt"
	"sync"
)

// writer is the state of a connection's serialised writer.
type writer struct {
	mu      sync.Mutex
	queue   []outgoing
	bytes   int           // queued
	wake    chan struct{} // wakes writeLoop
	space   chan struct{} // closed when the backlog drains, if anyone waits
	waiters int           // how many wait for space
	busy    bool          // a goroutine is writing
	closed  bool
	flushed chan struct{} // closed when the goroutine writing stops, if anyone waits
}

// queuedSize is what a queued message counts against the write backlog:
// the buffer that holds it, which may be a pooled one larger than the
// message, so that the limit bounds the memory held.
func queuedSize(o outgoing) int { return cap(o.data) }

// errNotReading is the cause of a connection closed because its peer does
// not read what it is sent.
type errNotReading struct{ backlog, message, limit int }

func (e *errNotReading) Error() string {
	return fmt.Sprintf("mcp: the peer is not reading: %d bytes are queued for it and a further %d would pass the write backlog limit of %d", e.backlog, e.message, e.limit)
}

// writeMode says what a write does when the write backlog is full.
type writeMode int

const (
	// mayWait writes (handlers' messages) wait until the peer reads.
	mayWait writeMode = iota
	// mustQueue writes (the reader's error replies) must not wait: the
	// reader would stop. One that finds the backlog full closes the
	// connection, since the peer is not reading.
	mustQueue
	// mayDrop writes (notifications/cancelled, which the peer may miss as
	// the spec allows) are dropped when the backlog is full.
	mayDrop
)

// errBacklogFull is the error of a mayDrop write that found the write
// backlog full.
var errBacklogFull = errors.New("mcp: the write backlog is full")

// queueWrite hands a message to the writer. Every queued message counts
// against the write backlog (WithWriteBacklog); what a message that would
// take the backlog past the limit does is its mode's. A message larger than
// the limit is queued only when nothing else is.
func (c *conn) queueWrite(o outgoing, mode writeMode) error {
	if c.push != nil {
		if err := c.closedErr(); err != nil {
			return err
		}
		return c.push.writeRouted(o)
	}
	size, limit := queuedSize(o), c.cfg.writeBacklog
	for {
		c.w.mu.Lock()
		if c.w.closed {
			c.w.mu.Unlock()
			return c.closedErr()
		}
		if mode == mayWait && !c.w.busy && len(c.w.queue) == 0 {
			// Nobody is writing: write on this goroutine rather than hand
			// the message to the writer, saving a goroutine switch.
			c.w.busy = true
			c.w.mu.Unlock()
			err := c.writeBatch([]outgoing{o}, nil)
			c.w.mu.Lock()
			c.writerIdleLocked()
			more := len(c.w.queue) > 0
			c.w.mu.Unlock()
			if err != nil {
				c.log.Warn("write failed; closing the connection", "err", err)
				c.close(fmt.Errorf("write: %w", err))
				return c.closedErr()
			}
			if more {
				c.wakeWriter()
			}
			return nil
		}
		if c.w.bytes == 0 || c.w.bytes+size <= limit {
			c.w.queue = append(c.w.queue, o)
			c.w.bytes += size
			c.w.mu.Unlock()
			c.wakeWriter()
			return nil
		}
		switch mode {
		case mayDrop:
			c.w.mu.Unlock()
			return errBacklogFull
		case mustQueue:
			backlog := c.w.bytes
			c.w.mu.Unlock()
			c.log.Error("the peer is not reading; closing the connection", "backlog", backlog, "message", size, "limit", limit)
			c.close(&errNotReading{backlog: backlog, message: size, limit: limit})
			return c.closedErr()
		}
		space := c.w.space
		c.w.waiters++
		c.w.mu.Unlock()
		select {
		case <-space:
		case <-c.done:
		}
		c.w.mu.Lock()
		c.w.waiters--
		c.w.mu.Unlock()
	}
}

// writerIdleLocked marks that nobody writes, waking a flushWrites waiting
// for that.
func (c *conn) writerIdleLocked() {
	c.w.busy = false
	if c.w.flushed != nil {
		close(c.w.flushed)
		c.w.flushed = nil
	}
}

// flushWrites writes whatever is queued, on this goroutine, or waits for the
// goroutine that is writing; it returns early if the connection closes.
func (c *conn) flushWrites() {
	if c.push != nil {
		return // writes are not queued
	}
	var batch []outgoing
	for {
		c.w.mu.Lock()
		if c.w.closed || (!c.w.busy && len(c.w.queue) == 0) {
			c.w.mu.Unlock()
			return
		}
		if c.w.busy {
			if c.w.flushed == nil {
				c.w.flushed = make(chan struct{})
			}
			flushed := c.w.flushed
			c.w.mu.Unlock()
			select {
			case <-flushed:
			case <-c.done:
				return
			}
			continue
		}
		c.w.mu.Unlock()
		if _, err := c.writeQueued(&batch, nil); err != nil {
			return
		}
	}
}

// writeQueued takes everything queued, unless another goroutine is
// writing, and writes it as one batch (batch and frames are the caller's
// buffers, reused); it reports whether it wrote. A failed write closes the
// connection.
func (c *conn) writeQueued(batch *[]outgoing, frames *[][]byte) (bool, error) {
	c.w.mu.Lock()
	if c.w.busy || len(c.w.queue) == 0 {
		c.w.mu.Unlock()
		return false, nil
	}
	c.w.busy = true
	*batch, c.w.queue = c.w.queue, (*batch)[:0]
	c.w.bytes = 0
	if c.w.waiters > 0 {
		close(c.w.space)
		c.w.space = make(chan struct{})
	}
	c.w.mu.Unlock()
	err := c.writeBatch(*batch, frames)
	c.w.mu.Lock()
	c.writerIdleLocked()
	c.w.mu.Unlock()
	if err != nil {
		c.log.Warn("write failed; closing the connection", "err", err)
		c.close(fmt.Errorf("write: %w", err))
		return true, err
	}
	clear(*batch)
	return true, nil
}

func (c *conn) wakeWriter() {
	select {
	case c.w.wake <- struct{}{}:
	default:
	}
}

// writeLoop is the serialised writer for whatever could not be written at
// once: it takes everything queued and writes it as one batch, so
// concurrent senders share writes and flushes. Only one goroutine writes at
// a time (busy); a caller that wrote inline and finds a queue when it is
// done wakes this loop.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	var batch []outgoing
	var frames [][]byte
	for {
		select {
		case <-c.w.wake:
		case <-c.done:
			return
		}
		for {
			wrote, err := c.writeQueued(&batch, &frames)
			if err != nil {
				return
			}
			if !wrote {
				break
			}
		}
	}
}

// writeBatch writes the messages of batch, in one write where the transport
// can (frames is the caller's buffer, reused; nil for a single message).
func (c *conn) writeBatch(batch []outgoing, frames *[][]byte) error {
	if x, ok := c.t.(exchangeTransport); ok {
		for _, o := range batch {
			if err := x.writeOwned(ownable(o.data)); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if p, ok := c.t.(pipeTransport); ok && len(batch) > 1 && frames != nil {
		*frames = (*frames)[:0]
		for _, o := range batch {
			*frames = append(*frames, o.data)
		}
		err = p.writeBatch(*frames)
		clear(*frames)
	} else {
		for _, o := range batch {
			if err = c.t.WriteMessage(o.data); err != nil {
				break
			}
		}
	}
	if err == nil {
		// A Transport does not keep a message past its write.
		for _, o := range batch {
			recycleMessage(o.data)
		}
	}
	return err
}
