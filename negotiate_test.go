package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestConnectNamesTheRevisionsEachSideOffered: when Connect finds no
// revision in common, its error is a *VersionError saying what the client
// offered and what the server did, instead of the server's bare answer.
func TestConnectNamesTheRevisionsEachSideOffered(t *testing.T) {
	t.Parallel()
	// A raw server that speaks only the older revisions answers each
	// request with the line answer returns.
	rawOnly := func(answer func(method string, id any) string) Transport {
		ct, st := NewInMemoryTransports()
		p := newRawPeer(t, st.(*IOTransport))
		go func() {
			for line := range p.lines {
				if id := fieldOrNil(line, "id"); id != nil {
					p.w.Write([]byte(answer(fmt.Sprint(fieldOrNil(line, "method")), id) + "\n"))
				}
			}
		}()
		t.Cleanup(func() { p.w.Close() })
		return ct
	}
	notFound := func(method string, id any) string {
		if method == "initialize" {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}`, jsonID(id))
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":{"code":-32601,"message":"Method not found"}}`, jsonID(id))
	}
	cases := []struct {
		name          string
		pin           string
		server        func() Transport
		offered       []string
		serverOffered []string
		text          string
	}{
		{
			name: "2026-07-28 against a server of the older revisions", pin: Version20260728,
			server:  func() Transport { return rawOnly(notFound) },
			offered: []string{Version20260728},
			text:    "mcp: no protocol revision in common: the client offered 2026-07-28; the server named none (it does not know server/discover, so it speaks only revisions before 2026-07-28, which begin with initialize): Method not found (code -32601)",
		},
		{
			name: "2026-07-28 against a server pinned to 2025-11-25", pin: Version20260728,
			server: func() Transport {
				ct, st := NewInMemoryTransports()
				srv := newTestServer(WithProtocolVersion(Version20251125))
				go srv.Serve(context.Background(), st)
				return ct
			},
			offered: []string{Version20260728}, serverOffered: []string{Version20251125},
		},
		{
			name: "2025-11-25 against a server that answers 2025-06-18", pin: Version20251125,
			server:  func() Transport { return rawOnly(notFound) },
			offered: []string{Version20251125}, serverOffered: []string{Version20250618},
			text: "mcp: no protocol revision in common: the client offered 2025-11-25; the server offered 2025-06-18 (its answer to initialize)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(tc.pin))
			err := cl.Connect(context.Background(), tc.server())
			var ve *VersionError
			if !errors.As(err, &ve) {
				t.Fatalf("Connect: %v, want a *VersionError", err)
			}
			if !slices.Equal(ve.Offered, tc.offered) || !slices.Equal(ve.ServerOffered, tc.serverOffered) {
				t.Errorf("offered %v, server offered %v; want %v and %v", ve.Offered, ve.ServerOffered, tc.offered, tc.serverOffered)
			}
			if tc.text != "" && err.Error() != tc.text {
				t.Errorf("error text\n got %s\nwant %s", err, tc.text)
			}
		})
	}
}

// fieldOrNil is field's member lookup without a test to fail.
func fieldOrNil(msg, name string) any {
	var m map[string]any
	json.Unmarshal([]byte(msg), &m)
	return m[name]
}

// jsonID writes an id decoded by field back as JSON.
func jsonID(id any) string {
	if s, ok := id.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(id)
}

// TestServerPinHolds: a server pinned to 2026-07-28 refuses a legacy
// initialize with -32022 naming the revision it speaks, and one pinned to
// an older revision refuses a 2026-07-28 request the same way; either
// keeps serving its own revision afterwards, on stdio and over HTTP.
func TestServerPinHolds(t *testing.T) {
	t.Parallel()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	refused := func(t *testing.T, got, supported, requested string) {
		t.Helper()
		if field(t, got, "error.code") != float64(CodeUnsupportedProtocolVersion) ||
			fmt.Sprint(field(t, got, "error.data.supported")) != "["+supported+"]" ||
			field(t, got, "error.data.requested") != requested {
			t.Fatalf("want -32022 naming %s: %s", supported, got)
		}
	}
	t.Run("stdio pinned to 2026-07-28", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, newTestServer(WithProtocolVersion(Version20260728)))
		p.send(initialize)
		refused(t, p.recv(), Version20260728, Version20251125)
		p.send(modernRequest("2", "tools/list", ""))
		if got := p.recv(); field(t, got, "result.tools") == nil {
			t.Fatalf("the modern request after: %s", got)
		}
	})
	t.Run("stdio pinned to 2025-06-18", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, newTestServer(WithProtocolVersion(Version20250618)))
		p.send(modernRequest("1", "tools/list", ""))
		refused(t, p.recv(), Version20250618, Version20260728)
		p.initialize(Version20250618)
	})
	t.Run("http pinned to 2026-07-28", func(t *testing.T) {
		t.Parallel()
		ts := serveHTTP(t, newTestServer(WithProtocolVersion(Version20260728)))
		r := doHTTP(t, "POST", ts.URL, initialize, postHeaders())
		refused(t, strings.TrimSpace(sseData(r.body)), Version20260728, Version20251125)
		if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
			t.Fatalf("a refused initialize made session %q", sid)
		}
		if r := doHTTP(t, "POST", ts.URL, modernRequest("2", "tools/list", ""), modernHeaders("tools/list")); r.status != 200 {
			t.Fatalf("the modern request after: %d %s", r.status, r.body)
		}
	})
	t.Run("http pinned to 2025-06-18", func(t *testing.T) {
		t.Parallel()
		ts := serveHTTP(t, newTestServer(WithProtocolVersion(Version20250618)))
		r := doHTTP(t, "POST", ts.URL, modernRequest("1", "tools/list", ""), modernHeaders("tools/list"))
		refused(t, strings.TrimSpace(sseData(r.body)), Version20250618, Version20260728)
		legacySession(t, ts.URL, Version20250618)
	})
	t.Run("clients", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ server, client string }{{Version20260728, Version20251125}, {Version20250618, Version20260728}} {
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(tc.client))
			ct, st := NewInMemoryTransports()
			go newTestServer(WithProtocolVersion(tc.server)).Serve(context.Background(), st)
			var ve *VersionError
			if err := cl.Connect(context.Background(), ct); !errors.As(err, &ve) || !slices.Equal(ve.ServerOffered, []string{tc.server}) {
				t.Fatalf("a client of %s against a server pinned to %s: %v", tc.client, tc.server, err)
			}
			ct.Close()
		}
	})
}

// sseData returns the data of the first event of an SSE body, or the body
// itself when it is plain JSON.
func sseData(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			return data
		}
	}
	return body
}
