package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testPRM is the resource metadata URL of the tests' resource.
const testPRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

// bearerServer serves a test server behind bearerTestAuth.
func bearerServer(t testing.TB, iss *testIssuer, srv *Server, cfg JWTVerifierConfig) *httptest.Server {
	t.Helper()
	return serveHTTP(t, bearerTools(srv), WithAuthorizer(bearerTestAuth(t, iss, cfg)))
}

// bearerTestAuth checks tokens with the issuer's verifier: every request
// needs mcp:read, resources/read needs res:read and the admin tool needs
// admin.
func bearerTestAuth(t testing.TB, iss *testIssuer, cfg JWTVerifierConfig) BearerAuth {
	return BearerAuth{
		Verifier:            iss.verifier(t, cfg),
		ResourceMetadataURL: testPRM,
		Scopes:              []string{"mcp:read"},
		MethodScopes:        map[string][]string{"resources/read": {"res:read"}},
		ToolScopes:          map[string][]string{"admin": {"admin"}},
	}
}

// bearerTools adds to srv (nil: a new test server) a whoami tool, which
// answers with the request's principal and token scopes, and an admin
// tool.
func bearerTools(srv *Server) *Server {
	if srv == nil {
		srv = newTestServer()
	}
	srv.AddTool(Tool{Name: "whoami"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		tok := req.Token()
		if tok == nil {
			return &CallToolResult{Content: []Content{TextContent(req.Principal() + " no token")}}, nil
		}
		return &CallToolResult{Content: []Content{TextContent(req.Principal() + " " + tok.Principal + " " + strings.Join(tok.Scopes, ","))}}, nil
	})
	srv.AddTool(Tool{Name: "admin"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	return srv
}

// callTool POSTs a 2026-07-28 tools/call of tool with authorization (a
// whole Authorization header, "" for none).
func callTool(t testing.TB, url, tool, authorization string) httpReply {
	t.Helper()
	h := modernHeaders("tools/call", "Mcp-Name", tool)
	if authorization != "" {
		h["Authorization"] = authorization
	}
	return doHTTP(t, "POST", url, modernRequest("1", "tools/call", `"name":"`+tool+`","arguments":{}`), h)
}

// TestBearerAuth checks each kind of token against the status and the
// exact challenge a client relies on, for each signing algorithm.
func TestBearerAuth(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts := bearerServer(t, iss, nil, JWTVerifierConfig{})
	expired := time.Now().Add(-time.Hour).Truncate(time.Second)
	invalid := func(desc string) string {
		return `Bearer error="invalid_token", error_description="invalid token: ` + desc + `", resource_metadata="` + testPRM + `", scope="mcp:read"`
	}
	for _, alg := range []string{algRS256, algES256, algEdDSA} {
		otherAlg := map[string]string{algRS256: algES256, algES256: algEdDSA, algEdDSA: algRS256}[alg]
		other, _ := signAccessToken(testKeys()[otherAlg], alg, iss.claims(nil))
		cases := []struct {
			name          string
			authorization string
			tool          string
			status        int
			challenge     string
			body          string
		}{
			{"valid", "Bearer " + iss.token(t, alg, iss.claims(nil)), "whoami", 200, "", "alice alice mcp:read,mcp:write"},
			{"scheme in lower case", "bearer " + iss.token(t, alg, iss.claims(nil)), "whoami", 200, "", "alice alice"},
			{"no token", "", "whoami", 401, `Bearer resource_metadata="` + testPRM + `", scope="mcp:read"`, ""},
			{"basic", "Basic YWxpY2U6c2VjcmV0", "whoami", 401, `Bearer resource_metadata="` + testPRM + `", scope="mcp:read"`, ""},
			{"malformed", "Bearer a b", "whoami", 401, `Bearer error="invalid_token", error_description="the bearer token is malformed", resource_metadata="` + testPRM + `", scope="mcp:read"`, ""},
			{"expired", "Bearer " + iss.token(t, alg, iss.claims(map[string]any{"exp": expired.Unix()})), "whoami", 401,
				invalid("claim exp: the token expired at " + expired.UTC().Format(time.RFC3339)), ""},
			{"wrong audience", "Bearer " + iss.token(t, alg, iss.claims(map[string]any{"aud": "https://other.example.com/mcp"})), "whoami", 401,
				invalid("claim aud: does not name this resource '" + testResource + "'"), ""},
			{"wrong issuer", "Bearer " + iss.token(t, alg, iss.claims(map[string]any{"iss": "https://evil.example.com"})), "whoami", 401,
				invalid("claim iss: 'https://evil.example.com' is not the issuer '" + iss.url + "'"), ""},
			{"key of another type", "Bearer " + other, "whoami", 401, invalid("header: alg " + otherAlg + " does not match key '" + alg + "' (" + alg + ")"), ""},
			{"alg none", "Bearer " + forge(map[string]string{"alg": "none", "kid": alg}, iss.claims(nil)), "whoami", 401, invalid("header: alg 'none' is not accepted (RS256, ES256, EdDSA)"), ""},
			{"missing scope", "Bearer " + iss.token(t, alg, iss.claims(map[string]any{"scope": "mcp:write"})), "whoami", 403,
				`Bearer error="insufficient_scope", error_description="the token lacks scope 'mcp:read'", resource_metadata="` + testPRM + `", scope="mcp:read"`, ""},
			{"missing tool scope", "Bearer " + iss.token(t, alg, iss.claims(nil)), "admin", 403,
				`Bearer error="insufficient_scope", error_description="the token lacks scope 'admin' for tool 'admin'", resource_metadata="` + testPRM + `", scope="mcp:read admin"`, ""},
			{"tool scope", "Bearer " + iss.token(t, alg, iss.claims(map[string]any{"scope": "mcp:read admin"})), "admin", 200, "", "done"},
		}
		// A signature by another key of the same type.
		if alg != algRS256 { // (an RSA key is slow to make; RS256 is covered by the tampered token)
			cases = append(cases, struct {
				name, authorization, tool string
				status                    int
				challenge, body           string
			}{"signed by another key", "Bearer " + resign(t, alg, iss.claims(nil)), "whoami", 401, invalid("signature: does not verify with key '" + alg + "'"), ""})
		}
		parts := strings.Split(iss.token(t, alg, iss.claims(nil)), ".")
		tampered := parts[0] + "." + b64.EncodeToString([]byte(`{"iss":"`+iss.url+`","aud":"`+testResource+`","sub":"root","exp":9999999999}`)) + "." + parts[2]
		cases = append(cases, struct {
			name, authorization, tool string
			status                    int
			challenge, body           string
		}{"tampered", "Bearer " + tampered, "whoami", 401, invalid("signature: does not verify with key '" + alg + "'"), ""})
		for _, c := range cases {
			t.Run(alg+"/"+c.name, func(t *testing.T) {
				r := callTool(t, ts.URL, c.tool, c.authorization)
				if r.status != c.status || r.header.Get("WWW-Authenticate") != c.challenge || !strings.Contains(r.body, c.body) {
					t.Fatalf("got %d %q %s\nwant %d %q", r.status, r.header.Get("WWW-Authenticate"), r.body, c.status, c.challenge)
				}
			})
		}
	}
}

// resign signs claims with a fresh key of alg's type (ES256 or EdDSA),
// named as the issuer's key of alg.
func resign(t testing.TB, alg string, claims map[string]any) string {
	var key crypto.Signer
	if alg == algES256 {
		key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	tok, err := signAccessToken(key, alg, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestBearerAuthUnknownKey refuses a token of a key the issuer does not
// list after exactly one refresh of the key set.
func TestBearerAuthUnknownKey(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	// No minimum interval between fetches: a second fetch would be seen.
	ts := bearerServer(t, iss, nil, JWTVerifierConfig{MinRefreshInterval: time.Nanosecond})
	if r := callTool(t, ts.URL, "whoami", "Bearer "+iss.token(t, algES256, iss.claims(nil))); r.status != 200 {
		t.Fatalf("valid token: %d %s", r.status, r.body)
	}
	before := iss.fetches.Load()
	unknown, _ := signAccessToken(testKeys()[algES256], "retired", iss.claims(nil))
	r := callTool(t, ts.URL, "whoami", "Bearer "+unknown)
	want := `Bearer error="invalid_token", error_description="invalid token: header: kid 'retired' names no key of the issuer's key set", resource_metadata="` + testPRM + `", scope="mcp:read"`
	if r.status != 401 || r.header.Get("WWW-Authenticate") != want {
		t.Fatalf("got %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if n := iss.fetches.Load() - before; n != 1 {
		t.Fatalf("%d JWKS fetches for an unknown kid, want exactly 1", n)
	}
}

// TestBearerAuthVerifierDown answers 503, not 401, when the keys cannot
// be fetched: the token is not at fault, and a client must not sign in
// again for it.
func TestBearerAuthVerifierDown(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	down := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(down.Close)
	ts := serveHTTP(t, newTestServer(), WithAuthorizer(BearerAuth{
		Verifier: iss.verifier(t, JWTVerifierConfig{JWKSURL: down.URL + "/jwks"}), ResourceMetadataURL: testPRM,
	}))
	r := callTool(t, ts.URL, "echo", "Bearer "+iss.token(t, algEdDSA, iss.claims(nil)))
	if r.status != 503 || r.header.Get("WWW-Authenticate") != "" || !strings.Contains(r.body, down.URL+"/jwks: status 404") {
		t.Fatalf("got %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
}

// TestBearerAuthNeverReadsQuery ignores a token in the query string (RFC
// 6750 §2.3 is not offered: URLs end up in logs).
func TestBearerAuthNeverReadsQuery(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts := bearerServer(t, iss, nil, JWTVerifierConfig{})
	r := callTool(t, ts.URL+"?access_token="+iss.token(t, algEdDSA, iss.claims(nil)), "whoami", "")
	if r.status != 401 || r.header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+testPRM+`", scope="mcp:read"` {
		t.Fatalf("got %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
}

// TestBearerAuthMethodScopes refuses a method whose scope the token lacks
// before it is dispatched, and a whole batch for one of its messages.
func TestBearerAuthMethodScopes(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	srv := newTestServer()
	read := 0
	srv.AddResource(Resource{URI: "test://r", Name: "r"}, func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
		read++
		return &ReadResourceResult{Contents: []ResourceContents{{URI: "test://r", Text: "x"}}}, nil
	})
	ts := bearerServer(t, iss, srv, JWTVerifierConfig{})
	auth := "Bearer " + iss.token(t, algES256, iss.claims(nil))
	h := modernHeaders("resources/read", "Mcp-Name", "test://r", "Authorization", auth)
	r := doHTTP(t, "POST", ts.URL, modernRequest("1", "resources/read", `"uri":"test://r"`), h)
	want := `Bearer error="insufficient_scope", error_description="the token lacks scope 'res:read' for resources/read", resource_metadata="` + testPRM + `", scope="mcp:read res:read"`
	if r.status != 403 || r.header.Get("WWW-Authenticate") != want || read != 0 {
		t.Fatalf("got %d %q, %d reads", r.status, r.header.Get("WWW-Authenticate"), read)
	}
	h["Authorization"] = "Bearer " + iss.token(t, algES256, iss.claims(map[string]any{"scope": "mcp:read res:read"}))
	if r := doHTTP(t, "POST", ts.URL, modernRequest("1", "resources/read", `"uri":"test://r"`), h); r.status != 200 || read != 1 {
		t.Fatalf("with the scope: %d %s", r.status, r.body)
	}

	// A 2025-03-26 batch: one message needing a scope the token lacks
	// refuses the batch; nothing of it runs.
	init := postHeaders("Authorization", auth)
	res := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, init)
	sid := res.header.Get("Mcp-Session-Id")
	if res.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", res.status, res.body)
	}
	batch := `[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"admin","arguments":{}}}]`
	r = doHTTP(t, "POST", ts.URL, batch, postHeaders("Authorization", auth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-03-26"))
	want = `Bearer error="insufficient_scope", error_description="the token lacks scope 'admin' for tool 'admin'", resource_metadata="` + testPRM + `", scope="mcp:read admin"`
	if r.status != 403 || r.header.Get("WWW-Authenticate") != want {
		t.Fatalf("batch: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
}

// TestBearerAuthSessions: a session belongs to the principal of the token
// that opened it. Another principal's valid token gets 404 as for an
// unknown session; the same principal's refreshed token is welcome; an
// expired token mid-session gets 401 again.
func TestBearerAuthSessions(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts := bearerServer(t, iss, nil, JWTVerifierConfig{})
	alice := "Bearer " + iss.token(t, algRS256, iss.claims(nil))
	res := doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, postHeaders("Authorization", alice))
	sid := res.header.Get("Mcp-Session-Id")
	if res.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", res.status, res.body)
	}
	call := func(auth string) httpReply {
		return doHTTP(t, "POST", ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
			postHeaders("Authorization", auth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25"))
	}
	if r := call(alice); r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read,mcp:write") {
		t.Fatalf("alice: %d %s", r.status, r.body)
	}
	bob := "Bearer " + iss.token(t, algRS256, iss.claims(map[string]any{"sub": "bob"}))
	if r := call(bob); r.status != 404 {
		t.Fatalf("bob on alice's session: %d %s", r.status, r.body)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if r := doHTTP(t, method, ts.URL, "", map[string]string{"Accept": "text/event-stream", "Authorization": bob, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}); r.status != 404 {
			t.Fatalf("bob's %s on alice's session: %d %s", method, r.status, r.body)
		}
	}
	refreshed := "Bearer " + iss.token(t, algEdDSA, iss.claims(map[string]any{"scope": "mcp:read"}))
	if r := call(refreshed); r.status != 200 || !strings.Contains(r.body, "alice alice mcp:read") || strings.Contains(r.body, "mcp:write") {
		t.Fatalf("alice's next token: %d %s", r.status, r.body)
	}
	stale := "Bearer " + iss.token(t, algRS256, iss.claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}))
	if r := call(stale); r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="invalid token: claim exp`) {
		t.Fatalf("expired mid-session: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if r := call(alice); r.status != 200 {
		t.Fatalf("the session after a refused token: %d %s", r.status, r.body)
	}
}

// TestBearerAuthTasks: a task belongs to the principal of the token that
// created it; another principal's token cannot read it.
func TestBearerAuthTasks(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	rig := newTaskRig()
	ts := bearerServer(t, iss, rig.srv, JWTVerifierConfig{})
	post := func(sub, body string) string {
		t.Helper()
		auth := "Bearer " + iss.token(t, algES256, iss.claims(map[string]any{"sub": sub}))
		var named struct {
			Params struct{ Name, TaskID string }
		}
		json.Unmarshal([]byte(body), &named)
		var msg struct{ Method string }
		json.Unmarshal([]byte(body), &msg)
		r := doHTTP(t, "POST", ts.URL, body, modernHeaders(msg.Method, "Mcp-Name", named.Params.Name+named.Params.TaskID, "Authorization", auth))
		for line := range strings.SplitSeq(r.body, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
				return d
			}
		}
		return r.body
	}
	got := post("alice", taskRequest(1, "tools/call", `"name":"work","arguments":{}`, taskCaps))
	id, _ := field(t, got, "result.taskId").(string)
	if id == "" {
		t.Fatalf("tools/call as a task: %s", got)
	}
	if got = post("alice", taskRequest(2, "tasks/get", `"taskId":"`+id+`"`, taskCaps)); field(t, got, "result.status") != "working" {
		t.Fatalf("alice's tasks/get: %s", got)
	}
	if got = post("mallory", taskRequest(3, "tasks/get", `"taskId":"`+id+`"`, taskCaps)); field(t, got, "result") != nil || field(t, got, "error") == nil {
		t.Fatalf("another principal read the task: %s", got)
	}
	close(rig.release)
}

// TestBearerAuthKeepsOthers: another Authorizer keeps its bare challenge,
// a CORS preflight needs no token, and a BearerAuth needs a verifier.
func TestBearerAuthKeepsOthers(t *testing.T) {
	t.Parallel()
	plain := serveHTTP(t, newTestServer(), WithAuthorizer(AuthorizerFunc(tokenAuthorizer)))
	if r := callTool(t, plain.URL, "echo", ""); r.status != 401 || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("WithAuthorizer: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	iss := newTestIssuer(t)
	srv := newTestServer()
	ts := serveHTTP(t, srv, WithAllowedOrigins("https://app.example.com"), WithAuthorizer(BearerAuth{Verifier: iss.verifier(t, JWTVerifierConfig{}), ResourceMetadataURL: testPRM}))
	pre := doHTTP(t, "OPTIONS", ts.URL, "", map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"})
	if pre.status/100 != 2 {
		t.Fatalf("preflight: %d %s", pre.status, pre.body)
	}
	for name, a := range map[string]Authorizer{
		"a BearerAuth without a verifier":  BearerAuth{},
		"a *BearerAuth without a verifier": &BearerAuth{},
		"a nil *BearerAuth":                (*BearerAuth)(nil),
		"a nil Authorizer":                 nil,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithAuthorizer of %s did not panic", name)
				}
			}()
			WithAuthorizer(a)
		}()
	}
}

// TestAuthorizerOfBearerAuth: WithAuthorizer given a *BearerAuth does all
// it does given the BearerAuth (a copy taken then: a later change is not
// seen), tool scopes and RequestInfo.Token included. A BearerAuth behind
// another Authorizer keeps its challenges and names the principal, but
// checks no tool scopes, which need the messages, and hands handlers no
// token.
func TestAuthorizerOfBearerAuth(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	token := "Bearer " + iss.token(t, algEdDSA, iss.claims(nil))
	auth := bearerTestAuth(t, iss, JWTVerifierConfig{})
	changed := auth
	byPointer := serveHTTP(t, bearerTools(nil), WithAuthorizer(&changed))
	changed.ToolScopes = nil
	wrapped := serveHTTP(t, bearerTools(nil), WithAuthorizer(AuthorizerFunc(auth.Authorize)))
	challenge := `Bearer resource_metadata="` + testPRM + `", scope="mcp:read"`
	for _, c := range []struct {
		name, url, tool, authorization string
		status                         int
		challenge, body                string
	}{
		{"pointer, no token", byPointer.URL, "whoami", "", 401, challenge, ""},
		{"pointer, token", byPointer.URL, "whoami", token, 200, "", "alice alice mcp:read,mcp:write"},
		{"pointer, tool scope", byPointer.URL, "admin", token, 403,
			`Bearer error="insufficient_scope", error_description="the token lacks scope 'admin' for tool 'admin'", resource_metadata="` + testPRM + `", scope="mcp:read admin"`, ""},
		{"wrapped, no token", wrapped.URL, "whoami", "", 401, challenge, ""},
		{"wrapped, bad token", wrapped.URL, "whoami", "Bearer a b", 401,
			`Bearer error="invalid_token", error_description="the bearer token is malformed", ` + challenge[len("Bearer "):], ""},
		{"wrapped, token", wrapped.URL, "whoami", token, 200, "", "alice no token"},
		{"wrapped, tool scope unchecked", wrapped.URL, "admin", token, 200, "", "done"},
	} {
		r := callTool(t, c.url, c.tool, c.authorization)
		if r.status != c.status || r.header.Get("WWW-Authenticate") != c.challenge || !strings.Contains(r.body, c.body) {
			t.Errorf("%s: got %d %q %s\nwant %d %q", c.name, r.status, r.header.Get("WWW-Authenticate"), r.body, c.status, c.challenge)
		}
	}
	if _, err := (BearerAuth{}).Authorize(httptest.NewRequest("POST", "/mcp", nil)); err == nil {
		t.Error("a BearerAuth without a verifier authorized a request")
	}
}

// TestBearerAuthSSE: the 2024-11-05 transport takes the same check: its
// event stream needs a token, and a POSTed message needing a scope the
// token lacks is refused before the session sees it.
func TestBearerAuthSSE(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	ts := httptest.NewServer(NewSSEHandler(newTestServer(), WithAuthorizer(BearerAuth{
		Verifier: iss.verifier(t, JWTVerifierConfig{}), ResourceMetadataURL: testPRM, ToolScopes: map[string][]string{"echo": {"echo"}},
	})))
	t.Cleanup(ts.Close) // after the stream is closed
	if r := doHTTP(t, "GET", ts.URL+"/sse", "", map[string]string{"Accept": "text/event-stream"}); r.status != 401 || r.header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+testPRM+`"` {
		t.Fatalf("GET without a token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	auth := "Bearer " + iss.token(t, algEdDSA, iss.claims(nil))
	endpoint := openSSE(t, ts.URL, auth)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	r := doHTTP(t, "POST", endpoint, call, map[string]string{"Content-Type": "application/json", "Authorization": auth})
	want := `Bearer error="insufficient_scope", error_description="the token lacks scope 'echo' for tool 'echo'", resource_metadata="` + testPRM + `", scope="echo"`
	if r.status != 403 || r.header.Get("WWW-Authenticate") != want {
		t.Fatalf("POST without the tool's scope: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if r := doHTTP(t, "POST", endpoint, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Content-Type": "application/json", "Authorization": auth}); r.status != 202 {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
}

// openSSE opens a 2024-11-05 event stream at base/sse with authorization,
// for as long as the test runs, and returns the endpoint it names.
func openSSE(t *testing.T, base, authorization string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", authorization)
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ev, err := newSSEParser(resp.Body, 1<<20).next()
	if err != nil || ev.event != "endpoint" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	return base + string(ev.data)
}
