package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
)

// A server given WithBroadcaster tells every instance, itself included,
// what all of them must see, and each instance delivers it to its own
// clients. Two kinds of channel are used here and in tasks_multi.go:
//
//	mcp:server        server-wide changes, one serverMessage each
//	mcp:task:<id>     a task's status, cancellation and answers (taskMessage)
//
// An instance subscribes to a channel only while something local needs it
// (a session or listen stream for mcp:server; a running task, a listen
// stream naming the task or a tasks/result waiter for mcp:task:<id>), and
// ends the subscription with the last of them.
//
// Each instance keeps its own registries: a tool added on one instance is
// announced to the clients of all, so the same change is to be made on
// every instance, as their start-up code does. What the start-up code
// registers before the instance serves is not announced (listChanged): a
// restart changes no list.

// serverChannel is the broadcaster channel of server-wide notifications.
const serverChannel = "mcp:server"

// serverMessage is a message on serverChannel, as JSON:
//
//	{"kind":"resourceUpdated","uri":"<uri>","id":"<announcement>"}
//	{"kind":"listChanged","list":"tools"|"resources"|"prompts","id":"<announcement>"}
//
// The id names the announcement on every instance, so that the copies of
// a shared legacy session can tell which ones the instance holding its
// GET stream delivered (http_session_relay.go).
type serverMessage struct {
	Kind string `json:"kind"`
	URI  string `json:"uri,omitempty"`
	List string `json:"list,omitempty"`
	ID   string `json:"id,omitempty"`
}

// The kinds of serverMessage.
const (
	kindResourceUpdated = "resourceUpdated"
	kindListChanged     = "listChanged"
)

// announce tells every instance of the server about a change, or only
// this one's clients when there is no broadcaster. When the publication
// fails, the reason is logged and this instance's clients are told
// directly: they at least hear of a change made here. Each announcement
// has an id, the same on every instance and every stream that carries it.
func (s *Server) announce(m serverMessage) {
	if s.fan == nil {
		m.ID = "local-" + strconv.FormatUint(s.announced.Add(1), 10)
		s.deliverServerMessage(&m)
		return
	}
	m.ID = s.fan.name + "-" + strconv.FormatUint(s.announced.Add(1), 10)
	msg, _ := json.Marshal(m)
	ctx, cancel := storeCtx()
	defer cancel()
	if err := s.fan.b.Publish(ctx, serverChannel, msg); err != nil {
		s.cfg.logger.Warn("cannot publish a change to the other instances; telling this one's clients only",
			"channel", serverChannel, "kind", m.Kind, "err", err)
		s.deliverServerMessage(&m)
	}
}

// onServerMessage is the delivery of serverChannel: a change announced by
// any instance, this one included, for this instance's clients.
func (s *Server) onServerMessage(msg []byte) {
	var m serverMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		s.cfg.logger.Warn("dropped a malformed broadcast", "channel", serverChannel, "err", err)
		return
	}
	s.deliverServerMessage(&m)
}

// deliverServerMessage tells this instance's clients of a change.
func (s *Server) deliverServerMessage(m *serverMessage) {
	switch m.Kind {
	case kindResourceUpdated:
		s.resourceUpdatedHere(m.URI, m.ID)
	case kindListChanged:
		switch m.List {
		case "tools", "resources", "prompts":
			s.listChangedHere(m.List, m.ID)
		}
	default:
		s.cfg.logger.Debug("dropped a broadcast of an unknown kind", "channel", serverChannel, "kind", m.Kind)
	}
}

// fanout holds a server's subscriptions to its broadcaster's channels,
// each shared by the local users of the channel.
type fanout struct {
	b   Broadcaster
	srv *Server
	// name and the server's announced count make the ids of this
	// instance's announcements.
	name string

	mu    sync.Mutex
	feeds map[string]*feed
}

// feed is one channel's subscription and its local users. Its state moves
// idle → subscribing → active, and back to idle when the last user leaves
// or the subscription fails.
type feed struct {
	channel string
	deliver func([]byte)

	// Guarded by fanout.mu.
	users   int
	state   feedState
	stop    func()
	ready   chan struct{} // closed when the current attempt to subscribe ends
	err     error         // of the last attempt
	changed chan struct{} // closed, and replaced, on every delivered message
}

type feedState int

const (
	feedIdle feedState = iota
	feedSubscribing
	feedActive
)

