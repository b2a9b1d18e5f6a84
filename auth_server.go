package mcp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ErrInvalidToken is the error a TokenVerifier wraps when a token is not
// acceptable: malformed, badly signed, expired, for another audience. The
// bearer middleware answers it with 401 and error="invalid_token"; any
// other error of a verifier is the server's failure (503). Server side.
var ErrInvalidToken = errors.New("invalid token")

// TokenInfo is what a TokenVerifier learnt of a valid access token. A
// verifier may hand the same TokenInfo to several requests (a cache):
// handlers read it and do not change it. Server side.
type TokenInfo struct {
	// Principal is who the token acts for: its subject, else its client.
	// Sessions and tasks are bound to it.
	Principal string
	// ClientID is the OAuth client the token was issued to, if known.
	ClientID string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Expiry is when the token expires.
	Expiry time.Time
	// Claims are the token's claims (a JWT's payload, an introspection
	// response), for checks of the application's own.
	Claims map[string]any
}

// TokenVerifier checks a bearer access token. A token that is not
// acceptable gets an error wrapping ErrInvalidToken. Server side.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (*TokenInfo, error)
}

// BearerAuth is the [Authorizer] of an OAuth resource server: given to
// [WithAuthorizer], it makes the handler require a bearer token in the
// Authorization header of every request (never in the query), checked by
// Verifier. A request without one gets 401 with a WWW-Authenticate
// challenge naming the resource metadata and the scopes needed; a refused
// token the same with error="invalid_token"; a token that lacks a scope
// needed for the request, or for a message of it (see MethodScopes and
// ToolScopes; a batch is refused whole), gets 403 with
// error="insufficient_scope" and the scopes to ask for. A verifier's
// failure other than ErrInvalidToken gets 503. With DPoP set it also
// takes tokens bound to a key, with a proof of possession. The token's principal owns
// the sessions and tasks it creates; handlers read the token through
// RequestInfo.Token. Server side.
type BearerAuth struct {
	// Verifier checks each request's token. Required.
	Verifier TokenVerifier
	// ResourceMetadataURL is where the server's protected resource
	// metadata is (see ProtectedResourceMetadataURL), named in every
	// challenge so that clients find the authorization server.
	ResourceMetadataURL string
	// Scopes are required of every request's token.
	Scopes []string
	// MethodScopes are required, besides Scopes, of a message calling
	// the method, such as "tools/call" or "resources/read".
	MethodScopes map[string][]string
	// ToolScopes are required, besides those, of a tools/call of the
	// named tool.
	ToolScopes map[string][]string
	// DPoP, when set, also accepts access tokens bound to a key (RFC
	// 9449): "Authorization: DPoP <token>" with a proof in the DPoP
	// header, checked by DPoP, signed by the key the token's cnf.jkt
	// names. Refusals then get DPoP challenges (error="invalid_dpop_proof",
	// "invalid_token" or "use_dpop_nonce", algs naming what is accepted)
	// beside the Bearer one. A token bound to a key is refused as a
	// Bearer token, with or without DPoP.
	DPoP *DPoPVerifier
}

// Authorize checks the request's bearer token and Scopes and returns the
// token's principal. Called by itself, as by an Authorizer that wraps it,
// it checks no MethodScopes or ToolScopes, which need the request's
// messages: [WithAuthorizer] given the BearerAuth itself checks those too.
func (a BearerAuth) Authorize(r *http.Request) (principal string, err error) {
	if a.Verifier == nil {
		return "", &authRefusal{status: http.StatusInternalServerError, reason: "BearerAuth has no Verifier"}
	}
	principal, _, err = a.authenticate(nil, r)
	return principal, err
}

// Token returns the verified bearer token of the request, when the
// handler's Authorizer is a [BearerAuth]; nil otherwise, and inside a
// task, which outlives the request that started it. Server side.
func (r *RequestInfo) Token() *TokenInfo {
	if st := routeStream(r.route); st != nil {
		return st.token
	}
	return nil
}

