package promptcache

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

var geminiShape = groundhog.ShapeGemini

// geminiConvo is baseConvo on the Gemini shape, on a Flash model, with a
// longer system instruction: the simulator counts a function declaration's
// name and parameters, not its description, and the prompt must pass its
// 1,024-token minimum all the same.
func geminiConvo() convo {
	c := baseConvo(geminiShape)
	c.model = "gemini-2.5-flash"
	c.system += " " + words("gsys", 600)
	return c
}

// The Gemini prefix model: cachedContent, function declarations,
// toolConfig, systemInstruction parts, then one segment per part of each
// content, in the order the provider renders the prompt; proto field
// names (snake_case) give the same segments and tokens; no member is a
// marker, and injection leaves the body as it is.
func TestGeminiParse(t *testing.T) {
	camel := []byte(`{"cachedContent":"cachedContents/abc","tools":[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT"}},{"name":"b"}]},{"googleSearch":{}}],` +
		`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"systemInstruction":{"parts":[{"text":"You are terse."},{"text":"Answer in French."}]},` +
		`"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},{"parts":[{"functionResponse":{"name":"a","response":{"n":42}}}]}],` +
		`"generationConfig":{"maxOutputTokens":10}}`)
	snake := []byte(`{"cached_content":"cachedContents/abc","tools":[{"function_declarations":[{"name":"a","parameters":{"type":"OBJECT"}},{"name":"b"}]},{"googleSearch":{}}],` +
		`"tool_config":{"functionCallingConfig":{"mode":"ANY"}},"system_instruction":{"parts":[{"text":"You are terse."},{"text":"Answer in French."}]},` +
		`"contents":[{"role":"user","parts":[{"text":"hi"},{"inline_data":{"mimeType":"image/png","data":"AAAA"}}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},{"parts":[{"functionResponse":{"name":"a","response":{"n":42}}}]}],` +
		`"generation_config":{"maxOutputTokens":10}}`)
	a, err := ParseModel(geminiShape, "gemini-2.5-flash", camel)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range a.Segments {
		paths = append(paths, a.Segments[i].Kind.String()+":"+a.Segments[i].Path())
	}
	want := "parameters:cachedContent tool:tools[0].functionDeclarations[0] tool:tools[0].functionDeclarations[1] tool:tools[1] tool:toolConfig " +
		"instructions:systemInstruction.parts[0] instructions:systemInstruction.parts[1] " +
		"message:contents[0].parts[0] image:contents[0].parts[1] message:contents[1].parts[0] message:contents[2].parts[0]"
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("segments\n got %s\nwant %s", got, want)
	}
	if a.Model != "gemini-2.5-flash" || a.Markers != 0 || a.Tokens <= 0 {
		t.Fatalf("model %q markers %d tokens %d", a.Model, a.Markers, a.Tokens)
	}
	for _, i := range []int{0, 4} {
		if s := a.Segments[i]; s.End != s.Start {
			t.Errorf("%s holds %d tokens, want none (a setting, not prompt text)", s.Path(), s.End-s.Start)
		}
	}
	// The text of a part is counted, not its JSON: "You are terse." is 4
	// tokens after the framing.
	if s := a.Segments[5]; s.End-s.Start != sim.MessageOverhead+sim.CountTokens("You are terse.") {
		t.Errorf("systemInstruction.parts[0]: %d tokens", s.End-s.Start)
	}
	if !a.Segments[8].turnEnd || a.Segments[7].turnEnd || a.Segments[9].turnEnd || !a.Segments[10].turnEnd {
		t.Error("user turn ends misplaced (a content without a role is the user's)")
	}
	for i, s := range a.Segments {
		if s.markable || s.Marker {
			t.Errorf("segment %d (%s) markable %v marker %v: Gemini has no markers", i, s.Path(), s.markable, s.Marker)
		}
	}
	b, err := ParseModel(geminiShape, "gemini-2.5-flash", snake)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Segments) != len(a.Segments) || b.Tokens != a.Tokens {
		t.Fatalf("proto names: %d segments, %d tokens; JSON names %d, %d", len(b.Segments), b.Tokens, len(a.Segments), a.Tokens)
	}
	out, err := Inject(geminiShape, "gemini-2.5-flash", camel, Options{TTL: "1h"})
	if err != nil || string(out) != string(camel) {
		t.Fatalf("injection changed a Gemini body (%v):\n%s", err, out)
	}
	// The full path (no index, sim.CountTokens) gives the same model.
	fullPath = true
	c, err := ParseModel(geminiShape, "gemini-2.5-flash", camel)
	fullPath = false
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Segments {
		if a.Segments[i].Chain != c.Segments[i].Chain || a.Segments[i].End != c.Segments[i].End {
			t.Fatalf("segment %d differs on the full path", i)
		}
	}
	for _, bad := range []string{`{"contents":[1]}`, `{"contents":["hi"]}`, `[]`, `{"contents":[{"parts":[{"text":"x"}]}]} x`} {
		if _, err := ParseModel(geminiShape, "gemini-2.5-flash", []byte(bad)); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}

