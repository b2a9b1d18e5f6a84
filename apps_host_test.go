package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// appTestViewHTML is the test server's view, with no SDK: it speaks the
// view↔host protocol by hand, shows the tool result in #result, calls the
// app-only tool "count" from its #call button, and, asked by its tool
// input's "probe", misbehaves first: "hidden" calls the model-only tool
// "secret"; "garbage" posts what is not JSON, JSON that is no request and
// an unknown method. What the host answered shows in #probe, and a call of
// "count" made afterwards in #after.
const appTestViewHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>test view</title>
<style>body{font-family:system-ui,sans-serif;margin:1rem}#result{font-size:1.6rem;color:#0b57d0}</style></head>
<body><h2>Go view</h2><p id="result">waiting</p><button id="call">Count</button><p id="probe"></p><p id="after"></p>
<script>
"use strict";
let next = 0, input = {};
const pending = new Map(), stray = [];
const show = (id, s) => { document.getElementById(id).textContent = s; };
const send = (m) => parent.postMessage(m, "*");
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
function request(method, params) {
  const id = ++next;
  send({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function strayError() {
  return new Promise((resolve) => { stray.push(resolve); });
}
window.addEventListener("message", (e) => {
  if (e.source !== parent) return;
  const m = e.data;
  if (m && m.id === null && m.error) { const r = stray.shift(); if (r) r(m.error); return; }
  if (m && m.id != null && pending.has(m.id)) {
    const p = pending.get(m.id); pending.delete(m.id);
    m.error ? p.reject(m.error) : p.resolve(m.result);
    return;
  }
  if (m && m.method === "ui/notifications/tool-input") input = m.params.arguments || {};
  if (m && m.method === "ui/notifications/tool-result") { show("result", text(m.params)); probe(); }
});
async function count(where) {
  try { show(where, text(await request("tools/call", { name: "count", arguments: {} }))); }
  catch (e) { show(where, "error " + e.code + " " + e.message); }
}
async function probe() {
  if (input.probe === "hidden") {
    try { await request("tools/call", { name: "secret", arguments: {} }); show("probe", "secret called"); }
    catch (e) { show("probe", "refused " + e.code + " " + e.message); }
    await count("after");
  } else if (input.probe === "garbage") {
    const a = strayError(); send("garbage"); const c1 = (await a).code;
    const b = strayError(); send({ hello: "host" }); const c2 = (await b).code;
    let c3 = "answered";
    try { await request("ui/frobnicate", {}); } catch (e) { c3 = e.code; }
    show("probe", "refused " + c1 + " " + c2 + " " + c3);
    await count("after");
  }
}
document.getElementById("call").addEventListener("click", () => count("result"));
request("ui/initialize", { appInfo: { name: "go-test-view", version: "1.0.0" }, appCapabilities: {}, protocolVersion: "2026-01-26" })
  .then(() => send({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }));
</script></body></html>
`

// newAppHostTestServer returns a server with a view and tools of every
// visibility, and the count of the app-only tool's calls.
func newAppHostTestServer(t *testing.T) (*Server, *atomic.Int64) {
	t.Helper()
	srv := NewServer(Implementation{Name: "apps-test-server", Version: "1.0.0"})
	counted := new(atomic.Int64)
	addView := func(uri, html string) {
		if err := srv.AddAppView(AppView{URI: uri, Name: uri, HTML: html}); err != nil {
			t.Fatal(err)
		}
	}
	addView("ui://test/view", appTestViewHTML)
	addView("ui://test/huge", appTestViewHTML+strings.Repeat("<!-- padding -->", 100<<10/16))
	// A view of the wrong MIME type, which AddAppView would not make.
	srv.AddResource(Resource{URI: "ui://test/wrongmime", Name: "wrongmime", MIMEType: "text/html"},
		func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{{URI: "ui://test/wrongmime", MIMEType: "text/html", Text: appTestViewHTML}}}, nil
		})
	object := json.RawMessage(`{"type":"object"}`)
	tool := func(t Tool, h func(args json.RawMessage) string) {
		t.InputSchema = object
		srv.AddTool(t, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent(h(req.Params.Arguments))}}, nil
		})
	}
	tool(AppTool(Tool{Name: "show"}, "ui://test/view", 0), func(args json.RawMessage) string {
		var a struct{ Name string }
		json.Unmarshal(args, &a)
		return "Hello, " + a.Name + "!"
	})
	tool(AppTool(Tool{Name: "count"}, "ui://test/view", AppVisibleToApp),
		func(json.RawMessage) string { return fmt.Sprintf("count %d", counted.Add(1)) })
	tool(AppTool(Tool{Name: "secret"}, "ui://test/view", AppVisibleToModel), func(json.RawMessage) string { return "secret" })
	// The deprecated flat key names this one's view.
	tool(Tool{Name: "wrongmime", Meta: Meta{"ui/resourceUri": "ui://test/wrongmime"}}, func(json.RawMessage) string { return "wrong" })
	tool(AppTool(Tool{Name: "huge"}, "ui://test/huge", 0), func(json.RawMessage) string { return "huge" })
	tool(Tool{Name: "plain"}, func(json.RawMessage) string { return "plain" })
	return srv, counted
}

// appHostPost posts body to the host's endpoint as the host page does.
func appHostPost(t *testing.T, base, endpoint, page, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/"+endpoint+"?tool=show", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if page != "" {
		req.Header.Set("X-MCP-App-Page", page)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAppHostRPC: the host's answers to a view's messages, good and bad,
// one after another on one host (which keeps working).
func TestAppHostRPC(t *testing.T) {
	srv, counted := newAppHostTestServer(t)
	c := connectAppHostClient(t, srv)
	host := httptest.NewServer(NewAppHost(c, WithAppMaxMessageSize(4096)))
	defer host.Close()
	cases := []struct {
		name, body string
		want       string // a substring of the reply; "" for none (204)
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"ui/initialize","params":{"protocolVersion":"2026-01-26"}}`, `"hostContext":{`},
		{"initialized", `{"jsonrpc":"2.0","method":"ui/notifications/initialized"}`, ""},
		{"app tool", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{}}}`, `"text":"count 1"`},
		{"default visibility", `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"show","arguments":{"name":"Di"}}}`, `Hello, Di!`},
		{"model-only tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret"}}`, `"code":-32602,"message":"tools/call: tool \"secret\" is not visible to apps"`},
		{"missing tool", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`, `"code":-32602`},
		{"resource", `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"ui://test/view"}}`, `"mimeType":"text/html;profile=mcp-app"`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage"}`, `"id":6,"error":{"code":-32601`},
		{"not json", `garbage`, `"id":null,"error":{"code":-32700`},
		{"string", `"garbage"`, `"error":{"code":-32600`},
		{"array", `[1,2]`, `"error":{"code":-32600`},
		{"no version", `{"id":7,"method":"ping"}`, `"error":{"code":-32600`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `"error":{"code":-32600`},
		{"too large", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, `larger than 4096 bytes`},
		{"open link", `{"jsonrpc":"2.0","id":9,"method":"ui/open-link","params":{"url":"https://example.com/"}}`, `"id":9,"result":{}`},
		{"open script link", `{"jsonrpc":"2.0","id":10,"method":"ui/open-link","params":{"url":"javascript:alert(1)"}}`, `"code":-32602`},
		{"log", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`, ""},
		{"response", `{"jsonrpc":"2.0","id":11,"result":{}}`, ""},
		{"ping after all that", `{"jsonrpc":"2.0","id":12,"method":"ping"}`, `{"jsonrpc":"2.0","id":12,"result":{}}`},
	}
	for _, tc := range cases {
		code, body := appHostPost(t, host.URL, "rpc", "page1", tc.body)
		if tc.want == "" {
			if code != http.StatusNoContent {
				t.Errorf("%s: %d %s, want 204", tc.name, code, body)
			}
			continue
		}
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %s", tc.name, code, body, tc.want)
		}
	}
	if n := counted.Load(); n != 1 {
		t.Errorf("count called %d times, want 1", n)
	}
}

// TestAppHostRun: the host page's own call runs a tool visible to the
// model, and no other; the endpoints take only the page's requests.
func TestAppHostRun(t *testing.T) {
	srv, _ := newAppHostTestServer(t)
	c := connectAppHostClient(t, srv)
	host := httptest.NewServer(NewAppHost(c))
	defer host.Close()
	if code, body := appHostPost(t, host.URL, "run", "p", `{"name":"Ed"}`); code != 200 || !strings.Contains(body, "Hello, Ed!") {
		t.Errorf("run: %d %s", code, body)
	}
	if code, body := appHostPost(t, host.URL, "run", "p", `[]`); code != http.StatusBadRequest {
		t.Errorf("run with an array: %d %s", code, body)
	}
	if code, _ := appHostPost(t, host.URL, "run", "", `{}`); code != http.StatusForbidden {
		t.Errorf("run without the page header: %d, want 403", code)
	}
	req, _ := http.NewRequest("POST", host.URL+"/rpc?tool=show", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("X-MCP-App-Page", "p")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site rpc: %v %v, want 403", resp.StatusCode, err)
	}
	// count is app-only: the host page may not run it as the model's call.
	req, _ = http.NewRequest("POST", host.URL+"/run?tool=count", strings.NewReader(`{}`))
	req.Header.Set("X-MCP-App-Page", "p")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("run of an app-only tool: %v %v, want 502", resp.StatusCode, err)
	}
}

// TestAppHostPages: the index, a host page, the view with its CSP, and the
// clear errors of views that are not valid.
func TestAppHostPages(t *testing.T) {
	srv, _ := newAppHostTestServer(t)
	c := connectAppHostClient(t, srv, WithMaxAppViewSize(64<<10))
	host := httptest.NewServer(NewAppHost(c))
	defer host.Close()
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(host.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if _, body := get("/"); !strings.Contains(body, `href="app?tool=show"`) || strings.Contains(body, "tool=count") {
		t.Errorf("index lists %s", body)
	}
	resp, body := get("/app?tool=show&args=" + url.QueryEscape(`{"name":"Fa"}`))
	if resp.StatusCode != 200 || !strings.Contains(body, `sandbox="allow-scripts allow-forms"`) || strings.Contains(body, "allow-same-origin") ||
		!strings.Contains(body, `src="view?tool=show"`) || !strings.Contains(body, `"args":{"name":"Fa"}`) {
		t.Errorf("host page: %d %s", resp.StatusCode, body)
	}
	resp, body = get("/view?tool=show")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none';") || !strings.HasSuffix(csp, "; form-action 'none'; sandbox allow-scripts allow-forms") ||
		!strings.Contains(csp, "connect-src 'none'") || body != appTestViewHTML {
		t.Errorf("view: CSP %q, %d bytes", csp, len(body))
	}
	for path, want := range map[string]string{
		"/app?tool=wrongmime":        `MIME type &#34;text/html&#34;, want &#34;text/html;profile=mcp-app&#34;`,
		"/app?tool=huge":             "larger than the limit of 65536 bytes",
		"/app?tool=plain":            `tool &#34;plain&#34; has no view`,
		"/app?tool=count":            `tool &#34;count&#34; is visible only to apps`,
		"/app?tool=show&args=%5B%5D": "args must be a JSON object",
	} {
		if resp, body := get(path); resp.StatusCode < 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want an error page saying %s:\n%s", path, resp.StatusCode, want, body)
		}
	}
	if resp, _ := get("/view?tool=wrongmime"); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("view of a wrong MIME type: %d", resp.StatusCode)
	}
}

