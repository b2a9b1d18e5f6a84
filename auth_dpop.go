package mcp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DPoP (RFC 9449): a proof of possession of a key, a JWT signed by it,
// sent with every request that carries a token bound to that key. This
// file builds proofs and names keys; the OAuth client sends them.

// dpopProofType is the typ of a DPoP proof's header.
const dpopProofType = "dpop+jwt"

// maxDPoPNonceBytes bounds a nonce a server hands out (RFC 9449 section
// 8: 1*NQCHAR); a longer one is ignored, not repeated in every proof.
const maxDPoPNonceBytes = 512

// maxDPoPOrigins bounds the origins whose latest nonce is remembered.
const maxDPoPOrigins = 32

// dpopPublicJWK is the public JWK of an ECDSA P-256 key, its members in
// the lexicographic order RFC 7638 hashes them in.
type dpopPublicJWK struct {
	Crv string `json:"crv"`
	Kty string `json:"kty"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// ecJWK returns the public JWK of an ECDSA P-256 key.
func ecJWK(pub *ecdsa.PublicKey) (dpopPublicJWK, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return dpopPublicJWK{}, errors.New("dpop: the key must be ECDSA on P-256 (ES256)")
	}
	// The uncompressed point is 0x04 ‖ X ‖ Y, each 32 bytes, as JWK wants.
	raw, err := pub.Bytes()
	if err != nil || len(raw) != 65 {
		return dpopPublicJWK{}, errors.New("dpop: the public key does not encode")
	}
	return dpopPublicJWK{Crv: "P-256", Kty: "EC", X: b64.EncodeToString(raw[1:33]), Y: b64.EncodeToString(raw[33:])}, nil
}

// jwkThumbprint is the RFC 7638 SHA-256 thumbprint of an EC public JWK,
// base64url-encoded: the jkt a token bound to the key names in its cnf
// claim (RFC 9449 section 6).
func jwkThumbprint(k dpopPublicJWK) string {
	// The required members only, in order, without whitespace: exactly
	// what encoding/json writes for the struct.
	data, _ := json.Marshal(k)
	sum := sha256.Sum256(data)
	return b64.EncodeToString(sum[:])
}

// accessTokenHash is the ath of a proof sent with an access token:
// base64url(SHA-256(the token's ASCII bytes)) (RFC 9449 section 4.2).
func accessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return b64.EncodeToString(sum[:])
}

// dpopHTU is the htu of a request to u: the URL without its query and
// fragment, scheme and host in lower case, an empty path as "/" (RFC 9449
// section 4.2 and the normalisation of RFC 3986 section 6.2.2).
func dpopHTU(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
}

// dpopKey is a key that signs DPoP proofs, with its public JWK and
// thumbprint worked out once.
type dpopKey struct {
	signer     crypto.Signer
	jwk        dpopPublicJWK
	thumbprint string
}

// newDPoPKey wraps signer, which must hold an ECDSA P-256 key; a nil
// signer gets a new key.
func newDPoPKey(signer crypto.Signer) (*dpopKey, error) {
	if signer == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("dpop: generating a key: %w", err)
		}
		signer = k
	}
	pub, _ := signer.Public().(*ecdsa.PublicKey)
	jwk, err := ecJWK(pub)
	if err != nil {
		return nil, err
	}
	return &dpopKey{signer: signer, jwk: jwk, thumbprint: jwkThumbprint(jwk)}, nil
}

// dpopClaims are the claims of a proof (RFC 9449 section 4.2).
type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// proof returns a fresh proof for a request of method to u at now: a new
// jti every time, ath when accessToken is not empty (a request to the
// resource), nonce when the server gave one.
func (k *dpopKey) proof(method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	header := struct {
		Typ string        `json:"typ"`
		Alg string        `json:"alg"`
		JWK dpopPublicJWK `json:"jwk"`
	}{dpopProofType, algES256, k.jwk}
	claims := dpopClaims{JTI: randomString(16), HTM: method, HTU: dpopHTU(u), IAT: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		claims.ATH = accessTokenHash(accessToken)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	digest := sha256.Sum256([]byte(input))
	der, err := k.signer.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("dpop: sign: %w", err)
	}
	sig, err := ecdsaRawSignature(der)
	if err != nil {
		return "", err
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// validDPoPNonce reports whether a DPoP-Nonce value may be repeated in a
// proof: not empty, bounded, and of NQCHARs (%x21 / %x23-5B / %x5D-7E).
func validDPoPNonce(n string) bool {
	if n == "" || len(n) > maxDPoPNonceBytes {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// dpopNonces remembers the latest nonce each origin handed out, for the
// next proof sent there (RFC 9449 sections 8 and 9).
type dpopNonces struct {
	mu   sync.Mutex
	byOr map[string]string
}

// originOf is the scheme://host of u, in lower case.
func originOf(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// get returns the latest nonce of u's origin, or "".
func (n *dpopNonces) get(u *url.URL) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byOr[originOf(u)]
}

// remember keeps the nonce a response from u carried, if it has a valid
// one, and reports whether it had.
func (n *dpopNonces) remember(u *url.URL, value string) bool {
	if !validDPoPNonce(value) {
		return false
	}
	o := originOf(u)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byOr == nil {
		n.byOr = make(map[string]string)
	}
	if _, ok := n.byOr[o]; !ok && len(n.byOr) >= maxDPoPOrigins {
		for k := range n.byOr {
			delete(n.byOr, k) // any one: the bound matters, not which
			break
		}
	}
	n.byOr[o] = value
	return true
}
