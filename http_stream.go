package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// streamBacklog is how many unwritten bytes a stream may hold for a client
// that reads too slowly before the handler gives up on that connection
// (the client may resume it from the event store).
const streamBacklog = 8 << 20

// streamEvent is one message of a stream, numbered for SSE event ids.
type streamEvent struct {
	index int64
	data  []byte
	final bool
	// stream is the id of the stream the event belongs to when it is not
	// the one written: an event of another instance's stream, replayed
	// from the event store (resumeElsewhere).
	stream string
	// pooled: data is the engine's pooled buffer, which goes back to the
	// pool once written (as a JSON answer); events that are stored or may
	// wait long get a compact copy instead (compact).
	pooled bool
	// serverWide: a message every session gets, which every instance that
	// shares the session has a copy of (see serverWideRoute).
	serverWide bool
	// id names the message among the copies of a shared session, if it
	// has a name: a server-wide one, or one handed from copy to copy
	// (cluster_session_handover.go). It is stored with the event.
	id string
}

// compact gives ev a buffer of its own, fit to its length, to keep.
func (ev *streamEvent) compact() {
	if ev.pooled {
		ev.data, ev.pooled = ownable(ev.data), false
	}
}

// httpStream is one response stream: a POST's (JSON or SSE), or a legacy
// session's standalone GET stream. The engine pushes messages into it from
// any goroutine without waiting for the client; one HTTP handler goroutine
// at a time, the attached writer, writes them out. The events of an SSE
// stream are queued for the event store under the lock and stored, in
// order, outside it (storeUpTo): a POST's by its writer when it ends or
// loses its client, all at once, and otherwise by each pusher.
type httpStream struct {
	sess  *httpSession // nil for a 2026-07-28 POST
	id    string
	log   *slog.Logger
	token *TokenInfo // the POST's bearer token (a BearerAuth's), for RequestInfo.Token

	mu sync.Mutex
	// inline is set while the stream's request runs on the goroutine that
	// will write the stream: the first message to go out before the answer
	// starts a writer (inlineStarted).
	inline        *inlineWriter // (its storage is the POST's, pooled)
	pending       []streamEvent // pushed, not yet taken by the writer
	pendBytes     int
	wake          chan struct{} // the attached writer's signal
	gen           int64         // the attached writer's generation
	awaiting      awaitSet      // requests whose responses are still to come
	retry         time.Duration
	next          int64 // the last index assigned
	written       int64 // the last index written to a client
	standalone    bool
	attached      bool
	dispatched    bool // every request of the POST was dispatched
	finished      bool // every response was pushed
	closed        bool // the session or exchange ended
	closeReq      bool // the handler asked to end the SSE stream early
	sse           bool // the stream is (or was) written as SSE: its events are stored
	hasErr        bool // a response was an error (a failed initialize)
	inlineStarted bool
	// quiet: the POST has sent nothing for the keep-alive interval
	// (keepAliveDue); the writer turns to SSE and writes a comment.
	quiet bool
	// The event store's flags (with unstored and storeTimer, below):
	// storing, a goroutine is storing the head of unstored; storeDue,
	// storeTimer is running.
	storing, storeDue bool

	// writerCtx is the attached writer's request context, once it took
	// the stream: when it ends the client has gone, whether or not the
	// writer noticed yet.
	writerCtx context.Context
	// backlog is a standalone stream's account of its backlog; nil for
	// the others (a POST's stream need not carry it).
	backlog *standaloneBacklog

	unstored []streamEvent // events queued for the store, in order
	drained  chan struct{} // closed when storing is done, if anyone waits
	lost     int64         // the last index whose Append failed
	// storeTimer stores, once WithEventStoreDelay passed, the events a
	// POST's writer wrote and left to store (storeDue, above, while it
	// runs).
	storeTimer *time.Timer
}

// standaloneBacklog is what a standalone stream counts of its backlog.
type standaloneBacklog struct {
	// dropped counts the messages dropped since the last report
	// (reportDropsLocked).
	dropped int
	// What the handler's backlog budget counts of the stream
	// (http_backlog.go), and the index of its oldest message held.
	countedBytes, countedMessages int
	firstPending                  atomic.Int64
}

func newHTTPStream(sess *httpSession, id string, awaiting []ID, log *slog.Logger) *httpStream {
	// wake is made when the first writer must wait (take): a request
	// answered before its stream is written never needs one.
	return &httpStream{sess: sess, id: id, awaiting: newAwaitSet(awaiting), log: log, gen: 1, attached: true}
}

