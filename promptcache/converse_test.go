package promptcache

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

var converse = groundhog.ShapeConverse

// converseHash is the request hash of a Converse body as the gateway
// computes it (the path's model joins it, cachePoint blocks do not).
func converseHash(t testing.TB, model string, body []byte) string {
	t.Helper()
	fb, err := bedrock.FingerprintBody(model, body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fingerprint.Compute(fingerprint.Params{Shape: converse, Tenant: "t"}, fb)
	if err != nil {
		t.Fatal(err)
	}
	return r.Hash
}

// The Converse prefix model: tools, system, messages in Bedrock's order; a
// client's cachePoint block is no segment but marks the block before it,
// counts against the limit and leaves every hash as it was.
func TestConverseParse(t *testing.T) {
	plain := []byte(`{"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{}}}},{"toolSpec":{"name":"b","inputSchema":{"json":{}}}}],"toolChoice":{"auto":{}}},` +
		`"system":[{"text":"You are terse."}],` +
		`"messages":[{"role":"user","content":[{"text":"hi"},{"image":{"format":"png","source":{"bytes":"AAAA"}}}]},{"role":"assistant","content":[{"text":"hello"}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"42"}]}}]}]}`)
	marked := []byte(`{"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{}}}},{"toolSpec":{"name":"b","inputSchema":{"json":{}}}},{"cachePoint":{"type":"default"}}],"toolChoice":{"auto":{}}},` +
		`"system":[{"text":"You are terse."},{"cachePoint":{"type":"default","ttl":"1h"}}],` +
		`"messages":[{"role":"user","content":[{"text":"hi"},{"image":{"format":"png","source":{"bytes":"AAAA"}}}]},{"role":"assistant","content":[{"text":"hello"}]},{"role":"user","content":[{"cachePoint":{"type":"default"}},{"toolResult":{"toolUseId":"t1","content":[{"text":"42"}]}}]}]}`)
	a, err := ParseModel(converse, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseModel(converse, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", marked)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range a.Segments {
		paths = append(paths, a.Segments[i].Kind.String()+":"+a.Segments[i].Path())
	}
	want := "tool:toolConfig.tools[0] tool:toolConfig.tools[1] instructions:system[0] message:messages[0].content[0] image:messages[0].content[1] message:messages[1].content[0] message:messages[2].content[0]"
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("segments\n got %s\nwant %s", got, want)
	}
	if a.Model != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" || a.Markers != 0 || a.Tokens <= 0 {
		t.Fatalf("model %q markers %d tokens %d", a.Model, a.Markers, a.Tokens)
	}
	if len(b.Segments) != len(a.Segments) || b.Tokens != a.Tokens {
		t.Fatalf("cachePoints changed the segments: %d→%d, tokens %d→%d", len(a.Segments), len(b.Segments), a.Tokens, b.Tokens)
	}
	for i := range a.Segments {
		if a.Segments[i].Chain != b.Segments[i].Chain {
			t.Fatalf("%s: a cachePoint changed the prefix hash", a.Segments[i].Path())
		}
	}
	if got := markerPaths(t, converse, marked); strings.Join(got, " ") != "toolConfig.tools[1] system[0] messages[1].content[0]" {
		t.Fatalf("marked segments %v", got)
	}
	if b.Markers != 3 || b.TTL != time.Hour {
		t.Fatalf("markers %d ttl %s, want 3 and 1h", b.Markers, b.TTL)
	}
	if !b.Segments[6].turnEnd || b.Segments[3].turnEnd || !b.Segments[4].turnEnd {
		t.Fatal("user turn ends misplaced")
	}
	// The model in a body (none in Converse) would win over the path's.
	if p, _ := ParseModel(converse, "m", []byte(`{"messages":[]}`)); p.Model != "m" {
		t.Fatalf("model %q", p.Model)
	}
}

