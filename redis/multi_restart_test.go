package mcpredis

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// restart stops instance i gracefully and starts the same command again
// on the same address, as a deployment restarts one instance of a fleet.
func (c *multiCluster) restart(i int) {
	c.t.Helper()
	old := c.instances[i]
	old.stop()
	args := slices.Clone(old.cmd.Args[1:])
	if k := slices.Index(args, "-addr"); k >= 0 {
		args[k+1] = old.addr
	}
	in := &instance{name: old.name, addr: old.addr, done: make(chan struct{}), waits: map[string]chan struct{}{}}
	in.cmd = exec.Command(old.cmd.Path, args...)
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	listening := in.next("listening on ")
	if err := in.cmd.Start(); err != nil {
		c.t.Fatalf("restarting %s: %v", in.name, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.line(sc.Text())
		}
		in.cmd.Wait()
		close(in.done)
	}()
	c.t.Cleanup(in.stop)
	select {
	case <-listening:
	case <-in.done:
		c.t.Fatalf("%s ended before it listened again:\n%s", in.name, in.output())
	case <-time.After(waitBound):
		c.t.Fatalf("%s did not listen again after %v:\n%s", in.name, waitBound, in.output())
	}
	c.instances[i] = in
}

// listCounter counts the list_changed notifications a client receives.
type listCounter struct {
	mu  sync.Mutex
	got map[string]int
}

func (l *listCounter) options() []mcp.ClientOption {
	note := func(list string) func(context.Context) {
		return func(context.Context) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.got[list]++
		}
	}
	return []mcp.ClientOption{
		mcp.WithToolListChangedHandler(note("tools")),
		mcp.WithResourceListChangedHandler(note("resources")),
		mcp.WithPromptListChangedHandler(note("prompts")),
	}
}

func (l *listCounter) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.got)
}

// TestMultiRestartAnnouncesNoChange: an instance restarted in the fleet
// registers its tools and resources again, which changes no list, and
// tells no client of either era that one changed: listeners subscribed
// through the proxy see the marker it touches once it serves again, and
// no list_changed before (the broadcaster delivers in order).
func TestMultiRestartAnnouncesNoChange(t *testing.T) {
	c := startCluster(t)
	const restarted = 2
	// Streams stay off the instance that restarts: cutting them is not
	// what this test is about.
	c.proxy.setRoute(func(r *http.Request, body []byte) func(int) bool {
		if r.Method == http.MethodGet || isListen(body) {
			return func(i int) bool { return i != restarted }
		}
		return nil
	})
	var ls []*listener
	var lists []*listCounter
	for k := range 4 {
		v := eras[k%2]
		name := fmt.Sprintf("%s listener %d", v, k)
		l, lc := newListener(name), &listCounter{got: map[string]int{}}
		cl := c.connect(name, c.url(), v, append(lc.options(), l.option())...)
		for _, uri := range []string{counterURI, markerURI} {
			if err := cl.Subscribe(context.Background(), uri, mcp.WithTimeout(waitBound)); err != nil {
				t.Fatalf("%s: subscribing to %s: %v", name, uri, err)
			}
		}
		ls, lists = append(ls, l), append(lists, lc)
	}

	c.restart(restarted)
	toucher := c.connect("toucher", c.instances[restarted].url(), mcp.Version20260728)
	c.touch(toucher, 1, 1, 1, ls)
	for k, lc := range lists {
		if got := lc.counts(); len(got) != 0 {
			t.Errorf("%s: list changes %v from a restart", ls[k].name, got)
		}
	}
}
