package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
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
}

// WithInstructions sets the instructions a server gives clients on how to
// use it.
func WithInstructions(s string) Option {
	return func(c *config) { c.server.instructions = s }
}

// WithPageSize sets how many items a server puts in one page of tools/list,
// resources/list, resources/templates/list and prompts/list (default 100).
func WithPageSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.server.pageSize = n
		}
	}
}

// ToolHandler serves one tools/call. Returning an error that is an *Error
// sends it as a protocol error; any other error becomes a tool result with
// IsError set and the error's text, so the model can correct itself.
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
	id       ID
	method   string
	version  string
	modern   bool
	caps     capabilitySet
	token    json.RawMessage // progress token, raw; nil when none
	logLevel string
	session  *serverSession
	conn     *conn
	route    any
	gateway  *ClientGateway
	round    *inputRound // the asks and answers of a call that may need input
}

// ProtocolVersion returns the protocol revision the request is served under.
func (r *RequestInfo) ProtocolVersion() string { return r.version }

// ID returns the request's JSON-RPC id.
func (r *RequestInfo) ID() ID { return r.id }

// Server serves tools, resources and prompts to MCP clients. One Server can
// serve many connections at once, each on either protocol era.
type Server struct {
	info Implementation
	cfg  *config

	mu        sync.RWMutex
	tools     map[string]*serverTool
	toolOrder []string
}

type serverTool struct {
	tool    *Tool
	handler ToolHandler
}

// NewServer returns a server that introduces itself as info.
func NewServer(info Implementation, opts ...Option) *Server {
	return &Server{info: info, cfg: newConfig(opts), tools: make(map[string]*serverTool)}
}

// AddTool registers a tool with a raw handler, replacing any tool of the same
// name. The handler sees the arguments as sent; nothing validates them.
func (s *Server) AddTool(t Tool, h ToolHandler) {
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	s.mu.Lock()
	if _, ok := s.tools[t.Name]; !ok {
		s.toolOrder = append(s.toolOrder, t.Name)
	}
	s.tools[t.Name] = &serverTool{tool: &t, handler: h}
	s.mu.Unlock()
}

// RemoveTools unregisters the named tools.
func (s *Server) RemoveTools(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		delete(s.tools, n)
	}
	s.toolOrder = slices.DeleteFunc(s.toolOrder, func(n string) bool { return slices.Contains(names, n) })
	s.mu.Unlock()
}

// Serve serves one client over t until the client goes away or ctx ends. It
// returns nil when the client closed the connection.
func (s *Server) Serve(ctx context.Context, t Transport) error {
	ss := &serverSession{srv: s}
	c := newConn(t, s.cfg, ss)
	ss.conn = c
	if err := c.start(ctx); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.close(context.Cause(ctx)) })
	defer stop()
	<-c.done
	c.wg.Wait()
	c.mu.Lock()
	cause := c.closeErr
	c.mu.Unlock()
	if errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrClosedPipe) {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return cause
}

// capabilities reports what is registered; nothing is advertised that is
// not served.
func (s *Server) capabilities() ServerCapabilities {
	var caps ServerCapabilities
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.tools) > 0 {
		caps.Tools = &ListChangedCapability{ListChanged: true}
	}
	return caps
}

// serverSession is one connection's state on the server side. Legacy
// clients initialize it; modern requests carry their own state and leave it
// alone.
type serverSession struct {
	srv  *Server
	conn *conn

	mu          sync.Mutex
	initialized bool
	version     string
	clientCaps  capabilitySet
	clientInfo  Implementation
	logLevel    string
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
}

// Methods removed from the 2026-07-28 revision.
var legacyOnlyMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

func (ss *serverSession) handleRequest(ctx context.Context, req *inboundRequest) (any, error) {
	var env requestEnvelope
	if len(req.params) > 0 {
		if err := json.Unmarshal(req.params, &env); err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
		}
	}
	info := &RequestInfo{id: req.id, method: req.method, session: ss, conn: req.conn, route: req.route}
	if env.Meta.ProtocolVersion != nil {
		return ss.handleModern(ctx, req, info, &env)
	}
	switch req.method {
	case "initialize":
		return ss.initialize(req.params)
	case "ping":
		return json.RawMessage("{}"), nil
	case "server/discover":
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: server/discover needs _meta[\"" + metaProtocolVersion + "\"]"}
	}
	ss.mu.Lock()
	initialized, version, caps, level := ss.initialized, ss.version, ss.clientCaps, ss.logLevel
	ss.mu.Unlock()
	if !initialized {
		return nil, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: the session is not initialized; send initialize first"}
	}
	info.version, info.caps, info.logLevel = version, caps, level
	info.token = env.Meta.ProgressToken
	if mrtrMethods[req.method] {
		return ss.runLegacyShim(ctx, req, info)
	}
	return ss.dispatch(ctx, req, info)
}

