package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
)

// ErrInputRequired is returned by an ask (Elicit, Sample, ListRoots) on the
// 2026-07-28 revision when the client has not answered it yet. Return it (or
// an error wrapping it) from the handler: the request then ends with an
// input_required result carrying the ask, and the handler runs again from
// the top once the client re-sends the request with the answer. Whatever
// the handler returns in a round that left an ask unanswered is discarded.
var ErrInputRequired = errors.New("mcp: input required from the client")

// ClientGateway is how a server handler talks back to the client that sent
// the request: notifications, progress, log messages, and asks (elicitation,
// sampling, roots). Everything it sends belongs to the request it was
// obtained from, so on Streamable HTTP it rides that request's stream.
type ClientGateway struct {
	req *RequestInfo

	mu           sync.Mutex
	lastProgress float64
	sentProgress bool
}

// Gateway returns the gateway to the client that sent this request.
func (r *RequestInfo) Gateway() *ClientGateway {
	if r.gateway == nil {
		r.gateway = &ClientGateway{req: r}
	}
	return r.gateway
}

// Notify sends a notification to the client, fire and forget: it returns
// once the notification is queued for writing, or ErrStreamClosed when it
// can no longer reach the client. params must encode to a JSON object (or
// be nil); a json.RawMessage or []byte is taken as the JSON it holds.
// Inside a task, which outlives its request, nothing is sent.
func (g *ClientGateway) Notify(method string, params any) error {
	if g.req.task != nil {
		return nil // a task has no request to relate a notification to
	}
	if ctx := g.req.ctx; ctx != nil && g.req.conn.cfg.outbound != nil {
		return streamErr(g.req.conn.notifyThrough(ctx, method, params, g.req.id, g.req.route))
	}
	return streamErr(g.req.conn.notify(method, params, g.req.id, g.req.route))
}

// Progress reports progress on the request, if the client asked for it by
// sending a progress token; otherwise it does nothing. progress must
// increase with every call: a value not above the last one is an error and
// is not sent. total and message may be zero values when unknown. It
// returns ErrStreamClosed when the report can no longer reach the client.
// Inside a task, message becomes the task's status message instead.
func (g *ClientGateway) Progress(progress, total float64, message string) error {
	if t := g.req.task; t != nil {
		t.srv.cfg.server.tasks.setStatusMessage(t, message)
		return nil
	}
	if len(g.req.token) == 0 {
		return nil
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return errorf("progress %g of %g is not a finite number", progress, total)
	}
	g.mu.Lock()
	if g.sentProgress && progress <= g.lastProgress {
		last := g.lastProgress
		g.mu.Unlock()
		return errorf("progress must increase: %g does not follow %g", progress, last)
	}
	g.sentProgress, g.lastProgress = true, progress
	g.mu.Unlock()
	// Built by hand: a long call may send thousands of these.
	b := messageBuffer(96 + len(g.req.token) + len(message))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	b = append(b, g.req.token...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendFloat(b, progress, 'g', -1, 64)
	if total != 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendFloat(b, total, 'g', -1, 64)
	}
	if message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, message)
	}
	b = append(b, "}}"...)
	if g.req.conn.cfg.outbound != nil {
		ctx := g.req.ctx
		if ctx == nil {
			ctx = g.req.conn.baseCtx
		}
		return streamErr(g.req.conn.notifyBuilt(ctx, b, "notifications/progress", g.req.id, g.req.route))
	}
	return streamErr(g.req.conn.queueWrite(outgoing{data: b, related: g.req.id, route: g.req.route}, mayWait))
}

// URLElicitation describes one url-mode elicitation in a
// URLElicitationRequired error.
type URLElicitation struct {
	Mode          string `json:"mode"`
	ElicitationID string `json:"elicitationId"`
	URL           string `json:"url"`
	Message       string `json:"message"`
}

