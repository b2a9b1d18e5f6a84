package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// introspectionServer answers RFC 7662 requests from this resource
// server's credentials with the response listed for each token (inactive
// for any other), counting the requests.
func introspectionServer(t testing.TB, responses map[string]map[string]any) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id, secret, ok := r.BasicAuth()
		id, _ = url.QueryUnescape(id) // form-encoded first (RFC 6749 §2.3.1)
		secret, _ = url.QueryUnescape(secret)
		if r.Method != "POST" || !ok || id != "rs id" || secret != "s3cret:/" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.ParseForm()
		resp, ok := responses[r.PostForm.Get("token")]
		if !ok {
			resp = map[string]any{"active": false}
		}
		if s, ok := resp["raw"].(string); ok {
			w.Write([]byte(s))
			return
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(ts.Close)
	return ts, &calls
}

// TestIntrospectionVerifier checks each kind of introspection response.
func TestIntrospectionVerifier(t *testing.T) {
	t.Parallel()
	exp := float64(time.Now().Add(time.Hour).Unix())
	ts, _ := introspectionServer(t, map[string]map[string]any{
		"good":     {"active": true, "sub": "alice", "client_id": "app", "scope": "mcp:read", "aud": []string{testResource}, "exp": exp},
		"no aud":   {"active": true, "client_id": "m2m", "token_type": "Bearer"},
		"other":    {"active": true, "sub": "alice", "aud": "https://other.example.com"},
		"expired":  {"active": true, "sub": "alice", "aud": testResource, "exp": float64(time.Now().Add(-time.Minute).Unix())},
		"issuer":   {"active": true, "sub": "alice", "aud": testResource, "iss": "https://evil.example.com"},
		"nobody":   {"active": true, "aud": testResource},
		"not json": {"raw": "<html>"},
		"huge":     {"raw": `{"active":true,"sub":"alice","aud":"` + testResource + `","pad":"` + strings.Repeat("x", 200) + `"}`},
	})
	v, err := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource,
		Issuer: "https://as.example.com", MaxResponseBytes: 200, CacheTTL: -1, AllowNoAudience: true})
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{
		"good":     "",
		"no aud":   "",
		"unknown":  "invalid token: introspection: the token is not active",
		"other":    "invalid token: introspection field aud",
		"expired":  "invalid token: introspection field exp",
		"issuer":   "invalid token: introspection field iss",
		"nobody":   "invalid token: introspection fields sub and client_id",
		"not json": "not a JSON object",
		"huge":     "exceeds 200 bytes",
	} {
		info, err := v.VerifyToken(context.Background(), token)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", token, err)
			} else if token == "good" && (info.Principal != "alice" || info.ClientID != "app" || info.Scopes[0] != "mcp:read" || info.Expiry.Unix() != int64(exp)) {
				t.Errorf("good: %+v", info)
			} else if token == "no aud" && info.Principal != "m2m" {
				t.Errorf("no aud: %+v", info)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, ErrInvalidToken) != strings.HasPrefix(want, "invalid token") {
			t.Errorf("%s: %v, want %q", token, err, want)
		}
	}
	// A response at the size limit is read.
	atLimit, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource,
		MaxResponseBytes: int64(len(`{"active":true,"sub":"alice","aud":"` + testResource + `","pad":"` + strings.Repeat("x", 200) + `"}`))})
	if info, err := atLimit.VerifyToken(context.Background(), "huge"); err != nil || info.Principal != "alice" {
		t.Errorf("a response at the limit: %v", err)
	}
	bad, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "wrong", Audience: testResource})
	if _, err := bad.VerifyToken(context.Background(), "good"); err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), ts.URL+": status 401") {
		t.Errorf("refused credentials: %v", err)
	}
	for _, cfg := range []IntrospectionConfig{{Audience: testResource}, {Endpoint: "https://as.example.com/introspect"}} {
		if _, err := NewIntrospectionVerifier(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestIntrospectionAccessTokensOnly refuses what is not a bearer access
// token for this resource: a refresh token as oidc-provider describes it
// (token_type refresh_token in older versions, none and no aud in newer
// ones) or as other servers do (token_use, typ), a token bound to a key, a
// token without aud unless AllowNoAudience, and one for another resource
// in any case.
func TestIntrospectionAccessTokensOnly(t *testing.T) {
	t.Parallel()
	exp := float64(time.Now().Add(time.Hour).Unix())
	answer := func(more map[string]any) map[string]any {
		m := map[string]any{"active": true, "sub": "alice", "client_id": "app", "scope": "mcp:read", "exp": exp, "iss": "https://as.example.com"}
		for k, v := range more {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	ts, _ := introspectionServer(t, map[string]map[string]any{
		"access":            answer(map[string]any{"aud": testResource, "token_type": "Bearer"}),
		"access, no type":   answer(map[string]any{"aud": []string{"x", testResource}}),
		"access, urn":       answer(map[string]any{"aud": testResource, "token_type": "urn:ietf:params:oauth:token-type:access_token"}),
		"access, keycloak":  answer(map[string]any{"aud": testResource, "typ": "Bearer"}),
		"access, hydra":     answer(map[string]any{"aud": testResource, "token_type": "Bearer", "token_use": "access_token"}),
		"no aud, bearer":    answer(map[string]any{"token_type": "Bearer"}),
		"no aud, no type":   answer(nil),
		"refresh":           answer(map[string]any{"aud": testResource, "token_type": "refresh_token"}),
		"refresh, no aud":   answer(map[string]any{"token_type": "refresh_token"}),
		"refresh, urn":      answer(map[string]any{"aud": testResource, "token_type": "urn:ietf:params:oauth:token-type:refresh_token"}),
		"refresh, hydra":    answer(map[string]any{"aud": testResource, "token_type": "Bearer", "token_use": "refresh_token"}),
		"refresh, keycloak": answer(map[string]any{"aud": testResource, "typ": "Refresh"}),
		"id token":          answer(map[string]any{"aud": testResource, "token_use": "id"}),
		"dpop":              answer(map[string]any{"aud": testResource, "token_type": "DPoP", "cnf": map[string]any{"jkt": "x"}}),
		"mtls":              answer(map[string]any{"aud": testResource, "token_type": "Bearer", "cnf": map[string]any{"x5t#S256": "x"}}),
		"type not a string": answer(map[string]any{"aud": testResource, "token_type": 1}),
		"other resource":    answer(map[string]any{"aud": "https://other.example.com/mcp", "token_type": "Bearer"}),
		"other resources":   answer(map[string]any{"aud": []string{"https://other.example.com/mcp"}, "token_type": "Bearer"}),
		"empty aud":         answer(map[string]any{"aud": []string{}, "token_type": "Bearer"}),
	})
	strict, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource})
	lax, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource, AllowNoAudience: true})
	for token, want := range map[string][2]string{ // the error of each (default, AllowNoAudience); empty: accepted
		"access":            {"", ""},
		"access, no type":   {"", ""},
		"access, urn":       {"", ""},
		"access, keycloak":  {"", ""},
		"access, hydra":     {"", ""},
		"no aud, bearer":    {"field aud: missing", ""},
		"no aud, no type":   {"field aud: missing", "fields aud and token_type: missing"},
		"refresh":           {"field token_type", "field token_type"},
		"refresh, no aud":   {"field token_type", "field token_type"},
		"refresh, urn":      {"field token_type", "field token_type"},
		"refresh, hydra":    {"field token_use", "field token_use"},
		"refresh, keycloak": {"field typ", "field typ"},
		"id token":          {"field token_use", "field token_use"},
		"dpop":              {"field cnf", "field cnf"},
		"mtls":              {"field cnf", "field cnf"},
		"type not a string": {"field token_type", "field token_type"},
		"other resource":    {"field aud: does not name", "field aud: does not name"},
		"other resources":   {"field aud: does not name", "field aud: does not name"},
		"empty aud":         {"field aud: does not name", "field aud: does not name"},
	} {
		for i, v := range []*IntrospectionVerifier{strict, lax} {
			info, err := v.VerifyToken(context.Background(), token)
			switch {
			case want[i] == "" && (err != nil || info.Principal != "alice"):
				t.Errorf("%s (%d): %v", token, i, err)
			case want[i] != "" && (!errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), want[i])):
				t.Errorf("%s (%d): %v, want ErrInvalidToken with %q", token, i, err, want[i])
			}
		}
	}
}

