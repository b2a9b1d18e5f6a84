package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the client's connection options.
const (
	// DefaultDiscoverTimeout bounds the server/discover probe; see
	// [WithDiscoverTimeout].
	DefaultDiscoverTimeout = 3 * time.Second
	// DefaultMaxInputRounds bounds the rounds of a 2026-07-28 call that
	// needs input; see [WithMaxInputRounds].
	DefaultMaxInputRounds = 10
	// DefaultMaxBarrenPages bounds the pages in a row that bring nothing
	// new to a list iterator; see [WithMaxBarrenPages].
	DefaultMaxBarrenPages = 8
)

type clientConfig struct {
	discoverTimeout time.Duration
	maxInputRounds  int
	maxBarrenPages  int // WithMaxBarrenPages
	maxAppView      int // WithMaxAppViewSize; 0: DefaultMaxAppViewSize
	cacheBytes      int // WithResultCache; 0: no cache

	elicitation     ElicitationHandler
	elicitURL       bool
	sampling        SamplingHandler
	samplingTools   bool
	samplingContext bool
	roots           []Root
	rootsHandler    RootsHandler
	rootsSet        bool

	taskRequests    bool // WithTaskRequests
	maxTaskRequests int
	taskRequestTTL  time.Duration // 0: as long as the connection lasts
	taskRequestPage int

	listenGap     func(context.Context, ListenGap) // WithListenGapHandler
	listenResumes int                              // WithListenResumeAttempts

	taskPoll    time.Duration // WithTaskPolling: when the server suggests no poll interval
	taskPollMin time.Duration // WithTaskPolling: the floor of any poll interval
}

// ElicitationHandler answers a server's elicitation: it shows the user the
// message and form (or URL) and returns the user's action. Declining is a
// result. An error is reported to the server as a failed request on the
// older revisions; 2026-07-28 has no way to report it, so there the call
// that asked ends on the client with the error instead. Client side.
type ElicitationHandler func(ctx context.Context, params *ElicitParams) (*ElicitResult, error)

// SamplingHandler answers a server's sampling request with a message from
// the client's language model. An error is reported as ElicitationHandler's
// is. Client side.
type SamplingHandler func(ctx context.Context, params *CreateMessageParams) (*CreateMessageResult, error)

// RootsHandler returns the client's current roots. Client side.
type RootsHandler func(ctx context.Context) ([]Root, error)

// WithElicitationHandler lets servers elicit input from the user through h.
// The client declares form-mode elicitation; add [WithURLElicitation] for
// url mode.
// It configures a client (NewClient).
func WithElicitationHandler(h ElicitationHandler) ClientOption {
	return clientOption(func(c *config) { c.client.elicitation = h })
}

// WithURLElicitation declares url-mode elicitation as well: the elicitation
// handler also receives requests to send the user to a URL.
// It configures a client (NewClient).
func WithURLElicitation() ClientOption {
	return clientOption(func(c *config) { c.client.elicitURL = true })
}

// WithSamplingHandler lets servers sample the client's language model
// through h.
// It configures a client (NewClient).
//
// Deprecated: Sampling is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). It keeps working on every
// revision.
func WithSamplingHandler(h SamplingHandler) ClientOption {
	return clientOption(func(c *config) { c.client.sampling = h })
}

// WithSamplingTools declares sampling.tools: sampling requests may carry
// tools and toolChoice.
// It configures a client (NewClient).
func WithSamplingTools() ClientOption {
	return clientOption(func(c *config) { c.client.samplingTools = true })
}

// WithSamplingContext declares sampling.context: sampling requests may ask
// to include context from this or all servers.
// It configures a client (NewClient).
func WithSamplingContext() ClientOption {
	return clientOption(func(c *config) { c.client.samplingContext = true })
}

// WithRoots declares roots and answers roots/list with these. Change them
// later with [Client.SetRoots].
// It configures a client (NewClient).
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). They keep working on every
// revision.
func WithRoots(roots ...Root) ClientOption {
	return clientOption(func(c *config) {
		c.client.roots, c.client.rootsSet = roots, true
	})
}

// WithRootsHandler declares roots and answers roots/list by calling h.
// It configures a client (NewClient).
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). They keep working on every
// revision.
func WithRootsHandler(h RootsHandler) ClientOption {
	return clientOption(func(c *config) { c.client.rootsHandler, c.client.rootsSet = h, true })
}