// URLElicitationRequired returns the error (code -32042, 2025-11-25) that
// tells the client the request needs the user to complete these url-mode
// elicitations first.
func URLElicitationRequired(message string, elicitations ...URLElicitation) *Error {
	for i := range elicitations {
		elicitations[i].Mode = ElicitationURL
	}
	return NewError(CodeURLElicitationRequired, message, map[string]any{"elicitations": elicitations})
}

// An AskOption configures one ask (Elicit, ElicitURL, Sample, ListRoots).
type AskOption func(*askOptions)

type askOptions struct {
	key           string
	timeout       time.Duration
	timeoutSet    bool
	elicitationID string
}

// WithKey names an ask. On 2026-07-28 the answer to an ask is filed under
// its key across the rounds of the call; the default key is the ask's kind
// and position in the handler ("elicitation_1", "sampling_2"), which is
// stable only if the handler asks in the same order every time it runs.
func WithKey(key string) AskOption {
	return func(o *askOptions) { o.key = key }
}

// WithAskTimeout replaces the idle bound of one live ask (older revisions),
// for example to give a person more time to answer. On 2026-07-28 the ask
// ends the request instead and the bound does not apply.
func WithAskTimeout(d time.Duration) AskOption {
	return func(o *askOptions) { o.timeout, o.timeoutSet = d, true }
}

// WithElicitationID sets the id of a url-mode elicitation on 2025-11-25, to
// be named later in CompleteElicitation; by default a random one is made.
func WithElicitationID(id string) AskOption {
	return func(o *askOptions) { o.elicitationID = id }
}

// SupportsElicitation reports whether the client declared elicitation.
func (g *ClientGateway) SupportsElicitation() bool { return g.req.caps.has("elicitation") }

// SupportsElicitationURL reports whether the client declared url-mode
// elicitation. A bare elicitation capability declares form mode only.
func (g *ClientGateway) SupportsElicitationURL() bool {
	_, url := g.req.caps.elicitationModes()
	return url
}

// SupportsExtension reports whether the client declared the extension with
// this id under capabilities.extensions (for MCP Apps,
// "io.modelcontextprotocol/ui").
func (g *ClientGateway) SupportsExtension(id string) bool { return g.req.caps.hasSub("extensions", id) }

// SupportsRoots reports whether the client declared roots.
func (g *ClientGateway) SupportsRoots() bool { return g.req.caps.has("roots") }

// SupportsSampling reports whether the client declared sampling.
func (g *ClientGateway) SupportsSampling() bool { return g.req.caps.has("sampling") }

// SupportsSamplingContext reports whether the client declared
// sampling.context, needed for includeContext values other than "none".
func (g *ClientGateway) SupportsSamplingContext() bool {
	return g.req.caps.hasSub("sampling", "context")
}

// SupportsSamplingTools reports whether the client declared sampling.tools;
// a sampling request may carry tools or toolChoice only then.
func (g *ClientGateway) SupportsSamplingTools() bool { return g.req.caps.hasSub("sampling", "tools") }