// Injection on a Converse body inserts cachePoint blocks after the chosen
// blocks (after the system prompt, after the newest user turn), keeps
// every other byte, the prefix hashes and the request hash, and counts the
// client's own cachePoints against the limit of four.
func TestConverseInject(t *testing.T) {
	c := baseConvo(converse)
	for i := 1; i <= 3; i++ {
		c = c.next(i)
	}
	body := c.body()
	out, err := Inject(converse, "sim-small", body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := markerPaths(t, converse, out); strings.Join(got, " ") != "system[0] messages[6].content[0]" {
		t.Fatalf("injected at %v", got)
	}
	if !bytes.Contains(out, []byte(`"system":[{"text":"`+c.system+`"},{"cachePoint":{"type":"default"}}]`)) {
		t.Fatalf("no cachePoint after the system prompt: %s", out)
	}
	if n := bytes.Count(out, []byte(`{"cachePoint":{"type":"default"}}`)); n != 2 {
		t.Fatalf("%d cachePoints", n)
	}
	if !bytes.Equal(bytes.ReplaceAll(out, []byte(`,{"cachePoint":{"type":"default"}}`), nil), body) {
		t.Fatal("injection changed bytes other than the inserted cachePoints")
	}
	sameFingerprint(t, converse, body, out)
	if a, b := converseHash(t, "sim-small", body), converseHash(t, "sim-small", out); a != b {
		t.Fatalf("request hash %s → %s", a, b)
	}
	// Three of the client's own: one more fits, none past four.
	c.marks = []int{0, 1, 2}
	body = c.body()
	out, err = Inject(converse, "sim-small", body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(converse, out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Markers != 4 {
		t.Fatalf("%d cachePoints with three of the client's, want 4", p.Markers)
	}
	// 1h when asked and the client has none.
	c.marks = nil
	out, _ = Inject(converse, "sim-small", c.body(), Options{TTL: "1h"})
	if !bytes.Contains(out, []byte(`{"cachePoint":{"type":"default","ttl":"1h"}}`)) {
		t.Fatalf("no 1h cachePoint: %s", out)
	}
	// Under the model's minimum: nothing.
	small := baseConvo(converse)
	small.tools, small.system = nil, "Be brief."
	if out, _ := Inject(converse, "sim-small", small.body(), Options{}); !bytes.Equal(out, small.body()) {
		t.Fatalf("a short prompt got cachePoints: %s", out)
	}
}

// Six turns of a Converse agent loop with injected cachePoints against the
// simulated Bedrock: every request is accepted (never a fifth cachePoint),
// turns 2–6 read the prefix, nothing is diagnosed as a break, and the
// request hash is the client body's.
func TestConverseAgentLoop(t *testing.T) {
	g := newRig(t, true)
	c := baseConvo(converse)
	for i := 1; i <= 6; i++ {
		if i > 1 {
			c = c.next(i)
		}
		body := c.body()
		call, err := g.tr.Before(context.Background(), &Request{Tenant: g.tenant, Operation: g.op, Shape: converse, Model: c.model, Body: body, Breakpoints: true})
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(call.Body, []byte(`"cachePoint"`)); n == 0 || n > 4 {
			t.Fatalf("turn %d: %d cachePoints", i, n)
		}
		if converseHash(t, c.model, body) != converseHash(t, c.model, call.Body) {
			t.Fatalf("turn %d: injection changed the request hash", i)
		}
		u := callSimModel(t, g.sim, converse, c.model, "k", call.Body) // fails on a 400
		res := g.tr.After(context.Background(), call, u)
		if res.Break {
			t.Fatalf("turn %d: break %+v", i, res)
		}
		if i > 1 && (u.CachedInputTokens == 0 || res.Expected == 0) {
			t.Fatalf("turn %d: read %d, expected %d", i, u.CachedInputTokens, res.Expected)
		}
		t.Logf("turn %d: read %d write %d of %d (expected %d)", i, u.CachedInputTokens, u.CacheWriteTokens, u.InputTokens, res.Expected)
	}
}

// Each cause the Converse prefix can show, against the simulated Bedrock
// with injected cachePoints (the client's own for breakpoint_moved).
func TestConverseCauses(t *testing.T) {
	cases := []struct {
		name    string
		cause   Cause
		pattern string
		inject  bool
		run     func(g *rig, c convo) (Result, *Call)
	}{
		{"tools_reordered", CauseToolsReordered, "", true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = []tool{c.tools[2], c.tools[0], c.tools[1]}
			return g.do(c, nil)
		}},
		{"tools_changed", CauseToolsChanged, "", true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = append([]tool(nil), c.tools...)
			c.tools[1].desc += " Now also by email."
			return g.do(c, nil)
		}},
		{"instructions_changed", CauseInstructionsChanged, "", true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.system = "You are a friendly support agent. " + c.system
			return g.do(c, nil)
		}},
		{"volatile_in_prefix", CauseVolatileInPrefix, "iso_timestamp", true, func(g *rig, c convo) (Result, *Call) {
			sys := c.system
			c.system = "Now: 2026-12-01T09:00:00Z. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Now: 2026-12-01T09:00:30Z. " + sys
			return g.do(c, nil)
		}},
		{"model_changed", CauseModelChanged, "", true, func(g *rig, c convo) (Result, *Call) {
			c.system += " " + words("big", 1300)
			g.ok(c)
			c = c.next(1)
			c.model = "sim-large"
			return g.do(c, nil)
		}},
		{"history_edited", CauseHistoryEdited, "", true, func(g *rig, c convo) (Result, *Call) {
			c = c.next(1)
			g.ok(c)
			c = c.next(2)
			g.ok(c)
			c = c.next(3)
			c.turns[1].user = "Edited: " + c.turns[1].user
			return g.do(c, nil)
		}},
		{"ttl_gap", CauseTTLGap, "", true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.clock.Advance(6 * time.Minute)
			return g.do(c.next(1), nil)
		}},
		{"breakpoint_moved", CauseBreakpointMoved, "", false, func(g *rig, c convo) (Result, *Call) {
			c.marks = []int{0}
			g.ok(c)
			c = c.next(1)
			c.marks = nil // the client dropped its cachePoint
			return g.do(c, nil)
		}},
		{"provider_miss", CauseProviderMiss, "", true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.sim = sim.New(sim.Config{Clock: g.clock})
			return g.do(c.next(1), nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, tc.inject)
			res, call := tc.run(g, baseConvo(converse))
			if !res.Break || res.Cause != tc.cause || res.Pattern != tc.pattern {
				t.Fatalf("verdict %+v, want cause %s pattern %q (diagnosis %+v)", res, tc.cause, tc.pattern, call.Diagnosis)
			}
			if res.Lost != res.Expected-res.Read || res.Lost <= 0 {
				t.Fatalf("lost tokens %d, want expected %d − read %d", res.Lost, res.Expected, res.Read)
			}
		})
	}
}

