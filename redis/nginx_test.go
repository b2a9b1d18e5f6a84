package mcpredis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e6ac58cb/mcp"
)

// The test of this file puts a real nginx (Debian's nginx-light) in front
// of three mcp-instance processes on one Redis, with the configuration
// docs/deploying.md gives, doing plain round-robin, and drives clients of
// both eras through it.

// The recipe of docs/deploying.md, in three parts; TestNginxRecipeDocumented
// checks that the document carries every line of them.
const (
	recipeUpstream = `keepalive 32;`
	recipeServer   = `client_max_body_size 4m;`
	recipeLocation = `proxy_pass http://mcp_fleet;
proxy_set_header Host $host;
proxy_http_version 1.1;
proxy_set_header Connection "";
proxy_buffering off;
proxy_read_timeout 60s;`
)

// fleetNginx is an nginx in front of the instances: recipe serves the
// recipe, stock the same upstream with nothing but proxy_pass.
type fleetNginx struct {
	recipe, stock string // the endpoints' URLs
	stderr        *syncBuffer

	mu    sync.Mutex
	lines []string // the access log
	waits []logWait
}

// logWait is a test waiting for a line of the access log.
type logWait struct {
	keep func(string) bool
	ch   chan struct{}
}

// syncBuffer is a buffer that nginx's output and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// accessLog returns the lines nginx logged so far, as each request ended:
// method, status, the upstreams tried (comma-separated when it passed the
// request on), their statuses, the seconds it took and the client's
// X-Test-Client header.
func (n *fleetNginx) accessLog() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.lines)
}

// logged returns a channel closed once nginx logged a line that keep
// accepts, before or after now.
func (n *fleetNginx) logged(keep func(string) bool) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := make(chan struct{})
	if slices.ContainsFunc(n.lines, keep) {
		close(ch)
		return ch
	}
	n.waits = append(n.waits, logWait{keep, ch})
	return ch
}

// line records one line of the access log and wakes its waiters.
func (n *fleetNginx) line(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, s)
	n.waits = slices.DeleteFunc(n.waits, func(w logWait) bool {
		if w.keep(s) {
			close(w.ch)
			return true
		}
		return false
	})
}

// readLog reads the access log, a named pipe, line by line as nginx writes
// it, so that the test waits for a request's end instead of polling a file.
// The test holds a writer of its own, so that the reader sees no end before
// nginx opens the pipe; closing it ends the reading.
func (n *fleetNginx) readLog(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("the access log's pipe: %v", err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			n.line(sc.Text())
		}
	}()
	t.Cleanup(func() { // after nginx stopped: cleanups run last first
		w.Close()
		<-done
		r.Close()
	})
}

// isListenStream tells a line of the client named name whose POST took
// five seconds or more: a listen stream.
func isListenStream(name string) func(string) bool {
	return func(line string) bool {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "POST" || !strings.HasSuffix(line, `"`+name+`"`) {
			return false
		}
		secs, err := strconv.ParseFloat(f[4], 64)
		return err == nil && secs >= 5
	}
}

