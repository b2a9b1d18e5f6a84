package main

import "net/http"

// sharedHTTPClient is the one net/http client every SDK's Streamable HTTP
// client transport is given, ours included, so that the HTTP cells compare
// the SDKs and not their HTTP clients: a clone of http.DefaultTransport
// that keeps enough idle connections for 64 calls at once to one server.
var sharedHTTPClient = newHTTPClient()

// newHTTPClient makes a client like sharedHTTPClient, with a pool of its
// own (the -instances mode's setups, each closed with its idle
// connections).
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 128
	return &http.Client{Transport: tr}
}