// groundhog's minimum cacheable prefix of each Gemini model is the one the
// simulated provider enforces: 1,024 tokens on Flash and Flash-Lite,
// 4,096 on Pro.
func TestGeminiMinTokens(t *testing.T) {
	for _, m := range []string{"gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-flash-001", "gemini-3-flash-preview",
		"gemini-2.5-pro", "gemini-2.5-pro-002", "gemini-3-pro-preview", "gemini-3.1-pro-preview", "gemini-pro-latest"} {
		want := sim.GeminiMinTokens
		if gemini.Tiered(m) {
			want = sim.GeminiProMinTokens
		}
		r := ModelRules(geminiShape, m)
		if r.MinTokens != want {
			t.Errorf("%s: groundhog's minimum %d, the provider's %d", m, r.MinTokens, want)
		}
		if r.MaxBreakpoints != 0 || r.Step == 0 {
			t.Errorf("%s: rules %+v, want implicit caching without markers", m, r)
		}
	}
}

// One case per cause that exists on Gemini: a conversation is warmed up
// against the simulated provider without a break, then one request breaks
// reuse in one way, and the verdict names exactly that cause. Where the
// simulator does not model a rule (toolConfig and cachedContent do not key
// its implicit cache; it serves no cachedContent), the provider's answer is
// given by the test.
func TestGeminiCauses(t *testing.T) {
	cases := []struct {
		name    string
		cause   Cause
		pattern string
		run     func(g *rig, c convo) (Result, *Call)
	}{
		{"tools reordered", CauseToolsReordered, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = []tool{c.tools[2], c.tools[0], c.tools[1]}
			return g.do(c, nil)
		}},
		// A renamed function (the simulator counts a declaration's name
		// and parameters, not its description).
		{"function declaration changed", CauseToolsChanged, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = append([]tool(nil), c.tools...)
			c.tools[1].name = "lookup_order"
			return g.do(c, nil)
		}},
		{"toolConfig changed", CauseToolsChanged, "", func(g *rig, c convo) (Result, *Call) {
			c.toolChoice = "AUTO"
			g.ok(c)
			c = c.next(1)
			c.toolChoice = "ANY"
			return g.do(c, read(512))
		}},
		{"systemInstruction changed", CauseInstructionsChanged, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.system = "You are a friendly support agent. " + c.system
			return g.do(c, nil)
		}},
		{"timestamp", CauseVolatileInPrefix, "iso_timestamp", func(g *rig, c convo) (Result, *Call) {
			sys := c.system
			c.system = "Now: 2026-12-01T09:00:00Z. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Now: 2026-12-01T09:00:30Z. " + sys
			return g.do(c, nil)
		}},
		{"uuid", CauseVolatileInPrefix, "uuid", func(g *rig, c convo) (Result, *Call) {
			sys := c.system
			c.system = "Trace 123e4567-e89b-12d3-a456-426614174000. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Trace 9f8e7d6c-e89b-12d3-a456-426614174999. " + sys
			return g.do(c, nil)
		}},
		{"model", CauseModelChanged, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.model = "gemini-2.5-flash-lite"
			return g.do(c, nil)
		}},
		{"history", CauseHistoryEdited, "", func(g *rig, c convo) (Result, *Call) {
			c = c.next(1)
			g.ok(c)
			c = c.next(2)
			g.ok(c)
			c = c.next(3)
			c.turns[1].user = "Edited: " + c.turns[1].user
			return g.do(c, nil)
		}},
		{"image added", CauseParametersChanged, "", func(g *rig, c convo) (Result, *Call) {
			c = c.next(1).next(2)
			g.ok(c)
			c = c.next(3)
			c.turns = append([]turn(nil), c.turns...)
			c.turns[1].image = true
			return g.do(c, nil)
		}},
		{"cachedContent changed", CauseParametersChanged, "", func(g *rig, c convo) (Result, *Call) {
			c.cached = "cachedContents/v1"
			g.do(c, read(0))
			g.do(c.next(1), read(1024))
			c = c.next(1).next(2)
			c.cached = "cachedContents/v2"
			return g.do(c, read(0))
		}},
		{"ttl", CauseTTLGap, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.clock.Advance(6 * time.Minute)
			return g.do(c.next(1), nil)
		}},
		{"short", CauseBelowMinimum, "", func(g *rig, c convo) (Result, *Call) {
			c.tools = nil
			c.system = "You are brief. " + words("s", 600)
			g.do(c, nil)
			return g.do(c.next(1), nil)
		}},
		{"provider lost it", CauseProviderMiss, "", func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.sim = sim.New(sim.Config{Clock: g.clock})
			return g.do(c.next(1), nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, true) // breakpoints asked for: a no-op on Gemini
			res, call := tc.run(g, geminiConvo())
			if call.Injected != 0 || string(call.Body) != string(call.prefix.body) && call.prefix.body != nil {
				t.Fatalf("Gemini body rewritten: %d breakpoints injected", call.Injected)
			}
			if !res.Break || res.Cause != tc.cause || res.Pattern != tc.pattern {
				t.Fatalf("verdict %+v, want cause %s pattern %q (diagnosis %+v)", res, tc.cause, tc.pattern, call.Diagnosis)
			}
			if res.Lost != res.Expected-res.Read || res.Lost <= 0 {
				t.Fatalf("lost tokens %d, want expected %d − read %d", res.Lost, res.Expected, res.Read)
			}
		})
	}
}

