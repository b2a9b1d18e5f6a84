package mcpredis

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// The tests of this file run a server as three instances, each a process
// of cmd/mcp-instance, sharing a Redis of the test's own, behind a
// round-robin proxy with no affinity, and drive them with clients of both
// eras at once: the done-when test of running many instances.

// waitBound bounds every wait for something another process does.
const waitBound = 20 * time.Second

// taskLease is the instances' task lease: a task whose instance was killed
// fails this long after, well within the calls' timeouts.
const taskLease = 2 * time.Second

// instance is one mcp-instance process.
type instance struct {
	name string
	addr string // host:port it listens on
	cmd  *exec.Cmd
	done chan struct{} // closed once the process ended and its output was read

	mu    sync.Mutex
	lines []string
	waits map[string]chan struct{}
}

func (in *instance) url() string { return "http://" + in.addr + "/mcp" }

// line records one line of the instance's standard error.
func (in *instance) line(s string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.lines = append(in.lines, s)
	for want, ch := range in.waits {
		if strings.Contains(s, want) {
			close(ch)
			delete(in.waits, want)
		}
	}
}

// next returns a channel closed once the instance prints a line
// containing want, from now on.
func (in *instance) next(want string) <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	ch := make(chan struct{})
	in.waits[want] = ch
	return ch
}

func (in *instance) output() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return strings.Join(in.lines, "\n")
}

// kill ends the process at once (SIGKILL) and waits until it did.
func (in *instance) kill() {
	in.cmd.Process.Kill()
	<-in.done
}

// stop ends the process gracefully (SIGTERM), or kills it when it does
// not end in time.
func (in *instance) stop() {
	in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(waitBound):
		in.kill()
	}
}

// await waits until ch is closed, failing the test after waitBound.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitBound):
		t.Fatalf("%s: not after %v", what, waitBound)
	}
}

// hit is one request the proxy passed on.
type hit struct {
	backend int
	method  string
	client  string // the client's X-Test-Client header
	body    string // its start
	status  int    // the backend's answer; 0 while it runs
	took    time.Duration
}

// statusWriter notes the status a proxied response had.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes streams through at once.
func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// rrProxy is a load balancer with no affinity: each request goes to the
// next backend in turn. A backend that refuses connections is taken out,
// as a balancer's health check would, and the request goes to the next.
// route, when set, names the backends a request may go to (nil: any); the tests use
// it only to place long-lived streams where a test needs them.
type rrProxy struct {
	proxies   []*httputil.ReverseProxy
	transport *http.Transport
	next      atomic.Uint64
	dead      []atomic.Bool

	mu    sync.Mutex
	route func(r *http.Request, body []byte) func(backend int) bool
	hits  []hit
}

// refusedKey carries, in a proxied request's context, where the proxy
// notes that the backend refused the connection.
type refusedKey struct{}

// maxProxyBody bounds a request body the proxy reads.
const maxProxyBody = 1 << 20

func newProxy(backends []string) *rrProxy {
	p := &rrProxy{dead: make([]atomic.Bool, len(backends))}
	p.transport = http.DefaultTransport.(*http.Transport).Clone()
	p.transport.MaxIdleConnsPerHost = 256
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			panic(err)
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.FlushInterval = -1 // streams pass through at once
		rp.Transport = p.transport
		rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, syscall.ECONNREFUSED) {
				*r.Context().Value(refusedKey{}).(*bool) = true
				return
			}
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		}
		p.proxies = append(p.proxies, rp)
	}
	return p
}

