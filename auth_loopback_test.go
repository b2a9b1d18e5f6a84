package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// fakeConsent is an authorization endpoint that sends the browser straight
// back to redirect_uri with the query given (state copied).
func fakeConsent(t *testing.T, answer url.Values) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
		q := url.Values{"state": {r.URL.Query().Get("state")}}
		for k, v := range answer {
			q[k] = v
		}
		back.RawQuery = q.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// browser follows redirects as a browser does and keeps the last page.
type browser struct {
	c    *http.Client
	page string
}

func newBrowser() *browser { return &browser{c: &http.Client{Transport: &http.Transport{}}} }

func (b *browser) open(u string) error {
	resp, err := b.c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	b.page = string(page)
	return nil
}

func authURLFor(consent, redirect string) string {
	return consent + "?" + url.Values{"redirect_uri": {redirect}, "state": {"st"}}.Encode()
}

// TestLoopbackRedirect: the browser comes back to 127.0.0.1 and Authorize
// returns that URL, with the code; the browser is told it may close.
func TestLoopbackRedirect(t *testing.T) {
	before := runtime.NumGoroutine()
	consent := fakeConsent(t, url.Values{"code": {"c1"}})
	b := newBrowser()
	l, err := NewLoopbackRedirect(b.open)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.RedirectURL(), "http://127.0.0.1:") || !strings.HasSuffix(l.RedirectURL(), "/callback") {
		t.Fatalf("redirect URL %q", l.RedirectURL())
	}
	back, err := l.Authorize(t.Context(), authURLFor(consent.URL, l.RedirectURL()))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(back)
	if u.Query().Get("code") != "c1" || u.Query().Get("state") != "st" || !strings.HasPrefix(back, l.RedirectURL()+"?") {
		t.Fatalf("redirect %q", back)
	}
	if !strings.Contains(b.page, "signed in") {
		t.Fatalf("page %q", b.page)
	}
	// A second return, with no sign-in waiting for it, is refused.
	resp, err := b.c.Get(l.RedirectURL() + "?code=late")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("late return: %s", resp.Status)
	}
	l.Close()
	b.c.CloseIdleConnections()
	consent.Close()
	settleGoroutines(t, before)
}

// TestLoopbackRedirectError: an error the authorization server sends back
// is an *AuthError naming it.
func TestLoopbackRedirectError(t *testing.T) {
	t.Parallel()
	consent := fakeConsent(t, url.Values{"error": {"access_denied"}, "error_description": {"the user said no"}})
	b := newBrowser()
	l, err := NewLoopbackRedirect(b.open)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Authorize(t.Context(), authURLFor(consent.URL, l.RedirectURL()))
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Field != "error" || ae.Reason != "access_denied: the user said no" {
		t.Fatalf("%v", err)
	}
}

// TestLoopbackRedirectEnds: a wait for a browser that never comes back
// ends with the context, or with Close; an opener's error is returned.
func TestLoopbackRedirectEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	l, err := NewLoopbackRedirect(func(string) error { cancel(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Authorize(ctx, "https://as.example/authorize"); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
	l.Close()
	if _, err := l.Authorize(t.Context(), "https://as.example/authorize"); err == nil {
		t.Fatal("Authorize after Close succeeded")
	}

	boom := errors.New("no browser")
	l, err = NewLoopbackRedirect(func(string) error { return boom })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Authorize(t.Context(), "https://as.example/authorize"); !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
}

// TestLoopbackRedirectSignsIn: WithOAuth with a LoopbackRedirect whose
// opener is a browser: the whole sign-in, redirect URL included, needs no
// other configuration.
func TestLoopbackRedirectSignsIn(t *testing.T) {
	t.Parallel()
	rig := newOAuthRig(t, NewHTTPHandler(newTestServer()))
	b := newBrowser()
	l, err := NewLoopbackRedirect(b.open)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := NewClient(Implementation{Name: "c", Version: "1"})
	if err := c.Connect(t.Context(), NewHTTPTransport(rig.res.url, WithOAuth(OAuthConfig{Handler: l}))); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := rig.as.registration(0)["redirect_uris"]; !strings.Contains(strings.Join(anyStrings(got), " "), l.RedirectURL()) {
		t.Fatalf("registered redirect URIs %v", got)
	}
}

func anyStrings(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestLoopbackRedirectIgnoresAStrangersReturn: returns to the callback
// with no state or another state, an error among them, get an error page
// and leave the sign-in waiting; the browser's own return then completes
// it.
func TestLoopbackRedirectIgnoresAStrangersReturn(t *testing.T) {
	t.Parallel()
	consent := fakeConsent(t, url.Values{"code": {"c1"}})
	b := newBrowser()
	stranger := &http.Client{Transport: &http.Transport{}}
	defer stranger.CloseIdleConnections()
	var l *LoopbackRedirect
	var statuses []int
	open := func(u string) error {
		for _, q := range []string{"error=access_denied", "state=guess&error=access_denied", "state=guess&code=evil", "code=evil"} {
			resp, err := stranger.Get(l.RedirectURL() + "?" + q)
			if err != nil {
				return err
			}
			resp.Body.Close()
			statuses = append(statuses, resp.StatusCode)
		}
		return b.open(u)
	}
	l, err := NewLoopbackRedirect(open)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	back, err := l.Authorize(t.Context(), authURLFor(consent.URL, l.RedirectURL()))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(back); u.Query().Get("code") != "c1" || u.Query().Get("state") != "st" {
		t.Fatalf("redirect %q", back)
	}
	for i, s := range statuses {
		if s != http.StatusBadRequest {
			t.Fatalf("stranger's return %d: %d, want 400", i, s)
		}
	}
}
