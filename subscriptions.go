package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
)

// ResourceUpdated tells the clients subscribed to uri that the resource
// changed: the sessions that sent resources/subscribe for it, and the
// 2026-07-28 subscriptions/listen streams that list it. It returns once the
// notifications are queued. With [WithBroadcaster] it tells the clients of
// every instance, through the broadcaster, and returns once published.
// Server side.
func (s *Server) ResourceUpdated(uri string) {
	if s.cluster != nil {
		s.cluster.resourceUpdated(uri)
		return
	}
	s.resourceUpdatedHere(uri, s.localAnnouncement())
}

// localAnnouncement names a change announced by a server without a
// broadcaster, which its clients alone hear of; with one, the wing names
// its announcements (serverCluster.announce).
func (s *Server) localAnnouncement() string {
	return "local-" + strconv.FormatUint(s.announced.Add(1), 10)
}

// resourceUpdatedHere is ResourceUpdated for this instance's clients.
func (s *Server) resourceUpdatedHere(uri, id string) {
	params, _ := json.Marshal(resourceURIParams{URI: uri})
	s.broadcast("notifications/resources/updated", params, id,
		func(ss *serverSession) bool { return ss.subscriptions[uri] },
		func(f *SubscriptionFilter) bool { return slices.Contains(f.ResourceSubscriptions, uri) })
}

// subscribe serves resources/subscribe and resources/unsubscribe. A URI
// must name a resource or match a template; unsubscribing from one not
// subscribed to is not an error.
func (ss *serverSession) subscribe(ctx context.Context, params json.RawMessage, on bool) (any, error) {
	var p resourceURIParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: missing uri"}
	}
	if _, _, ok := ss.srv.findResource(p.URI); !ok && on {
		return nil, resourceNotFound(p.URI, false)
	}
	ss.mu.Lock()
	if on {
		putEntry(&ss.subscriptions, p.URI, true)
	} else {
		delete(ss.subscriptions, p.URI)
	}
	ss.mu.Unlock()
	change := sessionChange{Subscribe: p.URI}
	if !on {
		change = sessionChange{Unsubscribe: p.URI}
	}
	if err := ss.changed(change); err != nil {
		return nil, err
	}
	if on && ss.conn.push != nil {
		ss.conn.push.subscribed()
	}
	if on {
		// Updates announced by other instances reach the session once the
		// server channel's subscription is active.
		if err := ss.srv.awaitBroadcasts(ctx, ss); err != nil {
			return nil, internalError(err)
		}
	}
	return json.RawMessage("{}"), nil
}

// addSession and removeSession track the connections a Server serves, for
// the notifications that go to every client. Transports that run sessions
// of their own (HTTP) call them too: a legacy HTTP session joins once it
// has somewhere to put them (see broadcast). With a broadcaster, each
// session holds the server channel's subscription, made as the first joins
// and ended as the last leaves. addSession may be called with locks held:
// it only starts the subscription.
func (s *Server) addSession(ss *serverSession) {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	if _, ok := s.sessions[ss]; ok {
		return
	}
	var h channelHold
	if s.cluster != nil {
		h = s.cluster.holdServer()
	}
	s.sessions[ss] = h
}

// removeSession undoes addSession, letting go of the session's hold on the
// server channel.
func (s *Server) removeSession(ss *serverSession) {
	s.sessionsMu.Lock()
	h, ok := s.sessions[ss]
	delete(s.sessions, ss)
	s.sessionsMu.Unlock()
	if ok && h != nil {
		h.release()
	}
}

// awaitBroadcasts returns once what other instances announce reaches ss,
// if it is among the sessions that get broadcasts.
func (s *Server) awaitBroadcasts(ctx context.Context, ss *serverSession) error {
	s.sessionsMu.Lock()
	h := s.sessions[ss]
	s.sessionsMu.Unlock()
	if h == nil {
		return nil
	}
	return h.wait(ctx)
}

// listChanged tells clients that a list changed: kind is "tools",
// "resources", "prompts" or "events". With a broadcaster, the clients of
// every instance.
//
// A change made before this server serves (before Serve, before its HTTP
// handler is made, before any session) is no change to anyone: its own
// clients will list it whole, and the instances of a fleet run the same
// start-up registrations, so announcing those would tell every client of
// the fleet of a change at each instance's (re)start. From then on every
// change is announced, even by an instance that has no client yet: the
// other instances' clients see its lists. One notification per call: each
// call returns once its change is announced, in order with the server's
// other announcements, which a delay to merge changes made together would
// give up.
func (s *Server) listChanged(kind string) {
	if !s.serving.Load() {
		return
	}
	if s.cluster != nil {
		s.cluster.listChanged(kind)
		return
	}
	s.listChangedHere(kind, s.localAnnouncement())
}

