package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLifecycle runs the handshake and a few calls on every revision, both
// sides ours, with the server in a child process on stdio. The same check
// runs over every other transport in TestTransportsLifecycle.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, v := range SupportedVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			checkLifecycle(t, childServer(t, "", WithProtocolVersion(v)), v)
		})
	}
}

// checkLifecycle checks a client connected at revision v to newTestServer.
func checkLifecycle(t *testing.T, cl *Client, v string) {
	t.Helper()
	if got := cl.ProtocolVersion(); got != v {
		t.Fatalf("negotiated %s, want %s", got, v)
	}
	if cl.ServerInfo().Name != "test-server" {
		t.Fatalf("server info %+v", cl.ServerInfo())
	}
	if cl.ServerCapabilities().Tools == nil {
		t.Fatal("tools capability missing")
	}
	ctx := context.Background()
	if !isModernVersion(v) {
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	tools, err := cl.ListTools(ctx, "")
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("ListTools: %v %v", tools, err)
	}
	res, err := cl.CallTool(ctx, "echo", map[string]string{"v": v})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !strings.Contains(res.Content[0].Text, v) {
		t.Fatalf("echo: %+v", res)
	}
}

// TestUnpinnedClientPicksLatest: with nothing pinned, our client and server
// agree on 2026-07-28 through server/discover.
func TestUnpinnedClientPicksLatest(t *testing.T) {
	t.Parallel()
	cl := pair(t, newTestServer())
	if v := cl.ProtocolVersion(); v != LatestVersion {
		t.Fatalf("negotiated %s", v)
	}
}

// TestDiscoverFallsBackToInitialize: against servers that do not speak
// 2026-07-28, the probe fails one way or another and the client falls back
// to initialize.
func TestDiscoverFallsBackToInitialize(t *testing.T) {
	t.Parallel()
	t.Run("server pinned to a legacy revision", func(t *testing.T) {
		t.Parallel()
		cl := pair(t, newTestServer(WithProtocolVersion(Version20250618)))
		if v := cl.ProtocolVersion(); v != Version20250618 {
			t.Fatalf("negotiated %s", v)
		}
	})
	t.Run("legacy-only child server", func(t *testing.T) {
		t.Parallel()
		cl := childServer(t, Version20251125)
		if v := cl.ProtocolVersion(); v != Version20251125 {
			t.Fatalf("negotiated %s", v)
		}
	})
	for _, answer := range []string{"method not found", "silence"} {
		t.Run("raw legacy server answering with "+answer, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ct, st := NewInMemoryTransports()
				p := newRawPeer(t, st.(*IOTransport))
				connected := make(chan error, 1)
				cl := NewClient(Implementation{Name: "c", Version: "1"})
				go func() { connected <- cl.Connect(context.Background(), ct) }()
				probe := p.recv()
				if field(t, probe, "method") != "server/discover" {
					t.Fatalf("first message %s", probe)
				}
				start := time.Now()
				if answer == "method not found" {
					p.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
				}
				init := p.recv()
				if answer == "silence" {
					if field(t, init, "method") != "notifications/cancelled" {
						t.Fatalf("expected the probe to be cancelled, got %s", init)
					}
					if d := time.Since(start); d != DefaultDiscoverTimeout {
						t.Fatalf("fell back after %v", d)
					}
					init = p.recv()
				}
				if field(t, init, "method") != "initialize" || field(t, init, "params.protocolVersion") != LatestLegacyVersion {
					t.Fatalf("expected initialize, got %s", init)
				}
				p.send(`{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}`)
				if err := <-connected; err != nil {
					t.Fatal(err)
				}
				if n := p.recv(); field(t, n, "method") != "notifications/initialized" {
					t.Fatalf("expected initialized, got %s", n)
				}
				if cl.ProtocolVersion() != Version20250618 {
					t.Fatalf("version %s", cl.ProtocolVersion())
				}
				cl.Close()
			})
		})
	}
}

// TestClientRejectsUnknownVersion: a server answering initialize with a
// revision the client does not speak fails Connect clearly.
func TestClientRejectsUnknownVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct, st := NewInMemoryTransports()
		p := newRawPeer(t, st.(*IOTransport))
		connected := make(chan error, 1)
		cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
		go func() { connected <- cl.Connect(context.Background(), ct) }()
		p.recv()
		p.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2023-01-01","capabilities":{},"serverInfo":{"name":"odd","version":"1"}}}`)
		err := <-connected
		if err == nil || !strings.Contains(err.Error(), "2023-01-01") {
			t.Fatalf("Connect = %v", err)
		}
		if cl.Ping(context.Background()) != ErrNotConnected {
			t.Fatal("client usable after a failed Connect")
		}
	})
}

