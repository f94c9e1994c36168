package promptcache

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// walkBoth walks b from its first byte with the quote bitmap (forced on at
// any size) and without it, and fails when the two differ in the end
// offset, the error, or anything the index recorded.
func walkBoth(t testing.TB, name string, b []byte) (usedBitmap bool) {
	t.Helper()
	mk := []byte(`"cache_control"`)
	run := func(bitmap bool) (int, string, *index) {
		defer func(m int, off bool) { minQuoteIndex, noQuoteIndex = m, off }(minQuoteIndex, noQuoteIndex)
		minQuoteIndex, noQuoteIndex = 0, !bitmap
		ix := newIndex(mk)
		s := skipWS(b, 0)
		e, err := ix.walk(b, s, 0, nil)
		return e, fmt.Sprint(err), ix
	}
	e1, err1, ix1 := run(false)
	e2, err2, ix2 := run(true)
	defer ix1.release()
	defer ix2.release()
	if e1 != e2 || err1 != err2 {
		t.Fatalf("%s: scan walk ends at %d (%s), bitmap walk at %d (%s)\nbody %q", name, e1, err1, e2, err2, trunc(b))
	}
	if !slices.Equal(ix1.nodes, ix2.nodes) || !slices.Equal(ix1.kids, ix2.kids) || !slices.Equal(ix1.marks, ix2.marks) {
		t.Fatalf("%s: the indexes differ (nodes %d/%d, kids %d/%d, marks %v/%v)\nbody %q", name,
			len(ix1.nodes), len(ix2.nodes), len(ix1.kids), len(ix2.kids), ix1.marks, ix2.marks, trunc(b))
	}
	return len(ix2.q) > 0
}

