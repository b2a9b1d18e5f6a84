package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
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
// holder's stream (chain).

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

// handoverState is what a copy of a shared session keeps to hand the GET
// stream over without loss or repetition; the session's mu guards it.
type handoverState struct {
	// holderThrough is what the holder last reported of its stream
	// (deliveredNote.Through). released is the holder that let the stream
	// go last, and releasedThrough what it reported: what it was handed
	// may be on its stream still unconfirmed.
	holderThrough   int64
	released        string
	releasedThrough int64
	// holderFrom and releasedFrom are where their streams began to carry
	// (holdNote.From); mine is this copy's own, and last says this copy
	// held the stream last.
	holderFrom, releasedFrom, mine int64
	last                           bool
	// named counts the session's own messages named here.
	named uint64
	// While this copy holds the stream: assigned are the indexes of the
	// events with an id queued for the store and not yet confirmed,
	// confirmedMax the highest confirmed, reported the highest Through
	// reported, and cap what Through may not pass since confirmations
	// were dropped (a bounded queue).
	assigned     []int64
	confirmedMax int64
	reported     int64
	cap          int64
	// taking: the stream is being taken over and its replay is not read
	// yet; batches are what waits for it to be, at most twice
	// WithSessionBacklog's count of messages.
	taking  bool
	batches []keptBatch
	// resumed is the stream the client resumed here; the ids of its events
	// after scanned are among delivered. chained is the last holder whose
	// own stream the client did not resume, read for it (chain).
	resumed string
	scanned int64
	chained string
}

// storedForm is how an event that carries a message's id is kept in the
// event store: '@', the id, a space, then the message; the handler alone
// reads the store, and takes the id off (fromStored).
func storedForm(id string, msg []byte) []byte {
	b := make([]byte, 0, len(id)+2+len(msg))
	b = append(append(append(b, '@'), id...), ' ')
	return append(b, msg...)
}

// fromStored reads an event from the event store: the message and its id,
// if it has one.
func fromStored(data []byte) (id string, msg []byte) {
	if len(data) == 0 || data[0] != '@' {
		return "", data
	}
	name, msg, ok := bytes.Cut(data[1:], []byte(" "))
	if !ok {
		return "", data
	}
	return string(name), msg
}

// relayIDOf returns the id a message's route gives it, and whether it is
// server-wide.
func relayIDOf(route msgRoute) (id string, wide bool) {
	if route == nil {
		return "", false
	}
	return route.relayID()
}

// handedRoute is the route of a message of the session's own that another
// copy of it handed this one for the GET stream; id names it.
type handedRoute struct{ id string }

func (r handedRoute) relayID() (string, bool) { return r.id, false }

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
	ctx, cancel := s.callCtx() // bounds the subscribing only
	stop, err := b.Subscribe(ctx, sessionChannel(s.id), s.deliver)
	cancel()
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

// callCtx is the context of a call to a shared store or the broadcaster
// that the session makes on its own behalf: it ends with the session, and
// after sharedCallTimeout.
func (s *httpSession) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, sharedCallTimeout)
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
		ctx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
		err = b.Publish(ctx, sessionChannel(s.id), data)
		cancel()
	}
	if err != nil {
		s.h.log.Warn("cannot publish on a legacy session's channel", "session", s.id, "kind", kind, "err", err)
	}
	return err
}