// startFleetNginx starts nginx on two loopback ports, both doing
// round-robin over backends (host:port): one with the recipe, one stock.
// It ends with the test. Without nginx the test is skipped, unless CI is
// set: there that is a failure.
func startFleetNginx(t *testing.T, backends []string) *fleetNginx {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("nginx is not installed (in CI a missing nginx is a failure): %v", err)
			}
			t.Skipf("nginx is not installed: %v", err)
		}
	}
	dir := t.TempDir()
	n := &fleetNginx{stderr: &syncBuffer{}}
	n.readLog(t, filepath.Join(dir, "access.log"))
	recipeAddr := fmt.Sprintf("127.0.0.1:%d", testPort(t))
	stockAddr := fmt.Sprintf("127.0.0.1:%d", testPort(t))
	var servers strings.Builder
	for _, b := range backends {
		fmt.Fprintf(&servers, "\t\tserver %s;\n", b)
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
events { worker_connections 1024; }
http {
	log_format fleet '$request_method $status "$upstream_addr" $upstream_status $request_time "$http_x_test_client"';
	access_log %[1]s/access.log fleet;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream mcp_fleet {
%[2]s		%[3]s
	}
	server {
		listen %[4]s;
		%[5]s
		location /mcp {
			%[6]s
		}
	}
	server {
		listen %[7]s;
		location /mcp {
			proxy_pass http://mcp_fleet;
		}
	}
}
`, dir, servers.String(), recipeUpstream, recipeAddr, recipeServer, recipeLocation, stockAddr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", "stderr")
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	t.Cleanup(stop)
	// nginx listens before it writes its pid file; until then a dial is
	// refused at once. Bounded, so that a broken start fails the test.
	for _, addr := range []string{recipeAddr, stockAddr} {
		for deadline := time.Now().Add(waitBound); ; {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("nginx exited; stderr: %s", n.stderr)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("nginx did not listen on %s: %v; stderr: %s", addr, err, n.stderr)
			}
		}
	}
	n.recipe, n.stock = "http://"+recipeAddr+"/mcp", "http://"+stockAddr+"/mcp"
	return n
}

// TestNginxRecipeDocumented: docs/deploying.md gives the nginx
// configuration TestNginxFleet runs, line for line.
func TestNginxRecipeDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(recipeUpstream+"\n"+recipeServer+"\n"+recipeLocation+"\nupstream mcp_fleet {", "\n") {
		if !bytes.Contains(doc, []byte(line)) {
			t.Errorf("docs/deploying.md lacks the recipe's line %q", line)
		}
	}
}

// fleetCalls is how many calls with progress each era makes through nginx,
// and fleetSteps the reports of each.
const fleetCalls, fleetSteps = 300, 5

// progressCalls makes n calls of the progress tool with fleetSteps reports
// each, spread over cls, and checks that every call is answered with all
// its reports, in order and before its answer, none twice. It returns the
// calls answered and the reports received.
func progressCalls(t *testing.T, what string, cls []*mcp.Client, n int) (answered, reports int64) {
	var a, r atomic.Int64
	var wg sync.WaitGroup
	for k, cl := range cls {
		wg.Go(func() {
			for j := range n / len(cls) {
				var got atomic.Int32
				res, err := cl.CallTool(context.Background(), "progress", map[string]int{"steps": fleetSteps}, mcp.WithTimeout(waitBound),
					mcp.WithProgress(func(p mcp.Progress) {
						if m := got.Add(1); int(p.Progress) != int(m) {
							t.Errorf("%s client %d call %d: report %d says %v", what, k, j, m, p.Progress)
						}
						r.Add(1)
					}))
				if err != nil {
					t.Errorf("%s client %d call %d: %v", what, k, j, err)
					continue
				}
				if got := textOf(res); got != fmt.Sprintf("%d steps", fleetSteps) {
					t.Errorf("%s client %d call %d: answer %q", what, k, j, got)
				}
				if m := got.Load(); m != fleetSteps {
					t.Errorf("%s client %d call %d: %d reports before the answer, want %d", what, k, j, m, fleetSteps)
				}
				a.Add(1)
			}
		})
	}
	wg.Wait()
	return a.Load(), r.Load()
}

// touchRound touches the counter k times and the marker once from
// toucher, and checks that every listener then gets exactly that many
// more of each, the counter's before the marker's.
func touchRound(t *testing.T, toucher *mcp.Client, k int, ls []*listener) {
	t.Helper()
	before := map[*listener][2]int{}
	for _, l := range ls {
		before[l] = [2]int{l.of(counterURI), l.of(markerURI)}
	}
	for range k {
		if _, err := toucher.CallTool(context.Background(), "touch", map[string]string{"uri": counterURI}, mcp.WithTimeout(waitBound)); err != nil {
			t.Fatalf("touch: %v", err)
		}
	}
	if _, err := toucher.CallTool(context.Background(), "touch", map[string]string{"uri": markerURI}, mcp.WithTimeout(waitBound)); err != nil {
		t.Fatalf("touch marker: %v", err)
	}
	deadline, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	for _, l := range ls {
		b := before[l]
		select {
		case <-l.reached(markerURI, b[1]+1):
		case <-deadline.Done():
			t.Errorf("%s: the marker's update not received after %v", l.name, waitBound)
			continue
		}
		if got := l.of(counterURI) - b[0]; got != k {
			t.Errorf("%s: %d updates of the counter once the marker arrived, want %d", l.name, got, k)
		}
		if got := l.of(markerURI) - b[1]; got != 1 {
			t.Errorf("%s: %d updates of the marker, want 1", l.name, got)
		}
	}
}

// TestNginxFleet: three instances on one Redis behind a real nginx doing
// plain round-robin with the recipe of docs/deploying.md. Through it,
// clients of both eras make 300 calls each with five progress reports,
// answer elicitations and hear resource updates, each exactly once and in
// order. Then one instance is killed (SIGKILL) while slow calls run on
// every instance: only the calls it ran fail, the others and every call
// made after the kill succeed, and the listeners go on hearing every
// update. The stock configuration (proxy_pass alone) is refused with 403,
// which shows that the recipe's Host line is needed.
func TestNginxFleet(t *testing.T) {
	start := time.Now()
	c := startCluster(t) // its round-robin proxy in Go stays unused
	var backends []string
	for _, in := range c.instances {
		backends = append(backends, in.addr)
	}
	ngx := startFleetNginx(t, backends)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx's standard error:\n%s", ngx.stderr)
		}
	})

	t.Run("stock config is refused", func(t *testing.T) {
		// proxy_pass alone sends "Host: mcp_fleet", the upstream's name,
		// which an instance on a loopback address refuses (DNS rebinding).
		for _, v := range eras {
			_, err := c.dial(v+" stock", ngx.stock, v)
			if err == nil || !strings.Contains(err.Error(), `Forbidden: host "mcp_fleet" is not allowed`) {
				t.Errorf("%s through the stock config: %v, want the instance's 403 for the host mcp_fleet", v, err)
				continue
			}
			t.Logf("%s through the stock config: %v", v, err)
		}
		refused := 0
		for _, line := range ngx.accessLog() {
			if strings.HasPrefix(line, "POST 403 ") && strings.Contains(line, " stock\"") {
				refused++
			}
		}
		if refused == 0 {
			t.Errorf("nginx logged no 403 for the stock config's requests")
		}
	})

	toucher := c.connect("toucher", c.instances[0].url(), mcp.Version20260728)
	gaps := map[*listener]chan mcp.ListenGap{}
	var ls []*listener
	for k := range 4 {
		v := eras[k%2]
		l := newListener(fmt.Sprintf("%s listener %d", v, k))
		gap := make(chan mcp.ListenGap, 8)
		gaps[l] = gap
		cl := c.connect(l.name, ngx.recipe, v, l.option(),
			mcp.WithListenGapHandler(func(ctx context.Context, g mcp.ListenGap) { gap <- g }))
		for _, uri := range []string{counterURI, markerURI} {
			if err := cl.Subscribe(context.Background(), uri, mcp.WithTimeout(waitBound)); err != nil {
				t.Fatalf("%s: subscribing to %s: %v", l.name, uri, err)
			}
		}
		ls = append(ls, l)
	}

	var asked sync.Map // token -> *atomic.Int32
	elicit := mcp.WithElicitationHandler(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		token, _ := strings.CutPrefix(p.Message, "token ")
		n, _ := asked.LoadOrStore(token, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return &mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"word": token}}, nil
	})
	callers := map[string][]*mcp.Client{}
	for _, v := range eras {
		for k := range 4 {
			callers[v] = append(callers[v], c.connect(fmt.Sprintf("%s caller %d", v, k), ngx.recipe, v, elicit))
		}
	}

	// 300 calls with progress per era, both eras at once, while the
	// resource is touched and elicitations are answered.
	var wg sync.WaitGroup
	for _, v := range eras {
		wg.Go(func() {
			a, r := progressCalls(t, v, callers[v], fleetCalls)
			t.Logf("%s: %d calls answered, %d progress reports", v, a, r)
			if a != fleetCalls || r != fleetCalls*fleetSteps {
				t.Errorf("%s: %d calls answered and %d reports, want %d and %d", v, a, r, fleetCalls, fleetCalls*fleetSteps)
			}
		})
		wg.Go(func() {
			for j := range 12 {
				token := fmt.Sprintf("%s-tok-%d", v, j)
				res, err := callers[v][j%len(callers[v])].CallTool(context.Background(), "elicit", map[string]string{"token": token}, mcp.WithTimeout(waitBound))
				if err != nil {
					t.Errorf("%s elicit %s: %v", v, token, err)
					continue
				}
				if !strings.Contains(string(res.StructuredContent), `"word":"`+token+`"`) {
					t.Errorf("%s elicit %s: the handler got %s, not its own answer", v, token, res.StructuredContent)
				}
			}
		})
	}
	touchRound(t, toucher, 5, ls)
	touchRound(t, toucher, 3, ls)
	wg.Wait()
	asked.Range(func(token, n any) bool {
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Errorf("%s was asked %d times, want once", token, got)
		}
		return true
	})
	t.Logf("before the kill: %v", time.Since(start))

	// A 2026-07-28 client reads a listen stream that a Subscribe replaced
	// for a while more (listenDrain) before it ends it; the kill comes once
	// those have ended, so that a listen stream that ends at the kill is
	// one the client still listens on. nginx logs each as it ends.
	for _, l := range ls {
		if !strings.HasPrefix(l.name, mcp.Version20260728) {
			continue
		}
		await(t, ngx.logged(isListenStream(l.name)), l.name+": its first listen stream, replaced, ending")
	}
	t.Logf("replaced listen streams ended: %v", time.Since(start))

	// Slow calls run on every instance; instance 3 is killed under them.
	const victim = 2
	type slow struct {
		era, on string // on: the instance its first report names
		started chan struct{}
		err     error
		text    string
	}
	var slows []*slow
	for _, v := range eras {
		for k, cl := range callers[v] {
			for range 2 {
				s := &slow{era: v, started: make(chan struct{})}
				slows = append(slows, s)
				var once sync.Once
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
					defer cancel()
					res, err := cl.CallTool(ctx, "slow-task", map[string]any{"seconds": 2, "tag": fmt.Sprintf("%s-%d", v, k)}, mcp.WithTimeout(6*time.Second),
						mcp.WithProgress(func(p mcp.Progress) {
							once.Do(func() {
								s.on, _, _ = strings.Cut(p.Message, ":")
								close(s.started)
							})
						}))
					s.err, s.text = err, textOf(res)
					once.Do(func() { close(s.started) })
				})
			}
		}
	}
	for _, s := range slows {
		await(t, s.started, "a slow call starting")
	}
	logBefore := len(ngx.accessLog())
	c.instances[victim].kill()
	killed := time.Now()

	// Calls made after the kill all succeed: nginx passes a request whose
	// connection is refused on to the next instance.
	for _, v := range eras {
		wg.Go(func() {
			a, r := progressCalls(t, v+" after the kill", callers[v], 60)
			t.Logf("%s after the kill: %d calls answered, %d progress reports", v, a, r)
		})
	}
	wg.Wait()
	t.Logf("the calls after the kill and the slow calls took %v", time.Since(killed))
	onVictim := 0
	for _, s := range slows {
		switch {
		case s.on == c.instances[victim].name:
			onVictim++
			if s.err == nil {
				t.Errorf("a %s slow call ran on the killed instance, yet answered %q", s.era, s.text)
			} else {
				t.Logf("a %s slow call on the killed instance: %v", s.era, s.err)
			}
		case s.err != nil || !strings.Contains(s.text, "worked 2 seconds"):
			t.Errorf("a %s slow call on %s, alive: %q, %v", s.era, s.on, s.text, s.err)
		}
	}
	t.Logf("%d of %d slow calls were on the killed instance", onVictim, len(slows))
	if onVictim == 0 {
		t.Errorf("no slow call was on the killed instance: the kill proved nothing")
	}

	// The listeners: a legacy one whose GET stream was on the killed
	// instance resumes it elsewhere, with nothing lost; a 2026-07-28 one
	// whose listen stream was there listens again and is told of the gap.
	// nginx logged each such stream as it ended, at the kill, before its
	// client saw it break; once every gap is reported, every update
	// reaches every listener exactly once.
	victimAddr := `"` + c.instances[victim].addr + `"`
	after := ngx.accessLog()[logBefore:]
	for _, l := range ls {
		broke := 0
		for _, line := range after {
			if strings.Contains(line, victimAddr) && strings.HasSuffix(line, `"`+l.name+`"`) {
				broke++
				t.Logf("%s: after the kill, nginx logged: %s", l.name, line)
			}
		}
		if broke == 0 {
			continue
		}
		if strings.HasPrefix(l.name, mcp.Version20251125) {
			t.Logf("%s: its GET stream was on the killed instance", l.name)
			continue
		}
		select {
		case g := <-gaps[l]:
			if g.Err != nil {
				t.Errorf("%s: gave up listening: %v", l.name, g.Err)
			} else {
				t.Logf("%s: its listen stream was on the killed instance; the client listened again and reported the gap (%v)", l.name, g.Cause)
			}
		case <-time.After(waitBound):
			t.Errorf("%s: its listen stream was on the killed instance, and no gap was reported after %v", l.name, waitBound)
		}
	}
	touchRound(t, toucher, 2, ls)

	var passed, failed int
	for _, line := range ngx.accessLog()[logBefore:] {
		if strings.Contains(line, ", ") {
			passed++
		}
		if strings.Contains(line, " 502 ") {
			failed++
		}
	}
	t.Logf("after the kill nginx passed %d requests on to another instance and answered %d with 502", passed, failed)
	t.Logf("total: %v", time.Since(start))
}
