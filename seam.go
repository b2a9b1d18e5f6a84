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
	handleMessage(m *wireMessage, route msgRoute, inline bool)
	// handleFrame takes the bytes of a message or a batch, which it
	// answers with an error when they are not well formed.
	handleFrame(data []byte, route msgRoute)
	// cancelInbound cancels the handler of inbound request id, if it runs.
	cancelInbound(id ID, reason string)
	// cancelHandlers cancels every handler's context; the connection stays
	// open and what the handlers answer is still written.
	cancelHandlers(cause error)
	// batchesAllowed reports whether the session accepts JSON-RPC batches.
	batchesAllowed() bool
	// awaits reports whether one of the engine's calls to the peer waits
	// for a response to id.
	awaits(id ID) bool
	// busy reports whether a request or notification of the peer is still
	// being handled, whether or not an HTTP request waits for it.
	busy() bool
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
	// sessionChanged tells the transport that the session's negotiated
	// state (sessionRecord) changed: initialize, logging/setLevel,
	// resources/subscribe or unsubscribe, as change says (empty for
	// initialize). The method fails with its error, so that a change is
	// never answered before it is kept.
	sessionChanged(change sessionChange) error
	// detached tells the transport that its request, a long-lived one
	// admitted by its own bound, gave its in-flight slot back
	// (conn.detachInbound).
	detached()
	// peer is the host an anonymous 2026-07-28 request came from, which
	// alone tells such callers apart for the bounds kept per caller
	// (behind a proxy, the proxy's); empty when unknown.
	peer() string
}

// pushSession makes a server session over HTTP streams, ready for the
// handler to push messages into, acting for principal: the one the
// handler's authorizer named (empty: anonymous), which binds the session's
// 2026-07-28 requestStates and which its handlers see. sessionID is the
// HTTP session's id, empty for none (a 2026-07-28 request's).
func (s *Server) pushSession(t *streamTransport, mode connMode, principal, sessionID string) (*serverSession, pushConn) {
	ss, c := s.newSession(t, mode)
	ss.principal, ss.sessionID = principal, sessionID
	return ss, c
}

// sessionChange is one change of a legacy session's state after its
// initialize, which the engine tells its push transport (sessionChanged),
// and the copies of a shared session tell each other.
type sessionChange struct {
	Subscribe   string `json:"subscribe,omitempty"`
	Unsubscribe string `json:"unsubscribe,omitempty"`
	LogLevel    string `json:"logLevel,omitempty"`
}

// changed tells a push transport that the session's state changed; its
// error is the request's.
func (ss *serverSession) changed(c sessionChange) error {
	if ss.conn.push == nil {
		return nil
	}
	if err := ss.conn.push.sessionChanged(c); err != nil {
		return &Error{Code: CodeInternalError, Message: "Internal error: the session store failed to keep the session: " + err.Error()}
	}
	return nil
}

// A msgRoute says how the messages about a request travel back over a push
// transport: the HTTP room gives one with each message it pushes in, the
// engine carries it to every message about that request and hands it back
// to the transport (writeRouted), never looking inside. nil: the
// transport's default place (a session's GET stream, a POST's stream).
// Its methods name no HTTP type: the linker keeps every type an interface's
// methods mention, so a stdio program would carry net/http's.
type msgRoute interface {
	// relayID names the message among the copies of a shared session
	// (cluster_session_relay.go): the id another copy handed it with, or the
	// announcement's, and whether every session gets it; "" for none.
	relayID() (id string, wide bool)
}

// relayIDOf returns the id a message's route gives it, and whether it is
// server-wide; a nil route gives none.
func relayIDOf(route msgRoute) (id string, wide bool) {
	if route == nil {
		return "", false
	}
	return route.relayID()
}

func (s *httpStream) relayID() (string, bool)     { return "", false }
func (r serverWideRoute) relayID() (string, bool) { return r.id, true }

// serverWideRoute is the route of a message that every session gets
// (Server.broadcast). Over HTTP it belongs to no request; of the copies of
// a legacy session that several instances share, each of which gets it
// from its own Server, only one delivers it. id names the announcement on
// every instance (serverMessage.ID; "" for one made here only).
type serverWideRoute struct{ id string }

var _ pushTransport = (*streamTransport)(nil)
