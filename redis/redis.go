// Package mcpredis keeps the shared state of an MCP server that runs as
// several instances on Redis: the event logs of legacy HTTP sessions
// ([EventStore]), the sessions themselves ([SessionStore]), tasks
// ([TaskStore]), the occurrences of Events ([EventLog]) and their webhook
// subscriptions ([WebhookStore]), the messages between instances
// ([Broadcaster]) and the DPoP proofs a resource server accepted
// ([DPoPReplayStore]). Each
// implements the interface of the same name in github.com/e6ac58cb/mcp.
// Server side.
//
// The package is named mcpredis, not redis, so that a program can import
// it beside go-redis without renaming either.
//
// All of them take the user's *redis.Client, one connection pool for all;
// the broadcaster also holds one dedicated connection for its
// subscriptions. Every call carries a deadline: the caller's, or the
// default of [WithTimeout] when the caller's context has none. For the
// deadline to bound the socket reads and writes the client must be
// created with ContextTimeoutEnabled; without it go-redis's own read and
// write timeouts bound each call instead.
package mcpredis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// Defaults of the options.
const (
	// DefaultKeyPrefix starts every key and channel name. Server side.
	DefaultKeyPrefix = "mcp:"
	// DefaultTimeout bounds a call whose context has no deadline. Server side.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxStreamEvents is how many events a stream keeps, about.
	// Server side.
	DefaultMaxStreamEvents = 10000
	// DefaultEventTTL is how long a session's events outlive its last
	// Append. Server side.
	DefaultEventTTL = 24 * time.Hour
	// DefaultMaxTaskBytes is how large one task may be, its outcome
	// included. Server side.
	DefaultMaxTaskBytes = 4 << 20
	// DefaultMaxStoredTasks is how many tasks a TaskStore holds, as the
	// library's memory store does. Server side.
	DefaultMaxStoredTasks = mcp.DefaultMaxStoredTasks
	// DefaultMaxTaskStoreBytes is how many bytes of tasks and their
	// outcomes a TaskStore holds, as the library's memory store does.
	// Server side.
	DefaultMaxTaskStoreBytes = mcp.DefaultMaxTaskStoreBytes
	// DefaultMaxStoredTasksPerOwner is how many tasks of one owner (a
	// principal, or an anonymous session) a TaskStore holds, as the
	// library's memory store does. Server side.
	DefaultMaxStoredTasksPerOwner = mcp.DefaultMaxStoredTasksPerOwner
	// DefaultQueueLength is how many messages wait for one slow
	// subscriber before more are dropped. Server side.
	DefaultQueueLength = 1024
	// DefaultPingInterval is how long the broadcaster's connection may stay
	// silent before it is checked with a ping. Server side.
	DefaultPingInterval = 5 * time.Second
)

// Option configures a store or the broadcaster made by this package.
// An option that does not concern what it is given to is ignored.
// Server side.
type Option func(*config)

type config struct {
	prefix       string
	timeout      time.Duration
	log          *slog.Logger
	maxEvents    int64
	maxEventAge  time.Duration // EventLog; 0: none
	eventTTL     time.Duration
	maxTaskBytes int
	// maxTasks and maxStoreBytes bound a TaskStore as a whole.
	maxTasks      int
	maxStoreBytes int
	maxPerOwner   int
	queueLength   int
	pingInterval  time.Duration
}

func newConfig(opts []Option) *config {
	c := &config{
		prefix:        DefaultKeyPrefix,
		timeout:       DefaultTimeout,
		log:           slog.Default(),
		maxEvents:     DefaultMaxStreamEvents,
		eventTTL:      DefaultEventTTL,
		maxTaskBytes:  DefaultMaxTaskBytes,
		maxTasks:      DefaultMaxStoredTasks,
		maxStoreBytes: DefaultMaxTaskStoreBytes,
		maxPerOwner:   DefaultMaxStoredTasksPerOwner,
		queueLength:   DefaultQueueLength,
		pingInterval:  DefaultPingInterval,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithKeyPrefix starts every key and channel name with prefix, so that
// several deployments may share one Redis. Default [DefaultKeyPrefix].
// Server side; all.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithTimeout bounds each call whose context has no deadline of its own;
// zero or less leaves such calls unbounded. Default [DefaultTimeout].
// Server side; all.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithLogger sets where dropped messages and lost connections are
// reported. Default slog.Default(). Server side; all.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithMaxStreamEvents bounds each event stream to about n events: older
// ones are trimmed, and a resume that needs them is refused (EventStore)
// or told it was truncated (EventLog, whose streams are one per event
// type). Zero or less takes the default, [DefaultMaxStreamEvents]. Server
// side; EventStore, EventLog.
func WithMaxStreamEvents(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxEvents = int64(n)
		}
	}
}

