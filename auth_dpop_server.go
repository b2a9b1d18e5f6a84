package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults and bounds of the DPoP options. Server side.
const (
	// DefaultDPoPProofMaxAge is how old a proof's iat may be.
	DefaultDPoPProofMaxAge = 60 * time.Second
	// DefaultDPoPProofMaxSkew is how far in the future a proof's iat may
	// be, for a client whose clock runs ahead.
	DefaultDPoPProofMaxSkew = 5 * time.Second
	// DefaultMaxDPoPProofBytes bounds a DPoP header, checked before it is
	// decoded: an RSA key of 8192 bits and its signature fit.
	DefaultMaxDPoPProofBytes = 8 << 10
	// DefaultDPoPNonceLifetime is how long a server nonce is current.
	DefaultDPoPNonceLifetime = 5 * time.Minute
)

// Clamps of the DPoP options' durations.
const (
	minDPoPProofMaxAge, maxDPoPProofMaxAge = time.Second, 10 * time.Minute
	maxDPoPProofMaxSkew                    = time.Minute
	minDPoPNonceLifetime                   = time.Second
	maxDPoPNonceLifetime                   = 24 * time.Hour
)

// algPS256 is RSASSA-PSS with SHA-256 (RFC 7518 §3.5), accepted in proofs.
const algPS256 = "PS256"

// dpopAlgorithms are the proof algorithms this package verifies.
var dpopAlgorithms = []string{algES256, algEdDSA, algPS256, algRS256}

// DPoPVerifier checks DPoP proofs (RFC 9449) for a resource server: given
// to [BearerAuth].DPoP, it makes the bearer middleware accept
// "Authorization: DPoP <token>" with a proof of possession of the key the
// token is bound to. Make one with [NewDPoPVerifier]; safe for concurrent
// use. Server side.
type DPoPVerifier struct {
	algs       []string
	maxAge     time.Duration
	maxSkew    time.Duration
	maxBytes   int
	replay     DPoPReplayStore
	publicURL  *url.URL // WithDPoPPublicURL; nil: the request's own
	forwarded  bool     // WithDPoPForwardedHeaders
	required   bool     // WithDPoPRequired
	nonceKey   []byte   // WithDPoPNonce; nil: no nonces
	nonceLife  time.Duration
	algsJoined string
	now        func() time.Time
}

// DPoPOption configures [NewDPoPVerifier]. Server side.
type DPoPOption func(*DPoPVerifier)

// NewDPoPVerifier returns a verifier of DPoP proofs: by default it accepts
// proofs signed with ES256, EdDSA, PS256 or RS256, issued at most
// DefaultDPoPProofMaxAge ago (DefaultDPoPProofMaxSkew ahead), each once
// (an in-memory [MemoryDPoPReplayStore]), for the URL the request reached
// the server at, and it keeps accepting bearer tokens not bound to a key.
// Server side.
func NewDPoPVerifier(opts ...DPoPOption) *DPoPVerifier {
	v := &DPoPVerifier{
		algs: dpopAlgorithms, maxAge: DefaultDPoPProofMaxAge, maxSkew: DefaultDPoPProofMaxSkew,
		maxBytes: DefaultMaxDPoPProofBytes, nonceLife: DefaultDPoPNonceLifetime, now: time.Now,
	}
	for _, o := range opts {
		o(v)
	}
	if v.replay == nil {
		v.replay = NewMemoryDPoPReplayStore(0)
	}
	v.algsJoined = strings.Join(v.algs, " ")
	return v
}

// WithDPoPAlgorithms limits the proofs' signing algorithms to algs, among
// ES256, EdDSA (Ed25519), PS256 and RS256; others are ignored, and an
// empty list keeps them all. Server side.
func WithDPoPAlgorithms(algs ...string) DPoPOption {
	return func(v *DPoPVerifier) {
		var keep []string
		for _, a := range algs {
			if slices.Contains(dpopAlgorithms, a) && !slices.Contains(keep, a) {
				keep = append(keep, a)
			}
		}
		if len(keep) > 0 {
			v.algs = keep
		}
	}
}

