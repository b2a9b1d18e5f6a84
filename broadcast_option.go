package mcp

// WithBroadcaster sets how the instances of a server that runs as several
// tell each other what all of them must see (default: none, the server
// runs alone). Server side.
func WithBroadcaster(b Broadcaster) ServerOption {
	return serverOption(func(c *config) { c.server.broadcaster = b })
}