// authRefusal is how a request's authorization failed: its status and
// challenges, and the reason given in the body.
type authRefusal struct {
	status     int
	challenges []string // WWW-Authenticate, one header each
	nonce      string   // DPoP-Nonce; empty: none
	reason     string
}

func (e *authRefusal) Error() string { return e.reason }

// write answers the request with the refusal.
func (e *authRefusal) write(w http.ResponseWriter) {
	for _, c := range e.challenges {
		w.Header().Add("WWW-Authenticate", c)
	}
	if e.nonce != "" {
		w.Header().Set("DPoP-Nonce", e.nonce)
	}
	text := http.StatusText(e.status)
	code := CodeInvalidRequest
	if e.status >= 500 {
		code = CodeInternalError
	}
	writeHTTPError(w, e.status, code, ID{}, text+": "+e.reason)
}

// authenticate checks the request's access token, its DPoP proof if it
// is one, and its Scopes. w, when not nil, gets the next DPoP nonce.
func (b *BearerAuth) authenticate(w http.ResponseWriter, r *http.Request) (string, *TokenInfo, error) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return "", nil, b.refuse(http.StatusUnauthorized, false, "", "a bearer token is required", b.Scopes)
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	dpop := b.DPoP != nil && strings.EqualFold(scheme, "DPoP")
	if len(values) > 1 || (!dpop && !strings.EqualFold(scheme, "Bearer")) {
		return "", nil, b.refuse(http.StatusUnauthorized, false, "", "a bearer token is required in one Authorization header", b.Scopes)
	}
	if !dpop && b.DPoP != nil && b.DPoP.required {
		return "", nil, b.refuse(http.StatusUnauthorized, true, "", "this resource takes only tokens bound to a key, with a DPoP proof", b.Scopes)
	}
	token = strings.TrimLeft(token, " ")
	what := "the bearer token"
	if dpop {
		what = "the access token"
	}
	if !isToken68(token) {
		return "", nil, b.refuse(http.StatusUnauthorized, dpop, "invalid_token", what+" is malformed", b.Scopes)
	}
	ctx := r.Context()
	var proof *dpopProof
	if dpop {
		var why *dpopRefusal
		if proof, why = b.DPoP.check(r, token); why != nil {
			return "", nil, b.refuse(http.StatusUnauthorized, true, why.code, why.reason, b.Scopes)
		}
		ctx = context.WithValue(ctx, dpopProved{}, true)
	}
	info, err := b.Verifier.VerifyToken(ctx, token)
	switch {
	case errors.Is(err, ErrInvalidToken):
		return "", nil, b.refuse(http.StatusUnauthorized, dpop, "invalid_token", err.Error(), b.Scopes)
	case err != nil:
		return "", nil, &authRefusal{status: http.StatusServiceUnavailable, reason: what + " cannot be checked now: " + err.Error()}
	case info == nil || info.Principal == "":
		return "", nil, &authRefusal{status: http.StatusInternalServerError, reason: "the token verifier named no principal"}
	}
	jkt, bound := tokenThumbprint(info)
	switch {
	case !dpop && bound:
		return "", nil, b.refuse(http.StatusUnauthorized, false, "invalid_token", "the token is bound to a key (cnf): a bearer request does not prove it", b.Scopes)
	case dpop && jkt == "":
		return "", nil, b.refuse(http.StatusUnauthorized, true, "invalid_token", "the token is not bound to a DPoP key (cnf.jkt)", b.Scopes)
	case dpop && jkt != proof.jkt:
		return "", nil, b.refuse(http.StatusUnauthorized, true, "invalid_token", "the DPoP proof's key is not the one the token is bound to", b.Scopes)
	}
	if missing := missingScope(info, b.Scopes); missing != "" {
		return "", nil, b.refuse(http.StatusForbidden, dpop, "insufficient_scope", "the token lacks scope '"+missing+"'", b.Scopes)
	}
	if dpop {
		first, err := b.DPoP.replay.FirstUse(r.Context(), proof.replay, proof.until)
		switch {
		case err != nil:
			return "", nil, &authRefusal{status: http.StatusServiceUnavailable, reason: "the DPoP proof cannot be checked now: " + err.Error()}
		case !first:
			return "", nil, b.refuse(http.StatusUnauthorized, true, "invalid_dpop_proof", "DPoP proof: claim jti: the proof was used before", b.Scopes)
		}
		if proof.renonce && w != nil {
			w.Header().Set("DPoP-Nonce", b.DPoP.currentNonce(b.DPoP.now()))
		}
	}
	return info.Principal, info, nil
}

