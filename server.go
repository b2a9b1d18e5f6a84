package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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
	events           EventOptions              // WithEvents
	maxListens       int                       // WithMaxListenStreams; 0: the default, <0: none
	// eventWebhooks makes a server's webhook delivery (WithWebhooks); nil: none.
	eventWebhooks func(*Server, *serverEvents) eventWebhooks
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
	// skills: what AddSkills serves (skills.go), which answers the
	// extension's methods; nil: no skills.
	skills skillsServer
	// events are the declared event types (AddEventType), which also set
	// serveEvents, the hook that serves events/* (nil: not offered).
	events      *serverEvents
	serveEvents func(context.Context, *serverSession, *inboundRequest, *RequestInfo) (any, error)

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

// NewServer returns a server that introduces itself as info.
func NewServer(info Implementation, opts ...ServerOption) *Server {
	cfg := newConfig()
	cfg.server = serverConfig{pageSize: DefaultPageSize, stateTTL: DefaultStateTTL}
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
	if s.skills != nil {
		caps.addExtension(SkillsExtension)
		caps.Extensions[SkillsExtension] = json.RawMessage(`{"directoryRead":true}`)
	}
	if s.serveEvents != nil {
		caps.addExtension(EventsExtension)
		caps.Extensions[EventsExtension] = json.RawMessage(`{"listChanged":true}`)
	}
	return caps
}

// skillsServer answers the methods of the Skills extension; AddSkills
// (skills.go) makes the one there is, so that a server without skills
// links none of it.
type skillsServer interface {
	serve(s *Server, method string, params json.RawMessage, info *RequestInfo) (any, error)
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
	// anonOwner owns the tasks and streams of the session's anonymous
	// requests (anonymousOwner, subscriptions.go); made on first use,
	// under mu.
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
	info.caps = capabilitiesOf(env.Meta.ClientCapabilities)
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
		if env.hasInput {
			if info.round, err = ss.srv.openRound(ss.principal, req.method, req.params); err != nil {
				return nil, err
			}
		}
		result, err = ss.dispatch(ctx, req, info)
		result, err = ss.srv.finishRound(info, result, err)
	default:
		result, err = ss.dispatch(ctx, req, info)
	}
	if err != nil {
		return nil, err
	}
	// The result of a round that carried input depends on that input:
	// never cacheable.
	round := info.inputRound(false)
	retry := round != nil && round.retry
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

func (ss *serverSession) takeNotification(string, json.RawMessage) bool { return false }

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
	skills := s.skills
	serveEvents := s.serveEvents
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
	case skills != nil && (req.method == "skills/list" || req.method == "skills/get" || req.method == "resources/directory/read"):
		return skills.serve(s, req.method, req.params, info)
	case req.method == "subscriptions/listen" && info.modern && (tools || resources || prompts || serveEvents != nil):
		return s.listen(ctx, info)
	case len(req.method) > 7 && req.method[:7] == "events/" && serveEvents != nil:
		return serveEvents(ctx, ss, req, info)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method}
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
