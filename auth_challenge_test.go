package mcp

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	t.Parallel()
	type p = map[string]string
	cases := []struct {
		name   string
		header []string
		want   []challenge
	}{
		{"bearer with params", []string{`Bearer resource_metadata="https://h.example/.well-known/oauth-protected-resource", scope="a b"`},
			[]challenge{{scheme: "bearer", params: p{"resource_metadata": "https://h.example/.well-known/oauth-protected-resource", "scope": "a b"}}}},
		{"case-insensitive scheme and names", []string{`BEARER Error="invalid_token", SCOPE=read`},
			[]challenge{{scheme: "bearer", params: p{"error": "invalid_token", "scope": "read"}}}},
		{"two challenges in one header", []string{`Basic realm="x", Bearer error="insufficient_scope", scope="admin"`},
			[]challenge{{scheme: "basic", params: p{"realm": "x"}}, {scheme: "bearer", params: p{"error": "insufficient_scope", "scope": "admin"}}}},
		{"two headers", []string{`Basic realm="x"`, `Bearer scope="s"`},
			[]challenge{{scheme: "basic", params: p{"realm": "x"}}, {scheme: "bearer", params: p{"scope": "s"}}}},
		{"escapes in a quoted string", []string{`Bearer error_description="say \"hi\", \\ then", scope="a"`},
			[]challenge{{scheme: "bearer", params: p{"error_description": `say "hi", \ then`, "scope": "a"}}}},
		{"token68", []string{`Negotiate YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer`},
			[]challenge{{scheme: "negotiate", token68: "YWxhZGRpbjpvcGVuc2VzYW1l=="}, {scheme: "bearer"}}},
		{"bare schemes", []string{`Basic, Bearer`}, []challenge{{scheme: "basic"}, {scheme: "bearer"}}},
		{"spaces around equals", []string{`Bearer scope = "a" ,error= invalid_token`},
			[]challenge{{scheme: "bearer", params: p{"scope": "a", "error": "invalid_token"}}}},
		{"first of a duplicate wins", []string{`Bearer scope="a", scope="b"`}, []challenge{{scheme: "bearer", params: p{"scope": "a"}}}},
		{"empty commas", []string{`, ,Bearer scope="a",, `}, []challenge{{scheme: "bearer", params: p{"scope": "a"}}}},
		{"garbage then a good one", []string{`@@@, Bearer scope="a"`}, []challenge{{scheme: "bearer", params: p{"scope": "a"}}}},
		{"unterminated string", []string{`Bearer scope="a`}, []challenge{{scheme: "bearer"}}},
		{"empty", []string{""}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseChallenges(tc.header)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestBearerChallenge(t *testing.T) {
	t.Parallel()
	c := bearerChallenge([]string{`Basic realm="x"`, `DPoP algs="ES256", Bearer scope="s"`})
	if c == nil || c.param("scope") != "s" {
		t.Fatalf("%+v", c)
	}
	if bearerChallenge([]string{`Basic realm="x"`}) != nil {
		t.Fatal("found a Bearer challenge in a Basic one")
	}
	// A server that takes only DPoP-bound tokens challenges with DPoP.
	c = bearerChallenge([]string{`DPoP resource_metadata="https://r/m", error="use_dpop_nonce"`})
	if c == nil || c.param("resource_metadata") != "https://r/m" || c.param("error") != "use_dpop_nonce" {
		t.Fatalf("%+v", c)
	}
}

// renderChallenges writes challenges as a server would, with every value
// quoted; ok is false when one cannot be written (a name that is not a
// token, a value with control characters).
func renderChallenges(cs []challenge) (string, bool) {
	var b strings.Builder
	for i, c := range cs {
		if !isToken(c.scheme) || (c.token68 != "" && len(c.params) > 0) {
			return "", false
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.scheme)
		if c.token68 != "" {
			b.WriteString(" " + c.token68)
			continue
		}
		for j, k := range slices.Sorted(maps.Keys(c.params)) {
			v := c.params[k]
			if !isToken(k) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				return "", false
			}
			if j == 0 {
				b.WriteString(" ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(k + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`)
		}
	}
	return b.String(), true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// FuzzWWWAuthenticate: the parser never panics, and what it parsed,
// written again as a server would write it, parses to the same challenges.
func FuzzWWWAuthenticate(f *testing.F) {
	for _, seed := range []string{
		`Bearer resource_metadata="https://h.example/x", scope="a b", error="insufficient_scope"`,
		`Basic realm="x", Bearer error="invalid_token"`,
		`Negotiate YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer`,
		`Bearer error_description="say \"hi\""`,
		`Bearer scope = a ,, x=`,
		`"`, `=`, `a =`, `Bearer a="\`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		cs := parseChallenges([]string{header})
		for _, c := range cs {
			if c.scheme == "" || c.scheme != strings.ToLower(c.scheme) {
				t.Fatalf("scheme %q", c.scheme)
			}
		}
		text, ok := renderChallenges(cs)
		if !ok {
			return
		}
		again := parseChallenges([]string{text})
		if !reflect.DeepEqual(normalize(again), normalize(cs)) {
			t.Fatalf("%q parsed to %#v, rendered as %q, which parsed to %#v", header, cs, text, again)
		}
	})
}

// normalize makes empty param maps nil, for comparison.
func normalize(cs []challenge) []challenge {
	out := slices.Clone(cs)
	for i := range out {
		if len(out[i].params) == 0 {
			out[i].params = nil
		}
	}
	return out
}