// checkMessages refuses, with 403, a POST with a message whose method or
// tool needs a scope the token lacks; the challenge names every scope the
// POST needs.
func (b *BearerAuth) checkMessages(info *TokenInfo, msgs []*httpMessage) *authRefusal {
	if len(b.MethodScopes) == 0 && len(b.ToolScopes) == 0 {
		return nil
	}
	var why string
	need := b.Scopes
	for _, m := range msgs {
		if m.method == "" {
			continue
		}
		scopes := b.MethodScopes[m.method]
		what := m.method
		if m.method == "tools/call" {
			if name, ok := jsonString(m.name); ok && b.ToolScopes[name] != nil {
				scopes = append(slices.Clip(scopes), b.ToolScopes[name]...)
				what = "tool '" + name + "'"
			}
		}
		for _, s := range scopes {
			if !slices.Contains(need, s) {
				need = append(slices.Clip(need), s)
			}
		}
		if missing := missingScope(info, scopes); missing != "" && why == "" {
			why = "the token lacks scope '" + missing + "' for " + what
		}
	}
	if why == "" {
		return nil
	}
	_, bound := tokenThumbprint(info)
	return b.refuse(http.StatusForbidden, bound && b.DPoP != nil, "insufficient_scope", why, need)
}

// missingScope returns the first of need that info does not grant.
func missingScope(info *TokenInfo, need []string) string {
	for _, s := range need {
		if !slices.Contains(info.Scopes, s) {
			return s
		}
	}
	return ""
}

// refuse makes a refusal with a Bearer challenge (RFC 6750 §3): the error
// code, when there is one, its description, the resource metadata URL
// (RFC 9728 §5.1) and the scopes to ask for. With DPoP on it also has a
// DPoP challenge (RFC 9449 §7.1), with algs, and the Bearer one only
// while bearer tokens are accepted; the error goes in the DPoP challenge
// when dpop is set, which then comes first.
func (b *BearerAuth) refuse(status int, dpop bool, code, reason string, scopes []string) *authRefusal {
	challenge := func(scheme string, withError bool) string {
		var c strings.Builder
		c.WriteString(scheme)
		sep := " "
		param := func(name, value string) {
			c.WriteString(sep + name + `="` + value + `"`)
			sep = ", "
		}
		if code != "" && withError {
			param("error", code)
			param("error_description", challengeText(reason))
		}
		if scheme == "DPoP" {
			param("algs", b.DPoP.algsJoined)
		}
		if b.ResourceMetadataURL != "" {
			param("resource_metadata", challengeText(b.ResourceMetadataURL))
		}
		if len(scopes) > 0 {
			param("scope", challengeText(strings.Join(scopes, " ")))
		}
		return c.String()
	}
	e := &authRefusal{status: status, reason: reason}
	if b.DPoP == nil {
		e.challenges = []string{challenge("Bearer", true)}
		return e
	}
	if b.DPoP.nonceKey != nil {
		e.nonce = b.DPoP.currentNonce(b.DPoP.now())
	}
	e.challenges = []string{challenge("DPoP", dpop)}
	if !b.DPoP.required {
		if dpop {
			e.challenges = append(e.challenges, challenge("Bearer", false))
		} else {
			e.challenges = append([]string{challenge("Bearer", true)}, e.challenges...)
		}
	}
	return e
}

// challengeText keeps what a challenge's quoted value may hold (RFC 6750
// §3: printable ASCII but the quote and the backslash).
func challengeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// isToken68 reports whether s has the syntax of a bearer token (RFC 6750
// §2.1).
func isToken68(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !isToken68Char(body[i]) {
			return false
		}
	}
	return true
}