func trunc(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// randJSON writes a random value: strings full of escapes (backslash runs
// of every length, \" \\ \u, surrogates, raw UTF-8 and invalid bytes),
// numbers, literals, and containers nested up to past maxDepth.
func randJSON(rng *rand.Rand, w *bytes.Buffer, depth int) {
	switch k := rng.Intn(10); {
	case depth < 300 && k < 2:
		w.WriteByte('[')
		for i, n := 0, rng.Intn(4); i < n; i++ {
			if i > 0 {
				w.WriteByte(',')
			}
			randJSON(rng, w, depth+1)
		}
		w.WriteByte(']')
	case depth < 300 && k < 4:
		w.WriteString("{ ")
		for i, n := 0, rng.Intn(4); i < n; i++ {
			if i > 0 {
				w.WriteString(" ,")
			}
			randString(rng, w)
			w.WriteString(" :\n")
			randJSON(rng, w, depth+1)
		}
		w.WriteByte('}')
	case k < 8:
		randString(rng, w)
	case k < 9:
		w.WriteString([]string{"true", "false", "null", "nul", "tru"}[rng.Intn(5)])
	default:
		w.WriteString([]string{"0", "-1.5e3", "12345678901234567890", "-", "1E+2"}[rng.Intn(5)])
	}
}

func randString(rng *rand.Rand, w *bytes.Buffer) {
	parts := []string{`a`, `cache_control`, `\"`, `\\`, `\\\"`, `\\\\`, `\\\\\"`, `\u00e9`, `\ud83d\ude80`, `é`, "\xff", "\x01", `\n`, ` `, `{"x":1}`, `\`}
	w.WriteByte('"')
	if rng.Intn(8) == 0 {
		w.WriteString(strings.Repeat("x", rng.Intn(200)))
	}
	for i, n := 0, rng.Intn(8); i < n; i++ {
		p := parts[rng.Intn(len(parts))]
		if p == `\` && rng.Intn(2) == 0 {
			continue // an odd run now and then, escaping the closing quote
		}
		w.WriteString(p)
	}
	w.WriteByte('"')
}

// mutate damages b now and then: a cut, a flipped byte, an inserted quote
// or backslash.
func mutate(rng *rand.Rand, b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	switch rng.Intn(6) {
	case 0:
		return b[:rng.Intn(len(b))]
	case 1:
		b[rng.Intn(len(b))] = `"\{}[],:x`[rng.Intn(9)]
	case 2:
		i := rng.Intn(len(b))
		return append(b[:i:i], append([]byte{`"\`[rng.Intn(2)]}, b[i:]...)...)
	}
	return b
}

// TestQuoteWalkMatchesScanWalk: the walk that finds string ends on the
// quote bitmap ends where the quote-by-quote walk ends, records the same
// containers, children and marker occurrences, and fails with the same
// error, over the corpus (golden bodies under every shape, fuzz seeds,
// bench bodies, odd markers, random conversations), the gateway bench's
// 1 KB to 200 KB bodies, and 20,000 random and damaged values (escapes,
// backslash runs across the 64-byte blocks, unicode, invalid bytes, deep
// nesting, cut and flipped bodies). And Parse gives the same prefix.
func TestQuoteWalkMatchesScanWalk(t *testing.T) {
	if _, ok := fingerprint.QuoteIndex(nil, nil); !ok {
		t.Skip("no quote bitmap on this CPU: the walk never uses it")
	}
	var bodies []namedBody
	bodies = append(bodies, cheapCorpus(t)...)
	for _, size := range []int{1 << 10, 8 << 10, 64 << 10, 200 << 10} {
		bodies = append(bodies, namedBody{fmt.Sprint("bench/", size), chat, benchbody.Chat(size, benchbody.Options{Model: "sim-small"})})
	}
	bodies = append(bodies, namedBody{"agent/200KB", messages, agentBody(200<<10, 300)})
	used := 0
	for _, nb := range bodies {
		if walkBoth(t, nb.name, nb.body) {
			used++
		}
		var scan, bit *Prefix
		var serr, berr error
		func() {
			noQuoteIndex = true
			defer func() { noQuoteIndex = false }()
			scan, serr = Parse(nb.shape, nb.body)
		}()
		func() {
			defer func(m int) { minQuoteIndex = m }(minQuoteIndex)
			minQuoteIndex = 0
			bit, berr = Parse(nb.shape, nb.body)
		}()
		if fmt.Sprint(serr) != fmt.Sprint(berr) {
			t.Fatalf("%s: Parse errors differ: %v, %v", nb.name, serr, berr)
		}
		if serr == nil {
			samePrefix(t, nb.name, scan, bit)
		}
	}
	rng := rand.New(rand.NewSource(12))
	errs := 0
	for n := 0; n < 20000; n++ {
		var w bytes.Buffer
		w.WriteString(strings.Repeat(" ", rng.Intn(64)))
		randJSON(rng, &w, 0)
		b := w.Bytes()
		if n%2 == 1 {
			b = mutate(rng, b)
		}
		if walkBoth(t, fmt.Sprint("random/", n), b) {
			used++
		}
		if _, err := skipValue(b, skipWS(b, 0), 0); err != nil {
			errs++
		}
	}
	if used < len(bodies)+20000-10 || errs < 2000 {
		t.Fatalf("bitmap used on %d inputs, %d invalid: the test did not test", used, errs)
	}
}

// FuzzQuoteWalk: the bitmap walk and the quote-by-quote walk agree on any
// input (see TestQuoteWalkMatchesScanWalk).
// Run: go test ./promptcache -run XXX -fuzz FuzzQuoteWalk
func FuzzQuoteWalk(f *testing.F) {
	fuzzSeeds(nil, func(_ uint8, b []byte) { f.Add(b) })
	f.Add([]byte(`{"a":"\\\"","b":["\\\\",{"c":"\u00e9\""}]}`))
	f.Add([]byte(`"` + strings.Repeat(`\\`, 40) + `\"` + `"`))
	f.Fuzz(func(t *testing.T, b []byte) { walkBoth(t, "fuzz", b) })
}

// quoteBitsSlow is fingerprint.QuoteIndex's definition, byte by byte.
func quoteBitsSlow(b []byte) []uint64 {
	q := make([]uint64, len(b)/64+1)
	run := 0
	for i, c := range b {
		if c == '"' && run%2 == 0 {
			q[i/64] |= 1 << (i % 64)
		}
		if c == '\\' {
			run++
		} else {
			run = 0
		}
	}
	return q
}

// TestQuoteIndexMatchesDefinition: fingerprint.QuoteIndex (tested here, beside
// its one user) against its definition on
// random bodies rich in quotes and backslash runs of every length (across
// the 64-byte block edges), every length from 0 to 300 and large ones, the
// buffer reused.
func TestQuoteIndexMatchesDefinition(t *testing.T) {
	if _, ok := fingerprint.QuoteIndex(nil, nil); !ok {
		t.Skip("no quote bitmap on this CPU")
	}
	rng := rand.New(rand.NewSource(1))
	alpha := []byte(`"\\\\a{}:, ` + "\x00\x1f\xff")
	var buf []uint64
	for n := 0; n < 2000; n++ {
		size := n % 301
		if n%100 == 0 {
			size = 5000 + rng.Intn(70000)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = alpha[rng.Intn(len(alpha))]
		}
		q, _ := fingerprint.QuoteIndex(b, buf)
		if want := quoteBitsSlow(b); !slices.Equal(q, want) {
			t.Fatalf("size %d: QuoteIndex differs from its definition", size)
		}
		buf = q
	}
}
