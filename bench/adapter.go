package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"
)

// An adapter drives one SDK: it builds that SDK's bench server (tools echo,
// sleep and progress) and connects that SDK's client to it over a carrier,
// each the way the SDK's documentation recommends.
type adapter interface {
	// Name is the SDK's short name in tables and on the -serve flag.
	Name() string
	// Open connects a client to a fresh server over carrier ("pipe", "stdio"
	// or "http"), pinned to protocol version.
	Open(ctx context.Context, carrier, version string) (session, error)
	// ServeStdio serves the bench server on standard input and output until
	// the client closes them; it is what the child process of "stdio" runs.
	ServeStdio(ctx context.Context, version string) error
	// LegacyHandler returns the bench server as a stateful (2025-11-25)
	// Streamable HTTP handler, for the idle-session scenario.
	LegacyHandler() (http.Handler, error)
	// Notes lists where this SDK needed a workaround or a setting worth
	// knowing to run the scenarios.
	Notes() []string
}

// A session is one connected client.
type session interface {
	// Echo calls the echo tool and returns the text it echoed.
	Echo(ctx context.Context, text string) (string, error)
	// Sleep calls the sleep tool, which sleeps ms milliseconds.
	Sleep(ctx context.Context, ms int) error
	// Progress calls the progress tool, which sends count progress
	// notifications before it returns; onProgress runs once per notification
	// the client receives for this call.
	Progress(ctx context.Context, count int, onProgress func()) error
	// Version is the protocol version the session negotiated.
	Version() string
	// Close ends the session and stops the server it owns.
	Close() error
}

// errUnsupported marks a carrier an SDK cannot run; its cells read "n/a".
var errUnsupported = errors.New("unsupported")

// The tools' arguments, shared by every SDK's server.
type (
	echoArgs struct {
		Text string `json:"text"`
	}
	sleepArgs struct {
		Ms int `json:"ms"`
	}
	progressArgs struct {
		Count int `json:"count"`
	}
)

// sleepFor sleeps d or until ctx ends.
func sleepFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tokenSeq mints progress tokens unique within the process.
var tokenSeq atomic.Int64

func newToken() string { return "p" + strconv.FormatInt(tokenSeq.Add(1), 10) }

// pipePair returns the two ends of a bidirectional in-process byte stream
// made of two os.Pipe pairs.
type pipePair struct {
	clientR, clientW, serverR, serverW *os.File
}

func newPipePair() (*pipePair, error) {
	sr, cw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		sr.Close()
		cw.Close()
		return nil, err
	}
	return &pipePair{clientR: cr, clientW: cw, serverR: sr, serverW: sw}, nil
}

func (p *pipePair) closeAll() {
	for _, f := range []*os.File{p.clientR, p.clientW, p.serverR, p.serverW} {
		f.Close()
	}
}

// childCommand returns the command that re-executes this binary as the
// stdio server of sdk.
func childCommand(sdk, version string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve="+sdk, "-version="+version)
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// childArgs returns the program and arguments of childCommand, for SDKs that
// start the process themselves.
func childArgs(sdk, version string) (string, []string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	return self, []string{"-serve=" + sdk, "-version=" + version}, nil
}

// waitOr waits for done up to d.
func waitOr(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// checkEcho verifies an echoed text.
func checkEcho(got, want string) error {
	if got != want {
		return fmt.Errorf("echo returned %d bytes, want %d", len(got), len(want))
	}
	return nil
}

// drainClose reads a response body to the end and closes it, so the
// connection can be reused.
func drainClose(body io.ReadCloser) {
	io.Copy(io.Discard, body)
	body.Close()
}
