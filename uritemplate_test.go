package mcp

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tmplTestRFCVars is the variable set of RFC 6570 §3.2 (plus the few extra
// variables used by the examples of §1 and §2).
var tmplTestRFCVars = map[string]any{
	"count":      []string{"one", "two", "three"},
	"dom":        []string{"example", "com"},
	"dub":        "me/too",
	"hello":      "Hello World!",
	"half":       "50%",
	"var":        "value",
	"who":        "fred",
	"base":       "http://example.com/home/",
	"path":       "/foo/bar",
	"list":       []string{"red", "green", "blue"},
	"keys":       map[string]string{"semi": ";", "dot": ".", "comma": ","},
	"v":          "6",
	"x":          "1024",
	"y":          "768",
	"empty":      "",
	"empty_keys": map[string]string{},
	"undef":      nil,
	"year":       []string{"1965", "2000", "2012"},
	"semi":       ";",
	"username":   "fred",
	"term":       "cat",
	"q":          "cat",
	"lang":       "en",
}

// TestURITemplateExpandRFC checks every example of RFC 6570 §1.2 and §3.2
// (and the smaller ones of §1.1, §2.4 and §3.2.1). The RFC lists the pairs of
// "keys" in insertion order (semi, dot, comma); Go maps have no order, so
// Expand sorts keys and the expectations below use comma, dot, semi.
func TestURITemplateExpandRFC(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		// §1.1
		{"http://example.com/~{username}/", "http://example.com/~fred/"},
		{"http://example.com/dictionary/{term:1}/{term}", "http://example.com/dictionary/c/cat"},
		{"http://example.com/search{?q,lang}", "http://example.com/search?q=cat&lang=en"},

		// §1.2 level 1
		{"{var}", "value"},
		{"{hello}", "Hello%20World%21"},
		// §1.2 level 2
		{"{+var}", "value"},
		{"{+hello}", "Hello%20World!"},
		{"{+path}/here", "/foo/bar/here"},
		{"here?ref={+path}", "here?ref=/foo/bar"},
		{"X{#var}", "X#value"},
		{"X{#hello}", "X#Hello%20World!"},
		// §1.2 level 3
		{"map?{x,y}", "map?1024,768"},
		{"{x,hello,y}", "1024,Hello%20World%21,768"},
		{"{+x,hello,y}", "1024,Hello%20World!,768"},
		{"{+path,x}/here", "/foo/bar,1024/here"},
		{"{#x,hello,y}", "#1024,Hello%20World!,768"},
		{"{#path,x}/here", "#/foo/bar,1024/here"},
		{"X{.var}", "X.value"},
		{"X{.x,y}", "X.1024.768"},
		{"{/var}", "/value"},
		{"{/var,x}/here", "/value/1024/here"},
		{"{;x,y}", ";x=1024;y=768"},
		{"{;x,y,empty}", ";x=1024;y=768;empty"},
		{"{?x,y}", "?x=1024&y=768"},
		{"{?x,y,empty}", "?x=1024&y=768&empty="},
		{"?fixed=yes{&x}", "?fixed=yes&x=1024"},
		{"{&x,y,empty}", "&x=1024&y=768&empty="},
		// §1.2 level 4
		{"{var:3}", "val"},
		{"{var:30}", "value"},
		{"{list}", "red,green,blue"},
		{"{list*}", "red,green,blue"},
		{"{keys}", "comma,%2C,dot,.,semi,%3B"},
		{"{keys*}", "comma=%2C,dot=.,semi=%3B"},
		{"{+path:6}/here", "/foo/b/here"},
		{"{+list}", "red,green,blue"},
		{"{+list*}", "red,green,blue"},
		{"{+keys}", "comma,,,dot,.,semi,;"},
		{"{+keys*}", "comma=,,dot=.,semi=;"},
		{"{#path:6}/here", "#/foo/b/here"},
		{"{#list}", "#red,green,blue"},
		{"{#list*}", "#red,green,blue"},
		{"{#keys}", "#comma,,,dot,.,semi,;"},
		{"{#keys*}", "#comma=,,dot=.,semi=;"},
		{"X{.var:3}", "X.val"},
		{"X{.list}", "X.red,green,blue"},
		{"X{.list*}", "X.red.green.blue"},
		{"X{.keys}", "X.comma,%2C,dot,.,semi,%3B"},
		{"X{.keys*}", "X.comma=%2C.dot=..semi=%3B"},
		{"{/var:1,var}", "/v/value"},
		{"{/list}", "/red,green,blue"},
		{"{/list*}", "/red/green/blue"},
		{"{/list*,path:4}", "/red/green/blue/%2Ffoo"},
		{"{/keys}", "/comma,%2C,dot,.,semi,%3B"},
		{"{/keys*}", "/comma=%2C/dot=./semi=%3B"},
		{"{;hello:5}", ";hello=Hello"},
		{"{;list}", ";list=red,green,blue"},
		{"{;list*}", ";list=red;list=green;list=blue"},
		{"{;keys}", ";keys=comma,%2C,dot,.,semi,%3B"},
		{"{;keys*}", ";comma=%2C;dot=.;semi=%3B"},
		{"{?var:3}", "?var=val"},
		{"{?list}", "?list=red,green,blue"},
		{"{?list*}", "?list=red&list=green&list=blue"},
		{"{?keys}", "?keys=comma,%2C,dot,.,semi,%3B"},
		{"{?keys*}", "?comma=%2C&dot=.&semi=%3B"},
		{"{&var:3}", "&var=val"},
		{"{&list}", "&list=red,green,blue"},
		{"{&list*}", "&list=red&list=green&list=blue"},
		{"{&keys}", "&keys=comma,%2C,dot,.,semi,%3B"},
		{"{&keys*}", "&comma=%2C&dot=.&semi=%3B"},

		// §2.4.1
		{"{var:20}", "value"},
		{"{semi}", "%3B"},
		{"{semi:2}", "%3B"},
		// §2.4.2
		{"find{?year*}", "find?year=1965&year=2000&year=2012"},
		{"www{.dom*}", "www.example.com"},
		// §3.2.1
		{"{count}", "one,two,three"},
		{"{count*}", "one,two,three"},
		{"{/count}", "/one,two,three"},
		{"{/count*}", "/one/two/three"},
		{"{;count}", ";count=one,two,three"},
		{"{;count*}", ";count=one;count=two;count=three"},
		{"{?count}", "?count=one,two,three"},
		{"{?count*}", "?count=one&count=two&count=three"},
		{"{&count*}", "&count=one&count=two&count=three"},

		// §3.2.2 simple string expansion
		{"{half}", "50%25"},
		{"O{empty}X", "OX"},
		{"O{undef}X", "OX"},
		{"{x,y}", "1024,768"},
		{"?{x,empty}", "?1024,"},
		{"?{x,undef}", "?1024"},
		{"?{undef,y}", "?768"},
		// §3.2.3 reserved expansion
		{"{+half}", "50%25"},
		{"{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"},
		{"{+base}index", "http://example.com/home/index"},
		{"O{+empty}X", "OX"},
		{"O{+undef}X", "OX"},
		{"up{+path}{var}/here", "up/foo/barvalue/here"},
		// §3.2.4 fragment expansion
		{"{#var}", "#value"},
		{"{#hello}", "#Hello%20World!"},
		{"{#half}", "#50%25"},
		{"foo{#empty}", "foo#"},
		{"foo{#undef}", "foo"},
		// §3.2.5 label expansion
		{"{.who}", ".fred"},
		{"{.who,who}", ".fred.fred"},
		{"{.half,who}", ".50%25.fred"},
		{"X{.empty}", "X."},
		{"X{.undef}", "X"},
		{"X{.empty_keys}", "X"},
		{"X{.empty_keys*}", "X"},
		// §3.2.6 path segment expansion
		{"{/who}", "/fred"},
		{"{/who,who}", "/fred/fred"},
		{"{/half,who}", "/50%25/fred"},
		{"{/who,dub}", "/fred/me%2Ftoo"},
		{"{/var,empty}", "/value/"},
		{"{/var,undef}", "/value"},
		// §3.2.7 path-style parameter expansion
		{"{;who}", ";who=fred"},
		{"{;half}", ";half=50%25"},
		{"{;empty}", ";empty"},
		{"{;v,empty,who}", ";v=6;empty;who=fred"},
		{"{;v,bar,who}", ";v=6;who=fred"},
		{"{;x,y,undef}", ";x=1024;y=768"},
		// §3.2.8 form-style query expansion
		{"{?who}", "?who=fred"},
		{"{?half}", "?half=50%25"},
		{"{?x,y,undef}", "?x=1024&y=768"},
		// §3.2.9 form-style query continuation
		{"{&who}", "&who=fred"},
		{"{&half}", "&half=50%25"},
	}
	for _, tt := range tests {
		tmpl, err := ParseURITemplate(tt.tmpl)
		if err != nil {
			t.Errorf("ParseURITemplate(%q): %v", tt.tmpl, err)
			continue
		}
		got, err := tmpl.Expand(tmplTestRFCVars)
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
}

// TestURITemplateExpandValues covers value types and encoding corner cases
// beyond the RFC examples.
func TestURITemplateExpandValues(t *testing.T) {
	type myString string
	tests := []struct {
		tmpl string
		vars map[string]any
		want string
	}{
		// §1.2: numbers are formatted with fmt; undefined variables vanish.
		{"http://www.example.com/foo{?query,number}", map[string]any{"query": "mycelium", "number": 100}, "http://www.example.com/foo?query=mycelium&number=100"},
		{"http://www.example.com/foo{?query,number}", map[string]any{"number": 100}, "http://www.example.com/foo?number=100"},
		{"http://www.example.com/foo{?query,number}", nil, "http://www.example.com/foo"},
		{"{a,b,c,d}", map[string]any{"a": true, "b": -3, "c": uint8(7), "d": 1.5}, "true,-3,7,1.5"},
		{"{a}", map[string]any{"a": myString("x y")}, "x%20y"},
		{"{a}", map[string]any{"a": []byte("b/c")}, "b%2Fc"},
		{"{a}", map[string]any{"a": any("s")}, "s"},
		{"{/a*}", map[string]any{"a": []any{"x", nil, 2, true}}, "/x/2/true"},
		{"{/a*}", map[string]any{"a": []any{nil}}, ""},
		{"{/a*}", map[string]any{"a": [2]string{"p", "q"}}, "/p/q"},
		{"{/a*}", map[string]any{"a": []string(nil)}, ""},
		{"{?a*}", map[string]any{"a": map[string]any{"z": 1, "m": nil, "b": "c d"}}, "?b=c%20d&z=1"},
		{"{?a*}", map[string]any{"a": map[string]any{"m": nil}}, ""},
		{"{?a*}", map[string]any{"a": map[myString]int{"k": 1}}, "?k=1"},
		{"{;a*}", map[string]any{"a": []string{"", "x"}}, ";a;a=x"},
		{"{?a*}", map[string]any{"a": []string{"", "x"}}, "?a=&a=x"},
		{"{;a*}", map[string]any{"a": map[string]string{"k": ""}}, ";k"},
		{"{.a*}", map[string]any{"a": map[string]string{"k": ""}}, ".k="},
		{"{?a}", map[string]any{"a": []string{""}}, "?a="},
		// Non-ASCII is encoded from UTF-8; prefixes count code points.
		{"{a}", map[string]any{"a": "ü✓"}, "%C3%BC%E2%9C%93"},
		{"{a:1}", map[string]any{"a": "ü✓"}, "%C3%BC"},
		{"{a:2}", map[string]any{"a": "a\xffb"}, "a%FF"},
		// Reserved expansion keeps existing triplets and counts them as one character.
		{"{+a}", map[string]any{"a": "%41%zz%"}, "%41%25zz%25"},
		{"{+a:2}", map[string]any{"a": "%41%42%43"}, "%41%42"},
		{"{a}", map[string]any{"a": "%41"}, "%2541"},
		// Literals not allowed in a URI are pct-encoded (§3.1).
		{"a b/{x}", map[string]any{"x": "1"}, "a%20b/1"},
		{"ü{x}", nil, "%C3%BC"},
		{"%7e{x}", nil, "%7e"},
		{"{a%20b}", map[string]any{"a%20b": "v"}, "v"},
		{"{?a.b}", map[string]any{"a.b": "v"}, "?a.b=v"},
		{"", nil, ""},
	}
	for _, tt := range tests {
		tmpl, err := ParseURITemplate(tt.tmpl)
		if err != nil {
			t.Errorf("ParseURITemplate(%q): %v", tt.tmpl, err)
			continue
		}
		got, err := tmpl.Expand(tt.vars)
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q, %v) = %q, %v; want %q", tt.tmpl, tt.vars, got, err, tt.want)
		}
	}
}

