package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// cacheEras are the two eras a server sends hints on: 2026-07-28 by
// WithCacheHints, 2025-11-25 by a middleware that adds them to the results
// the way a server of that revision may.
var cacheEras = []string{Version20251125, Version20260728}

// requestCounter counts the requests a server serves, by method.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (rc *requestCounter) get(method string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[method]
}

// expect fails t unless the server served want requests of method.
func (rc *requestCounter) expect(t *testing.T, method string, want int, when string) {
	t.Helper()
	if got := rc.get(method); got != want {
		t.Errorf("%s: the server served %d %s, want %d", when, got, method, want)
	}
}

// cacheServer returns a server with two tools (one a page), a prompt and
// two resources, whose results carry ttl and scope on version, and the
// counter of the requests it serves.
func cacheServer(version string, ttl time.Duration, scope CacheScope) (*Server, *requestCounter) {
	count := &requestCounter{n: map[string]int{}}
	mw := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			if !r.IsNotification() {
				count.mu.Lock()
				count.n[r.Method]++
				count.mu.Unlock()
			}
			res, err := next(ctx, r)
			if err == nil && version != Version20260728 && cacheableMethod(r.Method) {
				hint := fmt.Sprintf(`{"ttlMs":%d,"cacheScope":%q,`, ttl.Milliseconds(), scope)
				res = append([]byte(hint), bytes.TrimSpace(res)[1:]...)
			}
			return res, err
		}
	}
	srv := NewServer(Implementation{Name: "cache", Version: "1"}, WithPageSize(1),
		WithCacheHints(ttl, scope), WithInboundMiddleware(mw))
	for _, name := range []string{"a", "b"} {
		srv.AddTool(Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{}, nil
		})
	}
	srv.AddPrompt(Prompt{Name: "p"}, func(context.Context, *GetPromptRequest) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	})
	for _, uri := range []string{"test://one", "test://two"} {
		srv.AddResource(Resource{URI: uri, Name: uri}, func(_ context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: req.Params.URI, Text: "content of " + req.Params.URI}}}, nil
		})
	}
	return srv, count
}

func cacheableMethod(m string) bool {
	switch m {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// cacheClient connects a client with the result cache to srv on version.
func cacheClient(t *testing.T, srv *Server, version string, opts ...ClientOption) *Client {
	t.Helper()
	return pair(t, srv, append([]ClientOption{WithProtocolVersion(version), WithResultCache(0)}, opts...)...)
}

func countTools(t *testing.T, cl *Client, opts ...CallOption) int {
	t.Helper()
	n := 0
	for _, err := range cl.Tools(context.Background(), opts...) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func mustRead(t *testing.T, cl *Client, uri string, opts ...CallOption) {
	t.Helper()
	res, err := cl.ReadResource(context.Background(), uri, opts...)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "content of "+uri {
		t.Fatalf("ReadResource(%s) = %+v, %v", uri, res, err)
	}
}

// TestResultCacheTTL: on both eras, a second Tools iteration (two pages)
// and a second read within the TTL send nothing; WithoutCache asks the
// server; after the TTL the client fetches again; a closed connection
// serves nothing from the cache.
func TestResultCacheTTL(t *testing.T) {
	t.Parallel()
	for _, version := range cacheEras {
		t.Run(version, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, count := cacheServer(version, time.Minute, CacheScopePublic)
				cl := cacheClient(t, srv, version)
				ctx := context.Background()
				for range 2 {
					if n := countTools(t, cl); n != 2 {
						t.Fatalf("Tools yielded %d", n)
					}
					mustRead(t, cl, "test://one")
					if _, err := cl.ListPrompts(ctx, ""); err != nil {
						t.Fatal(err)
					}
					if _, err := cl.ListResources(ctx, ""); err != nil {
						t.Fatal(err)
					}
				}
				count.expect(t, "tools/list", 2, "two pages, twice")
				for _, m := range []string{"resources/read", "prompts/list", "resources/list"} {
					count.expect(t, m, 1, "twice")
				}
				mustRead(t, cl, "test://one", WithoutCache())
				count.expect(t, "resources/read", 2, "WithoutCache")
				time.Sleep(time.Minute - time.Millisecond)
				countTools(t, cl)
				count.expect(t, "tools/list", 2, "within the TTL")
				time.Sleep(time.Minute)
				countTools(t, cl)
				count.expect(t, "tools/list", 4, "after the TTL")
				cl.Close()
				if _, err := cl.ReadResource(ctx, "test://one"); !isClosedErr(err) {
					t.Errorf("a read after Close = %v, want ErrClosed", err)
				}
			})
		})
	}
}

