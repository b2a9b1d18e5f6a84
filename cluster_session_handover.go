package mcp

// This file holds how the copies of a shared session pass its GET stream
// from one instance to another without losing or repeating a message: who
// holds it, what each copy keeps for the holder until it says it stored
// it, and what the new holder takes over.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
)

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

// handedRoute is the route of a message of the session's own that another
// copy of it handed this one for the GET stream; id names it.
type handedRoute struct{ id string }

// relayID names the handed message, one of the session's own.
func (r handedRoute) relayID() (string, bool) { return r.id, false }

// learnHolder takes word that instance holds the GET stream, as it held
// it before this copy was made, unless newer word came. The server-wide
// messages that wait in the backlog here, which came before the word,
// are the holder's to deliver: they are kept for it, as those that come
// after.
func (sr *sessionReplica) learnHolder(instance string, from int64) {
	sr.s.mu.Lock()
	if sr.holding || sr.holder != "" {
		sr.s.mu.Unlock()
		return
	}
	sr.holder, sr.handover.holderFrom = instance, from
	st := sr.s.standalone
	sr.s.mu.Unlock()
	if st == nil {
		return
	}
	evs := st.takeServerWide()
	sr.s.mu.Lock()
	for _, ev := range evs {
		sr.keepUnconfirmedLocked(keptMessage{ID: ev.id, Data: ev.data, Wide: true})
	}
	sr.s.mu.Unlock()
}

// handOver takes word that instance holds the GET stream from now on,
// resuming note.Stream, or opened fresh. What this copy kept for the last
// holder, and what waits in its backlog (but for what the replay of its
// own stream has), goes to the new one, and is kept until it says it
// stored it; and if the client resumed a stream other than the last
// holder's own, the last holder is named, so that what it carried is
// not lost.
func (sr *sessionReplica) handOver(instance string, note holdNote) {
	stream := note.Stream
	sr.s.mu.Lock()
	ho := &sr.handover
	last := sr.keptLocked()
	last.Messages = slices.Clone(last.Messages)
	if sr.holding || ho.last {
		last.Holder, last.From = sr.cluster.instance, ho.mine
	}
	chain := stream != "" && last.Holder != "" && stream != last.Holder+"-"+standaloneStreamID
	sr.holder = instance
	sr.holding = false
	sr.early = nil
	ho.holderThrough, ho.holderFrom = 0, note.From
	ho.released, ho.releasedThrough, ho.releasedFrom = "", 0, 0
	ho.taking, ho.batches, ho.last = false, nil, false
	st := sr.s.standalone
	sr.s.mu.Unlock()
	var waiting keptBatch
	if st != nil {
		// What was made here before is stored before the new holder,
		// which may wait for this delivery, reads the store to resume.
		st.storeUpTo(sr.s.ctx, st.lastIndex())
		evs := st.takeBacklog()
		if stream == st.id || chain && last.Holder == sr.cluster.instance {
			evs = nil // replayed, or read from this stream by the new holder
		}
		sr.s.mu.Lock()
		for _, ev := range evs {
			w := keptMessage{ID: ev.id, Data: ev.data, Wide: ev.serverWide}
			if w.ID == "" {
				w.ID = sr.nameLocked()
			}
			waiting.Messages = append(waiting.Messages, w)
			sr.keepUnconfirmedLocked(w)
		}
		sr.s.mu.Unlock()
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
				sr.publish(sr.s.ctx, relayKept, data)
			}
		}
	}()
}

// keptLocked returns what this copy keeps for the holder of the GET
// stream, or for the last one if it let it go; the session's mu is held.
func (sr *sessionReplica) keptLocked() keptBatch {
	ho := &sr.handover
	if sr.holder == "" {
		return keptBatch{Holder: ho.released, From: ho.releasedFrom, Through: ho.releasedThrough, Messages: sr.unconfirmed}
	}
	return keptBatch{Holder: sr.holder, From: ho.holderFrom, Through: ho.holderThrough, Messages: sr.unconfirmed}
}

