package mcp

import (
	"net/http"
	"strconv"
	"strings"
)

// corsMaxAge is how long, in seconds, a browser may keep the answer to a
// preflight: the most that Chromium honours.
const corsMaxAge = 7200

// corsAllowHeaders are the request headers a browser client may send: the
// body's type, an access token and its DPoP proof, and the MCP headers the
// handler reads of every revision. The Mcp-Param- headers of a tool are
// allowed as the preflight names them.
const corsAllowHeaders = "Content-Type, Authorization, DPoP, " + headerSessionID + ", " + headerProtocolVersion + ", " + headerLastEventID + ", " + headerMethod + ", " + headerName

// corsExposeHeaders are the response headers a browser client must read:
// the session id, the challenge of a 401, the next DPoP nonce and the wait
// of a 503.
const corsExposeHeaders = headerSessionID + ", WWW-Authenticate, DPoP-Nonce, Retry-After"

// corsOrigin reports whether WithAllowedOrigins lists origin.
func corsOrigin(cfg *httpConfig, origin string) bool {
	return origin != "" && listed(cfg.allowedOrigins, strings.TrimSuffix(origin, "/"))
}

// serveCORS adds the CORS headers to the answer of a request from an
// origin WithAllowedOrigins lists, once the request has passed the source checks;
// it answers a preflight itself and then reports true.
func serveCORS(cfg *httpConfig, w http.ResponseWriter, r *http.Request) bool {
	if len(cfg.allowedOrigins) == 0 {
		return false
	}
	h := w.Header()
	// The answer depends on the origin: caches must keep one per origin.
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !corsOrigin(cfg, origin) {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	if cfg.statelessOnly {
		h.Set("Access-Control-Allow-Methods", "POST")
	} else {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	}
	allow := corsAllowHeaders
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if len(name) > len(headerParamPrefix) && strings.EqualFold(name[:len(headerParamPrefix)], headerParamPrefix) && validHeaderName(name) {
				allow += ", " + name
			}
		}
	}
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
	w.WriteHeader(http.StatusNoContent)
	return true
}

// validHeaderName reports whether name is an HTTP field name (a token), so
// that a name echoed from a preflight cannot break the answer's headers.
func validHeaderName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return name != ""
}