// WithExtension declares a protocol extension under
// capabilities.extensions, with its settings (nil for none). A client
// declares it on every request (2026-07-28) or at initialize; a server in
// its capabilities. settings must encode to a JSON object (a json.RawMessage
// or []byte is taken as the JSON it holds); WithExtension panics otherwise,
// as a mistake in the program.
// It configures either peer (NewClient or NewServer).
func WithExtension(id string, settings any) Option {
	raw, err := marshalObject(settings)
	if err != nil {
		panic(fmt.Sprintf("mcp: WithExtension(%q): the settings: %v", id, err))
	}
	if raw == nil {
		raw = json.RawMessage(`{}`)
	}
	return bothOption(func(c *config) {
		putEntry(&c.extensions, id, raw)
	})
}

// WithDiscoverTimeout bounds how long a client waits for the answer to its
// server/discover probe before it falls back to the initialize handshake of
// the older revisions (default 3s).
// It configures a client (NewClient).
func WithDiscoverTimeout(d time.Duration) ClientOption {
	return clientOption(func(c *config) {
		if d > 0 {
			c.client.discoverTimeout = d
		}
	})
}

// WithMaxInputRounds bounds how many times a client re-sends a 2026-07-28
// call that the server answered with input_required (default 10).
// It configures a client (NewClient).
func WithMaxInputRounds(n int) ClientOption {
	return clientOption(func(c *config) {
		if n > 0 {
			c.client.maxInputRounds = n
		}
	})
}

// Client is an MCP client: it connects to one server and calls its tools,
// resources and prompts, and answers the server's requests with the handlers
// its options configure.
type Client struct {
	info Implementation
	cfg  *config

	mu           sync.Mutex
	conn         *conn
	version      string
	modern       bool
	serverCaps   ServerCapabilities
	serverInfo   Implementation
	instructions string
	envelope     []metaEntry // the 2026-07-28 _meta members every request carries
	subs         clientSubscriptions
	// eventStreams are the open events/stream calls (StreamEvents), which
	// also set eventNotes, the hook that routes their notifications.
	eventStreams *clientEventStreams
	eventNotes   atomic.Pointer[func(method string, params json.RawMessage) bool]

	tasks        serverTasks                 // what the server said of tasks
	taskEnv      []metaEntry                 // envelope with the tasks extension declared; built when needed
	toolsListed  bool                        // tools/list was answered (or tried for tasks) on this connection
	toolTasks    map[string]TaskSupport      // each listed tool's task support
	taskWatchers map[*ToolTask]chan struct{} // waits that take status notifications
	recv         *taskReceiver               // the tasks the server asked of us; nil unless declared
	cache        *resultCache                // WithResultCache; nil when off
}

// NewClient returns a client that introduces itself as info.
func NewClient(info Implementation, opts ...ClientOption) *Client {
	cfg := newConfig()
	cfg.client = clientConfig{
		maxInputRounds:  DefaultMaxInputRounds,
		maxBarrenPages:  DefaultMaxBarrenPages,
		listenResumes:   DefaultListenResumeAttempts,
		discoverTimeout: DefaultDiscoverTimeout,
		taskPoll:        DefaultTaskPollInterval,
		taskPollMin:     DefaultMinTaskPollInterval,
		maxTaskRequests: DefaultMaxTasks,
		taskRequestTTL:  DefaultTaskTTL,
		taskRequestPage: DefaultPageSize,
	}
	for _, o := range opts {
		o.applyClient(cfg)
	}
	return &Client{info: info, cfg: cfg, cache: newResultCache(cfg.client.cacheBytes)}
}

// ErrNotConnected is returned by calls on a Client that is not connected.
var ErrNotConnected = errors.New("mcp: client is not connected")

