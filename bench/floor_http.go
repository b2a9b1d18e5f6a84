package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
)

// httpFloor is the HTTP carrier with no SDK on it: the shared net/http
// client POSTs an echo call with the headers a 2025-11-25 session sends, and
// a bare handler reads the body and writes a fixed answer, with no JSON
// decoded on either side. What it measures is the most any SDK can reach
// over net/http; the HTTP targets are read beside it.
type httpFloor struct {
	srv  *httptest.Server
	next atomic.Int64
}

var floorAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)

func newHTTPFloor() *httpFloor {
	return &httpFloor{srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(floorAnswer)
	}))}
}

// Echo sends one call and reads the answer; it returns text when the answer
// arrived whole.
func (f *httpFloor) Echo(ctx context.Context, text string) (string, error) {
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(f.next.Add(1), 10) +
		`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res, err := sharedHTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, floorAnswer) {
		return "", fmt.Errorf("net/http floor: unexpected answer %q", got)
	}
	return text, nil
}

func (f *httpFloor) Sleep(context.Context, int) error            { return errUnsupported }
func (f *httpFloor) Progress(context.Context, int, func()) error { return errUnsupported }
func (f *httpFloor) Version() string                             { return "" }
func (f *httpFloor) Close() error                                { f.srv.Close(); return nil }

// runHTTPFloor measures the sequential and 64-goroutine echo on the floor,
// by the same rules as every SDK's.
func runHTTPFloor(ctx context.Context, n counts, out sample) error {
	f := newHTTPFloor()
	defer f.Close()
	if err := runSequential(ctx, f, n, out); err != nil {
		return err
	}
	return runConcurrent(ctx, f, n, out)
}
