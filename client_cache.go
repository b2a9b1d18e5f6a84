package mcp

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"
)

// DefaultResultCacheSize bounds the bytes a client's result cache keeps when
// [WithResultCache] is given no bound.
const DefaultResultCacheSize = 4 << 20

// maxCacheTTL caps how long a result is kept, whatever ttlMs the server
// sent: a server's promise is no reason to hold memory for ever.
const maxCacheTTL = 24 * time.Hour

// WithResultCache has the client reuse the list results (tools, prompts,
// resources and resource templates, each page by its cursor) and
// resources/read results of a server that says they stay valid (SEP-2549:
// ttlMs and cacheScope), for as long as it says, up to a day, so that a
// second Tools iteration within that time sends nothing. It is off by
// default, as net/http's client ignores Cache-Control: a Go program expects
// a call to ask the server unless it asked otherwise, and only the program
// knows whose credentials its calls carry.
//
// A result is not kept when its ttlMs is absent or 0 (a server that sends no
// hints is never cached), nor when it came from a round that answered the
// server's input. A "public" result serves every call of the client; any
// other scope ("private", or one this package does not know) only calls for
// the same principal: the one named with [WithCachePrincipal], or without
// it the credentials the client's transport sends, which are one per
// connection. The server's list_changed notifications drop the lists they
// name, resources/updated drops that URI's read, a listen stream that broke
// (2026-07-28) and a new connection drop everything. On 2026-07-28 those
// notifications come only on a listen stream (see
// [WithToolListChangedHandler]); without one the TTL alone bounds how stale
// a result gets.
//
// maxBytes bounds the bytes kept, counted as the results' JSON, their keys
// and a little for each; 0 or less means DefaultResultCacheSize. Past it the results used
// least recently go first; a result larger than the bound is not kept.
// Pass [WithoutCache] to a call to ask the server regardless.
// It configures a client (NewClient).
func WithResultCache(maxBytes int) ClientOption {
	return clientOption(func(c *config) {
		if maxBytes <= 0 {
			maxBytes = DefaultResultCacheSize
		}
		c.client.cacheBytes = maxBytes
	})
}

// WithoutCache has a call ask the server even when the client's result
// cache ([WithResultCache]) holds a fresh answer; what the server answers
// replaces it. Client side.
func WithoutCache() CallOption {
	return func(o *callOptions) { o.noCache = true }
}

// WithCachePrincipal names whose credentials a call carries, for the
// client's result cache ([WithResultCache]): a result the server did not
// mark "public" serves only calls naming the same principal. A client whose
// calls carry different users' credentials (an http.Client that picks them
// from the call's context, say) must name them, or one user's private
// results would serve another. It sends nothing. Client side.
func WithCachePrincipal(name string) CallOption {
	return func(o *callOptions) { o.principal = name }
}

// resultCache holds the results a server let the client reuse, used least
// recently at the back of lru.
type resultCache struct {
	max int

	mu      sync.Mutex
	size    int
	gen     uint64 // counts the drops: a call that began before one stores nothing
	entries map[cacheKey]*list.Element
	lru     list.List // of *cacheEntry
}

// cacheKey names a result: its method, the one param it depends on (the
// cursor, or the URI read), and for a result that is not public the
// principal it was fetched for.
type cacheKey struct {
	method, arg string
	public      bool
	principal   string
}

type cacheEntry struct {
	key     cacheKey
	raw     json.RawMessage
	expires time.Time
}

// entryOverhead is what an entry costs beyond its bytes (the element, the
// map's slot), counted so that many tiny results cannot outgrow the bound.
const entryOverhead = 128

func (e *cacheEntry) bytes() int {
	return len(e.raw) + len(e.key.arg) + len(e.key.principal) + entryOverhead
}

func newResultCache(max int) *resultCache {
	if max <= 0 {
		return nil
	}
	return &resultCache{max: max, entries: map[cacheKey]*list.Element{}}
}

// get returns the fresh result for principal, and the generation to store
// a fetched one under.
func (rc *resultCache) get(method, arg, principal string) (json.RawMessage, uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	now := time.Now()
	for _, key := range [2]cacheKey{{method, arg, false, principal}, {method, arg, true, ""}} {
		el := rc.entries[key]
		if el == nil {
			continue
		}
		e := el.Value.(*cacheEntry)
		if !now.Before(e.expires) {
			rc.removeLocked(el)
			continue
		}
		rc.lru.MoveToFront(el)
		return e.raw, rc.gen
	}
	return nil, rc.gen
}