// TestAppHostInFlight: calls of one page past WithAppMaxInFlight are
// refused while the others run; another page is not held up.
func TestAppHostInFlight(t *testing.T) {
	srv := NewServer(Implementation{Name: "slow", Version: "1"})
	release := make(chan struct{})
	arrived := make(chan struct{}, 8)
	srv.AddTool(Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			arrived <- struct{}{}
			<-release
			return &CallToolResult{Content: []Content{TextContent("done")}}, nil
		})
	c := connectAppHostClient(t, srv)
	host := httptest.NewServer(NewAppHost(c, WithAppMaxInFlight(2)))
	defer host.Close()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, body := appHostPost(t, host.URL, "rpc", "busy", call); !strings.Contains(body, "done") {
				t.Errorf("held call: %s", body)
			}
		}()
	}
	<-arrived
	<-arrived
	if _, body := appHostPost(t, host.URL, "rpc", "busy", call); !strings.Contains(body, "too many calls in flight") {
		t.Errorf("third call: %s", body)
	}
	if _, body := appHostPost(t, host.URL, "rpc", "other", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); !strings.Contains(body, `"result":{}`) {
		t.Errorf("other page: %s", body)
	}
	close(release)
	wg.Wait()
	if _, body := appHostPost(t, host.URL, "rpc", "busy", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); !bytes.Contains([]byte(body), []byte(`"result":{}`)) {
		t.Errorf("after: %s", body)
	}
}