func TestURITemplateExpandErrors(t *testing.T) {
	tests := []struct {
		tmpl string
		vars map[string]any
	}{
		{"{a:1}", map[string]any{"a": []string{"x"}}},
		{"{a:1}", map[string]any{"a": map[string]string{"k": "v"}}},
		{"{a}", map[string]any{"a": struct{}{}}},
		{"{a}", map[string]any{"a": []any{[]string{"nested"}}}},
		{"{a}", map[string]any{"a": map[int]string{1: "x"}}},
		{"{a}", map[string]any{"a": func() {}}},
		{"{a}", map[string]any{"a": 1i}},
	}
	for _, tt := range tests {
		tmpl, err := ParseURITemplate(tt.tmpl)
		if err != nil {
			t.Fatalf("ParseURITemplate(%q): %v", tt.tmpl, err)
		}
		if got, err := tmpl.Expand(tt.vars); err == nil {
			t.Errorf("Expand(%q, %v) = %q, want error", tt.tmpl, tt.vars, got)
		}
	}
}

func TestURITemplateParseErrors(t *testing.T) {
	bad := []string{
		"{",
		"{a",
		"a{b",
		"x{a,b",
		"{a{b}}",
		"}",
		"a}b",
		"{a}}",
		"{}",
		"{+}",
		"{?}",
		"{=a}",
		"{,a}",
		"{!a}",
		"{@a}",
		"{|a}",
		"{a,}",
		"{a,,b}",
		"{a b}",
		"{a-b}",
		"{$a}",
		"{..a}",
		"{a.}",
		"{a..b}",
		"{a%2}",
		"{a%zz}",
		"{a:}",
		"{a:0}",
		"{a:01}",
		"{a:10000}",
		"{a:x}",
		"{a:-1}",
		"{a:3*}",
		"{a*:3}",
		"{a**}",
		"{a*b}",
		"100%",
		"%2",
		"%zz/{a}",
		"x/{a}%",
	}
	for _, s := range bad {
		tmpl, err := ParseURITemplate(s)
		if err == nil {
			t.Errorf("ParseURITemplate(%q) = %v, want error", s, tmpl)
		} else if tmpl != nil {
			t.Errorf("ParseURITemplate(%q) returned a template with error %v", s, err)
		}
	}
}

