package assemble

import (
	"fmt"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// BenchmarkAssemble100 is the pure assembly of a 100-finding state (no
// HTTP, no store): the part of a context request groundhog itself adds.
func BenchmarkAssemble100(b *testing.B) {
	in := inputFor(groundhog.ShapeChat, true)
	for i := range 100 {
		in.State.Findings = append(in.State.Findings, fmt.Sprintf("Finding %d: worker %d timed out after the downstream acknowledged charge ch_%04d", i, i%7, i))
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := Assemble(in); err != nil {
			b.Fatal(err)
		}
	}
}
