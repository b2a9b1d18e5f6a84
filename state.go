package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"
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
	if dot < 0 {
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

// requestBinding digests what a request is about: its method and params
// without the members that change between rounds (_meta, inputResponses,
// requestState). Object keys are sorted, so key order does not matter.
func requestBinding(method string, params json.RawMessage) string {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(params, &obj)
	delete(obj, "_meta")
	delete(obj, "inputResponses")
	delete(obj, "requestState")
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(canonicalJSON(obj[k]))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes a JSON value with sorted object keys and no
// insignificant space.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, _ := json.Marshal(v)
	return out
}