// awaitSet holds the requests whose responses a stream awaits: a few in a
// slice, a batch's many in a map, so that settling each answer of a large
// batch costs the same as settling the one answer of a POST.
type awaitSet struct {
	few  []ID
	many map[ID]int // how many times each id is awaited: a batch may repeat one
	n    int
}

// awaitSetSlice is how many ids are kept in a slice, searched in order.
const awaitSetSlice = 16

func newAwaitSet(ids []ID) awaitSet {
	if len(ids) <= awaitSetSlice {
		return awaitSet{few: ids, n: len(ids)}
	}
	m := make(map[ID]int, len(ids))
	for _, id := range ids {
		m[id]++
	}
	return awaitSet{many: m, n: len(ids)}
}

// remove takes one awaited id away; it reports whether id was awaited.
func (a *awaitSet) remove(id ID) bool {
	if a.many != nil {
		k, ok := a.many[id]
		if !ok {
			return false
		}
		if k > 1 {
			a.many[id] = k - 1
		} else {
			delete(a.many, id)
		}
		a.n--
		return true
	}
	i := slices.Index(a.few, id)
	if i < 0 {
		return false
	}
	a.few = slices.Delete(a.few, i, i+1)
	a.n--
	return true
}

// routeStream is the HTTP stream a route names, or nil: the HTTP room made
// the route, and only it reads one (see msgRoute).
func routeStream(route msgRoute) *httpStream {
	st, _ := route.(*httpStream)
	return st
}

// writer returns the generation of the stream's current writer.
func (s *httpStream) writer() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func (s *httpStream) store() EventStore {
	if s.sess == nil {
		return nil
	}
	return s.sess.h.cfg.store
}

func (s *httpStream) signalLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push adds a message to the stream; the engine calls it from any goroutine.
// It never waits for the client, only, once the lock is released and when
// no writer will store it, for the event store to keep the event. It
// returns ErrStreamClosed when the message was dropped because it can no
// longer reach the client: the stream ended, or its client went away and
// it cannot be resumed.
func (s *httpStream) push(o outgoing) error {
	s.mu.Lock()
	index, kept := s.pushLocked(o)
	s.mu.Unlock()
	return s.pushed(index, kept)
}

// pushed finishes a push, once the lock is released: it waits for the
// event store to keep event index (if not 0), and says whether the
// message may still reach the client.
func (s *httpStream) pushed(index int64, kept bool) error {
	if index > 0 {
		s.storeUpTo(s.sess.ctx, index)
	}
	if s.standalone {
		s.sess.h.backlog.enforce(s.sess.h)
	}
	if !kept {
		return ErrStreamClosed
	}
	return nil
}

// pushLocked adds a message to the stream; it returns the index of an event
// queued for the store, or 0, and whether the message may still reach the
// client (written, waiting for a writer, or stored for a resume).
func (s *httpStream) pushLocked(o outgoing) (queued int64, kept bool) {
	if s.closed || (s.finished && !s.standalone) {
		s.log.Debug("dropping a message for a stream that has ended", "stream", s.id)
		return 0, false
	}
	if s.attached && s.writerCtx != nil && s.writerCtx.Err() != nil {
		s.detachLocked() // the writer is about to notice
	}
	if len(o.data) == 0 {
		// The engine's word that a cancelled request will not be answered:
		// the stream stops waiting for it, and nothing is sent.
		if o.final {
			s.settleLocked(o.related)
			s.signalLocked()
		}
		return 0, true
	}
	s.next++
	id, wide := relayIDOf(o.route)
	if s.sess == nil || s.sess.replica == nil {
		id = "" // named for the copies of a shared session only
	}
	ev := streamEvent{index: s.next, data: o.data, final: o.final, pooled: true, serverWide: wide, id: id}
	if s.sse || s.standalone {
		ev.compact() // it will be stored, or may wait long
	}
	// Only an SSE stream can be resumed: events of a stream that may still
	// be answered with JSON are stored when, and if, it turns to SSE.
	store := s.store()
	if store != nil && s.sse {
		s.unstored = append(s.unstored, ev)
		queued = ev.index
	}
	if o.final {
		if _, isErr := errorCodeOf(ev.data); isErr { // not o.data: compact may have recycled it
			s.hasErr = true
		}
		s.settleLocked(o.related)
	}
	kept = queued > 0 // stored for a resume, at least
	switch {
	case s.attached && s.pendBytes+len(ev.data) > streamBacklog && !s.standalone:
		// The client reads too slowly: let the connection go rather than
		// hold an unbounded backlog. It may resume from the store.
		s.log.Warn("an HTTP client reads too slowly; dropping its stream", attrSession, s.sessionID(), "stream", s.id, "backlog", s.pendBytes)
		s.detachLocked()
	case s.attached || s.standalone:
		if s.standalone {
			s.trimBacklogLocked(len(ev.data))
		}
		s.setPendingLocked(append(s.pending, ev), s.pendBytes+len(ev.data))
		if s.standalone {
			s.sess.h.backlog.queueLocked(s, ev.index)
		}
		kept = true
	case store == nil || !s.sse:
		s.log.Debug("dropping a message whose client stream is gone and cannot be resumed", "stream", s.id)
	}
	if queued > 0 && s.sess.h.cfg.storeDelay > 0 && !s.standalone && s.attached && s.writerCtx != nil {
		// A POST's writer is writing: it stores what it wrote, all at
		// once, when it ends or loses its client (serveStream), or the
		// delay's timer does, so that a call costs the store one trip
		// rather than one per event.
		queued = 0
		s.storeLaterLocked()
	}
	if !o.final {
		s.startWriterLocked()
	}
	s.signalLocked()
	return queued, kept
}

