package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
)

// httpFloor is the HTTP carrier with no SDK on it: the shared net/http
// client POSTs an echo call with the body and headers a client of the
// version sends (floorMessages), and a bare handler reads the body and
// writes the version's fixed answer, with no JSON decoded on either side.
// What it measures is the most any SDK can reach over net/http; the HTTP
// targets are read beside it.
type httpFloor struct {
	srv        *httptest.Server
	version    string
	head, tail string // the request's JSON before and after its id
	answer     []byte
	next       atomic.Int64
}

// floorMessages returns the echo request of version split around its id,
// and its answer, as the JSON floor's structs encode them: on 2026-07-28
// with the _meta every request and result carries there.
func floorMessages(version string) (head, tail string, answer []byte) {
	req, resp := floorPair(version)
	req.ID, resp.ID = 0, 1
	data, _ := json.Marshal(&req)
	head, tail, _ = strings.Cut(string(data), `"id":0`)
	answer, _ = json.Marshal(&resp)
	return head + `"id":`, tail, answer
}

// setFloorHeaders sets the headers a client of version sends with a
// tools/call of the echo tool.
func setFloorHeaders(h http.Header, version string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", version)
	if version >= "2026-07-28" {
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", "echo")
	} else {
		h.Set("Mcp-Session-Id", "0123456789abcdef0123456789abcdef")
	}
}

func newHTTPFloor(version string) *httpFloor {
	f := &httpFloor{version: version}
	f.head, f.tail, f.answer = floorMessages(version)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(f.answer)
	}))
	return f
}

// Echo sends one call and reads the answer; it returns text when the answer
// arrived whole.
func (f *httpFloor) Echo(ctx context.Context, text string) (string, error) {
	body := f.head + strconv.FormatInt(f.next.Add(1), 10) + f.tail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL, bytes.NewReader([]byte(body)))
	if err != nil {
		return "", err
	}
	setFloorHeaders(req.Header, f.version)
	res, err := sharedHTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, f.answer) {
		return "", fmt.Errorf("net/http floor: unexpected answer %q", got)
	}
	return text, nil
}

func (f *httpFloor) Sleep(context.Context, int) error            { return errUnsupported }
func (f *httpFloor) Progress(context.Context, int, func()) error { return errUnsupported }
func (f *httpFloor) Version() string                             { return f.version }
func (f *httpFloor) Close() error                                { f.srv.Close(); return nil }

// runHTTPFloor measures the sequential and 64-goroutine echo on the floor,
// by the same rules as every SDK's.
func runHTTPFloor(ctx context.Context, version string, n counts, out sample) error {
	f := newHTTPFloor(version)
	defer f.Close()
	if err := runSequential(ctx, f, n, out); err != nil {
		return err
	}
	return runConcurrent(ctx, f, n, out)
}

// httpJSONFloor is the net/http floor with the JSON done where an SDK does
// it rather than in a loop of its own: the client marshals each request
// and unmarshals each answer, the handler unmarshals the request and
// marshals the answer, with encoding/json and the JSON floor's structs of
// the version. Nothing else: no ids matched, no handler looked up, no
// result validated. It shows what the limit's sum of two floors leaves
// out, what the JSON costs in place (caches and allocation beside
// net/http's) rather than alone.
type httpJSONFloor struct {
	srv     *httptest.Server
	version string
	next    atomic.Int64
}

func newHTTPJSONFloor(version string) *httpJSONFloor {
	f := &httpJSONFloor{version: version}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		var req floorRequest
		if err == nil {
			err = json.Unmarshal(data, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, resp := floorPair(f.version)
		resp.ID = req.ID
		resp.Result.Content[0].Text = req.Params.Arguments.Text
		out, _ := json.Marshal(&resp)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
	return f
}

// Echo sends one call and reads the answer; it returns the answer's text.
func (f *httpJSONFloor) Echo(ctx context.Context, text string) (string, error) {
	req, _ := floorPair(f.version)
	req.ID, req.Params.Arguments.Text = f.next.Add(1), text
	body, err := json.Marshal(&req)
	if err != nil {
		return "", err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	setFloorHeaders(hr.Header, f.version)
	res, err := sharedHTTPClient.Do(hr)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	var got floorResponse
	if err := json.Unmarshal(data, &got); err != nil {
		return "", err
	}
	if got.ID != req.ID || len(got.Result.Content) != 1 {
		return "", fmt.Errorf("net/http and JSON floor: unexpected answer %q", data)
	}
	return got.Result.Content[0].Text, nil
}

func (f *httpJSONFloor) Sleep(context.Context, int) error            { return errUnsupported }
func (f *httpJSONFloor) Progress(context.Context, int, func()) error { return errUnsupported }
func (f *httpJSONFloor) Version() string                             { return f.version }
func (f *httpJSONFloor) Close() error                                { f.srv.Close(); return nil }

// runHTTPJSONFloor measures the sequential and 64-goroutine echo on the
// floor with the JSON in place.
func runHTTPJSONFloor(ctx context.Context, version string, n counts, out sample) error {
	f := newHTTPJSONFloor(version)
	defer f.Close()
	if err := runSequential(ctx, f, n, out); err != nil {
		return err
	}
	return runConcurrent(ctx, f, n, out)
}
