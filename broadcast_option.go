package mcp

// WithBroadcaster makes a server that runs as several instances share,
// through b, what every instance must see: resource updates, list
// changes and task status. Without it a server is one instance. It
// configures a server (NewServer).
func WithBroadcaster(b Broadcaster) ServerOption {
	return serverOption(func(c *config) { c.server.broadcaster = b })
}
