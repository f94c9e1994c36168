package fingerprint

import "github.com/groundhog-ai/groundhog"

// ExcludedPaths gives the differential fuzz target's copy of the old
// scanner (old_compute_test.go, package fingerprint_test) the exclusion paths of
// every shape.
func ExcludedPaths() map[groundhog.Shape][]string {
	m := map[groundhog.Shape][]string{}
	for shape, fs := range excluded {
		for _, f := range fs {
			m[shape] = append(m[shape], f.Path)
		}
	}
	return m
}