func (p *rrProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxProxyBody+1))
	r.Body.Close()
	if err != nil || len(body) > maxProxyBody {
		http.Error(w, "proxy: cannot read the body", http.StatusRequestEntityTooLarge)
		return
	}
	p.mu.Lock()
	route := p.route
	p.mu.Unlock()
	allowed := func(int) bool { return true }
	if route != nil {
		if a := route(r, body); a != nil {
			allowed = a
		}
	}
	n := uint64(len(p.proxies))
	for range 2 * n {
		i := int((p.next.Add(1) - 1) % n)
		if p.dead[i].Load() || !allowed(i) {
			continue
		}
		p.mu.Lock()
		n := len(p.hits)
		p.hits = append(p.hits, hit{backend: i, method: r.Method, client: r.Header.Get("X-Test-Client"), body: string(body[:min(len(body), 512)])})
		p.mu.Unlock()
		refused := false
		out := r.Clone(context.WithValue(r.Context(), refusedKey{}, &refused))
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		p.proxies[i].ServeHTTP(sw, out)
		p.mu.Lock()
		p.hits[n].status, p.hits[n].took = sw.status, time.Since(start)
		p.mu.Unlock()
		if !refused {
			return
		}
		p.dead[i].Store(true)
	}
	http.Error(w, "proxy: no live backend", http.StatusBadGateway)
}

// setRoute sets the proxy's route (nil: any backend).
func (p *rrProxy) setRoute(route func(r *http.Request, body []byte) func(int) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.route = route
}

// where returns the requests that pass keep.
func (p *rrProxy) where(keep func(hit) bool) []hit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hit
	for _, h := range p.hits {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// find returns the requests whose body contains s.
func (p *rrProxy) find(s string) []hit {
	return p.where(func(h hit) bool { return strings.Contains(h.body, s) })
}

// routeOf says where the client named name sent each GET and
// subscription, how it was answered, and how long it took, such as
// "initialize>i1 GET>i3:200/1.2s resources/subscribe>i2".
func (p *rrProxy) routeOf(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, h := range p.hits {
		if h.client != name {
			continue
		}
		what := h.method
		if h.method == http.MethodPost {
			var m struct {
				Method string `json:"method"`
			}
			json.Unmarshal([]byte(h.body), &m)
			what = cmp.Or(m.Method, "response")
		}
		fmt.Fprintf(&b, "%s>i%d", what, h.backend+1)
		if h.method == http.MethodGet || what == "subscriptions/listen" {
			fmt.Fprintf(&b, ":%d/%.1fs", h.status, h.took.Seconds())
		}
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

// gets returns the GET requests.
func (p *rrProxy) gets() []hit {
	return p.where(func(h hit) bool { return h.method == http.MethodGet })
}

// multiCluster is Redis, three instances and the proxy.
type multiCluster struct {
	t         *testing.T
	redis     *redisServer
	instances []*instance
	proxy     *rrProxy
	front     *httptest.Server
	http      *http.Client // the clients' HTTP client
	clients   []*mcp.Client
}

// buildInstance builds cmd/mcp-instance into dir.
func buildInstance(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "mcp-instance")
	out, err := exec.Command(goBin, "build", "-o", bin, "./cmd/mcp-instance").CombinedOutput()
	if err != nil {
		t.Fatalf("building cmd/mcp-instance: %v\n%s", err, out)
	}
	return bin
}

// startCluster starts Redis, three instances sharing it and a state key,
// and the proxy in front of them. Everything ends with the test.
func startCluster(t *testing.T) *multiCluster {
	t.Helper()
	c := &multiCluster{t: t, redis: startRedis(t)}
	bin := buildInstance(t, t.TempDir())
	key := make([]byte, 32)
	rand.Read(key)
	for i := range 3 {
		in := &instance{name: "i" + strconv.Itoa(i+1), done: make(chan struct{}), waits: map[string]chan struct{}{}}
		// A port below the ephemeral range, so that none is handed to
		// another socket while a test has the instance stopped to start it
		// again on its address.
		in.cmd = exec.Command(bin, "-addr", fmt.Sprintf("127.0.0.1:%d", testPort(t)), "-redis", c.redis.addr(), "-prefix", "multi:",
			"-name", in.name, "-state-key", hex.EncodeToString(key), "-redis-timeout", "1s",
			"-task-lease", taskLease.String())
		stderr, err := in.cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		listening := in.next("listening on ")
		if err := in.cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", in.name, err)
		}
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				in.line(sc.Text())
			}
			in.cmd.Wait()
			close(in.done)
		}()
		select {
		case <-listening:
		case <-in.done:
			t.Fatalf("%s ended before it listened:\n%s", in.name, in.output())
		case <-time.After(waitBound):
			in.kill()
			t.Fatalf("%s did not listen after %v:\n%s", in.name, waitBound, in.output())
		}
		for _, l := range strings.Split(in.output(), "\n") {
			if a, ok := strings.CutPrefix(l, "listening on "); ok {
				in.addr = a
			}
		}
		c.instances = append(c.instances, in)
		t.Cleanup(in.stop)
	}
	c.proxy = newProxy([]string{"http://" + c.instances[0].addr, "http://" + c.instances[1].addr, "http://" + c.instances[2].addr})
	c.front = httptest.NewServer(c.proxy)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	c.http = &http.Client{Transport: tr}
	t.Cleanup(c.close)
	return c
}

