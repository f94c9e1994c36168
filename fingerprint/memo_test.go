package fingerprint_test

import (
	"bytes"
	"fmt"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// A memo answers exactly what Compute answers: for the body it remembers,
// for the same body under other params, for a body differing by one byte,
// for invalid bodies (never remembered), and after the caller reuses the
// buffer it passed in (the memo keeps its own copy).
func TestMemoEqualsCompute(t *testing.T) {
	m := fingerprint.NewMemo(0, 1024)
	body := benchbody.Chat(64<<10, benchbody.Options{})
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t1", Versions: "v=1"}
	check := func(name string, p fingerprint.Params, b []byte) {
		t.Helper()
		want, werr := fingerprint.Compute(p, b)
		got, gerr := m.Compute(p, b)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: memo %+v %v, Compute %+v %v", name, got, gerr, want, werr)
		}
	}
	check("first sight", p, body)
	check("second sight", p, body)
	check("third sight", p, body)
	if s := m.Stats(); s.Hits != 1 || s.Misses != 2 {
		t.Fatalf("stats after three sights = %+v, want 1 hit (the third) and 2 misses", s)
	}
	// The places of top-level values: remembered with the rest, for the
	// same bytes only (a different one is checked below).
	top := p
	top.Top = fingerprint.NewNames("user", "model", "tools", "stream")
	check("top, first sight", top, body)
	check("top, second sight", top, body)
	check("top, third sight", top, body)
	if r, _ := m.Compute(top, body); r.Top[0] == (fingerprint.Span{}) || r.Top[2].End-r.Top[2].Start < 1024 {
		t.Fatalf("top-level values not located from memory: %v", r.Top)
	}
	for _, q := range []fingerprint.Params{
		{Shape: groundhog.ShapeChat, Tenant: "t2", Versions: "v=1"},
		{Shape: groundhog.ShapeChat, Tenant: "t1", Versions: "v=2"},
		{Shape: groundhog.ShapeChat, Tenant: "t1"},
		{Shape: groundhog.ShapeResponses, Tenant: "t1", Versions: "v=1"},
	} {
		check(fmt.Sprintf("params %+v", q), q, body)
	}
	// One byte changed inside a string: another request.
	other := append([]byte(nil), body...)
	i := len(other) / 2
	for other[i] < 'a' || other[i] > 'y' {
		i++
	}
	other[i]++
	check("one byte changed", p, other)
	check("one byte changed, top", top, other)
	// The caller's buffer reused for another body after the call.
	buf := append([]byte(nil), body...)
	check("buffer before reuse", p, buf)
	copy(buf, other)
	check("buffer after reuse", p, buf)
	check("original still", p, body)
	// Invalid bodies: the same error every time, never remembered.
	bad := append(append([]byte(nil), body[:len(body)-1]...), ',')
	check("invalid", p, bad)
	check("invalid again", p, bad)
	// Small bodies bypass the memo.
	small := []byte(`{"model":"m","messages":[]}`)
	before := m.Stats()
	check("small", p, small)
	if m.Stats() != before {
		t.Errorf("a small body went through the memo")
	}
}

func TestMemoNilAndDisabled(t *testing.T) {
	body := benchbody.Chat(32<<10, benchbody.Options{})
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
	want, _ := fingerprint.Compute(p, body)
	for _, m := range []*fingerprint.Memo{nil, fingerprint.NewMemo(-1, 0)} {
		if got, err := m.Compute(p, body); err != nil || got != want {
			t.Errorf("memo %v: %+v %v, want %+v", m, got, err, want)
		}
	}
}

