package mcp

import (
	"context"
	"errors"
	"io"
)

// A stream connection's reader and its request workers are one pool of
// goroutines that take turns. The goroutine that reads a request (other
// than initialize, which the reader waits for) passes the reading on to a
// parked worker, or to a new goroutine, and serves the request itself:
// reading never waits on a handler, and a request starts without waiting
// for another goroutine to wake. That wait is what a blocking read costs:
// a reader that handed the request over and then blocked in read(2), as
// it does on a child process's standard input, kept its thread while the
// worker waited for the runtime to notice.

// job is an admitted request on its way to a goroutine of the pool, or,
// with read set, the reading.
type job struct {
	ctx  context.Context
	r    request
	read bool
}

// maxIdleWorkers is how many finished handler goroutines a stream
// connection keeps parked for its next requests. A fresh goroutine starts on
// a small stack that every request grows again (encoding/json's reflection
// alone needs more than the initial size); a parked worker keeps its stack.
// The pool grows only as far as the peer's requests overlap, so a client
// running up to this many calls at once finds a worker for each. Workers
// exit when the connection closes.
const maxIdleWorkers = 64

// run is the body of every goroutine of the pool: it reads while it has
// the reading, serves the request it was given or read, then waits parked
// for more while fewer than maxIdleWorkers others wait. Each goroutine of
// the pool holds one count of c.wg.
func (c *conn) run(j job) {
	defer c.wg.Done()
	for {
		if j.read {
			if j = c.readLoop(); j.r == nil {
				return // the input ended
			}
		}
		c.serveRequest(j.ctx, j.r)
		if c.idle.Add(1) > maxIdleWorkers {
			c.idle.Add(-1)
			return
		}
		select {
		case j = <-c.jobs: // the sender counted it out of idle
		case <-c.done:
			c.idle.Add(-1)
			return
		}
	}
}

// readLoop parses and routes until it reads a request to serve, which it
// returns once another goroutine has the reading; it returns no request
// when the input ends. It never runs a handler.
func (c *conn) readLoop() job {
	for {
		data, err := c.t.ReadMessage()
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				c.log.Warn("dropping an oversized message", "err", err)
				c.queueError(ID{}, &Error{Code: CodeInvalidRequest, Message: untitledText(err)}, nil)
				continue
			}
			if errors.Is(err, io.EOF) {
				c.endOfInput(err)
			} else {
				c.close(err)
			}
			return job{}
		}
		if j := c.readRequest(data); j.r != nil {
			c.passReading()
			return j
		}
	}
}

// readRequest handles a frame the reader read, as readFrame does, except
// that a request other than initialize is admitted and returned to be
// served by the reader's goroutine, once it has passed the reading on.
func (c *conn) readRequest(data []byte) job {
	var m wireMessage
	if !decodeSingle(data, false, &m) {
		c.handleFrame(data, nil) // a batch, or an error to answer
		return job{}
	}
	if kind, _ := m.kind(); kind != kindRequest || m.Method == "initialize" {
		c.handleMessage(&m, nil, false)
		return job{}
	}
	id, ok := parseID(m.ID)
	if !ok {
		c.handleMessage(&m, nil, false) // answers the bad id
		return job{}
	}
	ctx, r := c.claimRequest(id, m.Method, m.Params, nil)
	return job{ctx: ctx, r: r}
}

// passReading gives the reading to a parked worker, or to a new goroutine
// of the pool; after close, to no one: the transport is closed.
func (c *conn) passReading() {
	select {
	case c.jobs <- job{read: true}:
		c.idle.Add(-1)
	default:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		c.wg.Add(1)
		go c.run(job{read: true})
	}
}

// scheduleRequest runs an admitted request on a parked worker or a new
// goroutine: a request that came other than through the reader (an HTTP
// client's exchange, a batch).
func (c *conn) scheduleRequest(ctx context.Context, r request) {
	j := job{ctx: ctx, r: r}
	if c.connLoops == nil {
		go c.serveRequest(ctx, r)
		return
	}
	select {
	case c.jobs <- j: // a parked worker takes it
		c.idle.Add(-1)
	default:
		c.mu.Lock()
		if c.closed {
			// The worker would outlive close's wait; serve on a plain
			// goroutine, whose request is counted.
			c.mu.Unlock()
			go c.serveRequest(ctx, r)
			return
		}
		c.wg.Add(1)
		c.mu.Unlock()
		go c.run(j)
	}
}
