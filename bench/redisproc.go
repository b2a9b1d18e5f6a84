package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProc is a redis-server of the -instances mode's own, on a free
// loopback port, keeping nothing on disk.
type redisProc struct {
	addr    string
	version string // "Redis 7.0.15", from redis-server --version
	cmd     *exec.Cmd
	done    chan struct{}
	once    sync.Once
}

// startRedis runs bin (redis-server) on a free loopback port with
// persistence off and returns once it answers PING.
func startRedis(bin string) (*redisProc, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("-instances needs redis-server (the Debian package redis-server, or -redis-server PATH): %w", err)
	}
	version := "Redis"
	if out, err := exec.Command(path, "--version").Output(); err == nil {
		// "Redis server v=7.0.15 sha=… malloc=… bits=64 build=…"
		for _, f := range strings.Fields(string(out)) {
			if v, ok := strings.CutPrefix(f, "v="); ok {
				version += " " + v
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var log strings.Builder
	logged := make(chan struct{})
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	go func() { // keep the first lines for an error; drain the rest
		defer close(logged)
		sc := bufio.NewScanner(out)
		for i := 0; sc.Scan(); i++ {
			if i < 40 {
				log.WriteString(sc.Text() + "\n")
			}
		}
		io.Copy(io.Discard, out)
	}()
	p := &redisProc{addr: fmt.Sprintf("127.0.0.1:%d", port), version: version, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()

	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			<-logged
			return nil, fmt.Errorf("redis-server on %s ended before it was ready:\n%s", p.addr, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("redis-server on " + p.addr + " did not answer PING within ten seconds")
		}
	}
}

// stop ends the server at once and waits until it did; safe to call
// more than once, from any goroutine.
func (p *redisProc) stop() {
	p.once.Do(func() { p.cmd.Process.Kill() })
	<-p.done
}
