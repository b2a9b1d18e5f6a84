package mcp

import (
	"encoding/json"
	"strconv"
)

// The server-wide half of the many-instance wing: a server given
// WithBroadcaster tells every instance, itself included, what all of them
// must see, and each instance delivers it to its own clients. Two kinds of
// channel are used, here and in cluster_tasks.go:
//
//	mcp:server        server-wide changes, one serverMessage each
//	mcp:task:<id>     a task's status, cancellation and answers (taskMessage)
//
// An instance subscribes to a channel only while something local needs it
// (a session or listen stream for mcp:server; a running task, a listen
// stream naming the task or a tasks/result waiter for mcp:task:<id>), and
// ends the subscription with the last of them (cluster_fanout.go).
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
// GET stream delivered (cluster_session_handover.go).
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

// newServerCluster returns the many-instance wing of s, whose instances
// share b: WithBroadcaster makes NewServer call it, so that a server
// without one links none of the wing.
func newServerCluster(s *Server, b Broadcaster) *serverCluster {
	return &serverCluster{srv: s, b: b, name: newInstanceID(), fan: newFanout(s, b)}
}

// resourceUpdated is Server.ResourceUpdated across the instances.
func (c *serverCluster) resourceUpdated(uri string) {
	c.announce(serverMessage{Kind: kindResourceUpdated, URI: uri})
}

// listChanged is Server.listChanged across the instances.
func (c *serverCluster) listChanged(kind string) {
	c.announce(serverMessage{Kind: kindListChanged, List: kind})
}

// announce tells every instance of the server about a change. When the
// publication fails, the reason is logged and this instance's clients are
// told directly: they at least hear of a change made here. Each
// announcement has an id, the same on every instance and every stream that
// carries it.
func (c *serverCluster) announce(m serverMessage) {
	m.ID = c.name + "-" + strconv.FormatUint(c.announced.Add(1), 10)
	msg, _ := json.Marshal(m)
	ctx, cancel := storeCtx()
	defer cancel()
	if err := c.b.Publish(ctx, serverChannel, msg); err != nil {
		c.srv.cfg.logger.Warn("cannot publish a change to the other instances; telling this one's clients only",
			"channel", serverChannel, "kind", m.Kind, "err", err)
		c.deliver(&m)
	}
}

// holdServer counts one more local user of the server channel (a session,
// a listen stream); see fanout.hold.
func (c *serverCluster) holdServer() channelHold {
	return c.fan.hold(serverChannel, c.onServerMessage)
}

// onServerMessage is the delivery of serverChannel: a change announced by
// any instance, this one included, for this instance's clients.
func (c *serverCluster) onServerMessage(msg []byte) {
	var m serverMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		c.srv.cfg.logger.Warn("dropped a malformed broadcast", "channel", serverChannel, "err", err)
		return
	}
	c.deliver(&m)
}

// deliver tells this instance's clients of a change.
func (c *serverCluster) deliver(m *serverMessage) {
	switch m.Kind {
	case kindResourceUpdated:
		c.srv.resourceUpdatedHere(m.URI, m.ID)
	case kindListChanged:
		switch m.List {
		case "tools", "resources", "prompts", "events":
			c.srv.listChangedHere(m.List, m.ID)
		}
	default:
		c.srv.cfg.logger.Debug("dropped a broadcast of an unknown kind", "channel", serverChannel, "kind", m.Kind)
	}
}
