package main

// A toy OAuth 2.1 authorization server, for trying the protected server
// locally: DEVELOPMENT ONLY. It approves every request without asking
// anyone, registers any client, and keeps everything in memory.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// devMaxGrants bounds the codes and refresh tokens the toy keeps.
const devMaxGrants = 10000

var b64 = base64.RawURLEncoding

// devIssuer is the toy authorization server of issuer, which issues
// tokens for resource.
type devIssuer struct {
	issuer, resource string
	key              *ecdsa.PrivateKey

	mu       sync.Mutex
	codes    map[string]devGrant // authorization codes, used once
	refreshs map[string]devGrant // refresh tokens, rotated on use
}

// devGrant is what a code or refresh token stands for.
type devGrant struct {
	clientID, redirectURI, challenge, scope string
	expires                                 time.Time
}

func newDevIssuer(issuer, resource string) *devIssuer {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return &devIssuer{issuer: issuer, resource: resource, key: key, codes: map[string]devGrant{}, refreshs: map[string]devGrant{}}
}

// register mounts the toy's endpoints under the issuer's path and its
// metadata at the RFC 8414 well-known path.
func (d *devIssuer) register(mux *http.ServeMux) error {
	u, err := url.Parse(d.issuer)
	if err != nil {
		return err
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server"+u.Path, d.metadata)
	mux.HandleFunc("GET "+u.Path+"/authorize", d.authorize)
	mux.HandleFunc("POST "+u.Path+"/token", d.token)
	mux.HandleFunc("POST "+u.Path+"/register", d.registerClient)
	mux.HandleFunc("GET "+u.Path+"/jwks", d.jwks)
	return nil
}

func (d *devIssuer) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         d.issuer,
		"authorization_endpoint":                         d.issuer + "/authorize",
		"token_endpoint":                                 d.issuer + "/token",
		"registration_endpoint":                          d.issuer + "/register",
		"jwks_uri":                                       d.issuer + "/jwks",
		"scopes_supported":                               []string{"mcp"},
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// authorize approves at once: it redirects to redirect_uri with a code,
// the state and the issuer (RFC 9207).
func (d *devIssuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case err != nil || !redirect.IsAbs() || redirect.Fragment != "":
		http.Error(w, "redirect_uri must be an absolute URL", http.StatusBadRequest)
		return
	case q.Get("client_id") == "":
		http.Error(w, "client_id is required", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("iss", d.issuer)
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	switch {
	case q.Get("response_type") != "code":
		back.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		back.Set("error", "invalid_request")
		back.Set("error_description", "PKCE with S256 is required")
	case q.Get("resource") != "" && q.Get("resource") != d.resource:
		back.Set("error", "invalid_target")
	default:
		code := rand.Text()
		if !d.keep(d.codes, code, devGrant{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"),
			challenge: q.Get("code_challenge"), scope: q.Get("scope"), expires: time.Now().Add(time.Minute)}) {
			back.Set("error", "temporarily_unavailable")
		} else {
			back.Set("code", code)
		}
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// keep stores a grant under key, refusing past devMaxGrants.
func (d *devIssuer) keep(m map[string]devGrant, key string, g devGrant) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(m) >= devMaxGrants {
		for k, old := range m {
			if time.Now().After(old.expires) {
				delete(m, k)
			}
		}
		if len(m) >= devMaxGrants {
			return false
		}
	}
	m[key] = g
	return true
}

// take removes and returns the grant under key, if it is still valid.
func (d *devIssuer) take(m map[string]devGrant, key string) (devGrant, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := m[key]
	delete(m, key)
	return g, ok && time.Now().Before(g.expires)
}

// token redeems a code (checking PKCE) or a refresh token for an access
// token: an ES256 JWT for the resource.
func (d *devIssuer) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	var g devGrant
	var ok bool
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok = d.take(d.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		ok = ok && g.redirectURI == f.Get("redirect_uri") && g.clientID == f.Get("client_id") && b64.EncodeToString(sum[:]) == g.challenge
	case "refresh_token":
		g, ok = d.take(d.refreshs, f.Get("refresh_token"))
		ok = ok && (f.Get("client_id") == "" || f.Get("client_id") == g.clientID)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	if g.scope == "" {
		g.scope = "mcp"
	}
	now := time.Now()
	access, err := d.sign(map[string]any{"iss": d.issuer, "aud": d.resource, "sub": "dev-user", "client_id": g.clientID,
		"scope": g.scope, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": rand.Text()})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	refresh := rand.Text()
	g.expires = now.Add(24 * time.Hour)
	d.keep(d.refreshs, refresh, g)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600,
		"refresh_token": refresh, "scope": g.scope})
}

// registerClient registers any client (RFC 7591), as a public one.
func (d *devIssuer) registerClient(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	var meta map[string]any
	if err != nil || json.Unmarshal(body, &meta) != nil || meta == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	meta["client_id"] = "dev-" + strings.ToLower(rand.Text())
	meta["client_id_issued_at"] = time.Now().Unix()
	meta["token_endpoint_auth_method"] = "none"
	writeJSON(w, http.StatusCreated, meta)
}

func (d *devIssuer) jwks(w http.ResponseWriter, r *http.Request) {
	point, _ := d.key.PublicKey.Bytes() // 0x04 || x || y
	writeJSON(w, http.StatusOK, map[string]any{"keys": []any{map[string]string{
		"kty": "EC", "crv": "P-256", "kid": "dev-1", "use": "sig", "alg": "ES256",
		"x": b64.EncodeToString(point[1:33]), "y": b64.EncodeToString(point[33:]),
	}}})
}

// sign returns claims as a compact JWS signed with ES256.
func (d *devIssuer) sign(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString([]byte(`{"alg":"ES256","kid":"dev-1","typ":"at+jwt"}`)) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	rr, s, err := ecdsa.Sign(rand.Reader, d.key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	rr.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64.EncodeToString(sig), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