// TestResultCacheNoHints: a result whose ttlMs is 0 (the server's default)
// is not kept, on either era, so the cache changes nothing for a server
// that lets no one reuse its results.
func TestResultCacheNoHints(t *testing.T) {
	t.Parallel()
	for _, version := range cacheEras {
		t.Run(version, func(t *testing.T) {
			srv, count := cacheServer(version, 0, "")
			cl := cacheClient(t, srv, version)
			for range 2 {
				countTools(t, cl)
				mustRead(t, cl, "test://one")
			}
			count.expect(t, "tools/list", 4, "ttlMs 0")
			count.expect(t, "resources/read", 2, "ttlMs 0")
			if cl.cache.size != 0 {
				t.Errorf("the cache holds %d bytes", cl.cache.size)
			}
		})
	}
}

// TestResultCacheListChanged: on both eras, tools/list_changed drops the
// tools lists (and the next iteration sees the new tool) but not the
// prompts list.
func TestResultCacheListChanged(t *testing.T) {
	t.Parallel()
	for _, version := range cacheEras {
		t.Run(version, func(t *testing.T) {
			srv, count := cacheServer(version, time.Hour, CacheScopePublic)
			changed := make(chan struct{}, 1)
			cl := cacheClient(t, srv, version, WithToolListChangedHandler(func(context.Context) { changed <- struct{}{} }))
			countTools(t, cl)
			cl.ListPrompts(context.Background(), "")
			countTools(t, cl)
			srv.AddTool(Tool{Name: "c", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				return &CallToolResult{}, nil
			})
			<-changed
			if n := countTools(t, cl); n != 3 {
				t.Errorf("after list_changed Tools yielded %d, want 3", n)
			}
			cl.ListPrompts(context.Background(), "")
			count.expect(t, "tools/list", 2+3, "tools/list_changed")
			count.expect(t, "prompts/list", 1, "tools/list_changed")
		})
	}
}

// TestResultCacheResourceUpdated: on both eras, resources/updated drops
// that URI's read only.
func TestResultCacheResourceUpdated(t *testing.T) {
	t.Parallel()
	for _, version := range cacheEras {
		t.Run(version, func(t *testing.T) {
			srv, count := cacheServer(version, time.Hour, CacheScopePublic)
			updated := make(chan string, 1)
			cl := cacheClient(t, srv, version, WithResourceUpdatedHandler(func(_ context.Context, uri string) { updated <- uri }))
			if err := cl.Subscribe(context.Background(), "test://one"); err != nil {
				t.Fatal(err)
			}
			mustRead(t, cl, "test://one")
			mustRead(t, cl, "test://two")
			srv.ResourceUpdated("test://one")
			if uri := <-updated; uri != "test://one" {
				t.Fatalf("updated %s", uri)
			}
			mustRead(t, cl, "test://one")
			mustRead(t, cl, "test://two")
			count.expect(t, "resources/read", 3, "one read again, two cached")
		})
	}
}

// TestResultCachePrincipals: a private result serves only calls for the
// principal it was fetched for (alice, bob, and the client's own
// credentials); a public one serves them all.
func TestResultCachePrincipals(t *testing.T) {
	t.Parallel()
	for _, scope := range []CacheScope{CacheScopePrivate, "per-user", CacheScopePublic} {
		t.Run(string(scope), func(t *testing.T) {
			srv, count := cacheServer(Version20251125, time.Hour, scope)
			cl := cacheClient(t, srv, Version20251125)
			for range 2 {
				for _, who := range []string{"alice", "bob", ""} {
					mustRead(t, cl, "test://one", WithCachePrincipal(who))
				}
			}
			want := 3
			if scope == CacheScopePublic {
				want = 1
			}
			count.expect(t, "resources/read", want, "alice, bob and no one, twice")
		})
	}
}