// TestIntrospectionCache reuses an active token's result until the TTL or
// its expiry, whichever comes first, and keeps at most CacheSize results.
func TestIntrospectionCache(t *testing.T) {
	t.Parallel()
	// The bubble's clock starts at midnight UTC, 1 January 2000.
	start := float64(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	responses := map[string]map[string]any{
		"long":  {"active": true, "sub": "a", "aud": testResource, "exp": start + 3600},
		"short": {"active": true, "sub": "a", "aud": testResource, "exp": start + 30},
		"x":     {"active": true, "sub": "a", "aud": testResource}, "y": {"active": true, "sub": "a", "aud": testResource}, "z": {"active": true, "sub": "a", "aud": testResource},
	}
	ts, calls := introspectionServer(t, responses) // outside the bubble: see TestJWKSUnknownKey
	synctest.Test(t, func(t *testing.T) {
		v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource,
			CacheTTL: time.Minute, CacheSize: 2, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		ctx := context.Background()
		verify := func(token string) {
			t.Helper()
			if _, err := v.VerifyToken(ctx, token); err != nil {
				t.Fatalf("%s: %v", token, err)
			}
		}
		verify("long")
		verify("short")
		verify("long")
		verify("short")
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d calls, want 2 (cached)", n)
		}
		time.Sleep(30 * time.Second)
		if _, err := v.VerifyToken(ctx, "short"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("short after its exp: %v", err)
		}
		verify("long")
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d calls, want 3 (the short token asked again at its exp)", n)
		}
		time.Sleep(30 * time.Second)
		verify("long")
		if n := calls.Load(); n != 4 {
			t.Fatalf("%d calls, want 4 (the TTL passed)", n)
		}
		for _, tok := range []string{"x", "y", "z"} {
			verify(tok)
		}
		v.mu.Lock()
		size := len(v.cache)
		v.mu.Unlock()
		if size != 2 {
			t.Fatalf("%d cached results, want the limit 2", size)
		}
	})
}

