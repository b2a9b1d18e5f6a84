package mcp

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"
)

// endRecorder is a session end handler that hands each end to a channel.
func endRecorder() (func(SessionEnd), chan SessionEnd) {
	ends := make(chan SessionEnd, 16)
	return func(e SessionEnd) { ends <- e }, ends
}

// takeEnd waits for the next session end.
func takeEnd(t *testing.T, ends <-chan SessionEnd, side string) SessionEnd {
	t.Helper()
	select {
	case e := <-ends:
		if e.Duration <= 0 {
			t.Errorf("%s: a session of duration %v", side, e.Duration)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no session end reported", side)
	}
	return SessionEnd{}
}

// noMoreEnds fails if another session end was reported.
func noMoreEnds(t *testing.T, ends <-chan SessionEnd, side string) {
	t.Helper()
	select {
	case e := <-ends:
		t.Errorf("%s: another session end: %+v", side, e)
	default:
	}
}

func TestSessionEndStream(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			onServer, serverEnds := endRecorder()
			onClient, clientEnds := endRecorder()
			srv := newTestServer(WithProtocolVersion(v), WithSessionEndHandler(onServer))
			ct, st := NewInMemoryTransports()
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), st) }()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v), WithSessionEndHandler(onClient))
			if err := cl.Connect(context.Background(), ct); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			c := takeEnd(t, clientEnds, "client")
			if c.Err != nil || c.ProtocolVersion != v || c.SessionID != "" {
				t.Errorf("client: %+v", c)
			}
			s := takeEnd(t, serverEnds, "server")
			wantVersion := v
			if v == Version20260728 {
				wantVersion = "" // each request names its own
			}
			if s.Err != nil || s.ProtocolVersion != wantVersion {
				t.Errorf("server: %+v", s)
			}
			noMoreEnds(t, clientEnds, "client")
			noMoreEnds(t, serverEnds, "server")
		})
	}
}

func TestSessionEndChildKilled(t *testing.T) {
	onClient, ends := endRecorder()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_SERVE="+Version20251125)
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithSessionEndHandler(onClient))
	if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	e := takeEnd(t, ends, "client")
	if e.Err == nil || e.ProtocolVersion != Version20251125 {
		t.Errorf("the end of a killed child's session: %+v", e)
	}
	cl.Close()
	noMoreEnds(t, ends, "client")
}

func TestSessionEndConnectFails(t *testing.T) {
	onClient, ends := endRecorder()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCP_TEST_CRASH=no")
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithSessionEndHandler(onClient))
	if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err == nil {
		t.Fatal("Connect to a crashing child succeeded")
	}
	if e := takeEnd(t, ends, "client"); e.Err == nil {
		t.Errorf("a failed Connect's session ended without an error: %+v", e)
	}
	noMoreEnds(t, ends, "client")
}

func TestSessionEndHTTP(t *testing.T) {
	for _, v := range bothEras {
		t.Run(v, func(t *testing.T) {
			onServer, serverEnds := endRecorder()
			onClient, clientEnds := endRecorder()
			srv := newTestServer(WithProtocolVersion(v), WithSessionEndHandler(onServer))
			ts := httptest.NewServer(NewHTTPHandler(srv))
			defer ts.Close()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v), WithSessionEndHandler(onClient))
			tr := NewHTTPTransport(ts.URL)
			if err := cl.Connect(context.Background(), tr); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
					t.Fatal(err)
				}
			}
			sid := tr.session()
			cl.Close() // a legacy session's DELETE
			c := takeEnd(t, clientEnds, "client")
			if c.Err != nil || c.SessionID != sid || c.ProtocolVersion != v {
				t.Errorf("client: %+v, want session %q", c, sid)
			}
			if v == Version20260728 {
				ts.Close() // every request handled
				noMoreEnds(t, serverEnds, "server (2026-07-28 has no sessions)")
				return
			}
			s := takeEnd(t, serverEnds, "server")
			if s.Err != nil || s.SessionID == "" || s.SessionID != sid || s.ProtocolVersion != v {
				t.Errorf("server: %+v, want session %q", s, sid)
			}
			ts.Close()
			noMoreEnds(t, serverEnds, "server")
		})
	}
}

func TestSessionEndHTTPExpired(t *testing.T) {
	onServer, serverEnds := endRecorder()
	srv := newTestServer(WithProtocolVersion(Version20251125), WithSessionEndHandler(onServer))
	ts := httptest.NewServer(NewHTTPHandler(srv, WithSessionTimeout(time.Millisecond)))
	defer ts.Close()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL, WithoutStandaloneStream())); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if s := takeEnd(t, serverEnds, "server"); s.Err == nil || s.SessionID == "" {
		t.Errorf("an expired session: %+v", s)
	}
}

func TestSessionEndSSE(t *testing.T) {
	onServer, serverEnds := endRecorder()
	srv := newTestServer(WithSessionEndHandler(onServer))
	ts := httptest.NewServer(NewSSEHandler(srv))
	defer ts.Close()
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20241105))
	if err := cl.Connect(context.Background(), NewSSETransport(ts.URL)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	s := takeEnd(t, serverEnds, "server")
	if s.Err != nil || s.SessionID == "" || s.ProtocolVersion != Version20241105 {
		t.Errorf("server: %+v", s)
	}
}

func TestSessionEndHandlersAdd(t *testing.T) {
	var got []string
	cfg := newConfig()
	WithSessionEndHandler(func(SessionEnd) { got = append(got, "first") }).applyClient(cfg)
	WithSessionEndHandler(nil).applyClient(cfg)
	WithSessionEndHandler(func(SessionEnd) { got = append(got, "second") }).applyClient(cfg)
	cfg.sessionEnd(SessionEnd{})
	if len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("handlers called: %v", got)
	}
}
