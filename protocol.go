package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
)

// Reserved _meta keys of the 2026-07-28 revision.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// metaAnnouncement names, on a listen stream's notification, the change
	// it announces, the same on every stream that carries it (this SDK's
	// own, not the protocol's).
	metaAnnouncement = "com.github.e6ac58cb.mcp/announcement"
)

// Meta is the _meta member of params and results: free-form metadata keyed by
// reverse-DNS-prefixed names.
type Meta map[string]any

// metaEntry is one _meta member to splice into outgoing params.
type metaEntry struct {
	key   string
	value json.RawMessage
}

// encodeRequestMeta writes a request whose params get the _meta entries,
// splicing them in while writing the message rather than copying params
// twice.
func encodeRequestMeta(id ID, method string, params json.RawMessage, entries []metaEntry) []byte {
	p := trimJSONSpace(params)
	if len(entries) == 0 || len(p) < 2 || p[0] != '{' || hasMember(p, "_meta") {
		return encodeRequest(id, method, withMeta(params, entries))
	}
	size := len(p) + len(method) + 64
	for _, e := range entries {
		size += len(e.key) + len(e.value) + 8
	}
	b := appendRequestHead(messageBuffer(size), id, method)
	b = append(b, `,"params":`...)
	b = appendMetaSplice(b, p, entries)
	return append(b, '}')
}

// appendMetaSplice appends the JSON object obj (which has no _meta) with a
// _meta member made of entries put first.
func appendMetaSplice(b, obj []byte, entries []metaEntry) []byte {
	b = append(b, `{"_meta":{`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.key)
		b = append(b, ':')
		b = append(b, e.value...)
	}
	b = append(b, '}')
	if rest := trimJSONSpace(obj[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, obj[1:]...)
}

// withMeta adds entries to the _meta object of a JSON params object, creating
// params or _meta as needed. Entries win over keys already present.
func withMeta(params json.RawMessage, entries []metaEntry) json.RawMessage {
	if len(entries) == 0 {
		return params
	}
	p := trimJSONSpace(params)
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	if !bytes.Contains(p, []byte(`"_meta"`)) && p[0] == '{' {
		size := len(p) + 16
		for _, e := range entries {
			size += len(e.key) + len(e.value) + 8
		}
		return appendMetaSplice(make([]byte, 0, size), p, entries)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if raw, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage, len(entries))
	}
	for _, e := range entries {
		meta[e.key] = e.value
	}
	obj["_meta"], _ = json.Marshal(meta)
	out, _ := json.Marshal(obj)
	return out
}