// TestBearerAuthIntrospection puts the introspection verifier behind
// a BearerAuth: an inactive token gets the invalid_token challenge.
func TestBearerAuthIntrospection(t *testing.T) {
	t.Parallel()
	as, _ := introspectionServer(t, map[string]map[string]any{
		"opaque-1": {"active": true, "sub": "alice", "scope": "mcp:read", "aud": testResource, "token_type": "Bearer"},
		"refresh":  {"active": true, "sub": "alice", "scope": "mcp:read", "aud": testResource, "token_type": "refresh_token"},
		"no-aud":   {"active": true, "sub": "alice", "scope": "mcp:read", "token_type": "Bearer"},
		"other":    {"active": true, "sub": "alice", "scope": "mcp:read", "aud": "https://other.example.com/mcp", "token_type": "Bearer"},
	})
	v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: as.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource})
	ts := serveHTTP(t, newTestServer(), WithAuthorizer(BearerAuth{Verifier: v, ResourceMetadataURL: testPRM, Scopes: []string{"mcp:read"}}))
	if r := callTool(t, ts.URL, "echo", "Bearer opaque-1"); r.status != 200 {
		t.Fatalf("active: %d %s", r.status, r.body)
	}
	r := callTool(t, ts.URL, "echo", "Bearer opaque-2")
	want := `Bearer error="invalid_token", error_description="invalid token: introspection: the token is not active", resource_metadata="` + testPRM + `", scope="mcp:read"`
	if r.status != 401 || r.header.Get("WWW-Authenticate") != want {
		t.Fatalf("inactive: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	// A refresh token, a token without aud, one for another resource.
	for token, why := range map[string]string{
		"refresh": "invalid token: introspection field token_type: 'refresh_token' is not a bearer access token's",
		"no-aud":  "invalid token: introspection field aud: missing, the token must name this resource '" + testResource + "'",
		"other":   "invalid token: introspection field aud: does not name this resource '" + testResource + "'",
	} {
		r := callTool(t, ts.URL, "echo", "Bearer "+token)
		want := `Bearer error="invalid_token", error_description="` + why + `", resource_metadata="` + testPRM + `", scope="mcp:read"`
		if r.status != 401 || r.header.Get("WWW-Authenticate") != want {
			t.Errorf("%s: %d %q", token, r.status, r.header.Get("WWW-Authenticate"))
		}
	}
}

// slowIntrospection is an introspection endpoint on loopback that answers
// no request until released (or until its caller leaves), counting the
// requests it saw and the most under way at once.
type slowIntrospection struct {
	*httptest.Server
	arrived          chan struct{} // one per request
	release          chan struct{} // closed: answer the waiting requests
	calls, now, most atomic.Int32
	cancelled        atomic.Int32 // requests whose caller left
	answer           map[string]any
}

func newSlowIntrospection(t testing.TB, answer map[string]any) *slowIntrospection {
	s := &slowIntrospection{arrived: make(chan struct{}, 10000), release: make(chan struct{}), answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm() // the body read, the server notices a caller that leaves
		s.calls.Add(1)
		n := s.now.Add(1)
		defer s.now.Add(-1)
		for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
		}
		s.arrived <- struct{}{}
		select {
		case <-s.release:
			json.NewEncoder(w).Encode(s.answer)
		case <-r.Context().Done():
			s.cancelled.Add(1)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// pollUntil polls cond for at most 10 s, failing the test then.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIntrospectionBogusFlood: 300 requests with distinct bogus tokens
// against an endpoint that does not answer make at most
// MaxConcurrentCalls calls, and once the requests leave, the calls are
// cancelled and no goroutine remains a second later. (Before: one call per
// request, each open until the endpoint answered.)
func TestIntrospectionBogusFlood(t *testing.T) {
	const requests, limit = 300, 8
	as := newSlowIntrospection(t, map[string]any{"active": false})
	v, err := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: as.URL, Audience: testResource, MaxConcurrentCalls: limit,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx, leave := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for i := range requests {
		wg.Go(func() {
			_, err := v.VerifyToken(ctx, fmt.Sprintf("bogus-%d", i))
			errs <- err
		})
	}
	for range limit {
		<-as.arrived
	}
	pollUntil(t, "every request to wait", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return len(v.calls) == requests
	})
	peak, calls, most := runtime.NumGoroutine()-before, as.calls.Load(), as.most.Load()
	leave()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalidToken) {
			t.Fatalf("a request that left: %v", err)
		}
	}
	left := goroutinesLeftAfter(before, time.Second)
	t.Logf("%d requests: %d calls (at most %d at once), %d goroutines at the peak, %d left 1 s after the requests left",
		requests, calls, most, peak, max(left, 0))
	if calls != limit {
		t.Errorf("%d calls while the requests waited, want the limit %d", calls, limit)
	}
	if most > limit {
		t.Errorf("%d calls at once, want at most %d", most, limit)
	}
	if left > 0 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines remain a second after the requests left:\n%s", left, buf[:runtime.Stack(buf, true)])
	}
	// As the requests leave, a queued call may take a slot freed by a
	// cancelled one before its own request is seen to have left: it is
	// cancelled too.
	pollUntil(t, "the endpoint to see the calls cancelled", func() bool { return as.cancelled.Load() == as.calls.Load() })
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.calls) != 0 || len(v.refused) != 0 || len(v.slots) != 0 {
		t.Fatalf("left behind: %d calls, %d refusals, %d slots", len(v.calls), len(v.refused), len(v.slots))
	}
}