// put keeps raw as the result for principal, unless something was dropped
// since gen.
func (rc *resultCache) put(gen uint64, method, arg, principal string, raw json.RawMessage) {
	ttl, public := cacheHints(raw)
	if ttl <= 0 {
		return
	}
	if public {
		principal = ""
	}
	e := &cacheEntry{key: cacheKey{method, arg, public, principal}, raw: raw, expires: time.Now().Add(ttl)}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if gen != rc.gen {
		return
	}
	// The other scope's entry for this principal is what the server no
	// longer says.
	for _, key := range [2]cacheKey{{method, arg, false, principal}, {method, arg, true, ""}} {
		if el := rc.entries[key]; el != nil {
			rc.removeLocked(el)
		}
	}
	n := e.bytes()
	if n > rc.max {
		return
	}
	e.raw = append(json.RawMessage(nil), raw...)
	for rc.size+n > rc.max {
		rc.removeLocked(rc.lru.Back())
	}
	rc.entries[e.key] = rc.lru.PushFront(e)
	rc.size += n
}

func (rc *resultCache) removeLocked(el *list.Element) {
	e := rc.lru.Remove(el).(*cacheEntry)
	delete(rc.entries, e.key)
	rc.size -= e.bytes()
}

// drop removes the results of method (of arg only, unless arg is ""), or
// every result when method is "".
func (rc *resultCache) drop(method, arg string) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.gen++
	for el := rc.lru.Front(); el != nil; {
		next := el.Next()
		k := el.Value.(*cacheEntry).key
		if method == "" || k.method == method && (arg == "" || k.arg == arg) {
			rc.removeLocked(el)
		}
		el = next
	}
}

// changed drops what a notification from the server says has changed.
func (rc *resultCache) changed(method string, params json.RawMessage) {
	if rc == nil {
		return
	}
	switch method {
	case "notifications/tools/list_changed":
		rc.drop("tools/list", "")
	case "notifications/prompts/list_changed":
		rc.drop("prompts/list", "")
	case "notifications/resources/list_changed":
		rc.drop("resources/list", "")
		rc.drop("resources/templates/list", "")
	case "notifications/resources/updated":
		var p resourceURIParams
		if json.Unmarshal(params, &p) == nil && p.URI != "" {
			rc.drop("resources/read", p.URI)
		}
	}
}

// cacheHints reads a result's ttlMs, clamped to maxCacheTTL, and whether
// its cacheScope is "public". An absent, negative or malformed ttlMs is 0.
func cacheHints(raw json.RawMessage) (ttl time.Duration, public bool) {
	eachMember(raw, func(key, value []byte) bool {
		switch string(key) {
		case "ttlMs":
			ms, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil {
				// A fraction, an exponent, or past int64: as a float,
				// clamped before it is converted.
				f, ferr := strconv.ParseFloat(string(value), 64)
				switch {
				case ferr != nil && !errors.Is(ferr, strconv.ErrRange), !(f > 0):
					ms = 0
				case f >= math.MaxInt64:
					ms = math.MaxInt64
				default:
					ms = int64(f)
				}
			}
			ttl = min(peerDuration(ms, time.Millisecond), maxCacheTTL)
		case "cacheScope":
			s, _ := jsonString(value)
			public = s == string(CacheScopePublic)
		}
		return true
	})
	return ttl, public
}

// cachedAs is requestAs for the results a server may let the client reuse:
// with the result cache on, it answers from it when it can and keeps what
// the server lets it keep. arg is the param the result depends on.
func cachedAs[R any](ctx context.Context, c *Client, method, arg string, params any, opts []CallOption) (*R, error) {
	rc := c.cache
	if rc == nil {
		return requestAs[R](ctx, c, method, params, opts)
	}
	conn, _, err := c.session()
	if err != nil {
		return nil, err
	}
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	raw, gen := rc.get(method, arg, o.principal)
	// A connection that ended serves nothing, as its calls fail.
	if raw != nil && !o.noCache && !conn.isClosed() {
		return decodeAs[R](method, raw)
	}
	p, err := marshalObject(params)
	if err != nil {
		return nil, errorf("the params of %s: %w", method, err)
	}
	answered := false
	raw, err = c.request(ctx, method, p, append(opts[:len(opts):len(opts)], func(o *callOptions) { o.answered = &answered }))
	if err != nil {
		if arg != "" && method != "resources/read" {
			rc.drop(method, "") // a cursor refused: every page may be stale
		}
		return nil, err
	}
	res, err := decodeAs[R](method, raw)
	if err == nil && !answered {
		rc.put(gen, method, arg, o.principal, raw)
	}
	return res, err
}

func decodeAs[R any](method string, raw json.RawMessage) (*R, error) {
	res := new(R)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, errorf("decoding %s result: %w", method, err)
	}
	return res, nil
}