// WithDPoPProofAge sets how old a proof's iat may be (maxAge, clamped to
// 1 s … 10 min) and how far in the future (maxSkew, clamped to 0 … 1 min);
// zero keeps a default, DefaultDPoPProofMaxAge or DefaultDPoPProofMaxSkew.
// A proof is remembered against replay until it is too old. Server side.
func WithDPoPProofAge(maxAge, maxSkew time.Duration) DPoPOption {
	return func(v *DPoPVerifier) {
		if maxAge != 0 {
			v.maxAge = min(max(maxAge, minDPoPProofMaxAge), maxDPoPProofMaxAge)
		}
		if maxSkew != 0 {
			v.maxSkew = min(max(maxSkew, 0), maxDPoPProofMaxSkew)
		}
	}
}

// WithDPoPMaxProofBytes bounds the DPoP header's length, checked before
// anything is decoded; zero or less keeps DefaultMaxDPoPProofBytes. Server
// side.
func WithDPoPMaxProofBytes(n int) DPoPOption {
	return func(v *DPoPVerifier) {
		if n > 0 {
			v.maxBytes = n
		}
	}
}

// WithDPoPReplayStore keeps the accepted proofs in s, which the instances
// of a server behind one address must share; nil keeps a
// [MemoryDPoPReplayStore] of DefaultDPoPReplayCacheSize. Server side.
func WithDPoPReplayStore(s DPoPReplayStore) DPoPOption {
	return func(v *DPoPVerifier) { v.replay = s }
}

// WithDPoPPublicURL sets the scheme, host and path prefix clients reach
// the server at, for a server behind a proxy: a proof's htu must then be
// base followed by the request's path as the server sees it (base
// https://api.example.com/tools and a request for /mcp expect
// https://api.example.com/tools/mcp). Without it, and without
// [WithDPoPForwardedHeaders], htu must be the URL the request reached the
// server at: http or https as the connection is, its Host header, its
// path. It panics when base is not an absolute http(s) URL. Server side.
func WithDPoPPublicURL(base string) DPoPOption {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		panic(fmt.Sprintf("mcp: WithDPoPPublicURL: %q is not an absolute http(s) URL without query", base))
	}
	return func(v *DPoPVerifier) { v.publicURL = u }
}

// WithDPoPForwardedHeaders takes the scheme and host of a proof's htu
// from the request's X-Forwarded-Proto and X-Forwarded-Host headers, when
// it has them. Use it only behind a proxy that sets both and drops what
// clients send: anyone else can choose them. [WithDPoPPublicURL] takes
// precedence. Server side.
func WithDPoPForwardedHeaders() DPoPOption {
	return func(v *DPoPVerifier) { v.forwarded = true }
}

// WithDPoPRequired refuses access tokens that are not bound to a key, so
// that every request proves possession: a plain Bearer token gets 401
// with a DPoP challenge. The resource metadata then says
// dpop_bound_access_tokens_required. Server side.
func WithDPoPRequired() DPoPOption {
	return func(v *DPoPVerifier) { v.required = true }
}

// WithDPoPNonce makes the server issue nonces (RFC 9449 §9): a proof must
// carry the current one, given in the DPoP-Nonce header of the answers,
// or the request gets 401 with error="use_dpop_nonce" and the nonce to
// use. A nonce is current for lifetime (zero: DefaultDPoPNonceLifetime;
// clamped to 1 s … 24 h) and accepted for one lifetime more. Nonces are
// signed with key, which the instances of a server must share; an empty
// key takes a random one, good for one instance. Server side.
func WithDPoPNonce(key []byte, lifetime time.Duration) DPoPOption {
	return func(v *DPoPVerifier) {
		v.nonceKey = slices.Clone(key)
		if len(v.nonceKey) == 0 {
			v.nonceKey = make([]byte, 32)
			rand.Read(v.nonceKey)
		}
		if lifetime != 0 {
			v.nonceLife = min(max(lifetime, minDPoPNonceLifetime), maxDPoPNonceLifetime)
		}
	}
}

// Advertise puts what the verifier accepts in m, the server's protected
// resource metadata: dpop_signing_alg_values_supported, and
// dpop_bound_access_tokens_required with [WithDPoPRequired]. Server side.
func (v *DPoPVerifier) Advertise(m *ProtectedResourceMetadata) {
	m.DPoPSigningAlgValuesSupported = slices.Clone(v.algs)
	m.DPoPBoundAccessTokensRequired = v.required
}

