package mcp

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// TestAppsWireMatchesExtAppsSchemas hands our server's MCP Apps wire (the
// tools' and the view's _meta.ui, with the results around them, on
// 2025-11-25) to the @modelcontextprotocol/ext-apps package's own zod
// schemas, and the core SDK's, run by node (testdata/apps/check.mjs).
// Without node or the installed packages (npm ci in testdata/apps) the
// test is skipped, unless CI is set: there that is a failure.
func TestAppsWireMatchesExtAppsSchemas(t *testing.T) {
	t.Parallel()
	node, dir := testNode(t, "the ext-apps schema test", "apps", "@modelcontextprotocol/ext-apps")

	settings, _ := json.Marshal(AppsSettings{MIMETypes: []string{AppMIMEType}})
	caps, _ := json.Marshal(ClientCapabilities{Extensions: map[string]json.RawMessage{AppsExtension: settings}})
	p := rawServer(t, newAppsTestServer())
	result := func(request string) json.RawMessage {
		t.Helper()
		p.send(request)
		var answer struct {
			Result json.RawMessage `json:"result"`
		}
		if got := p.recv(); json.Unmarshal([]byte(got), &answer) != nil || answer.Result == nil {
			t.Fatalf("%s: %s", request, got)
		}
		return answer.Result
	}
	wire := map[string]json.RawMessage{
		"capabilities": caps,
		"initialize": result(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` +
			string(caps) + `,"clientInfo":{"name":"host","version":"1"}}}`),
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	wire["toolsList"] = result(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	wire["resourcesList"] = result(`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	wire["resourceRead"] = result(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"` + appsTestView + `"}}`)
	input, _ := json.Marshal(wire)

	cmd := exec.Command(node, "check.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil || string(bytes.TrimSpace(out)) != "ok" {
		t.Fatalf("the ext-apps schemas refuse our wire (%v):\n%s\ninput: %s", err, out, input)
	}
}
