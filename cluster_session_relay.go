package mcp

// This file holds the relay of a shared session: what the instances that
// hold copies of one shared legacy session must tell each other, on the
// session's channel of the server's Broadcaster, "mcp:session:<id>". Each
// instance that holds a copy subscribes for as long as it holds it. A
// message is the JSON of a relayMessage, such as
//
//	{"kind":"response","from":"<instance>","message":{"jsonrpc":"2.0","id":"<instance>-3","result":{}}}
//
// where an instance is the name its handler draws at random
// (newInstanceID).
//
// One instance at a time holds the session's GET stream, and every message
// that belongs to no request goes there. Such a message is a server-wide
// one, which every copy gets from its own Server, named alike on all
// (serverMessage.ID), or one of the session's own, made on one instance.
// Whatever a copy hands the holder or has a copy of, it keeps until the
// holder says it stored it (relayDelivered): a holder may die at any
// moment without a word, and the instance the client resumes the stream on
// then gets what the others kept (relayKept). The events that carry such a
// name are stored with it (storedForm), so that the new holder can tell
// what the client has already, or is replayed: each message comes once.
// A client whose last event came from an older stream than the last
// holder's own (the holder replayed it) had nothing of what that holder
// carried since it took the stream: the new holder reads it from the
// holder's stream (chain). How the stream passes from holder to holder is
// cluster_session_handover.go's.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
)

// relayMessage is one message on a session's channel.
type relayMessage struct {
	// Kind is one of the relay* constants below.
	Kind string `json:"kind"`
	// From is the publishing instance, which ignores its own messages.
	From string `json:"from"`
	// Message is what the kind carries, if anything: a JSON-RPC message,
	// or the JSON its constant names.
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
	// relayEvent: a message of the session's own for its GET stream (a
	// keptMessage), made on an instance that does not hold it, for the one
	// that does.
	relayEvent = "event"
	// relayHold: From holds the session's GET stream from now on, opened
	// fresh (a holdNote); the others hand it what waits in their backlogs.
	relayHold = "hold"
	// relayResume: From holds the GET stream from now on, resumed from the
	// event store (a holdNote names the stream): the instance whose stream
	// it is drops its backlog, which the replay has; the others hand theirs
	// over.
	relayResume = "resume"
	// relayRelease: From no longer holds the GET stream.
	relayRelease = "release"
	// relayState: the client changed the session's state on From (a
	// subscription, its log level; a sessionChange); the other copies
	// make the same change.
	relayState = "state"
	// relayDelivered: From, which holds the GET stream, stored these
	// messages on it (a deliveredNote); the others stop keeping them for
	// the case it dies.
	relayDelivered = "delivered"
	// relayJoin: From made a copy of the session; the holder of the GET
	// stream says so (relayHolding), as the copy missed its relayHold.
	relayJoin = "join"
	// relayHolding: From holds the GET stream, as it held it before (a
	// holdNote).
	relayHolding = "holding"
	// relayKept: the messages From kept for a holder that never confirmed
	// them, or that waited in its backlog, handed to the new holder (a
	// keptBatch), which puts on the stream those the client has not had,
	// each once, whoever else hands it over: it may have had no copy of
	// the session meanwhile.
	relayKept = "kept"
)

// holdNote is what relayHold, relayResume and relayHolding carry: the
// stream the client resumed, if it did, and the index of the holder's own
// GET stream when it took the stream, after which it stored what it
// carried since.
type holdNote struct {
	Stream string `json:"stream,omitempty"`
	From   int64  `json:"from"`
}

// holdNoteOf reads a holdNote; none is one with nothing to say.
func holdNoteOf(data json.RawMessage) (holdNote, bool) {
	var note holdNote
	if len(data) == 0 {
		return note, true
	}
	return note, json.Unmarshal(data, &note) == nil
}

// deliveredNote is what relayDelivered carries: the ids of the messages
// stored on the holder's GET stream, and an index of it through which
// every message with an id it stored was confirmed, in this note or
// before.
type deliveredNote struct {
	IDs     []string `json:"ids"`
	Through int64    `json:"through"`
}

