package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The relay carries what the instances that hold copies of one shared
// legacy session must tell each other, on the session's channel of the
// server's Broadcaster, "mcp:session:<id>". Each instance that holds a copy
// subscribes for as long as it holds it. A message is the JSON of a
// relayMessage, such as
//
//	{"kind":"response","from":"<instance>","message":{"jsonrpc":"2.0","id":"<instance>-3","result":{}}}
//
// where an instance is the name its handler draws at random
// (newInstanceID).

// relayMessage is one message on a session's channel.
type relayMessage struct {
	// Kind is one of the relay* constants below.
	Kind string `json:"kind"`
	// From is the publishing instance, which ignores its own messages.
	From string `json:"from"`
	// Message is the JSON-RPC message the kind carries, if any; for
	// relayState, the sessionChange.
	Message json.RawMessage `json:"message,omitempty"`
}

const (
	// relayDelete: the session ended (DELETE); every copy goes.
	relayDelete = "delete"
	// relayResponse: the client's response to a request of ours, which
	// landed on an instance whose calls do not wait for it; the instance
	// whose call does takes it.
	relayResponse = "response"
	// relayCancelled: the client's notifications/cancelled, for the
	// instance that runs the request it names.
	relayCancelled = "cancelled"
	// relayEvent: a message for the session's GET stream, made on an
	// instance that does not hold it, for the one that does.
	relayEvent = "event"
	// relayHold: From holds the session's GET stream from now on, opened
	// fresh; the others hand it what waits in their backlogs.
	relayHold = "hold"
	// relayResume: From holds the GET stream from now on, resumed from the
	// event store, which has what waits in the others' backlogs: they drop it.
	relayResume = "resume"
	// relayRelease: From no longer holds the GET stream.
	relayRelease = "release"
	// relayState: the client changed the session's state on From (a
	// subscription, its log level); the other copies make the same change.
	relayState = "state"
	// relayDelivered: From, which holds the GET stream, put these
	// server-wide messages on it (a JSON array of serverMessage ids); the
	// others stop keeping them for the case it dies.
	relayDelivered = "delivered"
	// relayJoin: From made a copy of the session; the holder of the GET
	// stream says so (relayHolding), as the copy missed its relayHold.
	relayJoin = "join"
	// relayHolding: From holds the GET stream, as it held it before.
	relayHolding = "holding"
	// relayKept: the server-wide messages From kept for a holder that
	// never confirmed them, handed to the new holder, which puts each on
	// the stream once, whoever else hands it over (a JSON array of
	// wideMessage): it may have had no copy of the session meanwhile.
	relayKept = "kept"
)

// sessionChannel is the Broadcaster channel of legacy session id.
func sessionChannel(id string) string { return "mcp:session:" + id }

// relay returns the Broadcaster that shared sessions use, or nil when
// sessions are not shared (no SessionStore) or the server has none.
func (h *httpHandler) relay() Broadcaster {
	if h.cfg.sessions == nil {
		return nil
	}
	return h.srv.cfg.server.broadcaster
}

// joinRelay subscribes the session's copy here to its channel, until it
// closes.
func (s *httpSession) joinRelay() error {
	b := s.h.relay()
	if b == nil {
		return nil
	}
	stop, err := b.Subscribe(s.ctx, sessionChannel(s.id), s.deliver)
	if err != nil {
		s.h.log.Warn("cannot subscribe to a legacy session's channel", "session", s.id, "err", err)
		return &sessionStoreError{"subscribe to the channel of", s.id, err}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		stop()
		return nil
	}
	s.shared.stopRelay = stop
	s.mu.Unlock()
	return nil
}

// publish sends a message of kind on the session's channel; a failure is
// logged and returned.
func (s *httpSession) publish(ctx context.Context, kind string, msg []byte) error {
	b := s.h.relay()
	if b == nil {
		return nil
	}
	data, err := json.Marshal(relayMessage{Kind: kind, From: s.h.instance, Message: msg})
	if err == nil {
		err = b.Publish(ctx, sessionChannel(s.id), data)
	}
	if err != nil {
		s.h.log.Warn("cannot publish on a legacy session's channel", "session", s.id, "kind", kind, "err", err)
	}
	return err
}

