package promptcache

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/benchbody"
	"github.com/groundhog-ai/groundhog/sim"
)

// withFullPath runs fn with the index and the fast token count off (the
// prefix model as it was before them).
func withFullPath(fn func()) {
	fullPath = true
	defer func() { fullPath = false }()
	fn()
}

// TestCountTokensMatchesSim: the stage's token count equals
// sim.CountTokens on random text mixing ASCII words, every kind of space
// (ASCII, U+0085, U+00A0, U+2003, U+3000), control bytes, multi-byte
// letters, emoji and invalid UTF-8, at every length and alignment.
func TestCountTokensMatchesSim(t *testing.T) {
	pieces := []string{"a", "word", "longerword", "x1", "\"", "\\", "{", "}", ":", ",", " ", "  ", "\t", "\n", "\r\n", "\v", "\f",
		"\x00", "\x01", "\x1f", "\x7f", "\u0085", "\u00a0", "\u2003", "\u3000", "\u1680", "é", "日本", "🚀", "\xff", "\xc3", "\xe2\x80", "!"}
	rng := rand.New(rand.NewSource(1))
	n := 0
	for range 20000 {
		var b strings.Builder
		for k := rng.Intn(40); k > 0; k-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
			if rng.Intn(3) == 0 {
				b.WriteString(strings.Repeat("q", rng.Intn(20)))
			}
		}
		s := b.String()
		for off := 0; off < min(len(s), 9); off++ {
			if got, want := countTokens([]byte(s[off:])), sim.CountTokens(s[off:]); got != want {
				t.Fatalf("%q: countTokens %d, sim.CountTokens %d", s[off:], got, want)
			}
			n++
		}
	}
	for _, b := range cheapCorpus(t) {
		if got, want := countTokens(b.body), sim.CountTokens(string(b.body)); got != want {
			t.Fatalf("%s: countTokens %d, sim.CountTokens %d", b.name, got, want)
		}
	}
	if !utf8.ValidString(pieces[0]) || n == 0 {
		t.Fatal("no input")
	}
}

type namedBody struct {
	name  string
	shape groundhog.Shape
	body  []byte
}

// cheapCorpus: the golden bodies (under every shape), the fuzz seeds, the
// benchmark bodies, bodies with markers in odd places (inside strings,
// nested, as values) and a randomized conversation generator.
func cheapCorpus(t testing.TB) []namedBody {
	var out []namedBody
	add := func(name string, shape groundhog.Shape, b []byte) {
		out = append(out, namedBody{name, shape, append([]byte(nil), b...)})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if len(files) == 0 {
		t.Fatal("no golden bodies")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range fuzzShapes {
			add(filepath.Base(f)+"/"+string(shape), shape, b)
		}
	}
	fuzzSeeds(nil, func(s uint8, b []byte) { add(fmt.Sprint("seed/", s), fuzzShapes[int(s)%len(fuzzShapes)], b) })
	add("benchbody/1KB", chat, benchbody.Chat(1<<10, benchbody.Options{Model: "sim-small"}))
	add("benchbody/64KB", chat, benchbody.Chat(64<<10, benchbody.Options{Model: "sim-small", Stream: true}))
	add("agent/50KB", messages, agentBody(50<<10, 60))
	for i, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"say \"cache_control"},{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}],"cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"cache_control"}],"cache_control":{"type":"ephemeral"}}`,
		`{"model":"m","system":"cache_control","messages":[{"role":"user","cache_control":{"type":"ephemeral"},"content":[{"type":"text","text":"\"cache_control\""}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a \"prompt_cache_breakpoint","prompt_cache_breakpoint":{"mode":"explicit"}}]},{"type":"function_call_output","output":[{"type":"input_text","text":"o","prompt_cache_breakpoint":{}}]}],"prompt_cache_options":{"mode":"explicit","ttl":"1h"}}`,
		`{ "model" : "m" , "tools" : [ ] , "messages" : [ { "role" : "system" , "content" : "s\u00e9 \ud83d\ude80 \n\t x" } , { "role" : "user" , "content" : [ ] } ] }`,
		`{"model":"m","messages":[],"tools":[1,"x",{"name":"t"}],"functions":[{"name":"f","parameters":{"a":{"b":{"c":{"d":[{"e":"cache_control"}]}}}}}]}`,
		`{"model":"m","input":"just text \u2003 here","instructions":{"not":"a string"}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"model":"other"}`,
	} {
		for _, shape := range fuzzShapes {
			add(fmt.Sprintf("odd/%d/%s", i, shape), shape, []byte(s))
		}
	}
	for i, c := range randomConvos(rand.New(rand.NewSource(7)), 60) {
		add(fmt.Sprintf("random/%d/%s", i, c.shape), c.shape, c.body())
	}
	return out
}