// TestIntrospectionSingleFlight: 1,000 concurrent requests with one
// inactive token make one call, and 1,000 more within RefusalTTL none.
// (Before: 1,000 calls.)
func TestIntrospectionSingleFlight(t *testing.T) {
	t.Parallel()
	as := newSlowIntrospection(t, map[string]any{"active": false})
	v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: as.URL, Audience: testResource})
	const requests = 1000
	var wg sync.WaitGroup
	var refused atomic.Int32
	for range requests {
		wg.Go(func() {
			if _, err := v.VerifyToken(context.Background(), "inactive"); errors.Is(err, ErrInvalidToken) {
				refused.Add(1)
			}
		})
	}
	<-as.arrived
	pollUntil(t, "every request to wait", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, c := range v.calls {
			return c.waiters == requests
		}
		return false
	})
	close(as.release)
	wg.Wait()
	for range requests {
		if _, err := v.VerifyToken(context.Background(), "inactive"); errors.Is(err, ErrInvalidToken) {
			refused.Add(1)
		}
	}
	if n, r := as.calls.Load(), refused.Load(); n != 1 || r != 2*requests {
		t.Fatalf("%d calls for %d requests (%d refused), want 1", n, 2*requests, r)
	}
}

// blockingIntrospection is an introspection endpoint without a network:
// each call blocks until released or until its context ends, so that a
// synctest bubble sees who waits.
type blockingIntrospection struct {
	mu      sync.Mutex
	calls   int
	ended   int // calls whose context ended
	release chan struct{}
	answer  string
}

