package mcp

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultStateTTL is how long a requestState minted by a server stays
// valid; see [WithStateTTL].
const DefaultStateTTL = 10 * time.Minute

// WithStateKey sets the key that signs the requestState a server hands to
// 2026-07-28 clients between the rounds of a call that asks for input. It
// must be at least 32 bytes; WithStateKey panics otherwise. Without it each
// process draws a random key, so a deployment with several server
// instances behind one endpoint must give them all the same key.
// It configures a server (NewServer).
func WithStateKey(key []byte) ServerOption {
	if len(key) < 32 {
		panic("mcp: WithStateKey needs a key of at least 32 bytes")
	}
	key = append([]byte(nil), key...)
	return serverOption(func(c *config) { c.server.stateKey = key })
}

// WithStateTTL sets how long a minted requestState stays valid (default
// 10 minutes). Expiry bounds replay; a state is not single-use.
// It configures a server (NewServer).
func WithStateTTL(d time.Duration) ServerOption {
	return serverOption(func(c *config) {
		if d > 0 {
			c.server.stateTTL = d
		}
	})
}

// processStateKey signs states for servers configured without a key.
var processStateKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// stateCodec seals and opens requestState values: base64url(JSON payload)
// "." base64url(HMAC-SHA256(payload)). The payload carries an expiry and a
// digest of the request it belongs to, so a state cannot be replayed late
// or against another call. It is signed, not encrypted.
type stateCodec struct {
	key []byte
	ttl time.Duration
	now func() time.Time // nil: time.Now (tests fix it)
}

func (c stateCodec) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// sealedState is what a requestState carries.
type sealedState struct {
	Expires int64                      `json:"exp"`
	Binding string                     `json:"bnd"`
	Answers map[string]json.RawMessage `json:"ans,omitempty"`
	Payload json.RawMessage            `json:"pld,omitempty"`
}

var errBadState = errors.New("the supplied requestState failed verification")

// stateEncoding is strict so that each state has exactly one spelling: a
// lenient decoder would accept variants whose unused trailing bits differ.
var stateEncoding = base64.RawURLEncoding.Strict()

func (c stateCodec) seal(s *sealedState) string {
	s.Expires = c.clock().Add(c.ttl).Unix()
	body, _ := json.Marshal(s)
	mac := hmac.New(sha256.New, c.key)
	mac.Write(body)
	return stateEncoding.EncodeToString(body) + "." + stateEncoding.EncodeToString(mac.Sum(nil))
}

// open verifies a state against the request it must belong to. Every
// failure reads the same to the caller: malformed, forged, expired and
// rebound states are not told apart.
func (c stateCodec) open(state, binding string) (*sealedState, error) {
	dot := strings.LastIndexByte(state, '.')
	// base64 decoding skips \r and \n: a state with one inserted is not
	// the one minted, though it decodes to the same bytes.
	if dot < 0 || strings.ContainsAny(state, "\r\n") {
		return nil, errBadState
	}
	body, err1 := stateEncoding.DecodeString(state[:dot])
	sum, err2 := stateEncoding.DecodeString(state[dot+1:])
	if err1 != nil || err2 != nil {
		return nil, errBadState
	}
	mac := hmac.New(sha256.New, c.key)
	mac.Write(body)
	if subtle.ConstantTimeCompare(mac.Sum(nil), sum) != 1 {
		return nil, errBadState
	}
	var s sealedState
	if json.Unmarshal(body, &s) != nil {
		return nil, errBadState
	}
	if c.clock().Unix() > s.Expires || subtle.ConstantTimeCompare([]byte(s.Binding), []byte(binding)) != 1 {
		return nil, errBadState
	}
	return &s, nil
}

// requestBinding digests what a request is about: who sent it (the
// principal the HTTP handler's authorizer named, empty when none), its
// method and its params without the members that change between rounds
// (_meta, inputResponses, requestState). Object keys are sorted, so key
// order does not matter; each part is quoted, so no two requests share a
// digest.
func requestBinding(principal, method string, params json.RawMessage) string {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(params, &obj)
	delete(obj, "_meta")
	delete(obj, "inputResponses")
	delete(obj, "requestState")
	h := sha256.New()
	h.Write([]byte(strconv.Quote(principal)))
	h.Write([]byte(strconv.Quote(method)))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		h.Write([]byte(strconv.Quote(k)))
		h.Write([]byte{':'})
		h.Write(canonicalJSON(obj[k]))
		h.Write([]byte{','})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes a JSON value with sorted object keys, no
// insignificant space and every number in its one spelling
// (canonicalNumber), never through float64: two values a handler may see
// apart never share it. Bytes that are not UTF-8 are left as they are.
func canonicalJSON(raw json.RawMessage) []byte {
	if !utf8.Valid(raw) {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return raw
	}
	out, err := json.Marshal(canonicalNumbers(v))
	if err != nil {
		return raw
	}
	return out
}

// canonicalNumbers respells every number of a decoded value in place.
func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return json.Number(canonicalNumber(string(v)))
	case map[string]any:
		for k, e := range v {
			v[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = canonicalNumbers(e)
		}
	}
	return v
}

// canonicalNumber spells a JSON number exactly, from its text: zero is "0",
// any other number is its sign, "0.", its significant digits without
// leading or trailing zeros, "e" and the exponent, so 1, 1.0, 1e0, 10E-1
// and 0.1e1 are all "0.1e1", while 9007199254740992 and 9007199254740993
// stay apart. Negative zero is "-0", apart from 0, since a float64 tells
// them apart.
func canonicalNumber(s string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := whole + frac
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	digits = strings.TrimRight(digits[lead:], "0")
	if digits == "" {
		return sign + "0"
	}
	// The value is 0.digits times ten to the power of e.
	e, ok := new(big.Int).SetString(exp, 10)
	if !ok {
		return sign + s // not a JSON number: kept as it is
	}
	e.Add(e, big.NewInt(int64(len(whole)-lead)))
	return sign + "0." + digits + "e" + e.String()
}
