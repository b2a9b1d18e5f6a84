package mcp

import (
	"fmt"
)

// writeBacklog is how many queued bytes make handler writes wait for the
// writer, so a peer that stops reading cannot grow memory without bound.
const writeBacklog = 8 << 20

// queueWrite hands a message to the writer. Control writes (from the reader,
// cancellations) never wait; others wait while the backlog is over
// writeBacklog, so a peer that stops reading slows its handlers instead of
// growing memory.
func (c *conn) queueWrite(o outgoing, control bool) error {
	if c.push != nil {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return c.closedErr()
		}
		return c.push.writeRouted(o)
	}
	for {
		c.wmu.Lock()
		if c.wclosed {
			c.wmu.Unlock()
			return c.closedErr()
		}
		if !control && !c.wbusy && len(c.wqueue) == 0 {
			// Nobody is writing: write on this goroutine rather than hand
			// the message to the writer, saving a goroutine switch.
			c.wbusy = true
			c.wmu.Unlock()
			err := c.writeOne(o)
			c.wmu.Lock()
			c.writerIdleLocked()
			more := len(c.wqueue) > 0
			c.wmu.Unlock()
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
		if control || c.wbytes < writeBacklog {
			c.wqueue = append(c.wqueue, o)
			c.wbytes += len(o.data)
			c.wmu.Unlock()
			c.wakeWriter()
			return nil
		}
		space := c.wspace
		c.wwaiters++
		c.wmu.Unlock()
		select {
		case <-space:
		case <-c.done:
		}
		c.wmu.Lock()
		c.wwaiters--
		c.wmu.Unlock()
	}
}

// writerIdleLocked marks that nobody writes, waking a flushWrites waiting
// for that.
func (c *conn) writerIdleLocked() {
	c.wbusy = false
	if c.wflushed != nil {
		close(c.wflushed)
		c.wflushed = nil
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
		c.wmu.Lock()
		if c.wclosed || (!c.wbusy && len(c.wqueue) == 0) {
			c.wmu.Unlock()
			return
		}
		if c.wbusy {
			if c.wflushed == nil {
				c.wflushed = make(chan struct{})
			}
			flushed := c.wflushed
			c.wmu.Unlock()
			select {
			case <-flushed:
			case <-c.done:
				return
			}
			continue
		}
		c.wmu.Unlock()
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
	c.wmu.Lock()
	if c.wbusy || len(c.wqueue) == 0 {
		c.wmu.Unlock()
		return false, nil
	}
	c.wbusy = true
	*batch, c.wqueue = c.wqueue, (*batch)[:0]
	c.wbytes = 0
	if c.wwaiters > 0 {
		close(c.wspace)
		c.wspace = make(chan struct{})
	}
	c.wmu.Unlock()
	err := c.writeBatch(*batch, frames)
	c.wmu.Lock()
	c.writerIdleLocked()
	c.wmu.Unlock()
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
	case c.wwake <- struct{}{}:
	default:
	}
}

// writeLoop is the serialised writer for whatever could not be written at
// once: it takes everything queued and writes it as one batch, so
// concurrent senders share writes and flushes. Only one goroutine writes at
// a time (wbusy); an inline writer that finds a queue when it is done wakes
// this loop.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	var batch []outgoing
	var frames [][]byte
	for {
		select {
		case <-c.wwake:
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

// writeOne writes a single message, as writeBatch would.
func (c *conn) writeOne(o outgoing) error {
	if x, ok := c.t.(exchangeTransport); ok {
		return x.writeOwned(o.data)
	}
	if err := c.t.WriteMessage(o.data); err != nil {
		return err
	}
	recycleMessage(o.data)
	return nil
}

func (c *conn) writeBatch(batch []outgoing, frames *[][]byte) error {
	if x, ok := c.t.(exchangeTransport); ok {
		for _, o := range batch {
			if err := x.writeOwned(o.data); err != nil {
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
