package mcp

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// JWS algorithm names of RFC 7518 and RFC 8037 that this package signs and
// verifies.
const (
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

var b64 = base64.RawURLEncoding

// jwtAlgorithm names the JWS algorithm for a private key: RS256 for RSA,
// ES256 for ECDSA on P-256, EdDSA for Ed25519.
func jwtAlgorithm(key crypto.Signer) (string, error) {
	switch k := key.Public().(type) {
	case *rsa.PublicKey:
		return algRS256, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", errors.New("jwt: ECDSA keys must be on P-256 (ES256)")
		}
		return algES256, nil
	case ed25519.PublicKey:
		return algEdDSA, nil
	default:
		return "", fmt.Errorf("jwt: unsupported key type %T", k)
	}
}

// signJWT returns the compact serialisation of a JWT with the given
// claims, signed by key (see jwtAlgorithm); kid, when not empty, names the
// key in the header.
func signJWT(key crypto.Signer, kid string, claims any) (string, error) {
	return signJWTType(key, kid, "JWT", claims)
}

// signJWTType is signJWT with typ in the header.
func signJWTType(key crypto.Signer, kid, typ string, claims any) (string, error) {
	alg, err := jwtAlgorithm(key)
	if err != nil {
		return "", err
	}
	header := map[string]string{"alg": alg, "typ": typ}
	if kid != "" {
		header["kid"] = kid
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("jwt: claims: %w", err)
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	var sig []byte
	switch alg {
	case algEdDSA:
		sig, err = key.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	case algRS256:
		digest := sha256.Sum256([]byte(input))
		sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
	case algES256:
		digest := sha256.Sum256([]byte(input))
		var der []byte
		if der, err = key.Sign(rand.Reader, digest[:], crypto.SHA256); err == nil {
			sig, err = ecdsaRawSignature(der)
		}
	}
	if err != nil {
		return "", fmt.Errorf("jwt: sign: %w", err)
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// ecdsaRawSignature turns an ASN.1 ECDSA signature on P-256 into the 64
// bytes r‖s that JWS uses.
func ecdsaRawSignature(der []byte) ([]byte, error) {
	// SEQUENCE { INTEGER r, INTEGER s }, each at most 33 bytes for P-256.
	if len(der) < 8 || der[0] != 0x30 || int(der[1]) != len(der)-2 {
		return nil, errors.New("jwt: malformed ECDSA signature")
	}
	out := make([]byte, 64)
	rest := der[2:]
	for i := range 2 {
		if len(rest) < 2 || rest[0] != 0x02 || int(rest[1]) > len(rest)-2 {
			return nil, errors.New("jwt: malformed ECDSA signature")
		}
		n := rest[2 : 2+int(rest[1])]
		for len(n) > 0 && n[0] == 0 {
			n = n[1:]
		}
		if len(n) > 32 {
			return nil, errors.New("jwt: malformed ECDSA signature")
		}
		copy(out[32*(i+1)-len(n):32*(i+1)], n)
		rest = rest[2+int(rest[1]):]
	}
	return out, nil
}

// jwtToken is a compact JWS taken apart: its header, its claims and the
// signature over signingInput. Nothing in it is trusted until verified.
type jwtToken struct {
	alg, kid     string
	typ          *string // the header's typ; nil when it has none
	claims       map[string]any
	signingInput string
	sig          []byte
}

// b64strict decodes base64url without padding, refusing any other
// encoding of the same bytes, so that one token has one reading.
var b64strict = base64.RawURLEncoding.Strict()

// parseJWT takes a compact JWS apart, refusing one longer than maxBytes
// before decoding anything, an algorithm other than the three this package
// verifies (none and the HMAC ones among them) and any critical header
// extension. Every error wraps ErrInvalidToken.
func parseJWT(token string, maxBytes int) (*jwtToken, error) {
	if len(token) > maxBytes {
		return nil, fmt.Errorf("%w: the token is longer than %d bytes", ErrInvalidToken, maxBytes)
	}
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, fmt.Errorf("%w: not a compact JWS (three dot-separated parts)", ErrInvalidToken)
	}
	hb, err := b64strict.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%w: header: not base64url", ErrInvalidToken)
	}
	var header struct {
		Alg  *string         `json:"alg"`
		Kid  *string         `json:"kid"`
		Typ  *string         `json:"typ"`
		Crit json.RawMessage `json:"crit"`
	}
	if err := json.Unmarshal(hb, &header); err != nil || header.Alg == nil {
		return nil, fmt.Errorf("%w: header: not a JSON object with a string alg", ErrInvalidToken)
	}
	switch *header.Alg {
	case algRS256, algES256, algEdDSA:
	default:
		return nil, fmt.Errorf("%w: header: alg %q is not accepted (RS256, ES256, EdDSA)", ErrInvalidToken, *header.Alg)
	}
	if header.Crit != nil {
		return nil, fmt.Errorf("%w: header: crit names extensions this verifier does not understand", ErrInvalidToken)
	}
	pb, err := b64strict.DecodeString(p)
	if err != nil {
		return nil, fmt.Errorf("%w: payload: not base64url", ErrInvalidToken)
	}
	var claims map[string]any
	if err := json.Unmarshal(pb, &claims); err != nil || claims == nil {
		return nil, fmt.Errorf("%w: payload: not a JSON object", ErrInvalidToken)
	}
	sig, err := b64strict.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: not base64url", ErrInvalidToken)
	}
	t := &jwtToken{alg: *header.Alg, typ: header.Typ, claims: claims, signingInput: token[:len(h)+1+len(p)], sig: sig}
	if header.Kid != nil {
		t.kid = *header.Kid
	}
	return t, nil
}