// A growing Gemini conversation against the simulated provider never
// reports a break, and from the second turn on the provider reads at least
// the tools and system instruction; Groundhog-Prompt-Cache-Key: auto is
// left alone (Gemini has no key) and does not turn the diagnosis off.
func TestGeminiStableLoopNoBreak(t *testing.T) {
	g := newRig(t, true)
	c := geminiConvo()
	var reads []int64
	for i := 1; i <= 6; i++ {
		call, err := g.tr.Before(context.Background(), &Request{Tenant: g.tenant, Operation: g.op, Shape: geminiShape, Model: c.model, Body: c.body(), Breakpoints: true, CacheKey: true})
		if err != nil {
			t.Fatal(err)
		}
		if string(call.Body) != string(c.body()) || call.Key != "" {
			t.Fatalf("turn %d: body rewritten (key %q)", i, call.Key)
		}
		u := callSimModel(t, g.sim, geminiShape, c.model, "k", call.Body)
		if res := g.tr.After(context.Background(), call, u); res.Break {
			t.Fatalf("turn %d: break %+v (diagnosis %+v)", i, res, call.Diagnosis)
		}
		if i > 1 && call.Diagnosis.Expected == 0 {
			t.Fatalf("turn %d: nothing expected", i)
		}
		reads = append(reads, u.CachedInputTokens)
		c = c.next(i)
	}
	for i := 1; i < len(reads); i++ {
		if reads[i] < int64(sim.GeminiMinTokens) {
			t.Errorf("turn %d read %d tokens: %v", i+1, reads[i], reads)
		}
	}
}