// sessionID is the id of the stream's session; empty for a 2026-07-28 POST's.
func (s *httpStream) sessionID() string {
	if s.sess == nil {
		return ""
	}
	return s.sess.id
}

// trimBacklogLocked drops the oldest messages waiting on a standalone
// stream until one of n bytes fits within the session's backlog bounds
// (WithSessionBacklog). The first drop of a run is logged at once, the
// count of the run when the backlog is next handed over (reportDropsLocked).
func (s *httpStream) trimBacklogLocked(n int) {
	cfg := s.sess.h.cfg
	drop, bytes := 0, s.pendBytes
	for drop < len(s.pending) && (len(s.pending)-drop >= cfg.backlogMessages || bytes+n > cfg.backlogBytes) {
		bytes -= len(s.pending[drop].data)
		drop++
	}
	if drop == 0 {
		return
	}
	clear(s.pending[:drop]) // the messages go now, not when the array does
	s.setPendingLocked(s.pending[drop:], bytes)
	if s.backlog.dropped == 0 {
		s.log.Warn("a session's standalone stream backlog is full; dropping its oldest undelivered messages", attrSession, s.sess.id, "maxBytes", cfg.backlogBytes, "maxMessages", cfg.backlogMessages)
	}
	s.backlog.dropped += drop
}

// reportDropsLocked logs how many messages the backlog dropped since the
// last report, if any: once it is handed over, or the stream ends.
func (s *httpStream) reportDropsLocked() {
	if s.backlog != nil && s.backlog.dropped > 0 {
		s.log.Warn("dropped undelivered messages of a session's standalone stream", attrSession, s.sess.id, "dropped", s.backlog.dropped)
		s.backlog.dropped = 0
	}
}

// takeBacklog empties the backlog of a standalone stream that no GET
// holds here, as another instance took the GET stream over, and returns
// it.
func (s *httpStream) takeBacklog() []streamEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached {
		return nil
	}
	backlog := s.pending
	s.setPendingLocked(nil, 0)
	s.reportDropsLocked()
	return backlog
}

// takeServerWide takes from the backlog of a standalone stream that no GET
// holds here the named server-wide messages, which another instance
// holds the GET stream to deliver.
func (s *httpStream) takeServerWide() []streamEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached {
		return nil
	}
	var taken []streamEvent
	bytes := s.pendBytes
	s.setPendingLocked(slices.DeleteFunc(s.pending, func(ev streamEvent) bool {
		if ev.serverWide && ev.id != "" {
			taken = append(taken, ev)
			bytes -= len(ev.data)
			return true
		}
		return false
	}), bytes)
	return taken
}