// Bodies that differ only where the sampled key does not look share it:
// every answer stays Compute's (the byte comparison decides), a stream of
// such bodies sent once each costs no copy, and bodies of such a family
// sent again are still answered from memory (the key is split: they are
// found by every byte).
func TestMemoSampledKeyShared(t *testing.T) {
	m := fingerprint.NewMemo(0, 1024)
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
	body := benchbody.Chat(200<<10, benchbody.Options{})
	// A run of eight digits inside the middle of the body that the
	// sampled key does not read: the variants below differ only there.
	at := -1
	for i := len(body) / 2; i < len(body)*3/4 && at < 0; i++ {
		if !isLetters(body[i : i+8]) {
			continue
		}
		v := append([]byte(nil), body...)
		copy(v[i:], "00000000")
		if m.SampledKey(p, v) == m.SampledKey(p, body) {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no unsampled run of letters in the middle of the body")
	}
	variant := func(n int) []byte {
		v := append([]byte(nil), body...)
		copy(v[at:], fmt.Sprintf("%08d", n))
		return v
	}
	check := func(name string, b []byte) {
		t.Helper()
		want, werr := fingerprint.Compute(p, b)
		got, gerr := m.Compute(p, b)
		if got != want || werr != nil || gerr != nil {
			t.Fatalf("%s: memo %+v %v, Compute %+v %v", name, got, gerr, want, werr)
		}
	}
	for n := range 50 {
		check(fmt.Sprintf("variant %d", n), variant(n))
	}
	if s, held := m.Stats(), m.HeldBytes(); s.Hits != 0 || held != 0 {
		t.Fatalf("50 different bodies sent once: stats %+v, %d bytes held; want no hit and no copy", s, held)
	}
	// Two of the family sent again, alternately: each is copied at its
	// second sight and answered from memory from its third.
	before := m.Stats()
	for range 4 {
		check("variant 100", variant(100))
		check("variant 101", variant(101))
	}
	if s := m.Stats(); s.Hits-before.Hits != 4 {
		t.Fatalf("two bodies sent four times each: %d hits, want 4 (the third and fourth sights)", s.Hits-before.Hits)
	}
	if held := m.HeldBytes(); held != 2*len(body) {
		t.Fatalf("%d bytes held, want the two bodies (%d)", held, 2*len(body))
	}
}

func isLetters(b []byte) bool {
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// Bounded: bodies beyond the budget push older ones out, and whatever is
// remembered or not, the answers stay Compute's. Concurrent callers (run
// with -race) sharing bodies.
func TestMemoBoundedAndConcurrent(t *testing.T) {
	m := fingerprint.NewMemo(256<<10, 1024) // room for about three 64 KB bodies
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
	bodies := make([][]byte, 12)
	want := make([]fingerprint.Result, len(bodies))
	for i := range bodies {
		bodies[i] = benchbody.Chat(64<<10, benchbody.Options{Model: fmt.Sprintf("model-%d", i)})
		want[i], _ = fingerprint.Compute(p, bodies[i])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 60 {
				i := (g + n) % len(bodies)
				if got, err := m.Compute(p, bodies[i]); err != nil || got != want[i] {
					t.Errorf("body %d: %+v %v, want %+v", i, got, err, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := m.Stats(); s.Hits+s.Misses != 8*60 {
		t.Errorf("stats %+v, want %d look-ups", s, 8*60)
	}
}

// BenchmarkMemo measures Memo.Compute at 1 KB and 200 KB: "compute" is
// Compute alone, "hit" a body remembered before (the hit path's repeat),
// "miss" a new body each time (its first sight: what the memo adds to a
// body sent once, Compute included). The miss body differs from the last in
// eight bytes of its first message, written in place in one buffer as the
// gateway reuses its read buffers.
func BenchmarkMemo(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"200KB", 200 << 10}} {
		body := benchbody.Chat(size.n, benchbody.Options{})
		p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}
		b.Run(size.name+"/compute", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = fingerprint.Compute(p, body)
			}
		})
		b.Run(size.name+"/hit", func(b *testing.B) {
			m := fingerprint.NewMemo(0, 0)
			_, _ = m.Compute(p, body)
			_, _ = m.Compute(p, body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = m.Compute(p, body)
			}
			if s := m.Stats(); s.Hits < uint64(b.N) {
				b.Fatalf("stats %+v: want %d hits", s, b.N)
			}
		})
		b.Run(size.name+"/miss", func(b *testing.B) {
			m := fingerprint.NewMemo(0, 0)
			buf := append([]byte(nil), body...)
			at := bytes.Index(buf, []byte(`"content":"`)) + len(`"content":"`)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			v := 0
			for b.Loop() {
				v++
				for i, d := 0, v; i < 8; i, d = i+1, d/10 {
					buf[at+7-i] = byte('0' + d%10)
				}
				if _, err := m.Compute(p, buf); err != nil {
					b.Fatal(err)
				}
			}
			if s := m.Stats(); s.Hits != 0 {
				b.Fatalf("stats %+v: want no hit", s)
			}
		})
	}
}

// Memo hits run the memo's maintenance on the caller's goroutine: 200 000
// hits start no goroutine for it, where otter's default executor starts one
// per drain of its read buffers (hundreds here). The bound allows a few
// goroutines of the runtime or the test framework; no time is asserted. The
// memo is sized so that its 64 bodies fill most of it: otter records reads
// (and drains them) only in a cache that is more than half full.
func TestMemoHitsStartNoGoroutine(t *testing.T) {
	m := fingerprint.NewMemo(20000, 64)
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t1"}
	bodies := make([][]byte, 64)
	want := make([]fingerprint.Result, len(bodies))
	for i := range bodies {
		bodies[i] = []byte(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"memo %d, long enough to be remembered"}]}`, i))
		for range 3 { // remembered from the second sight, answered from the third
			r, err := m.Compute(p, bodies[i])
			if err != nil {
				t.Fatal(err)
			}
			want[i] = r
		}
	}
	hits := m.Stats().Hits
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	for i := range 200000 {
		if r, err := m.Compute(p, bodies[i%len(bodies)]); err != nil || r != want[i%len(bodies)] {
			t.Fatalf("hit %d: %+v %v, want %+v", i, r, err, want[i%len(bodies)])
		}
	}
	metrics.Read(s)
	if n := s[0].Value.Uint64() - before; n > 10 {
		t.Fatalf("200000 memo hits started %d goroutines, want (about) none", n)
	}
	if got := m.Stats().Hits - hits; got != 200000 {
		t.Fatalf("%d of 200000 computes were memo hits", got)
	}
}

// Notes a caller sets on a body are handed back for those exact bytes and
// params only: never on a first sight (no copy to hold them), never for a
// body that differs by one byte or comes with other params, never for an
// invalid or small body.
func TestMemoNotesFollowTheExactBytes(t *testing.T) {
	m := fingerprint.NewMemo(0, 1024)
	body := benchbody.Chat(64<<10, benchbody.Options{})
	p := fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t1"}
	const bit = 1 << 3
	// sight computes b through the memo (checking it against Compute) and
	// returns the notes' bits, and whether there were notes.
	sight := func(name string, p fingerprint.Params, b []byte) (uint32, bool) {
		t.Helper()
		res, notes, err := m.ComputeNoted(p, b)
		want, werr := fingerprint.Compute(p, b)
		if res != want || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("%s: %+v %v, Compute %+v %v", name, res, err, want, werr)
		}
		if notes == nil {
			return 0, false
		}
		return notes.Load(), true
	}
	if _, ok := sight("first sight", p, body); ok {
		t.Fatal("notes on a first sight: the memo holds no copy of the body yet")
	}
	_, notes, err := m.ComputeNoted(p, body)
	if err != nil || notes == nil {
		t.Fatalf("second sight: notes %v, %v; want the copy's notes", notes, err)
	}
	notes.Or(bit)
	if got, ok := sight("third sight", p, bytes.Clone(body)); !ok || got&bit == 0 {
		t.Fatalf("third sight of the same bytes: notes %b (%v), want the bit set on the second", got, ok)
	}
	other := bytes.Clone(body)
	i := len(other) / 2
	for other[i] < 'a' || other[i] > 'y' {
		i++
	}
	other[i]++
	for k := range 3 {
		if got, _ := sight(fmt.Sprintf("one byte changed, sight %d", k+1), p, other); got&bit != 0 {
			t.Fatalf("a body one byte different carries the note of the original (sight %d)", k+1)
		}
	}
	for k := range 3 {
		if got, _ := sight(fmt.Sprintf("other params, sight %d", k+1), fingerprint.Params{Shape: groundhog.ShapeResponses, Tenant: "t1"}, body); got&bit != 0 {
			t.Fatalf("the same bytes under other params carry the note (sight %d)", k+1)
		}
	}
	bad := append(append([]byte(nil), body[:len(body)-1]...), ',')
	for range 3 {
		if _, ok := sight("invalid", p, bad); ok {
			t.Fatal("notes for an invalid body")
		}
	}
	small := []byte(`{"model":"m","messages":[]}`)
	for range 3 {
		if _, ok := sight("small", p, small); ok {
			t.Fatal("notes for a body below the memo's minimum")
		}
	}
	var none *fingerprint.Memo
	if _, n, err := none.ComputeNoted(p, body); n != nil || err != nil {
		t.Fatalf("nil memo: notes %v, %v", n, err)
	}
}
