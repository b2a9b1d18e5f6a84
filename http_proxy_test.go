package mcp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startNginx starts nginx (Debian's nginx-light, installed by .ci/run) on a
// free port of 127.0.0.1, in front of upstream (host:port), with the stock
// proxy_pass settings plus the directives in extra, and stops it when the
// test ends. It returns the proxy's URL. Without nginx the test is
// skipped, unless CI is set: there that is a failure.
func startNginx(t *testing.T, upstream, extra string) string {
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nginx binds it next
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server {
		listen %[2]s;
		location / {
			proxy_pass http://%[3]s;
			%[4]s
		}
	}
}
`, dir, addr, upstream, extra)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", "stderr")
	var stderr lockedWriter
	stderr.w = &bytes.Buffer{}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill()
		<-exited // stderr is written no more
	}
	t.Cleanup(stop)
	// nginx listens before it writes its pid file; until then a dial is
	// refused at once. Bounded, so that a broken start fails the test.
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited: %v; stderr: %s", waitErr, stderr.w)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("nginx did not listen on %s: %v; stderr: %s", addr, err, stderr.w)
		}
	}
	return "http://" + addr + "/"
}

// silentCallsThroughNginx calls a tool that sends nothing for silence
// through nginx in front of a handler with keepAlive, on both eras at
// once, and checks that both calls succeed.
func silentCallsThroughNginx(t *testing.T, nginxExtra string, keepAlive, silence time.Duration) {
	srv := newTestServer()
	srv.AddTool(Tool{Name: "silent"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		select {
		case <-time.After(silence):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	ts := serveHTTP(t, srv, WithKeepAlive(keepAlive))
	proxy := startNginx(t, ts.Listener.Addr().String(), nginxExtra)
	for _, v := range eras {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v), WithRequestTimeout(2*silence))
			if err := cl.Connect(context.Background(), NewHTTPTransport(proxy)); err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			start := time.Now()
			res, err := cl.CallTool(context.Background(), "silent", nil)
			if err != nil || res.Content[0].Text != "done" {
				t.Fatalf("a call silent for %v through nginx (%s) failed after %v: %+v %v", silence, nginxExtra, time.Since(start), res, err)
			}
		})
	}
}

// TestNginxSilentCall: through a real nginx with the stock proxy settings
// and a read timeout of two seconds, a call silent for five seconds
// succeeds on both eras: the handler's keep-alive comments, every half
// second, keep the proxy reading. (Any byte from the server restarts
// nginx's read timeout; the comments also reach the client at once, as
// the SSE answer says X-Accel-Buffering: no. Without that header a stock
// nginx, which speaks HTTP/1.0 to the server and buffers, would hold them
// until the answer ends; with proxy_http_version 1.1 or proxy_buffering
// off it would pass them on.)
func TestNginxSilentCall(t *testing.T) {
	t.Parallel()
	silentCallsThroughNginx(t, "proxy_read_timeout 2s;", 500*time.Millisecond, 5*time.Second)
}

// TestNginxSilentCallDefaults: with nginx's default read timeout (a
// minute) and the handler's default keep-alive, a call silent for ninety
// seconds succeeds on both eras. It takes that long, so it runs only with
// MCP_NGINX_DEFAULTS set, as .ci/run does for its race run (once: the
// other runs of the suite would only wait it out again).
func TestNginxSilentCallDefaults(t *testing.T) {
	if os.Getenv("MCP_NGINX_DEFAULTS") == "" {
		t.Skip("a call silent for 90 s: run with MCP_NGINX_DEFAULTS=1")
	}
	t.Parallel()
	silentCallsThroughNginx(t, "", DefaultKeepAlive, 90*time.Second)
}

// TestNginxBadGateway: the 502 page nginx answers with when the server is
// down reaches the caller as one short line naming the status, on both
// eras.
func TestNginxBadGateway(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := l.Addr().String()
	l.Close() // nothing listens there: nginx answers 502
	proxy := startNginx(t, upstream, "")
	for _, v := range eras {
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(v))
		err := cl.Connect(context.Background(), NewHTTPTransport(proxy))
		cl.Close()
		if err == nil {
			t.Fatalf("%s: connected through nginx to nothing", v)
		}
		msg := err.Error()
		if !strings.Contains(msg, "502 Bad Gateway") || strings.ContainsAny(msg, "<>\n") || len(msg) > 200 {
			t.Fatalf("%s: nginx's 502 reached the caller as %q", v, msg)
		}
	}
}