// Connect connects to a server over t and agrees on a protocol revision. It
// probes server/discover first (2026-07-28); if the server does not answer it
// within the discover timeout, or answers with an error, it falls back to the
// initialize handshake. [WithProtocolVersion] pins one revision instead.
func (c *Client) Connect(ctx context.Context, t Transport) error {
	c.mu.Lock()
	if c.conn != nil {
		c.mu.Unlock()
		return errors.New("mcp: client already connected")
	}
	start := time.Now()
	conn := newConn(t, c.cfg, c, 0)
	c.watchEnd(conn, start)
	c.conn = conn
	c.tasks, c.taskEnv, c.toolsListed, c.toolTasks = serverTasks{}, nil, false, nil
	c.recv = nil
	c.cache.drop("", "") // a new connection may be another session, or another server
	if c.tasksCapability() != nil {
		c.recv = &taskReceiver{c: c, conn: conn}
	}
	c.mu.Unlock()
	if err := conn.start(ctx); err != nil {
		c.ended(start, err)
		c.reset()
		return err
	}
	if err := c.negotiate(ctx); err != nil {
		conn.closeAndWait(err)
		c.reset()
		return err
	}
	// On 2026-07-28 list changes come only on a listen stream; open one if
	// any handler wants them.
	c.listenForChanges(ctx)
	return nil
}

func (c *Client) reset() {
	c.mu.Lock()
	c.conn = nil
	c.mu.Unlock()
}

// modernEnvelope returns the _meta members a 2026-07-28 request carries.
func (c *Client) modernEnvelope(version string) []metaEntry {
	v, _ := json.Marshal(version)
	info, _ := json.Marshal(c.info)
	return []metaEntry{
		{key: metaProtocolVersion, value: v},
		{key: metaClientCapabilities, value: c.capabilitiesJSON(true)},
		{key: metaClientInfo, value: info},
	}
}

// capabilitiesJSON declares what the client's options configure, and
// nothing else.
func (c *Client) capabilitiesJSON(modern bool) json.RawMessage {
	cc := &c.cfg.client
	caps := ClientCapabilities{Extensions: c.cfg.extensions}
	if cc.elicitation != nil {
		caps.Elicitation = &ElicitationCapability{Form: &struct{}{}}
		if cc.elicitURL {
			caps.Elicitation.URL = &struct{}{}
		}
	}
	if cc.sampling != nil {
		caps.Sampling = &SamplingCapability{}
		if cc.samplingTools {
			caps.Sampling.Tools = &struct{}{}
		}
		if cc.samplingContext {
			caps.Sampling.Context = &struct{}{}
		}
	}
	if cc.rootsSet {
		caps.Roots = &RootsCapability{ListChanged: !modern}
	}
	if !modern {
		caps.Tasks = c.tasksCapability()
	}
	b, _ := json.Marshal(caps)
	return b
}

// ProtocolVersion returns the revision agreed with the server, or "" before
// Connect.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// ServerInfo returns the server's self-description.
func (c *Client) ServerInfo() Implementation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverInfo
}

// ServerCapabilities returns what the server declared it offers.
func (c *Client) ServerCapabilities() ServerCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverCaps
}

// Instructions returns the server's instructions, if any.
func (c *Client) Instructions() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.instructions
}

// Close closes the connection: pending calls fail with an error wrapping
// ErrClosed, the transport is closed (a child process is stopped), and Close
// returns when every goroutine of the connection has ended. It is safe to
// call more than once and from any goroutine.
func (c *Client) Close() error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	conn.closeAndWait(errClientClosed)
	return nil
}

func (c *Client) session() (*conn, []metaEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, nil, ErrNotConnected
	}
	return c.conn, c.envelope, nil
}

// SendRequest sends any request and decodes its result into result (which
// may be nil to ignore it). params is marshalled as JSON, and must encode to
// an object (or nil for none); a json.RawMessage or []byte is taken as the
// JSON it holds. On 2026-07-28 the request carries the client's _meta
// envelope, and a call answered with input_required is completed with the
// client's handlers.
func (c *Client) SendRequest(ctx context.Context, method string, params any, result any, opts ...CallOption) error {
	raw, err := marshalObject(params)
	if err != nil {
		return errorf("the params of %s: %w", method, err)
	}
	res, err := c.request(ctx, method, raw, opts)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(res, result); err != nil {
			return errorf("decoding %s result: %w", method, err)
		}
	}
	return nil
}

// requestAs is SendRequest for the typed calls: it returns the result,
// decoded into a new R.
func requestAs[R any](ctx context.Context, c *Client, method string, params any, opts []CallOption) (*R, error) {
	res := new(R)
	if err := c.SendRequest(ctx, method, params, res, opts...); err != nil {
		return nil, err
	}
	return res, nil
}

