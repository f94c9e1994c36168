package gateway

import (
	"math/rand/v2"
	"mime"
	"testing"
)

// isEventStream's verdict, with its table of known values, equals
// mime.ParseMediaType's for every table entry and for random near-misses of
// them (case, spaces, parameters, truncations, bad bytes). Broken (a table
// entry with the wrong verdict) it fails on that entry.
func TestKnownContentTypesMatchParse(t *testing.T) {
	parse := func(ct string) bool {
		mt, _, _ := mime.ParseMediaType(ct)
		return mt == "text/event-stream"
	}
	var cts []string
	for ct := range knownContentTypes {
		cts = append(cts, ct)
	}
	cts = append(cts, "", "text/event-stream;", "TEXT/EVENT-STREAM", " text/event-stream", "text/event-stream ; x=1",
		"application/json;", "text/event-stream; charset", "text/event-stream\x00", "text/event-streams")
	rng := rand.New(rand.NewPCG(4, 12))
	alphabet := "aAtT/;= ,\"\x00\xffjsonevent-stream"
	for range 20000 {
		b := []byte(cts[rng.IntN(len(cts))])
		for range 1 + rng.IntN(3) {
			switch op := rng.IntN(3); {
			case op == 0 && len(b) > 0:
				b = b[:rng.IntN(len(b))]
			case op == 1:
				i := rng.IntN(len(b) + 1)
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			case len(b) > 0:
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		cts = append(cts, string(b))
	}
	for _, ct := range cts {
		if got, want := isEventStream(ct), parse(ct); got != want {
			t.Fatalf("isEventStream(%q) = %v, ParseMediaType says %v", ct, got, want)
		}
	}
}