// TestServerNegotiatesDown: a client offering a revision the server does
// not speak gets the server's latest legacy revision.
func TestServerNegotiatesDown(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2030-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if got := field(t, p.recv(), "result.protocolVersion"); got != LatestLegacyVersion {
		t.Fatalf("server answered %v", got)
	}
}

func TestPingBothWays(t *testing.T) {
	t.Parallel()
	p := rawServer(t, newTestServer())
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	// And the client answers the server's ping.
	ct, st := NewInMemoryTransports()
	srvSide := newRawPeer(t, st.(*IOTransport))
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	connected := make(chan error, 1)
	go func() { connected <- cl.Connect(context.Background(), ct) }()
	srvSide.recv()
	srvSide.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srvSide.recv() // initialized
	srvSide.send(`{"jsonrpc":"2.0","id":"sp","method":"ping"}`)
	srvSide.expect(`{"jsonrpc":"2.0","id":"sp","result":{}}`)
}

func TestCallAfterCloseFails(t *testing.T) {
	t.Parallel()
	cl := pair(t, newTestServer())
	cl.Close()
	cl.Close() // idempotent
	if _, err := cl.CallTool(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("CallTool after Close = %v", err)
	}
}

// TestDiscoverRetriesSupportedVersion: a server that rejects the probe with
// -32022 gets one more probe with a version from its data.supported, as the
// conformance scenario request-metadata checks; no more than one.
func TestDiscoverRetriesSupportedVersion(t *testing.T) {
	const reject = `{"jsonrpc":"2.0","id":%d,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":[%s],"requested":"2026-07-28"}}}`
	const discovered = `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}`
	metaVersion := `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	tests := []struct {
		name   string
		pinned string
		// answers are the server's replies to the messages the client sends,
		// in order; "" expects the message without answering it.
		answers []string
		// wantMethods are the methods of the messages the client sends.
		wantMethods []string
		wantErr     string
		wantVersion string
	}{
		{"pinned, retried once and accepted", Version20260728,
			[]string{fmt.Sprintf(reject, 1, `"2026-07-28"`), discovered},
			[]string{"server/discover", "server/discover"}, "", Version20260728},
		{"pinned, rejected twice", Version20260728,
			[]string{fmt.Sprintf(reject, 1, `"2026-07-28"`), fmt.Sprintf(reject, 2, `"2026-07-28"`)},
			[]string{"server/discover", "server/discover"}, "-32022", ""},
		{"pinned, no shared version", Version20260728,
			[]string{fmt.Sprintf(reject, 1, `"2027-01-01"`)},
			[]string{"server/discover"}, "-32022", ""},
		{"unpinned, only legacy versions supported", "",
			[]string{fmt.Sprintf(reject, 1, `"2025-11-25"`), `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`, ""},
			[]string{"server/discover", "initialize", "notifications/initialized"}, "", Version20251125},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ct, st := NewInMemoryTransports()
				p := newRawPeer(t, st.(*IOTransport))
				var opts []ClientOption
				if tt.pinned != "" {
					opts = append(opts, WithProtocolVersion(tt.pinned))
				}
				cl := NewClient(Implementation{Name: "c", Version: "1"}, opts...)
				defer cl.Close()
				connected := make(chan error, 1)
				go func() { connected <- cl.Connect(context.Background(), ct) }()
				for i, method := range tt.wantMethods {
					msg := p.recv()
					if got := field(t, msg, "method"); got != method {
						t.Fatalf("message %d: method %v, want %s (%s)", i+1, got, method, msg)
					}
					if method == "server/discover" && !strings.Contains(msg, metaVersion) {
						t.Fatalf("probe %d does not carry 2026-07-28 in _meta: %s", i+1, msg)
					}
					if tt.answers[i] != "" {
						p.send(tt.answers[i])
					}
				}
				err := <-connected
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("Connect = %v, want an error with %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				if v := cl.ProtocolVersion(); v != tt.wantVersion {
					t.Fatalf("negotiated %s, want %s", v, tt.wantVersion)
				}
			})
		})
	}
}

// TestCallToolResultMetaLeavesOutServerInfo: on 2026-07-28 every result
// carries the server's serverInfo in _meta; a tool result's Meta is nil
// when that is all, and holds everything when the tool set its own.
func TestCallToolResultMetaLeavesOutServerInfo(t *testing.T) {
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "plain"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("x")}}, nil
	})
	srv.AddTool(Tool{Name: "tagged"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("x")}, Meta: Meta{"trace": "t-1"}}, nil
	})
	for _, v := range []string{Version20251125, Version20260728} {
		cl := pair(t, srv, WithProtocolVersion(v))
		res, err := cl.CallTool(context.Background(), "plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Meta != nil {
			t.Errorf("%s: plain result Meta = %v, want nil", v, res.Meta)
		}
		res, err = cl.CallTool(context.Background(), "tagged", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Meta["trace"] != "t-1" {
			t.Errorf("%s: tagged result Meta = %v", v, res.Meta)
		}
		if _, ok := res.Meta[metaServerInfo]; ok != (v == Version20260728) {
			t.Errorf("%s: tagged result Meta = %v: serverInfo present %v", v, res.Meta, ok)
		}
		if got := cl.ServerInfo(); got.Name != "s" {
			t.Errorf("%s: ServerInfo = %+v", v, got)
		}
	}
}

// indentedArgs marshals itself with whitespace, which json.Marshal compacts.
type indentedArgs struct{ N int }

func (a indentedArgs) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("{\n  \"n\": %d\n}", a.N)), nil
}

// TestCallToolArgumentsAreEncodedAsJSONMarshalWritesThem: the arguments
// reach the tool as json.Marshal writes them (HTML-escaped, a Marshaler's
// output compacted, a 1 MiB string whole), raw JSON as given, none when
// args is nil; arguments that cannot be encoded, or raw JSON that is not
// valid, fail the call before anything is sent.
func TestCallToolArgumentsAreEncodedAsJSONMarshalWritesThem(t *testing.T) {
	srv := NewServer(Implementation{Name: "s", Version: "1"})
	srv.AddTool(Tool{Name: "args"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(req.Params.Arguments))}}, nil
	})
	for _, v := range []string{Version20251125, Version20260728} {
		cl := pair(t, srv, WithProtocolVersion(v))
		var typedNil *struct{ A int }
		for _, tc := range []struct {
			args any
			want string
		}{
			{struct {
				Text string `json:"text"`
			}{"a<b&c"}, `{"text":"a\u003cb\u0026c"}`},
			{map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
			{indentedArgs{7}, `{"n":7}`},
			{json.RawMessage(`{"a": 1}`), `{"a": 1}`},
			{typedNil, ``}, // sent as null, which the server reads as none
			{nil, ``},
			{json.RawMessage(nil), ``},
			{map[string]string{"s": strings.Repeat("x", 1<<20)}, `{"s":"` + strings.Repeat("x", 1<<20) + `"}`},
		} {
			res, err := cl.CallTool(context.Background(), "args", tc.args)
			if err != nil {
				t.Fatalf("%s: CallTool(%T): %v", v, tc.args, err)
			}
			if got := res.Content[0].Text; got != tc.want {
				t.Errorf("%s: CallTool(%T) arguments = %.80q, want %.80q", v, tc.args, got, tc.want)
			}
		}
		for _, tc := range []struct {
			args any
			want string
		}{
			{map[string]any{"c": make(chan int)}, "encoding arguments of args"},
			{json.RawMessage(`{bad`), "does not hold valid JSON (invalid character 'b' looking for beginning of object key string at byte 2)"},
			{"text", "a JSON object is required, but the string given encodes to a JSON string"},
		} {
			if _, err := cl.CallTool(context.Background(), "args", tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: CallTool(%T) error = %v, want one saying %q", v, tc.args, err, tc.want)
			}
		}
		// The session is still usable after the refused calls.
		if res, err := cl.CallTool(context.Background(), "args", map[string]int{"a": 1}); err != nil || res.Content[0].Text != `{"a":1}` {
			t.Errorf("%s: after the refused calls: %v, %v", v, res, err)
		}
	}
}

// TestAppendJSONWritesWhatMarshalWrites: appendJSON appends json.Marshal's
// bytes after what b holds, and on an error leaves b as it was.
func TestAppendJSONWritesWhatMarshalWrites(t *testing.T) {
	for _, v := range []any{
		nil, 1.5, "a<b>\u2028", []int{1, 2}, map[string]any{"z": 1, "a": []string{"x"}},
		indentedArgs{3}, json.RawMessage(` { "a" : 1 } `), struct {
			A string `json:"a,omitempty"`
			B int    `json:"b"`
		}{B: 2},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSON([]byte("prefix:"), v)
		if err != nil || string(got) != "prefix:"+string(want) {
			t.Errorf("appendJSON(%#v) = %q, %v; want %q", v, got, err, "prefix:"+string(want))
		}
	}
	got, err := appendJSON([]byte("prefix:"), make(chan int))
	if err == nil || string(got) != "prefix:" {
		t.Errorf("appendJSON(chan) = %q, %v; want the prefix alone and an error", got, err)
	}
}

// stackArgs are tool arguments that note the package files on the stack
// when they are encoded.
type stackArgs struct{ files *[]string }

func (a stackArgs) MarshalJSON() ([]byte, error) {
	*a.files = packageFilesOnStack()
	return []byte(`{"text":"hi"}`), nil
}

// stackTransport notes the package files on the stack when a tools/call
// request is written.
type stackTransport struct {
	Transport
	mu    sync.Mutex
	files []string
}

func (t *stackTransport) WriteMessage(msg []byte) error {
	if bytes.Contains(msg, []byte(`"tools/call"`)) {
		t.mu.Lock()
		t.files = packageFilesOnStack()
		t.mu.Unlock()
	}
	return t.Transport.WriteMessage(msg)
}

// packageFilesOnStack lists, from the caller of CallTool down, the library
// files of the frames on the stack, one entry for each run of frames in one
// file.
func packageFilesOnStack() []string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	var files []string
	for {
		f, more := frames.Next()
		name := filepath.Base(f.File)
		if strings.HasPrefix(f.Function, "github.com/e6ac58cb/mcp.") && !strings.HasSuffix(name, "_test.go") {
			if len(files) == 0 || files[len(files)-1] != name {
				files = append(files, name)
			}
		}
		if !more || strings.HasSuffix(f.Function, ".(*Client).CallTool") {
			break
		}
	}
	slices.Reverse(files)
	return files
}

// The arguments of CallTool go down to the transport through each file at
// most once: while they are encoded and while the request is written, the
// stack from CallTool enters each library file once, in the order of the
// road in ARCHITECTURE.md. The envelope (mcp.go) and _meta (protocol.go) are
// written by leaf functions of conn.go's send between the two.
func TestCallToolArgumentsVisitEachFileOnce(t *testing.T) {
	ct, st := NewInMemoryTransports()
	srv := newTestServer()
	go srv.Serve(context.Background(), st)
	tr := &stackTransport{Transport: ct}
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	if err := cl.Connect(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var encoding []string
	if _, err := cl.CallTool(context.Background(), "echo", stackArgs{&encoding}); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	writing := tr.files
	tr.mu.Unlock()
	for _, walk := range []struct {
		name      string
		got, want []string
	}{
		{"encoding the arguments", encoding, []string{"client.go", "json.go"}},
		{"writing the request", writing, []string{"client.go", "conn.go", "conn_write.go"}},
	} {
		if !slices.Equal(walk.got, walk.want) {
			t.Errorf("%s: the stack from CallTool passes through %v, want %v", walk.name, walk.got, walk.want)
		}
	}
}

// TestClientAnswersOnlyCalls: a client answers what a server sends only
// where JSON-RPC 2.0 asks for a reply: a request, a malformed message that
// carries a method (Invalid Request) and text that is not JSON (Parse
// error). A response for an unknown id, a notification, {} and other
// malformed messages without a method get nothing; the connection keeps
// working after each.
func TestClientAnswersOnlyCalls(t *testing.T) {
	t.Parallel()
	ct, st := NewInMemoryTransports()
	p := newRawPeer(t, st.(*IOTransport))
	cl := NewClient(Implementation{Name: "c", Version: "1"}, WithProtocolVersion(Version20251125))
	connected := make(chan error, 1)
	go func() { connected <- cl.Connect(context.Background(), ct) }()
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p.recv() // initialized
	for _, tc := range []struct {
		send string
		code int // 0: no answer
		id   any
	}{
		{`{}`, 0, nil},
		{`{"jsonrpc":"2.0","id":99,"result":{}}`, 0, nil},
		{`{"jsonrpc":"2.0","id":98,"error":{"code":-32000,"message":"x"}}`, 0, nil},
		{`{"jsonrpc":"2.0","method":"notifications/whatever"}`, 0, nil},
		{`{"jsonrpc":"2.0","id":5}`, 0, nil},
		{`{"id":6,"result":{}}`, 0, nil},
		{`{"jsonrpc":"2.0","id":7,"error":"bad"}`, 0, nil},
		{`{"jsonrpc":"2.0","id":8,"result":{},"error":{"code":1,"message":"x"}}`, 0, nil},
		{`1`, 0, nil},
		{`null`, 0, nil},
		{`"x"`, 0, nil},
		{`{"jsonrpc":"2.0","id":1,"method":`, CodeParseError, nil},
		{`{"jsonrpc":"2.0","id":9,"method":7}`, CodeInvalidRequest, 9.0},
		{`{"id":10,"method":"ping"}`, CodeInvalidRequest, 10.0},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, CodeInvalidRequest, nil},
	} {
		p.send(tc.send)
		p.send(`{"jsonrpc":"2.0","id":"next","method":"ping"}`)
		got := p.recv()
		if tc.code == 0 {
			if !jsonEqual(got, `{"jsonrpc":"2.0","id":"next","result":{}}`) {
				t.Fatalf("%s was answered: %s", tc.send, got)
			}
			continue
		}
		if field(t, got, "error.code") != float64(tc.code) || field(t, got, "id") != tc.id {
			t.Fatalf("%s: got %s, want code %d, id %v", tc.send, got, tc.code, tc.id)
		}
		p.expect(`{"jsonrpc":"2.0","id":"next","result":{}}`)
	}
}