// request is the one road of every client call. On 2026-07-28 a call that
// may need input runs the input loop: each input_required result is
// answered with the client's handlers and the call re-sent (with a new id),
// all inside one deadline, with the progress callback kept across rounds.
func (c *Client) request(ctx context.Context, method string, params json.RawMessage, opts []CallOption) (json.RawMessage, error) {
	conn, envelope, err := c.session()
	if err != nil {
		return nil, err
	}
	if len(opts) == 0 {
		// Options are functions the compiler cannot see through: without
		// any, the options stay on the stack.
		o := callOptions{meta: envelope}
		return c.requestWith(ctx, conn, method, params, &o)
	}
	o := &callOptions{meta: envelope}
	for _, opt := range opts {
		opt(o)
	}
	return c.requestWith(ctx, conn, method, params, o)
}

// requestWith is request with its options applied.
func (c *Client) requestWith(ctx context.Context, conn *conn, method string, params json.RawMessage, o *callOptions) (json.RawMessage, error) {
	if conn.cfg.outbound != nil && !o.wrapped {
		// Once around the whole call: its input rounds run inside.
		return conn.callThrough(ctx, method, params, o, func(ctx context.Context, method string, params json.RawMessage, o *callOptions) (json.RawMessage, error) {
			return c.requestWith(ctx, conn, method, params, o)
		})
	}
	if o.meta == nil || !mrtrMethods[method] {
		return conn.call(ctx, method, params, o)
	}
	idle := conn.cfg.requestTimeout
	if o.timeoutSet {
		idle = o.timeout
	}
	o.dl = armDeadline(idle, conn.cfg.maxRequestTimeout, conn.armedDeadlines())
	defer o.dl.release()
	for round := 1; ; round++ {
		res, err := conn.call(ctx, method, params, o)
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(res, []byte(resultInputRequired)) {
			return res, nil
		}
		var ir struct {
			ResultType    string                  `json:"resultType"`
			InputRequests map[string]InputRequest `json:"inputRequests"`
			RequestState  *string                 `json:"requestState"`
		}
		if err := json.Unmarshal(res, &ir); err != nil {
			return nil, errorf("malformed %s result: %w", method, err)
		}
		switch ir.ResultType {
		case "", resultComplete:
			return res, nil
		case resultInputRequired:
		case resultTask:
			if o.task != nil {
				return res, nil // the task's own status says it needs input
			}
			fallthrough
		default:
			return nil, errorf("%s answered with an unknown resultType %q", method, ir.ResultType)
		}
		if round >= c.cfg.client.maxInputRounds {
			return nil, errorf("%s still needed input after %d rounds", method, round)
		}
		responses := make(map[string]json.RawMessage, len(ir.InputRequests))
		for key, ask := range ir.InputRequests {
			answer, err := c.answer(ctx, ask.Method, ask.Params)
			if err != nil {
				return nil, errorf("answering the server's %s ask %q: %w", ask.Method, key, err)
			}
			if responses[key], err = marshalResult(answer); err != nil {
				return nil, err
			}
		}
		if params, err = withInputResponses(params, responses, ir.RequestState); err != nil {
			return nil, err
		}
		if o.answered != nil {
			*o.answered = true
		}
		// The server answered, so it is not silent: the time the handlers
		// took (a person answering, say) counts against the ceiling only.
		o.dl.extend()
	}
}

// withInputResponses returns a call's params for its next round: the
// original params, this round's answers, and the server's state echoed
// verbatim (only if it sent one).
func withInputResponses(params json.RawMessage, responses map[string]json.RawMessage, state *string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, err
		}
	}
	delete(obj, "requestState")
	var err error
	if obj["inputResponses"], err = json.Marshal(responses); err != nil {
		return nil, err
	}
	if state != nil {
		obj["requestState"], _ = json.Marshal(*state)
	}
	return json.Marshal(obj)
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context, opts ...CallOption) error {
	return c.SendRequest(ctx, "ping", nil, nil, opts...)
}

