package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultPageSize is the default number of items in one page of a list
// result; see [WithPageSize].
const DefaultPageSize = 100

type serverConfig struct {
	instructions string
	pageSize     int
	stateKey     []byte
	stateTTL     time.Duration
	cacheTTL     time.Duration
	cacheScope   CacheScope
	completion   CompletionHandler

	tasks            *taskHooks // WithTasks; nil: no tasks
	taskTTL          time.Duration
	taskPollInterval time.Duration
	taskStore        TaskStore
	taskLease        time.Duration
	maxTasks         int
	maxTasksPerOwner int
	broadcaster      Broadcaster
	cluster          func(*Server) clusterSeam // WithBroadcaster's wing; nil: one instance
}

// WithInstructions sets the instructions a server gives clients on how to
// use it.
// It configures a server (NewServer).
func WithInstructions(s string) ServerOption {
	return serverOption(func(c *config) { c.server.instructions = s })
}

// WithPageSize sets how many items a server puts in one page of tools/list,
// resources/list, resources/templates/list, prompts/list and tasks/list
// (default 100).
// It configures a server (NewServer).
func WithPageSize(n int) ServerOption {
	return serverOption(func(c *config) {
		if n > 0 {
			c.server.pageSize = n
		}
	})
}

// WithCacheHints sets the caching hint (SEP-2549) a server puts on its
// 2026-07-28 list, resources/read and server/discover results: how long a
// client may reuse one, and who may share it. The default, 0 and
// CacheScopePrivate, lets no one reuse a result, which is always correct;
// raise ttl for a server whose lists and resources rarely change.
// It configures a server (NewServer).
func WithCacheHints(ttl time.Duration, scope CacheScope) ServerOption {
	return serverOption(func(c *config) {
		if ttl >= 0 {
			c.server.cacheTTL = ttl
		}
		if scope == CacheScopePublic || scope == CacheScopePrivate {
			c.server.cacheScope = scope
		}
	})
}

// WithCompletionHandler serves completion/complete with h and advertises
// the completions capability. The server checks that the request names a
// registered prompt and one of its arguments, or a registered resource
// template and one of its variables, before h runs; h sees the rest.
// It configures a server (NewServer).
func WithCompletionHandler(h CompletionHandler) ServerOption {
	return serverOption(func(c *config) { c.server.completion = h })
}

// ToolHandler serves one tools/call. Returning an *Error itself (not wrapped)
// sends it as a protocol error; any other error becomes a tool result with
// IsError set and the error's text, so the model can correct itself. An
// error wrapping ErrInputRequired ends a 2026-07-28 round asking for input.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// CallToolRequest is one tools/call as its handler sees it.
type CallToolRequest struct {
	// Params are the call's params: the tool's name and raw arguments.
	Params *CallToolParams
	*RequestInfo
}

// RequestInfo describes an inbound request to a server handler: who asked,
// under which protocol revision, and how to talk back.
type RequestInfo struct {
	// inboundRequest is the engine's record of the request: its id,
	// method, params, connection and route.
	inboundRequest
	version  string
	modern   bool
	caps     capabilitySet
	token    json.RawMessage // progress token, raw; nil when none
	logLevel string
	session  *serverSession
	gateway  *ClientGateway
	round    *inputRound // the asks and answers of a call that may need input
	task     *serverTask // the task the handler runs in; nil when none
	// ctx is the handler's context as the inbound middleware made it, for
	// what the handler sends through the outbound middleware (a trace's
	// parent span, say); nil without middleware.
	ctx context.Context
}

// ProtocolVersion returns the protocol revision the request is served under.
func (r *RequestInfo) ProtocolVersion() string { return r.version }

// ID returns the request's JSON-RPC id.
func (r *RequestInfo) ID() ID { return r.id }

// Principal returns who sent the request as the HTTP handler's
// [Authorizer] named it; empty when there is none, or over another
// transport. Server only.
func (r *RequestInfo) Principal() string {
	if r.session == nil {
		return ""
	}
	return r.session.principal
}

// SessionID returns the HTTP session the request belongs to: the
// Mcp-Session-Id of a legacy Streamable HTTP session (2025-11-25 and
// older), or the session of the 2024-11-05 HTTP+SSE transport; empty over
// other transports and on 2026-07-28, which has no sessions. Server only.
func (r *RequestInfo) SessionID() string {
	if r.session == nil {
		return ""
	}
	return r.session.sessionID
}