// WithEventTTL sets how long a session's events outlive its last Append.
// Keep it at least as long as a session may stay idle: a resume of a
// stream whose events expired finds nothing to replay. Zero or less takes
// the default, [DefaultEventTTL]. Server side; EventStore.
func WithEventTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.eventTTL = d
		}
	}
}

// WithMaxTaskBytes bounds one task's stored size, its result or error
// included; past it Create and PutResult return mcp.ErrTaskStoreFull. Zero
// or less takes the default, [DefaultMaxTaskBytes]. Server side; TaskStore.
func WithMaxTaskBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxTaskBytes = n
		}
	}
}

// WithMaxStoredTasks bounds how many tasks a TaskStore holds, across every
// instance that shares it, ended ones kept for their TTL included; past it
// Create returns mcp.ErrTaskStoreFull, which the server answers as
// overloaded. Zero or less takes the default, [DefaultMaxStoredTasks].
// Server side; TaskStore.
func WithMaxStoredTasks(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxTasks = n
		}
	}
}

// WithMaxStoredTasksPerOwner bounds how many tasks of one owner a
// TaskStore holds, across every instance that shares it, ended ones kept
// for their TTL included, so that one owner cannot fill the store for the
// others; past it Create returns mcp.ErrTaskQuotaExceeded, which the
// server answers as overloaded. Zero or less takes the default,
// [DefaultMaxStoredTasksPerOwner]. Server side; TaskStore.
func WithMaxStoredTasksPerOwner(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxPerOwner = n
		}
	}
}

// WithMaxTaskStoreBytes bounds how many bytes of tasks, their outcomes
// included, a TaskStore holds across every instance that shares it; past
// it Create, UpdateStatus and PutResult return mcp.ErrTaskStoreFull. Zero
// or less takes the default, [DefaultMaxTaskStoreBytes]. Server side;
// TaskStore.
func WithMaxTaskStoreBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxStoreBytes = n
		}
	}
}

// WithQueueLength bounds how many messages wait for one subscriber that
// is slow to take them; past it the broadcaster drops its messages and
// logs it. Zero or less takes the default, [DefaultQueueLength]. Server
// side; Broadcaster.
func WithQueueLength(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.queueLength = n
		}
	}
}

// WithPingInterval sets how long the broadcaster's connection may stay
// silent before it pings Redis; one that does not answer within the next
// interval is replaced. Zero or less takes the default,
// [DefaultPingInterval]. Server side; Broadcaster.
func WithPingInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.pingInterval = d
		}
	}
}

// Error is a failed Redis call: which operation, on which key or channel,
// and why. Server side.
type Error struct {
	Op  string // the store's method, such as "TaskStore.Get"
	Key string // the key or channel it used
	Err error
}

// Error implements the error interface.
func (e *Error) Error() string {
	if errors.Is(e.Err, context.DeadlineExceeded) {
		// go-redis retries until the deadline and reports only that.
		return fmt.Sprintf("mcpredis: %s on %q: no answer from Redis before the deadline: %v", e.Op, e.Key, e.Err)
	}
	return fmt.Sprintf("mcpredis: %s on %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// call bounds ctx by the default deadline unless it has one.
func (c *config) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// client is what each store holds: the user's client and the options.
type client struct {
	rdb *redis.Client
	cfg *config
}

// newClient applies opts, and warns once when rdb would not bound its
// socket I/O by the deadlines this package sets.
func newClient(rdb *redis.Client, opts []Option, what string) client {
	cfg := newConfig(opts)
	if !rdb.Options().ContextTimeoutEnabled {
		cfg.log.Warn("mcpredis: the Redis client ignores context deadlines (ContextTimeoutEnabled is false); its own read and write timeouts bound each call", "store", what)
	}
	return client{rdb: rdb, cfg: cfg}
}

// fail wraps err, if any, with the operation and key.
func fail(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Key: key, Err: err}
}