// dropReplayed drops from the backlog of a standalone stream the messages
// named ids, which the GET that took it replays from another instance's
// stream, and returns the names of those left, which it writes.
func (s *httpStream) dropReplayed(ids []string) (left []string) {
	replayed := make(map[string]bool, len(ids))
	for _, id := range ids {
		replayed[id] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bytes := s.pendBytes
	s.setPendingLocked(slices.DeleteFunc(s.pending, func(ev streamEvent) bool {
		if ev.id == "" {
			return false
		}
		if replayed[ev.id] {
			bytes -= len(ev.data)
			return true
		}
		left = append(left, ev.id)
		return false
	}), bytes)
	return left
}

// beginInline records that the stream's request is about to run on the
// goroutine that would write the stream; iw starts a writer should one be
// needed meanwhile.
func (s *httpStream) beginInline(iw *inlineWriter) {
	s.mu.Lock()
	s.inline, s.inlineStarted = iw, false
	s.mu.Unlock()
}

// endInline records that the request ran; it reports whether a writer
// goroutine was started meanwhile.
func (s *httpStream) endInline() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := s.inlineStarted
	s.inline, s.inlineStarted = nil, false
	return started
}

// startWriterLocked starts the writer of a stream whose request runs
// inline, once: something must go out before the answer.
func (s *httpStream) startWriterLocked() {
	if s.inline != nil && !s.inlineStarted {
		s.inlineStarted = true
		s.inline.start(s)
	}
}

// keepAliveDue is the POST's keep-alive timer: its request has sent
// nothing for the keep-alive interval, so the writer (started now if the
// request runs inline) answers with SSE and a comment at once, before a
// proxy between it and the client gives up on a silent response.
func (s *httpStream) keepAliveDue() {
	s.mu.Lock()
	s.quiet = true
	s.startWriterLocked()
	s.signalLocked()
	s.mu.Unlock()
}

// startSSE records that the stream's writer answers with SSE: from now on
// its events are stored for resumption, starting with those the writer
// took (held, in order) and those still pending, which come after them.
// It returns the index up to which it queued events for the store, or 0.
func (s *httpStream) startSSE(held []streamEvent) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sse {
		return 0
	}
	s.sse = true
	for i := range held {
		held[i].compact()
	}
	for i := range s.pending {
		s.pending[i].compact()
	}
	if s.store() == nil || len(held)+len(s.pending) == 0 {
		return 0
	}
	s.unstored = append(append(s.unstored, held...), s.pending...)
	if !s.standalone {
		// Stored when the writer ends, or the delay passed first.
		s.storeLaterLocked()
	}
	return s.next
}

// storeUpTo returns once the stream's events up to index are stored, or
// ctx ends, reporting the last index whose Append failed. It stores them
// itself, in order and outside every lock, unless another goroutine is
// storing: then it waits for that one. Each stores only up to its own
// index, so nobody stores for others forever.
func (s *httpStream) storeUpTo(ctx context.Context, index int64) (lost int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.unstored) > 0 && s.unstored[0].index <= index {
		if s.storing {
			if s.drained == nil {
				s.drained = make(chan struct{})
			}
			drained := s.drained
			s.mu.Unlock()
			select {
			case <-drained:
			case <-ctx.Done():
				s.mu.Lock()
				return s.lost, false
			}
			s.mu.Lock()
			continue
		}
		n := 0
		for n < len(s.unstored) && s.unstored[n].index <= index {
			n++
		}
		evs := s.unstored[:n]
		s.storing = true
		s.mu.Unlock()
		failed := s.appendEvents(evs)
		s.mu.Lock()
		s.storing = false
		s.lost = max(s.lost, failed)
		s.unstored = slices.Delete(s.unstored, 0, n) // pushes only appended meanwhile
		if s.drained != nil {
			close(s.drained)
			s.drained = nil
		}
	}
	return s.lost, true
}

// appendEvents hands evs to the event store with the session's context and
// returns the last index it failed to keep. Nothing is stored once the
// session ended: the store forgets all of it.
func (s *httpStream) appendEvents(evs []streamEvent) (failed int64) {
	sess := s.sess
	if !sess.holdStore() {
		return 0
	}
	defer sess.releaseStore()
	if batch, ok := sess.h.cfg.store.(EventBatchStore); ok && len(evs) > 1 && consecutive(evs) {
		data := make([][]byte, len(evs))
		for i, ev := range evs {
			data[i] = ev.data
			if ev.id != "" {
				data[i] = storedForm(ev.id, ev.data)
			}
		}
		ctx, cancel := sess.callCtx()
		err := batch.AppendBatch(ctx, sess.id, s.id, evs[0].index, data)
		cancel()
		if sess.ctx.Err() != nil {
			return 0
		}
		if err != nil {
			s.log.Warn("cannot store SSE events; a resume that needs them will fail", "session", sess.id, "stream", s.id, "from", evs[0].index, "to", evs[len(evs)-1].index, "err", err)
			return evs[len(evs)-1].index
		}
		return 0
	}
	for _, ev := range evs {
		data := ev.data
		if ev.id != "" {
			data = storedForm(ev.id, data)
		}
		ctx, cancel := sess.callCtx()
		err := sess.h.cfg.store.Append(ctx, sess.id, s.id, ev.index, data)
		cancel()
		if sess.ctx.Err() != nil {
			return 0
		}
		if err != nil {
			s.log.Warn("cannot store an SSE event; a resume that needs it will fail", "session", sess.id, "stream", s.id, "index", ev.index, "err", err)
			failed = ev.index
		}
	}
	return failed
}