// Elicit asks the user, through the client, to fill in a form described by
// schema (a flat JSON Schema object: a *Schema, a json.RawMessage or []byte
// holding one, or a map that marshals to one; nil asks for nothing). A
// struct, or a pointer to one, stands for its type: the schema is inferred
// from it as SchemaFor does, so Elicit(ctx, msg, Form{}) asks for a Form's
// fields; a struct that marshals itself (json.Marshaler) is sent as it
// marshals. A schema that is not a JSON object is refused before anything
// is sent. The user may accept, decline or cancel; all three are results.
//
// A client that did not declare form elicitation is not asked: Elicit
// returns an *Error with code CodeMissingRequiredClientCapability, on every
// revision, and sends nothing.
//
// On 2024-11-05 … 2025-11-25 this is a live elicitation/create request,
// bounded by the server's request timeouts and by ctx. On 2026-07-28 the
// first call returns ErrInputRequired: return it, and the handler runs again
// once the client re-sends the request with the answer, which this call
// then returns. See [WithKey].
func (g *ClientGateway) Elicit(ctx context.Context, message string, schema any, opts ...AskOption) (*ElicitResult, error) {
	rawSchema, err := elicitSchema(schema)
	if err != nil {
		return nil, errorf("Elicit: the requested schema: %w", err)
	}
	if len(rawSchema) == 0 {
		rawSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	p := &ElicitParams{Message: message, RequestedSchema: rawSchema}
	if g.req.modern {
		p.Mode = ElicitationForm
	}
	return ask[ElicitResult](ctx, g, "elicitation", "elicitation/create", p, ElicitationForm, opts)
}

// elicitSchema encodes Elicit's schema. A struct or a pointer to one,
// other than a Schema, stands for its type, whose schema is inferred; a
// struct that marshals itself is taken as the JSON it marshals to.
func elicitSchema(schema any) (json.RawMessage, error) {
	switch v := schema.(type) {
	case Schema:
		return marshalObject(&v)
	case json.Marshaler:
		return marshalObject(schema)
	}
	t := reflect.TypeOf(schema)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return marshalObject(schema)
	}
	s, err := schemaForType(t)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("the schema inferred from %v is not a JSON object", t)
	}
	return json.Marshal(s)
}

// ElicitURL sends the user to url to complete an interaction out of band
// (a consent screen, a checkout). The result carries only the user's
// action: accept means the user agreed to open the URL. The client must
// have declared url-mode elicitation; otherwise ElicitURL returns an *Error
// with code CodeMissingRequiredClientCapability before sending anything,
// on every revision.
func (g *ClientGateway) ElicitURL(ctx context.Context, message, url string, opts ...AskOption) (*ElicitResult, error) {
	if err := checkAsk(g.req.caps, "elicitation/create", json.RawMessage(`{"mode":"url"}`)); err != nil {
		return nil, err
	}
	p := &ElicitParams{Mode: ElicitationURL, Message: message, URL: url}
	if !g.req.modern && g.req.version >= Version20251125 {
		var o askOptions
		for _, opt := range opts {
			opt(&o)
		}
		p.ElicitationID = o.elicitationID
		if p.ElicitationID == "" {
			p.ElicitationID = randomID()
		}
	}
	return ask[ElicitResult](ctx, g, "elicitation", "elicitation/create", p, ElicitationURL, opts)
}

// CompleteElicitation tells the client that the url-mode elicitation with
// this id has been completed (notifications/elicitation/complete,
// 2025-11-25 only; on other revisions it sends nothing).
func (g *ClientGateway) CompleteElicitation(elicitationID string) error {
	if g.req.modern || g.req.version < Version20251125 {
		return nil
	}
	return g.Notify("notifications/elicitation/complete", map[string]string{"elicitationId": elicitationID})
}

// Sample asks the client to sample a message from its language model.
// It requires the client's sampling capability, Tools and ToolChoice its
// sampling.tools, an IncludeContext other than "none" its
// sampling.context; without them Sample returns an *Error with code
// CodeMissingRequiredClientCapability and sends nothing, on every
// revision. Like Elicit, it is a live request on the older revisions and
// an ask answered by replay on 2026-07-28.
//
// Deprecated: Sampling is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); call an LLM provider's API
// directly instead. It keeps working on every revision.
func (g *ClientGateway) Sample(ctx context.Context, params *CreateMessageParams, opts ...AskOption) (*CreateMessageResult, error) {
	return ask[CreateMessageResult](ctx, g, "sampling", "sampling/createMessage", params, "", opts)
}