// Implementation names a client or server program.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an image a client may show for a server, tool, resource or prompt.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// ClientCapabilities is what a client declares it can do. A capability is
// declared by the presence of its member: a non-nil pointer, even to an
// empty struct.
type ClientCapabilities struct {
	Experimental map[string]any         `json:"experimental,omitempty"`
	Roots        *RootsCapability       `json:"roots,omitempty"`
	Sampling     *SamplingCapability    `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitempty"`
	// Tasks is the tasks capability of 2025-11-25 (experimental): which
	// task-augmented requests the client serves, and whether it serves
	// tasks/list and tasks/cancel. Both sides: a client declares it (see
	// WithTaskRequests), a server reads it.
	Tasks      json.RawMessage            `json:"tasks,omitempty"`
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// RootsCapability declares that the client answers roots/list.
type RootsCapability struct {
	// ListChanged declares notifications/roots/list_changed (before
	// 2026-07-28).
	ListChanged bool `json:"listChanged,omitempty"`
}

// SamplingCapability declares that the client answers sampling/createMessage.
type SamplingCapability struct {
	// Context declares support for includeContext values other than "none".
	Context *struct{} `json:"context,omitempty"`
	// Tools declares support for tools and toolChoice in sampling requests.
	Tools *struct{} `json:"tools,omitempty"`
}

// ElicitationCapability declares that the client answers elicitation/create.
// An empty one declares form mode only.
type ElicitationCapability struct {
	Form *struct{} `json:"form,omitempty"`
	URL  *struct{} `json:"url,omitempty"`
}

// ServerCapabilities is what a server declares it offers.
type ServerCapabilities struct {
	Experimental map[string]any         `json:"experimental,omitempty"`
	Logging      *struct{}              `json:"logging,omitempty"`
	Completions  *struct{}              `json:"completions,omitempty"`
	Prompts      *ListChangedCapability `json:"prompts,omitempty"`
	Resources    *ResourcesCapability   `json:"resources,omitempty"`
	Tools        *ListChangedCapability `json:"tools,omitempty"`
	// Tasks is the tasks capability of 2025-11-25 (experimental): which
	// task methods and task-augmented requests the server serves. Both
	// sides: a server declares it, a client reads it.
	Tasks      json.RawMessage            `json:"tasks,omitempty"`
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// addExtension declares the extension id, with no settings, in a copy of
// the extensions c shares with the server's configuration.
func (c *ServerCapabilities) addExtension(id string) {
	ext := make(map[string]json.RawMessage, len(c.Extensions)+1)
	maps.Copy(ext, c.Extensions)
	ext[id] = json.RawMessage("{}")
	c.Extensions = ext
}

// ListChangedCapability declares a feature and whether its list_changed
// notification is sent.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability declares resources, subscriptions and list_changed.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// initializeParams is the legacy handshake's request.
type initializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

// InitializeResult is the server's answer to the legacy handshake.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// DiscoverResult is the answer to server/discover (2026-07-28).
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	Meta              Meta               `json:"_meta,omitempty"`
}

// Result types of 2026-07-28.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
)

// Tool describes a tool a server offers.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	// Execution says how the tool runs: whether as a task (see
	// TaskSupport); nil means never.
	Execution *ToolExecution `json:"execution,omitempty"`
	Icons     []Icon         `json:"icons,omitempty"`
	Meta      Meta           `json:"_meta,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour. Clients must not trust
// them unless they trust the server.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// CallToolResult is the result of tools/call. A tool that failed sets
// IsError and explains in Content, so the model can correct itself.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Meta is the result's _meta. A client leaves it nil when the server
	// sent nothing there but its io.modelcontextprotocol/serverInfo
	// (2026-07-28), which Client.ServerInfo reports.
	Meta Meta `json:"_meta,omitempty"`
}

// listParams are the params of the list methods.
type listParams struct {
	Cursor string `json:"cursor"`
}

// ListToolsResult is the result of tools/list.
type ListToolsResult struct {
	Tools      []*Tool `json:"tools"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// Content is one block of a tool result, prompt message or sampling message:
// text, image, audio, resource_link or an embedded resource. Type says which
// fields are set.
type Content struct {
	Type string `json:"type"`
	// Text is set for "text".
	Text string `json:"text,omitempty"`
	// Data is base64 for "image" and "audio".
	Data     string `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	// URI, Name, Title, Description and Size describe a "resource_link".
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Resource is set for "resource" (an embedded resource).
	Resource *ResourceContents `json:"resource,omitempty"`
	// ID, Name and Input describe a "tool_use" in sampling (ID is the call's
	// id); ToolUseID, Content, StructuredContent and IsError a "tool_result".
	ID                string          `json:"id,omitempty"`
	Input             json.RawMessage `json:"input,omitempty"`
	ToolUseID         string          `json:"toolUseId,omitempty"`
	Content           []Content       `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Annotations       *Annotations    `json:"annotations,omitempty"`
	Meta              Meta            `json:"_meta,omitempty"`
}

// withTexts returns r ready for encoding/json: r itself, or, when a text
// block's text is empty, a view of r that writes that text member anyway.
// The protocol requires it, and peers that check the schema reject a text
// block without one; Content's omitempty would drop it.
func (r *CallToolResult) withTexts() any {
	for i := range r.Content {
		if c := &r.Content[i]; c.Type == "text" && c.Text == "" {
			blocks := make([]textedContent, len(r.Content))
			for j := range r.Content {
				blocks[j] = textedContent(r.Content[j])
			}
			return struct {
				*CallToolResult
				Content []textedContent `json:"content"` // shadows r's
			}{r, blocks}
		}
	}
	return r
}