// geminiSeeds are the seed bodies of FuzzGeminiParse (also written to
// testdata/fuzz by TestFuzzCorpus -update).
func geminiSeeds(add func(body []byte)) {
	c := geminiConvo().next(1)
	c.toolChoice, c.cached = "ANY", "cachedContents/abc"
	c.turns[0].image = true
	add(c.body())
	small := c
	small.tools, small.system, small.toolChoice, small.cached = nil, "hi", "", ""
	add(small.body())
	add([]byte(`{"tools":[{"googleSearch":{}},{"function_declarations":[{"name":"a"}]},{"functionDeclarations":null},{"functionDeclarations":{}}],"tool_config":{},"system_instruction":{"role":"system","parts":[]},"contents":[{"parts":[{"text":""},{"file_data":{"fileUri":"u"}}]},{"role":"model"},{"role":null,"parts":"x"}]}`))
	add([]byte(`{"contents":[{"role":"user","parts":[{"text":"Now: 2026-12-01T09:00:00Z \u00e9\\n"}]}],"systemInstruction":{"parts":[{"text":"trace 123e4567-e89b-12d3-a456-426614174000"}]},"cachedContent":null}`))
	add([]byte(`{"contents":[{"role":"user","parts":[{"prompt_cache_breakpoint":{},"cache_control":{},"cachePoint":{},"text":"x"}]}]}`))
}

// Run: go test ./promptcache -run XXX -fuzz FuzzGeminiParse -fuzzminimizetime 1x
//
// FuzzGeminiParse: no panic; a parsed body's segments tile its tokens in
// order (each starts where the one before ends, the last ends at the
// prompt's total), carry no marker, and are the same on the full path;
// no breakpoint is ever injected; and the request-side diagnosis of a body
// against itself names no cause.
func FuzzGeminiParse(f *testing.F) {
	geminiSeeds(func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParseModel(geminiShape, "gemini-2.5-flash", body)
		out, ierr := Inject(geminiShape, "gemini-2.5-flash", body, Options{TTL: "1h"})
		if err != nil {
			if ierr == nil {
				t.Fatal("Inject accepted a body Parse rejects")
			}
			return
		}
		if ierr != nil || string(out) != string(body) {
			t.Fatalf("Inject changed a Gemini body (%v)", ierr)
		}
		at := 0
		for i, s := range p.Segments {
			if s.Start != at || s.End < s.Start || s.Marker || s.markable || s.Path() == "" {
				t.Fatalf("segment %d %s: [%d,%d) after %d, marker %v", i, s.Path(), s.Start, s.End, at, s.Marker)
			}
			at = s.End
		}
		if at != p.Tokens || p.Markers != 0 {
			t.Fatalf("segments end at %d of %d tokens; %d markers", at, p.Tokens, p.Markers)
		}
		var full *Prefix
		var ferr error
		withFullPath(func() { full, ferr = ParseModel(geminiShape, "gemini-2.5-flash", body) })
		if ferr != nil {
			t.Fatalf("the full path rejects a body the index parses: %v", ferr)
		}
		samePrefix(t, "gemini", full, p)
		tr := NewTracker(Config{Clock: newClock()})
		req := &Request{Tenant: "t", Operation: "o", Shape: geminiShape, Model: "gemini-2.5-flash", Body: body, Breakpoints: true, CacheKey: true}
		c, err := tr.Before(context.Background(), req)
		if err != nil || string(c.Body) != string(body) {
			t.Fatalf("Before: %v, body changed %v", err, string(c.Body) != string(body))
		}
		tr.After(context.Background(), c, groundhog.Usage{InputTokens: int64(p.Tokens)})
		c, err = tr.Before(context.Background(), req)
		if err != nil || c.Diagnosis.Cause != "" && c.Diagnosis.Cause != CauseBelowMinimum {
			t.Fatalf("the same body again: %v, cause %q", err, c.Diagnosis.Cause)
		}
	})
}