// ListRoots asks the client for its roots: the directories or files the
// server may work on. A client that did not declare roots is not asked:
// ListRoots returns an *Error with code CodeMissingRequiredClientCapability
// on every revision. Like Elicit, it is a live request on the older
// revisions and an ask answered by replay on 2026-07-28.
//
// Deprecated: Roots are deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); pass directories or files
// through tool arguments, resource URIs or server configuration instead.
// It keeps working on every revision.
func (g *ClientGateway) ListRoots(ctx context.Context, opts ...AskOption) (*ListRootsResult, error) {
	return ask[ListRootsResult](ctx, g, "roots", "roots/list", json.RawMessage(`{}`), "", opts)
}

// ask runs one ask on whichever mechanic the request's revision has and
// returns the answer, decoded into a new R.
func ask[R any](ctx context.Context, g *ClientGateway, kind, method string, params any, mode string, opts []AskOption) (*R, error) {
	var o askOptions
	for _, opt := range opts {
		opt(&o)
	}
	raw, err := marshalObject(params)
	if err != nil {
		return nil, errorf("the params of %s: %w", method, err)
	}
	var answer json.RawMessage
	if g.req.modern {
		answer, err = g.replay(kind, method, raw, mode, o)
	} else {
		// Refused before sending, as 2026-07-28 refuses it: the client
		// said it cannot answer.
		if err := checkAsk(g.req.caps, method, raw); err != nil {
			return nil, err
		}
		co := &callOptions{related: g.req.id, route: g.req.route, timeout: o.timeout, timeoutSet: o.timeoutSet}
		if t := g.req.task; t != nil {
			// A 2025-11-25 task's ask relates to the task, not to the
			// request that started it, and makes it input_required.
			raw = withMeta(raw, relatedTask(t.task.ID))
			co.related, co.route = ID{}, nil
			t.setAsking(true)
			defer t.setAsking(false)
		}
		if t := g.req.task; t != nil && g.req.version >= Version20251125 && g.req.caps.taskRequest(method) {
			answer, err = t.srv.cfg.server.tasks.askAsTask(ctx, g.req.conn, method, raw, co, t.task.TTL)
		} else {
			answer, err = g.req.conn.call(ctx, method, raw, co)
		}
		var rpcErr *Error
		if errors.As(err, &rpcErr) {
			// The client's refusal is this handler's error to handle, not a
			// protocol error of the request being served.
			return nil, errorf("the client answered %s with an error: %w", method, err)
		}
	}
	if err != nil {
		return nil, err
	}
	result := new(R)
	if err := json.Unmarshal(answer, result); err != nil {
		return nil, errorf("the client's answer to %s is malformed: %w", method, err)
	}
	return result, nil
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// InputRequiredError is returned by a handler that asks for input itself
// rather than through the gateway: the request ends with an input_required
// result carrying Requests, and State (any JSON value) comes back, signed,
// on the retry, readable with [RequestInfo.State]. On the older revisions
// the server sends the asks as live requests and runs the handler again
// with the answers, readable with [RequestInfo.InputResponse].
type InputRequiredError struct {
	Requests map[string]InputRequest
	State    any
}

// Error implements the error interface.
func (e *InputRequiredError) Error() string {
	return fmt.Sprintf("mcp: input required from the client (%d asks)", len(e.Requests))
}

// Is makes an InputRequiredError match ErrInputRequired.
func (e *InputRequiredError) Is(target error) bool { return target == ErrInputRequired }

// inputRound is one run of a handler serving a request that may ask for
// input: the answers it can use and the asks it left unanswered.
type inputRound struct {
	mu       sync.Mutex
	method   string
	params   json.RawMessage
	owner    string // the principal who sent the request, bound into its states
	binding  string // computed when first needed: most calls never need it
	retry    bool   // the request carried inputResponses or a requestState
	position int32  // the asks this run made, which number their keys
	answers  map[string]json.RawMessage
	used     map[string]json.RawMessage // answers this run consumed; carried forward
	asks     map[string]InputRequest
	payload  json.RawMessage // the handler's state from the previous round
	next     json.RawMessage // the handler's state for the next round
}

func newInputRound(principal, method string, params json.RawMessage) *inputRound {
	return &inputRound{owner: principal, method: method, params: params}
}

// inputRound returns the request's input round. open makes one for a
// request that may ask for input (tools/call, prompts/get, resources/read)
// and has none: a first run, which most often asks nothing, makes none
// until it asks. Under the session's lock, since a handler's goroutines may
// ask at once.
func (r *RequestInfo) inputRound(open bool) *inputRound {
	if ss := r.session; ss != nil {
		ss.mu.Lock()
		defer ss.mu.Unlock()
	}
	if r.round == nil && open && mrtrMethods[r.method] {
		r.round = newInputRound(r.Principal(), r.method, r.params)
	}
	return r.round
}

// bindingLocked digests the request the round belongs to.
func (r *inputRound) bindingLocked() string {
	if r.binding == "" {
		r.binding = requestBinding(r.owner, r.method, r.params)
	}
	return r.binding
}

// openRound reads a 2026-07-28 retry's inputResponses and requestState. A
// state that fails verification, or was minted for another principal, is
// -32602; an inputResponses that is not an object is ignored, so its asks
// are simply asked again.
func (s *Server) openRound(principal, method string, params json.RawMessage) (*inputRound, error) {
	r := newInputRound(principal, method, params)
	var p struct {
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   *string         `json:"requestState"`
	}
	_ = json.Unmarshal(params, &p)
	if p.RequestState != nil {
		st, err := s.stateCodec().open(*p.RequestState, r.bindingLocked())
		if err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
		}
		for k, v := range st.Answers {
			putEntry(&r.answers, k, v)
		}
		r.payload = st.Payload
		r.retry = true
	}
	var responses map[string]json.RawMessage
	if json.Unmarshal(p.InputResponses, &responses) == nil && responses != nil {
		for k, v := range responses {
			putEntry(&r.answers, k, v)
		}
		r.retry = true
	}
	return r, nil
}

