package mcp

// WithBroadcaster makes a server that runs as several instances share,
// through b, what every instance must see: resource updates, list
// changes, task status, and the messages of a legacy session whose parts
// live on other instances. Without it a server is one instance. Server
// side (NewServer).
func WithBroadcaster(b Broadcaster) ServerOption {
	return serverOption(func(c *config) { c.server.broadcaster = b })
}
