package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

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

type serverTool struct {
	tool    *Tool
	handler ToolHandler
}

func (t *serverTool) listing() any { return t.tool }

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
