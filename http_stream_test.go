package mcp

import (
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodeOf: the code of an error response is read whatever the
// members' order; a result, however large and whatever text it holds, is
// not an error; malformed input is none either, and never a panic.
func TestErrorCodeOf(t *testing.T) {
	big := strings.Repeat(`"error":{"code":1}`, 1000)
	for _, tc := range []struct {
		data string
		code int
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, -32601, true},
		{` { "error" : { "message":"m", "code" : 400 } , "id" : "x" } `, 400, true},
		{`{"id":{"a":[1,"}"]},"jsonrpc":"2.0","error":{"code":7}}`, 7, true},
		{`{"\u0065rror":{"code":9},"id":1}`, 9, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"text":` + strconv.Quote(big) + `}}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":3}}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":null}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":"no"}`, 0, false},
		{`{"jsonrpc":"2.0","id":1}`, 0, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":`, 0, false},
		{`{"jsonrpc`, 0, false},
		{`{"a":1 "error":{"code":2}}`, 0, false},
		{`[]`, 0, false},
		{``, 0, false},
	} {
		code, ok := errorCodeOf([]byte(tc.data))
		if code != tc.code || ok != tc.ok {
			t.Errorf("errorCodeOf(%.60s) = %d, %v; want %d, %v", tc.data, code, ok, tc.code, tc.ok)
		}
	}
}