// storeLaterLocked starts the store timer unless it runs: what the stream
// queued goes to the store once WithEventStoreDelay passed.
func (s *httpStream) storeLaterLocked() {
	if s.storeDue {
		return
	}
	s.storeDue = true
	if s.storeTimer == nil {
		s.storeTimer = time.AfterFunc(s.sess.h.cfg.storeDelay, s.storeDelayed)
	} else {
		s.storeTimer.Reset(s.sess.h.cfg.storeDelay)
	}
}

// storeDelayed is the store timer: it stores what the stream queued.
func (s *httpStream) storeDelayed() {
	s.mu.Lock()
	s.storeDue = false
	last := s.next
	s.mu.Unlock()
	s.storeUpTo(s.sess.ctx, last)
}

// storedForm is how an event that carries a message's id (a shared
// session's, see streamEvent.id) is kept in the event store: '@', the id,
// a space, then the message; the handler alone reads the store, and takes
// the id off (fromStored).
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

// consecutive reports whether evs's indexes follow one another.
func consecutive(evs []streamEvent) bool {
	for i := 1; i < len(evs); i++ {
		if evs[i].index != evs[i-1].index+1 {
			return false
		}
	}
	return true
}

// forget tells the event store, once the stream's events are stored, that
// no client will need them again. The stream has ended: nothing more comes.
func (s *httpStream) forget() {
	s.mu.Lock()
	sse, last := s.sse, s.next
	s.mu.Unlock()
	store := s.store()
	if store == nil || !sse {
		return
	}
	sess := s.sess
	if _, ok := s.storeUpTo(sess.ctx, last); !ok || !sess.holdStore() {
		return
	}
	defer sess.releaseStore()
	ctx, cancel := sess.callCtx()
	defer cancel()
	if err := store.StreamDone(ctx, sess.id, s.id); err != nil && sess.ctx.Err() == nil {
		s.log.Warn("the event store failed to drop a stream's events", "session", sess.id, "stream", s.id, "err", err)
	}
}

// settle counts the response to id as sent (or, for a cancelled request,
// as never coming); it reports whether the stream awaited it.
func (s *httpStream) settle(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.settleLocked(id)
	if ok {
		s.signalLocked()
	}
	return ok
}

func (s *httpStream) settleLocked(id ID) bool {
	if !s.awaiting.remove(id) {
		return false
	}
	if s.dispatched && s.awaiting.n == 0 {
		s.finished = true
	}
	return true
}

// frameDone records that the POST body was handed to the engine: the
// responses it will produce are those still awaited.
func (s *httpStream) frameDone() {
	s.mu.Lock()
	s.dispatched = true
	if s.awaiting.n == 0 {
		s.finished = true
	}
	s.signalLocked()
	s.mu.Unlock()
}

func (s *httpStream) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasErr
}

func (s *httpStream) close() {
	s.mu.Lock()
	s.closed = true
	s.countBacklogLocked()
	s.reportDropsLocked()
	s.signalLocked()
	s.mu.Unlock()
}

// requestClose asks the writer to end the SSE stream now, with a retry
// hint; the client resumes it from the event store.
func (s *httpStream) requestClose(retry time.Duration) {
	s.mu.Lock()
	s.closeReq, s.retry = true, retry
	s.startWriterLocked()
	s.signalLocked()
	s.mu.Unlock()
}

// abandoned reports whether the stream is finished with no writer: only a
// resumption could still want it.
func (s *httpStream) abandoned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished && !s.attached
}

// streamState is what the writer learns from the stream at each turn.
type streamState struct {
	superseded bool // another writer took the stream over
	finished   bool
	closed     bool
	closeReq   bool
	quiet      bool // the POST's keep-alive came due (keepAliveDue)
	retry      time.Duration
	wake       chan struct{} // the writer's signal, while it may wait
}