// keptBatch is what relayKept carries: messages kept for Holder ("" when
// none was known, as for a backlog), which took the stream after index
// From of its own GET stream, and had confirmed what it stored on it
// through index Through. A batch may have no messages: it names the last
// holder, whose stream the client did not resume.
type keptBatch struct {
	Holder   string        `json:"holder,omitempty"`
	From     int64         `json:"from,omitempty"`
	Through  int64         `json:"through,omitempty"`
	Messages []keptMessage `json:"messages"`
}

// keptMessage is a message a copy of a shared session hands to the
// holder of its GET stream, or keeps for it until it says it stored it;
// as JSON, a relayEvent or an element of relayKept. Wide: a server-wide
// message, which every copy has; else one of the session's own, made on
// one instance and named there. For names the holder a relayEvent is
// for.
type keptMessage struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"message"`
	Wide bool            `json:"wide,omitempty"`
	For  string          `json:"for,omitempty"`
}

// channelState is what a copy of a shared session keeps of what the
// copies tell each other on the session's channel; the session's mu
// guards it.
type channelState struct {
	// stopRelay ends the subscription to the session's channel.
	stopRelay func()
	// catchingUp: the copy is being made and loads its record once more
	// (catchUp); the changes its channel brings meanwhile wait in changes.
	catchingUp bool
	changes    []sessionChange
	// holder is the instance that holds the session's GET stream, when
	// another does ("": this one, or none known).
	holder string
	// unconfirmed are the messages that came while holder held the stream
	// and that it has not said it stored: the server-wide ones, which it
	// has too, and the session's own made here and handed to it. Should it
	// die without a word, the copy that takes the stream over gets them
	// (relayKept). early are the ids it confirmed before they came here.
	// Both are bounded by WithSessionBacklog's count.
	unconfirmed []keptMessage
	early       []string
	// holding: this copy holds the GET stream, and confirms what messages
	// with an id it stores on it (confirms, while confirming). delivered
	// are the ids of those on it since it took the stream, so that each
	// goes once, live, replayed or handed over, at most twice
	// WithSessionBacklog's count of them.
	holding    bool
	confirms   []string
	confirming bool
	delivered  recentIDs
	// handover is the rest of what the relay keeps (cluster_session_handover.go).
	handover handoverState
}

// sessionChannel is the Broadcaster channel of legacy session id.
func sessionChannel(id string) string { return "mcp:session:" + id }

// relay returns the Broadcaster that shared sessions use, or nil when
// sessions are not shared (no SessionStore) or the server has none.
func (c *clusterMember) relay() Broadcaster {
	if c.store == nil {
		return nil
	}
	return c.h.srv.sessionRelay()
}

// joinRelay subscribes the session's copy here to its channel, until it
// closes.
func (sr *sessionReplica) joinRelay() error {
	b := sr.cluster.relay()
	if b == nil {
		return nil
	}
	ctx, cancel := sr.s.callCtx() // bounds the subscribing only
	stop, err := b.Subscribe(ctx, sessionChannel(sr.s.id), sr.deliver)
	cancel()
	if err != nil {
		sr.s.h.log.Warn("cannot subscribe to a legacy session's channel", "session", sr.s.id, "err", err)
		return &sessionStoreError{"subscribe to the channel of", sr.s.id, err}
	}
	sr.s.mu.Lock()
	if sr.s.closed {
		sr.s.mu.Unlock()
		stop()
		return nil
	}
	sr.stopRelay = stop
	sr.s.mu.Unlock()
	return nil
}

// publish sends a message of kind on the session's channel; a failure is
// logged and returned.
func (sr *sessionReplica) publish(ctx context.Context, kind string, msg []byte) error {
	b := sr.cluster.relay()
	if b == nil {
		return nil
	}
	data, err := json.Marshal(relayMessage{Kind: kind, From: sr.cluster.instance, Message: msg})
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
		err = b.Publish(ctx, sessionChannel(sr.s.id), data)
		cancel()
	}
	if err != nil {
		sr.s.h.log.Warn("cannot publish on a legacy session's channel", "session", sr.s.id, "kind", kind, "err", err)
	}
	return err
}

// deliver takes a message from the session's channel. It runs on the
// Broadcaster's delivery and does not wait for the client; it may wait for
// the event store, never under a lock.
func (sr *sessionReplica) deliver(data []byte) {
	var m relayMessage
	if json.Unmarshal(data, &m) != nil || m.From == sr.cluster.instance {
		return
	}
	switch m.Kind {
	case relayDelete:
		sr.s.h.log.Debug("a legacy session ended on another instance", "session", sr.s.id, "instance", m.From)
		sr.s.conn.close(errors.New("the client ended the session on another instance"))
	case relayResponse:
		if sr.s.conn.awaits(idOf(m.Message)) {
			sr.s.conn.handleFrame(m.Message, nil)
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
			sr.s.conn.cancelInbound(id, n.Params.Reason)
			sr.s.settleCancelled(id)
		}
	case relayEvent:
		// For the holder it was sent to, which may have let the stream go
		// meanwhile: then its stream keeps it for a resume.
		var w keptMessage
		if json.Unmarshal(m.Message, &w) == nil && w.ID != "" && w.For == sr.cluster.instance {
			sr.pushShared(outgoing{data: w.Data, route: handedRoute{w.ID}})
		}
	case relayJoin:
		sr.s.mu.Lock()
		holding := sr.holding
		note, _ := json.Marshal(holdNote{From: sr.handover.mine})
		sr.s.mu.Unlock()
		if holding {
			// Not from within a delivery, as for relayHold below.
			go sr.publish(sr.s.ctx, relayHolding, note)
		}
	case relayHolding:
		if note, ok := holdNoteOf(m.Message); ok {
			sr.learnHolder(m.From, note.From)
		}
	case relayKept:
		var b keptBatch
		if json.Unmarshal(m.Message, &b) == nil {
			sr.takeKept(b)
		}
	case relayDelivered:
		var n deliveredNote
		if json.Unmarshal(m.Message, &n) == nil {
			sr.confirmed(m.From, n)
		}
	case relayHold, relayResume:
		if note, ok := holdNoteOf(m.Message); ok {
			sr.handOver(m.From, note)
		}
	case relayState:
		var change sessionChange
		if json.Unmarshal(m.Message, &change) != nil {
			break
		}
		sr.s.mu.Lock()
		if sr.catchingUp {
			sr.changes = append(sr.changes, change) // catchUp makes it
			sr.s.mu.Unlock()
			break
		}
		sr.s.mu.Unlock()
		if sr.s.ss.apply(change) {
			sr.s.standaloneStream() // its updates need somewhere to wait
		}
	case relayRelease:
		sr.s.mu.Lock()
		if sr.holder == m.From {
			// Its stream, stored on, has the server-wide messages left
			// unconfirmed; those handed to it may still be on their way,
			// and are kept until it says it stored them, or handed over
			// (by name: its stream has them, or will).
			ho := &sr.handover
			ho.released, ho.releasedThrough, ho.releasedFrom = m.From, ho.holderThrough, ho.holderFrom
			sr.holder, ho.holderThrough, ho.holderFrom = "", 0, 0
			sr.unconfirmed = slices.DeleteFunc(sr.unconfirmed, func(w keptMessage) bool { return w.Wide })
		}
		sr.s.mu.Unlock()
	}
}

// handOnPOST hands on what a POST of messages with no request carries for
// another instance: a response no call here waits for, and a cancellation,
// whose request may run elsewhere. It returns the messages left for the
// engine here: all of them but the responses handed on. ok is false when
// a response could not be handed on, with the answer written.
func (sr *sessionReplica) handOnPOST(w http.ResponseWriter, body []byte, msgs []*httpMessage, batch bool) (local []*httpMessage, ok bool) {
	for i, m := range msgs {
		relayed := m.kind == kindResponse && m.decoded && !sr.s.conn.awaits(m.id)
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
			sr.publish(sr.s.ctx, relayCancelled, raw)
			if local != nil {
				local = append(local, m)
			}
			continue
		}
		if err := sr.publish(sr.s.ctx, relayResponse, raw); err != nil {
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