// CallTool calls a tool. args is marshalled as the tool's arguments (nil
// sends none); a json.RawMessage or []byte is taken as the JSON it holds.
// Arguments are a JSON object: anything else is refused before it is sent.
// A tool that failed returns a result with IsError set, not an error; an
// error means the call itself failed.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	params, err := toolCallParams(name, args)
	if err != nil {
		return nil, err
	}
	defer func() { recycleMessage(params) }()
	if ask := c.taskMode(ctx, name, opts); ask != nil {
		return c.callToolTask(ctx, name, params, opts, ask)
	}
	raw, err := c.request(ctx, "tools/call", params, opts)
	if err != nil {
		return nil, taskCallError(name, err)
	}
	var res CallToolResult
	if err := decodeCallToolResult(raw, &res); err != nil {
		return nil, errorf("decoding tools/call result: %w", err)
	}
	return &res, nil
}

// toolCallParams writes the params of a tools/call into a message buffer,
// which the caller recycles. They are written by hand: json.Marshal would
// validate and compact the encoded arguments once more. The arguments are
// encoded into the params themselves (appendJSON), not into a copy of
// their own. A request copies its params.
func toolCallParams(name string, args any) ([]byte, error) {
	given, isRaw := rawJSONOf(args)
	params := messageBuffer(len(name) + len(given) + 32)
	params = append(params, `{"name":`...)
	params = appendJSONString(params, name)
	switch {
	case isRaw:
		// json.Marshal checks what it writes; raw JSON is checked here.
		given, err := marshalObject(args)
		if err != nil {
			recycleMessage(params)
			return nil, errorf("the arguments of %s: %w", name, err)
		}
		if len(given) > 0 {
			params = append(params, `,"arguments":`...)
			params = append(params, given...)
		}
	case args != nil:
		params = append(params, `,"arguments":`...)
		start := len(params)
		var err error
		if params, err = appendJSON(params, args); err != nil {
			recycleMessage(params)
			return nil, errorf("encoding arguments of %s: %w", name, err)
		}
		if err := checkObject(args, params[start:]); err != nil {
			recycleMessage(params)
			return nil, errorf("the arguments of %s: %w", name, err)
		}
	}
	return append(params, '}'), nil
}

// ListTools returns one page of the server's tools; pass the previous
// page's NextCursor to get the next, "" for the first.
// The client remembers each listed tool's Execution.TaskSupport, so that
// CallTool calls a tool that requires a task as one.
func (c *Client) ListTools(ctx context.Context, cursor string, opts ...CallOption) (*ListToolsResult, error) {
	res, err := cachedAs[ListToolsResult](ctx, c, "tools/list", cursor, cursorParams(cursor), opts)
	if err == nil {
		c.learnTools(res.Tools)
	}
	return res, err
}

func cursorParams(cursor string) any {
	if cursor == "" {
		return nil
	}
	return &listParams{Cursor: cursor}
}

// newRequest returns the engine's record of a request the server sent: the
// client keeps nothing more of one.
func (c *Client) newRequest() request { return new(inboundRequest) }

func (c *Client) handleRequest(ctx context.Context, r request) (any, error) {
	req := r.record()
	if c.cfg.inbound != nil {
		return c.answerThrough(ctx, req)
	}
	return c.serveAsk(ctx, req)
}

// serveAsk serves a request the server sent (the older revisions' asks).
func (c *Client) serveAsk(ctx context.Context, req *inboundRequest) (any, error) {
	if req.method == "ping" {
		return json.RawMessage("{}"), nil
	}
	c.mu.Lock()
	recv, modern := c.recv, c.modern
	c.mu.Unlock()
	if recv != nil && !modern {
		if res, err, ok := recv.serve(ctx, req.method, req.params); ok {
			return res, err
		}
	}
	return c.answer(ctx, req.method, req.params)
}