// deliver takes a message from the session's channel. It runs on the
// Broadcaster's delivery and does not wait for the client; it may wait for
// the event store, never under a lock.
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
		// For the holder it was sent to, which may have let the stream go
		// meanwhile: then its stream keeps it for a resume.
		var w keptMessage
		if json.Unmarshal(m.Message, &w) == nil && w.ID != "" && w.For == s.h.instance {
			s.pushShared(outgoing{data: w.Data, route: handedRoute{w.ID}})
		}
	case relayJoin:
		s.mu.Lock()
		holding := s.shared.holding
		note, _ := json.Marshal(holdNote{From: s.shared.handover.mine})
		s.mu.Unlock()
		if holding {
			// Not from within a delivery, as for relayHold below.
			go s.publish(s.ctx, relayHolding, note)
		}
	case relayHolding:
		if note, ok := holdNoteOf(m.Message); ok {
			s.learnHolder(m.From, note.From)
		}
	case relayKept:
		var b keptBatch
		if json.Unmarshal(m.Message, &b) == nil {
			s.takeKept(b)
		}
	case relayDelivered:
		var n deliveredNote
		if json.Unmarshal(m.Message, &n) == nil {
			s.confirmed(m.From, n)
		}
	case relayHold, relayResume:
		if note, ok := holdNoteOf(m.Message); ok {
			s.handOver(m.From, note)
		}
	case relayState:
		var change sessionChange
		if json.Unmarshal(m.Message, &change) != nil {
			break
		}
		s.mu.Lock()
		if s.shared.catchingUp {
			s.shared.changes = append(s.shared.changes, change) // catchUp makes it
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		if s.ss.apply(change) {
			s.standaloneStream() // its updates need somewhere to wait
		}
	case relayRelease:
		s.mu.Lock()
		if s.shared.holder == m.From {
			// Its stream, stored on, has the server-wide messages left
			// unconfirmed; those handed to it may still be on their way,
			// and are kept until it says it stored them, or handed over
			// (by name: its stream has them, or will).
			ho := &s.shared.handover
			ho.released, ho.releasedThrough, ho.releasedFrom = m.From, ho.holderThrough, ho.holderFrom
			s.shared.holder, ho.holderThrough, ho.holderFrom = "", 0, 0
			s.shared.unconfirmed = slices.DeleteFunc(s.shared.unconfirmed, func(w keptMessage) bool { return w.Wide })
		}
		s.mu.Unlock()
	}
}

// learnHolder takes word that instance holds the GET stream, as it held
// it before this copy was made, unless newer word came. The server-wide
// messages that wait in the backlog here, which came before the word,
// are the holder's to deliver: they are kept for it, as those that come
// after.
func (s *httpSession) learnHolder(instance string, from int64) {
	s.mu.Lock()
	if s.shared.holding || s.shared.holder != "" {
		s.mu.Unlock()
		return
	}
	s.shared.holder, s.shared.handover.holderFrom = instance, from
	st := s.standalone
	s.mu.Unlock()
	if st == nil {
		return
	}
	evs := st.takeServerWide()
	s.mu.Lock()
	for _, ev := range evs {
		s.keepUnconfirmedLocked(keptMessage{ID: ev.id, Data: ev.data, Wide: true})
	}
	s.mu.Unlock()
}

// handOver takes word that instance holds the GET stream from now on,
// resuming note.Stream, or opened fresh. What this copy kept for the last
// holder, and what waits in its backlog (but for what the replay of its
// own stream has), goes to the new one, and is kept until it says it
// stored it; and if the client resumed a stream other than the last
// holder's own, the last holder is named, so that what it carried is
// not lost.
func (s *httpSession) handOver(instance string, note holdNote) {
	stream := note.Stream
	s.mu.Lock()
	ho := &s.shared.handover
	last := s.keptLocked()
	last.Messages = slices.Clone(last.Messages)
	if s.shared.holding || ho.last {
		last.Holder, last.From = s.h.instance, ho.mine
	}
	chain := stream != "" && last.Holder != "" && stream != last.Holder+"-"+standaloneStreamID
	s.shared.holder = instance
	s.shared.holding = false
	s.shared.early = nil
	ho.holderThrough, ho.holderFrom = 0, note.From
	ho.released, ho.releasedThrough, ho.releasedFrom = "", 0, 0
	ho.taking, ho.batches, ho.last = false, nil, false
	st := s.standalone
	s.mu.Unlock()
	var waiting keptBatch
	if st != nil {
		// What was made here before is stored before the new holder,
		// which may wait for this delivery, reads the store to resume.
		st.storeUpTo(s.ctx, st.lastIndex())
		evs := st.takeBacklog()
		if stream == st.id || chain && last.Holder == s.h.instance {
			evs = nil // replayed, or read from this stream by the new holder
		}
		s.mu.Lock()
		for _, ev := range evs {
			w := keptMessage{ID: ev.id, Data: ev.data, Wide: ev.serverWide}
			if w.ID == "" {
				w.ID = s.nameLocked()
			}
			waiting.Messages = append(waiting.Messages, w)
			s.keepUnconfirmedLocked(w)
		}
		s.mu.Unlock()
	}
	if len(last.Messages) == 0 && len(waiting.Messages) == 0 && !chain {
		return
	}
	// Not from within a delivery, which may hold up the Broadcaster's
	// next one, this publication's among them.
	go func() {
		for _, b := range []keptBatch{last, waiting} {
			if len(b.Messages) > 0 || b.Holder != "" && chain {
				data, _ := json.Marshal(b)
				s.publish(s.ctx, relayKept, data)
			}
		}
	}()
}