// Server serves tools, resources and prompts to MCP clients. One Server can
// serve many connections at once, each on either protocol era. Tools,
// resources and prompts may be added and removed while it serves: connected
// clients are told with the list_changed notifications. What is registered
// before it serves (before Serve, or before its HTTP handler is made), and
// registering again what lists the same, is no change and is not
// announced.
type Server struct {
	info Implementation
	cfg  *config

	infoJSON func() json.RawMessage // info, encoded once for every 2026-07-28 result

	mu        sync.RWMutex
	tools     registry[*serverTool]
	resources registry[*serverResource]
	templates registry[*serverTemplate]
	prompts   registry[*serverPrompt]
	// A feature, once registered, stays advertised and served even when its
	// list becomes empty: capabilities cannot be taken back from a client.
	offersTools, offersResources, offersPrompts bool
	// offersTasks: a tool that may run as a task was registered.
	offersTasks bool
	preflights  map[string]TaskPreflight
	// offersApps: an MCP Apps view was registered (AddAppView), which
	// also set appOnlyHidden: for a request, what says which tools its
	// client may not see (nil: all of them).
	offersApps    bool
	appOnlyHidden func(*RequestInfo) func(*Tool) bool

	tasks     taskTable     // the tasks running here
	store     TaskStore     // every task, running or ended, until its TTL
	cluster   clusterSeam   // the many-instance wing (WithBroadcaster); nil on one instance
	announced atomic.Uint64 // numbers the changes announced by one instance (localAnnouncement)
	// serving is set once the server serves or is about to: by Serve and
	// the HTTP handlers' constructors, and by every session (newSession).
	// List changes from then on are announced (listChanged).
	serving atomic.Bool

	sessionsMu sync.Mutex
	// sessions get every broadcast, each holding the server channel (nil: no broadcaster).
	sessions  map[*serverSession]channelHold
	listeners map[*listenStream]struct{}
}

type serverTool struct {
	tool    *Tool
	handler ToolHandler
}

type serverResource struct {
	resource *Resource
	handler  ResourceHandler
}

type serverTemplate struct {
	template *ResourceTemplate
	parsed   *URITemplate
	handler  ResourceHandler
}

type serverPrompt struct {
	prompt  *Prompt
	handler PromptHandler
}

// NewServer returns a server that introduces itself as info.
func NewServer(info Implementation, opts ...ServerOption) *Server {
	cfg := newConfig()
	for _, o := range opts {
		o.applyServer(cfg)
	}
	store := cfg.server.taskStore
	if store == nil && cfg.server.tasks != nil {
		store = cfg.server.tasks.newStore()
	}
	s := &Server{
		info:  info,
		cfg:   cfg,
		store: store,
		infoJSON: sync.OnceValue(func() json.RawMessage {
			raw, _ := json.Marshal(info)
			return raw
		}),
		sessions:  make(map[*serverSession]channelHold),
		listeners: make(map[*listenStream]struct{}),
	}
	if newCluster := cfg.server.cluster; newCluster != nil {
		s.cluster = newCluster(s)
	}
	return s
}

