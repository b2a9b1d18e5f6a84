package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks below measure the hot paths through the public API only:
// a Server with an echo tool and a progress tool, a Client calling it.
// bench/ runs the same scenarios side by side with the other Go SDKs.

// benchEchoArgs are the arguments of the echo tool.
type benchEchoArgs struct {
	Text string `json:"text"`
}

// benchServer returns a server with the tools the benchmarks call.
func benchServer(opts ...ServerOption) *Server {
	s := NewServer(Implementation{Name: "bench-server", Version: "1.0.0"}, opts...)
	s.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args benchEchoArgs
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(args.Text)}}, nil
	})
	s.AddTool(Tool{Name: "sleep"}, benchSleepTool)
	s.AddTool(Tool{Name: "progress"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		g := req.Gateway()
		for i := 1; i <= args.Count; i++ {
			if err := g.Progress(float64(i), float64(args.Count), ""); err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent("done")}}, nil
	})
	return s
}

// benchSleepTool sleeps for its argument ms, or until the call is cancelled.
func benchSleepTool(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
	var args struct {
		Ms int `json:"ms"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, err
	}
	t := time.NewTimer(time.Duration(args.Ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &CallToolResult{Content: []Content{TextContent("slept")}}, nil
}

// benchCarriers are the carriers every scenario runs over: in-memory
// (io.Pipe), os.Pipe, a child process on stdio (this test binary serving
// benchServer; MCP_TEST_SERVE_CPUPROFILE=file profiles it), and Streamable
// HTTP on a loopback httptest server.
var benchCarriers = []string{"inmemory", "pipe", "stdio", "http"}

// benchTransports are the stream carriers, each a function that returns a
// connected client-side and server-side Transport.
var benchTransports = []struct {
	name    string
	connect func(b *testing.B) (client, server Transport)
}{
	{"inmemory", func(*testing.B) (Transport, Transport) { return NewInMemoryTransports() }},
	{"pipe", func(b *testing.B) (Transport, Transport) { return pipeTransports(b) }},
}

// benchConnect serves srv over a fresh pair from connect and returns a client
// pinned to version; cleanup closes both ends and waits for the server.
func benchConnect(b *testing.B, carrier string, version string, opts ...Option) *Client {
	b.Helper()
	srvOpts, clOpts := []ServerOption{WithProtocolVersion(version)}, []ClientOption{WithProtocolVersion(version)}
	for _, o := range opts {
		srvOpts, clOpts = append(srvOpts, o), append(clOpts, o)
	}
	srv := benchServer(srvOpts...)
	cl := NewClient(Implementation{Name: "bench-client", Version: "1.0.0"}, clOpts...)
	if carrier == "http" {
		ts := httptest.NewServer(NewHTTPHandler(srv))
		if err := cl.Connect(context.Background(), NewHTTPTransport(ts.URL)); err != nil {
			ts.Close()
			b.Fatalf("Connect: %v", err)
		}
		b.Cleanup(func() {
			cl.Close()
			ts.CloseClientConnections()
			ts.Close()
		})
		return cl
	}
	if carrier == "stdio" {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MCP_TEST_SERVE="+version, "MCP_TEST_SERVE_BENCH=1")
		if err := cl.Connect(context.Background(), NewCommandTransport(cmd)); err != nil {
			b.Fatalf("Connect to child: %v", err)
		}
		b.Cleanup(func() { cl.Close() })
		return cl
	}
	var ct, st Transport
	for _, tr := range benchTransports {
		if tr.name == carrier {
			ct, st = tr.connect(b)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	if err := cl.Connect(context.Background(), ct); err != nil {
		b.Fatalf("Connect: %v", err)
	}
	b.Cleanup(func() {
		cl.Close()
		<-served
	})
	return cl
}

// benchVersions are the protocol revisions every scenario runs on: the last
// one with the initialize handshake and the stateless one.
var benchVersions = []string{Version20251125, Version20260728}

// benchEachCarrier runs fn as a sub-benchmark per transport and version.
func benchEachCarrier(b *testing.B, fn func(b *testing.B, cl *Client)) {
	for _, carrier := range benchCarriers {
		for _, v := range benchVersions {
			b.Run(carrier+"/"+v, func(b *testing.B) {
				fn(b, benchConnect(b, carrier, v))
			})
		}
	}
}

// BenchmarkCallToolEcho measures one sequential tools/call round trip with a
// small argument.
func BenchmarkCallToolEcho(b *testing.B) {
	benchEachCarrier(b, benchEcho)
}

// benchEcho calls the echo tool in a loop, one call at a time.
func benchEcho(b *testing.B, cl *Client) {
	ctx := context.Background()
	args := benchEchoArgs{Text: "hello"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cl.CallTool(ctx, "echo", args)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Content) != 1 || res.Content[0].Text != "hello" {
			b.Fatalf("unexpected result %+v", res)
		}
	}
}

// BenchmarkCallToolEchoParallel measures calls from many goroutines sharing
// one session.
func BenchmarkCallToolEchoParallel(b *testing.B) {
	benchEachCarrier(b, func(b *testing.B, cl *Client) {
		args := benchEchoArgs{Text: "hello"}
		b.ReportAllocs()
		b.SetParallelism(32) // 64 goroutines on a 2-core machine
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := cl.CallTool(ctx, "echo", args); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// benchProgressCount is how many notifications one progress call streams.
const benchProgressCount = 10_000

// BenchmarkProgressStream measures one call that streams 10,000 progress
// notifications, and checks that every one reached the callback before
// CallTool returned.
func BenchmarkProgressStream(b *testing.B) {
	benchEachCarrier(b, func(b *testing.B, cl *Client) {
		ctx := context.Background()
		args := map[string]int{"count": benchProgressCount}
		b.ReportAllocs()
		for b.Loop() {
			var got atomic.Int64
			_, err := cl.CallTool(ctx, "progress", args, WithProgress(func(Progress) { got.Add(1) }))
			if err != nil {
				b.Fatal(err)
			}
			if n := got.Load(); n != benchProgressCount {
				b.Fatalf("%d of %d progress notifications delivered before CallTool returned", n, benchProgressCount)
			}
		}
		b.ReportMetric(float64(b.N)*benchProgressCount/b.Elapsed().Seconds(), "notifications/s")
	})
}

// BenchmarkEcho1MiB measures a round trip of a 1 MiB text argument echoed
// back as a 1 MiB text result.
func BenchmarkEcho1MiB(b *testing.B) {
	benchEachCarrier(b, func(b *testing.B, cl *Client) {
		ctx := context.Background()
		args := benchEchoArgs{Text: strings.Repeat("x", 1<<20)}
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			res, err := cl.CallTool(ctx, "echo", args)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Content) != 1 || len(res.Content[0].Text) != 1<<20 {
				b.Fatal("short echo")
			}
		}
	})
}

// The floor messages: what a tools/call echo round trip must encode and
// decode at least once, as plain structs with no SDK. On 2026-07-28 they
// carry what that revision adds to every request and result (request _meta
// with the protocol version and the client's capabilities and info; result
// resultType and _meta with the server's info).
type (
	floorInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	floorRequest struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  struct {
			Meta *struct {
				ProtocolVersion    string         `json:"io.modelcontextprotocol/protocolVersion"`
				ClientCapabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
				ClientInfo         floorInfo      `json:"io.modelcontextprotocol/clientInfo"`
			} `json:"_meta,omitempty"`
			Name      string        `json:"name"`
			Arguments benchEchoArgs `json:"arguments"`
		} `json:"params"`
	}
	floorResponse struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Result  struct {
			ResultType string `json:"resultType,omitempty"`
			Meta       *struct {
				ServerInfo floorInfo `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta,omitempty"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
)

// floorMessages returns the request and response of an echo round trip on
// version.
func floorMessages(version string) (*floorRequest, *floorResponse) {
	req, resp := new(floorRequest), new(floorResponse)
	req.JSONRPC, req.ID, req.Method = "2.0", 1, "tools/call"
	req.Params.Name, req.Params.Arguments.Text = "echo", "hello"
	resp.JSONRPC, resp.ID = "2.0", 1
	resp.Result.Content = append(resp.Result.Content, struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", "hello"})
	if isModernVersion(version) {
		req.Params.Meta = &struct {
			ProtocolVersion    string         `json:"io.modelcontextprotocol/protocolVersion"`
			ClientCapabilities map[string]any `json:"io.modelcontextprotocol/clientCapabilities"`
			ClientInfo         floorInfo      `json:"io.modelcontextprotocol/clientInfo"`
		}{version, map[string]any{}, floorInfo{"bench-client", "1.0.0"}}
		resp.Result.ResultType = "complete"
		resp.Result.Meta = &struct {
			ServerInfo floorInfo `json:"io.modelcontextprotocol/serverInfo"`
		}{floorInfo{"bench-server", "1.0.0"}}
	}
	return req, resp
}

// BenchmarkJSONFloor encodes and decodes, with encoding/json and nothing
// else, the messages of one echo round trip on each revision: the request
// (client marshal, server unmarshal) and the response (server marshal,
// client unmarshal). A pipe round trip is compared against "roundtrip".
func BenchmarkJSONFloor(b *testing.B) {
	for _, v := range benchVersions {
		req, resp := floorMessages(v)
		b.Run("request/"+v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := json.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				var got floorRequest
				if err := json.Unmarshal(data, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("roundtrip/"+v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := json.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				var gotReq floorRequest
				if err := json.Unmarshal(data, &gotReq); err != nil {
					b.Fatal(err)
				}
				resp.ID = gotReq.ID
				if data, err = json.Marshal(resp); err != nil {
					b.Fatal(err)
				}
				var gotResp floorResponse
				if err := json.Unmarshal(data, &gotResp); err != nil {
					b.Fatal(err)
				}
				if len(gotResp.Result.Content) != 1 {
					b.Fatal("lost content")
				}
			}
		})
	}
}

// BenchmarkPipeFloor is the carrier's own share of a pipe round trip: a
// request line written to an OS pipe, read by an echo goroutine that
// writes a response line back on a second pipe, read by the caller; no
// JSON and no SDK. The echo call's lines are the size of
// BenchmarkCallToolEcho/pipe/2025-11-25's.
func BenchmarkPipeFloor(b *testing.B) {
	request := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")
	response := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n")
	upR, upW := osPipe(b)
	downR, downW := osPipe(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := bufio.NewReaderSize(upR, 64<<10)
		for {
			if _, err := in.ReadSlice('\n'); err != nil {
				return
			}
			if _, err := downW.Write(response); err != nil {
				return
			}
		}
	}()
	out := bufio.NewReaderSize(downR, 64<<10)
	for b.Loop() {
		if _, err := upW.Write(request); err != nil {
			b.Fatal(err)
		}
		if _, err := out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	upW.Close()
	<-done
	for _, f := range []*os.File{upR, downR, downW} {
		f.Close()
	}
}

// BenchmarkParallelSleep starts 64 calls of a tool that sleeps 100 ms at
// once and reports how many ran side by side on average ("width", 64 at
// best): what each call costs beyond its sleep, with all 64 in flight.
func BenchmarkParallelSleep(b *testing.B) {
	benchEachCarrier(b, func(b *testing.B, cl *Client) {
		const calls, sleep = 64, 100 * time.Millisecond
		ctx := context.Background()
		for range 2 { // warm up: connections and workers for 64 callers
			var wg sync.WaitGroup
			for range calls {
				wg.Go(func() { cl.CallTool(ctx, "sleep", map[string]int{"ms": 1}) })
			}
			wg.Wait()
		}
		var wall time.Duration
		for b.Loop() {
			var wg sync.WaitGroup
			start := time.Now()
			for range calls {
				wg.Go(func() {
					if _, err := cl.CallTool(ctx, "sleep", map[string]int{"ms": int(sleep / time.Millisecond)}); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			wall += time.Since(start)
		}
		b.ReportMetric(float64(b.N)*calls*float64(sleep)/float64(wall), "width")
	})
}
