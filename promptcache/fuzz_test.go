package promptcache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

var fuzzShapes = []groundhog.Shape{groundhog.ShapeMessages, groundhog.ShapeResponses, groundhog.ShapeChat, groundhog.ShapeEmbeddings}

func fuzzSeeds(_ *testing.F, add func(shape uint8, body []byte)) {
	for i, shape := range []groundhog.Shape{messages, responses, chat} {
		c := baseConvo(shape).next(1)
		c.marks = []int{0}
		add(uint8(i), c.body())
		small := c
		small.tools, small.system = nil, "hi"
		add(uint8(i), small.body())
	}
	add(0, []byte(`{"model":"sim-small","system":"s","messages":[{"role":"user","content":"x"}],"cache_control":{"type":"ephemeral"}}`))
	add(0, []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"","cache_control":{}},{"type":"tool_result","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}]}`))
	add(1, []byte(`{"input":[{"type":"function_call_output","output":[{"type":"input_text","text":"o"}]},{"type":"additional_tools","tools":[]}]}`))
}

// Run: go test ./promptcache -run XXX -fuzz FuzzInject -fuzzminimizetime 1x
// (the seeds are large: minimizing each new input at the default 60 s
// stalls the fuzzer).
//
// FuzzInject: no panic; an injected body parses, keeps every prefix hash
// and the request hash, and never carries more markers than the provider
// allows (when the client's own were within it).
func FuzzInject(f *testing.F) {
	fuzzSeeds(f, func(s uint8, b []byte) { f.Add(s, b) })
	f.Fuzz(func(t *testing.T, s uint8, body []byte) {
		shape := fuzzShapes[int(s)%len(fuzzShapes)]
		p, err := Parse(shape, body)
		out, ierr := Inject(shape, "", body, Options{})
		if err != nil {
			if ierr == nil {
				t.Fatal("Inject accepted a body Parse rejects")
			}
			return
		}
		if ierr != nil {
			t.Fatalf("Inject failed on a parsed body: %v", ierr)
		}
		q, err := Parse(shape, out)
		if err != nil {
			t.Fatalf("injected body does not parse: %v\n%s", err, out)
		}
		if len(q.Segments) != len(p.Segments) {
			t.Fatal("segment count changed")
		}
		for i := range p.Segments {
			if p.Segments[i].Chain != q.Segments[i].Chain {
				t.Fatalf("prefix hash of %s changed", p.Segments[i].Path())
			}
		}
		limit := ModelRules(shape, p.Model).MaxBreakpoints
		if p.Markers <= limit && q.Markers > limit {
			t.Fatalf("%d markers after injection, limit %d", q.Markers, limit)
		}
		if shape == groundhog.ShapeMessages {
			fa, err := fingerprint.Compute(fingerprint.Params{Shape: shape}, body)
			if err == nil {
				fb, err := fingerprint.Compute(fingerprint.Params{Shape: shape}, out)
				if err != nil || fa.Hash != fb.Hash {
					t.Fatalf("fingerprint changed: %v", err)
				}
			}
		}
		if !bytes.Equal(out, body) && shape == groundhog.ShapeChat {
			t.Fatal("chat body changed")
		}
	})
}

// FuzzDiff: no panic; a body diffed with itself matches; a diff's ranges
// lie inside its values.
func FuzzDiff(f *testing.F) {
	fuzzSeeds(f, func(s uint8, b []byte) { f.Add(s, b, bytes.Replace(b, []byte("s1"), []byte("s2"), 1)) })
	f.Fuzz(func(t *testing.T, s uint8, a, b []byte) {
		shape := fuzzShapes[int(s)%len(fuzzShapes)]
		GuessShape(a)
		res, err := Diff(shape, a, b)
		if err != nil {
			return
		}
		if res.DiffA[0] > res.DiffA[1] || res.DiffA[1] > len(res.A) || res.DiffB[0] > res.DiffB[1] || res.DiffB[1] > len(res.B) {
			t.Fatalf("diff ranges %v %v outside %q %q", res.DiffA, res.DiffB, res.A, res.B)
		}
		self, err := Diff(shape, a, a)
		if err != nil || !self.Match {
			t.Fatalf("a body differs from itself: %v %+v", err, self)
		}
	})
}

// TestFuzzCorpus writes the seeds as files under testdata/fuzz with
// -update (go test runs them as part of every plain test run too).
func TestFuzzCorpus(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/fuzz")
	}
	n := 0
	write := func(target string, args ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		text := "go test fuzz v1\n" + strings.Join(args, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", n)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	fuzzSeeds(nil, func(s uint8, b []byte) {
		write("FuzzInject", fmt.Sprintf("byte(%q)", rune(s)), "[]byte("+strconv.Quote(string(b))+")")
		write("FuzzDiff", fmt.Sprintf("byte(%q)", rune(s)), "[]byte("+strconv.Quote(string(b))+")",
			"[]byte("+strconv.Quote(string(bytes.Replace(b, []byte("s1"), []byte("s2"), 1)))+")")
	})
	converseSeeds(func(b []byte) { write("FuzzConverseInject", "[]byte("+strconv.Quote(string(b))+")") })
	geminiSeeds(func(b []byte) { write("FuzzGeminiParse", "[]byte("+strconv.Quote(string(b))+")") })
}