// verifySignature checks t's signature with key, whose type must be the
// one t's algorithm names: a token cannot choose how its key is used.
func (t *jwtToken) verifySignature(key *jsonWebKey) error {
	if key.alg() != t.alg {
		return fmt.Errorf("%w: header: alg %s does not match key %q (%s)", ErrInvalidToken, t.alg, key.kid, key.alg())
	}
	ok := false
	switch k := key.pub.(type) {
	case *rsa.PublicKey:
		digest := sha256.Sum256([]byte(t.signingInput))
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], t.sig) == nil
	case *ecdsa.PublicKey:
		if len(t.sig) == 64 {
			digest := sha256.Sum256([]byte(t.signingInput))
			r, s := new(big.Int).SetBytes(t.sig[:32]), new(big.Int).SetBytes(t.sig[32:])
			ok = ecdsa.Verify(k, digest[:], r, s)
		}
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, []byte(t.signingInput), t.sig)
	}
	if !ok {
		return fmt.Errorf("%w: signature: does not verify with key %q", ErrInvalidToken, key.kid)
	}
	return nil
}

// Defaults of JWTVerifierConfig.
const (
	// DefaultTokenLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultTokenLeeway = time.Minute
	// DefaultMaxTokenBytes bounds the length of a token, checked before
	// it is decoded.
	DefaultMaxTokenBytes = 16 << 10
)