func (b *blockingIntrospection) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if form, _ := url.ParseQuery(string(body)); form.Get("token") == "stuck" {
		<-b.release // a transport that does not heed the context
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(b.answer)), Request: r}, nil
	}
	select {
	case <-b.release:
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(b.answer)), Request: r}, nil
	case <-r.Context().Done():
		b.mu.Lock()
		b.ended++
		b.mu.Unlock()
		return nil, context.Cause(r.Context())
	}
}

func (b *blockingIntrospection) counts() (calls, ended int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls, b.ended
}

// TestIntrospectionCancel: a request that leaves stops waiting at once; a
// call shared by requests goes on while one of them waits and is
// cancelled when the last leaves; a call no one leaves ends at Timeout,
// the wait for a slot included, as the server's failure (not the
// token's).
func TestIntrospectionCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rt := &blockingIntrospection{release: make(chan struct{})}
		v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: "https://as.example.com/introspect", Audience: testResource,
			HTTPClient: &http.Client{Transport: rt}, Timeout: 5 * time.Second, MaxConcurrentCalls: 1})
		verify := func(ctx context.Context, token string) chan error {
			done := make(chan error, 1)
			go func() { _, err := v.VerifyToken(ctx, token); done <- err }()
			return done
		}
		ctx1, leave1 := context.WithCancel(context.Background())
		ctx2, leave2 := context.WithCancel(context.Background())
		first, second := verify(ctx1, "t"), verify(ctx2, "t")
		synctest.Wait()
		leave1()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Fatalf("the request that left: %v", err)
		}
		synctest.Wait()
		if calls, ended := rt.counts(); calls != 1 || ended != 0 {
			t.Fatalf("one of two left: %d calls, %d cancelled; want the call to go on", calls, ended)
		}
		leave2()
		<-second
		synctest.Wait()
		if calls, ended := rt.counts(); calls != 1 || ended != 1 {
			t.Fatalf("both left: %d calls, %d cancelled; want the call cancelled", calls, ended)
		}

		// Nobody leaves: the call ends at Timeout.
		start := time.Now()
		if err := <-verify(context.Background(), "slow"); err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Fatalf("%v, want a failure (not ErrInvalidToken) with the deadline", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("failed after %v, want the Timeout", d)
		}
		// A call waiting for the one slot, held by a call stuck in its
		// transport, ends at Timeout without calling.
		start = time.Now()
		stuck := verify(context.Background(), "stuck")
		synctest.Wait()
		err := <-verify(context.Background(), "queued")
		if err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "no call slot came free (1 calls under way)") {
			t.Fatalf("%v, want a failure (not ErrInvalidToken) for want of a slot", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("failed after %v, want the Timeout", d)
		}
		if calls, _ := rt.counts(); calls != 3 {
			t.Fatalf("%d calls, want 3 (the queued token never called)", calls)
		}
		// A failure to ask is not remembered: the next request asks again.
		rt.answer = `{"active":true,"sub":"alice","aud":"` + testResource + `"}`
		close(rt.release)
		<-stuck
		if _, err := v.VerifyToken(context.Background(), "slow"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestIntrospectionRefusalCache remembers a refusal for RefusalTTL, and
// refusals and accepted tokens each up to CacheSize, so that bogus tokens
// do not push the accepted ones out.
func TestIntrospectionRefusalCache(t *testing.T) {
	t.Parallel()
	responses := map[string]map[string]any{"good": {"active": true, "sub": "a", "aud": testResource}}
	ts, calls := introspectionServer(t, responses) // outside the bubble: see TestJWKSUnknownKey
	synctest.Test(t, func(t *testing.T) {
		v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: ts.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource,
			CacheSize: 2, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		ctx := context.Background()
		if _, err := v.VerifyToken(ctx, "good"); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if _, err := v.VerifyToken(ctx, "bogus"); !errors.Is(err, ErrInvalidToken) {
				t.Fatal(err)
			}
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d calls, want 2 (the refusal remembered)", n)
		}
		time.Sleep(DefaultIntrospectionRefusalTTL)
		v.VerifyToken(ctx, "bogus")
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d calls, want 3 (the refusal forgotten after RefusalTTL)", n)
		}
		for i := range 10 {
			v.VerifyToken(ctx, fmt.Sprint("bogus-", i))
		}
		if _, err := v.VerifyToken(ctx, "good"); err != nil {
			t.Fatal(err)
		}
		v.mu.Lock()
		sizes := [2]int{len(v.cache), len(v.refused)}
		v.mu.Unlock()
		if n := calls.Load(); n != 13 || sizes != [2]int{1, 2} {
			t.Fatalf("%d calls, cache sizes %v; want 13 (the good token still cached) and [1 2]", n, sizes)
		}
	})
}