// nameLocked names a message of the session's own made here, for the
// other copies; the session's mu is held.
func (sr *sessionReplica) nameLocked() string {
	sr.handover.named++
	return sr.cluster.instance + "." + strconv.FormatUint(sr.handover.named, 10)
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
func (sr *sessionReplica) pushShared(o outgoing) error {
	id, wide := relayIDOf(o.route)
	handed := id != "" && !wide
	sr.s.mu.Lock()
	if sr.holder != "" && !sr.s.closed && !handed {
		if wide {
			sr.keepUnconfirmedLocked(keptMessage{ID: id, Data: o.data, Wide: true})
			sr.s.mu.Unlock()
			return nil
		}
		w := keptMessage{ID: sr.nameLocked(), Data: o.data}
		sr.keepUnconfirmedLocked(w)
		w.For = sr.holder
		sr.s.mu.Unlock()
		data, _ := json.Marshal(w)
		if sr.publish(sr.s.ctx, relayEvent, data) == nil {
			return nil
		}
		sr.s.mu.Lock() // not handed on: kept here, for a resume
		sr.dropUnconfirmedLocked(w.ID)
	}
	st := sr.s.standalone
	if sr.s.closed || st == nil {
		sr.s.mu.Unlock()
		sr.s.h.log.Debug("dropping a message that belongs to no request: the session has no standalone stream", "session", sr.s.id)
		return errNoStandalone
	}
	confirm := id != "" && sr.holding
	if confirm && !sr.delivered.add(id, 2*sr.s.h.cfg.backlogMessages) {
		sr.s.mu.Unlock()
		sr.confirm(id, 0) // on the stream already: the others may let it go
		return nil
	}
	st.mu.Lock()
	index, kept := st.pushLocked(o)
	st.mu.Unlock()
	if confirm && index > 0 {
		sr.handover.assigned = append(sr.handover.assigned, index)
	}
	sr.s.mu.Unlock()
	err := st.pushed(index, kept)
	if confirm {
		sr.confirm(id, index) // stored: a resume elsewhere replays it
	}
	return err
}

// keepUnconfirmedLocked keeps a message that the holder of the GET stream
// is to store, until it says it did; the session's mu is held.
func (sr *sessionReplica) keepUnconfirmedLocked(w keptMessage) {
	if w.ID == "" {
		return // made on this instance only: the holder has no copy
	}
	if i := slices.Index(sr.early, w.ID); i >= 0 {
		sr.early = slices.Delete(sr.early, i, i+1)
		return
	}
	limit := sr.s.h.cfg.backlogMessages
	if n := len(sr.unconfirmed); n >= limit {
		sr.unconfirmed = slices.Delete(sr.unconfirmed, 0, n-limit+1)
	}
	w.Data = bytes.Clone(w.Data)
	sr.unconfirmed = append(sr.unconfirmed, w)
}

// dropUnconfirmedLocked forgets the kept message id; the session's mu is held.
func (sr *sessionReplica) dropUnconfirmedLocked(id string) bool {
	i := slices.IndexFunc(sr.unconfirmed, func(w keptMessage) bool { return w.ID == id })
	if i >= 0 {
		sr.unconfirmed = slices.Delete(sr.unconfirmed, i, i+1)
	}
	return i >= 0
}

// confirmed drops the messages that instance, the holder of the GET
// stream, stored from those kept here.
func (sr *sessionReplica) confirmed(instance string, n deliveredNote) {
	sr.s.mu.Lock()
	defer sr.s.mu.Unlock()
	ho := &sr.handover
	switch instance {
	case sr.holder:
		ho.holderThrough = max(ho.holderThrough, n.Through)
	case ho.released:
		ho.releasedThrough = max(ho.releasedThrough, n.Through)
	}
	for _, id := range n.IDs {
		if sr.dropUnconfirmedLocked(id) {
			continue
		}
		if n := len(sr.early); n >= sr.s.h.cfg.backlogMessages {
			sr.early = slices.Delete(sr.early, 0, n-sr.s.h.cfg.backlogMessages+1)
		}
		sr.early = append(sr.early, id)
	}
}

// confirm tells the other copies, soon, that the message id is stored on
// the GET stream held here, as its event index (0: it was before). One
// goroutine at a time publishes what was confirmed since the last
// publication, so that the delivery of a broadcast never waits on the
// Broadcaster.
func (sr *sessionReplica) confirm(id string, index int64) {
	sr.s.mu.Lock()
	ho := &sr.handover
	if index > 0 {
		if i := slices.Index(ho.assigned, index); i >= 0 {
			ho.assigned = slices.Delete(ho.assigned, i, i+1)
		}
		ho.confirmedMax = max(ho.confirmedMax, index)
	}
	if n := len(sr.confirms); n >= sr.s.h.cfg.backlogMessages {
		// The oldest go unsaid: what is reported stays below them.
		sr.confirms = slices.Delete(sr.confirms, 0, n-sr.s.h.cfg.backlogMessages+1)
		ho.cap = min(ho.cap, ho.reported)
	}
	sr.confirms = append(sr.confirms, id)
	start := !sr.confirming
	sr.confirming = true
	sr.s.mu.Unlock()
	if start {
		go sr.publishConfirms()
	}
}

// publishConfirms publishes the confirmations that wait, until none does.
func (sr *sessionReplica) publishConfirms() {
	for {
		sr.s.mu.Lock()
		ho := &sr.handover
		note := deliveredNote{IDs: sr.confirms}
		sr.confirms = nil
		if len(note.IDs) == 0 {
			sr.confirming = false
			sr.s.mu.Unlock()
			return
		}
		// Below the events still to be confirmed, every one is.
		note.Through = ho.confirmedMax
		if len(ho.assigned) > 0 {
			note.Through = min(note.Through, slices.Min(ho.assigned)-1)
		}
		note.Through = min(note.Through, ho.cap)
		ho.reported = max(ho.reported, note.Through)
		sr.s.mu.Unlock()
		data, _ := json.Marshal(note)
		sr.publish(sr.s.ctx, relayDelivered, data)
	}
}

// holdStream tells the other instances that this one holds the session's GET
// stream from now on, resuming stream, or opened fresh when stream is "".
// What they kept for the last holder, or that waits in their backlogs,
// they hand over; it waits here, with what this copy kept, until the
// replay is read (takeOver).
func (sr *sessionReplica) holdStream(ctx context.Context, st *httpStream, stream string) {
	note := holdNote{Stream: stream, From: st.lastIndex()}
	sr.s.mu.Lock()
	ho := &sr.handover
	kept := sr.keptLocked()
	sr.holder = ""
	sr.holding = true
	sr.delivered = recentIDs{}
	sr.unconfirmed, sr.early = nil, nil
	*ho = handoverState{named: ho.named, cap: math.MaxInt64, taking: true, resumed: stream, mine: note.From, last: true}
	if len(kept.Messages) > 0 || kept.Holder != "" {
		ho.batches = []keptBatch{kept}
	}
	sr.s.mu.Unlock()
	kind := relayHold
	if stream != "" {
		kind = relayResume
	}
	data, _ := json.Marshal(note)
	sr.publish(ctx, kind, data)
}

// takeStream ends what hold began, once the events after index of the
// stream the client resumed (replay; none for a fresh GET) are read: what
// they have, and what waits in the backlog here, is on the stream; what
// was handed over goes on it unless it is too.
func (sr *sessionReplica) takeStream(st *httpStream, index int64, replay []streamEvent) {
	var ids []string
	for _, ev := range replay {
		if ev.id != "" {
			ids = append(ids, ev.id)
		}
	}
	waiting := st.dropReplayed(ids)
	sr.s.mu.Lock()
	ho := &sr.handover
	if !sr.holding || !ho.taking {
		sr.s.mu.Unlock()
		return // taken over elsewhere meanwhile
	}
	for _, id := range append(ids, waiting...) {
		sr.delivered.add(id, 2*sr.s.h.cfg.backlogMessages)
	}
	ho.scanned = index
	batches := ho.batches
	ho.taking, ho.batches = false, nil
	sr.s.mu.Unlock()
	for _, id := range waiting {
		sr.confirm(id, 0)
	}
	for _, b := range batches {
		sr.deliverKept(b)
	}
}

// takeKept takes what another copy handed over: for the GET stream held
// here, now or, while its replay is read, once it is.
func (sr *sessionReplica) takeKept(b keptBatch) {
	sr.s.mu.Lock()
	ho := &sr.handover
	if !sr.holding {
		sr.s.mu.Unlock()
		return
	}
	if ho.taking {
		ho.batches = append(ho.batches, b)
		limit, n := 2*sr.s.h.cfg.backlogMessages, 0
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
		sr.s.mu.Unlock()
		return
	}
	sr.s.mu.Unlock()
	sr.deliverKept(b)
}

// deliverKept puts on the GET stream held here the messages a copy kept
// for b's holder, each once: those the client has already, or is
// replayed, do not go again.
func (sr *sessionReplica) deliverKept(b keptBatch) {
	sr.chain(b)
	sr.skipStored(b)
	for _, w := range b.Messages {
		var route msgRoute = handedRoute{w.ID}
		if w.Wide {
			route = serverWideRoute{w.ID}
		}
		sr.pushShared(outgoing{data: w.Data, route: route})
	}
}

// chain puts on the GET stream held here what b's holder, the last one,
// stored on its own stream since it took it, when the client resumed an
// older stream: the client had none of it, as its last event came from
// that one. Each holder's stream is read once.
func (sr *sessionReplica) chain(b keptBatch) {
	if b.Holder == "" || b.Holder == sr.cluster.instance || sr.s.h.cfg.store == nil {
		return
	}
	stream := b.Holder + "-" + standaloneStreamID
	sr.s.mu.Lock()
	ho := &sr.handover
	read := sr.holding && ho.resumed != "" && ho.resumed != stream && ho.chained != b.Holder
	if read {
		ho.chained = b.Holder
	}
	sr.s.mu.Unlock()
	if !read {
		return
	}
	for _, d := range sr.storedAfter(stream, b.From, "the client misses what the last holder stored") {
		var route msgRoute
		id, msg := fromStored(d)
		if id != "" {
			route = handedRoute{id}
		}
		sr.pushShared(outgoing{data: msg, route: route})
	}
}

// storedAfter reads the events of the session's stream after index from
// the event store; when it cannot have them all, it logs why, and what
// that costs, and returns none.
func (sr *sessionReplica) storedAfter(stream string, index int64, cost string) [][]byte {
	ctx, cancel := sr.s.callCtx()
	data, ok, err := sr.s.h.cfg.store.After(ctx, sr.s.id, stream, index)
	cancel()
	if err == nil && !ok {
		err = errors.New("the store no longer holds them all")
	}
	if err != nil {
		sr.s.h.log.Warn("cannot read a GET stream's events from the event store: "+cost, "session", sr.s.id, "stream", stream, "after", index, "err", err)
		return nil
	}
	return data
}

// skipStored counts as delivered the messages of b that its holder, whose
// stream the client resumed here, stored before it died without saying
// so: they are among its events after b.Through, up to where the client
// resumed (those after are the replay's).
func (sr *sessionReplica) skipStored(b keptBatch) {
	if b.Holder == "" || len(b.Messages) == 0 || sr.s.h.cfg.store == nil {
		return
	}
	stream := b.Holder + "-" + standaloneStreamID
	sr.s.mu.Lock()
	ho := &sr.handover
	upTo := ho.scanned
	scan := sr.holding && ho.resumed == stream && b.Through < upTo
	sr.s.mu.Unlock()
	if !scan {
		return
	}
	data := sr.storedAfter(stream, b.Through, "what the dead holder left may come twice")
	sr.s.mu.Lock()
	defer sr.s.mu.Unlock()
	if ho.resumed != stream {
		return
	}
	for i, d := range data {
		if b.Through+1+int64(i) > upTo {
			break
		}
		if id, _ := fromStored(d); id != "" {
			sr.delivered.add(id, 2*sr.s.h.cfg.backlogMessages)
		}
	}
	ho.scanned = min(ho.scanned, b.Through)
}

// releaseStream tells the other instances that this one no longer holds
// the session's GET stream.
func (sr *sessionReplica) releaseStream() {
	sr.s.mu.Lock()
	sr.holding = false
	sr.handover.taking, sr.handover.batches = false, nil
	sr.s.mu.Unlock()
	// Also when the session's copy here has just ended, as at a shutdown:
	// the others must stop sending here.
	sr.publish(context.WithoutCancel(sr.s.ctx), relayRelease, nil)
}
