package mcp

// The server side's Apps types and constants, here only until the
// apps-server branch that defines them is merged.

// AppsExtension is the MCP Apps extension's identifier. Both sides.
const AppsExtension = "io.modelcontextprotocol/ui"

// AppMIMEType is the MIME type of an MCP Apps view. Both sides.
const AppMIMEType = "text/html;profile=mcp-app"

// AppCSP lists the origins a view may reach. Both sides.
type AppCSP struct {
	ConnectDomains  []string `json:"connectDomains,omitempty"`
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	FrameDomains    []string `json:"frameDomains,omitempty"`
	BaseURIDomains  []string `json:"baseUriDomains,omitempty"`
}

// AppPermissions are the browser permissions a view asks for. Both sides.
type AppPermissions struct {
	Camera         *struct{} `json:"camera,omitempty"`
	Microphone     *struct{} `json:"microphone,omitempty"`
	Geolocation    *struct{} `json:"geolocation,omitempty"`
	ClipboardWrite *struct{} `json:"clipboardWrite,omitempty"`
}
