package fingerprint

import "io"

// The canonical text is out with the refs inserted: a long string whose
// canonical form is its input bytes (found by the string index, index.go)
// is not copied into out but left in the input as a ref, recorded at the
// offset of out where its text belongs. Keys are never refs (the scanner
// reads them from out). Reordering an object (rewrite) moves the short
// text in out and only the ref records of its long strings, and SHA-256
// reads those strings straight from the input: most of a transcript's
// bytes are never copied.

// refMin is the length (quotes included) from which a clean string is
// left in the input: below it, the copy costs less than the extra write
// to the hash.
const refMin = 256

// noIndex and noRefs switch the string index and the refs off: only the
// tests and benchmarks set them, to compare with the code without them.
var noIndex, noRefs bool

// ref is a string left in the input: in[off:off+n] (quotes included) is
// the canonical text at offset at of out, before out[at].
type ref struct{ at, off, n int }

func (r ref) text(in []byte) []byte { return in[r.off : r.off+r.n] }

func refsLen(rs []ref) int {
	n := 0
	for _, r := range rs {
		n += r.n
	}
	return n
}

// emit writes the canonical text of out[lo:hi] to w, with the refs of that
// range (in order, each at in (lo, hi]) inserted.
func (s *scanner) emit(w io.Writer, lo, hi int, refs []ref) {
	for _, r := range refs {
		if r.at > lo {
			w.Write(s.out[lo:r.at])
			lo = r.at
		}
		w.Write(r.text(s.in))
	}
	if hi > lo {
		w.Write(s.out[lo:hi])
	}
}

// moveRefs follows rewrite: the members ms of the object (their old
// places in out, refLo and refHi) are now laid out from base in their
// sorted order, so their refs move with them: s.refs[refMark:] is put in
// the new order, each at shifted by its member's move.
func (s *scanner) moveRefs(ms []member, base, refMark int) {
	rs := s.refs[refMark:]
	s.refTmp = append(s.refTmp[:0], rs...)
	k, pos := 0, base
	for i := range ms {
		m := &ms[i]
		if m.dropped {
			continue
		}
		if pos > base {
			pos++ // comma
		}
		for _, r := range s.refTmp[int(m.refLo)-refMark : int(m.refHi)-refMark] {
			r.at += pos - m.start
			rs[k] = r
			k++
		}
		pos += m.end - m.start
	}
}