// answer serves a server's ask, whether it came as a live request (older
// revisions) or inside an input_required result (2026-07-28).
func (c *Client) answer(ctx context.Context, method string, params json.RawMessage) (any, error) {
	cc := &c.cfg.client
	notHandled := &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("Method not found: the client does not handle %q requests", method)}
	switch method {
	case "elicitation/create":
		if cc.elicitation == nil {
			return nil, notHandled
		}
		var p ElicitParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.Mode == ElicitationURL && !cc.elicitURL {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: this client did not declare url-mode elicitation"}
		}
		if p.Mode != ElicitationURL {
			if s := trimJSONSpace(p.RequestedSchema); len(s) == 0 || s[0] != '{' {
				return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: a form elicitation's requestedSchema must be a JSON object, not " + describeJSON(s)}
			}
		}
		return handlerResult(cc.elicitation(ctx, &p))
	case "sampling/createMessage":
		if cc.sampling == nil {
			return nil, notHandled
		}
		var p CreateMessageParams
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if (len(p.Tools) > 0 || p.ToolChoice != nil) && !cc.samplingTools {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: this client did not declare sampling.tools"}
		}
		return handlerResult(cc.sampling(ctx, &p))
	case "roots/list":
		if !cc.rootsSet {
			return nil, notHandled
		}
		roots, err := c.currentRoots(ctx)
		if err != nil {
			return nil, err
		}
		return &ListRootsResult{Roots: roots}, nil
	}
	return nil, notHandled
}

// handlerResult passes a handler's *Error through and hides other errors'
// detail behind an internal error that still says what failed.
func handlerResult[T any](v *T, err error) (any, error) {
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) {
			return nil, rpcErr
		}
		return nil, &Error{Code: CodeInternalError, Message: untitledText(err)}
	}
	if v == nil {
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: the handler returned no result"}
	}
	return v, nil
}

func (c *Client) currentRoots(ctx context.Context) ([]Root, error) {
	c.mu.Lock()
	h, roots := c.cfg.client.rootsHandler, c.cfg.client.roots
	c.mu.Unlock()
	if h != nil {
		return h(ctx)
	}
	if roots == nil {
		roots = []Root{}
	}
	return roots, nil
}

// SetRoots replaces the client's roots and, on the older revisions, tells
// the server with notifications/roots/list_changed.
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). They keep working on every
// revision.
func (c *Client) SetRoots(roots ...Root) error {
	c.mu.Lock()
	c.cfg.client.roots, c.cfg.client.rootsHandler, c.cfg.client.rootsSet = roots, nil, true
	conn, modern := c.conn, c.modern
	c.mu.Unlock()
	if conn == nil || modern {
		return nil
	}
	return conn.notify("notifications/roots/list_changed", nil, ID{}, nil)
}

func (c *Client) isClient() bool { return true }

func (c *Client) notificationHandler(method string) NotificationHandler {
	if method == "notifications/subscriptions/acknowledged" {
		return c.acknowledged
	}
	return nil
}

// takeNotification hands notifications/events/* to the open event stream
// they name, on the read path: the stream's own bound (a queue that, once
// full, makes the stream reopen from its cursor) keeps them, where the
// dispatch cap would shed them and lose occurrences.
func (c *Client) takeNotification(method string, params json.RawMessage) bool {
	if h := c.eventNotes.Load(); h != nil && strings.HasPrefix(method, "notifications/events/") {
		return (*h)(method, params)
	}
	return false
}

// WithToolListChangedHandler calls h when the server says its list of tools
// changed. On 2026-07-28 the server says so only on a subscriptions/listen
// stream: a client with list-change handlers opens one when it connects,
// asking for the changes it has handlers for, and [Client.Subscribe] adds
// resources to it. Handlers of one connection run one at a time, in arrival
// order; one must not call Subscribe or Unsubscribe, which wait for a
// notification that would queue behind it.
// It configures a client (NewClient).
func WithToolListChangedHandler(h func(ctx context.Context)) ClientOption {
	return WithNotificationHandler("notifications/tools/list_changed", func(ctx context.Context, _ json.RawMessage) { h(ctx) })
}

// WithPromptListChangedHandler calls h when the server says its list of
// prompts changed; see [WithToolListChangedHandler].
// It configures a client (NewClient).
func WithPromptListChangedHandler(h func(ctx context.Context)) ClientOption {
	return WithNotificationHandler("notifications/prompts/list_changed", func(ctx context.Context, _ json.RawMessage) { h(ctx) })
}

// WithResourceListChangedHandler calls h when the server says its list of
// resources or resource templates changed; see
// [WithToolListChangedHandler].
// It configures a client (NewClient).
func WithResourceListChangedHandler(h func(ctx context.Context)) ClientOption {
	return WithNotificationHandler("notifications/resources/list_changed", func(ctx context.Context, _ json.RawMessage) { h(ctx) })
}

