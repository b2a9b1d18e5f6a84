package mcp

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// proofRecorder notes the Authorization scheme and whether a DPoP proof
// went with each request to the resource.
type proofRecorder struct {
	mu    sync.Mutex
	seen  []string
	inner http.Handler
}

func (p *proofRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	p.mu.Lock()
	p.seen = append(p.seen, scheme+" proof="+map[bool]string{true: "yes", false: "no"}[r.Header.Get("DPoP") != ""])
	p.mu.Unlock()
	p.inner.ServeHTTP(w, r)
}

// TestDPoPClientServerAndOpenIDProvider: our OAuth client with DPoP on
// gets a DPoP-bound token from a real authorization server (oidc-provider,
// client credentials) and calls our resource server, which requires DPoP,
// on both eras: every request to the resource carries the bound token with
// a fresh proof, and the tool sees the provider's client as its principal.
func TestDPoPClientServerAndOpenIDProvider(t *testing.T) {
	t.Parallel()
	mux, ts, op, verifier := oidcResource(t)
	resource := ts.URL + "/mcp"
	metadata := ProtectedResourceMetadataURL(resource)
	dpop := NewDPoPVerifier(WithDPoPRequired())
	rec := &proofRecorder{inner: NewHTTPHandler(bearerTools(nil), WithAuthorizer(BearerAuth{
		Verifier: verifier, ResourceMetadataURL: metadata, Scopes: []string{"mcp"}, DPoP: dpop,
	}))}
	mux.Handle("/mcp", rec)
	prm := ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{op.issuer}, ScopesSupported: []string{"mcp"}}
	dpop.Advertise(&prm)
	mux.Handle(strings.TrimPrefix(metadata, ts.URL), ProtectedResourceMetadataHandler(prm))

	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			c := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
			tr := NewHTTPTransport(resource, WithoutStandaloneStream(), WithOAuth(OAuthConfig{
				ClientID: "dpop-m2m", ClientSecret: "dpop-m2m-secret", Grant: GrantClientCredentials,
				Scopes: []string{"mcp"}, DPoP: true,
			}))
			if err := c.Connect(t.Context(), tr); err != nil {
				t.Fatalf("%v; provider: %s", err, op.stderr)
			}
			defer c.Close()
			for range 3 {
				res, err := c.CallTool(t.Context(), "whoami", nil)
				if err != nil {
					t.Fatalf("%v; provider: %s", err, op.stderr)
				}
				if got := textOf(res); !strings.HasPrefix(got, "dpop-m2m dpop-m2m") {
					t.Fatalf("whoami = %q, want the provider's client", got)
				}
			}
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	bound := 0
	for _, s := range rec.seen {
		switch s {
		case "DPoP proof=yes":
			bound++
		case " proof=no": // the first request, before the client has a token
		default:
			t.Errorf("a request to the resource came with %q, want a DPoP-bound token and its proof", s)
		}
	}
	if bound < 2*4 { // each era: at least its first request and three calls
		t.Fatalf("%d requests carried a bound token and a proof (%q)", bound, rec.seen)
	}
}