// JWTVerifierConfig configures [NewJWTVerifier]. Server side.
type JWTVerifierConfig struct {
	// Issuer is the authorization server's issuer identifier; a token's
	// iss must equal it. Required.
	Issuer string
	// Audience is this resource's canonical URL (the resource of its
	// protected resource metadata); a token's aud must name it. Required.
	Audience string
	// JWKSURL is where the issuer's signing keys are. Empty: read from
	// the issuer's RFC 8414 metadata (or its OpenID configuration).
	JWKSURL string
	// HTTPClient fetches the keys; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Leeway is the clock skew allowed on exp, nbf and iat; zero means
	// DefaultTokenLeeway, a negative value none.
	Leeway time.Duration
	// MaxTokenBytes bounds a token's length; zero means
	// DefaultMaxTokenBytes.
	MaxTokenBytes int
	// MinRefreshInterval is the least time between two fetches of the
	// keys: a token naming an unknown key triggers at most one fetch per
	// interval. Zero means DefaultJWKSMinRefresh.
	MinRefreshInterval time.Duration
	// CacheTTL is how long fetched keys are used when the response has
	// no Cache-Control max-age; zero means DefaultJWKSCacheTTL.
	// MaxCacheTTL caps a max-age; zero means DefaultJWKSMaxCacheTTL.
	CacheTTL, MaxCacheTTL time.Duration
	// MaxJWKSBytes bounds a key set response (and the issuer's metadata);
	// zero means DefaultMaxJWKSBytes.
	MaxJWKSBytes int64
	// FetchTimeout bounds one fetch of the keys, shared by the requests
	// that wait for it; zero means DefaultJWKSFetchTimeout.
	FetchTimeout time.Duration
	// AllowGenericType also accepts tokens whose header typ is "JWT" or
	// absent, as issuers that predate RFC 9068 send them. By default typ
	// must be "at+jwt", so that another JWT of the issuer (an ID token, a
	// logout token) is not taken for an access token.
	AllowGenericType bool
}

// JWTVerifier verifies JWT access tokens (RFC 9068) signed with RS256,
// ES256 or EdDSA by keys of the issuer's JWKS, fetched and cached. It is a
// [TokenVerifier]; safe for concurrent use. Server side.
type JWTVerifier struct {
	issuer, audience string
	leeway           time.Duration
	maxTokenBytes    int
	genericType      bool
	keys             *jwksCache
}

// NewJWTVerifier returns a verifier for cfg. It checks cfg but fetches
// nothing: the keys are fetched on the first token. Server side.
func NewJWTVerifier(cfg JWTVerifierConfig) (*JWTVerifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("mcp: JWTVerifierConfig.Issuer is required")
	}
	if cfg.Audience == "" {
		return nil, errors.New("mcp: JWTVerifierConfig.Audience is required")
	}
	if cfg.JWKSURL == "" {
		if _, err := url.Parse(cfg.Issuer); err != nil {
			return nil, errorf("JWTVerifierConfig.Issuer: %w", err)
		}
	} else if u, err := url.Parse(cfg.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errorf("JWTVerifierConfig.JWKSURL %q is not an http(s) URL", cfg.JWKSURL)
	}
	v := &JWTVerifier{
		issuer: cfg.Issuer, audience: cfg.Audience,
		leeway: cmp.Or(cfg.Leeway, DefaultTokenLeeway), maxTokenBytes: cmp.Or(cfg.MaxTokenBytes, DefaultMaxTokenBytes),
		genericType: cfg.AllowGenericType, keys: newJWKSCache(cfg),
	}
	v.leeway = max(v.leeway, 0)
	return v, nil
}

// VerifyToken parses token, checks its type (typ at+jwt, see
// JWTVerifierConfig.AllowGenericType), its signature with the issuer's key
// it names and its claims: iss, aud, exp, nbf, iat; a token bound to a
// key (cnf) only when [BearerAuth] checks its DPoP proof. A token that
// fails any check gets an error wrapping ErrInvalidToken; a failure to fetch the
// keys gets another error. Server side.
func (v *JWTVerifier) VerifyToken(ctx context.Context, token string) (*TokenInfo, error) {
	t, err := parseJWT(token, v.maxTokenBytes)
	if err != nil {
		return nil, err
	}
	if err := v.checkType(t.typ); err != nil {
		return nil, err // before any key is looked up: a refusal costs no fetch
	}
	key, err := v.keys.key(ctx, t.kid, t.alg)
	if err != nil {
		return nil, err
	}
	if err := t.verifySignature(key); err != nil {
		return nil, err
	}
	info, err := v.checkClaims(t.claims, time.Now())
	if err != nil {
		return nil, err
	}
	return info, refuseUnproved(ctx, info, "claim")
}

