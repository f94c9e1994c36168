package state_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/state"
)

// extPatch is a merge patch adding n new members to ext, applied to a
// state whose ext already holds n members: the shape that made the merge
// quadratic (each member looked up by a scan of the target's).
func extPatch(n int, prefix string) (target, patch []byte) {
	var t, p strings.Builder
	t.WriteString(`{"objective":"o","constraints":[],"ext":{`)
	p.WriteString(`{"ext":{`)
	for i := range n {
		if i > 0 {
			t.WriteByte(',')
			p.WriteByte(',')
		}
		fmt.Fprintf(&t, `"old%d":%d`, i, i)
		fmt.Fprintf(&p, `"%s%d":%d`, prefix, i, i)
	}
	t.WriteString(`}}`)
	p.WriteString(`}}`)
	return []byte(t.String()), []byte(p.String())
}

// BenchmarkMergePatchExt merges patches of 3k and 24k new ext members into
// an ext of the same size. Linear growth shows as ns/member staying flat
// from the small size to the large one (their ratio near 1; a quadratic
// merge makes it grow about 8×).
func BenchmarkMergePatchExt(b *testing.B) {
	for _, n := range []int{3_000, 24_000} {
		target, patch := extPatch(n, "new")
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(patch)))
			for b.Loop() {
				if _, err := state.MergePatch(target, patch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}
