package mcp

// pushConn is the engine as the HTTP handler drives it, its one seam: the
// handler pushes in each message it receives, with the route that messages
// about it take back (an HTTP stream), and gets back through its
// pushTransport every message the engine writes, each with the id of the
// inbound request it relates to. The handler touches the connection in no
// other way.
type pushConn interface {
	// handleMessage takes one decoded message; inline runs a request on
	// the calling goroutine, which waits for its answer anyway.
	handleMessage(m *wireMessage, route any, inline bool)
	// handleFrame takes the bytes of a message or a batch, which it
	// answers with an error when they are not well formed.
	handleFrame(data []byte, route any)
	// cancelInbound cancels the handler of inbound request id, if it runs.
	cancelInbound(id ID, reason string)
	// cancelHandlers cancels every handler's context; the connection stays
	// open and what the handlers answer is still written.
	cancelHandlers(cause error)
	// batchesAllowed reports whether the session accepts JSON-RPC batches.
	batchesAllowed() bool
	// close ends the connection and closes its transport.
	close(cause error)
}

// pushTransport is the transport of a pushConn. Its owner pushes inbound
// messages into the engine, so the engine runs no reader and no writer
// goroutine, and each write is done inline by writeRouted, which must be
// safe for concurrent use and must not block on a slow peer. The message is
// handed over as the engine's pooled buffer: the transport copies what it
// keeps (ownable) and may give the buffer back to the pool once written.
type pushTransport interface {
	writeRouted(o outgoing) error
	// subscribed tells the transport that the peer asked for messages
	// outside any request (resources/subscribe), which need somewhere to
	// wait until the peer comes for them.
	subscribed()
}

// pushSession makes a server session over HTTP streams, ready for the
// handler to push messages into, acting for principal: the one the
// handler's authorizer named (empty: anonymous), which binds the session's
// 2026-07-28 requestStates and which its handlers see.
func (s *Server) pushSession(t *streamTransport, mode connMode, principal string) (*serverSession, pushConn) {
	ss, c := s.newSession(t, mode)
	ss.principal = principal
	return ss, c
}