func TestURITemplateParseValid(t *testing.T) {
	tests := []struct {
		tmpl string
		vars []string
	}{
		{"", nil},
		{"plain://literal", nil},
		{"test://template/{id}/data", []string{"id"}},
		{"repo://{owner}/{repo}/issues{?state,labels*}", []string{"owner", "repo", "state", "labels"}},
		{"{a.b}{_}{A1_b}{a%20b}{x:9999}{y:1}", []string{"a.b", "_", "A1_b", "a%20b", "x", "y"}},
		{"{a}/{b}/{a}{?b,c}", []string{"a", "b", "c"}},
		{"{.a}{/b*}{;c}{#d}{+e}{&f}", []string{"a", "b", "c", "d", "e", "f"}},
		{"%7E{x}", []string{"x"}},
		{"a b\"<>\\^`|", nil},
	}
	for _, tt := range tests {
		tmpl, err := ParseURITemplate(tt.tmpl)
		if err != nil {
			t.Errorf("ParseURITemplate(%q): %v", tt.tmpl, err)
			continue
		}
		if got := tmpl.String(); got != tt.tmpl {
			t.Errorf("String() = %q, want %q", got, tt.tmpl)
		}
		if got := tmpl.Variables(); !slices.Equal(got, tt.vars) {
			t.Errorf("Variables(%q) = %q, want %q", tt.tmpl, got, tt.vars)
		}
	}
	// Variables returns a copy.
	tmpl, _ := ParseURITemplate("{a}")
	tmpl.Variables()[0] = "changed"
	if got := tmpl.Variables(); got[0] != "a" {
		t.Errorf("Variables() aliases internal state: %q", got)
	}
}

