package mcp

// putEntry sets (*m)[key], making the map on first use: most of the maps
// it fills (a round's answers and asks, say) are never needed.
func putEntry[K comparable, V any](m *map[K]V, key K, value V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[key] = value
}
