package mcp

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOptionsAreTypedBySide builds testdata/wrongside, which gives every
// option of one side to the other, and expects the compiler to refuse each
// of those lines and no other: a server option given to NewClient, or an
// HTTP handler option to a client transport (or the other way round), does
// not compile. Every option of one side in the package must appear there.
func TestOptionsAreTypedBySide(t *testing.T) {
	t.Parallel()
	const dir = "testdata/wrongside"
	src := filepath.Join(dir, "main.go")
	want := map[int]bool{} // lines marked ERROR
	var text strings.Builder
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.HasSuffix(sc.Text(), "// ERROR") {
			want[n] = true
			text.WriteString(sc.Text() + "\n")
		}
	}
	f.Close()

	out, err := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, "./"+dir).CombinedOutput()
	if err == nil {
		t.Fatalf("%s compiled", src)
	}
	got := map[int]bool{}
	at := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(src) + `:(\d+):\d+: (.*)$`)
	for _, m := range at.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.Atoi(m[1])
		got[n] = true
		if !want[n] {
			t.Errorf("line %d does not compile, but should: %s", n, m[2])
		} else if !regexp.MustCompile(`does not implement mcp\.(Client|Server|HTTPHandler|HTTPTransport)Option`).MatchString(m[2]) {
			t.Errorf("line %d fails for another reason: %s", n, m[2])
		}
	}
	for n := range want {
		if !got[n] {
			t.Errorf("line %d compiles, but gives an option to the wrong side", n)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no compiler errors read from:\n%s", out)
	}

	// Every one-sided option of the package is tried.
	oneSided := map[string]bool{"ClientOption": true, "ServerOption": true, "HTTPHandlerOption": true, "HTTPTransportOption": true}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range pkgs["mcp"].Files {
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && oneSided[id.Name] {
				if !strings.Contains(text.String(), "mcp."+fn.Name.Name+"(") {
					t.Errorf("%s (a %s) is not tried on the other side in %s", fn.Name.Name, id.Name, src)
				}
			}
		}
	}
}
