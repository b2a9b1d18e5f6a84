package main

import (
	"net/http"

	"github.com/e6ac58cb/mcp"
)

// oursHTTPHandler serves s with the default Streamable HTTP options: both
// eras on one endpoint.
func oursHTTPHandler(s *mcp.Server) (http.Handler, error) { return mcp.NewHTTPHandler(s), nil }

// oursHTTPTransport is the Streamable HTTP client transport on the bench's
// shared net/http client.
func oursHTTPTransport(url string) (mcp.Transport, error) {
	return mcp.NewHTTPTransport(url, mcp.WithHTTPClient(sharedHTTPClient)), nil
}