func (s *Server) stateCodec() stateCodec {
	key := s.cfg.server.stateKey
	if key == nil {
		key = processStateKey
	}
	return stateCodec{key: key, ttl: s.cfg.server.stateTTL}
}

// replay is an ask on 2026-07-28: answered from this round's answers if the
// client already gave one, else recorded so the request ends as
// input_required.
func (g *ClientGateway) replay(kind, method string, params json.RawMessage, mode string, o askOptions) (json.RawMessage, error) {
	r := g.req.inputRound(true)
	if r == nil {
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: on protocol revision 2026-07-28 a server can ask the client for input only while serving tools/call, prompts/get or resources/read"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.position++
	key := o.key
	if key == "" {
		key = fmt.Sprintf("%s_%d", kind, r.position)
	}
	if answer, ok := r.answers[key]; ok && validAnswer(kind, mode, answer) {
		putEntry(&r.used, key, answer)
		return answer, nil
	}
	if err := checkAsk(g.req.caps, method, params); err != nil {
		return nil, err
	}
	putEntry(&r.asks, key, InputRequest{Method: method, Params: params})
	return nil, fmt.Errorf("%w: %s", ErrInputRequired, key)
}

// validAnswer reports whether an inputResponses entry is a well-formed
// answer to an ask of this kind; a malformed one is asked again.
func validAnswer(kind, mode string, raw json.RawMessage) bool {
	switch kind {
	case "elicitation":
		var a struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &a) != nil {
			return false
		}
		switch a.Action {
		case ActionDecline, ActionCancel:
			return true
		case ActionAccept:
			hasContent := len(a.Content) > 0 && string(a.Content) != "null"
			if mode == ElicitationURL {
				return !hasContent
			}
			// A form accepted with no content is an empty form: a Go
			// client's empty Content map is left out of its JSON.
			var obj map[string]json.RawMessage
			return !hasContent || json.Unmarshal(a.Content, &obj) == nil
		}
		return false
	case "sampling":
		var a CreateMessageResult
		return json.Unmarshal(raw, &a) == nil && a.Role != "" && len(a.Content) > 0
	case "roots":
		var a struct {
			Roots *[]Root `json:"roots"`
		}
		return json.Unmarshal(raw, &a) == nil && a.Roots != nil
	}
	return false
}

