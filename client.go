package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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
)

type clientConfig struct {
	discoverTimeout time.Duration
	maxInputRounds  int

	elicitation     ElicitationHandler
	elicitURL       bool
	sampling        SamplingHandler
	samplingTools   bool
	samplingContext bool
	roots           []Root
	rootsHandler    RootsHandler
	rootsSet        bool
	extensions      map[string]json.RawMessage
}

// ElicitationHandler answers a server's elicitation: it shows the user the
// message and form (or URL) and returns the user's action. Declining is a
// result; an error is reported to the server as a failed request.
type ElicitationHandler func(ctx context.Context, params *ElicitParams) (*ElicitResult, error)

// SamplingHandler answers a server's sampling request with a message from
// the client's language model.
type SamplingHandler func(ctx context.Context, params *CreateMessageParams) (*CreateMessageResult, error)

// RootsHandler returns the client's current roots.
type RootsHandler func(ctx context.Context) ([]Root, error)

// WithElicitationHandler lets servers elicit input from the user through h.
// The client declares form-mode elicitation; add [WithURLElicitation] for
// url mode.
func WithElicitationHandler(h ElicitationHandler) Option {
	return func(c *config) { c.client.elicitation = h }
}

// WithURLElicitation declares url-mode elicitation as well: the elicitation
// handler also receives requests to send the user to a URL.
func WithURLElicitation() Option {
	return func(c *config) { c.client.elicitURL = true }
}

// WithSamplingHandler lets servers sample the client's language model
// through h.
//
// Deprecated: Sampling is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). It keeps working on every
// revision.
func WithSamplingHandler(h SamplingHandler) Option {
	return func(c *config) { c.client.sampling = h }
}

// WithSamplingTools declares sampling.tools: sampling requests may carry
// tools and toolChoice.
func WithSamplingTools() Option {
	return func(c *config) { c.client.samplingTools = true }
}

// WithSamplingContext declares sampling.context: sampling requests may ask
// to include context from this or all servers.
func WithSamplingContext() Option {
	return func(c *config) { c.client.samplingContext = true }
}

// WithRoots declares roots and answers roots/list with these. Change them
// later with [Client.SetRoots].
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). They keep working on every
// revision.
func WithRoots(roots ...Root) Option {
	return func(c *config) {
		c.client.roots, c.client.rootsSet = roots, true
	}
}

// WithRootsHandler declares roots and answers roots/list by calling h.
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28). They keep working on every
// revision.
func WithRootsHandler(h RootsHandler) Option {
	return func(c *config) { c.client.rootsHandler, c.client.rootsSet = h, true }
}

// WithExtension declares a protocol extension under
// capabilities.extensions, with its settings (nil for none).
func WithExtension(id string, settings any) Option {
	return func(c *config) {
		raw := json.RawMessage(`{}`)
		if settings != nil {
			if b, err := json.Marshal(settings); err == nil {
				raw = b
			}
		}
		if c.client.extensions == nil {
			c.client.extensions = make(map[string]json.RawMessage)
		}
		c.client.extensions[id] = raw
	}
}

// WithDiscoverTimeout bounds how long a client waits for the answer to its
// server/discover probe before it falls back to the initialize handshake of
// the older revisions (default 3s).
func WithDiscoverTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.client.discoverTimeout = d
		}
	}
}

// WithMaxInputRounds bounds how many times a client re-sends a 2026-07-28
// call that the server answered with input_required (default 10).
func WithMaxInputRounds(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.client.maxInputRounds = n
		}
	}
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
}

// NewClient returns a client that introduces itself as info.
func NewClient(info Implementation, opts ...Option) *Client {
	return &Client{info: info, cfg: newConfig(opts)}
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
	conn := newConn(t, c.cfg, c)
	c.conn = conn
	c.mu.Unlock()
	if err := conn.start(ctx); err != nil {
		c.reset()
		return err
	}
	if err := c.negotiate(ctx); err != nil {
		conn.closeAndWait(err)
		c.reset()
		return err
	}
	return nil
}

func (c *Client) reset() {
	c.mu.Lock()
	c.conn = nil
	c.mu.Unlock()
}

func (c *Client) negotiate(ctx context.Context) error {
	pinned := c.cfg.protocolVersion
	if pinned != "" && !isSupportedVersion(pinned) {
		return fmt.Errorf("mcp: protocol version %q is not one this package speaks", pinned)
	}
	if pinned == "" || isModernVersion(pinned) {
		version := pinned
		if version == "" {
			version = LatestVersion
		}
		ok, err := c.discover(ctx, version, pinned != "")
		if ok || pinned != "" || ctx.Err() != nil {
			return err
		}
	}
	legacy := pinned
	if legacy == "" {
		legacy = LatestLegacyVersion
	}
	return c.initialize(ctx, legacy, pinned != "")
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
	caps := ClientCapabilities{Extensions: cc.extensions}
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
	b, _ := json.Marshal(caps)
	return b
}