// close closes the clients, the proxy and the idle connections; the
// instances and Redis stop in their own cleanups.
func (c *multiCluster) close() {
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
	c.front.Close()
	c.proxy.transport.CloseIdleConnections()
	c.http.CloseIdleConnections()
}

// url is the proxy's endpoint.
func (c *multiCluster) url() string { return c.front.URL + "/mcp" }

// connect connects a client named name on revision v to endpoint, closed
// with the cluster. Its requests carry its name, for the proxy's record.
func (c *multiCluster) connect(name, endpoint, v string, opts ...mcp.ClientOption) *mcp.Client {
	c.t.Helper()
	cl, err := c.dial(name, endpoint, v, opts...)
	if err != nil {
		c.t.Fatalf("connecting on %s to %s: %v", v, endpoint, err)
	}
	return cl
}

// dial is connect that returns the error.
func (c *multiCluster) dial(name, endpoint, v string, opts ...mcp.ClientOption) (*mcp.Client, error) {
	cl := mcp.NewClient(mcp.Implementation{Name: "multi-test", Version: "1"},
		append([]mcp.ClientOption{mcp.WithProtocolVersion(v)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := cl.Connect(ctx, mcp.NewHTTPTransport(endpoint, mcp.WithHTTPClient(c.http), mcp.WithHeader("X-Test-Client", name))); err != nil {
		return nil, err
	}
	c.clients = append(c.clients, cl)
	return cl, nil
}

// eras are the two revisions the clients speak, legacy first.
var eras = []string{mcp.Version20251125, mcp.Version20260728}

func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// multiCalls is how many calls TestMultiProgress makes: MCP_MULTI_CALLS,
// default 10,000.
func multiCalls(t *testing.T) int {
	s := os.Getenv("MCP_MULTI_CALLS")
	if s == "" {
		return 10000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 20 {
		t.Fatalf("MCP_MULTI_CALLS=%q: want a number of at least 20", s)
	}
	return n
}

// TestMultiProgress: clients of both eras at once, twenty of them, make
// 10,000 calls with progress through the proxy; every call is answered,
// each with all its reports in order and before its answer, none twice.
func TestMultiProgress(t *testing.T) {
	c := startCluster(t)
	const clients, steps = 20, 3
	calls := multiCalls(t)
	per := calls / clients
	var answered, reports atomic.Int64
	var wg sync.WaitGroup
	for k := range clients {
		v := eras[k%2]
		cl := c.connect(fmt.Sprintf("%s caller %d", v, k), c.url(), v)
		wg.Go(func() {
			for j := range per {
				var got atomic.Int32
				res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": steps}, mcp.WithTimeout(waitBound),
					mcp.WithProgress(func(p mcp.Progress) {
						if n := got.Add(1); int(p.Progress) != int(n) {
							t.Errorf("%s client %d call %d: report %d says %v", v, k, j, n, p.Progress)
						}
						reports.Add(1)
					}))
				if err != nil {
					t.Errorf("%s client %d call %d: %v", v, k, j, err)
					return
				}
				if got := textOf(res); got != fmt.Sprintf("%d steps", steps) {
					t.Errorf("%s client %d call %d: answer %q", v, k, j, got)
				}
				if n := got.Load(); n != steps {
					t.Errorf("%s client %d call %d: %d reports before the answer, want %d", v, k, j, n, steps)
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	if n := answered.Load(); n != int64(clients*per) {
		t.Errorf("%d calls answered, want %d", n, clients*per)
	}
	if n := reports.Load(); n != int64(clients*per*steps) {
		t.Errorf("%d progress reports, want %d", n, clients*per*steps)
	}
	for i := range c.instances {
		if n := len(c.proxy.where(func(h hit) bool { return h.backend == i })); n == 0 {
			t.Errorf("instance %d served nothing", i+1)
		}
	}
}

// elicitAnswer is what the elicit tool returns.
type elicitAnswer struct {
	Instance string         `json:"instance"`
	Action   string         `json:"action"`
	Content  map[string]any `json:"content"`
}

// TestMultiElicitation: legacy clients answer elicitations, the answer
// of each landing wherever the proxy sends it, which is mostly another
// instance than the one whose handler waits; each handler gets its own
// answer, once. 2026-07-28 clients do the same at once: the call is sent
// again with the answer and the shared state key lets any instance take
// it.
func TestMultiElicitation(t *testing.T) {
	c := startCluster(t)
	const clients, each = 6, 10
	var asked sync.Map // token -> *atomic.Int32
	handler := mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		token, _ := strings.CutPrefix(p.Message, "token ")
		n, _ := asked.LoadOrStore(token, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"word": token}}, nil
	})
	var elsewhere, legacy, moved atomic.Int32
	var wg sync.WaitGroup
	for k := range clients {
		v := eras[k%2]
		cl := c.connect(fmt.Sprintf("%s asker %d", v, k), c.url(), v, handler)
		wg.Go(func() {
			for j := range each {
				token := fmt.Sprintf("tok-%d-%d", k, j)
				res, err := cl.CallTool(context.Background(), "elicit", map[string]string{"token": token}, mcp.WithTimeout(waitBound))
				if err != nil {
					t.Errorf("%s %s: %v", v, token, err)
					continue
				}
				var out elicitAnswer
				if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
					t.Errorf("%s %s: result %s: %v", v, token, res.StructuredContent, err)
					continue
				}
				if out.Action != mcp.ActionAccept || out.Content["word"] != token {
					t.Errorf("%s %s: the handler got %+v, not its own answer", v, token, out)
				}
				if v != mcp.Version20251125 {
					// The call, then the call again with the answer.
					rounds := c.proxy.find(`"token":"` + token + `"`)
					if len(rounds) != 2 {
						t.Errorf("%s %s: %d rounds through the proxy, want 2", v, token, len(rounds))
					} else if rounds[0].backend != rounds[1].backend {
						moved.Add(1)
					}
					continue
				}
				legacy.Add(1)
				answers := c.proxy.find(`"word":"` + token + `"`)
				if len(answers) != 1 {
					t.Errorf("%s %s: %d answers went through the proxy, want 1", v, token, len(answers))
					continue
				}
				if c.instances[answers[0].backend].name != out.Instance {
					elsewhere.Add(1)
				}
			}
		})
	}
	wg.Wait()
	asked.Range(func(token, n any) bool {
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Errorf("%s was asked %d times, want once", token, got)
		}
		return true
	})
	t.Logf("%d of %d legacy answers landed on another instance than the asking handler's", elsewhere.Load(), legacy.Load())
	t.Logf("%d 2026-07-28 calls were answered on another instance than the one that asked", moved.Load())
	if moved.Load() == 0 {
		t.Errorf("no 2026-07-28 answer went to another instance than its question: the shared state key was not tried")
	}
	if elsewhere.Load() == 0 {
		t.Errorf("no legacy answer landed on another instance than its handler's: the test proved nothing")
	}
}

// listener counts the resource updates a client receives, per URI, and
// lets a test wait for the nth of one.
type listener struct {
	name  string
	mu    sync.Mutex
	count map[string]int
	waits map[string]chan struct{} // "uri#n"
}

func newListener(name string) *listener {
	return &listener{name: name, count: map[string]int{}, waits: map[string]chan struct{}{}}
}

func (l *listener) option() mcp.ClientOption {
	return mcp.WithResourceUpdatedHandler(func(ctx context.Context, uri string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.count[uri]++
		key := fmt.Sprintf("%s#%d", uri, l.count[uri])
		if ch, ok := l.waits[key]; ok {
			close(ch)
			delete(l.waits, key)
		}
	})
}

// reached returns a channel closed once the client received the nth
// update of uri.
func (l *listener) reached(uri string, n int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if l.count[uri] >= n {
		close(ch)
		return ch
	}
	l.waits[fmt.Sprintf("%s#%d", uri, n)] = ch
	return ch
}

func (l *listener) of(uri string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[uri]
}

const (
	counterURI = "test://counter"
	markerURI  = "test://marker"
)

// subscribe connects a listener on revision v through the proxy,
// subscribed to the counter and the marker.
func (c *multiCluster) subscribe(name, v string) *listener {
	c.t.Helper()
	l := newListener(name)
	cl := c.connect(name, c.url(), v, l.option())
	for _, uri := range []string{counterURI, markerURI} {
		if err := cl.Subscribe(context.Background(), uri, mcp.WithTimeout(waitBound)); err != nil {
			c.t.Fatalf("%s: subscribing to %s: %v", name, uri, err)
		}
	}
	return l
}

// touch announces, from instance i directly, k updates of the counter,
// then one of the marker, and waits until every listener received the
// marker's nth; it checks that each then has the counter's total.
func (c *multiCluster) touch(toucher *mcp.Client, k, nth, total int, ls []*listener) {
	c.t.Helper()
	for range k {
		if _, err := toucher.CallTool(context.Background(), "touch", map[string]string{"uri": counterURI}, mcp.WithTimeout(waitBound)); err != nil {
			c.t.Fatalf("touch: %v", err)
		}
	}
	if _, err := toucher.CallTool(context.Background(), "touch", map[string]string{"uri": markerURI}, mcp.WithTimeout(waitBound)); err != nil {
		c.t.Fatalf("touch marker: %v", err)
	}
	// One deadline for all: a listener that misses the marker is an
	// error, and the others are still checked.
	deadline, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	missed := map[*listener]bool{}
	for _, l := range ls {
		select {
		case <-l.reached(markerURI, nth):
		case <-deadline.Done():
			missed[l] = true
			c.t.Errorf("%s: marker update %d not received after %v (it has %d of the counter's %d); the session's requests went: %s",
				l.name, nth, waitBound, l.of(counterURI), total, c.proxy.routeOf(l.name))
		}
	}
	if len(missed) > 0 {
		for _, in := range c.instances {
			c.t.Logf("%s's standard error:\n%s", in.name, in.output())
		}
	}
	for _, l := range ls {
		if missed[l] {
			continue
		}
		if got := l.of(counterURI); got != total {
			c.t.Errorf("%s: %d updates of the counter once the marker arrived, want %d; the session's requests went: %s", l.name, got, total, c.proxy.routeOf(l.name))
		}
		if got := l.of(markerURI); got != nth {
			c.t.Errorf("%s: %d updates of the marker, want %d", l.name, got, nth)
		}
	}
}

// isListen tells a 2026-07-28 subscriptions/listen request.
func isListen(body []byte) bool {
	return bytes.Contains(body, []byte(`"subscriptions/listen"`))
}

// TestMultiResourceUpdated: a resource touched on instance 1 reaches
// every listener held by instances 2 and 3, exactly once: legacy clients
// subscribed with resources/subscribe whose GET stream is there, and
// 2026-07-28 clients whose subscriptions/listen stream is there.
func TestMultiResourceUpdated(t *testing.T) {
	c := startCluster(t)
	// Streams go to instances 2 and 3 only; everything else in turn.
	c.proxy.setRoute(func(r *http.Request, body []byte) func(int) bool {
		if r.Method == http.MethodGet || isListen(body) {
			return func(i int) bool { return i != 0 }
		}
		return nil
	})
	var ls []*listener
	for k := range 4 {
		ls = append(ls, c.subscribe(fmt.Sprintf("%s listener %d", eras[k%2], k), eras[k%2]))
	}
	streams := 0
	for _, h := range c.proxy.gets() {
		if h.backend == 0 {
			t.Fatalf("a GET stream went to instance 1")
		}
		streams++
	}
	for _, h := range c.proxy.find(`"subscriptions/listen"`) {
		if h.backend == 0 {
			t.Fatalf("a listen stream went to instance 1")
		}
		streams++
	}
	if streams < 4 {
		t.Fatalf("%d streams opened through the proxy, want a GET or a listen for each of the 4 listeners", streams)
	}
	toucher := c.connect("toucher", c.instances[0].url(), mcp.Version20260728)
	c.touch(toucher, 3, 1, 3, ls)
	c.touch(toucher, 2, 2, 5, ls)
}

// TestMultiTask: each client talks to one instance directly (each says
// who it is); a task created on instance 1 is polled on instance 2 and
// cancelled on instance 3; it ends cancelled, and its handler on
// instance 1 sees its context end.
func TestMultiTask(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	var cls []*mcp.Client
	for _, in := range c.instances {
		cl := c.connect("tasker on "+in.name, in.url(), mcp.Version20260728)
		res, err := cl.CallTool(ctx, "whoami-instance", nil, mcp.WithTimeout(waitBound))
		if err != nil || textOf(res) != in.name {
			t.Fatalf("whoami-instance at %s: %q, %v; want %s", in.addr, textOf(res), err, in.name)
		}
		cls = append(cls, cl)
	}
	task, err := cls[0].StartTool(ctx, "slow-task", map[string]float64{"seconds": 60}, mcp.WithTask(time.Minute), mcp.WithTimeout(waitBound))
	if err != nil {
		t.Fatalf("starting the task on instance 1: %v", err)
	}
	id := task.Task().ID
	if id == "" {
		t.Fatalf("instance 1 answered at once instead of making a task")
	}
	got, err := cls[1].OpenTask(id).Get(ctx, mcp.WithTimeout(waitBound))
	if err != nil {
		t.Fatalf("tasks/get on instance 2: %v", err)
	}
	if got.Status != mcp.TaskWorking {
		t.Fatalf("tasks/get on instance 2: status %q, want working", got.Status)
	}
	ended := c.instances[0].next("slow-task ended early")
	if err := cls[2].OpenTask(id).Cancel(ctx, mcp.WithTimeout(waitBound)); err != nil {
		t.Fatalf("tasks/cancel on instance 3: %v", err)
	}
	await(t, ended, "the handler on instance 1 seeing its context end")
	for i, cl := range cls {
		got, err := cl.OpenTask(id).Get(ctx, mcp.WithTimeout(waitBound))
		if err != nil {
			t.Fatalf("tasks/get on instance %d after the cancel: %v", i+1, err)
		}
		if got.Status != mcp.TaskCancelled {
			t.Errorf("tasks/get on instance %d after the cancel: status %q, want cancelled", i+1, got.Status)
		}
	}
	if _, err := task.Wait(ctx, mcp.WithTimeout(waitBound)); !errors.Is(err, mcp.ErrTaskCancelled) {
		t.Errorf("waiting on the task on instance 1: %v, want ErrTaskCancelled", err)
	}
}

// slowCall is one slow-task call in flight while an instance is killed.
type slowCall struct {
	client  string
	tag     string
	started chan struct{} // closed at its first progress report
	err     error
	text    string
	ended   time.Time
}

// TestMultiKillInstance: instance 3 is killed (SIGKILL) while legacy
// clients hold their GET streams there and calls of both eras are in
// flight on every instance. The legacy clients resume their streams on
// another instance from the event store, with no update lost or repeated;
// the calls that were on instance 3 fail with an error within their
// timeout; every other call is answered, and listeners elsewhere see
// nothing of it.
func TestMultiKillInstance(t *testing.T) {
	c := startCluster(t)
	const victim = 2
	// The first GET of each legacy client, and its subscriptions, go to
	// the victim, so that its stream is there and knows what to carry
	// (TestMultiResourceUpdated covers subscriptions made elsewhere); a
	// resume goes anywhere alive. 2026-07-28 listen streams stay off the
	// victim: a listen stream that is cut ends, by the spec, and the
	// client must listen again.
	c.proxy.setRoute(func(r *http.Request, body []byte) func(int) bool {
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "",
			bytes.Contains(body, []byte(`"resources/subscribe"`)):
			return func(i int) bool { return i == victim }
		case isListen(body):
			return func(i int) bool { return i != victim }
		}
		return nil
	})
	var ls []*listener
	var callers []*mcp.Client
	for k := range 6 {
		v := eras[k%2]
		l := c.subscribe(fmt.Sprintf("%s listener %d", v, k), v)
		ls = append(ls, l)
		callers = append(callers, c.clients[len(c.clients)-1])
	}
	toucher := c.connect("toucher", c.instances[0].url(), mcp.Version20260728)
	c.touch(toucher, 2, 1, 2, ls)

	// Each call is bounded by its context: a 2026-07-28 client runs the
	// tool as a task and polls it, and a task whose instance died fails
	// once its lease runs out.
	const timeout = 6 * time.Second
	var calls []*slowCall
	var wg sync.WaitGroup
	for k, cl := range callers {
		for j := range 3 {
			sc := &slowCall{client: ls[k].name, tag: fmt.Sprintf("slow-%d-%d", k, j), started: make(chan struct{})}
			calls = append(calls, sc)
			var once sync.Once
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				res, err := cl.CallTool(ctx, "slow-task", map[string]any{"seconds": 2, "tag": sc.tag}, mcp.WithTimeout(timeout),
					mcp.WithProgress(func(mcp.Progress) { once.Do(func() { close(sc.started) }) }))
				sc.err, sc.text, sc.ended = err, textOf(res), time.Now()
				once.Do(func() { close(sc.started) })
			})
		}
	}
	for _, sc := range calls {
		await(t, sc.started, sc.tag+" starting")
	}
	killed := time.Now()
	c.instances[victim].kill()

	c.touch(toucher, 2, 2, 4, ls)
	wg.Wait()
	onVictim, elsewhere := 0, 0
	for _, sc := range calls {
		hs := c.proxy.find(`"tag":"` + sc.tag + `"`)
		if len(hs) != 1 {
			t.Errorf("%s: %d requests through the proxy, want 1", sc.tag, len(hs))
			continue
		}
		if hs[0].backend == victim {
			onVictim++
			if sc.err == nil {
				t.Errorf("%s of %s was on the killed instance, yet answered %q", sc.tag, sc.client, sc.text)
			} else if d := sc.ended.Sub(killed); d > timeout {
				t.Errorf("%s of %s failed %v after the kill, past its timeout of %v: %v", sc.tag, sc.client, d, timeout, sc.err)
			} else if strings.Contains(sc.client, mcp.Version20260728) && !strings.Contains(sc.err.Error(), "stopped before the task ended") {
				t.Errorf("%s of %s, a task on the killed instance, failed %v after the kill with %v; want the error that its instance stopped", sc.tag, sc.client, d, sc.err)
			} else {
				t.Logf("%s of %s, on the killed instance: %v", sc.tag, sc.client, sc.err)
			}
			continue
		}
		elsewhere++
		if sc.err != nil || !strings.Contains(sc.text, "worked 2 seconds") {
			t.Errorf("%s of %s was on instance %d, alive, yet: %q, %v", sc.tag, sc.client, hs[0].backend+1, sc.text, sc.err)
		}
	}
	if onVictim == 0 || elsewhere == 0 {
		t.Errorf("%d calls on the killed instance and %d elsewhere: want some of each", onVictim, elsewhere)
	}
	resumed := 0
	for _, h := range c.proxy.gets() {
		if h.backend != victim {
			resumed++
		}
	}
	if resumed == 0 {
		t.Errorf("no GET stream was resumed on another instance")
	}
}

