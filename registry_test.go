package mcp

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"testing"
)

// pagedServer has n tools, resources, templates and prompts, in pages of
// size.
func pagedServer(n, size int) *Server {
	s := NewServer(Implementation{Name: "paged", Version: "1"}, WithPageSize(size))
	for i := range n {
		name := fmt.Sprintf("item%02d", i)
		s.AddTool(Tool{Name: name}, func(context.Context, *CallToolRequest) (*CallToolResult, error) { return nil, nil })
		s.AddResource(Resource{URI: "test://" + name, Name: name}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
		s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://" + name + "/{x}", Name: name}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) { return nil, nil })
		s.AddPrompt(Prompt{Name: name}, func(context.Context, *GetPromptRequest) (*GetPromptResult, error) { return nil, nil })
	}
	return s
}

func TestPagination(t *testing.T) {
	t.Parallel()
	const n, size = 7, 3 // pages of 3, 3 and 1
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("item%02d", i))
	}
	eachEra(t, func(t *testing.T, version, carrier string) {
		cl := connectOver(t, pagedServer(n, size), carrier, version)
		ctx := context.Background()
		check := func(what string, got []string, err error) {
			t.Helper()
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%s: %q %v, want %q", what, got, err, want)
			}
		}
		got, err := collectNames(cl.Tools(ctx), func(t *Tool) string { return t.Name })
		check("Tools", got, err)
		got, err = collectNames(cl.Resources(ctx), func(r *Resource) string { return r.Name })
		check("Resources", got, err)
		got, err = collectNames(cl.ResourceTemplates(ctx), func(r *ResourceTemplate) string { return r.Name })
		check("ResourceTemplates", got, err)
		got, err = collectNames(cl.Prompts(ctx), func(p *Prompt) string { return p.Name })
		check("Prompts", got, err)

		// By hand: three pages, then an invalid cursor and another list's.
		var sizes []int
		cursor := ""
		for {
			page, err := cl.ListTools(ctx, cursor)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(page.Tools))
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(sizes, []int{3, 3, 1}) {
			t.Errorf("page sizes %v", sizes)
		}
		first, _ := cl.ListPrompts(ctx, "")
		for _, bad := range []string{"not a cursor", "%%%", first.NextCursor} {
			if _, err := cl.ListTools(ctx, bad); rpcCode(err) != CodeInvalidParams {
				t.Errorf("cursor %q: %v, want %d", bad, err, CodeInvalidParams)
			}
		}
		// Breaking off an iteration early stops fetching.
		for range cl.Tools(ctx) {
			break
		}
	})
}

// collectNames runs an iterator to its end, or to its first error.
func collectNames[T any](seq iter.Seq2[T, error], name func(T) string) ([]string, error) {
	var names []string
	for item, err := range seq {
		if err != nil {
			return names, err
		}
		names = append(names, name(item))
	}
	return names, nil
}

func TestRegistryPagesSurviveChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(r *registry[string])
		want   []string // the second page after the change
	}{
		{name: "no change", change: func(*registry[string]) {}, want: []string{"c", "d"}},
		{name: "an earlier item removed", change: func(r *registry[string]) { r.remove([]string{"a"}) }, want: []string{"c", "d"}},
		{name: "the last item seen removed", change: func(r *registry[string]) { r.remove([]string{"b"}) }, want: []string{"c", "d"}},
		{name: "an item added", change: func(r *registry[string]) { r.add("z", "z") }, want: []string{"c", "d"}},
		{name: "everything after removed", change: func(r *registry[string]) { r.remove([]string{"c", "d", "e"}) }, want: []string{}},
	}
	for _, tt := range tests {
		var r registry[string]
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			r.add(k, k)
		}
		page, cursor, err := r.page("x", "", 2, nil)
		if err != nil || !slices.Equal(page, []string{"a", "b"}) {
			t.Fatalf("%s: first page %v %v", tt.name, page, err)
		}
		tt.change(&r)
		page, _, err = r.page("x", cursor, 2, nil)
		if err != nil || !slices.Equal(page, tt.want) {
			t.Errorf("%s: second page %q %v, want %q", tt.name, page, err, tt.want)
		}
	}
}