// keptLocked returns what this copy keeps for the holder of the GET
// stream, or for the last one if it let it go; s.mu is held.
func (s *httpSession) keptLocked() keptBatch {
	ho := &s.shared.handover
	if s.shared.holder == "" {
		return keptBatch{Holder: ho.released, From: ho.releasedFrom, Through: ho.releasedThrough, Messages: s.shared.unconfirmed}
	}
	return keptBatch{Holder: s.shared.holder, From: ho.holderFrom, Through: ho.holderThrough, Messages: s.shared.unconfirmed}
}

// nameLocked names a message of the session's own made here, for the
// other copies; s.mu is held.
func (s *httpSession) nameLocked() string {
	s.shared.handover.named++
	return s.h.instance + "." + strconv.FormatUint(s.shared.handover.named, 10)
}

// pushShared puts a message that belongs to no request where it goes when
// the session is shared. When another instance holds the GET stream, a
// message of the session's own is handed to it, named, and a server-wide
// message, which every instance sends its copy of the session, is that
// instance's to deliver; either is kept here until it says it stored it.
// Otherwise it goes on the GET stream here, waiting in its backlog while
// none is open, as the instance the client opens the stream on gets what
// waits for it (handOver). The holder is read and the message queued
// under the session's lock, so that word of a new holder (deliver) comes
// wholly before it or after.
func (s *httpSession) pushShared(o outgoing) error {
	id, wide := relayIDOf(o.route)
	handed := id != "" && !wide
	s.mu.Lock()
	if s.shared.holder != "" && !s.closed && !handed {
		if wide {
			s.keepUnconfirmedLocked(keptMessage{ID: id, Data: o.data, Wide: true})
			s.mu.Unlock()
			return nil
		}
		w := keptMessage{ID: s.nameLocked(), Data: o.data}
		s.keepUnconfirmedLocked(w)
		w.For = s.shared.holder
		s.mu.Unlock()
		data, _ := json.Marshal(w)
		if s.publish(s.ctx, relayEvent, data) == nil {
			return nil
		}
		s.mu.Lock() // not handed on: kept here, for a resume
		s.dropUnconfirmedLocked(w.ID)
	}
	st := s.standalone
	if s.closed || st == nil {
		s.mu.Unlock()
		s.h.log.Debug("dropping a message that belongs to no request: the session has no standalone stream", "session", s.id)
		return errNoStandalone
	}
	confirm := id != "" && s.shared.holding
	if confirm && !s.shared.delivered.add(id, 2*s.h.cfg.backlogMessages) {
		s.mu.Unlock()
		s.confirm(id, 0) // on the stream already: the others may let it go
		return nil
	}
	st.mu.Lock()
	index, kept := st.pushLocked(o)
	st.mu.Unlock()
	if confirm && index > 0 {
		s.shared.handover.assigned = append(s.shared.handover.assigned, index)
	}
	s.mu.Unlock()
	err := st.pushed(index, kept)
	if confirm {
		s.confirm(id, index) // stored: a resume elsewhere replays it
	}
	return err
}