// listChangedHere is listChanged for this instance's clients.
func (s *Server) listChangedHere(kind, id string) {
	sessionWants := func(*serverSession) bool { return true }
	if kind == "events" {
		// An extension's notification goes to the clients that declared it.
		sessionWants = func(ss *serverSession) bool { return ss.clientCaps.hasSub("extensions", EventsExtension) }
	}
	s.broadcast("notifications/"+kind+"/list_changed", nil, id, sessionWants,
		func(f *SubscriptionFilter) bool {
			switch kind {
			case "tools":
				return f.ToolsListChanged
			case "resources":
				return f.ResourcesListChanged
			case "events":
				return f.EventsListChanged
			}
			return f.PromptsListChanged
		})
}

// broadcast sends a notification to every initialized session of the older
// revisions for which sessionWants (called with the session locked) holds,
// and to every listen stream whose honoured filter streamWants, of this
// instance; id names the announcement on every instance, if it is one.
//
// A notification unrelated to any request may only travel on a legacy
// Streamable HTTP session's standalone GET stream, so such a session gets
// broadcasts only once it has one: from the first GET, or from its first
// resources/subscribe (the client asked for updates, which wait for its
// GET). From then on they wait in a backlog while no GET is open, bounded
// by WithSessionBacklog.
// A session that never did either holds nothing for them. Connections
// that are not HTTP sessions (stdio, pipes, the 2024-11-05 event stream)
// get every broadcast.
func (s *Server) broadcast(method string, params json.RawMessage, id string, sessionWants func(*serverSession) bool, streamWants func(*SubscriptionFilter) bool) {
	s.sessionsMu.Lock()
	sessions := make([]*serverSession, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	streams := make([]*listenStream, 0, len(s.listeners))
	for l := range s.listeners {
		if streamWants(&l.filter) {
			streams = append(streams, l)
		}
	}
	s.sessionsMu.Unlock()
	for _, ss := range sessions {
		ss.mu.Lock()
		wants := ss.initialized && sessionWants(ss)
		ss.mu.Unlock()
		if wants {
			if err := ss.conn.notify(method, params, ID{}, serverWideRoute{id}); err != nil {
				s.cfg.logger.Debug("cannot notify a session", "method", method, "err", err)
			}
		}
	}
	for _, l := range streams {
		l.send(method, params, id)
	}
}

// DefaultMaxListenStreams bounds the subscriptions/listen streams one
// caller holds open; see [WithMaxListenStreams]. Server only.
const DefaultMaxListenStreams = 16

// WithMaxListenStreams bounds the 2026-07-28 subscriptions/listen streams
// one caller holds open on this server at once (default
// DefaultMaxListenStreams; negative: no bound): its principal, else its
// session or connection, else, for anonymous requests over HTTP, the host
// they came from. One past it is refused with CodeOverloaded. An open
// stream holds no WithMaxInFlight slot, so idle listeners never lock
// ordinary requests out. It configures a server (NewServer).
func WithMaxListenStreams(n int) ServerOption {
	return serverOption(func(c *config) {
		if n != 0 {
			c.server.maxListens = n
		}
	})
}

// anonymousOwner prefixes the owner of an anonymous caller's tasks and
// streams; no principal an authorizer names starts with a NUL byte.
const anonymousOwner = "\x00anonymous "

// anonymousOwner is the session's own name as an anonymous owner: its HTTP
// session's id, or else a random name for its connection.
func (ss *serverSession) anonymousOwner() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.anonOwner == "" {
		if ss.sessionID != "" {
			ss.anonOwner = anonymousOwner + "session " + ss.sessionID
		} else {
			ss.anonOwner = anonymousOwner + "connection " + randomID()
		}
	}
	return ss.anonOwner
}

// streamOwner is whom a stream counts against: the request's principal;
// without one, its session (on the older revisions, or the connection);
// anonymous 2026-07-28 requests, which carry nothing else that tells them
// apart, by the host they came from.
func (r *RequestInfo) streamOwner() string {
	if p := r.Principal(); p != "" || r.session == nil {
		return p
	}
	if r.modern {
		host := ""
		if push := r.session.conn.push; push != nil {
			host = push.peer()
		}
		return anonymousOwner + "host " + host
	}
	return r.session.anonymousOwner()
}

// listenStream is one 2026-07-28 subscriptions/listen in progress: its
// notifications ride with the listen request (on HTTP, its response
// stream) and carry its id as the subscription id.
type listenStream struct {
	conn   *conn
	id     ID
	route  msgRoute
	filter SubscriptionFilter // what the server agreed to send
	owner  string             // whom it counts against (streamOwner)
	// ended is closed as soon as the client ends the stream, before the
	// handler returns, so that nothing is sent after the client's cancel.
	ended <-chan struct{}

	// mu orders the acknowledgement before every other notification of the
	// stream.
	mu sync.Mutex
}

