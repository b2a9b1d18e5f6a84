package mcp

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExamplesPaste checks that every example is a program: its body,
// pasted into the main of a program of its own with the imports it uses,
// builds and prints its Output. An example that leans on a helper of its
// test file does not build, and an example file declares nothing else.
// MCP_PASTE_MODULE names another module to check, by its directory here
// (otel or redis, whose own TestExamplesPaste sets it).
func TestExamplesPaste(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example as a program of its own")
	}
	dir, err := filepath.Abs(cmp.Or(os.Getenv("MCP_PASTE_MODULE"), "."))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(gomod)
	if module == nil {
		t.Fatalf("%s/go.mod: no module line", dir)
	}

	// One module holds a program per example: the checked module's go.mod
	// (its requirements and go.sum keep the build offline) renamed, its
	// replacements made absolute, requiring the module checked in place.
	tmp := t.TempDir()
	mod := regexp.MustCompile(`(?m)^module \S+`).ReplaceAllString(string(gomod), "module paste")
	mod = regexp.MustCompile(`=> (\.\S*)`).ReplaceAllStringFunc(mod, func(s string) string {
		return "=> " + filepath.Join(dir, strings.TrimPrefix(s, "=> "))
	})
	mod += fmt.Sprintf("\nrequire %[1]s v0.0.0\n\nreplace %[1]s => %[2]s\n", module[1], dir)
	writeFile(t, filepath.Join(tmp, "go.mod"), mod)
	if sum, err := os.ReadFile(filepath.Join(dir, "go.sum")); err == nil {
		writeFile(t, filepath.Join(tmp, "go.sum"), string(sum))
	}

	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []*doc.Example
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "example_test.go") {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Example") {
					continue
				}
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
					continue
				}
				t.Errorf("%s: a declaration beside the examples; an example must stand alone", fset.Position(d.Pos()))
			}
		}
		for _, ex := range doc.Examples(f) {
			body, ok := ex.Code.(*ast.BlockStmt)
			if !ok {
				t.Errorf("%s: Example%s is a whole file: it leans on the file's other declarations", name, ex.Name)
				continue
			}
			writeFile(t, filepath.Join(tmp, "Example"+ex.Name, "main.go"), pasted(t, fset, f, body))
			examples = append(examples, ex)
		}
	}
	if len(examples) == 0 {
		t.Fatalf("%s: no examples", dir)
	}

	bin := filepath.Join(tmp, "bin")
	// One build for them all; without DWARF, as linking is most of its time.
	build := exec.Command("go", "build", "-ldflags=-w", "-o", bin+string(filepath.Separator), "./...")
	build.Dir = tmp
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the examples, pasted into programs, do not build: %v\n%s", err, out)
	}
	for _, ex := range examples {
		if ex.Output == "" && !ex.EmptyOutput {
			continue // no Output comment: it only has to build, as go test only compiles it
		}
		t.Run("Example"+ex.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "Example"+ex.Name))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.Bytes())
			}
			// go test's rules: both trimmed; lines sorted when unordered.
			got, want := strings.TrimSpace(stdout.String()), strings.TrimSpace(ex.Output)
			if ex.Unordered {
				got, want = sortedLines(got), sortedLines(want)
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// pasted is the program whose main is body, importing those of f's
// imports that body names.
func pasted(t *testing.T, fset *token.FileSet, f *ast.File, body *ast.BlockStmt) string {
	named := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				named[id.Name] = true
			}
		}
		return true
	})
	var src bytes.Buffer
	src.WriteString("package main\n\nimport (\n")
	for _, spec := range f.Imports {
		if named[importName(spec)] {
			format.Node(&src, fset, spec)
			src.WriteString("\n")
		}
	}
	src.WriteString(")\n\nfunc main() ")
	if err := format.Node(&src, fset, body); err != nil {
		t.Fatal(err)
	}
	out, err := format.Source(src.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, src.Bytes())
	}
	return string(out)
}

// importName is the name a file refers to an import by: its own, or the
// one the path suggests ("github.com/redis/go-redis/v9" is redis), as
// goimports assumes.
func importName(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	path, _ := strconv.Unquote(spec.Path.Value)
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
		name = elems[len(elems)-2]
	}
	name = strings.TrimPrefix(name, "go-")
	if i := strings.IndexAny(name, ".-"); i >= 0 {
		name = name[:i]
	}
	return name
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
