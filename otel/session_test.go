package mcpotel

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestDurationMetrics: a session with one call records the four duration
// histograms, in seconds with the conventions' buckets: each operation on
// the side that sent it and the side that received it, with the method,
// the tool and the revision, and each side's session with its revision.
func TestDurationMetrics(t *testing.T) {
	each(t, transports, func(t *testing.T, transport string) {
		const v = mcp.Version20251125
		cp, sp := newPeer(), newPeer()
		srv := testServer(sp, nil)
		cl := newClient(cp, mcp.WithProtocolVersion(v))
		connect(t, transport, srv, cl)
		if _, err := cl.CallTool(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
		tool := map[string]string{"mcp.method.name": "tools/call", "mcp.protocol.version": v,
			"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool"}
		for _, m := range []struct {
			p    *peer
			name string
		}{{cp, "mcp.client.operation.duration"}, {sp, "mcp.server.operation.duration"}} {
			if dp := pointWith(t, histogramPoints(t, m.p.metrics, m.name), m.name, tool); dp.Count != 1 {
				t.Errorf("%s: %d tools/call recorded, want 1", m.name, dp.Count)
			}
		}
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			p    *peer
			name string
		}{{cp, "mcp.client.session.duration"}, {sp, "mcp.server.session.duration"}} {
			if e := <-m.p.ended; e.ProtocolVersion != v || e.Err != nil {
				t.Errorf("%s: the session ended as %+v, want on %s without an error", m.name, e, v)
			}
			if dp := pointWith(t, histogramPoints(t, m.p.metrics, m.name), m.name, map[string]string{"mcp.protocol.version": v}); dp.Count != 1 {
				t.Errorf("%s: %d sessions, want 1", m.name, dp.Count)
			}
		}
	})
}

// TestSessionEndedWithError: a session that ends with an error carries its
// class as error.type; one that ends normally carries none.
func TestSessionEndedWithError(t *testing.T) {
	p := newPeer()
	p.tel.ServerSessionEnded(mcp.SessionEnd{ProtocolVersion: mcp.Version20251125, Duration: 3 * time.Second})
	p.tel.ServerSessionEnded(mcp.SessionEnd{ProtocolVersion: mcp.Version20251125, Duration: time.Second,
		Err: fmt.Errorf("%w: read: broken pipe", mcp.ErrClosed)})
	p.tel.ClientSessionEnded(mcp.SessionEnd{Duration: time.Second, Err: context.DeadlineExceeded})
	points := histogramPoints(t, p.metrics, "mcp.server.session.duration")
	if dp := pointWith(t, points, "mcp.server.session.duration", map[string]string{"mcp.protocol.version": mcp.Version20251125}); dp.Sum != 3 {
		t.Errorf("the normal session's duration %v, want 3", dp.Sum)
	}
	pointWith(t, points, "mcp.server.session.duration", map[string]string{"mcp.protocol.version": mcp.Version20251125, "error.type": "connection_closed"})
	pointWith(t, histogramPoints(t, p.metrics, "mcp.client.session.duration"), "mcp.client.session.duration", map[string]string{"error.type": "timeout"})
}
