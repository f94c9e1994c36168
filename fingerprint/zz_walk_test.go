package fingerprint

import "testing"

func BenchmarkZZWalk(b *testing.B) {
	s := &scanner{}
	s.reset(body200KB, true)
	for b.Loop() {
		s.pos, s.depth = 0, 0
		s.out, s.scratch, s.keys, s.members = s.out[:0], s.scratch[:0], s.keys[:0], s.members[:0]
		s.model, s.stream, s.typeErr, s.topSorted = "", false, nil, false
		if err := s.document(roots["chat"], true); err != nil {
			b.Fatal(err)
		}
	}
}