type tmplTestMatch struct {
	tmpl, uri string
	want      map[string]string // nil means no match
}

var tmplTestMatches = []tmplTestMatch{
	// Basic MCP templates.
	{"test://template/{id}/data", "test://template/123/data", map[string]string{"id": "123"}},
	{"test://template/{id}/data", "test://template/123/other", nil},
	{"test://template/{id}/data", "test://other/123/data", nil},
	{"test://template/{id}/data", "test://template/1/2/data", nil},
	{"test://template/{id}/data", "test://template//data", map[string]string{"id": ""}},
	{"test://template/{id}/data", "test://template/123/data/", nil},
	{"test://template/{id}/data", "test://template/a%20b%2Fc/data", map[string]string{"id": "a b/c"}},
	{"test://template/{id}", "test://template/%E2%9C%93", map[string]string{"id": "✓"}},
	{"test://template/{id}", "test://template/%zz%4", map[string]string{"id": "%zz%4"}},
	{"test://template/{id}", "test://template/a+b", map[string]string{"id": "a+b"}},
	{"test://template/{id}", "test://template/a?b", nil},
	{"test://template/{id}", "test://template/a#b", nil},
	{"file:///{path}", "file:///a/b", nil},
	{"file:///{+path}", "file:///a/b/c.txt", map[string]string{"path": "a/b/c.txt"}},
	{"file:///{+path}", "file:///dir/my%20file.txt", map[string]string{"path": "dir/my file.txt"}},
	{"file:///{+path}", "file://a", nil},
	{"{+x}/here", "a/b/here", map[string]string{"x": "a/b"}},
	{"mcp://{+rest}{?q}", "mcp://a/b?q=1", map[string]string{"rest": "a/b", "q": "1"}},
	{"mcp://{+rest}{#frag}", "mcp://a/b#c/d", map[string]string{"rest": "a/b", "frag": "c/d"}},
	{"{#frag}", "#section-2", map[string]string{"frag": "section-2"}},
	{"{#frag}", "", map[string]string{}},
	{"{#frag}", "section", nil},

	// Query parameters: any order, optional, strict about unknown names.
	{"repo://{owner}/{repo}/issues{?state,labels*}", "repo://o/r/issues?labels=bug&state=open&labels=ui",
		map[string]string{"owner": "o", "repo": "r", "state": "open", "labels": "bug,ui"}},
	{"repo://{owner}/{repo}/issues{?state,labels*}", "repo://o/r/issues", map[string]string{"owner": "o", "repo": "r"}},
	{"repo://{owner}/{repo}/issues{?state,labels*}", "repo://o/r/issues?state=closed", map[string]string{"owner": "o", "repo": "r", "state": "closed"}},
	{"repo://{owner}/{repo}/issues{?state,labels*}", "repo://o/r/issues?page=2", nil},
	{"repo://{owner}/{repo}/issues{?state,labels*}", "repo://o/r/issues?state=open&page=2", nil},
	{"{?a,b}", "?b=2&a=1", map[string]string{"a": "1", "b": "2"}},
	{"{?a,b}", "?a=", map[string]string{"a": ""}},
	{"{?a,b}", "?a", map[string]string{"a": ""}},
	{"{?a,b}", "?a=1&a=2", map[string]string{"a": "1,2"}},
	{"{?a,b}", "&a=1", nil},
	{"{?a,b}", "?a=x=y&b=%26", map[string]string{"a": "x=y", "b": "&"}},
	{"{?q}", "?q=a+b%20c", map[string]string{"q": "a+b c"}},
	{"{?a}{b}", "?a=1", map[string]string{"a": "1", "b": ""}},
	// Regressions found by FuzzURITemplate: a parameter value must leave
	// room for a directly following expression.
	{"{;0}{1}", ";0=00", map[string]string{"0": "00", "1": ""}},
	{"{&0}{?1}", "&0=?1=0", map[string]string{"0": "", "1": "0"}},
	{"{?a}{/b}", "?a=1/x", map[string]string{"a": "1", "b": "x"}},
	{"{?a}", "?a=1/x?y", map[string]string{"a": "1/x?y"}},
	{"{?a}{&b}", "?b=2&a=1", map[string]string{"a": "1", "b": "2"}},
	{"{?a}{&b}", "&b=2", map[string]string{"b": "2"}},
	{"?fixed=yes{&x}", "?fixed=yes&x=1024", map[string]string{"x": "1024"}},
	{"?fixed=yes{&x}", "?fixed=yes", map[string]string{}},
	{"?fixed=yes{&x}", "?fixed=no&x=1", nil},
	{"{?list*}", "?list=red&list=green&list=blue", map[string]string{"list": "red,green,blue"}},
	{"{?keys*}", "?comma=%2C", nil}, // exploded maps cannot be recovered
	{"{?var:3}", "?var=value", map[string]string{"var": "value"}},

	// Path segments.
	{"{/a,b}", "/x/y", map[string]string{"a": "x", "b": "y"}},
	{"{/a,b}", "/x", map[string]string{"a": "x"}},
	{"{/a,b}", "/x/y/z", nil},
	{"{/a}", "", map[string]string{}},
	{"{/a}", "/", map[string]string{"a": ""}},
	{"{/path*}", "/a/b/c", map[string]string{"path": "a/b/c"}},
	{"{/list*,x}", "/red/green/blue/1024", map[string]string{"list": "red/green/blue", "x": "1024"}},
	{"{/var,x}/here", "/value/1024/here", map[string]string{"var": "value", "x": "1024"}},

	// Path-style parameters.
	{"{;x,y}", ";y=768;x=1024", map[string]string{"x": "1024", "y": "768"}},
	{"{;x,y,empty}", ";x=1024;y=768;empty", map[string]string{"x": "1024", "y": "768", "empty": ""}},
	{"{;x}{;y}", ";y=2;x=1", map[string]string{"x": "1", "y": "2"}},
	{"{;list*}", ";list=red;list=green", map[string]string{"list": "red,green"}},
	{"{;x}", ";z=1", nil},

	// Labels.
	{"X{.var}", "X.value", map[string]string{"var": "value"}},
	{"X{.var}", "X", map[string]string{}},
	{"www{.dom*}", "www.example.com", map[string]string{"dom": "example.com"}},
	{"X{.x,y}", "X.1024.768", map[string]string{"x": "1024", "y": "768"}},
	{"{name}{.ext}", "archive.tar.gz", map[string]string{"name": "archive", "ext": "tar.gz"}},

	// Simple lists.
	{"{x,y}", "1024,768", map[string]string{"x": "1024", "y": "768"}},
	{"{x,y}", "1024", map[string]string{"x": "1024"}},
	{"{x,y}", "a,b,c", map[string]string{"x": "a", "y": "b,c"}},
	{"{x}", "a,b", map[string]string{"x": "a,b"}},
	{"{x}", "", map[string]string{"x": ""}},
	{"{name}-{ver}", "a-b-c", map[string]string{"name": "a", "ver": "b-c"}},

	// Repeated variables must agree.
	{"{a}/{a}", "x/x", map[string]string{"a": "x"}},
	{"{a}/{a}", "x/y", nil},
	{"{a}/{a}", "%78/x", map[string]string{"a": "x"}},

	// Literals.
	{"", "", map[string]string{}},
	{"", "x", nil},
	{"file:///my docs/{name}", "file:///my%20docs/a", map[string]string{"name": "a"}},
	{"file:///my docs/{name}", "file:///my docs/a", map[string]string{"name": "a"}},
	{"a.b{x}", "aXb1", nil}, // '.' is literal, not a regexp wildcard
	{"(x){y}", "(x)1", map[string]string{"y": "1"}},
}

