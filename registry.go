package mcp

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// listParams are the params of the list methods.
type listParams struct {
	Cursor string `json:"cursor"`
}

// registry is an ordered set of named items: tools by name, resources by
// URI, templates by their text, prompts by name. Lists follow registration
// order, so that clients see the same order every time. Server.mu guards
// it.
type registry[T any] struct {
	items   map[string]T
	order   []registryKey // by seq
	nextSeq uint64
}

// registryKey is an item's key and the sequence number of its
// registration, by which a cursor says where a page ends.
type registryKey struct {
	key string
	seq uint64
}

func (r *registry[T]) get(key string) (T, bool) {
	item, ok := r.items[key]
	return item, ok
}

// add adds or replaces an item; a replaced item keeps its place.
func (r *registry[T]) add(key string, item T) {
	if r.items == nil {
		r.items = make(map[string]T)
	}
	if _, ok := r.items[key]; !ok {
		r.nextSeq++
		r.order = append(r.order, registryKey{key: key, seq: r.nextSeq})
	}
	r.items[key] = item
}

// remove removes the items with the given keys and reports whether there
// was any.
func (r *registry[T]) remove(keys []string) bool {
	n := len(r.items)
	for _, k := range keys {
		delete(r.items, k)
	}
	if len(r.items) == n {
		return false
	}
	r.order = slices.DeleteFunc(r.order, func(k registryKey) bool { _, ok := r.items[k.key]; return !ok })
	return true
}

// registryItem is an item of a registry: listing is what the list method shows
// of it.
type registryItem interface {
	listing() any
}

func (t *serverTool) listing() any     { return t.tool }
func (r *serverResource) listing() any { return r.resource }
func (t *serverTemplate) listing() any { return t.template }
func (p *serverPrompt) listing() any   { return p.prompt }

// register adds or replaces an item of one of s's registries, marks its
// feature offered, and tells clients that the feature's list changed,
// unless the item replaced one that lists the same: a program that
// registers again what it already serves changes nothing a client sees.
func register[T registryItem](s *Server, reg *registry[T], offers *bool, feature, key string, item T) {
	s.mu.Lock()
	old, replaced := reg.get(key)
	reg.add(key, item)
	*offers = true
	s.mu.Unlock()
	if replaced && sameListing(old.listing(), item.listing()) {
		return
	}
	s.listChanged(feature)
}

// sameListing reports whether two items show the same in their list: the
// same JSON, which is what a client compares.
func sameListing(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// unregister removes items from one of s's registries and, if any was
// there, tells clients that the feature's list changed.
func unregister[T any](s *Server, reg *registry[T], feature string, keys []string) {
	s.mu.Lock()
	removed := reg.remove(keys)
	s.mu.Unlock()
	if removed {
		s.listChanged(feature)
	}
}

// page returns up to size items after the position cursor names, and the
// cursor of the next page ("" after the last). A cursor holds the list's
// kind and the sequence number of the last item it looked at, so a page
// resumes at the right place however items were added or removed since:
// nothing still listed is skipped or repeated. Items keep rejects are left
// out; a nil keep keeps all.
func (r *registry[T]) page(kind, cursor string, size int, keep func(T) bool) ([]T, string, error) {
	start := 0
	if cursor != "" {
		last, ok := decodeCursor(kind, cursor)
		if !ok {
			return nil, "", &Error{Code: CodeInvalidParams, Message: "Invalid params: invalid cursor"}
		}
		start, _ = slices.BinarySearchFunc(r.order, last+1, func(k registryKey, seq uint64) int { return cmp.Compare(k.seq, seq) })
	}
	items := make([]T, 0, min(size, len(r.order)-start))
	end := start
	for ; end < len(r.order) && len(items) < size; end++ {
		if item := r.items[r.order[end].key]; keep == nil || keep(item) {
			items = append(items, item)
		}
	}
	if end == len(r.order) {
		return items, "", nil
	}
	return items, encodeCursor(kind, r.order[end-1].seq), nil
}

func encodeCursor(kind string, last uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.FormatUint(last, 10)))
}

func decodeCursor(kind, cursor string) (last uint64, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, false
	}
	text, ok := strings.CutPrefix(string(raw), kind+":")
	if !ok {
		return 0, false
	}
	last, err = strconv.ParseUint(text, 10, 64)
	return last, err == nil && last < math.MaxUint64 // a page starts at last+1
}

// listPage serves one page of a list method: the page of reg that the
// request's cursor names, without the items keep rejects (nil keeps all),
// each item as the result lists it, in the result that result builds.
func listPage[T, R any](s *Server, reg *registry[T], kind string, params json.RawMessage, keep func(T) bool, item func(T) R, result func(items []R, next string) any) (any, error) {
	var p listParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	page, next, err := reg.page(kind, p.Cursor, s.cfg.server.pageSize, keep)
	if err != nil {
		return nil, err
	}
	items := make([]R, len(page))
	for i, x := range page {
		items[i] = item(x)
	}
	return result(items, next), nil
}

// hiddenTools returns what says which tools the request's client may not
// see, or nil when it may see them all: the app-only tools of MCP Apps are
// hidden from a client that did not declare the extension (AddAppView).
func (s *Server) hiddenTools(info *RequestInfo) func(*Tool) bool {
	s.mu.RLock()
	hide := s.appOnlyHidden
	s.mu.RUnlock()
	if hide == nil {
		return nil
	}
	return hide(info)
}
