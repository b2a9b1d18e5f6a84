package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// The default limits of NewAppHost: a view's message, a page's calls in
// flight, the pages with calls in flight. Client side.
const (
	DefaultAppMaxMessageSize = 1 << 20
	DefaultAppMaxInFlight    = 4
	DefaultAppMaxPages       = 256
)

// appUIProtocolVersion is the revision of the view↔host protocol the host
// speaks.
const appUIProtocolVersion = "2026-01-26"

// An AppHostOption configures NewAppHost. Client side.
type AppHostOption func(*appHost)

// WithAppMaxMessageSize bounds one JSON-RPC message a view sends, and the
// arguments of a tool call from the host page (default
// DefaultAppMaxMessageSize). Client side.
func WithAppMaxMessageSize(n int) AppHostOption {
	return func(h *appHost) {
		if n > 0 {
			h.maxMessage = n
		}
	}
}

// WithAppMaxInFlight bounds the calls of one host page in flight at once
// (default DefaultAppMaxInFlight); a view's call past it is refused with a
// JSON-RPC error. Client side.
func WithAppMaxInFlight(n int) AppHostOption {
	return func(h *appHost) {
		if n > 0 {
			h.maxInFlight = n
		}
	}
}

// WithAppMaxPages bounds how many host pages may have calls in flight at
// once (default DefaultAppMaxPages): past it a call is refused. Client
// side.
func WithAppMaxPages(n int) AppHostOption {
	return func(h *appHost) {
		if n > 0 {
			h.maxPages = n
		}
	}
}

// WithAppHostLogger logs what views do that the host has no place for
// (their ui/message, ui/update-model-context and notifications/message) and
// the calls it refuses. Client side.
func WithAppHostLogger(l *slog.Logger) AppHostOption {
	return func(h *appHost) {
		if l != nil {
			h.log = l
		}
	}
}

// appHost is the handler NewAppHost returns.
type appHost struct {
	c           *Client
	log         *slog.Logger
	maxMessage  int
	maxInFlight int
	maxPages    int

	mu       sync.Mutex
	inFlight map[string]int // calls in flight by host page
}