// TestResultCacheBound: a result exactly the size of the bound is kept,
// one a byte over it is not, and a second result pushes out the one used
// least recently.
func TestResultCacheBound(t *testing.T) {
	t.Parallel()
	srv, _ := cacheServer(Version20260728, time.Hour, CacheScopePublic)
	probe := cacheClient(t, srv, Version20260728)
	mustRead(t, probe, "test://one")
	size := probe.cache.size
	if size == 0 {
		t.Fatal("nothing cached")
	}
	for _, c := range []struct {
		bound, reads int
	}{{size, 1}, {size - 1, 2}} {
		srv, count := cacheServer(Version20260728, time.Hour, CacheScopePublic)
		cl := cacheClient(t, srv, Version20260728, WithResultCache(c.bound))
		mustRead(t, cl, "test://one")
		mustRead(t, cl, "test://one")
		count.expect(t, "resources/read", c.reads, fmt.Sprintf("bound %d for a result of %d bytes", c.bound, size))
		if cl.cache.size > c.bound {
			t.Errorf("bound %d: the cache holds %d", c.bound, cl.cache.size)
		}
		if c.bound == size {
			mustRead(t, cl, "test://two") // the same size: one goes
			mustRead(t, cl, "test://two")
			mustRead(t, cl, "test://one")
			count.expect(t, "resources/read", 3, "two kept, one pushed out")
		}
	}
}

// TestClientCacheHints: ttlMs as the server may send it, clamped; only "public"
// is public.
func TestClientCacheHints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw    string
		ttl    time.Duration
		public bool
	}{
		{`{}`, 0, false},
		{`{"ttlMs":0,"cacheScope":"public"}`, 0, true},
		{`{"ttlMs":-5}`, 0, false},
		{`{"ttlMs":1500,"cacheScope":"private"}`, 1500 * time.Millisecond, false},
		{`{"ttlMs":1.5e3,"cacheScope":"shared"}`, 1500 * time.Millisecond, false},
		{`{"ttlMs":9223372036854775807}`, maxCacheTTL, false},
		{`{"ttlMs":99999999999999999999999}`, maxCacheTTL, false},
		{`{"ttlMs":1e308}`, maxCacheTTL, false},
		{`{"ttlMs":-1e308}`, 0, false},
		{`{"ttlMs":"60000"}`, 0, false},
		{`{"ttlMs":null,"cacheScope":7}`, 0, false},
	}
	for _, c := range cases {
		ttl, public := cacheHints(json.RawMessage(c.raw))
		if ttl != c.ttl || public != c.public {
			t.Errorf("%s: %v %v, want %v %v", c.raw, ttl, public, c.ttl, c.public)
		}
	}
}

// TestResultCacheOff: without WithResultCache nothing is kept, whatever
// the server says.
func TestResultCacheOff(t *testing.T) {
	t.Parallel()
	srv, count := cacheServer(Version20260728, time.Hour, CacheScopePublic)
	cl := pair(t, srv)
	mustRead(t, cl, "test://one")
	mustRead(t, cl, "test://one")
	if got := count.get("resources/read"); got != 2 || cl.cache != nil {
		t.Errorf("%d reads, want 2", got)
	}
	if !strings.HasPrefix(cl.ProtocolVersion(), "2026") {
		t.Errorf("negotiated %s", cl.ProtocolVersion())
	}
}

// TestResultCacheNotAfterInput: a 2026-07-28 read that needed the client's
// input is not kept, even should the server mark its final result
// cacheable.
func TestResultCacheNotAfterInput(t *testing.T) {
	t.Parallel()
	hint := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (json.RawMessage, error) {
			res, err := next(ctx, r)
			if err == nil && r.Method == "resources/read" && !bytes.Contains(res, []byte(`"ttlMs"`)) && !bytes.Contains(res, []byte(resultInputRequired)) {
				res = append([]byte(`{"ttlMs":3600000,"cacheScope":"public",`), bytes.TrimSpace(res)[1:]...)
			}
			return res, err
		}
	}
	srv := NewServer(Implementation{Name: "s", Version: "1"}, WithCacheHints(time.Hour, CacheScopePublic), WithInboundMiddleware(hint))
	var mu sync.Mutex
	asked := 0
	srv.AddResource(Resource{URI: "test://ask", Name: "ask"}, func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
		res, err := req.Gateway().Elicit(ctx, "sure?", json.RawMessage(`{"type":"object","properties":{}}`))
		if err != nil {
			return nil, err
		}
		mu.Lock()
		asked++
		mu.Unlock()
		return &ReadResourceResult{Contents: []ResourceContents{{URI: "test://ask", Text: res.Action}}}, nil
	})
	cl := cacheClient(t, srv, Version20260728, WithElicitationHandler(func(context.Context, *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: ActionAccept}, nil
	}))
	for range 2 {
		if _, err := cl.ReadResource(context.Background(), "test://ask"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 2 {
		t.Errorf("the handler completed %d times, want 2: a result after input was cached", asked)
	}
}