// WithResourceUpdatedHandler calls h with the URI of a subscribed resource
// that changed (see [Client.Subscribe]); the URI may be of a part of the
// subscribed resource. See [WithToolListChangedHandler] for how handlers
// run.
// It configures a client (NewClient).
func WithResourceUpdatedHandler(h func(ctx context.Context, uri string)) ClientOption {
	return WithNotificationHandler("notifications/resources/updated", func(ctx context.Context, params json.RawMessage) {
		var p resourceURIParams
		if json.Unmarshal(params, &p) == nil {
			h(ctx, p.URI)
		}
	})
}

// WithLoggingMessageHandler calls h with each log message the server sends:
// on the older revisions at the level set with [Client.SetLoggingLevel] and
// above, on 2026-07-28 only about requests sent after SetLoggingLevel.
// Messages are handled one at a time, in order, never on the reader; a call
// returns only once every message the server sent before its answer has
// been handled, as with its progress. A call h makes must use the ctx h is
// given, which does not wait for h itself.
// It configures a client (NewClient).
//
// Deprecated: Logging is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). It keeps working on every
// revision.
func WithLoggingMessageHandler(h func(ctx context.Context, msg *LoggingMessageParams)) ClientOption {
	return WithNotificationHandler("notifications/message", func(ctx context.Context, params json.RawMessage) {
		var msg LoggingMessageParams
		if json.Unmarshal(params, &msg) == nil {
			h(ctx, &msg)
		}
	})
}

// ListResources returns one page of the server's resources; pass the
// previous page's NextCursor to get the next, "" for the first.
func (c *Client) ListResources(ctx context.Context, cursor string, opts ...CallOption) (*ListResourcesResult, error) {
	return cachedAs[ListResourcesResult](ctx, c, "resources/list", cursor, cursorParams(cursor), opts)
}

// ListResourceTemplates returns one page of the server's resource
// templates; pass the previous page's NextCursor to get the next, "" for
// the first.
func (c *Client) ListResourceTemplates(ctx context.Context, cursor string, opts ...CallOption) (*ListResourceTemplatesResult, error) {
	return cachedAs[ListResourceTemplatesResult](ctx, c, "resources/templates/list", cursor, cursorParams(cursor), opts)
}

// ReadResource reads the resource at uri. A resource the server does not
// have is an *Error: code -32002 from servers of the older revisions,
// -32602 from 2026-07-28 ones.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*ReadResourceResult, error) {
	return cachedAs[ReadResourceResult](ctx, c, "resources/read", uri, &ReadResourceParams{URI: uri}, opts)
}

// ListPrompts returns one page of the server's prompts; pass the previous
// page's NextCursor to get the next, "" for the first.
func (c *Client) ListPrompts(ctx context.Context, cursor string, opts ...CallOption) (*ListPromptsResult, error) {
	return cachedAs[ListPromptsResult](ctx, c, "prompts/list", cursor, cursorParams(cursor), opts)
}

// GetPrompt gets the prompt name with its arguments filled in from args.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...CallOption) (*GetPromptResult, error) {
	return requestAs[GetPromptResult](ctx, c, "prompts/get", &GetPromptParams{Name: name, Arguments: args}, opts)
}

// Complete asks the server to complete an argument of a prompt or a
// variable of a resource template.
func (c *Client) Complete(ctx context.Context, params *CompleteParams, opts ...CallOption) (*CompleteResult, error) {
	return requestAs[CompleteResult](ctx, c, "completion/complete", params, opts)
}

