package promptcache

import (
	"context"
	"reflect"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// Stage.After gives the call's segments back once the prompt is recorded,
// and what the stage reports does not depend on it: a conversation run
// twice, through a stage whose slices are recycled and one where other
// calls interleave (and reuse them) between each call's Before and After,
// gets the same diagnoses and outcomes, call for call.
func TestStageRecyclesSegments(t *testing.T) {
	ctx := context.Background()
	turns := [][]byte{}
	for _, n := range []int{8 << 10, 16 << 10, 32 << 10, 64 << 10} {
		turns = append(turns, benchbody.Chat(n, benchbody.Options{Model: "sim-small"}))
	}
	run := func(interleave bool) []Outcome {
		st := &Stage{Tracker: NewTracker(Config{})}
		other := &Stage{Tracker: NewTracker(Config{})}
		var outs []Outcome
		for _, body := range turns {
			p := st.Before(ctx, &Request{Tenant: "t", Operation: "op", Shape: groundhog.ShapeChat, Body: body}, true)
			if interleave {
				for _, ob := range turns {
					q := other.Before(ctx, &Request{Tenant: "u", Operation: "op", Shape: groundhog.ShapeChat, Body: ob}, true)
					other.After(ctx, q, groundhog.Usage{InputTokens: 900})
					q.Done()
				}
			}
			p.Started(true)
			u := groundhog.Usage{InputTokens: int64(p.call.prefix.Tokens), CachedInputTokens: int64(p.call.Diagnosis.Expected) / 2}
			outs = append(outs, st.After(ctx, p, u))
			p.Done()
		}
		return outs
	}
	before := segsRecycled.Load()
	plain := run(false)
	if got := segsRecycled.Load() - before; got != int64(len(turns)) {
		t.Fatalf("%d segment slices recycled after %d calls, want one per call", got, len(turns))
	}
	mixed := run(true)
	if !reflect.DeepEqual(plain, mixed) {
		t.Fatalf("outcomes differ when other calls reuse the segments:\n%+v\n%+v", plain, mixed)
	}
	breaks := 0
	for _, o := range plain {
		if o.Break {
			breaks++
		}
	}
	if breaks == 0 {
		t.Fatalf("no call broke (usage read half the expected prefix): the test checks nothing: %+v", plain)
	}
}