// randomConvos returns n conversations of random shape, size and features
// (markers, images, tool choice, thinking, keys, explicit mode, volatile
// values, escapes and non-ASCII text).
func randomConvos(rng *rand.Rand, n int) []convo {
	texts := []string{"plain words here", "tab\tand\nnewline", "quote \" and \\ backslash", "é日本🚀\u00a0nbsp", "2026-12-01T09:00:00Z", "123e4567-e89b-12d3-a456-426614174000", "{\"json\":[1,2]}"}
	text := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteString(texts[rng.Intn(len(texts))])
			b.WriteString(" ")
			b.WriteString(words(fmt.Sprint("w", rng.Intn(9)), rng.Intn(30)))
		}
		return b.String()
	}
	var out []convo
	for range n {
		c := baseConvo(cacheShapes[rng.Intn(len(cacheShapes))])
		c.system = text(1+rng.Intn(40)) + c.system[:rng.Intn(len(c.system))]
		c.tools = c.tools[:rng.Intn(len(c.tools)+1)]
		for k := rng.Intn(12); k > 0; k-- {
			c.turns = append(c.turns, turn{user: text(1 + rng.Intn(8)), assistant: text(rng.Intn(6)), image: rng.Intn(5) == 0})
		}
		for k := range c.turns {
			if rng.Intn(4) == 0 {
				c.marks = append(c.marks, k)
			}
		}
		if rng.Intn(4) == 0 {
			c.toolChoice = "auto"
		}
		c.thinking = rng.Intn(5) == 0
		if rng.Intn(3) == 0 {
			c.key = fmt.Sprint("key", rng.Intn(2))
		}
		c.explicit = rng.Intn(3) == 0
		c.extraTools = rng.Intn(5) == 0
		out = append(out, c)
	}
	return out
}

// TestCheapPathPrefixEqualsFullPath: over the corpus, the prefix model of
// the cheap path (one indexed walk, marker occurrences from the walk,
// the fast token count) is field for field the full path's, errors too,
// with and without an earlier prompt as the hint.
func TestCheapPathPrefixEqualsFullPath(t *testing.T) {
	for _, nb := range cheapCorpus(t) {
		var full, fullHinted *Prefix
		var ferr, fherr error
		var rec *promptRec
		withFullPath(func() {
			full, ferr = Parse(nb.shape, nb.body)
			if ferr == nil {
				rec = record(full, rulesFor(full), newClock().Now())
				fullHinted, fherr = parse(nb.shape, nb.body, "", func(*Prefix) *promptRec { return rec }, nil)
			}
		})
		cheap, cerr := Parse(nb.shape, nb.body)
		if fmt.Sprint(ferr) != fmt.Sprint(cerr) {
			t.Fatalf("%s: errors differ: full %v, cheap %v", nb.name, ferr, cerr)
		}
		if ferr != nil {
			continue
		}
		samePrefix(t, nb.name, full, cheap)
		cheapHinted, cherr := parse(nb.shape, nb.body, "", func(*Prefix) *promptRec { return rec }, nil)
		if fmt.Sprint(fherr) != fmt.Sprint(cherr) {
			t.Fatalf("%s hinted: errors differ: %v, %v", nb.name, fherr, cherr)
		}
		samePrefix(t, nb.name+" hinted", fullHinted, cheapHinted)
	}
}

func samePrefix(t *testing.T, name string, a, b *Prefix) {
	t.Helper()
	if a.Shape != b.Shape || a.Model != b.Model || a.CacheKey != b.CacheKey || a.Tokens != b.Tokens || a.NotApplicable != b.NotApplicable ||
		a.Markers != b.Markers || a.AutoMarker != b.AutoMarker || a.Explicit != b.Explicit || a.TTL != b.TTL || a.root != b.root ||
		len(a.Segments) != len(b.Segments) || len(a.fields) != len(b.fields) {
		t.Fatalf("%s: prefixes differ:\nfull  %+v\ncheap %+v", name, *a, *b)
	}
	for i := range a.fields {
		if string(a.fields[i].key) != string(b.fields[i].key) || a.fields[i].val != b.fields[i].val {
			t.Fatalf("%s: field %d (%s) differs", name, i, a.fields[i].key)
		}
	}
	for i := range a.Segments {
		if a.Segments[i] != b.Segments[i] {
			t.Fatalf("%s: segment %d differs:\nfull  %+v\ncheap %+v", name, i, a.Segments[i], b.Segments[i])
		}
	}
}

