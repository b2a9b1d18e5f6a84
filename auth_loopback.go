package mcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// LoopbackRedirect is an [AuthorizationHandler] for command-line programs:
// it listens on 127.0.0.1 at a free port, hands the authorization URL to an
// opener (one that starts the user's browser, say), and waits for the
// browser to come back to its redirect URL. Client side.
type LoopbackRedirect struct {
	open     func(authURL string) error
	ln       net.Listener
	srv      *http.Server
	redirect string

	turn    chan struct{}      // held by the Authorize under way
	mu      sync.Mutex         // guards waiting and state
	waiting chan string        // where the callback hands the URL
	state   string             // the state the waiting Authorize sent; "" takes any return
	closed  context.CancelFunc // ends every wait on Close
	ctx     context.Context
}

// loopbackHeaderTimeout bounds how long the listener waits for the
// headers of a request: a browser sends them at once.
const loopbackHeaderTimeout = 10 * time.Second

// loopbackPage is what the browser shows once it is sent back.
const loopbackPage = "<!doctype html><title>Signed in</title><p>You are signed in. You may close this window.</p>\n"

// NewLoopbackRedirect listens on 127.0.0.1 at a free port; open is called
// with each authorization URL. Close it when done. Client side.
func NewLoopbackRedirect(open func(authURL string) error) (*LoopbackRedirect, error) {
	if open == nil {
		return nil, errors.New("mcp: NewLoopbackRedirect needs an opener")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &LoopbackRedirect{open: open, ln: ln, redirect: "http://" + ln.Addr().String() + "/callback",
		turn: make(chan struct{}, 1), closed: cancel, ctx: ctx}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: loopbackHeaderTimeout}
	go l.srv.Serve(ln)
	return l, nil
}

// RedirectURL is the URL the authorization server must send the user back
// to: http://127.0.0.1:<port>/callback.
func (l *LoopbackRedirect) RedirectURL() string { return l.redirect }

// Authorize opens authURL and returns the URL the browser came back to.
// An error the authorization server sent back (access_denied, say) is an
// *AuthError. When authURL carries a state, only a return with that state
// counts: any other gets an error page and the wait goes on, so that
// whoever finds the port cannot end the sign-in. One authorization runs at
// a time.
func (l *LoopbackRedirect) Authorize(ctx context.Context, authURL string) (string, error) {
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-l.ctx.Done():
		return "", errors.New("mcp: the loopback redirect is closed")
	}
	defer func() { <-l.turn }()
	got := make(chan string, 1)
	state := ""
	if u, err := url.Parse(authURL); err == nil {
		state = u.Query().Get("state")
	}
	l.mu.Lock()
	l.waiting, l.state = got, state
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.waiting, l.state = nil, ""
		l.mu.Unlock()
	}()
	if err := l.open(authURL); err != nil {
		return "", &AuthError{Step: "authorization", URL: authURL, Reason: "opening the authorization URL", Err: err}
	}
	select {
	case back := <-got:
		if u, err := url.Parse(back); err == nil && u.Query().Get("error") != "" {
			q := u.Query()
			return "", &AuthError{Step: "authorization", URL: authURL, Field: "error",
				Reason: strings.TrimSuffix(q.Get("error")+": "+q.Get("error_description"), ": ")}
		}
		return back, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-l.ctx.Done():
		return "", errors.New("mcp: the loopback redirect is closed")
	}
}

// callback takes the browser's return and hands its URL to the waiting
// Authorize; a return nobody waits for, or with another state, is refused
// and leaves the wait as it was.
func (l *LoopbackRedirect) callback(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	got := l.waiting
	switch {
	case got == nil:
	case l.state != "" && subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(l.state)) != 1:
		l.mu.Unlock()
		http.Error(w, "this return does not belong to the sign-in in progress", http.StatusBadRequest)
		return
	default:
		l.waiting = nil
	}
	l.mu.Unlock()
	if got == nil {
		http.Error(w, "no sign-in is in progress", http.StatusBadRequest)
		return
	}
	got <- l.redirect + "?" + r.URL.RawQuery
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(loopbackPage))
}

// Close stops listening and ends a wait under way.
func (l *LoopbackRedirect) Close() error {
	l.closed()
	return l.srv.Close()
}
