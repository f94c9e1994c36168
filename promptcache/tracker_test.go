package promptcache

import (
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

var cacheShapes = []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages}

// Twenty turns of one conversation that only ever appends: the provider
// reads the earlier prefix each time and groundhog reports no break.
func TestUnchangedPrefixTwentyTurnsNoBreak(t *testing.T) {
	for _, shape := range cacheShapes {
		t.Run(string(shape), func(t *testing.T) {
			g := newRig(t, shape == groundhog.ShapeMessages)
			c := baseConvo(shape)
			reads := 0
			for i := range 20 {
				if i > 0 {
					c = c.next(i)
					g.clock.Advance(30 * time.Second)
				}
				res, call := g.do(c, nil)
				if res.Break {
					t.Fatalf("turn %d: false break %+v (diagnosis %+v)", i, res, call.Diagnosis)
				}
				if i > 0 && res.Expected == 0 {
					t.Fatalf("turn %d: no reusable prefix expected on an unchanged prefix: %+v", i, call.Diagnosis)
				}
				if res.Read > 0 {
					reads++
				}
			}
			if reads < 19 {
				t.Fatalf("the provider read on %d of 19 follow-up turns", reads)
			}
		})
	}
}