// deliver takes a message from the session's channel. It runs on the
// Broadcaster's delivery and does not wait for the client; it may wait for
// the event store to keep what it puts on the GET stream, never under a
// lock.
func (s *httpSession) deliver(data []byte) {
	var m relayMessage
	if json.Unmarshal(data, &m) != nil || m.From == s.h.instance {
		return
	}
	switch m.Kind {
	case relayDelete:
		s.h.log.Debug("a legacy session ended on another instance", "session", s.id, "instance", m.From)
		s.conn.close(errors.New("the client ended the session on another instance"))
	case relayResponse:
		if s.conn.awaits(idOf(m.Message)) {
			s.conn.handleFrame(m.Message, nil)
		}
	case relayCancelled:
		// Cancelled as the engine does by default; a user's handler of
		// notifications/cancelled ran where the notification landed.
		var n struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			} `json:"params"`
		}
		if json.Unmarshal(m.Message, &n) != nil {
			return
		}
		if id, ok := parseID(n.Params.RequestID); ok {
			s.conn.cancelInbound(id, n.Params.Reason)
			s.settleCancelled(id)
		}
	case relayEvent:
		if st := s.unsolicitedStream(); st != nil {
			st.push(outgoing{data: m.Message}) // Unmarshal made it ours
		}
	case relayJoin:
		s.mu.Lock()
		holding := s.shared.holding
		s.mu.Unlock()
		if holding {
			// Not from within a delivery, as for relayHold below.
			go s.publish(s.ctx, relayHolding, nil)
		}
	case relayHolding:
		s.mu.Lock()
		if !s.shared.holding && s.shared.holder == "" { // no newer word
			s.shared.holder = m.From
		}
		s.mu.Unlock()
	case relayKept:
		var kept []wideMessage
		s.mu.Lock()
		holding := s.shared.holding
		s.mu.Unlock()
		if holding && json.Unmarshal(m.Message, &kept) == nil {
			s.deliverKept(kept)
		}
	case relayDelivered:
		var ids []string
		if json.Unmarshal(m.Message, &ids) == nil {
			s.confirmed(ids)
		}
	case relayHold, relayResume:
		s.mu.Lock()
		s.shared.holder = m.From
		s.shared.holding = false
		// What the last holder left unconfirmed goes to the new one,
		// which may have had no copy of it.
		kept := s.shared.unconfirmed
		s.shared.unconfirmed, s.shared.early = nil, nil
		st := s.standalone
		s.mu.Unlock()
		if len(kept) > 0 {
			data, _ := json.Marshal(kept)
			go s.publish(s.ctx, relayKept, data) // not from within a delivery: see below
		}
		if st == nil {
			return
		}
		// What was made here before is stored before the new holder,
		// which may wait for this delivery, reads the store to resume.
		st.storeUpTo(s.ctx, st.lastIndex())
		if backlog := st.takeBacklog(); len(backlog) > 0 && m.Kind == relayHold {
			// Not from within a delivery, which may hold up the
			// Broadcaster's next one, this publish's among them.
			go func() {
				for _, data := range backlog {
					s.publish(s.ctx, relayEvent, data)
				}
			}()
		}
	case relayState:
		var change sessionChange
		if json.Unmarshal(m.Message, &change) == nil && s.ss.apply(change) {
			s.standaloneStream() // its updates need somewhere to wait
		}
	case relayRelease:
		s.mu.Lock()
		if s.shared.holder == m.From {
			// Its stream, stored on, has what was left unconfirmed.
			s.shared.holder = ""
			s.shared.unconfirmed, s.shared.early = nil, nil
		}
		s.mu.Unlock()
	}
}

