package mcp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// TestSignJWT signs with each key type and checks the signature with the
// standard library's own verifiers.
func TestSignJWT(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, key := range []crypto.Signer{rsaKey, ecKey, edKey} {
		tok, err := signJWT(key, "k1", map[string]any{"sub": "alice"})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%d parts", len(parts))
		}
		var header map[string]string
		h, _ := b64.DecodeString(parts[0])
		if err := json.Unmarshal(h, &header); err != nil || header["kid"] != "k1" {
			t.Fatalf("header %s: %v", h, err)
		}
		sig, _ := b64.DecodeString(parts[2])
		input := []byte(parts[0] + "." + parts[1])
		digest := sha256.Sum256(input)
		var ok bool
		switch header["alg"] {
		case algRS256:
			ok = rsa.VerifyPKCS1v15(&rsaKey.PublicKey, crypto.SHA256, digest[:], sig) == nil
		case algES256:
			ok = len(sig) == 64 && ecdsa.Verify(&ecKey.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		case algEdDSA:
			ok = ed25519.Verify(edKey.Public().(ed25519.PublicKey), input, sig)
		}
		if !ok {
			t.Errorf("%s: signature does not verify", header["alg"])
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := signJWT(p384, "", nil); err == nil {
		t.Error("a P-384 key signed")
	}
}