// discover probes server/discover. It reports true when the server speaks
// the modern era; false (with a nil error) means "fall back".
func (c *Client) discover(ctx context.Context, version string, pinned bool) (bool, error) {
	envelope := c.modernEnvelope(version)
	o := &callOptions{meta: envelope}
	if !pinned {
		o.timeout, o.timeoutSet = c.cfg.client.discoverTimeout, true
	}
	raw, err := c.conn.call(ctx, "server/discover", nil, o)
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr.Code == CodeUnsupportedProtocolVersion && pinned {
			return false, fmt.Errorf("mcp: the server does not speak protocol version %s: %w", version, err)
		}
		if pinned || errors.Is(err, ErrClosed) {
			return false, err
		}
		c.cfg.logger.Debug("server/discover failed; falling back to initialize", "err", err)
		return false, nil
	}
	var res DiscoverResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, fmt.Errorf("mcp: malformed server/discover result: %w", err)
	}
	found := false
	for _, v := range res.SupportedVersions {
		if v == version {
			found = true
		}
	}
	if !found {
		if pinned {
			return false, fmt.Errorf("mcp: the server does not list protocol version %s (it lists %v)", version, res.SupportedVersions)
		}
		return false, nil
	}
	var info Implementation
	if si, ok := res.Meta[metaServerInfo]; ok {
		b, _ := json.Marshal(si)
		_ = json.Unmarshal(b, &info)
	}
	c.mu.Lock()
	c.version, c.modern = version, true
	c.serverCaps, c.serverInfo, c.instructions = res.Capabilities, info, res.Instructions
	c.envelope = envelope
	c.mu.Unlock()
	return true, nil
}

func (c *Client) initialize(ctx context.Context, version string, pinned bool) error {
	params, _ := json.Marshal(initializeParams{ProtocolVersion: version, Capabilities: c.capabilitiesJSON(false), ClientInfo: c.info})
	raw, err := c.conn.call(ctx, "initialize", params, &callOptions{})
	if err != nil {
		return fmt.Errorf("mcp: initialize: %w", err)
	}
	var res InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("mcp: malformed initialize result: %w", err)
	}
	if !isSupportedVersion(res.ProtocolVersion) || isModernVersion(res.ProtocolVersion) {
		return fmt.Errorf("mcp: the server answered protocol version %q, which this client does not speak", res.ProtocolVersion)
	}
	if pinned && res.ProtocolVersion != version {
		return fmt.Errorf("mcp: the server answered protocol version %q; this client is pinned to %q", res.ProtocolVersion, version)
	}
	c.mu.Lock()
	c.version, c.modern = res.ProtocolVersion, false
	c.serverCaps, c.serverInfo, c.instructions = res.Capabilities, res.ServerInfo, res.Instructions
	c.envelope = nil
	c.mu.Unlock()
	c.conn.batchOK.Store(res.ProtocolVersion == Version20250326)
	return c.conn.notify("notifications/initialized", nil, ID{}, nil)
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
	conn.closeAndWait(errors.New("client closed"))
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
// may be nil to ignore it). params is marshalled as JSON unless it is a
// json.RawMessage. On 2026-07-28 the request carries the client's _meta
// envelope, and a call answered with input_required is completed with the
// client's handlers.
func (c *Client) SendRequest(ctx context.Context, method string, params any, result any, opts ...CallOption) error {
	raw, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("mcp: encoding %s params: %w", method, err)
	}
	res, err := c.request(ctx, method, raw, opts)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(res, result); err != nil {
			return fmt.Errorf("mcp: decoding %s result: %w", method, err)
		}
	}
	return nil
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
	o := &callOptions{meta: envelope}
	for _, opt := range opts {
		opt(o)
	}
	if envelope == nil || !mrtrMethods[method] {
		return conn.call(ctx, method, params, o)
	}
	idle := conn.cfg.requestTimeout
	if o.timeoutSet {
		idle = o.timeout
	}
	o.dl = armDeadline(idle, conn.cfg.maxRequestTimeout, &conn.armed)
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
			return nil, fmt.Errorf("mcp: malformed %s result: %w", method, err)
		}
		switch ir.ResultType {
		case "", resultComplete:
			return res, nil
		case resultInputRequired:
		default:
			return nil, fmt.Errorf("mcp: %s answered with an unknown resultType %q", method, ir.ResultType)
		}
		if round >= c.cfg.client.maxInputRounds {
			return nil, fmt.Errorf("mcp: %s still needed input after %d rounds", method, round)
		}
		responses := make(map[string]json.RawMessage, len(ir.InputRequests))
		for key, ask := range ir.InputRequests {
			answer, err := c.answer(ctx, ask.Method, ask.Params)
			if err != nil {
				return nil, fmt.Errorf("mcp: answering the server's %s ask %q: %w", ask.Method, key, err)
			}
			if responses[key], err = marshalResult(answer); err != nil {
				return nil, err
			}
		}
		if params, err = withInputResponses(params, responses, ir.RequestState); err != nil {
			return nil, err
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
// sends none). A tool that failed returns a result with IsError set, not an
// error; an error means the call itself failed.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	p := CallToolParams{Name: name}
	if args != nil {
		raw, err := marshalParams(args)
		if err != nil {
			return nil, fmt.Errorf("mcp: encoding arguments of %s: %w", name, err)
		}
		p.Arguments = raw
	}
	var res CallToolResult
	if err := c.SendRequest(ctx, "tools/call", &p, &res, opts...); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListTools returns one page of the server's tools; pass the previous
// page's NextCursor to get the next, "" for the first.
func (c *Client) ListTools(ctx context.Context, cursor string, opts ...CallOption) (*ListToolsResult, error) {
	var res ListToolsResult
	if err := c.SendRequest(ctx, "tools/list", cursorParams(cursor), &res, opts...); err != nil {
		return nil, err
	}
	return &res, nil
}

func cursorParams(cursor string) any {
	if cursor == "" {
		return nil
	}
	return struct {
		Cursor string `json:"cursor"`
	}{cursor}
}

func (c *Client) handleRequest(ctx context.Context, req *inboundRequest) (any, error) {
	if req.method == "ping" {
		return json.RawMessage("{}"), nil
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
		return nil, &Error{Code: CodeInternalError, Message: err.Error()}
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

func (c *Client) notificationHandler(method string) NotificationHandler {
	return nil
}