func newFanout(s *Server, b Broadcaster) *fanout {
	return &fanout{b: b, srv: s, name: newInstanceID(), feeds: make(map[string]*feed)}
}

// hold counts one more user of channel and starts subscribing to it if
// nothing does; it calls nothing else and may be called with locks held.
// wait says when the subscription is active; release undoes hold.
func (f *fanout) hold(channel string, deliver func([]byte)) *feed {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.feeds[channel]
	if fd == nil {
		fd = &feed{channel: channel, deliver: deliver, changed: make(chan struct{})}
		f.feeds[channel] = fd
	}
	fd.users++
	if fd.state == feedIdle {
		f.subscribeLocked(fd)
	}
	return fd
}

// subscribeLocked starts subscribing to fd's channel on a goroutine of its
// own, which ends once Subscribe returns: the caller may hold locks.
func (f *fanout) subscribeLocked(fd *feed) {
	fd.state, fd.ready = feedSubscribing, make(chan struct{})
	go f.subscribe(fd)
}

func (f *fanout) subscribe(fd *feed) {
	// The broadcaster bounds its own calls, and the context only the
	// subscribing; nothing here waits on it longer than the callers of
	// wait choose to.
	ctx, cancel := storeCtx()
	defer cancel()
	stop, err := f.b.Subscribe(ctx, fd.channel, func(msg []byte) {
		f.mu.Lock()
		close(fd.changed)
		fd.changed = make(chan struct{})
		f.mu.Unlock()
		fd.deliver(msg)
	})
	f.mu.Lock()
	var unused func()
	switch {
	case err != nil:
		fd.state, fd.err = feedIdle, err
		f.forgetLocked(fd)
	case fd.users == 0:
		fd.state, unused = feedIdle, stop
		f.forgetLocked(fd)
	default:
		fd.state, fd.stop, fd.err = feedActive, stop, nil
	}
	close(fd.ready)
	f.mu.Unlock()
	if err != nil {
		f.srv.cfg.logger.Warn("cannot subscribe to a broadcaster channel", "channel", fd.channel, "err", err)
	}
	if unused != nil {
		unused()
	}
}

// forgetLocked drops fd once nothing uses it.
func (f *fanout) forgetLocked(fd *feed) {
	if fd.users == 0 && f.feeds[fd.channel] == fd {
		delete(f.feeds, fd.channel)
	}
}

// wait returns once fd's subscription is active, so that every message
// published from then on is delivered; it subscribes again if an earlier
// attempt failed. It fails when the subscription does, or ctx ends.
func (f *fanout) wait(ctx context.Context, fd *feed) error {
	retried := false
	for {
		f.mu.Lock()
		switch fd.state {
		case feedActive:
			f.mu.Unlock()
			return nil
		case feedIdle:
			if retried {
				err := fd.err
				f.mu.Unlock()
				return &subscribeError{channel: fd.channel, err: err}
			}
			retried = true
			f.subscribeLocked(fd)
		}
		ready := fd.ready
		f.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return &subscribeError{channel: fd.channel, err: context.Cause(ctx)}
		}
	}
}

// changed returns what is closed at fd's next delivered message.
func (f *fanout) changed(fd *feed) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fd.changed
}

// release counts one user of fd fewer and ends the subscription with the
// last; it calls the broadcaster, so no lock may be held.
func (f *fanout) release(fd *feed) {
	if stop := f.drop(fd); stop != nil {
		stop()
	}
}

// drop is release for a caller that holds a lock: it returns the
// subscription's stop, to call once the lock is released, or nil.
func (f *fanout) drop(fd *feed) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd.users--
	if fd.users > 0 || fd.state == feedSubscribing {
		return nil // a subscription under way ends itself with no users
	}
	if fd.state == feedActive {
		stop = fd.stop
		fd.state, fd.stop = feedIdle, nil
	}
	f.forgetLocked(fd)
	return stop
}

// subscribeError is the failure to subscribe to a broadcaster channel
// that a request needed.
type subscribeError struct {
	channel string
	err     error
}

func (e *subscribeError) Error() string {
	reason := "unknown error"
	if e.err != nil {
		reason = e.err.Error()
	}
	return "mcp: cannot subscribe to the broadcaster channel " + e.channel + ": " + reason
}

func (e *subscribeError) Unwrap() error { return e.err }

// internalError is the protocol error of a request that could not be
// served for err.
func internalError(err error) *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}
