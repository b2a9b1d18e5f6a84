package mcpredis

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// TestMultiListenResumed: the instance holding the subscriptions/listen
// streams of 2026-07-28 clients is killed. Each client reopens its stream
// on an instance alive, with the same subscriptions, and is told of the
// gap; every update made after that reaches it, once.
func TestMultiListenResumed(t *testing.T) {
	c := startCluster(t)
	const victim = 2
	var killed atomic.Bool
	c.proxy.setRoute(func(r *http.Request, body []byte) func(int) bool {
		if isListen(body) && !killed.Load() {
			return func(i int) bool { return i == victim }
		}
		return nil
	})
	var ls []*listener
	var gaps []chan mcp.ListenGap
	for k := range 3 {
		name := fmt.Sprintf("%s listener %d", mcp.Version20260728, k)
		l := newListener(name)
		gap := make(chan mcp.ListenGap, 1)
		cl := c.connect(name, c.url(), mcp.Version20260728, l.option(),
			mcp.WithListenGapHandler(func(_ context.Context, g mcp.ListenGap) { gap <- g }))
		for _, uri := range []string{counterURI, markerURI} {
			if err := cl.Subscribe(context.Background(), uri, mcp.WithTimeout(waitBound)); err != nil {
				t.Fatalf("%s: subscribing to %s: %v", name, uri, err)
			}
		}
		ls, gaps = append(ls, l), append(gaps, gap)
	}
	for _, h := range c.proxy.find(`"subscriptions/listen"`) {
		if h.backend != victim {
			t.Fatalf("a listen stream went to instance %d", h.backend+1)
		}
	}
	toucher := c.connect("toucher", c.instances[0].url(), mcp.Version20260728)
	c.touch(toucher, 2, 1, 2, ls)

	killed.Store(true)
	c.instances[victim].kill()
	for k, gap := range gaps {
		select {
		case g := <-gap:
			if g.Err != nil || g.Cause == nil {
				t.Fatalf("%s: gap %+v: want a cause and no error", ls[k].name, g)
			}
		case <-time.After(waitBound):
			t.Fatalf("%s was not told of the gap; its requests went: %s", ls[k].name, c.proxy.routeOf(ls[k].name))
		}
	}
	c.touch(toucher, 3, 2, 5, ls)
}