func (ss *serverSession) handleModern(ctx context.Context, req *inboundRequest, info *RequestInfo, env *requestEnvelope) (any, error) {
	v := *env.Meta.ProtocolVersion
	if !isModernVersion(v) || !isSupportedVersion(v) || (ss.srv.cfg.protocolVersion != "" && v != ss.srv.cfg.protocolVersion) {
		return nil, NewError(CodeUnsupportedProtocolVersion, "Unsupported protocol version",
			map[string]any{"supported": ss.srv.supportedVersions(), "requested": v})
	}
	if len(env.Meta.ClientCapabilities) == 0 {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: missing required _meta[\"" + metaClientCapabilities + "\"]"}
	}
	if legacyOnlyMethods[req.method] {
		return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method + " is not part of protocol revision " + v}
	}
	info.version, info.modern = v, true
	info.caps = newCapabilitySet(env.Meta.ClientCapabilities)
	info.token = env.Meta.ProgressToken
	info.logLevel = env.Meta.LogLevel
	var result any
	var err error
	switch {
	case req.method == "server/discover":
		result = ss.srv.discover()
	case mrtrMethods[req.method]:
		if info.round, err = ss.srv.openRound(req.method, req.params); err != nil {
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
	return ss.srv.modernResult(result)
}

// modernResult adds resultType and serverInfo to a 2026-07-28 result.
func (s *Server) modernResult(result any) (json.RawMessage, error) {
	raw, err := marshalResult(result)
	if err != nil {
		return nil, err
	}
	raw = withMeta(raw, []metaEntry{{key: metaServerInfo, value: s.infoJSON()}})
	if !bytes.Contains(raw, []byte(`"resultType"`)) || !jsonHasKey(raw, "resultType") {
		raw = prependMember(raw, `"resultType":"complete"`)
	}
	return raw, nil
}

func (s *Server) infoJSON() json.RawMessage {
	b, _ := json.Marshal(s.info)
	return b
}

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

// jsonHasKey reports whether a JSON object has a top-level member key.
func jsonHasKey(obj json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
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
		Capabilities:      s.capabilities(),
		Instructions:      s.cfg.server.instructions,
	}
}

func (ss *serverSession) initialize(params json.RawMessage) (any, error) {
	var p initializeParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s := ss.srv
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
	ss.clientInfo = p.ClientInfo
	ss.mu.Unlock()
	ss.conn.batchOK.Store(version == Version20250326)
	return &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(),
		ServerInfo:      s.info,
		Instructions:    s.cfg.server.instructions,
	}, nil
}

// notificationHandler returns the server's built-in handling of a
// notification. notifications/initialized needs none: a legacy session is
// usable once initialize was answered.
func (ss *serverSession) notificationHandler(method string) NotificationHandler {
	return nil
}

// dispatch serves a method on either era.
func (ss *serverSession) dispatch(ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error) {
	s := ss.srv
	switch req.method {
	case "ping":
		return json.RawMessage("{}"), nil
	case "tools/list":
		return s.listTools()
	case "tools/call":
		return s.callTool(ctx, req.params, info)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + req.method}
}

func (s *Server) listTools() (*ListToolsResult, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	res := &ListToolsResult{Tools: make([]*Tool, 0, len(s.toolOrder))}
	for _, n := range s.toolOrder {
		res.Tools = append(res.Tools, s.tools[n].tool)
	}
	return res, nil
}

func (s *Server) callTool(ctx context.Context, params json.RawMessage, info *RequestInfo) (any, error) {
	var p CallToolParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.RLock()
	st := s.tools[p.Name]
	s.mu.RUnlock()
	if st == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown tool %q", p.Name)}
	}
	res, err := st.handler(ctx, &CallToolRequest{Params: &p, RequestInfo: info})
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
		return &CallToolResult{Content: []Content{TextContent(err.Error())}, IsError: true}, nil
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res, nil
}