// textedContent is a Content that writes a text block's text even when it
// is empty.
type textedContent Content

func (c textedContent) MarshalJSON() ([]byte, error) {
	if c.Type != "text" || c.Text != "" {
		return json.Marshal(Content(c))
	}
	return json.Marshal(struct {
		Content
		Text string `json:"text"` // shadows Content's, which omits ""
	}{Content: Content(c)})
}

// TextContent returns a text content block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ImageContent returns an image content block; data is base64.
func ImageContent(data, mimeType string) Content {
	return Content{Type: "image", Data: data, MIMEType: mimeType}
}

// AudioContent returns an audio content block; data is base64.
func AudioContent(data, mimeType string) Content {
	return Content{Type: "audio", Data: data, MIMEType: mimeType}
}

// ResourceLinkContent returns a resource_link content block.
func ResourceLinkContent(uri, name, mimeType string) Content {
	return Content{Type: "resource_link", URI: uri, Name: name, MIMEType: mimeType}
}

// EmbeddedResourceContent returns an embedded resource content block.
func EmbeddedResourceContent(r ResourceContents) Content {
	return Content{Type: "resource", Resource: &r}
}

// Annotations tell a client how to use a content block or resource.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// ResourceContents is the content of a resource: Text or Blob (base64).
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// MarshalJSON writes text contents with their text member even when empty,
// and blob contents with their blob member.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	type plain struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType,omitempty"`
		Text     *string `json:"text,omitempty"`
		Blob     *string `json:"blob,omitempty"`
		Meta     Meta    `json:"_meta,omitempty"`
	}
	p := plain{URI: r.URI, MIMEType: r.MIMEType, Meta: r.Meta}
	if r.Blob != "" {
		p.Blob = &r.Blob
	} else {
		p.Text = &r.Text
	}
	return json.Marshal(p)
}

// capabilitySet answers capability questions with the seed's presence
// semantics over the JSON form of a capabilities object, whatever Go value
// it came from. It decodes only when first asked: most requests never ask.
type capabilitySet = *lazyCapabilities

type lazyCapabilities struct {
	raw  json.RawMessage
	once sync.Once
	m    map[string]json.RawMessage
}

func newCapabilitySet(v any) capabilitySet {
	var raw []byte
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return capabilitiesOf(x)
	case []byte:
		raw = x
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	return &lazyCapabilities{raw: raw}
}

// capabilitiesOf is newCapabilitySet for capabilities as JSON. The empty
// object, which most clients send, gives one shared set.
func capabilitiesOf(raw json.RawMessage) capabilitySet {
	if string(raw) == "{}" {
		return noCapabilities
	}
	return &lazyCapabilities{raw: raw}
}

// noCapabilities is the set of a peer that declares none; it is only read.
var noCapabilities = &lazyCapabilities{raw: json.RawMessage("{}")}

func (s *lazyCapabilities) members() map[string]json.RawMessage {
	if s == nil {
		return nil
	}
	s.once.Do(func() { _ = json.Unmarshal(s.raw, &s.m) })
	return s.m
}

// has reports whether the capability's key is present, whatever its value.
func (s capabilitySet) has(name string) bool {
	_, ok := s.members()[name]
	return ok
}

// hasSub reports whether capability name holds an object with member sub.
func (s capabilitySet) hasSub(name, sub string) bool {
	raw, ok := s.members()[name]
	if !ok {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	_, ok = obj[sub]
	return ok
}

// elicitationModes reports which elicitation modes are declared: a bare
// elicitation object declares form mode only.
func (s capabilitySet) elicitationModes() (form, url bool) {
	if !s.has("elicitation") {
		return false, false
	}
	form, url = s.hasSub("elicitation", "form"), s.hasSub("elicitation", "url")
	if !form && !url {
		form = true
	}
	return form, url
}

func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: %v", err)}
	}
	return nil
}

