package mcp

import (
	"context"
	"errors"
	"iter"
)

// WithMaxBarrenPages bounds how many pages in a row a list iterator
// ([Client.Tools] and the like) fetches when none of them brings an item it
// has not yielded yet (default 8); past it the iteration ends with an error,
// so a server that hands out cursors without end cannot keep the client
// paging for ever. It configures a client (NewClient).
func WithMaxBarrenPages(n int) ClientOption {
	return clientOption(func(c *config) {
		if n > 0 {
			c.client.maxBarrenPages = n
		}
	})
}

// Tools iterates over the server's tools, fetching pages as it goes. Each
// tool is yielded once, even if the server lists it again on a later page.
// An error ends the iteration, yielded with a nil tool: among them a cursor
// the server already gave, and more pages in a row than [WithMaxBarrenPages]
// allows that bring no tool not yet seen.
func (c *Client) Tools(ctx context.Context, opts ...CallOption) iter.Seq2[*Tool, error] {
	return pages(ctx, c, opts, c.ListTools, func(r *ListToolsResult) ([]*Tool, string) { return r.Tools, r.NextCursor })
}

// Resources iterates over the server's resources; see [Client.Tools].
func (c *Client) Resources(ctx context.Context, opts ...CallOption) iter.Seq2[*Resource, error] {
	return pages(ctx, c, opts, c.ListResources, func(r *ListResourcesResult) ([]*Resource, string) { return r.Resources, r.NextCursor })
}

// ResourceTemplates iterates over the server's resource templates; see
// [Client.Tools].
func (c *Client) ResourceTemplates(ctx context.Context, opts ...CallOption) iter.Seq2[*ResourceTemplate, error] {
	return pages(ctx, c, opts, c.ListResourceTemplates, func(r *ListResourceTemplatesResult) ([]*ResourceTemplate, string) {
		return r.ResourceTemplates, r.NextCursor
	})
}

// Prompts iterates over the server's prompts; see [Client.Tools].
func (c *Client) Prompts(ctx context.Context, opts ...CallOption) iter.Seq2[*Prompt, error] {
	return pages(ctx, c, opts, c.ListPrompts, func(r *ListPromptsResult) ([]*Prompt, string) { return r.Prompts, r.NextCursor })
}

// listKey names a listed item within its list, so an iterator can tell an
// item it has yielded from a new one.
func listKey(item any) (string, bool) {
	switch v := item.(type) {
	case *Tool:
		return v.Name, v != nil
	case *Prompt:
		return v.Name, v != nil
	case *Resource:
		return v.URI, v != nil
	case *ResourceTemplate:
		return v.URITemplate, v != nil
	case Task:
		return v.ID, true
	case *EventType:
		return v.Name, v != nil
	}
	return "", false
}

// pages follows a list's cursors, fetching each page with list when the
// iteration reaches it; items picks out a page's items and next cursor. It
// yields each item once, and ends with an error on a cursor it was given
// before or after c's bound of pages in a row with nothing new, either of
// which would otherwise page for ever.
func pages[R, T any](ctx context.Context, c *Client, opts []CallOption, list func(context.Context, string, ...CallOption) (*R, error), items func(*R) ([]T, string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		cursors := map[string]bool{"": true}
		seen := map[string]bool{}
		barren := 0
		for {
			res, err := list(ctx, cursor, opts...)
			if err != nil {
				yield(zero, err)
				return
			}
			page, next := items(res)
			fresh := false
			for _, item := range page {
				if key, ok := listKey(item); ok {
					if seen[key] {
						continue
					}
					seen[key] = true
				}
				fresh = true
				if !yield(item, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if cursors[next] {
				yield(zero, errors.New("mcp: the server gave a cursor it had given before; stopped paging"))
				return
			}
			if fresh {
				barren = 0
			} else {
				barren++
			}
			if barren >= c.cfg.client.maxBarrenPages {
				yield(zero, errorf("the server gave %d pages in a row with nothing new; stopped paging", barren))
				return
			}
			cursors[next] = true
			cursor = next
		}
	}
}