// SetLoggingLevel asks the server for log messages at level and above (see
// [WithLoggingMessageHandler]). On the older revisions it sends
// logging/setLevel; on 2026-07-28, which has no such method, every later
// request carries the level in its _meta, so the server logs about those
// requests.
//
// Deprecated: Logging is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). It keeps working on every
// revision.
func (c *Client) SetLoggingLevel(ctx context.Context, level LoggingLevel, opts ...CallOption) error {
	if !validLevel(level) {
		return errorf("unknown logging level %q", level)
	}
	c.mu.Lock()
	if c.conn == nil {
		c.mu.Unlock()
		return ErrNotConnected
	}
	if c.modern {
		value, _ := json.Marshal(level)
		envelope := slices.DeleteFunc(slices.Clone(c.envelope), func(e metaEntry) bool { return e.key == metaLogLevel })
		c.envelope, c.taskEnv = append(envelope, metaEntry{key: metaLogLevel, value: value}), nil
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.SendRequest(ctx, "logging/setLevel", map[string]LoggingLevel{"level": level}, nil, opts...)
}

// Subscribe asks the server to tell the client when the resource at uri
// changes; [WithResourceUpdatedHandler] receives the news. On the older
// revisions it sends resources/subscribe. On 2026-07-28 it (re)opens the
// client's subscriptions/listen stream, which then carries every subscribed
// URI and the list changes the client has handlers for, and returns once
// the server acknowledged it; it is an error if the server does not honour
// the subscription. Should that stream break, the client reopens it with
// the same subscriptions; see [WithListenGapHandler].
func (c *Client) Subscribe(ctx context.Context, uri string, opts ...CallOption) error {
	return c.changeSubscription(ctx, uri, true, opts)
}

// Unsubscribe undoes [Client.Subscribe]. On 2026-07-28 the listen stream is
// reopened without uri, or closed when nothing is left to listen for.
func (c *Client) Unsubscribe(ctx context.Context, uri string, opts ...CallOption) error {
	return c.changeSubscription(ctx, uri, false, opts)
}

func (c *Client) changeSubscription(ctx context.Context, uri string, on bool, opts []CallOption) error {
	c.mu.Lock()
	connected, modern := c.conn != nil, c.modern
	c.mu.Unlock()
	if !connected {
		return ErrNotConnected
	}
	if !modern {
		method := "resources/unsubscribe"
		if on {
			method = "resources/subscribe"
		}
		return c.SendRequest(ctx, method, &resourceURIParams{URI: uri}, nil, opts...)
	}
	subs := &c.subs
	subs.changing.Lock()
	defer subs.changing.Unlock()
	uris := slices.Clone(subs.uris)
	if on && !slices.Contains(uris, uri) {
		uris = append(uris, uri)
	}
	if !on {
		uris = slices.DeleteFunc(uris, func(u string) bool { return u == uri })
	}
	honoured, err := c.listen(ctx, uris, opts)
	if err != nil {
		return err
	}
	if on && !slices.Contains(honoured.ResourceSubscriptions, uri) {
		return errorf("the server does not honour a subscription to %s", uri)
	}
	return nil
}

// decodeCallToolResult decodes a result the engine has already validated,
// walking it with eachMember: a large text block is copied once
// rather than validated and unquoted again by encoding/json. Anything
// unusual in a content block falls back to encoding/json.
func decodeCallToolResult(raw json.RawMessage, r *CallToolResult) error {
	var err error
	ok := eachMember(raw, func(key, value []byte) bool {
		switch string(key) {
		case "content":
			if string(value) == "null" {
				break
			}
			r.Content = make([]Content, 0, 1)
			if !eachElement(value, func(block []byte) bool {
				r.Content = append(r.Content, Content{})
				c := &r.Content[len(r.Content)-1]
				if !decodeSimpleContent(block, c) {
					*c = Content{}
					err = json.Unmarshal(block, c)
				}
				return err == nil
			}) && err == nil {
				err = errors.New("content is not an array")
			}
		case "structuredContent":
			if string(value) != "null" {
				r.StructuredContent = value
			}
		case "isError":
			err = json.Unmarshal(value, &r.IsError)
		case "_meta":
			// Left out when it holds only the server's serverInfo, which
			// Client.ServerInfo reports (as a server leaves out of a
			// handler's Meta the members the engine reads).
			if string(value) != "null" && (hasOtherMember(value, metaServerInfo) || !hasMember(value, metaServerInfo)) {
				err = decodeMeta(value, &r.Meta)
			}
		}
		return err == nil
	})
	if !ok && err == nil {
		return errors.New("the result is not an object")
	}
	return err
}

// decodeSimpleContent decodes a content block made only of string members
// it knows; it reports false for anything else.
func decodeSimpleContent(block []byte, c *Content) bool {
	simple := true
	eachMember(block, func(key, value []byte) bool {
		var dst *string
		switch string(key) {
		case "type":
			dst = &c.Type
		case "text":
			dst = &c.Text
		case "data":
			dst = &c.Data
		case "mimeType":
			dst = &c.MIMEType
		default:
			simple = false
			return false
		}
		*dst, simple = jsonString(value)
		return simple
	})
	return simple
}
