package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// WithCompletionHandler serves completion/complete with h and advertises
// the completions capability. The server checks that the request names a
// registered prompt and one of its arguments, or a registered resource
// template and one of its variables, before h runs; h sees the rest.
// It configures a server (NewServer).
func WithCompletionHandler(h CompletionHandler) ServerOption {
	return serverOption(func(c *config) { c.server.completion = h })
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
