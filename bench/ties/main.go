// Command ties counts the ties between the files of one Go package: which
// file uses a package-level name, method or field that another declares.
// It prints the ties per file, the share that runs from a file more files
// use to one fewer use, the share that runs upward through the package's
// layers, and, given the many-instance wing's seam files, how often the
// other files name the wing's internals.
//
//	cd bench && go run ./ties ..          # the counts
//	cd bench && go run ./ties -check ..   # fails when the wing is used past its seams
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	seams := flag.String("seams", "cluster_seam.go,cluster_seam_server.go", "the wing's seam files, which the other files may name")
	list := flag.Bool("list", false, "list the ties that run upward and the wing names each file uses")
	check := flag.Bool("check", false, "exit 1 when a file outside cluster_*.go uses the wing's internals")
	fan := flag.Bool("fan", false, "list the ties that run from a file more files use to one fewer use")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	ties, err := countTies(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ties:", err)
		os.Exit(1)
	}
	if uses := report(ties, strings.Split(*seams, ","), *list, *fan); *check && uses > 0 {
		fmt.Fprintf(os.Stderr, "ties: %d uses of the many-instance wing's internals outside its files and seams\n", uses)
		os.Exit(1)
	}
}

// A tie is a (user file, declaring file) pair and how many uses it has.
type tie struct{ from, to string }

// countTies type-checks the package's non-test files for linux and counts
// every use of a name declared in another file of it.
func countTies(dir string) (map[tie]int, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || strings.Contains(base, "_other") || strings.Contains(base, "_windows") || strings.Contains(base, "_wasm") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("p", fset, files, info)
	if err != nil {
		return nil, err
	}
	ties := make(map[tie]int)
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAtTop(obj, pkg) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			ties[tie{from, to}]++
		}
	}
	return ties, nil
}

// declaredAtTop reports whether obj is a package-level name, a method or a
// struct field: what one file can lean on another for.
func declaredAtTop(obj types.Object, pkg *types.Package) bool {
	switch o := obj.(type) {
	case *types.Var:
		return o.IsField() || o.Parent() == pkg.Scope()
	case *types.Func:
		return true
	case *types.TypeName, *types.Const:
		return o.Parent() == pkg.Scope()
	}
	return false
}

// layer places a file of package mcp: 0 the wire and shapes, 1 the
// engine, 2 the client and server, 3 HTTP and OAuth, 4 the many-instance
// wing. A tie from a lower layer to a higher one runs upward.
func layer(f string) int {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(f, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("cluster_"):
		return 4
	case has("http_", "auth_", "transport_http", "transport_sse", "sse.go", "eventstore.go"):
		return 3
	case has("client", "tasks_", "server.go", "resources.go", "subscriptions.go", "logging.go", "gateway.go", "state.go", "task_store.go", "negotiate.go", "structured.go", "tools.go", "prompts.go", "completion.go"):
		return 2
	case has("conn", "timeout.go", "progress.go", "middleware.go", "seam.go", "session_end.go", "transport_stdio", "options.go"):
		return 1
	}
	return 0
}

// report prints the counts and returns the uses of the wing's internals
// outside its files.
func report(ties map[tie]int, seams []string, list, fan bool) int {
	files := make(map[string]bool)
	fanIn := make(map[string]int)
	for t := range ties {
		files[t.from], files[t.to] = true, true
		fanIn[t.to]++
	}
	var byFanIn, upward int
	var up, down []string
	for t, c := range ties {
		if fanIn[t.from] > fanIn[t.to] {
			byFanIn++
			down = append(down, fmt.Sprintf("%s (%d) -> %s (%d): %d uses", t.from, fanIn[t.from], t.to, fanIn[t.to], c))
		}
		if layer(t.from) < layer(t.to) {
			upward++
			up = append(up, t.from+" -> "+t.to)
		}
	}
	n := len(ties)
	fmt.Printf("%d files, %d ties (%.1f a file)\n", len(files), n, float64(n)/float64(len(files)))
	fmt.Printf("from a file more files use to one fewer use: %d (%.0f%%)\n", byFanIn, 100*float64(byFanIn)/float64(n))
	fmt.Printf("upward through the layers: %d (%.0f%%)\n", upward, 100*float64(upward)/float64(n))
	isSeam := make(map[string]bool)
	for _, s := range seams {
		isSeam[s] = true
	}
	inWing := func(f string) bool { return strings.HasPrefix(f, "cluster_") && !isSeam[f] }
	uses := make(map[string]int)
	for t, c := range ties {
		if inWing(t.to) && !strings.HasPrefix(t.from, "cluster_") {
			uses[t.from] += c
		}
	}
	total := 0
	for _, c := range uses {
		total += c
	}
	fmt.Printf("uses of the wing's internals outside cluster_*.go: %d\n", total)
	if list {
		sort.Strings(up)
		for _, u := range up {
			fmt.Println("upward:", u)
		}
		for f, c := range uses {
			fmt.Printf("wing names used by %s: %d\n", f, c)
		}
	}
	if fan {
		sort.Strings(down)
		for _, d := range down {
			fmt.Println("from more used:", d)
		}
	}
	return total
}
