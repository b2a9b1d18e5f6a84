package mcp

import "slices"

// recentIDs remembers the latest ids added, at most a limit of them.
type recentIDs struct {
	order []string
	set   map[string]bool
}

// add remembers id, forgetting the oldest past limit; it reports false
// when id was already remembered.
func (r *recentIDs) add(id string, limit int) bool {
	if r.set[id] {
		return false
	}
	if r.set == nil {
		r.set = make(map[string]bool)
	}
	if len(r.order) >= limit {
		n := len(r.order) - limit + 1
		for _, old := range r.order[:n] {
			delete(r.set, old)
		}
		r.order = slices.Delete(r.order, 0, n)
	}
	r.order = append(r.order, id)
	r.set[id] = true
	return true
}