// The minimum prefix of a Bedrock model id is its Anthropic model's: the
// region prefix and the vendor are not part of the name the table knows;
// a prompt_cache.min_tokens override matches either name.
func TestConverseMinTokens(t *testing.T) {
	for model, want := range map[string]int{
		"us.anthropic.claude-haiku-4-5-20251001-v1:0":                                  4096,
		"anthropic.claude-sonnet-4-5-20250929-v1:0":                                    1024,
		"eu.anthropic.claude-3-5-haiku-20241022-v1:0":                                  2048,
		"global.anthropic.claude-opus-4-5-20251101-v1":                                 4096,
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-4-6": 2048,
		"sim-large":                2048,
		"us.sim.converse-small-v1": 1024,
	} {
		if r := ModelRules(converse, model); r.MinTokens != want || r.MaxBreakpoints != 4 || r.Lookback != 20 || r.TTL != 5*time.Minute {
			t.Errorf("%s: rules %+v, want minimum %d", model, r, want)
		}
	}
	if r := modelRules(converse, "us.anthropic.claude-sonnet-4-6", map[string]int{"claude-sonnet-4-6": 4096}); r.MinTokens != 4096 {
		t.Errorf("override by base name: %d", r.MinTokens)
	}
}

// converseSeeds are the seed bodies of FuzzConverseInject (also written to
// testdata/fuzz by TestFuzzCorpus -update).
func converseSeeds(add func(body []byte)) {
	c := baseConvo(converse).next(1)
	add(c.body())
	c.marks = []int{0, 1}
	add(c.body())
	small := c
	small.tools, small.system = nil, "hi"
	add(small.body())
	add([]byte(`{"system":[{"text":"a"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"cachePoint":{}},{"text":"b"}]}],"toolConfig":{"tools":[{"cachePoint":{"type":"default"}}]}}`))
	add([]byte(`{"messages":[{"role":"user","content":[{"toolUse":{"toolUseId":"x","name":"n","input":{"cachePoint":1}}},{"text":""},{"reasoningContent":{}}]},{"role":"user","content":"s"},{"role":"user","content":[]}]}`))
	add([]byte(`{"toolConfig":{"tools":[{"toolSpec":{"name":"a"}},{"cachePoint":{"type":"default","ttl":"1h"}},{"cachePoint":{"type":"default"}},{"cachePoint":{"type":"default"}},{"cachePoint":{"type":"default"}},{"cachePoint":{"type":"default"}}]},"system":[{"text":"` + words("s", 1100) + `"}],"messages":[{"role":"user","content":[{"text":"q"}]}]}`))
}