// Resource describes a resource a server offers: data a client reads by URI.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	// Size is the size in bytes of the raw content, when known.
	Size  *int64 `json:"size,omitempty"`
	Icons []Icon `json:"icons,omitempty"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources whose URIs follow an RFC
// 6570 template, such as "file:///{+path}".
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ListResourcesResult is the result of resources/list.
type ListResourcesResult struct {
	Resources  []*Resource `json:"resources"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// ListResourceTemplatesResult is the result of resources/templates/list.
type ListResourceTemplatesResult struct {
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	URI  string `json:"uri"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ReadResourceResult is the result of resources/read: the contents of the
// resource, or of several (the files of a directory, say).
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     Meta               `json:"_meta,omitempty"`
}

// Prompt describes a prompt template a server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        Meta             `json:"_meta,omitempty"`
}

// PromptArgument describes one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Required arguments must be present in every prompts/get.
	Required bool `json:"required,omitempty"`
}

// ListPromptsResult is the result of prompts/list.
type ListPromptsResult struct {
	Prompts    []*Prompt `json:"prompts"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	Meta      Meta              `json:"_meta,omitempty"`
}

// GetPromptResult is the result of prompts/get: the prompt's messages with
// its arguments filled in.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        Meta            `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt. Role is "user" or "assistant".
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// CompleteParams are the params of completion/complete: which argument of
// which prompt or resource template to complete, and what was typed so far.
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	// Context holds the values of arguments already filled in, if any.
	Context *CompleteContext `json:"context,omitempty"`
	Meta    Meta             `json:"_meta,omitempty"`
}

// CompleteReference names what a completion is for: a prompt (Type
// "ref/prompt" and Name) or a resource template (Type "ref/resource" and
// URI, the template). [PromptReference] and [ResourceTemplateReference]
// make one.
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// PromptReference refers to the prompt named name, for a completion.
func PromptReference(name string) CompleteReference {
	return CompleteReference{Type: "ref/prompt", Name: name}
}

// ResourceTemplateReference refers to the resource template uriTemplate,
// for a completion of one of its variables.
func ResourceTemplateReference(uriTemplate string) CompleteReference {
	return CompleteReference{Type: "ref/resource", URI: uriTemplate}
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries the arguments a user already filled in.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
	Meta       Meta       `json:"_meta,omitempty"`
}

// Completion lists suggested values, at most 100. Total, when known, counts
// every match; HasMore says there are matches beyond Values.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// maxCompletionValues is the protocol's limit on Completion.Values.
const maxCompletionValues = 100

// SubscriptionFilter says which notifications a 2026-07-28
// subscriptions/listen stream carries; each kind is opt-in.
type SubscriptionFilter struct {
	ToolsListChanged     bool `json:"toolsListChanged,omitempty"`
	PromptsListChanged   bool `json:"promptsListChanged,omitempty"`
	ResourcesListChanged bool `json:"resourcesListChanged,omitempty"`
	// EventsListChanged asks for notifications/events/list_changed (the
	// Events extension). Both sides.
	EventsListChanged bool `json:"eventsListChanged,omitempty"`
	// ResourceSubscriptions are the URIs whose notifications/resources/updated
	// the stream carries.
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs are the tasks whose notifications/tasks the stream carries
	// (the tasks extension). Both sides.
	TaskIDs []string `json:"taskIds,omitempty"`
}

// listenParams are the params of subscriptions/listen and of its
// notifications/subscriptions/acknowledged.
type listenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
}

// LoggingLevel is the severity of a log message, as in RFC 5424.
type LoggingLevel string

// The logging levels, least severe first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

var levelRank = map[LoggingLevel]int{
	LevelDebug: 0, LevelInfo: 1, LevelNotice: 2, LevelWarning: 3,
	LevelError: 4, LevelCritical: 5, LevelAlert: 6, LevelEmergency: 7,
}

// validLevel reports whether l is one of the eight levels.
func validLevel(l LoggingLevel) bool {
	_, ok := levelRank[l]
	return ok
}