// keepUnconfirmedLocked keeps a message that the holder of the GET stream
// is to store, until it says it did; s.mu is held.
func (s *httpSession) keepUnconfirmedLocked(w keptMessage) {
	if w.ID == "" {
		return // made on this instance only: the holder has no copy
	}
	if i := slices.Index(s.shared.early, w.ID); i >= 0 {
		s.shared.early = slices.Delete(s.shared.early, i, i+1)
		return
	}
	limit := s.h.cfg.backlogMessages
	if n := len(s.shared.unconfirmed); n >= limit {
		s.shared.unconfirmed = slices.Delete(s.shared.unconfirmed, 0, n-limit+1)
	}
	w.Data = bytes.Clone(w.Data)
	s.shared.unconfirmed = append(s.shared.unconfirmed, w)
}

// dropUnconfirmedLocked forgets the kept message id; s.mu is held.
func (s *httpSession) dropUnconfirmedLocked(id string) bool {
	i := slices.IndexFunc(s.shared.unconfirmed, func(w keptMessage) bool { return w.ID == id })
	if i >= 0 {
		s.shared.unconfirmed = slices.Delete(s.shared.unconfirmed, i, i+1)
	}
	return i >= 0
}

// confirmed drops the messages that instance, the holder of the GET
// stream, stored from those kept here.
func (s *httpSession) confirmed(instance string, n deliveredNote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ho := &s.shared.handover
	switch instance {
	case s.shared.holder:
		ho.holderThrough = max(ho.holderThrough, n.Through)
	case ho.released:
		ho.releasedThrough = max(ho.releasedThrough, n.Through)
	}
	for _, id := range n.IDs {
		if s.dropUnconfirmedLocked(id) {
			continue
		}
		if n := len(s.shared.early); n >= s.h.cfg.backlogMessages {
			s.shared.early = slices.Delete(s.shared.early, 0, n-s.h.cfg.backlogMessages+1)
		}
		s.shared.early = append(s.shared.early, id)
	}
}

// confirm tells the other copies, soon, that the message id is stored on
// the GET stream held here, as its event index (0: it was before). One
// goroutine at a time publishes what was confirmed since the last
// publication, so that the delivery of a broadcast never waits on the
// Broadcaster.
func (s *httpSession) confirm(id string, index int64) {
	s.mu.Lock()
	ho := &s.shared.handover
	if index > 0 {
		if i := slices.Index(ho.assigned, index); i >= 0 {
			ho.assigned = slices.Delete(ho.assigned, i, i+1)
		}
		ho.confirmedMax = max(ho.confirmedMax, index)
	}
	if n := len(s.shared.confirms); n >= s.h.cfg.backlogMessages {
		// The oldest go unsaid: what is reported stays below them.
		s.shared.confirms = slices.Delete(s.shared.confirms, 0, n-s.h.cfg.backlogMessages+1)
		ho.cap = min(ho.cap, ho.reported)
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
		ho := &s.shared.handover
		note := deliveredNote{IDs: s.shared.confirms}
		s.shared.confirms = nil
		if len(note.IDs) == 0 {
			s.shared.confirming = false
			s.mu.Unlock()
			return
		}
		// Below the events still to be confirmed, every one is.
		note.Through = ho.confirmedMax
		if len(ho.assigned) > 0 {
			note.Through = min(note.Through, slices.Min(ho.assigned)-1)
		}
		note.Through = min(note.Through, ho.cap)
		ho.reported = max(ho.reported, note.Through)
		s.mu.Unlock()
		data, _ := json.Marshal(note)
		s.publish(s.ctx, relayDelivered, data)
	}
}

