package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ResourceHandler serves resources/read for a resource or a resource
// template. Return an error wrapping ErrResourceNotFound when there is no
// such resource (a template's variables name nothing, say): the client gets
// the protocol's resource-not-found error for its revision. An *Error is
// sent as it is; any other error is an internal error.
type ResourceHandler func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)

// ReadResourceRequest is one resources/read as its handler sees it.
type ReadResourceRequest struct {
	Params *ReadResourceParams
	// Vars are the template's variables as matched in the URI; nil for a
	// resource registered with AddResource.
	Vars map[string]string
	*RequestInfo
}

// ErrResourceNotFound is what a ResourceHandler returns, possibly wrapped,
// for a resource that does not exist. The client gets error -32002 on the
// revisions up to 2025-11-25 and -32602 on 2026-07-28, with the URI in the
// error's data.
var ErrResourceNotFound = errors.New("mcp: resource not found")

// resourceNotFound is the resource-not-found error of the request's
// revision.
func resourceNotFound(uri string, modern bool) *Error {
	code := CodeResourceNotFound
	if modern {
		code = CodeInvalidParams
	}
	return NewError(code, "Resource not found: "+uri, map[string]string{"uri": uri})
}

// AddResource registers a resource, replacing any resource with the same
// URI, and advertises resources. A resources/read for r.URI runs h. It
// panics if r.URI or r.Name is empty.
func (s *Server) AddResource(r Resource, h ResourceHandler) {
	if r.URI == "" || r.Name == "" {
		panic(fmt.Sprintf("mcp: AddResource(%q): a resource needs a URI and a name", r.URI))
	}
	register(s, &s.resources, &s.offersResources, "resources", r.URI, &serverResource{resource: &r, handler: h})
}

// RemoveResources unregisters the resources with the given URIs.
func (s *Server) RemoveResources(uris ...string) {
	unregister(s, &s.resources, "resources", uris)
}

// AddResourceTemplate registers a resource template, replacing any with the
// same template text, and advertises resources. A resources/read whose URI
// matches the template (RFC 6570, see [URITemplate.Match]) and no resource
// runs h, with the variables in req.Vars; templates are tried in the order
// they were added. It panics if t.Name is empty or t.URITemplate does not
// parse.
func (s *Server) AddResourceTemplate(t ResourceTemplate, h ResourceHandler) {
	parsed, err := ParseURITemplate(t.URITemplate)
	if err != nil || t.URITemplate == "" || t.Name == "" {
		panic(fmt.Sprintf("mcp: AddResourceTemplate(%q): a template needs a valid URI template and a name (%v)", t.URITemplate, err))
	}
	register(s, &s.templates, &s.offersResources, "resources", t.URITemplate, &serverTemplate{template: &t, parsed: parsed, handler: h})
}

// RemoveResourceTemplates unregisters the templates with the given template
// texts.
func (s *Server) RemoveResourceTemplates(uriTemplates ...string) {
	unregister(s, &s.templates, "resources", uriTemplates)
}

func (s *Server) listResources(params json.RawMessage) (any, error) {
	return listPage(s, &s.resources, "resources", params, nil, func(sr *serverResource) *Resource { return sr.resource },
		func(items []*Resource, next string) any {
			return &ListResourcesResult{Resources: items, NextCursor: next}
		})
}

func (s *Server) listResourceTemplates(params json.RawMessage) (any, error) {
	return listPage(s, &s.templates, "templates", params, nil, func(st *serverTemplate) *ResourceTemplate { return st.template },
		func(items []*ResourceTemplate, next string) any {
			return &ListResourceTemplatesResult{ResourceTemplates: items, NextCursor: next}
		})
}

// findResource returns the handler serving uri: the resource's, else the
// first matching template's with its variables.
func (s *Server) findResource(uri string) (ResourceHandler, map[string]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sr, ok := s.resources.get(uri); ok {
		return sr.handler, nil, true
	}
	for _, k := range s.templates.order {
		st := s.templates.items[k.key]
		if vars, ok := st.parsed.Match(uri); ok {
			return st.handler, vars, true
		}
	}
	return nil, nil, false
}

func (s *Server) readResource(ctx context.Context, params json.RawMessage, info *RequestInfo) (any, error) {
	var p ReadResourceParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: resources/read needs a uri"}
	}
	h, vars, ok := s.findResource(p.URI)
	if !ok {
		return nil, resourceNotFound(p.URI, info.modern)
	}
	res, err := h(ctx, &ReadResourceRequest{Params: &p, Vars: vars, RequestInfo: info})
	switch {
	case errors.Is(err, ErrInputRequired):
		return nil, err
	case errors.Is(err, ErrResourceNotFound):
		return nil, resourceNotFound(p.URI, info.modern)
	case err != nil:
		return nil, err
	}
	if res == nil {
		res = &ReadResourceResult{}
	}
	if res.Contents == nil {
		res.Contents = []ResourceContents{}
	}
	for i := range res.Contents {
		if res.Contents[i].URI == "" {
			res.Contents[i].URI = p.URI
		}
	}
	return res, nil
}