// send sends a notification on the stream, named by its subscription id
// and by the announcement it delivers (if any), which the same
// notification carries on every stream: a client that replaces its stream
// tells a repeat from what only one of them carries.
func (l *listenStream) send(method string, params json.RawMessage, announcement string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.ended:
		return
	default:
	}
	meta := []metaEntry{{key: metaSubscriptionID, value: l.id.appendJSON(nil)}}
	if announcement != "" {
		meta = append(meta, metaEntry{key: metaAnnouncement, value: appendJSONString(nil, announcement)})
	}
	params = withMeta(params, meta)
	if err := l.conn.notify(method, params, l.id, l.route); err != nil {
		l.conn.log.Debug("cannot notify a listen stream", "method", method, "err", err)
	}
}

// listen serves subscriptions/listen (2026-07-28): it acknowledges the
// notifications it will send, then holds the request open until the client
// ends it (notifications/cancelled on stdio, closing the stream on HTTP).
func (s *Server) listen(ctx context.Context, info *RequestInfo) (any, error) {
	var p listenParams
	if err := decodeParams(info.params, &p); err != nil {
		return nil, err
	}
	l := &listenStream{conn: info.conn, id: info.id, route: info.route, filter: s.honour(ctx, p.Notifications, info), owner: info.streamOwner(), ended: ctx.Done()}
	if s.cluster != nil {
		// What any instance announces, from the acknowledgement on.
		holds := []channelHold{s.cluster.holdServer()}
		for _, id := range l.filter.TaskIDs {
			holds = append(holds, s.cfg.server.tasks.holdTask(s, id))
		}
		defer func() {
			for _, h := range holds {
				h.release()
			}
		}()
		for _, h := range holds {
			if err := h.wait(ctx); err != nil {
				return nil, internalError(err)
			}
		}
	}
	l.mu.Lock()
	s.sessionsMu.Lock()
	if limit := s.maxListens(); limit > 0 {
		n := 0
		for o := range s.listeners {
			if o.owner == l.owner {
				n++
			}
		}
		if n >= limit {
			s.sessionsMu.Unlock()
			l.mu.Unlock()
			return nil, &Error{Code: CodeOverloaded, Message: "too many subscriptions/listen streams open (at most " + strconv.Itoa(limit) + " per caller)"}
		}
	}
	s.listeners[l] = struct{}{}
	s.sessionsMu.Unlock()
	// Admitted under its own bound, the stream holds no in-flight slot.
	info.conn.detachInbound(info.id)
	filter, _ := json.Marshal(listenParams{Notifications: l.filter})
	ack := withMeta(filter, []metaEntry{{key: metaSubscriptionID, value: l.id.appendJSON(nil)}})
	err := info.conn.notify("notifications/subscriptions/acknowledged", ack, l.id, l.route)
	l.mu.Unlock()
	defer func() {
		s.sessionsMu.Lock()
		delete(s.listeners, l)
		s.sessionsMu.Unlock()
	}()
	if err != nil {
		return nil, err
	}
	<-ctx.Done()
	return withMeta(json.RawMessage("{}"), []metaEntry{{key: metaSubscriptionID, value: l.id.appendJSON(nil)}}), nil
}

// honour returns the part of a subscription filter the server serves: the
// list changes of the features it offers, the URIs that name a resource
// or match a template, as resources/subscribe requires, and the tasks of
// the requester, if it declared the tasks extension.
func (s *Server) honour(ctx context.Context, want SubscriptionFilter, info *RequestInfo) SubscriptionFilter {
	var got SubscriptionFilter
	if tasks := s.cfg.server.tasks; tasks != nil && len(want.TaskIDs) > 0 && info.caps.hasSub("extensions", TasksExtension) {
		got.TaskIDs = tasks.honour(s, ctx, want.TaskIDs, info)
	}
	for _, uri := range want.ResourceSubscriptions {
		if _, _, ok := s.findResource(uri); ok && !slices.Contains(got.ResourceSubscriptions, uri) {
			got.ResourceSubscriptions = append(got.ResourceSubscriptions, uri)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	got.ToolsListChanged = want.ToolsListChanged && s.offersTools
	got.PromptsListChanged = want.PromptsListChanged && s.offersPrompts
	got.ResourcesListChanged = want.ResourcesListChanged && s.offersResources
	got.EventsListChanged = want.EventsListChanged && s.serveEvents != nil
	return got
}

// watchesTask reports whether a listen stream carries the notifications of
// task id.
func (s *Server) watchesTask(id string) bool {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	for l := range s.listeners {
		if slices.Contains(l.filter.TaskIDs, id) {
			return true
		}
	}
	return false
}

// maxListens is the bound on one caller's listen streams; 0 for none.
func (s *Server) maxListens() int {
	return perCallerBound(s.cfg.server.maxListens, DefaultMaxListenStreams)
}

// perCallerBound reads an option that bounds one caller's long-lived
// streams: negative for none (0), zero for the default.
func perCallerBound(n, def int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return def
	}
	return n
}
