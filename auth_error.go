package mcp

import (
	"strconv"
	"strings"
)

// AuthError is how every failure of the OAuth client reads: which step
// failed (protected resource metadata, authorization server metadata,
// registration, authorization, token, refresh, step-up, store), at which
// URL, with which HTTP status and which field, and why. Calls of a Client
// whose transport uses [WithOAuth] return it wrapped; find it with
// errors.As. Client side.
type AuthError struct {
	Step   string
	URL    string
	Status int
	Field  string
	Reason string
	Err    error
}

// Error implements the error interface.
func (e *AuthError) Error() string {
	var b strings.Builder
	b.WriteString("mcp: oauth " + e.Step)
	if e.URL != "" {
		b.WriteString(" (" + e.URL + ")")
	}
	if e.Status != 0 {
		b.WriteString(": HTTP " + strconv.Itoa(e.Status))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the error underneath, if any.
func (e *AuthError) Unwrap() error { return e.Err }