// AddTool registers a tool with a raw handler, replacing any tool of the same
// name. The handler sees the arguments as sent; nothing validates them. An
// empty InputSchema becomes {"type":"object"}. Use the generic [AddTool] for
// a handler that takes a Go value, with schemas inferred and arguments
// validated.
//
// AddTool panics if the name is not 1 to 128 characters from A-Z, a-z, 0-9,
// '_', '-' and '.', the names the protocol allows, or if the tool may run as
// a task on a server not given WithTasks: like a bad pattern given to
// http.ServeMux, it is a mistake in the program, found when it starts.
func (s *Server) AddTool(t Tool, h ToolHandler) {
	if err := checkToolName(t.Name); err != nil {
		panic("mcp: AddTool: " + err.Error())
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if runsAsTask(&t) {
		if s.cfg.server.tasks == nil {
			panic("mcp: AddTool: tool " + t.Name + " may run as a task, but the server was not given WithTasks")
		}
		s.mu.Lock()
		s.offersTasks = true
		s.mu.Unlock()
	}
	register(s, &s.tools, &s.offersTools, "tools", t.Name, &serverTool{tool: &t, handler: h})
}

// RemoveTools unregisters the named tools.
func (s *Server) RemoveTools(names ...string) {
	unregister(s, &s.tools, "tools", names)
}

// Serve serves one client over t until the client goes away or ctx ends. It
// returns nil when the client closed the connection. At the end of input
// (on stdio, the client closed the server's standard input) every handler
// still running is cancelled, so that the server exits promptly, but what
// the handlers answer is still written: each request sent before the input
// ended gets its answer, as a shell pipe expects. Serve returns once those
// answers are written. When ctx ends, handlers are cancelled and their
// answers dropped.
func (s *Server) Serve(ctx context.Context, t Transport) error {
	ss, c := s.newSession(t, 0)
	if err := c.start(ctx); err != nil {
		return err
	}
	s.addSession(ss)
	defer s.removeSession(ss)
	stop := context.AfterFunc(ctx, func() { c.close(context.Cause(ctx)) })
	defer stop()
	<-c.done
	c.wg.Wait()
	c.mu.Lock()
	cause := c.closeErr
	c.mu.Unlock()
	if errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrClosedPipe) || errors.Is(cause, syscall.EPIPE) {
		// The end of input, or of output (a write to a pipe whose
		// reader closed it): either way the client went away.
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return cause
}

// newSession binds a fresh session to a connection over t. Serve and the
// HTTP handler (pushSession: one per legacy session, one per 2026-07-28
// POST) create every server connection through it.
func (s *Server) newSession(t Transport, mode connMode) (*serverSession, *conn) {
	s.serving.Store(true)
	ss := &serverSession{srv: s}
	c := newConn(t, s.cfg, ss, mode)
	ss.conn = c
	if mode&oneRequest == 0 {
		ss.watchEnd(c)
	}
	return ss, c
}

// capabilities reports what is registered; nothing is advertised that is
// not served. Logging is always advertised: every handler can log through
// its gateway, and logging/setLevel is always served on the older
// revisions. Extensions are those declared with WithExtension, which serves
// clients and servers alike. Once a tool may run as a task, tasks are
// advertised as the revision has them: the tasks capability on 2025-11-25,
// the tasks extension on 2026-07-28.
func (s *Server) capabilities(version string) ServerCapabilities {
	caps := ServerCapabilities{Logging: &struct{}{}, Extensions: s.cfg.extensions}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.offersTools {
		caps.Tools = &ListChangedCapability{ListChanged: true}
	}
	if s.offersResources {
		caps.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if s.offersPrompts {
		caps.Prompts = &ListChangedCapability{ListChanged: true}
	}
	if s.cfg.server.completion != nil {
		caps.Completions = &struct{}{}
	}
	if s.offersTasks && version == Version20251125 {
		caps.Tasks = json.RawMessage(legacyTasksCapability)
	}
	if s.offersTasks && isModernVersion(version) {
		caps.addExtension(TasksExtension)
	}
	if s.offersApps {
		caps.addExtension(AppsExtension)
	}
	return caps
}

// serverSession is one connection's state on the server side. Legacy
// clients initialize it; modern requests carry their own state and leave it
// alone.
type serverSession struct {
	srv  *Server
	conn *conn
	// principal is who the HTTP handler's authorizer says sent the
	// session's requests; empty over other transports or without one.
	principal string
	// sessionID is the HTTP session's id, as the HTTP handler named it;
	// empty over other transports and on 2026-07-28.
	sessionID string
	// started is when the session began, for WithSessionEndHandler.
	started time.Time
	// anonOwner owns the tasks of the session's anonymous requests
	// (anonymousOwner, tasks_server.go); made on first use, under mu.
	anonOwner string

	mu          sync.Mutex
	initialized bool
	version     string
	clientCaps  capabilitySet
	clientInfo  *Implementation // set by initialize: a 2026-07-28 request's session has none
	logLevel    string
	// subscriptions are the URIs of resources/subscribe (older revisions).
	subscriptions map[string]bool
}

// requestEnvelope is the part of every request's params the server reads
// before dispatching: the 2026-07-28 _meta members and the progress token.
type requestEnvelope struct {
	Meta struct {
		ProtocolVersion    *string         `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		LogLevel           string          `json:"io.modelcontextprotocol/logLevel"`
		ProgressToken      json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
	// hasInput: params has inputResponses or requestState (2026-07-28).
	hasInput bool
}

// decodeRequestEnvelope reads the request envelope out of params, which the
// reader has checked to be valid JSON, without decoding the other members.
// Its raw values alias params.
func decodeRequestEnvelope(params []byte, env *requestEnvelope) error {
	var err error
	eachMember(params, func(key, value []byte) bool {
		if string(key) == "inputResponses" || string(key) == "requestState" {
			env.hasInput = true
		}
		if err != nil || string(key) != "_meta" || string(value) == "null" {
			return true
		}
		m := &env.Meta
		if !eachMember(value, func(key, value []byte) bool {
			switch {
			case err != nil:
			case string(key) == metaProtocolVersion:
				m.ProtocolVersion = nil
				if string(value) != "null" {
					v, ok := knownVersion(value)
					if !ok {
						v, ok = jsonString(value)
					}
					if !ok {
						err = errors.New(`_meta["` + metaProtocolVersion + `"] must be a string`)
					}
					m.ProtocolVersion = &v
				}
			case string(key) == metaClientCapabilities:
				m.ClientCapabilities = value
			case string(key) == metaLogLevel:
				if string(value) != "null" {
					var ok bool
					if m.LogLevel, ok = jsonString(value); !ok {
						err = errors.New(`_meta["` + metaLogLevel + `"] must be a string`)
					}
				}
			case string(key) == "progressToken":
				m.ProgressToken = value
			}
			return true
		}) {
			err = errors.New("_meta must be an object")
		}
		return true
	})
	return err
}

// Methods removed from the 2026-07-28 revision.
var legacyOnlyMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// newRequest returns a request's RequestInfo, in which the engine keeps
// its record of it.
func (ss *serverSession) newRequest() request { return new(RequestInfo) }

func (ss *serverSession) handleRequest(ctx context.Context, r request) (any, error) {
	info := r.(*RequestInfo) // newRequest's
	var env requestEnvelope
	err := ss.prepare(info, &env)
	if ss.srv.cfg.inbound != nil {
		return ss.serveThrough(ctx, info, env, err)
	}
	if err != nil {
		return nil, err
	}
	return ss.serve(ctx, info, &env)
}

// prepare decodes the request's envelope and fills in its RequestInfo. The
// error it returns is the request's answer: the request is not served.
func (ss *serverSession) prepare(info *RequestInfo, env *requestEnvelope) error {
	req := &info.inboundRequest
	if len(req.params) > 0 {
		if err := decodeRequestEnvelope(req.params, env); err != nil {
			return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
		}
	}
	info.session = ss
	if env.Meta.ProtocolVersion != nil {
		return ss.prepareModern(req, info, env)
	}
	switch req.method {
	case "initialize":
		return nil
	case "server/discover":
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: server/discover needs _meta[\"" + metaProtocolVersion + "\"]"}
	}
	ss.mu.Lock()
	initialized, version, caps, level := ss.initialized, ss.version, ss.clientCaps, ss.logLevel
	ss.mu.Unlock()
	if !initialized {
		if req.method == "ping" {
			return nil
		}
		return &Error{Code: CodeInvalidRequest, Message: "Invalid Request: the session is not initialized; send initialize first"}
	}
	info.version, info.caps, info.logLevel = version, caps, level
	info.token = env.Meta.ProgressToken
	return nil
}

// prepareModern checks a 2026-07-28 request's envelope and fills in its
// RequestInfo from it.
func (ss *serverSession) prepareModern(req *inboundRequest, info *RequestInfo, env *requestEnvelope) error {
	v := *env.Meta.ProtocolVersion
	if !isModernVersion(v) || !isSupportedVersion(v) || (ss.srv.cfg.protocolVersion != "" && v != ss.srv.cfg.protocolVersion) {
		return NewError(CodeUnsupportedProtocolVersion, "Unsupported protocol version",
			map[string]any{"supported": ss.srv.supportedVersions(), "requested": v})
	}
	if len(env.Meta.ClientCapabilities) == 0 {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: missing required _meta[\"" + metaClientCapabilities + "\"]"}
	}
	if legacyOnlyMethods[req.method] {
		return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method + " is not part of protocol revision " + v}
	}
	info.version, info.modern = v, true
	info.caps = newCapabilitySet(env.Meta.ClientCapabilities)
	info.token = env.Meta.ProgressToken
	info.logLevel = env.Meta.LogLevel
	return nil
}

// serve serves a request that prepare let through.
func (ss *serverSession) serve(ctx context.Context, info *RequestInfo, env *requestEnvelope) (any, error) {
	req := &info.inboundRequest
	if info.modern {
		return ss.handleModern(ctx, req, info, env)
	}
	switch req.method {
	case "initialize":
		return ss.initialize(req.params)
	case "ping":
		return json.RawMessage("{}"), nil
	}
	if mrtrMethods[req.method] {
		return ss.runLegacyShim(ctx, req, info)
	}
	return ss.dispatch(ctx, req, info)
}

// handleModern serves a 2026-07-28 request.
func (ss *serverSession) handleModern(ctx context.Context, req *inboundRequest, info *RequestInfo, env *requestEnvelope) (any, error) {
	var result any
	var err error
	switch {
	case req.method == "server/discover":
		result = ss.srv.discover()
	case len(req.method) > 6 && req.method[:6] == "tasks/" && ss.srv.offersTasksNow():
		result, err = ss.srv.cfg.server.tasks.serveModern(ss.srv, ctx, req, info)
	case mrtrMethods[req.method]:
		if info.round, err = ss.srv.openRound(ss.principal, req.method, req.params, env.hasInput); err != nil {
			return nil, err
		}
		result, err = ss.dispatch(ctx, req, info)
		result, err = ss.srv.finishRound(info.round, info.caps, result, err)
	default:
		result, err = ss.dispatch(ctx, req, info)
	}
	if err != nil {
		return nil, err
	}
	// The result of a round that carried input depends on that input:
	// never cacheable.
	retry := info.round != nil && info.round.retry
	return ss.srv.modernResult(result, !retry)
}

// offersTasksNow reports whether a tool that may run as a task was ever
// registered: only then are the tasks/* methods served.
func (s *Server) offersTasksNow() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.offersTasks
}

// modernResult adds resultType and serverInfo to a 2026-07-28 result, and
// the caching hint to the results that carry one. The answer writes it
// straight into the response (modernAnswer); middleware, which sees results
// encoded, gets it encoded.
func (s *Server) modernResult(result any, mayCache bool) (any, error) {
	_, cache := result.(cacheable)
	a := &modernAnswer{srv: s, result: result, cache: cache && mayCache}
	if s.cfg.inbound == nil {
		return a, nil
	}
	raw, err := a.appendResult(nil)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(raw), nil
}

// modernAnswer is a 2026-07-28 result on its way out: the handler's result
// and the members the revision adds, encoded once, into the response, rather
// than encoded, copied with the members and copied again into it.
type modernAnswer struct {
	srv    *Server
	result any
	cache  bool
}

// appendResult appends the answer's JSON to b, a message buffer.
func (a *modernAnswer) appendResult(b []byte) ([]byte, error) {
	start := len(b)
	info := a.srv.infoJSON()
	var hint string
	if a.cache {
		hint = a.srv.cacheHintMembers()
	}
	b = growMessage(b, len(info)+len(hint)+96)
	b = append(b, `{"resultType":"complete",`...)
	if hint != "" {
		b = append(b, hint...)
		b = append(b, ',')
	}
	b = append(b, `"_meta":{"`+metaServerInfo+`":`...)
	b = append(b, info...)
	b = append(b, '}')
	mark := len(b)
	b, err := appendResultJSON(b, a.result)
	if err != nil {
		return b[:start], err
	}
	if body := trimJSONSpace(b[mark:]); len(body) > 1 && body[0] == '{' && !bytes.Contains(body, []byte(`"_meta"`)) && !bytes.Contains(body, []byte(`"resultType"`)) {
		// The common case: our own members first, then the result's,
		// its opening brace dropped.
		b = b[:mark+copy(b[mark:], body)]
		if rest := trimJSONSpace(b[mark+1:]); len(rest) > 0 && rest[0] != '}' {
			b[mark] = ','
			return b, nil
		}
		return append(b[:mark], b[mark+1:]...), nil
	}
	raw := json.RawMessage(bytes.Clone(b[mark:]))
	if a.cache {
		raw = prependMember(raw, hint)
	}
	raw = withMeta(raw, []metaEntry{{key: metaServerInfo, value: info}})
	if !bytes.Contains(raw, []byte(`"resultType"`)) || !hasMember(raw, "resultType") {
		raw = prependMember(raw, `"resultType":"complete"`)
	}
	return append(b[:start], raw...), nil
}

// MarshalJSON encodes the answer for whatever marshals a result rather
// than appending it.
func (a *modernAnswer) MarshalJSON() ([]byte, error) { return a.appendResult(nil) }

// prependMember inserts a raw `"key":value` member at the front of a JSON
// object.
func prependMember(obj json.RawMessage, member string) json.RawMessage {
	obj = trimJSONSpace(obj)
	b := make([]byte, 0, len(obj)+len(member)+1)
	b = append(b, '{')
	b = append(b, member...)
	if rest := trimJSONSpace(obj[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, obj[1:]...)
}

func (s *Server) supportedVersions() []string {
	if s.cfg.protocolVersion != "" {
		return []string{s.cfg.protocolVersion}
	}
	return SupportedVersions
}

func (s *Server) discover() *DiscoverResult {
	return &DiscoverResult{
		SupportedVersions: s.supportedVersions(),
		Capabilities:      s.capabilities(LatestVersion),
		Instructions:      s.cfg.server.instructions,
	}
}

func (ss *serverSession) initialize(params json.RawMessage) (any, error) {
	var p initializeParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s := ss.srv
	if pinned := s.cfg.protocolVersion; isModernVersion(pinned) {
		// Pinned to a revision without initialize: refuse it, naming the
		// revision served, as a server of the new revisions only should.
		return nil, NewError(CodeUnsupportedProtocolVersion, "Unsupported protocol version: this server speaks only "+pinned+", which has no initialize",
			map[string]any{"supported": s.supportedVersions(), "requested": p.ProtocolVersion})
	}
	version := LatestLegacyVersion
	if pinned := s.cfg.protocolVersion; pinned != "" && !isModernVersion(pinned) {
		version = pinned
	} else if isSupportedVersion(p.ProtocolVersion) && !isModernVersion(p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	ss.mu.Lock()
	ss.initialized = true
	ss.version = version
	ss.clientCaps = newCapabilitySet(p.Capabilities)
	ss.clientInfo = &p.ClientInfo
	ss.mu.Unlock()
	ss.conn.batchOK.Store(version == Version20250326)
	if err := ss.changed(sessionChange{}); err != nil {
		return nil, err
	}
	return &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(version),
		ServerInfo:      s.info,
		Instructions:    s.cfg.server.instructions,
	}, nil
}

func (ss *serverSession) acceptNotification(string, json.RawMessage) bool { return true }

func (ss *serverSession) isClient() bool { return false }

// notificationHandler returns the server's built-in handling of a
// notification. notifications/initialized needs none: a legacy session is
// usable once initialize was answered.
func (ss *serverSession) notificationHandler(method string) NotificationHandler {
	return nil
}

// dispatch serves a method on either era. A feature's methods exist only
// while the feature is advertised: otherwise they are "method not found",
// as the 2026-07-28 revision requires.
func (ss *serverSession) dispatch(ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error) {
	s := ss.srv
	s.mu.RLock()
	tools, resources, prompts := s.offersTools, s.offersResources, s.offersPrompts
	s.mu.RUnlock()
	switch {
	case req.method == "ping":
		return json.RawMessage("{}"), nil
	case req.method == "logging/setLevel":
		return ss.setLoggingLevel(req.params)
	case req.method == "tools/list" && tools:
		return s.listTools(req.params, info)
	case req.method == "tools/call" && tools:
		return s.callTool(ctx, req.params, info)
	case req.method == "resources/list" && resources:
		return s.listResources(req.params)
	case req.method == "resources/templates/list" && resources:
		return s.listResourceTemplates(req.params)
	case req.method == "resources/read" && resources:
		return s.readResource(ctx, req.params, info)
	case (req.method == "resources/subscribe" || req.method == "resources/unsubscribe") && resources:
		return ss.subscribe(ctx, req.params, req.method == "resources/subscribe")
	case req.method == "prompts/list" && prompts:
		return s.listPrompts(req.params)
	case req.method == "prompts/get" && prompts:
		return s.getPrompt(ctx, req.params, info)
	case req.method == "completion/complete" && s.cfg.server.completion != nil:
		return s.complete(ctx, req.params, info)
	case len(req.method) > 6 && req.method[:6] == "tasks/" && !info.modern && info.version == Version20251125 && s.offersTasksNow():
		return s.cfg.server.tasks.serveLegacy(ss, ctx, req, info)
	case req.method == "subscriptions/listen" && info.modern && (tools || resources || prompts):
		return s.listen(ctx, info)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method}
}

func (s *Server) listTools(params json.RawMessage, info *RequestInfo) (any, error) {
	var keep func(*serverTool) bool
	if hidden := s.hiddenTools(info); hidden != nil {
		keep = func(st *serverTool) bool { return !hidden(st.tool) }
	}
	return listPage(s, &s.tools, "tools", params, keep, func(st *serverTool) *Tool { return st.tool },
		func(items []*Tool, next string) any { return &ListToolsResult{Tools: items, NextCursor: next} })
}

func (s *Server) callTool(ctx context.Context, params json.RawMessage, info *RequestInfo) (any, error) {
	call, st, err := s.findTool(params, info)
	if err != nil {
		return nil, err
	}
	if info.modern && runsAsTask(st.tool) {
		return s.cfg.server.tasks.callAsTask(s, ctx, st, call, info)
	}
	if info.version == Version20251125 && runsAsTask(st.tool) {
		return s.cfg.server.tasks.callAsLegacyTask(s, ctx, st, call, info, params)
	}
	res, err := st.handler(ctx, &call.req)
	return toolOutcome(res, err)
}

// toolCall is a tools/call request and its params, one allocation.
type toolCall struct {
	req CallToolRequest
	p   CallToolParams
}

// findTool reads a tools/call's params and finds the tool it calls.
func (s *Server) findTool(params json.RawMessage, info *RequestInfo) (*toolCall, *serverTool, error) {
	// params is part of a frame the engine validated: scan it rather than
	// decode it, so large arguments are not validated and copied again.
	call := new(toolCall)
	p := &call.p
	var meta json.RawMessage
	var name []byte
	badName := false
	ok := eachMember(params, func(key, value []byte) bool {
		switch string(key) {
		case "name":
			if value[0] != '"' {
				badName = true
				break
			}
			name = value
		case "arguments":
			if string(value) != "null" {
				p.Arguments = value
			}
		case "_meta":
			meta = value
		}
		return true
	})
	if !ok || badName {
		return nil, nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: tools/call needs params {\"name\": string, \"arguments\": object}"}
	}
	p.Meta = userMeta(meta)
	var st *serverTool
	if name != nil {
		s.mu.RLock()
		appOnlyHidden := s.appOnlyHidden
		if bytes.IndexByte(name, '\\') < 0 {
			// The registered name, so that a call allocates none.
			st = s.tools.items[string(name[1:len(name)-1])]
			if st != nil {
				p.Name = st.tool.Name
			}
		} else {
			p.Name = methodName(name)
			st = s.tools.items[p.Name]
		}
		s.mu.RUnlock()
		if st == nil && p.Name == "" {
			p.Name = methodName(name)
		}
		if st != nil && appOnlyHidden != nil {
			if hidden := appOnlyHidden(info); hidden != nil && hidden(st.tool) {
				st = nil // unknown to this client, as tools/list says
			}
		}
	}
	if st == nil {
		return nil, nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown tool %q", p.Name)}
	}
	call.req = CallToolRequest{Params: p, RequestInfo: info}
	return call, st, nil
}

// toolOutcome is the result of a tools/call whose handler returned res and
// err.
func toolOutcome(res *CallToolResult, err error) (any, error) {
	if err != nil {
		// Only an *Error returned as is is a protocol error: one wrapped
		// inside another error (a client's refusal of an ask, say) is the
		// tool's failure, for the model to see.
		if rpcErr, ok := err.(*Error); ok {
			return nil, rpcErr
		}
		if errors.Is(err, ErrInputRequired) {
			return nil, err
		}
		return toolError(err.Error()), nil
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res, nil
}

// TypedToolHandler serves one tools/call of a tool registered with the
// generic [AddTool]: it gets the arguments decoded into In, already
// validated against In's schema with defaults filled in, and returns Out.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *CallToolRequest, in In) (Out, error)

// AddTool registers a tool whose handler takes its arguments as a Go value,
// replacing any tool of the same name.
//
// The tool's input schema is inferred from In (see [SchemaFor]), which must
// be a struct or a map with string keys; struct{} takes no arguments. Unless
// Out is an interface or *CallToolResult, an output schema is inferred from
// Out when it is a struct or a map. A schema already set in t is used
// instead of the inferred one, and for validation.
//
// Before the handler runs, the arguments are validated against the input
// schema, with defaults filled in; a violation becomes a tool result with
// IsError set whose text says what is wrong, so the model can correct
// itself. The handler's Out goes to StructuredContent, with the same JSON as
// a text block for clients that do not read structured content. Where
// encoding/json writes null for a nil slice, map or pointer that the schema
// does not let be null, the result carries [], {} or nothing instead, so it
// always satisfies the advertised schema. An Out of other kinds (a string, a
// slice) is sent as JSON text only. An Out of type *CallToolResult is sent
// as it is, for handlers that want typed arguments and rich content.
//
// A returned error is handled as by a raw [ToolHandler]: an *Error is a
// protocol error, any other error becomes a result with IsError set; an
// error wrapping ErrInputRequired ends the round (2026-07-28).
//
// Like [Server.AddTool], AddTool panics on a mistake in the program: an
// invalid tool name, an In or Out whose schema cannot be inferred, an In
// that is not a JSON object, or a schema in t that is not valid JSON.
func AddTool[In, Out any](s *Server, t Tool, h TypedToolHandler[In, Out]) {
	fail := func(err error) { panic(fmt.Sprintf("mcp: AddTool(%q): %v", t.Name, err)) }
	if err := checkToolName(t.Name); err != nil {
		fail(err)
	}
	inSchema, err := typedInputSchema[In](&t)
	if err != nil {
		fail(err)
	}
	outSchema, err := typedOutputSchema[Out](&t)
	if err != nil {
		fail(err)
	}
	s.AddTool(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		args, err := validateArguments(inSchema, req.Params.Arguments)
		if err != nil {
			return toolError("invalid " + err.Error()), nil
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return toolError("invalid arguments: " + err.Error()), nil
		}
		out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		return typedToolResult(out, outSchema)
	})
}

// typedInputSchema returns the schema In's arguments are validated against:
// t's own, or the one inferred from In, which it then puts in t.
func typedInputSchema[In any](t *Tool) (*Schema, error) {
	if len(t.InputSchema) > 0 {
		var s Schema
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		return &s, nil
	}
	s, err := toolInputSchema(reflect.TypeFor[In]())
	if err != nil {
		return nil, err
	}
	if t.InputSchema, err = json.Marshal(s); err != nil {
		return nil, err
	}
	return s, nil
}

// typedOutputSchema returns the schema of Out's structured content, or nil
// when Out has none: an interface, a *CallToolResult, or a type whose JSON
// is not an object, which the older revisions do not allow as structured
// content.
func typedOutputSchema[Out any](t *Tool) (*Schema, error) {
	outType := reflect.TypeFor[Out]()
	if outType == reflect.TypeFor[*CallToolResult]() {
		return nil, nil
	}
	if len(t.OutputSchema) > 0 {
		var s Schema
		if err := json.Unmarshal(t.OutputSchema, &s); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		return &s, nil
	}
	if outType.Kind() == reflect.Interface {
		return nil, nil
	}
	s, err := schemaForType(outType)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, nil
	}
	if t.OutputSchema, err = json.Marshal(s); err != nil {
		return nil, err
	}
	return s, nil
}

// typedToolResult turns a typed handler's output into its tool result.
func typedToolResult(out any, outSchema *Schema) (*CallToolResult, error) {
	if res, ok := out.(*CallToolResult); ok {
		return res, nil
	}
	raw, err := schemaMarshal(out)
	if err != nil {
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: cannot encode the tool's output: " + err.Error()}
	}
	res := &CallToolResult{}
	if outSchema != nil {
		raw = conformOutput(outSchema, raw)
		if p := trimJSONSpace(raw); len(p) > 0 && p[0] == '{' {
			res.StructuredContent = raw
		}
	}
	res.Content = []Content{TextContent(string(raw))}
	return res, nil
}

// toolError is a tool result reporting a failure the model can act on.
func toolError(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(text)}, IsError: true}
}

// checkToolName reports what is wrong with a tool name, if anything.
func checkToolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("tool name %q must be 1 to 128 characters long", name)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("tool name %q has %q; use only A-Z, a-z, 0-9, '_', '-' and '.'", name, c)
		}
	}
	return nil
}

// PromptHandler serves prompts/get. The server has checked that every
// required argument is present. An *Error is sent as it is; any other
// error is an internal error.
type PromptHandler func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)

// GetPromptRequest is one prompts/get as its handler sees it.
type GetPromptRequest struct {
	Params *GetPromptParams
	*RequestInfo
}

// AddPrompt registers a prompt, replacing any prompt of the same name, and
// advertises prompts. It panics if p.Name is empty.
func (s *Server) AddPrompt(p Prompt, h PromptHandler) {
	if p.Name == "" {
		panic("mcp: AddPrompt: a prompt needs a name")
	}
	register(s, &s.prompts, &s.offersPrompts, "prompts", p.Name, &serverPrompt{prompt: &p, handler: h})
}

// RemovePrompts unregisters the named prompts.
func (s *Server) RemovePrompts(names ...string) {
	unregister(s, &s.prompts, "prompts", names)
}

func (s *Server) listPrompts(params json.RawMessage) (any, error) {
	return listPage(s, &s.prompts, "prompts", params, nil, func(sp *serverPrompt) *Prompt { return sp.prompt },
		func(items []*Prompt, next string) any { return &ListPromptsResult{Prompts: items, NextCursor: next} })
}

func (s *Server) getPrompt(ctx context.Context, params json.RawMessage, info *RequestInfo) (any, error) {
	var p GetPromptParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.RLock()
	sp, ok := s.prompts.get(p.Name)
	s.mu.RUnlock()
	if !ok {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown prompt %q", p.Name)}
	}
	for _, a := range sp.prompt.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: prompt %q needs the argument %q", p.Name, a.Name)}
		}
	}
	res, err := sp.handler(ctx, &GetPromptRequest{Params: &p, RequestInfo: info})
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &GetPromptResult{}
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return res, nil
}

// CompletionHandler serves completion/complete; see [WithCompletionHandler].
// It may return more than 100 values: the client gets the first 100, with
// HasMore set.
type CompletionHandler func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)

// CompleteRequest is one completion/complete as its handler sees it.
type CompleteRequest struct {
	Params *CompleteParams
	*RequestInfo
}

func (s *Server) complete(ctx context.Context, params json.RawMessage, info *RequestInfo) (any, error) {
	var p CompleteParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := s.checkCompletionRef(&p); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	res, err := s.cfg.server.completion(ctx, &CompleteRequest{Params: &p, RequestInfo: info})
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &CompleteResult{}
	}
	c := &res.Completion
	if c.Values == nil {
		c.Values = []string{}
	}
	if n := len(c.Values); n > maxCompletionValues {
		c.Values, c.HasMore, c.Total = c.Values[:maxCompletionValues], true, max(c.Total, n)
	}
	return res, nil
}

// checkCompletionRef checks that a completion names a registered prompt
// and one of its arguments, or a registered resource template and one of
// its variables.
func (s *Server) checkCompletionRef(p *CompleteParams) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch p.Ref.Type {
	case "ref/prompt":
		sp, ok := s.prompts.get(p.Ref.Name)
		if !ok {
			return fmt.Errorf("unknown prompt %q", p.Ref.Name)
		}
		if !slices.ContainsFunc(sp.prompt.Arguments, func(a PromptArgument) bool { return a.Name == p.Argument.Name }) {
			return fmt.Errorf("prompt %q has no argument %q", p.Ref.Name, p.Argument.Name)
		}
	case "ref/resource":
		st, ok := s.templates.get(p.Ref.URI)
		if !ok {
			return fmt.Errorf("unknown resource template %q", p.Ref.URI)
		}
		if !slices.Contains(st.parsed.Variables(), p.Argument.Name) {
			return fmt.Errorf("resource template %q has no variable %q", p.Ref.URI, p.Argument.Name)
		}
	default:
		return fmt.Errorf("unknown reference type %q", p.Ref.Type)
	}
	return nil
}

// cacheHintMembers returns the `"ttlMs":…,"cacheScope":…` members.
func (s *Server) cacheHintMembers() string {
	scope := s.cfg.server.cacheScope
	if scope == "" {
		scope = CacheScopePrivate
	}
	return `"ttlMs":` + strconv.FormatInt(s.cfg.server.cacheTTL.Milliseconds(), 10) + `,"cacheScope":"` + string(scope) + `"`
}

// userMeta decodes a request's _meta for its handler, or returns nil when
// it holds nothing but the members the engine reads itself (the common
// case, which then costs no decoding).
func userMeta(raw json.RawMessage) Meta {
	if !hasUserMeta(raw) {
		return nil
	}
	var m Meta
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// hasUserMeta scans the keys of a _meta object (valid JSON) for one the
// engine does not read.
func hasUserMeta(raw json.RawMessage) bool {
	found := false
	eachMember(raw, func(key, _ []byte) bool {
		switch string(key) {
		case metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel, "progressToken":
		default:
			found = true
		}
		return true
	})
	return found
}