// LoggingMessageParams are the params of notifications/message: one log
// message from the server.
type LoggingMessageParams struct {
	Level LoggingLevel `json:"level"`
	// Logger names the source, if the server said.
	Logger string `json:"logger,omitempty"`
	// Data is the message: a string, or any JSON value.
	Data json.RawMessage `json:"data"`
	Meta Meta            `json:"_meta,omitempty"`
}

// resourceURIParams are the params of resources/subscribe,
// resources/unsubscribe and notifications/resources/updated.
type resourceURIParams struct {
	URI string `json:"uri"`
}

// CacheScope says who may share a cached 2026-07-28 result (SEP-2549).
type CacheScope string

// The cache scopes.
const (
	// CacheScopePrivate: the result may be reused only within the same
	// authorization context.
	CacheScopePrivate CacheScope = "private"
	// CacheScopePublic: the result holds nothing user-specific and any cache
	// may share it.
	CacheScopePublic CacheScope = "public"
)

// cacheable marks the results that carry ttlMs and cacheScope on
// 2026-07-28.
type cacheable interface{ cacheable() }

func (*ListToolsResult) cacheable()             {}
func (*ListResourcesResult) cacheable()         {}
func (*ListResourceTemplatesResult) cacheable() {}
func (*ListPromptsResult) cacheable()           {}
func (*ReadResourceResult) cacheable()          {}
func (*DiscoverResult) cacheable()              {}

// Elicitation modes and actions.
const (
	ElicitationForm = "form"
	ElicitationURL  = "url"

	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitParams are the params of elicitation/create: a form (a message and a
// flat requested schema) or, in url mode, a URL the user should visit.
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	// ElicitationID names a url-mode elicitation (2025-11-25 only).
	ElicitationID string `json:"elicitationId,omitempty"`
	Meta          Meta   `json:"_meta,omitempty"`
}

// ElicitResult is the user's answer to an elicitation. Declining or
// cancelling is an answer, not an error. Content is set only when a form
// was accepted.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage.
//
// Deprecated: Sampling is deprecated by SEP-2577 as of protocol revision
// 2026-07-28 (earliest removal 2027-07-28); call an LLM provider's API
// directly instead. It keeps working on every revision.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitempty"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         map[string]any    `json:"metadata,omitempty"`
	Tools            []*Tool           `json:"tools,omitempty"`
	ToolChoice       *ToolChoice       `json:"toolChoice,omitempty"`
	Meta             Meta              `json:"_meta,omitempty"`
}

// ModelPreferences are a server's hints for the client's choice of model.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint names a model, or part of a name, a server would like.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ToolChoice says whether the model may, must or must not call tools.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// SamplingMessage is one message of a sampling conversation.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content SamplingContent `json:"content"`
	Meta    Meta            `json:"_meta,omitempty"`
}

// SamplingContent is the content of a sampling message: one block, or
// several (parallel tool uses and their results). One block travels as a
// JSON object, several as an array.
type SamplingContent []Content

// MarshalJSON writes a single block as an object.
func (s SamplingContent) MarshalJSON() ([]byte, error) {
	if len(s) == 1 {
		return json.Marshal(s[0])
	}
	return json.Marshal([]Content(s))
}

// UnmarshalJSON reads an object or an array of blocks.
func (s *SamplingContent) UnmarshalJSON(data []byte) error {
	if d := trimJSONSpace(data); len(d) > 0 && d[0] == '[' {
		return json.Unmarshal(data, (*[]Content)(s))
	}
	var c Content
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	*s = SamplingContent{c}
	return nil
}

// CreateMessageResult is the client's sampled message.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    SamplingContent `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
	Meta       Meta            `json:"_meta,omitempty"`
}

// Root is a directory or file the client lets the server work on.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult is the client's answer to roots/list.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// InputRequest is one ask of a 2026-07-28 input_required result: a request
// the client runs locally (elicitation/create, sampling/createMessage or
// roots/list) and answers in the retry's inputResponses.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// mrtrMethods may answer with input_required on 2026-07-28.
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}