func TestURITemplateMatch(t *testing.T) {
	for _, tt := range tmplTestMatches {
		tmpl, err := ParseURITemplate(tt.tmpl)
		if err != nil {
			t.Errorf("ParseURITemplate(%q): %v", tt.tmpl, err)
			continue
		}
		got, ok := tmpl.Match(tt.uri)
		if tt.want == nil {
			if ok {
				t.Errorf("Match(%q, %q) = %q, want no match", tt.tmpl, tt.uri, got)
			}
			continue
		}
		if !ok || !maps.Equal(got, tt.want) {
			t.Errorf("Match(%q, %q) = %q, %v; want %q", tt.tmpl, tt.uri, got, ok, tt.want)
		}
	}
}

// TestURITemplateRoundTrip checks Match(Expand(vars)) == vars for string
// values without reserved characters. '.' is unreserved but is excluded too
// because it is the separator of label expressions, and '%' is only used
// where it is always encoded: {+var} and {#var} pass "%41" through, and
// Match then decodes it to "A".
func TestURITemplateRoundTrip(t *testing.T) {
	templates := []string{
		"test://template/{id}/data",
		"file:///{+path}",
		"repo://{owner}/{repo}/issues{?state,labels}",
		"{/a,b,c}",
		"{;x,y}",
		"X{.a}",
		"X{.a,b}",
		"{a,b}",
		"{+a,b}/x",
		"{#frag}",
		"s://{a}/{b}{?c}{&d}",
		"{/seg*}/end",
		"a{a}=b{b}!",
	}
	const chars = "abcXYZ019-_~ é✓%"
	rng := rand.New(rand.NewPCG(1, 2))
	var runes []rune
	randValue := func() string {
		n := rng.IntN(6)
		var b strings.Builder
		for range n {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		return b.String()
	}
	for _, s := range templates {
		tmpl, err := ParseURITemplate(s)
		if err != nil {
			t.Fatalf("ParseURITemplate(%q): %v", s, err)
		}
		runes = []rune(chars)
		if tmplHasModifiersOrReserved(tmpl) {
			runes = runes[:len(runes)-1]
		}
		for range 300 {
			vars := map[string]any{}
			want := map[string]string{}
			for _, name := range tmpl.Variables() {
				v := randValue()
				vars[name] = v
				want[name] = v
			}
			uri, err := tmpl.Expand(vars)
			if err != nil {
				t.Fatalf("Expand(%q, %q): %v", s, vars, err)
			}
			got, ok := tmpl.Match(uri)
			if !ok || !maps.Equal(got, want) {
				t.Fatalf("Match(%q, Expand(%q) = %q) = %q, %v", s, want, uri, got, ok)
			}
		}
	}
}

func TestURITemplateZeroValue(t *testing.T) {
	for _, tmpl := range []*URITemplate{nil, {}} {
		if s := tmpl.String(); s != "" {
			t.Errorf("String() = %q", s)
		}
		if v := tmpl.Variables(); len(v) != 0 {
			t.Errorf("Variables() = %q", v)
		}
		if s, err := tmpl.Expand(map[string]any{"a": "b"}); s != "" || err != nil {
			t.Errorf("Expand() = %q, %v", s, err)
		}
		if m, ok := tmpl.Match(""); !ok || len(m) != 0 {
			t.Errorf(`Match("") = %v, %v`, m, ok)
		}
		if _, ok := tmpl.Match("x"); ok {
			t.Errorf(`Match("x") matched`)
		}
	}
}

// TestURITemplateConcurrent lets the race detector check that a parsed
// template can be shared.
func TestURITemplateConcurrent(t *testing.T) {
	tmpl, err := ParseURITemplate("repo://{owner}/{repo}/issues{?state,labels*}")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				want := map[string]string{"owner": fmt.Sprint(i), "repo": fmt.Sprint(j)}
				uri, err := tmpl.Expand(map[string]any{"owner": want["owner"], "repo": want["repo"]})
				if err != nil {
					t.Error(err)
					return
				}
				if got, ok := tmpl.Match(uri); !ok || !maps.Equal(got, want) {
					t.Errorf("Match(%q) = %v, %v", uri, got, ok)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestURITemplateLinear guards against super-linear matching on inputs
// designed to make a backtracking matcher explode.
func TestURITemplateLinear(t *testing.T) {
	tmpl, err := ParseURITemplate("{a}{b}{c}{d}{e}{+f}{+g}x{?h,i}")
	if err != nil {
		t.Fatal(err)
	}
	uri := strings.Repeat("a", 100_000) + "?h=" + strings.Repeat("b", 100_000) + "&"
	if _, ok := tmpl.Match(uri); ok {
		t.Fatal("unexpected match")
	}
}

// tmplHasDuplicateVars reports whether a variable occurs more than once.
func tmplHasDuplicateVars(t *URITemplate) bool {
	n := 0
	for _, p := range t.parts {
		if p.expr != nil {
			n += len(p.expr.specs)
		}
	}
	return n != len(t.names)
}

func tmplMustParse(s string) *URITemplate {
	t, err := ParseURITemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// tmplHasModifiersOrReserved reports whether the template uses a prefix
// modifier or a reserved operator, the two features that make expansion
// lossy (truncation, and triplets in values passed through unencoded).
// tmplHasAdjacentLists reports whether an unnamed expression of several
// variables is followed directly, with no literal between, by another
// expression: "{a,b}{c}" expanded for a="x", b="y", c="z" is "x,yz", which
// Match may also read as a="" and c="x,yz" (the last variable takes any
// remainder, commas included), a reading whose expansion encodes the comma.
// Match succeeds there, but does not give back the variables.
func tmplHasAdjacentLists(t *URITemplate) bool {
	for i, p := range t.parts[:max(len(t.parts)-1, 0)] {
		if p.expr != nil && !p.expr.op.named && len(p.expr.specs) > 1 && t.parts[i+1].expr != nil {
			return true
		}
	}
	return false
}

func tmplHasModifiersOrReserved(t *URITemplate) bool {
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		if p.expr.op.allowReserved {
			return true
		}
		for _, spec := range p.expr.specs {
			if spec.prefix > 0 {
				return true
			}
		}
	}
	return false
}

func FuzzURITemplate(f *testing.F) {
	for _, tt := range tmplTestMatches {
		f.Add(tt.tmpl, tt.uri)
	}
	f.Add("{var:3}{+x,hello}{#a*}{.b}{/c*}{;d}{?e}{&f}", "val/x#y.z/w;d=1?e=2&f=3")
	f.Add("{a}", strings.Repeat("%", 10))
	f.Fuzz(func(t *testing.T, s, uri string) {
		tmpl, err := ParseURITemplate(s)
		if err != nil {
			if tmpl != nil {
				t.Fatalf("ParseURITemplate(%q) returned both a template and %v", s, err)
			}
			return
		}
		if tmpl.String() != s {
			t.Fatalf("String() = %q, want %q", tmpl.String(), s)
		}
		names := tmpl.Variables()
		dups := tmplHasDuplicateVars(tmpl)

		// With no variables every expression is empty, which must match.
		empty, err := tmpl.Expand(nil)
		if err != nil {
			t.Fatalf("Expand(%q, nil): %v", s, err)
		}
		if _, ok := tmpl.Match(empty); !ok {
			t.Fatalf("Match(%q, Expand(nil) = %q) failed", s, empty)
		}

		// Any string values must expand to something that matches, unless
		// repeated variables make the template self-contradictory.
		vars := map[string]any{}
		for i, name := range names {
			vars[name] = tmplFuzzChunk(uri, i, len(names))
		}
		tmplFuzzRoundTrip(t, tmpl, vars, dups)

		got, ok := tmpl.Match(uri)
		if !ok {
			return
		}
		vars = map[string]any{}
		for k, v := range got {
			if !slices.Contains(names, k) {
				t.Fatalf("Match(%q, %q) returned unknown variable %q", s, uri, k)
			}
			vars[k] = v
		}
		tmplFuzzRoundTrip(t, tmpl, vars, dups)
	})
}

// tmplFuzzChunk returns the i-th of n roughly equal pieces of s.
func tmplFuzzChunk(s string, i, n int) string {
	return s[len(s)*i/n : len(s)*(i+1)/n]
}

// tmplFuzzRoundTrip checks that Expand(vars) matches and, when the
// expansion is lossless, that expanding the matched variables again
// reproduces the same URI.
func tmplFuzzRoundTrip(t *testing.T, tmpl *URITemplate, vars map[string]any, dups bool) {
	t.Helper()
	uri, err := tmpl.Expand(vars)
	if err != nil {
		t.Fatalf("Expand(%q, %q): %v", tmpl, vars, err)
	}
	got, ok := tmpl.Match(uri)
	if dups {
		return
	}
	if !ok {
		t.Fatalf("Match(%q, Expand(%q) = %q) failed", tmpl, vars, uri)
	}
	if tmplHasModifiersOrReserved(tmpl) || tmplHasAdjacentLists(tmpl) {
		return
	}
	again := map[string]any{}
	for k, v := range got {
		again[k] = v
	}
	uri2, err := tmpl.Expand(again)
	if err != nil || uri2 != uri {
		t.Fatalf("template %q: Expand(%q) = %q, Match = %q, Expand(Match) = %q, %v", tmpl, vars, uri, got, uri2, err)
	}
}

func BenchmarkURITemplateMatch(b *testing.B) {
	benches := []struct{ name, tmpl, uri string }{
		{"simple", "test://template/{id}/data", "test://template/123/data"},
		{"reserved", "file:///{+path}", "file:///home/user/projects/mcp/README.md"},
		{"query", "repo://{owner}/{repo}/issues{?state,labels*}", "repo://octo/mcp/issues?labels=bug&state=open&labels=ui"},
		{"nomatch", "repo://{owner}/{repo}/issues{?state,labels*}", "file:///home/user/projects/mcp/README.md"},
	}
	for _, bb := range benches {
		tmpl := tmplMustParse(bb.tmpl)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tmpl.Match(bb.uri)
			}
		})
	}
}