// TestBearerAuthIntrospectionFlood: through a BearerAuth, 300 requests
// with bogus tokens against an endpoint that does not answer make at most
// MaxConcurrentCalls calls, and the requests leaving ends every goroutine
// within a second. They are GETs: net/http cancels a request's context
// when its client leaves only once the body has been read, which the
// bearer check comes before, so a POST that leaves waits out the
// verifier's Timeout.
func TestBearerAuthIntrospectionFlood(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) { bearerAuthIntrospectionFlood(t, method) })
	}
}

// bearerAuthIntrospectionFlood: a POST's small body is read before its
// token is checked, or net/http would not notice that its client left.
func bearerAuthIntrospectionFlood(t *testing.T, method string) {
	const requests, limit = 300, 8
	as := newSlowIntrospection(t, map[string]any{"active": false})
	v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: as.URL, Audience: testResource, MaxConcurrentCalls: limit,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	ts := serveHTTP(t, newTestServer(), WithAuthorizer(BearerAuth{Verifier: v, ResourceMetadataURL: testPRM}))
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	before := runtime.NumGoroutine()
	ctx, leave := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			var body io.Reader
			if method == "POST" {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			}
			req, _ := http.NewRequestWithContext(ctx, method, ts.URL, body)
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", fmt.Sprintf("Bearer bogus-%d", i))
			if res, err := client.Do(req); err == nil {
				res.Body.Close()
				t.Errorf("answered: %d", res.StatusCode)
			}
		})
	}
	for range limit {
		<-as.arrived
	}
	pollUntil(t, "every request to wait", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return len(v.calls) == requests
	})
	peak, calls, most := runtime.NumGoroutine()-before, as.calls.Load(), as.most.Load()
	leave()
	wg.Wait()
	left := goroutinesLeftAfter(before, time.Second)
	t.Logf("%d requests: %d calls (at most %d at once), %d goroutines at the peak, %d left 1 s after the requests left",
		requests, calls, most, peak, max(left, 0))
	if calls != limit || most > limit {
		t.Errorf("%d calls, %d at once; want %d", calls, most, limit)
	}
	if left > 0 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines remain a second after the requests left:\n%s", left, buf[:runtime.Stack(buf, true)])
	}
}