// pushShared puts a message that belongs to no request where it goes when
// the session is shared: a message of the session's own goes to the
// instance that holds the GET stream, when another one does; a server-wide
// message, which every instance sends its copy of the session, is that
// instance's to deliver, and waits here until it says it did (unconfirmed).
// Otherwise it goes on the GET stream here, waiting in its backlog while
// none is open, as the instance the client opens the stream on delivers
// what waits for it (takeBacklog, dropServerWide). The holder is read and
// the message queued under the session's lock, so that word of a new
// holder (deliver) comes wholly before it or after.
func (s *httpSession) pushShared(o outgoing) error {
	wide, isWide := o.route.(serverWideRoute)
	s.mu.Lock()
	if s.shared.holder != "" && !s.closed {
		if isWide {
			s.keepUnconfirmedLocked(wide.id, o.data)
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		if s.publish(s.ctx, relayEvent, o.data) == nil {
			return nil
		}
		s.mu.Lock() // not handed on: kept here, for a resume
	}
	st := s.standalone
	if s.closed || st == nil {
		s.mu.Unlock()
		s.h.log.Debug("dropping a message that belongs to no request: the session has no standalone stream", "session", s.id)
		return errNoStandalone
	}
	confirm := isWide && wide.id != "" && s.shared.holding
	// Twice the backlog's count: what this copy kept and put on the
	// stream at its hold, then as much again live, before the others'
	// hand-overs arrive.
	if confirm && !s.shared.delivered.add(wide.id, 2*s.h.cfg.backlogMessages) {
		s.mu.Unlock()
		return nil // on the stream already: live, or handed over
	}
	st.mu.Lock()
	index, kept := st.pushLocked(o)
	st.mu.Unlock()
	s.mu.Unlock()
	err := st.pushed(index, kept)
	if confirm {
		s.confirm(wide.id) // stored: a resume elsewhere replays it
	}
	return err
}

// keepUnconfirmedLocked keeps a server-wide message that the holder of
// the GET stream is to deliver, until it says it did; s.mu is held.
func (s *httpSession) keepUnconfirmedLocked(id string, data []byte) {
	if id == "" {
		return // made on this instance only: the holder has no copy
	}
	if i := slices.Index(s.shared.early, id); i >= 0 {
		s.shared.early = slices.Delete(s.shared.early, i, i+1)
		return
	}
	limit := s.h.cfg.backlogMessages
	if n := len(s.shared.unconfirmed); n >= limit {
		s.shared.unconfirmed = slices.Delete(s.shared.unconfirmed, 0, n-limit+1)
	}
	s.shared.unconfirmed = append(s.shared.unconfirmed, wideMessage{ID: id, Data: bytes.Clone(data)})
}

// confirmed drops the server-wide messages ids, which the holder of the
// GET stream delivered, from those kept here.
func (s *httpSession) confirmed(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		i := slices.IndexFunc(s.shared.unconfirmed, func(w wideMessage) bool { return w.ID == id })
		if i >= 0 {
			s.shared.unconfirmed = slices.Delete(s.shared.unconfirmed, i, i+1)
			continue
		}
		if n := len(s.shared.early); n >= s.h.cfg.backlogMessages {
			s.shared.early = slices.Delete(s.shared.early, 0, n-s.h.cfg.backlogMessages+1)
		}
		s.shared.early = append(s.shared.early, id)
	}
}

// confirm tells the other copies, soon, that the server-wide message id
// is on the GET stream held here. One goroutine at a time publishes what
// was confirmed since the last publication, so that the delivery of a
// broadcast never waits on the Broadcaster.
func (s *httpSession) confirm(id string) {
	s.mu.Lock()
	if n := len(s.shared.confirms); n >= s.h.cfg.backlogMessages {
		s.shared.confirms = slices.Delete(s.shared.confirms, 0, n-s.h.cfg.backlogMessages+1)
	}
	s.shared.confirms = append(s.shared.confirms, id)
	start := !s.shared.confirming
	s.shared.confirming = true
	s.mu.Unlock()
	if start {
		go s.publishConfirms()
	}
}

