package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"
)

// The client's side of 2026-07-28 subscriptions/listen: one stream at a
// time, replaced by a new one on each Subscribe and Unsubscribe. What the
// old stream still carries may come after what the new one brings: they
// are separate streams, which nothing orders (the protocol orders only a
// subscription's own messages).

// listenForChanges opens the 2026-07-28 listen stream for the list changes
// the client has handlers for (and the server announces), so that they
// arrive without a Subscribe. Connect calls it once the revision is agreed;
// a failure is only logged, since the connection works without it.
func (c *Client) listenForChanges(ctx context.Context) {
	c.mu.Lock()
	modern := c.modern
	c.mu.Unlock()
	if !modern {
		return
	}
	c.subs.changing.Lock()
	defer c.subs.changing.Unlock()
	if _, err := c.listen(ctx, c.subs.uris, nil); err != nil {
		c.cfg.logger.Warn("cannot listen for list changes", "err", err)
	}
}

// clientSubscriptions is the client's side of a 2026-07-28 listen stream.
type clientSubscriptions struct {
	// changing is held while the stream is being replaced, so that
	// acknowledgements come one at a time: the one that arrives is the one
	// awaited.
	changing sync.Mutex
	uris     []string // guarded by changing

	mu      sync.Mutex
	current *listenCall             // the open stream, if any
	acks    chan SubscriptionFilter // where the awaited acknowledgement goes
	// active is the subscription id of the newest acknowledged stream.
	// A notification that names its announcement is delivered once,
	// whichever stream carries it first (announced remembers the latest);
	// one that names none is dropped when an older stream, still open
	// while being replaced, carries it, so that none comes twice.
	active    string
	announced recentIDs
	// wants is what the open stream was agreed to carry: an older stream's
	// notification of anything else is dropped (an unsubscribed URI).
	wants SubscriptionFilter
	// gen counts the replacements, so that reopening a broken stream stops
	// once a Subscribe or Unsubscribe has replaced it.
	gen uint64
}

// listenDrain is how long a listen stream the client ended is still read,
// until the server ends it: an update announced before the stream that
// replaces it listened is on the old one alone.
const listenDrain = 10 * time.Second

// drainWhenEnded has a listen stream the client ended read for listenDrain
// more: what it still carries may be on it alone.
func drainWhenEnded(o *callOptions) { o.drain = listenDrain }

// maxAnnouncementsRemembered bounds the announcements a client remembers
// to drop their repeats: a stream being replaced carries few.
const maxAnnouncementsRemembered = 256

// replace makes call (nil: none) the open stream, listening for uris, and
// ends the stream it replaces. The caller holds changing.
func (s *clientSubscriptions) replace(call *listenCall, wants SubscriptionFilter) {
	s.mu.Lock()
	old := s.current
	s.current, s.wants = call, wants
	s.gen++
	s.mu.Unlock()
	if old != nil {
		old.end()
	}
	s.uris = wants.ResourceSubscriptions
}

// listenCall is one subscriptions/listen call in flight.
type listenCall struct {
	conn  *conn // the connection it is on
	stop  context.CancelFunc
	ended chan struct{} // closed once the call returned, its cancellation queued
	// over is set, under subs.mu, once the call returned; err is why.
	over bool
	err  error
}

// end ends the call and waits until its cancellation is on its way, so
// that the server sees it before anything the client sends next.
func (l *listenCall) end() {
	l.stop()
	<-l.ended
}