// take hands the writer of generation gen, which serves the request whose
// context is ctx, everything pushed since its last turn.
func (s *httpStream) take(ctx context.Context, gen int64) ([]streamEvent, streamState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || !s.attached {
		return nil, streamState{superseded: true}
	}
	s.writerCtx = ctx
	evs := s.pending
	s.setPendingLocked(nil, 0)
	s.reportDropsLocked()
	st := streamState{finished: s.finished && !s.standalone, closed: s.closed, closeReq: s.closeReq, quiet: s.quiet, retry: s.retry}
	s.closeReq, s.quiet = false, false
	if !st.finished && !st.closed {
		// The writer may wait for what comes next: made under the lock
		// that pushes take, so that no signal is lost.
		if s.wake == nil {
			s.wake = make(chan struct{}, 1)
		}
		st.wake = s.wake
	}
	return evs, st
}

func (s *httpStream) markWritten(gen, index int64) {
	s.mu.Lock()
	if s.gen == gen && index > s.written {
		s.written = index
	}
	s.mu.Unlock()
}

// lastIndex is the index of the stream's last event.
func (s *httpStream) lastIndex() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *httpStream) writtenIndex() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// detach lets the writer of generation gen go: its client is gone or too
// slow. What it had not written stays in the event store, if any.
func (s *httpStream) detach(gen int64) {
	s.mu.Lock()
	if s.gen == gen {
		s.detachLocked()
	}
	s.mu.Unlock()
}

func (s *httpStream) detachLocked() {
	s.attached, s.writerCtx = false, nil
	if !s.standalone {
		s.setPendingLocked(nil, 0)
	}
	s.signalLocked()
}

// attachLocked makes a new writer the stream's; the previous one, if any,
// notices that it was superseded (signalled on its own channel) and
// returns; the new one gets a channel of its own when it first waits.
func (s *httpStream) attachLocked() int64 {
	s.signalLocked()
	s.gen++
	s.wake, s.writerCtx = nil, nil
	s.attached = true
	return s.gen
}

// attachFresh attaches a new GET to the standalone stream unless one is
// attached already.
func (s *httpStream) attachFresh() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached || s.closed {
		return 0, false
	}
	return s.attachLocked(), true
}

// resume attaches a resuming GET to the stream and returns the events after
// index to replay first; ok is false when the store no longer has them all
// or cannot say. Once attached, the GET gets every later event live; those
// before are read from the store with ctx once all of them were stored.
func (s *httpStream) resume(ctx context.Context, index int64) ([]streamEvent, int64, bool) {
	store := s.store()
	s.mu.Lock()
	if s.closed || store == nil || index > s.next || index < s.lost {
		s.mu.Unlock()
		return nil, 0, false
	}
	s.setPendingLocked(nil, 0) // all of it is in the replay
	s.reportDropsLocked()
	gen, last := s.attachLocked(), s.next
	s.mu.Unlock()
	if index == last {
		return nil, gen, true
	}
	if lost, ok := s.storeUpTo(ctx, last); !ok || index < lost {
		s.detach(gen)
		return nil, 0, false
	}
	callCtx, cancel := context.WithTimeout(ctx, sharedCallTimeout)
	data, ok, err := store.After(callCtx, s.sess.id, s.id, index)
	cancel()
	if err != nil && ctx.Err() == nil {
		s.log.Warn("cannot read SSE events to resume a stream", "session", s.sess.id, "stream", s.id, "err", err)
	}
	if err != nil || !ok || int64(len(data)) < last-index {
		s.detach(gen)
		return nil, 0, false
	}
	replay := make([]streamEvent, last-index) // later events come live
	for i := range replay {
		id, msg := fromStored(data[i])
		replay[i] = streamEvent{index: index + 1 + int64(i), data: msg, id: id}
	}
	return replay, gen, true
}

// complete is called by a writer that wrote the stream's last response.
// A written response may still be lost with a connection whose end the
// server has not noticed yet, so a resumable (SSE) stream stays resumable
// for a while; a JSON answer cannot be resumed and goes at once.
func (s *httpStream) complete(gen int64, resumable bool) {
	s.mu.Lock()
	mine := s.gen == gen
	if mine {
		s.attached, s.writerCtx = false, nil
	}
	s.mu.Unlock()
	if !mine || s.sess == nil {
		return
	}
	if resumable {
		s.sess.retainStream(s)
	} else {
		s.sess.removeStream(s)
	}
}