// checkType accepts the typ of an access token (RFC 9068 §2.1): at+jwt,
// with or without the "application/" prefix (RFC 7515 §4.1.9), in any
// case; with genericType also JWT, or no typ.
func (v *JWTVerifier) checkType(typ *string) error {
	if typ == nil {
		if v.genericType {
			return nil
		}
		return fmt.Errorf("%w: header: typ is missing, an access token's is at+jwt (RFC 9068)", ErrInvalidToken)
	}
	t := strings.ToLower(*typ)
	t = strings.TrimPrefix(t, "application/")
	if t == "at+jwt" || (v.genericType && t == "jwt") {
		return nil
	}
	return fmt.Errorf("%w: header: typ %q is not at+jwt (RFC 9068)", ErrInvalidToken, *typ)
}

// checkClaims checks a verified token's claims at now and reads what a
// TokenInfo holds.
func (v *JWTVerifier) checkClaims(claims map[string]any, now time.Time) (*TokenInfo, error) {
	if iss, _ := claims["iss"].(string); iss != v.issuer {
		return nil, fmt.Errorf("%w: claim iss: %q is not the issuer %q", ErrInvalidToken, iss, v.issuer)
	}
	if !audienceHas(claims["aud"], v.audience) {
		return nil, fmt.Errorf("%w: claim aud: does not name this resource %q", ErrInvalidToken, v.audience)
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return nil, fmt.Errorf("%w: claim exp: missing or not a number", ErrInvalidToken)
	}
	if now.After(exp.Add(v.leeway)) {
		return nil, fmt.Errorf("%w: claim exp: the token expired at %s", ErrInvalidToken, exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Add(v.leeway).Before(nbf) {
		return nil, fmt.Errorf("%w: claim nbf: the token is not valid before %s", ErrInvalidToken, nbf.UTC().Format(time.RFC3339))
	} else if !ok && claims["nbf"] != nil {
		return nil, fmt.Errorf("%w: claim nbf: not a number", ErrInvalidToken)
	}
	if iat, ok := numericDate(claims["iat"]); ok && now.Add(v.leeway).Before(iat) {
		return nil, fmt.Errorf("%w: claim iat: the token was issued in the future (%s)", ErrInvalidToken, iat.UTC().Format(time.RFC3339))
	} else if !ok && claims["iat"] != nil {
		return nil, fmt.Errorf("%w: claim iat: not a number", ErrInvalidToken)
	}
	return tokenInfoOf(claims, exp, "claims")
}

// tokenInfoOf reads what a TokenInfo holds from a valid token's claims (a
// JWT's, an introspection response's): its principal is sub, else
// client_id, and a token naming neither is refused. what names the claims
// in an error.
func tokenInfoOf(claims map[string]any, exp time.Time, what string) (*TokenInfo, error) {
	info := &TokenInfo{Expiry: exp, Claims: claims, Scopes: scopesOf(claims)}
	info.ClientID, _ = claims["client_id"].(string)
	sub, _ := claims["sub"].(string)
	info.Principal = cmp.Or(sub, info.ClientID)
	if info.Principal == "" {
		return nil, fmt.Errorf("%w: %s sub and client_id: the token names nobody", ErrInvalidToken, what)
	}
	return info, nil
}

// audienceHas reports whether an aud claim, a string or an array of
// strings, names want.
func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if s, _ := v.(string); s == want {
				return true
			}
		}
	}
	return false
}

// numericDate reads a NumericDate claim (seconds since the epoch, perhaps
// fractional); a date beyond any clock's reach is clamped.
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) {
		return time.Time{}, false
	}
	const limit = 1 << 40 // tens of thousands of years either way
	f = min(max(f, -limit), limit)
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// scopesOf reads the granted scopes: scope, a space-separated string
// (RFC 9068, RFC 8693), or scp, an array of strings (or a string) as some
// issuers write it.
func scopesOf(claims map[string]any) []string {
	v, ok := claims["scope"]
	if !ok {
		v = claims["scp"]
	}
	switch s := v.(type) {
	case string:
		return strings.Fields(s)
	case []any:
		out := make([]string, 0, len(s))
		for _, v := range s {
			if str, ok := v.(string); ok && str != "" {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
