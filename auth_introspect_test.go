package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
// WithBearerAuth: an inactive token gets the invalid_token challenge.
func TestBearerAuthIntrospection(t *testing.T) {
	t.Parallel()
	as, _ := introspectionServer(t, map[string]map[string]any{
		"opaque-1": {"active": true, "sub": "alice", "scope": "mcp:read", "aud": testResource, "token_type": "Bearer"},
		"refresh":  {"active": true, "sub": "alice", "scope": "mcp:read", "aud": testResource, "token_type": "refresh_token"},
		"no-aud":   {"active": true, "sub": "alice", "scope": "mcp:read", "token_type": "Bearer"},
		"other":    {"active": true, "sub": "alice", "scope": "mcp:read", "aud": "https://other.example.com/mcp", "token_type": "Bearer"},
	})
	v, _ := NewIntrospectionVerifier(IntrospectionConfig{Endpoint: as.URL, ClientID: "rs id", ClientSecret: "s3cret:/", Audience: testResource})
	ts := serveHTTP(t, newTestServer(), WithBearerAuth(BearerAuth{Verifier: v, ResourceMetadataURL: testPRM, Scopes: []string{"mcp:read"}}))
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
