package mcp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/synctest"
	"time"
)

// hostRouter serves each request with the handler of its host, without a
// network, so that an OAuth client and its servers run whole in a
// synctest bubble.
type hostRouter map[string]http.Handler

func (r hostRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	h, ok := r[req.URL.Host]
	if !ok {
		h = http.NotFoundHandler()
	}
	return handlerRoundTripper{h}.RoundTrip(req)
}

// TestOAuthShortTokenRefreshedAtAFraction: a token that lives 5 s (under
// the 30 s skew) is refreshed when a quarter of its life remains, not
// before every request: 11 calls over 10 s make at most 2 refreshes and
// one sign-in.
func TestOAuthShortTokenRefreshedAtAFraction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := newFakeAS(t)
		as.ttl = 5
		res := newFakeResource(t, as, okHandler)
		router := hostRouter{as.srv.Listener.Addr().String(): as.srv.Config.Handler, res.srv.Listener.Addr().String(): res.srv.Config.Handler}
		o := newOAuthTransport(res.url, router, OAuthConfig{Handler: &approve{rt: router}, RedirectURL: testRedirect})
		for i := range 11 {
			if _, err := get(t.Context(), o, res.url); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if i < 10 {
				time.Sleep(time.Second)
			}
		}
		if r, a := as.refreshes.Load(), as.authorizations(); r > 2 || a != 1 {
			t.Fatalf("%d refreshes and %d sign-ins for 11 calls over 10 s, want at most 2 and 1", r, a)
		}
		t.Logf("%d refreshes", as.refreshes.Load())
	})
}

// TestTokenStale: when a token is renewed.
func TestTokenStale(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		lifetime  time.Duration
		remaining time.Duration
		want      bool
	}{
		{"no expiry", 0, 0, false},
		{"an hour, fresh", time.Hour, 31 * time.Second, false},
		{"an hour, at the skew", time.Hour, 30 * time.Second, true},
		{"5 s, just issued", 5 * time.Second, 5 * time.Second, false},
		{"5 s, 2 s left", 5 * time.Second, 2 * time.Second, false},
		{"5 s, a quarter left", 5 * time.Second, 1250 * time.Millisecond, true},
		{"unknown lifetime, 20 s left", 0, 20 * time.Second, true},
		{"expired", time.Minute, -time.Second, true},
	} {
		tok := Token{lifetime: tc.lifetime}
		if tc.name != "no expiry" {
			tok.Expiry = now.Add(tc.remaining)
		}
		if got := tok.stale(now); got != tc.want {
			t.Errorf("%s: stale = %v", tc.name, got)
		}
	}
}

// TestOAuthHugeExpiresIn: an expires_in too large for a Duration is
// clamped, not overflowed into a token that is always stale.
func TestOAuthHugeExpiresIn(t *testing.T) {
	t.Parallel()
	for _, secs := range []string{"9223372036855", "9223372036854775807"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"a","token_type":"Bearer","expires_in":`+secs+`}`)
		}))
		o := newOAuthTransport(srv.URL+"/mcp", nil, OAuthConfig{})
		tok, err := o.requestToken(t.Context(), "token", srv.URL+"/token", url.Values{}, tokenClient{id: "c", method: authMethodNone})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); tok.stale(now) || !tok.Expiry.After(now.Add(100*365*24*time.Hour)) {
			t.Fatalf("expires_in %s: expiry %v", secs, tok.Expiry)
		}
	}
}