// dpopProof is what a checked proof binds: the thumbprint of its key, and
// the key under which it is remembered against replay, until when.
type dpopProof struct {
	jkt     string
	replay  string
	until   time.Time
	renonce bool // the proof's nonce is not the current one: send it
}

// dpopRefusal is why a proof was refused: its error code and reason.
type dpopRefusal struct {
	code, reason string
}

func proofRefusal(format string, args ...any) *dpopRefusal {
	return &dpopRefusal{code: "invalid_dpop_proof", reason: "DPoP proof: " + fmt.Sprintf(format, args...)}
}

// proofHeader is a proof's JOSE header.
type proofHeader struct {
	Typ  *string         `json:"typ"`
	Alg  *string         `json:"alg"`
	JWK  json.RawMessage `json:"jwk"`
	Crit json.RawMessage `json:"crit"`
}

// proofClaims are a proof's claims.
type proofClaims struct {
	Jti   *string  `json:"jti"`
	Htm   *string  `json:"htm"`
	Htu   *string  `json:"htu"`
	Iat   *float64 `json:"iat"`
	Ath   *string  `json:"ath"`
	Nonce *string  `json:"nonce"`
}

// privateJWKMembers are the members of a private or symmetric JWK (RFC
// 7518 §6): a proof's jwk holding one is refused.
var privateJWKMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// check checks the request's proof for token as RFC 9449 §4.3 lists,
// all but the binding to the token's key and the replay, which need the
// token verified.
func (v *DPoPVerifier) check(r *http.Request, token string) (*dpopProof, *dpopRefusal) {
	values := r.Header.Values("DPoP")
	if len(values) != 1 {
		return nil, proofRefusal("the request must have exactly one DPoP header, it has %d", len(values))
	}
	jws := values[0]
	if len(jws) > v.maxBytes {
		return nil, proofRefusal("longer than %d bytes", v.maxBytes)
	}
	h, rest, ok1 := strings.Cut(jws, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, proofRefusal("not a compact JWS")
	}
	var header proofHeader
	if hb, err := b64strict.DecodeString(h); err != nil || json.Unmarshal(hb, &header) != nil {
		return nil, proofRefusal("header: not base64url JSON")
	}
	if header.Typ == nil || strings.TrimPrefix(strings.ToLower(*header.Typ), "application/") != "dpop+jwt" {
		return nil, proofRefusal("header: typ must be dpop+jwt")
	}
	if header.Alg == nil || !slices.Contains(v.algs, *header.Alg) {
		return nil, proofRefusal("header: alg is not one of %s", v.algsJoined)
	}
	if header.Crit != nil {
		return nil, proofRefusal("header: crit names extensions this server does not understand")
	}
	pub, jkt, why := proofKey(header.JWK, *header.Alg)
	if why != "" {
		return nil, proofRefusal("header: jwk: %s", why)
	}
	sig, err := b64strict.DecodeString(s)
	if err != nil || !verifyProofSignature(*header.Alg, pub, jws[:len(h)+1+len(p)], sig) {
		return nil, proofRefusal("the signature does not verify with the header's jwk")
	}
	var c proofClaims
	if pb, err := b64strict.DecodeString(p); err != nil || json.Unmarshal(pb, &c) != nil {
		return nil, proofRefusal("payload: not base64url JSON with string jti, htm, htu, ath, nonce and numeric iat")
	}
	switch {
	case c.Jti == nil || *c.Jti == "":
		return nil, proofRefusal("claim jti is missing")
	case c.Htm == nil || *c.Htm != r.Method:
		return nil, proofRefusal("claim htm is not the request's method %s", r.Method)
	case c.Htu == nil || !sameHTU(*c.Htu, v.requestURL(r)):
		return nil, proofRefusal("claim htu is not the request's URL %s", challengeText(v.requestURL(r)))
	case c.Iat == nil:
		return nil, proofRefusal("claim iat is missing")
	case c.Ath == nil || !hmac.Equal([]byte(*c.Ath), []byte(accessTokenHash(token))):
		return nil, proofRefusal("claim ath is not the hash of the access token")
	}
	now := v.now()
	iat, _ := numericDate(*c.Iat)
	if iat.Before(now.Add(-v.maxAge)) {
		return nil, proofRefusal("claim iat: issued more than %s ago", v.maxAge)
	}
	if iat.After(now.Add(v.maxSkew)) {
		return nil, proofRefusal("claim iat: issued in the future")
	}
	proof := &dpopProof{jkt: jkt, until: iat.Add(v.maxAge)}
	if v.nonceKey != nil {
		current, ok := v.checkNonce(c.Nonce, now)
		if !ok {
			return nil, &dpopRefusal{code: "use_dpop_nonce", reason: "DPoP proof: the server's current nonce is required"}
		}
		proof.renonce = !current
	}
	id := sha256.Sum256([]byte(jkt + "\x00" + *c.Jti))
	proof.replay = b64.EncodeToString(id[:])
	return proof, nil
}

