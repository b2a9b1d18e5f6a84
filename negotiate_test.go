package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
			text:    "mcp: no protocol revision in common: the client offered 2026-07-28; the server named none (it does not know server/discover, so it speaks only revisions before 2026-07-28, which begin with initialize): mcp: Method not found (code -32601)",
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
