package mcp

import (
	"context"
	"encoding/json"
	"fmt"
)

// PromptHandler serves prompts/get. The server has checked that every
// required argument is present. An *Error is sent as it is; any other
// error is an internal error.
type PromptHandler func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)

// GetPromptRequest is one prompts/get as its handler sees it.
type GetPromptRequest struct {
	Params *GetPromptParams
	*RequestInfo
}

type serverPrompt struct {
	prompt  *Prompt
	handler PromptHandler
}

func (p *serverPrompt) listing() any { return p.prompt }

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