// hold tells the other instances that this one holds the session's GET
// stream from now on, resuming stream, or opened fresh when stream is "".
// What they kept for the last holder, or that waits in their backlogs,
// they hand over; it waits here, with what this copy kept, until the
// replay is read (takeOver).
func (s *httpSession) hold(ctx context.Context, st *httpStream, stream string) {
	if s.h.relay() == nil {
		return
	}
	note := holdNote{Stream: stream, From: st.lastIndex()}
	s.mu.Lock()
	ho := &s.shared.handover
	kept := s.keptLocked()
	s.shared.holder = ""
	s.shared.holding = true
	s.shared.delivered = recentIDs{}
	s.shared.unconfirmed, s.shared.early = nil, nil
	*ho = handoverState{named: ho.named, cap: math.MaxInt64, taking: true, resumed: stream, mine: note.From, last: true}
	if len(kept.Messages) > 0 || kept.Holder != "" {
		ho.batches = []keptBatch{kept}
	}
	s.mu.Unlock()
	kind := relayHold
	if stream != "" {
		kind = relayResume
	}
	data, _ := json.Marshal(note)
	s.publish(ctx, kind, data)
}

// takeOver ends what hold began, once the events after index of the
// stream the client resumed (replay; none for a fresh GET) are read: what
// they have, and what waits in the backlog here, is on the stream; what
// was handed over goes on it unless it is too.
func (s *httpSession) takeOver(st *httpStream, index int64, replay []streamEvent) {
	if s.h.relay() == nil {
		return
	}
	var ids []string
	for _, ev := range replay {
		if ev.id != "" {
			ids = append(ids, ev.id)
		}
	}
	waiting := st.dropReplayed(ids)
	s.mu.Lock()
	ho := &s.shared.handover
	if !s.shared.holding || !ho.taking {
		s.mu.Unlock()
		return // taken over elsewhere meanwhile
	}
	for _, id := range append(ids, waiting...) {
		s.shared.delivered.add(id, 2*s.h.cfg.backlogMessages)
	}
	ho.scanned = index
	batches := ho.batches
	ho.taking, ho.batches = false, nil
	s.mu.Unlock()
	for _, id := range waiting {
		s.confirm(id, 0)
	}
	for _, b := range batches {
		s.deliverKept(b)
	}
}