// proofKey reads a proof's jwk: a public key of the type alg uses, and
// its RFC 7638 thumbprint; or why it is refused.
func proofKey(data json.RawMessage, alg string) (crypto.PublicKey, string, string) {
	var members map[string]json.RawMessage
	if data == nil || json.Unmarshal(data, &members) != nil || members == nil {
		return nil, "", "missing, or not an object"
	}
	for _, m := range privateJWKMembers {
		if _, ok := members[m]; ok {
			return nil, "", fmt.Sprintf("holds the private member %q: a proof carries only the public key", m)
		}
	}
	var raw rawJWK
	if json.Unmarshal(data, &raw) != nil {
		return nil, "", "members of the wrong type"
	}
	if raw.Alg != "" && raw.Alg != alg {
		return nil, "", fmt.Sprintf("its alg %q is not the header's", raw.Alg)
	}
	raw.Alg, raw.Use, raw.KeyOps = "", "", nil
	key := raw.key()
	var thumb string
	switch {
	case key == nil:
		return nil, "", "not a public key this server verifies (EC P-256, RSA of 2048 to 8192 bits, Ed25519)"
	case key.alg() == algES256 && alg == algES256:
		return key.pub, jwkThumbprint(dpopPublicJWK{Crv: "P-256", Kty: "EC", X: raw.X, Y: raw.Y}), ""
	case key.alg() == algRS256 && (alg == algRS256 || alg == algPS256):
		thumb = `{"e":"` + raw.E + `","kty":"RSA","n":"` + raw.N + `"}`
	case key.alg() == algEdDSA && alg == algEdDSA:
		thumb = `{"crv":"Ed25519","kty":"OKP","x":"` + raw.X + `"}`
	default:
		return nil, "", fmt.Sprintf("a %s key does not sign %s", raw.Kty, alg)
	}
	sum := sha256.Sum256([]byte(thumb))
	return key.pub, b64.EncodeToString(sum[:]), ""
}