// NewAppHost returns an http.Handler that shows MCP Apps views of the
// server c is connected to, for a Go web backend: the host side of the
// extension, with the browser page as its screen. Client side.
//
// It serves, relative to where it is mounted:
//
//	GET  ./                   a page listing the tools with a view
//	GET  ./app?tool=T&args=J  the host page of tool T with arguments J (a JSON object)
//	GET  ./view?tool=T        T's view, read and checked with Client.ReadAppView
//	POST ./run?tool=T         the host page's call of T (the model's call)
//	POST ./rpc?tool=T         one JSON-RPC message of T's view, from the host page
//
// The host page embeds the view in an iframe with sandbox="allow-scripts
// allow-forms" and without allow-same-origin, so the view runs in an opaque
// origin apart from the host's, and an allow attribute granting the
// permissions it asks for. allow-forms lets a view's form fire its submit
// event (a sandbox without it drops the submission before the event); the
// view's CSP has form-action 'none', so no form is sent anywhere. The view's HTML is served by ./view with the Content-Security-Policy
// header AppCSPHeader builds from its metadata (the extension asks hosts to
// construct CSP headers) and with the CSP sandbox directive, so it is
// sandboxed even when opened on its own. The extension describes web hosts
// with a sandbox proxy on a second origin; the opaque origin gives the
// same separation to a host on one origin, with no proxy in between.
//
// The page's script carries the view's messages to ./rpc and back. The
// host answers ui/initialize with its context and capabilities; once the
// view sends ui/notifications/initialized the page sends it
// ui/notifications/tool-input, runs the tool with ./run and sends
// ui/notifications/tool-result. A view may call tools/call for tools whose
// visibility includes "app" (others are refused with -32602), read
// resources, ping, ask to open http(s) links (ui/open-link), and send
// ui/message, ui/update-model-context and notifications/message, which are
// logged. Anything else is -32601; what is not JSON is -32700, and JSON that
// is not a request or notification -32600. Messages are bounded by
// WithAppMaxMessageSize and calls in flight by WithAppMaxInFlight.
//
// The POST endpoints take only same-origin requests that carry the
// X-MCP-App-Page header the page sets, which a cross-origin page (the view
// included) cannot send without a CORS preflight the host never grants.
func NewAppHost(c *Client, opts ...AppHostOption) http.Handler {
	h := &appHost{
		c:           c,
		log:         slog.New(slog.DiscardHandler),
		maxMessage:  DefaultAppMaxMessageSize,
		maxInFlight: DefaultAppMaxInFlight,
		maxPages:    DefaultAppMaxPages,
		inFlight:    map[string]int{},
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *appHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	switch {
	case r.Method == http.MethodGet && name == "":
		h.serveIndex(w, r)
	case r.Method == http.MethodGet && name == "app":
		h.servePage(w, r)
	case r.Method == http.MethodGet && name == "view":
		h.serveView(w, r)
	case r.Method == http.MethodPost && (name == "run" || name == "rpc"):
		h.servePost(w, r, name)
	default:
		http.NotFound(w, r)
	}
}

// findTool returns the server's tool of that name.
func (h *appHost) findTool(ctx context.Context, name string) (*Tool, error) {
	for t, err := range h.c.Tools(ctx) {
		if err != nil {
			return nil, err
		}
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("the server has no tool %q", name)
}

// viewOf returns a tool's view, read and checked.
func (h *appHost) viewOf(ctx context.Context, name string) (*Tool, *AppViewContent, error) {
	t, err := h.findTool(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	m, _ := ToolAppMeta(t)
	uri := m.ResourceURI
	if uri == "" {
		return nil, nil, fmt.Errorf("tool %q has no view", name)
	}
	v, err := h.c.ReadAppView(ctx, uri)
	if err != nil {
		return nil, nil, err
	}
	return t, v, nil
}

func (h *appHost) serveIndex(w http.ResponseWriter, r *http.Request) {
	type entry struct{ Name, Title, Description, View string }
	var tools []entry
	for t, err := range h.c.Tools(r.Context()) {
		if err != nil {
			http.Error(w, "listing the tools: "+err.Error(), http.StatusBadGateway)
			return
		}
		if m, _ := ToolAppMeta(t); m.ResourceURI != "" && m.Visibility.Includes(AppVisibleToModel) {
			tools = append(tools, entry{t.Name, t.Title, t.Description, m.ResourceURI})
		}
	}
	setPageHeaders(w)
	index, _ := appTemplates()
	index.Execute(w, map[string]any{"Server": h.c.ServerInfo(), "Tools": tools})
}

func (h *appHost) servePage(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("tool")
	args := r.URL.Query().Get("args")
	if args == "" {
		args = "{}"
	}
	fail := func(code int, msg string) {
		setPageHeaders(w)
		w.WriteHeader(code)
		_, page := appTemplates()
		page.Execute(w, map[string]any{"Tool": name, "Error": msg})
	}
	if len(args) > h.maxMessage || !isJSONObject([]byte(args)) {
		fail(http.StatusBadRequest, "args must be a JSON object")
		return
	}
	t, v, err := h.viewOf(r.Context(), name)
	if err != nil {
		h.log.Warn("app view refused", "tool", name, "err", err)
		fail(http.StatusBadGateway, err.Error())
		return
	}
	if !toolVisibleTo(t, AppVisibleToModel) {
		fail(http.StatusForbidden, fmt.Sprintf("tool %q is visible only to apps", name))
		return
	}
	var token [16]byte
	rand.Read(token[:])
	cfg := map[string]any{"tool": name, "args": json.RawMessage(args), "page": hex.EncodeToString(token[:])}
	setPageHeaders(w)
	_, page := appTemplates()
	page.Execute(w, map[string]any{
		"Tool": name, "Title": t.Title, "Config": cfg,
		"ViewURL": "view?" + url.Values{"tool": {name}}.Encode(),
		"Allow":   AppAllowAttribute(v.Meta.Permissions), "Border": v.Meta.PrefersBorder == nil || *v.Meta.PrefersBorder,
	})
}

// setPageHeaders keeps the host's own pages from being framed or sniffed.
func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

func (h *appHost) serveView(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("tool")
	_, v, err := h.viewOf(r.Context(), name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	csp, _ := AppCSPHeader(v.Meta.CSP) // checked by ReadAppView
	h.log.Debug("app view served", "tool", name, "uri", v.URI, "csp", csp)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", csp+"; sandbox allow-scripts allow-forms")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Write(v.HTML)
}

// servePost serves ./run and ./rpc: the bounded, same-origin calls of a
// host page.
func (h *appHost) servePost(w http.ResponseWriter, r *http.Request, name string) {
	page := r.Header.Get("X-MCP-App-Page")
	if page == "" || len(page) > 64 {
		http.Error(w, "missing X-MCP-App-Page", http.StatusForbidden)
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		http.Error(w, "cross-site request", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.maxMessage)))
	tool := r.URL.Query().Get("tool")
	if name == "run" {
		if err != nil || !isJSONObject(body) {
			http.Error(w, "the arguments must be a JSON object within the size limit", http.StatusBadRequest)
			return
		}
		if !h.acquire(page) {
			http.Error(w, "too many calls in flight", http.StatusTooManyRequests)
			return
		}
		defer h.release(page)
		res, err := h.run(r.Context(), tool, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(res)
		return
	}
	var reply []byte
	if err != nil {
		reply = encodeError(ID{}, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("invalid request: message larger than %d bytes", h.maxMessage)})
	} else {
		reply = h.handleViewMessage(r.Context(), page, tool, body)
	}
	if reply == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(reply)
}

// run is the host page's own call of its tool: the model's call, so the
// tool must be visible to the model.
func (h *appHost) run(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	t, err := h.findTool(ctx, tool)
	if err != nil {
		return nil, err
	}
	if !toolVisibleTo(t, AppVisibleToModel) {
		return nil, fmt.Errorf("tool %q is visible only to apps", tool)
	}
	var res json.RawMessage
	if err := h.c.SendRequest(ctx, "tools/call", &CallToolParams{Name: tool, Arguments: args}, &res); err != nil {
		return nil, err
	}
	return res, nil
}

func (h *appHost) acquire(page string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.inFlight[page]
	if n >= h.maxInFlight || !ok && len(h.inFlight) >= h.maxPages {
		return false
	}
	h.inFlight[page] = n + 1
	return true
}

func (h *appHost) release(page string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight[page] <= 1 {
		delete(h.inFlight, page)
	} else {
		h.inFlight[page]--
	}
}

// handleViewMessage answers one message of a view: the JSON-RPC response
// to send back to it, nil for none. The message is read as the engine reads
// a peer's.
func (h *appHost) handleViewMessage(ctx context.Context, page, tool string, body []byte) []byte {
	var m wireMessage
	if err := decodeOwnedEnvelope(body, &m); err != nil {
		if errors.Is(err, errEnvelopeShape) {
			return encodeError(ID{}, &Error{Code: CodeInvalidRequest, Message: "invalid request: not a JSON-RPC message object"})
		}
		return encodeError(ID{}, &Error{Code: CodeParseError, Message: "parse error: " + err.Error()})
	}
	kind, why := m.kind()
	id, idOK := parseID(m.ID)
	switch {
	case kind == kindInvalid || kind == kindRequest && !idOK:
		if why == "" {
			why = "the id must be a string or an integer"
		}
		if !idOK {
			id = ID{}
		}
		return encodeError(id, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + why})
	case kind == kindResponse:
		return nil // an answer to a request of the host's; the host sends none it waits for
	case kind == kindNotification:
		h.viewNotification(tool, m.Method, m.Params)
		return nil
	}
	if !h.acquire(page) {
		return encodeError(id, &Error{Code: -32000, Message: fmt.Sprintf("too many calls in flight (at most %d a page)", h.maxInFlight)})
	}
	defer h.release(page)
	res, err := h.viewRequest(ctx, tool, m.Method, m.Params)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		return encodeError(id, e)
	}
	return encodeResult(id, res)
}

// viewRequest serves one request of a view.
func (h *appHost) viewRequest(ctx context.Context, tool, method string, params json.RawMessage) (json.RawMessage, error) {
	empty := json.RawMessage(`{}`)
	switch method {
	case "ui/initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(params, &p)
		t, err := h.findTool(ctx, tool)
		if err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
		}
		return json.Marshal(map[string]any{
			"protocolVersion": appUIProtocolVersion,
			"hostInfo":        Implementation{Name: "mcp-go-app-host", Version: "1.0.0"},
			"hostCapabilities": map[string]any{
				"openLinks": struct{}{}, "serverTools": struct{}{}, "serverResources": struct{}{}, "logging": struct{}{},
			},
			"hostContext": map[string]any{
				"toolInfo": map[string]any{"tool": t}, "theme": "light", "displayMode": "inline",
				"availableDisplayModes": []string{"inline"}, "platform": "web",
				"containerDimensions": map[string]any{"maxHeight": 2000},
			},
		})
	case "ping", "ui/message", "ui/update-model-context":
		if method != "ping" {
			h.log.Info("app view "+method, "tool", tool, "params", string(params))
		}
		return empty, nil
	case "ui/request-display-mode":
		return json.RawMessage(`{"mode":"inline"}`), nil
	case "ui/open-link":
		var p struct {
			URL string `json:"url"`
		}
		json.Unmarshal(params, &p)
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &Error{Code: CodeInvalidParams, Message: "ui/open-link: only http and https URLs are opened"}
		}
		return empty, nil
	case "tools/call":
		var p CallToolParams
		if err := json.Unmarshal(params, &p); err != nil || p.Name == "" {
			return nil, &Error{Code: CodeInvalidParams, Message: "tools/call: params need a tool name"}
		}
		t, err := h.findTool(ctx, p.Name)
		if err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
		}
		if !toolVisibleTo(t, AppVisibleToApp) {
			h.log.Warn("app view call refused", "tool", tool, "called", p.Name)
			return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("tools/call: tool %q is not visible to apps", p.Name)}
		}
		var res json.RawMessage
		err = h.c.SendRequest(ctx, "tools/call", &CallToolParams{Name: p.Name, Arguments: p.Arguments}, &res)
		return res, err
	case "resources/read":
		var p ReadResourceParams
		if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
			return nil, &Error{Code: CodeInvalidParams, Message: "resources/read: params need a uri"}
		}
		var res json.RawMessage
		err := h.c.SendRequest(ctx, "resources/read", &ReadResourceParams{URI: p.URI}, &res)
		return res, err
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// viewNotification takes a notification of a view.
func (h *appHost) viewNotification(tool, method string, params json.RawMessage) {
	switch method {
	case "notifications/message":
		h.log.Info("app view log", "tool", tool, "params", string(params))
	default:
		h.log.Debug("app view notification", "tool", tool, "method", method)
	}
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// appTemplates parses the host's pages on first use: a template parsed in
// a package variable would be linked into every program.
func appTemplates() (index, page *template.Template) {
	appTemplatesOnce.Do(func() {
		appIndexTemplate = template.Must(template.New("index").Parse(appIndexHTML))
		appPageTemplate = template.Must(template.New("page").Parse(appPageHTML))
	})
	return appIndexTemplate, appPageTemplate
}

var (
	appTemplatesOnce                  sync.Once
	appIndexTemplate, appPageTemplate *template.Template
)

const appIndexHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:48rem}code{background:#f3f3f3;padding:0 .2em}</style></head>
<body><h1>{{.Server.Name}}</h1>
{{if .Tools}}<p>Tools with a view:</p><ul>
{{range .Tools}}<li><a href="app?tool={{.Name}}">{{if .Title}}{{.Title}}{{else}}{{.Name}}{{end}}</a> <code>{{.View}}</code>{{if .Description}} — {{.Description}}{{end}}
<form action="app" method="get"><input type="hidden" name="tool" value="{{.Name}}"><input name="args" value="{}" size="40" aria-label="arguments"> <button>Run</button></form></li>
{{end}}</ul>{{else}}<p>The server offers no tool with a view.</p>{{end}}
</body></html>
`

const appPageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Tool}} — MCP Apps host</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5rem;background:#f6f7f9;color:#1f2937}
header{display:flex;gap:1rem;align-items:baseline}h1{font-size:1.2rem;margin:0}
#status{color:#555;font-size:.9rem}.error{color:#b00020;white-space:pre-wrap}
iframe{display:block;width:100%;max-width:48rem;height:24rem;margin-top:1rem;background:#fff;border:0}
iframe.border{border:1px solid #d0d4da;border-radius:8px}
#fallback{margin-top:1rem;font-size:.85rem;color:#444;white-space:pre-wrap}
</style></head>
<body><header><h1>{{if .Title}}{{.Title}}{{else}}{{.Tool}}{{end}}</h1><span id="status">{{if .Error}}error{{else}}loading the view…{{end}}</span><a href="./">all tools</a></header>
{{if .Error}}<p id="error" class="error">{{.Error}}</p>{{else}}
<iframe id="view" title="view of {{.Tool}}" sandbox="allow-scripts allow-forms" {{if .Allow}}allow="{{.Allow}}"{{end}} {{if .Border}}class="border"{{end}} src="{{.ViewURL}}"></iframe>
<details><summary>tool result (text)</summary><div id="fallback"></div></details>
<script type="application/json" id="config">{{.Config}}</script>
<script>
"use strict";
(() => {
  const cfg = JSON.parse(document.getElementById("config").textContent);
  const frame = document.getElementById("view");
  const status = document.getElementById("status");
  const q = "?tool=" + encodeURIComponent(cfg.tool);
  let started = false;

  function toView(msg) { frame.contentWindow.postMessage(msg, "*"); }

  async function post(path, body) {
    const r = await fetch(path + q, {
      method: "POST", body,
      headers: { "Content-Type": "application/json", "X-MCP-App-Page": cfg.page },
    });
    if (r.status === 204) return null;
    if (!r.ok) throw new Error((await r.text()).trim() || r.statusText);
    return r.json();
  }

  async function runTool() {
    toView({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: cfg.args } });
    status.textContent = "running " + cfg.tool + "…";
    try {
      const result = await post("run", JSON.stringify(cfg.args));
      toView({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result });
      document.getElementById("fallback").textContent =
        (result.content || []).filter(c => c.type === "text").map(c => c.text).join("\n");
      status.textContent = result.isError ? "the tool failed" : "done";
    } catch (e) {
      toView({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: String(e.message) } });
      status.textContent = "the tool call failed: " + e.message;
    }
  }

  window.addEventListener("message", async (event) => {
    if (event.source !== frame.contentWindow) return; // only the view speaks here
    const msg = event.data;
    let body;
    try { body = typeof msg === "string" ? msg : JSON.stringify(msg); } catch { body = ""; }
    if (body === undefined) body = "";
    if (msg && msg.method === "ui/notifications/size-changed" && msg.params) {
      const h = Number(msg.params.height);
      if (h > 0) frame.style.height = Math.min(h, 2000) + "px";
    }
    let reply;
    try { reply = await post("rpc", body); } catch (e) { status.textContent = "host: " + e.message; return; }
    if (reply) {
      toView(reply);
      if (msg && msg.method === "ui/open-link" && reply.result) window.open(msg.params.url, "_blank", "noopener,noreferrer");
      if (reply.error) status.textContent = "refused: " + reply.error.message;
    }
    if (msg && msg.method === "ui/notifications/initialized" && !started) {
      started = true;
      runTool();
    }
  });
})();
</script>{{end}}
</body></html>
`