// Run: go test ./promptcache -run XXX -fuzz FuzzConverseInject -fuzzminimizetime 1x
//
// FuzzConverseInject: no panic; Inject fails exactly where Parse does; an
// injected body parses to the same prefix hashes, differs from the
// client's only by the inserted cachePoint blocks, never carries more than
// four cachePoints (when the client's own were within the limit), and
// keeps the request hash.
func FuzzConverseInject(f *testing.F) {
	converseSeeds(func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParseModel(converse, "sim-small", body)
		out, ierr := Inject(converse, "sim-small", body, Options{})
		if err != nil {
			if ierr == nil {
				t.Fatal("Inject accepted a body Parse rejects")
			}
			return
		}
		if ierr != nil {
			t.Fatalf("Inject failed on a parsed body: %v", ierr)
		}
		q, err := ParseModel(converse, "sim-small", out)
		if err != nil {
			t.Fatalf("injected body does not parse: %v\n%s", err, out)
		}
		if len(q.Segments) != len(p.Segments) || q.Tokens != p.Tokens {
			t.Fatal("segments changed")
		}
		for i := range p.Segments {
			if p.Segments[i].Chain != q.Segments[i].Chain {
				t.Fatalf("prefix hash of %s changed", p.Segments[i].Path())
			}
		}
		limit := ModelRules(converse, "sim-small").MaxBreakpoints
		if p.Markers <= limit && q.Markers > limit {
			t.Fatalf("%d cachePoints after injection, limit %d", q.Markers, limit)
		}
		added := q.Markers - p.Markers
		if added < 0 || len(out)-len(body) != added*len(","+converseMarker) {
			t.Fatalf("%d cachePoints added, body grew by %d bytes", added, len(out)-len(body))
		}
		if fa, err := bedrock.FingerprintBody("sim-small", body); err == nil {
			fb, err := bedrock.FingerprintBody("sim-small", out)
			if err != nil {
				t.Fatalf("the fingerprint rejects the injected body: %v", err)
			}
			ha, erra := fingerprint.Compute(fingerprint.Params{Shape: converse}, fa)
			hb, errb := fingerprint.Compute(fingerprint.Params{Shape: converse}, fb)
			if (erra == nil) != (errb == nil) || erra == nil && ha.Hash != hb.Hash {
				t.Fatalf("request hash changed: %v %v", erra, errb)
			}
		}
	})
}

// The indexed walk and the full path give the same Converse prefix model.
func TestConverseCheapPathEqualsFullPath(t *testing.T) {
	var bodies [][]byte
	converseSeeds(func(b []byte) { bodies = append(bodies, b) })
	c := baseConvo(converse)
	for i := 1; i <= 5; i++ {
		c = c.next(i)
		c.turns[i].image = i%2 == 0
		c.marks = []int{i - 1}
		bodies = append(bodies, c.body())
	}
	for i, b := range bodies {
		var full *Prefix
		var ferr error
		withFullPath(func() { full, ferr = ParseModel(converse, "sim-small", b) })
		cheap, cerr := ParseModel(converse, "sim-small", b)
		if (ferr == nil) != (cerr == nil) {
			t.Fatalf("body %d: errors differ: full %v, cheap %v", i, ferr, cerr)
		}
		if ferr == nil {
			samePrefix(t, fmt.Sprint("converse ", i), full, cheap)
		}
	}
}