// verifyProofSignature checks sig over input with pub by alg.
func verifyProofSignature(alg string, pub crypto.PublicKey, input string, sig []byte) bool {
	digest := sha256.Sum256([]byte(input))
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if len(sig) != 64 {
			return false
		}
		return ecdsa.Verify(k, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	case *rsa.PublicKey:
		if alg == algPS256 {
			return rsa.VerifyPSS(k, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil
	case ed25519.PublicKey:
		return ed25519.Verify(k, []byte(input), sig)
	}
	return false
}

// requestURL is the URL a proof's htu must name for r, without query.
func (v *DPoPVerifier) requestURL(r *http.Request) string {
	path := r.URL.EscapedPath()
	if uri := r.RequestURI; strings.HasPrefix(uri, "/") { // the path as sent, before any StripPrefix
		path, _, _ = strings.Cut(uri, "?")
	} else if u, err := url.ParseRequestURI(uri); err == nil && u.Host != "" {
		path = u.EscapedPath()
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	switch {
	case v.publicURL != nil:
		return v.publicURL.Scheme + "://" + v.publicURL.Host + strings.TrimSuffix(v.publicURL.EscapedPath(), "/") + path
	case v.forwarded:
		if p := firstForwarded(r.Header.Get("X-Forwarded-Proto")); p != "" {
			scheme = p
		}
		if h := firstForwarded(r.Header.Get("X-Forwarded-Host")); h != "" {
			host = h
		}
	}
	return scheme + "://" + host + path
}

// firstForwarded is the first of a comma-separated X-Forwarded- value.
func firstForwarded(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

// sameHTU reports whether a proof's htu names the request's URL want,
// ignoring its query and fragment, after the syntax- and scheme-based
// normalisations of RFC 3986 §6.2.2 and §6.2.3 that RFC 9449 §4.3 asks
// for: case of scheme and host, default port, empty path, percent-encoding.
func sameHTU(htu, want string) bool {
	a, ok1 := normalHTU(htu)
	b, ok2 := normalHTU(want)
	return ok1 && ok2 && a == b
}

// normalHTU normalises an http(s) URL, dropping its query and fragment.
func normalHTU(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	switch scheme {
	case "https":
		host = strings.TrimSuffix(host, ":443")
	case "http":
		host = strings.TrimSuffix(host, ":80")
	default:
		return "", false
	}
	path := normalPercent(u.EscapedPath())
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, true
}

// normalPercent writes each percent-encoding in upper case and decodes
// those of unreserved characters (RFC 3986 §6.2.2.1 and §6.2.2.2).
func normalPercent(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			c := unhex(p[i+1])<<4 | unhex(p[i+2])
			if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0) {
				b.WriteByte(c)
			} else {
				b.WriteString(strings.ToUpper(p[i : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// nonceAt is the nonce of the lifetime window n: the window's number and
// its HMAC, base64url.
func (v *DPoPVerifier) nonceAt(n int64) string {
	var buf [8 + 16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(n))
	mac := hmac.New(sha256.New, v.nonceKey)
	mac.Write([]byte("mcp dpop nonce"))
	mac.Write(buf[:8])
	copy(buf[8:], mac.Sum(nil))
	return b64.EncodeToString(buf[:])
}

// window is the number of the nonce lifetime window now falls in.
func (v *DPoPVerifier) window(now time.Time) int64 {
	return now.UnixNano() / int64(v.nonceLife)
}

// currentNonce is the nonce to send at now.
func (v *DPoPVerifier) currentNonce(now time.Time) string {
	return v.nonceAt(v.window(now))
}

// checkNonce accepts a nonce of the current window, the one before (a
// client that just got it) or the one after (another instance's clock
// ahead), and reports whether it is the current one.
func (v *DPoPVerifier) checkNonce(nonce *string, now time.Time) (current, ok bool) {
	if nonce == nil || len(*nonce) != 32 {
		return false, false
	}
	raw, err := b64strict.DecodeString(*nonce)
	if err != nil || len(raw) != 24 {
		return false, false
	}
	n := int64(binary.BigEndian.Uint64(raw[:8]))
	cur := v.window(now)
	if n < cur-1 || n > cur+1 || !hmac.Equal([]byte(v.nonceAt(n)), []byte(*nonce)) {
		return false, false
	}
	return n == cur, true
}

// dpopProved marks the context of a token verification when the token
// came with a DPoP proof, which lets the verifiers accept a token bound to
// a key; the middleware then checks the key is the proof's.
type dpopProved struct{}

// refuseUnproved refuses a token bound to a key (cnf) when ctx does not
// say a DPoP proof came with it: a bearer request proves no key. what
// names the claims in the error.
func refuseUnproved(ctx context.Context, info *TokenInfo, what string) error {
	if _, bound := info.Claims["cnf"]; bound && ctx.Value(dpopProved{}) == nil {
		return fmt.Errorf("%w: %s cnf: the token is bound to a key, which a bearer request does not prove", ErrInvalidToken, what)
	}
	return nil
}

// tokenThumbprint is the key thumbprint a token is bound to (cnf.jkt,
// RFC 9449 §6), and whether it is bound to any key.
func tokenThumbprint(info *TokenInfo) (jkt string, bound bool) {
	cnf, bound := info.Claims["cnf"]
	if m, ok := cnf.(map[string]any); ok {
		jkt, _ = m["jkt"].(string)
	}
	return jkt, bound
}
