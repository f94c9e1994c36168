package fingerprint

import "fmt"

// Names is a set of member names for Compute to look out for on its pass
// over a body (Params.Names); Result.Names says which the body holds. A
// caller that must know whether a body names something — a resource it
// checks, a field it acts on — learns it from the pass that validates the
// body anyway, instead of reading the body again: each member costs one
// test of its key's length, and a key of a watched length one compare per
// name of that length. Make one with NewNames and reuse it (a Memo tells
// Params apart by the pointer).
type Names struct {
	names []string
	lens  uint64 // bit n: some name is n bytes long
}

// NewNames returns the set of names; the i-th name is bit i of
// Result.Names. It panics on more than 64 names, an empty name or one of
// 64 bytes or more: the set is fixed when the program is written.
func NewNames(names ...string) *Names {
	if len(names) > 64 {
		panic(fmt.Sprintf("fingerprint: %d names, at most 64", len(names)))
	}
	n := &Names{names: names}
	for _, name := range names {
		if len(name) == 0 || len(name) >= 64 {
			panic(fmt.Sprintf("fingerprint: name %q: want 1 to 63 bytes", name))
		}
		n.lens |= 1 << len(name)
	}
	return n
}

// Bit returns the bit of Result.Names that stands for name, or 0 when name
// is not in the set.
func (n *Names) Bit(name string) uint64 {
	for i, v := range n.names {
		if v == name {
			return 1 << i
		}
	}
	return 0
}

// match returns the bits of the names equal to key.
func (n *Names) match(key []byte) uint64 {
	var m uint64
	for i, name := range n.names {
		if name == string(key) {
			m |= 1 << i
		}
	}
	return m
}
