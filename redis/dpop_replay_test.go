package mcpredis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// replayStoreChecks are what every mcp.DPoPReplayStore does, run against
// the library's MemoryDPoPReplayStore and against ours.
var replayStoreChecks = []check[mcp.DPoPReplayStore]{
	{"an id's first use, and not the next ones", func(t *testing.T, s mcp.DPoPReplayStore) {
		ctx := context.Background()
		until := time.Now().Add(time.Minute)
		for i, want := range []bool{true, false, false} {
			if first, err := s.FirstUse(ctx, "p1", until); err != nil || first != want {
				t.Fatalf("use %d: %v, %v; want %v", i, first, err, want)
			}
		}
		if first, err := s.FirstUse(ctx, "p2", until); err != nil || !first {
			t.Fatalf("another id: %v, %v", first, err)
		}
	}},
	{"an id already expired is not remembered", func(t *testing.T, s mcp.DPoPReplayStore) {
		ctx := context.Background()
		for i := range 2 {
			if first, err := s.FirstUse(ctx, "old", time.Now().Add(-time.Second)); err != nil || !first {
				t.Fatalf("use %d: %v, %v", i, first, err)
			}
		}
	}},
}

func TestDPoPReplayStore(t *testing.T) {
	runChecks(t, replayStoreChecks,
		func() mcp.DPoPReplayStore { return mcp.NewMemoryDPoPReplayStore(0) },
		func(r *redisServer, o Option) mcp.DPoPReplayStore { return NewDPoPReplayStore(r.client(), o) })
}

// TestDPoPReplayStoreExpiry: the key of a proof expires when the proof
// would be too old; the id is then new again.
func TestDPoPReplayStoreExpiry(t *testing.T) {
	r := startRedis(t)
	s := NewDPoPReplayStore(r.client(), WithKeyPrefix("exp:"))
	ctx := context.Background()
	expired := r.awaitExpiry("exp:dpop:p")
	if first, err := s.FirstUse(ctx, "p", time.Now().Add(50*time.Millisecond)); err != nil || !first {
		t.Fatalf("first use: %v, %v", first, err)
	}
	if first, _ := s.FirstUse(ctx, "p", time.Now().Add(time.Minute)); first {
		t.Fatal("a second use before the expiry was taken as the first")
	}
	expired()
	if first, err := s.FirstUse(ctx, "p", time.Now().Add(time.Minute)); err != nil || !first {
		t.Fatalf("after the expiry: %v, %v", first, err)
	}
}

// boundVerifier takes any token as alice's, bound to the key jkt.
type boundVerifier struct{ jkt string }

func (v boundVerifier) VerifyToken(ctx context.Context, token string) (*mcp.TokenInfo, error) {
	return &mcp.TokenInfo{Principal: "alice", Claims: map[string]any{"cnf": map[string]any{"jkt": v.jkt}}}, nil
}

// TestDPoPReplayAcrossInstances: two instances of a resource server behind
// one public URL share a DPoPReplayStore: a proof accepted by one is
// refused by the other. With a memory store each, the other would take it.
func TestDPoPReplayAcrossInstances(t *testing.T) {
	r := startRedis(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, jkt := publicJWK(key)
	const public = "https://mcp.example.com/mcp"
	instance := func(store mcp.DPoPReplayStore) string {
		srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"})
		srv.AddTool(mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(req.Principal())}}, nil
		})
		auth := mcp.BearerAuth{Verifier: boundVerifier{jkt}, DPoP: mcp.NewDPoPVerifier(
			mcp.WithDPoPReplayStore(store), mcp.WithDPoPPublicURL("https://mcp.example.com"), mcp.WithDPoPRequired())}
		hs := httptest.NewServer(mcp.NewHTTPHandler(srv, mcp.WithAuthorizer(auth)))
		t.Cleanup(hs.Close)
		return hs.URL + "/mcp"
	}
	shared := NewDPoPReplayStore(r.client(), WithKeyPrefix("fleet:"))
	a, b := instance(shared), instance(NewDPoPReplayStore(r.client(), WithKeyPrefix("fleet:")))
	alone1, alone2 := instance(mcp.NewMemoryDPoPReplayStore(0)), instance(mcp.NewMemoryDPoPReplayStore(0))

	n := 0
	proof := func() string {
		n++
		return signProof(t, key, jwk, map[string]any{"jti": fmt.Sprint("jti-", n), "htm": "POST", "htu": public,
			"iat": time.Now().Unix(), "ath": tokenHash("tok")})
	}
	p := proof()
	if status, challenge := listTools(t, a, p); status != 200 {
		t.Fatalf("instance A: %d %q", status, challenge)
	}
	status, challenge := listTools(t, b, p)
	if status != 401 || !strings.HasPrefix(challenge, `DPoP error="invalid_dpop_proof", error_description="DPoP proof: claim jti: the proof was used before"`) {
		t.Fatalf("the replay at instance B: %d %q", status, challenge)
	}
	if status, challenge := listTools(t, b, proof()); status != 200 {
		t.Fatalf("a fresh proof at instance B: %d %q", status, challenge)
	}
	p = proof()
	for i, u := range []string{alone1, alone2} {
		if status, challenge := listTools(t, u, p); status != 200 {
			t.Fatalf("instance %d of memory stores: %d %q", i, status, challenge)
		}
	}
}

// listTools POSTs a 2026-07-28 tools/list with the DPoP proof and returns
// the status and the challenge.
func listTools(t *testing.T, url, proof string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Authorization": "DPoP tok", "DPoP": proof} {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

var b64 = base64.RawURLEncoding

// publicJWK is key's public half as a proof's jwk, and its RFC 7638
// thumbprint.
func publicJWK(key *ecdsa.PrivateKey) (map[string]any, string) {
	point, _ := key.PublicKey.Bytes()
	jwk := map[string]any{"kty": "EC", "crv": "P-256", "x": b64.EncodeToString(point[1:33]), "y": b64.EncodeToString(point[33:])}
	data, _ := json.Marshal(jwk) // sorted members, no white space
	sum := sha256.Sum256(data)
	return jwk, b64.EncodeToString(sum[:])
}

// tokenHash is a proof's ath for token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return b64.EncodeToString(sum[:])
}

// signProof signs claims as an ES256 DPoP proof of key.
func signProof(t *testing.T, key *ecdsa.PrivateKey, jwk map[string]any, claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk})
	c, _ := json.Marshal(claims)
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64.EncodeToString(sig)
}