// missingCapabilities returns the client capabilities an ask needs that the
// request did not declare, or nil.
func missingCapabilities(caps capabilitySet, method string, params json.RawMessage) map[string]any {
	empty := map[string]any{}
	switch method {
	case "elicitation/create":
		var p struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(params, &p)
		form, url := caps.elicitationModes()
		if p.Mode == ElicitationURL && !url {
			return map[string]any{"elicitation": map[string]any{"url": empty}}
		}
		if p.Mode != ElicitationURL && !form {
			return map[string]any{"elicitation": map[string]any{"form": empty}}
		}
	case "sampling/createMessage":
		var p struct {
			Tools          json.RawMessage `json:"tools"`
			ToolChoice     json.RawMessage `json:"toolChoice"`
			IncludeContext string          `json:"includeContext"`
		}
		_ = json.Unmarshal(params, &p)
		if !caps.has("sampling") {
			return map[string]any{"sampling": empty}
		}
		if (len(p.Tools) > 0 && string(p.Tools) != "null" || len(p.ToolChoice) > 0 && string(p.ToolChoice) != "null") && !caps.hasSub("sampling", "tools") {
			return map[string]any{"sampling": map[string]any{"tools": empty}}
		}
		if p.IncludeContext != "" && p.IncludeContext != "none" && !caps.hasSub("sampling", "context") {
			return map[string]any{"sampling": map[string]any{"context": empty}}
		}
	case "roots/list":
		if !caps.has("roots") {
			return map[string]any{"roots": empty}
		}
	}
	return nil
}

// inputRequiredResult is the 2026-07-28 result of a round that needs input.
type inputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// finishRound turns a handler's outcome into the request's answer on
// 2026-07-28: if any ask of the round is unanswered, the request ends as
// input_required, whatever the handler returned.
func (s *Server) finishRound(info *RequestInfo, result any, err error) (any, error) {
	if err == nil && info.inputRound(false) == nil {
		return result, nil // a first run that asked nothing
	}
	r, caps := info.inputRound(true), info.caps
	r.mu.Lock()
	defer r.mu.Unlock()
	asks := r.asks
	if len(asks) == 0 && err == nil {
		return result, nil // before own, which errors.As would move to the heap
	}
	var own *InputRequiredError
	if len(asks) == 0 && errors.As(err, &own) {
		if err := checkAsks(caps, own.Requests); err != nil {
			return nil, err
		}
		asks = own.Requests
		if own.State != nil {
			payload, merr := json.Marshal(own.State)
			if merr != nil {
				return nil, errorf("encoding the handler's state: %w", merr)
			}
			r.next = payload
		}
	}
	if len(asks) == 0 {
		if errors.Is(err, ErrInputRequired) {
			return nil, &Error{Code: CodeInternalError, Message: "Internal error: the handler reported input required without asking for any"}
		}
		return result, err
	}
	state := &sealedState{Binding: r.bindingLocked(), Answers: r.used, Payload: r.next}
	if len(state.Answers) == 0 {
		state.Answers = nil
	}
	return &inputRequiredResult{ResultType: resultInputRequired, InputRequests: asks, RequestState: s.stateCodec().seal(state)}, nil
}

// InputResponse returns the client's answer to the ask named key, if this
// run of the handler has one: from the retry's inputResponses or carried in
// its requestState on 2026-07-28, or gathered by live requests on the older
// revisions after the handler returned an InputRequiredError.
func (r *RequestInfo) InputResponse(key string) (json.RawMessage, bool) {
	round := r.inputRound(false)
	if round == nil {
		return nil, false
	}
	round.mu.Lock()
	defer round.mu.Unlock()
	answer, ok := round.answers[key]
	if ok {
		putEntry(&round.used, key, answer)
	}
	return answer, ok
}

