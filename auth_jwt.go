package mcp

import (
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
	alg, err := jwtAlgorithm(key)
	if err != nil {
		return "", err
	}
	header := map[string]string{"alg": alg, "typ": "JWT"}
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