// publishConfirms publishes the confirmations that wait, until none does.
func (s *httpSession) publishConfirms() {
	for {
		s.mu.Lock()
		ids := s.shared.confirms
		s.shared.confirms = nil
		if len(ids) == 0 {
			s.shared.confirming = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		data, _ := json.Marshal(ids)
		s.publish(s.ctx, relayDelivered, data)
	}
}

// hold tells the other instances that this one holds the session's GET
// stream from now on; resumed says it replays the event store. The
// server-wide messages kept here for a holder that never confirmed them,
// as when it died, go on the stream: the stream holds what the previous
// holder stored, the client's replay or the others' hand-off the rest.
func (s *httpSession) hold(ctx context.Context, resumed bool) {
	if s.h.relay() == nil {
		return
	}
	s.mu.Lock()
	s.shared.holder = ""
	s.shared.holding = true
	s.shared.delivered = recentIDs{}
	kept := s.shared.unconfirmed
	s.shared.unconfirmed, s.shared.early = nil, nil
	s.mu.Unlock()
	kind := relayHold
	if resumed {
		kind = relayResume
	}
	s.publish(ctx, kind, nil)
	s.deliverKept(kept)
}

// deliverKept puts on the GET stream held here the server-wide messages
// that a previous holder left unconfirmed, each once.
func (s *httpSession) deliverKept(kept []wideMessage) {
	for _, w := range kept {
		s.pushShared(outgoing{data: w.Data, route: serverWideRoute{w.ID}})
	}
}

// release tells the other instances that this one no longer holds the
// session's GET stream.
func (s *httpSession) release() {
	if s.h.relay() != nil {
		s.mu.Lock()
		s.shared.holding = false
		s.mu.Unlock()
		// Also when the session's copy here has just ended, as at a
		// shutdown: the others must stop sending here.
		s.publish(context.WithoutCancel(s.ctx), relayRelease, nil)
	}
}

// relayPOST hands on what a POST of messages with no request carries for
// another instance: a response no call here waits for, and a cancellation,
// whose request may run elsewhere. It returns the messages left for the
// engine here: all of them but the responses handed on. ok is false when
// a response could not be handed on, with the answer written.
func (h *httpHandler) relayPOST(w http.ResponseWriter, sess *httpSession, body []byte, msgs []*httpMessage, batch bool) (local []*httpMessage, ok bool) {
	if h.relay() == nil {
		return msgs, true
	}
	for i, m := range msgs {
		relayed := m.kind == kindResponse && m.decoded && !sess.conn.awaits(m.id)
		if !relayed && !(m.kind == kindNotification && m.method == "notifications/cancelled") {
			if local != nil {
				local = append(local, m)
			}
			continue
		}
		raw := body
		if batch {
			raw, _ = json.Marshal(&m.wire)
		}
		if !relayed {
			sess.publish(sess.ctx, relayCancelled, raw)
			if local != nil {
				local = append(local, m)
			}
			continue
		}
		if err := sess.publish(sess.ctx, relayResponse, raw); err != nil {
			writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: cannot hand the response to "+m.id.String()+" on to the instance that waits for it: "+err.Error())
			return nil, false
		}
		if local == nil {
			local = append(make([]*httpMessage, 0, len(msgs)), msgs[:i]...)
		}
	}
	if local == nil {
		return msgs, true
	}
	return local, true
}

// resumeElsewhere serves a GET that resumes a stream of the session that
// another instance wrote, from the shared event store. The GET stream is
// taken over here, the others told, and the events after index replayed
// with their own ids before what comes live. A POST's stream is replayed
// as far as it is stored, and ends: the client resumes it again for more.
func (h *httpHandler) resumeElsewhere(w http.ResponseWriter, r *http.Request, sess *httpSession, streamID string, index int64) {
	if !strings.HasSuffix(streamID, "-"+standaloneStreamID) {
		events, ok := h.readElsewhere(w, r, sess, streamID, index)
		if !ok {
			return
		}
		out := &sseWriter{w: w, rc: *http.NewResponseController(w), timeout: h.cfg.writeTimeout, ids: true, streamID: streamID}
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if len(events) > 0 {
			out.events(events)
		} else {
			out.flush()
		}
		return
	}
	st, gen, ok := h.attachStandalone(w, sess, true)
	if !ok {
		return
	}
	// Told first, so that what the others make from now on comes here
	// live, and what they made before is in the store.
	sess.hold(r.Context(), true)
	defer sess.release()
	events, ok := h.readElsewhere(w, r, sess, streamID, index)
	if !ok {
		st.detach(gen)
		return
	}
	h.serveStream(w, r, st, gen, streamMode{sse: true, replay: events})
}

// readElsewhere reads the events after index of another instance's stream
// from the event store; it answers the request itself and reports false
// when they cannot all be had.
func (h *httpHandler) readElsewhere(w http.ResponseWriter, r *http.Request, sess *httpSession, streamID string, index int64) ([]streamEvent, bool) {
	data, ok, err := h.cfg.store.After(r.Context(), sess.id, streamID, index)
	last := strconv.Quote(streamID + "_" + strconv.FormatInt(index, 10))
	if err != nil {
		h.log.Warn("cannot read SSE events to resume another instance's stream", "session", sess.id, "stream", streamID, "err", err)
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the event store failed to read the events after "+last+": "+err.Error())
		return nil, false
	}
	if !ok {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the events after "+last+" are no longer available")
		return nil, false
	}
	events := make([]streamEvent, len(data))
	for i, d := range data {
		events[i] = streamEvent{index: index + 1 + int64(i), data: d, stream: streamID}
	}
	return events, true
}
