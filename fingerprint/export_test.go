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

// SetSIMD switches the assembly off (or back on where the CPU has it) for
// the external tests, which compare the generic path with the old scanner
// too; it returns the function that restores the setting.
func SetSIMD(on bool) (restore func()) {
	old := useSIMD
	useSIMD = on && haveSIMD
	return func() { useSIMD = old }
}

// SampledKey is the key a Memo finds a body's candidate by.
func (m *Memo) SampledKey(p Params, body []byte) uint64 { return m.key(p, body, false) }

// HeldBytes is the size of the bodies a Memo holds copies of.
func (m *Memo) HeldBytes() int {
	n := 0
	for _, e := range m.cache.All() {
		n += len(e.body)
	}
	return n
}
