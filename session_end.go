package mcp

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// SessionEnd describes a session that ended, for metrics and logs. Both
// sides; see WithSessionEndHandler.
type SessionEnd struct {
	// SessionID is the HTTP session's id (Mcp-Session-Id, or the HTTP+SSE
	// transport's); empty without one.
	SessionID string
	// ProtocolVersion is the revision the session negotiated; empty when
	// none was (2026-07-28, or a connection that failed first).
	ProtocolVersion string
	// Duration is how long the session lasted.
	Duration time.Duration
	// Err is why the session ended; nil when it ended normally: on the
	// client, Close; on the server, the client went away (end of input,
	// DELETE of the HTTP session, the HTTP+SSE event stream closed).
	Err error
}

// WithSessionEndHandler calls h once when a session ends. On the client a
// session is the connection, from Connect to Close, or to its failure (a
// Connect that fails ends one too). On the server it is a legacy HTTP
// session, a connection served by Serve (stdio, a pipe), or an HTTP+SSE
// session; a 2026-07-28 HTTP request belongs to no session and never calls
// h. h runs on the goroutine that ended the session and should not block.
// Handlers given in several options are all called, in order. It
// configures either peer.
func WithSessionEndHandler(h func(SessionEnd)) Option {
	return bothOption(func(c *config) {
		if h == nil {
			return
		}
		if prev := c.sessionEnd; prev != nil {
			c.sessionEnd = func(e SessionEnd) { prev(e); h(e) }
			return
		}
		c.sessionEnd = h
	})
}

// The causes of a session's normal end on the server side, besides the end
// of its input.
var (
	errSessionDeleted    = errors.New("the client ended the session")
	errEventStreamClosed = errors.New("the client closed the event stream")
)

// errClientClosed is the cause of a client connection's end by Close.
var errClientClosed = errors.New("client closed")

// watchEnd has the session's end reported to the handler of
// WithSessionEndHandler, if there is one.
func (ss *serverSession) watchEnd(c *conn) {
	h := ss.srv.cfg.sessionEnd
	if h == nil {
		return
	}
	ss.started = time.Now()
	c.onClose = func(cause error) {
		version, session := ss.describe()
		if errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrClosedPipe) || errors.Is(cause, syscall.EPIPE) ||
			cause == errSessionDeleted || cause == errEventStreamClosed {
			cause = nil
		}
		h(SessionEnd{SessionID: session, ProtocolVersion: version, Duration: time.Since(ss.started), Err: cause})
	}
}

// watchEnd has the end of the connection made at start reported to the
// handler of WithSessionEndHandler, if there is one.
func (c *Client) watchEnd(conn *conn, start time.Time) {
	if c.cfg.sessionEnd == nil {
		return
	}
	conn.onClose = func(cause error) { c.ended(start, cause) }
}

// ended reports the end of the client's session, begun at start, to the
// handler of WithSessionEndHandler.
func (c *Client) ended(start time.Time, cause error) {
	h := c.cfg.sessionEnd
	if h == nil {
		return
	}
	if cause == errClientClosed {
		cause = nil
	}
	version, session := c.describe()
	h(SessionEnd{SessionID: session, ProtocolVersion: version, Duration: time.Since(start), Err: cause})
}