// takeKept takes what another copy handed over: for the GET stream held
// here, now or, while its replay is read, once it is.
func (s *httpSession) takeKept(b keptBatch) {
	s.mu.Lock()
	ho := &s.shared.handover
	if !s.shared.holding {
		s.mu.Unlock()
		return
	}
	if ho.taking {
		ho.batches = append(ho.batches, b)
		limit, n := 2*s.h.cfg.backlogMessages, 0
		for _, b := range ho.batches {
			n += len(b.Messages)
		}
		for n > limit { // the oldest go
			drop := min(n-limit, len(ho.batches[0].Messages))
			ho.batches[0].Messages = ho.batches[0].Messages[drop:]
			if len(ho.batches[0].Messages) == 0 {
				ho.batches = ho.batches[1:]
			}
			n -= drop
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.deliverKept(b)
}

// deliverKept puts on the GET stream held here the messages a copy kept
// for b's holder, each once: those the client has already, or is
// replayed, do not go again.
func (s *httpSession) deliverKept(b keptBatch) {
	s.chain(b)
	s.skipStored(b)
	for _, w := range b.Messages {
		var route msgRoute = handedRoute{w.ID}
		if w.Wide {
			route = serverWideRoute{w.ID}
		}
		s.pushShared(outgoing{data: w.Data, route: route})
	}
}

// chain puts on the GET stream held here what b's holder, the last one,
// stored on its own stream since it took it, when the client resumed an
// older stream: the client had none of it, as its last event came from
// that one. Each holder's stream is read once.
func (s *httpSession) chain(b keptBatch) {
	if b.Holder == "" || b.Holder == s.h.instance || s.h.cfg.store == nil {
		return
	}
	stream := b.Holder + "-" + standaloneStreamID
	s.mu.Lock()
	ho := &s.shared.handover
	read := s.shared.holding && ho.resumed != "" && ho.resumed != stream && ho.chained != b.Holder
	if read {
		ho.chained = b.Holder
	}
	s.mu.Unlock()
	if !read {
		return
	}
	for _, d := range s.storedAfter(stream, b.From, "the client misses what the last holder stored") {
		var route msgRoute
		id, msg := fromStored(d)
		if id != "" {
			route = handedRoute{id}
		}
		s.pushShared(outgoing{data: msg, route: route})
	}
}

// storedAfter reads the events of the session's stream after index from
// the event store; when it cannot have them all, it logs why, and what
// that costs, and returns none.
func (s *httpSession) storedAfter(stream string, index int64, cost string) [][]byte {
	ctx, cancel := s.callCtx()
	data, ok, err := s.h.cfg.store.After(ctx, s.id, stream, index)
	cancel()
	if err == nil && !ok {
		err = errors.New("the store no longer holds them all")
	}
	if err != nil {
		s.h.log.Warn("cannot read a GET stream's events from the event store: "+cost, "session", s.id, "stream", stream, "after", index, "err", err)
		return nil
	}
	return data
}

// skipStored counts as delivered the messages of b that its holder, whose
// stream the client resumed here, stored before it died without saying
// so: they are among its events after b.Through, up to where the client
// resumed (those after are the replay's).
func (s *httpSession) skipStored(b keptBatch) {
	if b.Holder == "" || len(b.Messages) == 0 || s.h.cfg.store == nil {
		return
	}
	stream := b.Holder + "-" + standaloneStreamID
	s.mu.Lock()
	ho := &s.shared.handover
	upTo := ho.scanned
	scan := s.shared.holding && ho.resumed == stream && b.Through < upTo
	s.mu.Unlock()
	if !scan {
		return
	}
	data := s.storedAfter(stream, b.Through, "what the dead holder left may come twice")
	s.mu.Lock()
	defer s.mu.Unlock()
	if ho.resumed != stream {
		return
	}
	for i, d := range data {
		if b.Through+1+int64(i) > upTo {
			break
		}
		if id, _ := fromStored(d); id != "" {
			s.shared.delivered.add(id, 2*s.h.cfg.backlogMessages)
		}
	}
	ho.scanned = min(ho.scanned, b.Through)
}

// release tells the other instances that this one no longer holds the
// session's GET stream.
func (s *httpSession) release() {
	if s.h.relay() != nil {
		s.mu.Lock()
		s.shared.holding = false
		s.shared.handover.taking, s.shared.handover.batches = false, nil
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
	st, gen, ok := h.attachStandalone(w, r, sess)
	if !ok {
		return
	}
	// Told first, so that what the others make from now on comes here
	// live, and what they made before is in the store.
	sess.hold(r.Context(), st, streamID)
	defer sess.release()
	events, ok := h.readElsewhere(w, r, sess, streamID, index)
	if !ok {
		st.detach(gen)
		return
	}
	sess.takeOver(st, index, events)
	h.serveStream(w, r, st, gen, streamMode{sse: true, replay: events})
}

// readElsewhere reads the events after index of another instance's stream
// from the event store; it answers the request itself and reports false
// when they cannot all be had.
func (h *httpHandler) readElsewhere(w http.ResponseWriter, r *http.Request, sess *httpSession, streamID string, index int64) ([]streamEvent, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), sharedCallTimeout)
	data, ok, err := h.cfg.store.After(ctx, sess.id, streamID, index)
	cancel()
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
		id, msg := fromStored(d)
		events[i] = streamEvent{index: index + 1 + int64(i), data: msg, stream: streamID, id: id}
	}
	return events, true
}
