package mcp

import (
	"context"
	"errors"
	"time"
)

// ErrInvalidToken is the error a TokenVerifier wraps when a token is not
// acceptable: malformed, badly signed, expired, for another audience. The
// bearer middleware answers it with 401 and error="invalid_token"; any
// other error of a verifier is the server's failure (503). Server side.
var ErrInvalidToken = errors.New("invalid token")

// TokenInfo is what a TokenVerifier learnt of a valid access token.
// Server side.
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