// TestCheapPathVerdictsEqualFullPath: the same sequence of calls through
// two stages, one on the full path and one on the cheap path, gives the
// same bodies, diagnoses, verdicts, shared prefixes and state: random
// conversations that grow, get edited, change tools, model, key and
// clock, plus every corpus body, with usage that sometimes reads what was
// expected and sometimes less.
func TestCheapPathVerdictsEqualFullPath(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	full := &Stage{Tracker: NewTracker(Config{Clock: clock, MaxChains: 50, PromptsPerChain: 3})}
	cheap := &Stage{Tracker: NewTracker(Config{Clock: clock, MaxChains: 50, PromptsPerChain: 3})}
	rng := rand.New(rand.NewSource(11))
	var reqs []*Request
	base := randomConvos(rng, 40)
	for step := range 600 {
		c := base[rng.Intn(len(base))]
		switch rng.Intn(8) {
		case 0, 1, 2:
			c = c.next(step)
		case 3:
			if len(c.turns) > 1 {
				c.turns = append([]turn(nil), c.turns...)
				c.turns[rng.Intn(len(c.turns))].user += " edited"
			}
		case 4:
			if len(c.tools) > 1 {
				c.tools = append([]tool(nil), c.tools...)
				c.tools[0], c.tools[1] = c.tools[1], c.tools[0]
			}
		case 5:
			c.system = "Now " + clock.Now().Format(time.RFC3339) + ". " + c.system
		case 6:
			c.model = []string{"sim-small", "sim-large", "claude-sonnet-4-5", "gpt-4o-mini"}[rng.Intn(4)]
		case 7:
			c.key = fmt.Sprint("key", rng.Intn(3))
		}
		base[rng.Intn(len(base))] = c
		reqs = append(reqs, &Request{Tenant: fmt.Sprint("t", rng.Intn(2)), Operation: fmt.Sprint("op", rng.Intn(2)), Shape: c.shape, Body: c.body(),
			Breakpoints: rng.Intn(2) == 0, CacheKey: rng.Intn(3) == 0, App: "app"})
	}
	for _, nb := range cheapCorpus(t) {
		reqs = append(reqs, &Request{Tenant: "t0", Operation: "op0", Shape: nb.shape, Body: nb.body, Breakpoints: true})
	}
	causes := map[Cause]int{}
	for i, req := range reqs {
		var pf *Pending
		withFullPath(func() { pf = full.Before(ctx, req, true) })
		pc := cheap.Before(ctx, req, true)
		if string(pf.Body) != string(pc.Body) || (pf.call == nil) != (pc.call == nil) {
			t.Fatalf("request %d: bodies or parse outcome differ", i)
		}
		if pf.call == nil {
			continue
		}
		a, b := pf.call, pc.call
		if a.Injected != b.Injected || a.Key != b.Key || a.Diagnosis != b.Diagnosis || a.chainKey != b.chainKey {
			t.Fatalf("request %d: calls differ:\nfull  %+v %+v\ncheap %+v %+v", i, a.Diagnosis, a.Injected, b.Diagnosis, b.Injected)
		}
		ca, oka := a.sharedPrefix()
		cb, okb := b.sharedPrefix()
		if ca != cb || oka != okb {
			t.Fatalf("request %d: shared prefix differs", i)
		}
		u := groundhog.Usage{InputTokens: int64(a.prefix.Tokens) + int64(rng.Intn(50))}
		switch rng.Intn(3) {
		case 0:
			u.CachedInputTokens = int64(a.Diagnosis.Expected)
		case 1:
			u.CachedInputTokens = int64(a.Diagnosis.Expected) / 2
		}
		var of Outcome
		withFullPath(func() { of = full.After(ctx, pf, u) })
		oc := cheap.After(ctx, pc, u)
		if of != oc {
			t.Fatalf("request %d: outcomes differ: full %+v, cheap %+v", i, of, oc)
		}
		if oc.Break {
			causes[oc.Cause]++
		}
		pf.Done()
		pc.Done()
		clock.Advance(time.Duration(rng.Intn(400)) * time.Second)
	}
	if len(causes) < 5 {
		t.Fatalf("the sequence exercises too few causes: %v", causes)
	}
	t.Logf("breaks by cause: %v", causes)
	if full.Tracker.Bytes() != cheap.Tracker.Bytes() || full.Tracker.Chains() != cheap.Tracker.Chains() {
		t.Fatalf("state differs: %d/%d bytes, %d/%d chains", full.Tracker.Bytes(), cheap.Tracker.Bytes(), full.Tracker.Chains(), cheap.Tracker.Chains())
	}
}