// TestMultiRedisRestart: Redis stops mid-run and comes back on the same
// port. In between, what needs it fails with an error that says so, and
// fast; afterwards the instances serve new sessions and tasks again by
// themselves, and updates reach listeners again. The test process keeps
// no goroutine of it.
func TestMultiRedisRestart(t *testing.T) {
	c := startCluster(t)
	before := runtime.NumGoroutine()
	ctx := context.Background()
	toucher := c.connect("toucher", c.instances[0].url(), mcp.Version20260728)
	if _, err := toucher.CallTool(ctx, "progress", map[string]int{"steps": 1}, mcp.WithTimeout(waitBound)); err != nil {
		t.Fatal(err)
	}

	var lost, back []<-chan struct{}
	for _, in := range c.instances {
		lost = append(lost, in.next("the broadcaster lost Redis"))
		back = append(back, in.next("the broadcaster is back on Redis"))
	}
	c.redis.stop()
	for i, ch := range lost {
		await(t, ch, c.instances[i].name+" noticing Redis gone")
	}
	start := time.Now()
	if _, err := c.dial("legacy while Redis is down", c.url(), mcp.Version20251125); err == nil {
		t.Errorf("a legacy session began with Redis down")
	} else if !strings.Contains(err.Error(), "mcpredis: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a legacy session with Redis down: %v, want an error naming the Redis call and its cause", err)
	} else {
		t.Logf("a legacy session with Redis down: %v", err)
	}
	if _, err := toucher.StartTool(ctx, "slow-task", map[string]float64{"seconds": 0}, mcp.WithTask(time.Minute), mcp.WithTimeout(waitBound)); err == nil {
		t.Errorf("a task began with Redis down")
	} else if !strings.Contains(err.Error(), "mcpredis: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a task with Redis down: %v, want an error naming the Redis call and its cause", err)
	} else {
		t.Logf("a task with Redis down: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the failures took %v, want them fast", d)
	}

	c.redis.start()
	for i, ch := range back {
		await(t, ch, c.instances[i].name+" back on Redis")
	}
	// The legacy listener's stream and subscriptions go to one instance
	// (TestMultiResourceUpdated covers subscriptions made elsewhere).
	c.proxy.setRoute(func(r *http.Request, body []byte) func(int) bool {
		if r.Method == http.MethodGet || bytes.Contains(body, []byte(`"resources/subscribe"`)) {
			return func(i int) bool { return i == 1 }
		}
		return nil
	})
	l := c.subscribe("legacy listener after the restart", mcp.Version20251125)
	m := c.subscribe("2026-07-28 listener after the restart", mcp.Version20260728)
	c.touch(toucher, 1, 1, 1, []*listener{l, m})
	cl := c.clients[len(c.clients)-2]
	if res, err := cl.CallTool(ctx, "progress", map[string]int{"steps": 2}, mcp.WithTimeout(waitBound)); err != nil || textOf(res) != "2 steps" {
		t.Errorf("a legacy call after the restart: %q, %v", textOf(res), err)
	}
	task, err := toucher.StartTool(ctx, "slow-task", map[string]float64{"seconds": 0}, mcp.WithTask(time.Minute), mcp.WithTimeout(waitBound))
	if err != nil {
		t.Fatalf("a task after the restart: %v", err)
	}
	if res, err := task.Wait(ctx, mcp.WithTimeout(waitBound)); err != nil || !strings.Contains(textOf(res), "worked 0 seconds") {
		t.Errorf("the task after the restart: %q, %v", textOf(res), err)
	}

	c.close()
	settle(t, before)
}

// settle waits until the test process runs at most want goroutines.
func settle(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), want, buf)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