// State decodes into v the state the handler carried from its previous
// round (see SetState and InputRequiredError.State). It reports false on a
// first round.
func (r *RequestInfo) State(v any) (bool, error) {
	round := r.inputRound(false)
	if round == nil || len(round.payload) == 0 {
		return false, nil
	}
	return true, json.Unmarshal(round.payload, v)
}

// SetState sets the state (any JSON value) to carry, signed, to the next
// round if this run ends asking for input.
func (r *RequestInfo) SetState(v any) error {
	round := r.inputRound(true)
	if round == nil {
		return errors.New("mcp: no input round: SetState needs a tools/call, prompts/get or resources/read request")
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	round.mu.Lock()
	round.next = payload
	round.mu.Unlock()
	return nil
}

// maxShimRounds bounds how often the older revisions re-run a handler that
// keeps returning InputRequiredError, and how often a task's handler runs
// again after asking, on every revision.
const maxShimRounds = 8

// errKeptAsking is the error of a handler that still asks for input after
// maxShimRounds rounds.
func errKeptAsking() *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: the handler kept asking for input"}
}

// checkAsks returns the -32021 error of the first ask the client did not
// declare the capability for, or nil.
func checkAsks(caps capabilitySet, asks map[string]InputRequest) *Error {
	for _, ask := range asks {
		if err := checkAsk(caps, ask.Method, ask.Params); err != nil {
			return err
		}
	}
	return nil
}

// checkAsk returns the -32021 error of an ask the client did not declare
// the capability for, or nil.
func checkAsk(caps capabilitySet, method string, params json.RawMessage) *Error {
	missing := missingCapabilities(caps, method, params)
	if missing == nil {
		return nil
	}
	return NewError(CodeMissingRequiredClientCapability, "Missing required client capability for "+method, map[string]any{"requiredCapabilities": missing})
}

// runLegacyShim serves, on the older revisions, a handler that returns
// InputRequiredError: each ask goes out as a live request, the answers are
// gathered (an ask the client refuses is skipped), and the handler runs
// again with them.
func (ss *serverSession) runLegacyShim(ctx context.Context, req *inboundRequest, info *RequestInfo) (any, error) {
	// The first round on a frame of its own: the handler runs below it,
	// and the rounds that follow an ask need a larger one (shimRounds).
	result, err := ss.dispatch(ctx, req, info)
	if err == nil {
		return result, nil
	}
	return ss.shimRounds(ctx, req, info, result, err)
}

// shimRounds goes on from a round of runLegacyShim that ended in err: an
// InputRequiredError's asks are sent as requests, and the handler runs
// again with their answers.
func (ss *serverSession) shimRounds(ctx context.Context, req *inboundRequest, info *RequestInfo, result any, err error) (any, error) {
	for round := 0; ; round++ {
		if round > 0 {
			if result, err = ss.dispatch(ctx, req, info); err == nil {
				return result, nil
			}
		}
		var own *InputRequiredError
		if !errors.As(err, &own) {
			return result, err
		}
		if round == maxShimRounds {
			return nil, errKeptAsking()
		}
		if err := checkAsks(info.caps, own.Requests); err != nil {
			return nil, err
		}
		next := newInputRound(info.Principal(), req.method, req.params)
		for key, ask := range own.Requests {
			answer, err := req.conn.call(ctx, ask.Method, ask.Params, &callOptions{related: req.id, route: req.route})
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				continue
			}
			putEntry(&next.answers, key, answer)
		}
		if own.State != nil {
			next.payload, _ = json.Marshal(own.State)
		} else if info.round != nil {
			next.payload = info.round.next // set with SetState
		}
		info.round = next
	}
}