// streamMode says how a writer serves a stream.
type streamMode struct {
	sse    bool          // SSE from the start: GET, subscriptions/listen, resumption
	batch  bool          // a JSON answer is an array
	modern bool          // a JSON error answer gets its 2026-07-28 HTTP status
	prime  bool          // start SSE with a priming event (2025-11-25)
	event  string        // the SSE event name, for the 2024-11-05 transport
	intro  []byte        // written right after the headers: the 2024-11-05 endpoint event
	replay []streamEvent // events to write first, when resuming
}

// serveStream writes stream s to w as its writer of generation gen, until
// every response was written (it reports true), or the client went away,
// was too slow, or another writer took over (false). It answers with JSON
// when the responses come before anything else, and with SSE otherwise.
func (h *httpHandler) serveStream(w http.ResponseWriter, r *http.Request, s *httpStream, gen int64, m streamMode) bool {
	out := &sseWriter{w: w, rc: *http.NewResponseController(w), timeout: h.cfg.writeTimeout, event: m.event, ids: s.store() != nil, streamID: s.id}
	var held []streamEvent
	var keepAlive *time.Timer
	var keepAliveC <-chan time.Time
	var queued int64 // the last event queued for the store on turning SSE
	defer func() {
		if keepAlive != nil {
			keepAlive.Stop()
		}
		if s.sess != nil && (queued > 0 || !s.standalone) {
			// Stored after they were written, unless a push or the store
			// timer did it: a POST's events wait for this, its writer's
			// end, or the timer (pushLocked).
			s.mu.Lock()
			if s.storeDue && s.storeTimer.Stop() {
				s.storeDue = false
			}
			last := s.next
			s.mu.Unlock()
			s.storeUpTo(s.sess.ctx, last)
		}
	}()
	started := false
	start := func(taken []streamEvent) error {
		started = true
		queued = s.startSSE(taken)
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if h.cfg.keepAlive > 0 {
			keepAlive = time.NewTimer(h.cfg.keepAlive)
			keepAliveC = keepAlive.C
		}
		if len(m.intro) > 0 {
			return out.write(m.intro)
		}
		if m.prime && out.ids {
			return out.prime(s.writtenIndex())
		}
		return out.flush()
	}
	fail := func(err error) bool {
		h.log.Debug("lost an HTTP client while writing its stream", "stream", s.id, "err", err)
		s.detach(gen)
		return false
	}
	// An SSE answer takes what the stream holds before it goes, written
	// after the replay (first): left in a standalone stream's backlog, it
	// would be pushed out (trimBacklogLocked) by what comes once the
	// client has the answer, before this writer took it, though the
	// client reads.
	var first []streamEvent
	var firstState *streamState
	if m.sse {
		evs, st := s.take(r.Context(), gen)
		first, firstState = evs, &st
		if err := start(evs); err != nil {
			return fail(err)
		}
		if len(m.replay) > 0 {
			if err := out.events(m.replay); err != nil {
				return fail(err)
			}
			if last := m.replay[len(m.replay)-1]; last.stream == "" {
				s.markWritten(gen, last.index)
			}
		}
	}
	for {
		var evs []streamEvent
		var st streamState
		if firstState != nil {
			evs, st, first, firstState = first, *firstState, nil, nil
		} else {
			evs, st = s.take(r.Context(), gen)
		}
		if st.superseded {
			return false
		}
		wake := st.wake // set whenever the writer may wait
		// Held for a JSON answer while only responses came, unless the
		// POST was quiet too long and the answer is not all there yet.
		jsonAnswer := !st.quiet || st.finished || st.closed
		if !started && !st.closeReq && jsonAnswer && !slices.ContainsFunc(evs, func(e streamEvent) bool { return !e.final }) {
			if held == nil {
				held = evs // take hands the slice over
			} else {
				held = append(held, evs...)
			}
			evs = nil
			switch {
			case st.finished:
				h.writeJSON(w, out, s, held, m)
				s.complete(gen, false)
				return true
			case st.closed:
				writeHTTPError(w, http.StatusNotFound, CodeInvalidRequest, ID{}, "Not Found: the session ended")
				return false
			}
		} else {
			if !started {
				evs = append(held, evs...)
				held = nil
				if err := start(evs); err != nil {
					return fail(err)
				}
				if st.quiet && len(evs) == 0 {
					if err := out.comment(); err != nil {
						return fail(err)
					}
				}
			}
			if len(evs) > 0 {
				if err := out.events(evs); err != nil {
					return fail(err)
				}
				s.markWritten(gen, evs[len(evs)-1].index)
				if keepAlive != nil {
					keepAlive.Reset(h.cfg.keepAlive)
				}
			}
			switch {
			case st.finished:
				s.complete(gen, out.ids)
				return true
			case st.closed:
				return false
			case st.closeReq:
				out.retryHint(st.retry)
				s.detach(gen)
				return false
			}
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			s.detach(gen)
			return false
		case <-keepAliveC:
			if err := out.comment(); err != nil {
				return fail(err)
			}
			if s.sess != nil {
				// A shared session busy only with a long stream stays
				// alive in the store too.
				s.sess.replica.keepAlive(r.Context())
			}
			keepAlive.Reset(h.cfg.keepAlive)
		}
	}
}