// listen replaces the listen stream with one for uris and the list changes
// the client has handlers for, and returns what the server agreed to send.
// The new stream is acknowledged before the old one ends, so no
// notification falls between the two. With nothing to listen for, it only
// ends the old stream.
func (c *Client) listen(ctx context.Context, uris []string, opts []CallOption) (SubscriptionFilter, error) {
	handlers := c.cfg.notifications
	caps := c.ServerCapabilities()
	filter := SubscriptionFilter{
		ToolsListChanged:      handlers["notifications/tools/list_changed"] != nil && caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:    handlers["notifications/prompts/list_changed"] != nil && caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged:  handlers["notifications/resources/list_changed"] != nil && caps.Resources != nil && caps.Resources.ListChanged,
		ResourceSubscriptions: uris,
	}
	subs := &c.subs
	if len(uris) == 0 && !filter.ToolsListChanged && !filter.PromptsListChanged && !filter.ResourcesListChanged {
		subs.replace(nil, SubscriptionFilter{})
		return SubscriptionFilter{}, nil
	}
	conn, _, err := c.session()
	if err != nil {
		return SubscriptionFilter{}, err
	}
	acks := make(chan SubscriptionFilter, 1)
	subs.mu.Lock()
	subs.acks = acks
	subs.mu.Unlock()
	// The stream outlives this call: it ends when replaced, or with the
	// connection. It has no timeout: it is meant to stay open.
	streamCtx, stop := context.WithCancel(context.Background())
	call := &listenCall{conn: conn, stop: stop, ended: make(chan struct{})}
	result := make(chan error, 1)
	go func() {
		defer close(call.ended)
		defer stop()
		err := c.SendRequest(streamCtx, "subscriptions/listen", &listenParams{Notifications: filter}, nil,
			append(slices.Clip(opts), WithTimeout(0), drainWhenEnded)...)
		result <- err
		subs.mu.Lock()
		defer subs.mu.Unlock()
		call.over, call.err = true, err
		if subs.current == call {
			// The server ended the stream, or the connection to it failed.
			subs.current = nil
			c.listenBroke(call, err)
		}
	}()
	var honoured SubscriptionFilter
	select {
	case honoured = <-acks:
	case err := <-result:
		if err == nil {
			err = errors.New("mcp: the server ended subscriptions/listen without acknowledging it")
		}
		return SubscriptionFilter{}, err
	case <-ctx.Done():
		call.end()
		return SubscriptionFilter{}, ctx.Err()
	}
	subs.replace(call, honoured)
	subs.mu.Lock()
	if subs.current == call && call.over {
		// It broke between its acknowledgement and now.
		subs.current = nil
		c.listenBroke(call, call.err)
	}
	subs.mu.Unlock()
	return honoured, nil
}

// acknowledged receives notifications/subscriptions/acknowledged and hands
// it to the listen call waiting for it.
func (c *Client) acknowledged(_ context.Context, params json.RawMessage) {
	var p listenParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.subs.mu.Lock()
	acks := c.subs.acks
	c.subs.acks = nil
	c.subs.mu.Unlock()
	if acks != nil {
		acks <- p.Notifications
	}
}

// subscriptionIDOf returns the raw subscription id a notification carries
// in its _meta, or "".
func subscriptionIDOf(params json.RawMessage) string {
	id, _, _ := listenMetaOf(params)
	return id
}

// listenMetaOf returns the raw subscription id and announcement a listen
// stream's notification carries in its _meta, "" for what it lacks, and
// the URI of a resource update.
func listenMetaOf(params json.RawMessage) (id, announcement, uri string) {
	if !bytes.Contains(params, []byte(metaSubscriptionID)) {
		return "", "", ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
		URI  string                     `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", "", ""
	}
	return string(p.Meta[metaSubscriptionID]), string(p.Meta[metaAnnouncement]), p.URI
}

// wanted reports whether the open stream was agreed to carry a
// notification of method (and uri, for a resource update).
func (s *clientSubscriptions) wanted(method, uri string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return s.wants.ToolsListChanged
	case "notifications/prompts/list_changed":
		return s.wants.PromptsListChanged
	case "notifications/resources/list_changed":
		return s.wants.ResourcesListChanged
	}
	return slices.Contains(s.wants.ResourceSubscriptions, uri)
}

// acceptNotification drops list-change and resource-update notifications
// of a listen stream that a newer one has replaced. It runs on the reader,
// in arrival order, so the switch to a new stream happens exactly at its
// acknowledgement.
func (c *Client) acceptNotification(method string, params json.RawMessage) bool {
	switch method {
	case "notifications/tasks/status":
		c.taskStatusChanged(params)
		return true
	case "notifications/subscriptions/acknowledged":
		var p listenParams
		_ = json.Unmarshal(params, &p)
		c.subs.mu.Lock()
		c.subs.active, c.subs.wants = subscriptionIDOf(params), p.Notifications
		c.subs.mu.Unlock()
		return true
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		c.cache.changed(method, params)
	default:
		return true
	}
	id, announcement, uri := listenMetaOf(params)
	if id == "" {
		return true
	}
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	current := c.subs.active == "" || id == c.subs.active
	if announcement == "" {
		return current
	}
	// What a replaced stream still carries may be on it alone (announced
	// before the new stream listened), or on both: it is delivered once,
	// if the client still wants it.
	if !current && !c.subs.wanted(method, uri) {
		return false
	}
	return c.subs.announced.add(announcement, maxAnnouncementsRemembered)
}