// writeJSON answers a POST whose responses all came before anything else:
// one JSON object, or an array for a batch; 202 when there is nothing to
// say.
func (h *httpHandler) writeJSON(w http.ResponseWriter, out *sseWriter, s *httpStream, held []streamEvent, m streamMode) {
	if len(held) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var body []byte
	if m.batch {
		body = append(body, '[')
		for i, ev := range held {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, ev.data...)
		}
		body = append(body, ']')
	} else {
		body = held[0].data
		for _, ev := range held[1:] {
			h.log.Warn("dropping an extra response to a single request", "stream", s.id, "message", string(ev.data))
		}
	}
	status := http.StatusOK
	if m.modern {
		if code, isErr := errorCodeOf(held[0].data); isErr {
			status = modernStatus(code)
		}
	}
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	if len(body) > 2048 {
		// Below net/http's chunking buffer it counts the length itself.
		hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	// No flush: net/http sends the headers and the body in one write when
	// the handler returns.
	out.setDeadline()
	w.Write(body) // copies body, or writes it through
	for _, ev := range held {
		if ev.pooled {
			recycleMessage(ev.data)
		}
	}
}

// jsonContentType is the Content-Type of JSON answers, shared: a header
// value is only ever replaced, never modified in place.
var jsonContentType = []string{"application/json"}

// errorCodeOf reads the error code of an error response. It stops at the
// first of result and error, so a large result is skipped over, not
// scanned for an error it cannot hold.
func errorCodeOf(data []byte) (int, bool) {
	var errVal []byte
	eachMember(data, func(key, val []byte) bool {
		if string(key) == "error" {
			errVal = val
		}
		return string(key) != "error" && string(key) != "result"
	})
	if errVal == nil || string(errVal) == "null" {
		return 0, false
	}
	e, ok := decodeError(errVal)
	if !ok {
		return 0, false
	}
	return e.Code, true
}

// modernStatus maps the JSON-RPC error of a 2026-07-28 JSON response to its
// HTTP status.
func modernStatus(code int) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeHeaderMismatch, CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion, CodeParseError, CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// inlineWriter is the writer a stream starts on its own goroutine when a
// message must go out while the request runs on the HTTP goroutine.
type inlineWriter struct {
	// serveStream's arguments: the stream's, and of its mode what a
	// single request's stream may have (not SSE from the start, no batch)
	h             *httpHandler
	w             http.ResponseWriter
	r             *http.Request
	gen           int64
	done          chan struct{}
	modern, prime bool
	complete      bool // serveStream's result, once done is closed
}

// start runs the writer of s on a goroutine of its own.
func (iw *inlineWriter) start(s *httpStream) {
	iw.done = make(chan struct{})
	go func() {
		defer close(iw.done)
		iw.complete = iw.h.serveStream(iw.w, iw.r, s, iw.gen, streamMode{modern: iw.modern, prime: iw.prime})
	}()
}

// CloseStream ends the SSE stream that carries this request's messages
// without ending the request, telling the client to come back after retry:
// the 2025-11-25 polling pattern (SEP-1699), which frees the connection
// during a long call. Everything sent meanwhile is kept and delivered when
// the client resumes the stream. It does nothing unless the request came
// over Streamable HTTP on revision 2025-11-25 with an event store.
func (r *RequestInfo) CloseStream(retry time.Duration) {
	s := routeStream(r.route)
	if s == nil || s.sess == nil || s.store() == nil || r.modern || r.version < Version20251125 {
		return
	}
	s.requestClose(retry)
}
