package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sim"
)

// Eight subagents start together over one shared 10,000-token system prompt
// that the provider has not cached (an Anthropic cache_control breakpoint
// on it, so the sim bills the write). With warm-then-fan-out the gateway
// sends the first upstream and holds the other seven until it has started
// answering: the sim's bill shows the prefix written once and read seven
// times. With Groundhog-Fan-Out: off all eight reach the provider together
// and each writes it.
func TestFanOutWritesSharedPrefixOnce(t *testing.T) {
	prefix := "You coordinate eight research subagents. " + words(10000, "prefix")
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			g := newGate()
			held := make(chan struct{}, 16)
			// No pre-warm: the gate keeps the first request in the provider's
			// prefill as long as the test likes, where a real provider would
			// have written the prefix long before the pre-warm's time.
			fan := fanout.New(fanout.Config{OnHold: func() { held <- struct{}{} }, PrewarmAfter: -1})
			// The gate holds each call in the provider's prefill, after its
			// cache look-up: calls that reach the provider together all miss.
			var spans sync.Map // request hash → it had a fan-out hold span
			onRow := func(e groundhog.LedgerEntry, stages []groundhog.Stage) {
				for _, st := range stages {
					if st.Name == "groundhog.fan_out_hold" && !st.End.Before(st.Start) {
						spans.Store(e.RequestHash, true)
					}
				}
			}
			h := newHarness(t, withFanOut(fan), func(s *setup) {
				s.sim.FirstToken, s.sim.Sleep, s.onRow = time.Millisecond, g.sleep, onRow
			})
			an := anthropicClient(h)
			var wg sync.WaitGroup
			res := make([]*http.Response, 8)
			msgs := make([]*anthropic.Message, 8)
			errs := make([]error, 8)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					opts := []aoption.RequestOption{aoption.WithHeader("Groundhog-Operation", "subagents"), aoption.WithResponseInto(&res[i])}
					if mode == "off" {
						opts = append(opts, aoption.WithHeader("Groundhog-Fan-Out", "off"))
					}
					msgs[i], errs[i] = an.Messages.New(context.Background(), anthropic.MessageNewParams{
						Model: "sim-small", MaxTokens: 50,
						System: []anthropic.TextBlockParam{{Text: prefix, CacheControl: anthropic.NewCacheControlEphemeralParam()}},
						Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(
							fmt.Sprintf("Subtask %d: research topic %d in depth.", i, i)))},
					}, opts...)
				}()
			}
			if mode == "on" {
				<-g.arrived // the first reaches the provider's prefill…
				for range 7 {
					<-held // …the seven others wait in the gateway
				}
			} else {
				for range 8 {
					<-g.arrived // all eight reach the provider before it answers
				}
			}
			g.open()
			wg.Wait()
			var p int64 // the breakpoint's prefix, as the provider counts it
			for i, err := range errs {
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				p = max(p, msgs[i].Usage.CacheReadInputTokens+msgs[i].Usage.CacheCreationInputTokens)
			}
			if p < 10000 {
				t.Fatalf("shared prefix is %d tokens, want ≥ 10,000", p)
			}
			bill := readFullBill(t, h)
			t.Logf("fan-out %s: prefix %d tokens; sim bill writes %d reads %d input_usd %s", mode, p, bill.CacheWriteTokens, bill.CachedInputTokens, bill.InputUSD)
			rows := h.ledgerRows()
			var heldRows int
			for _, r := range rows {
				if r.FanOutHeld {
					heldRows++
				}
			}
			if mode == "on" {
				if bill.CacheWriteTokens > p*11/10 || bill.CachedInputTokens < 7*p {
					t.Errorf("fan-out on: bill writes %d, reads %d; want the %d-token prefix written once (≤ 1.1×) and read 7 times", bill.CacheWriteTokens, bill.CachedInputTokens, p)
				}
				if heldRows != 7 {
					t.Errorf("%d ledger rows say fan_out_held, want 7", heldRows)
				}
				for _, r := range rows {
					if _, ok := spans.Load(r.RequestHash); ok != r.FanOutHeld {
						t.Errorf("row %s: held %v, fan-out hold span %v", r.RequestHash, r.FanOutHeld, ok)
					}
				}
				reads := 0
				for _, r := range res {
					if rd, wr := pcHeader(t, r); rd == p && wr == 0 {
						reads++
					}
				}
				if reads != 7 {
					t.Errorf("%d responses say read=%d write=0, want 7", reads, p)
				}
			} else {
				if bill.CacheWriteTokens < 8*p || bill.CachedInputTokens != 0 {
					t.Errorf("fan-out off: bill writes %d, reads %d; want the %d-token prefix written 8 times", bill.CacheWriteTokens, bill.CachedInputTokens, p)
				}
				if heldRows != 0 {
					t.Errorf("%d rows held with Groundhog-Fan-Out: off", heldRows)
				}
			}
			if err := h.Ledger.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if mode == "on" {
				want = 7
			}
			if pc := rep.Total.PromptCache; pc.FanOutHeld != want || pc.FanOutWriteTokensAvoided != want*p {
				t.Errorf("report fan_out_held %d, write tokens avoided %d; want %d and %d", pc.FanOutHeld, pc.FanOutWriteTokensAvoided, want, want*p)
			}
		})
	}
}

// A held request is never failed by the hold: when the first request's
// answer is slow past the maximum hold, the others go upstream anyway.
func TestFanOutMaxHoldSendsUpstream(t *testing.T) {
	g := newGate()
	held := make(chan struct{}, 4)
	timer := make(chan time.Time)
	fan := fanout.New(fanout.Config{OnHold: func() { held <- struct{}{} }, After: func(time.Duration) <-chan time.Time { return timer },
		PrewarmAfter: -1}) // the maximum hold alone
	h := newHarness(t, withGate(g), withFanOut(fan))
	body := func(i int) []byte {
		c := baseAgent(groundhog.ShapeMessages)
		c.marks = []int{-1}
		c.turns = []pcTurn{{user: fmt.Sprintf("subtask %d", i)}}
		return c.body()
	}
	done := make(chan *http.Response, 2)
	go func() { done <- sdkSend(t, h, groundhog.ShapeMessages, body(0), nil) }()
	<-g.arrived
	go func() { done <- sdkSend(t, h, groundhog.ShapeMessages, body(1), nil) }()
	<-held
	timer <- time.Time{} // the maximum hold passes while the first is still waiting for its answer
	<-g.arrived          // so the second goes upstream too
	g.open()
	for range 2 {
		if r := <-done; r.StatusCode != 200 {
			t.Fatalf("status %d", r.StatusCode)
		}
	}
	if b := readFullBill(t, h); b.Calls != 2 {
		t.Fatalf("the provider got %d calls, want 2", b.Calls)
	}
}

// evictable is the sim's prefix cache with a switch that makes the
// provider lose every entry (an eviction groundhog cannot see).
type evictable struct {
	mu sync.Mutex
	c  sim.PrefixCache
}

func (e *evictable) get() sim.PrefixCache {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c
}

func (e *evictable) Lookup(scope, model string, p []sim.PrefixPoint, now time.Time) int {
	return e.get().Lookup(scope, model, p, now)
}

func (e *evictable) Store(scope, model string, w []sim.PrefixWrite, now time.Time) int {
	return e.get().Store(scope, model, w, now)
}

func (e *evictable) evict() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.c = sim.NewPrefixCache(0)
}

// pcRig runs one conversation through the gateway with an official SDK.
type pcRig struct {
	t     *testing.T
	h     *harness
	clock *testClock
	cache *evictable
	hdr   map[string]string
}

func newPCRig(t *testing.T, inject bool) *pcRig {
	g := &pcRig{t: t, clock: newTestClock(), cache: &evictable{c: sim.NewPrefixCache(0)},
		hdr: map[string]string{"Groundhog-Operation": "support"}}
	if inject {
		g.hdr["Groundhog-Prompt-Cache-Breakpoints"] = "auto"
	}
	g.h = newHarness(t, withClock(g.clock), func(s *setup) { s.sim.PrefixCache = g.cache })
	return g
}

func (g *pcRig) send(c pcConvo) *http.Response {
	g.t.Helper()
	res := sdkSend(g.t, g.h, c.shape, c.body(), g.hdr)
	pcHeader(g.t, res) // on every call the provider answered
	return res
}

// ok sends c and fails on a break header.
func (g *pcRig) ok(c pcConvo) {
	g.t.Helper()
	if res := g.send(c); res.Header.Get("Groundhog-Prompt-Cache-Break") != "" {
		g.t.Fatalf("unexpected break %q (%s)", res.Header.Get("Groundhog-Prompt-Cache-Break"), res.Header.Get("Groundhog-Prompt-Cache"))
	}
}

// One case per break cause the simulated provider can produce, end to end:
// a conversation is warmed up through the gateway without a break, then one
// request breaks reuse in one way. The response names the cause in
// Groundhog-Prompt-Cache-Break, the ledger row has it with the lost tokens,
// and the report lists it with that request's hash as the example.
func TestPromptCacheBreaksThroughGateway(t *testing.T) {
	chat, resp, msgs := groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages
	cases := []struct {
		cause  string
		shape  groundhog.Shape
		inject bool
		run    func(g *pcRig, c pcConvo) *http.Response
	}{
		{"tools_reordered", msgs, true, func(g *pcRig, c pcConvo) *http.Response {
			g.ok(c)
			c = c.next(1)
			c.tools = []pcTool{c.tools[2], c.tools[0], c.tools[1]}
			return g.send(c)
		}},
		{"tools_changed", chat, false, func(g *pcRig, c pcConvo) *http.Response {
			g.ok(c)
			c = c.next(1)
			c.tools = append([]pcTool(nil), c.tools...)
			c.tools[1].desc += " Now also by email."
			return g.send(c)
		}},
		{"instructions_changed", resp, false, func(g *pcRig, c pcConvo) *http.Response {
			g.ok(c)
			c = c.next(1)
			c.system = "You are a friendly support agent. " + c.system
			return g.send(c)
		}},
		{"volatile_in_prefix", msgs, true, func(g *pcRig, c pcConvo) *http.Response {
			sys := c.system
			c.system = "Now: 2026-12-01T09:00:00Z. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Now: 2026-12-01T09:00:30Z. " + sys
			return g.send(c)
		}},
		{"model_changed", chat, false, func(g *pcRig, c pcConvo) *http.Response {
			c.system += " " + words(1300, "big") // over sim-large's 2,048 minimum
			g.ok(c)
			c = c.next(1)
			c.model = "sim-large"
			return g.send(c)
		}},
		{"history_edited", msgs, true, func(g *pcRig, c pcConvo) *http.Response {
			c = c.next(1)
			g.ok(c)
			c = c.next(2)
			g.ok(c)
			c = c.next(3)
			c.turns[1].user = "Edited: " + c.turns[1].user
			return g.send(c)
		}},
		{"parameters_changed", msgs, true, func(g *pcRig, c pcConvo) *http.Response {
			c = c.next(1).next(2)
			g.ok(c)
			c = c.next(3)
			c.turns = append([]pcTurn(nil), c.turns...)
			c.turns[1].image = true // an image added to an earlier turn
			return g.send(c)
		}},
		{"cache_key_changed", chat, false, func(g *pcRig, c pcConvo) *http.Response {
			c.key = "session-1"
			g.ok(c)
			g.ok(c.next(1))
			// A new session with its own key: the same tools and
			// instructions, but a separate provider cache scope.
			c.key = "session-2"
			c.turns = []pcTurn{{user: "Where is my refund? " + words(60, "w")}}
			return g.send(c)
		}},
		{"ttl_gap", msgs, true, func(g *pcRig, c pcConvo) *http.Response {
			g.ok(c)
			g.clock.Advance(6 * time.Minute) // past the 5-minute TTL
			return g.send(c.next(1))
		}},
		{"below_minimum", chat, false, func(g *pcRig, c pcConvo) *http.Response {
			c.tools = nil
			c.system = "You are brief. " + words(600, "s")
			g.send(c)
			return g.send(c.next(1))
		}},
		{"no_breakpoint", msgs, false, func(g *pcRig, c pcConvo) *http.Response {
			// A prompt far above the minimum whose earlier turn had no
			// breakpoint: nothing was stored to reuse.
			c.marks = nil
			g.send(c)
			return g.send(c.next(1))
		}},
		{"breakpoint_moved", msgs, false, func(g *pcRig, c pcConvo) *http.Response {
			c.marks = []int{0}
			g.ok(c)
			c = c.next(1)
			c.marks = nil // the client dropped its breakpoint
			return g.send(c)
		}},
		{"lookback_exceeded", msgs, false, func(g *pcRig, c pcConvo) *http.Response {
			c.marks = []int{0}
			g.ok(c)
			for i := 1; i <= 12; i++ { // 24 more blocks
				c = c.next(i)
			}
			c.marks = []int{12}
			return g.send(c)
		}},
		{"provider_miss", chat, false, func(g *pcRig, c pcConvo) *http.Response {
			g.ok(c)
			g.cache.evict() // the provider lost its cache
			return g.send(c.next(1))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.cause+"/"+string(tc.shape), func(t *testing.T) {
			g := newPCRig(t, tc.inject)
			res := tc.run(g, baseAgent(tc.shape))
			if got := res.Header.Get("Groundhog-Prompt-Cache-Break"); got != tc.cause {
				t.Fatalf("Groundhog-Prompt-Cache-Break = %q, want %q (%s)", got, tc.cause, res.Header.Get("Groundhog-Prompt-Cache"))
			}
			hash := res.Header.Get("Groundhog-Request-Hash")
			var row *groundhog.LedgerEntry
			for _, r := range g.h.ledgerRows() {
				if r.RequestHash == hash {
					row = &r
				}
			}
			if row == nil || row.PromptCacheBreak != tc.cause || row.PromptCacheLostTokens <= 0 {
				t.Fatalf("ledger row %+v, want cause %s with lost tokens", row, tc.cause)
			}
			rep, err := ledger.BuildReport(context.Background(), g.h.DB, ledger.ReportParams{Day: g.clock.Now()})
			if err != nil {
				t.Fatal(err)
			}
			br := rep.Total.PromptCache.Breaks
			if len(br) != 1 || br[0].Cause != tc.cause || br[0].Calls != 1 || br[0].ExampleRequestHash != hash || br[0].UncachedTokens != row.PromptCacheLostTokens {
				t.Fatalf("report prompt_cache_breaks %+v, want one %s break, example %s", br, tc.cause, hash)
			}
		})
	}
}

// An agent loop whose prefix never changes reports no break over 20 turns,
// in each shape, while reads grow.
func TestPromptCacheStablePrefixNoBreak(t *testing.T) {
	for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages} {
		t.Run(string(shape), func(t *testing.T) {
			g := newPCRig(t, shape == groundhog.ShapeMessages)
			c := baseAgent(shape)
			var lastRead int64
			for i := range 20 {
				if i > 0 {
					c = c.next(i)
				}
				res := g.send(c)
				if v := res.Header.Get("Groundhog-Prompt-Cache-Break"); v != "" {
					t.Fatalf("turn %d: break %q on an unchanged prefix", i, v)
				}
				read, _ := pcHeader(t, res)
				if i > 0 && read <= lastRead {
					t.Fatalf("turn %d read %d, not more than the turn before (%d)", i, read, lastRead)
				}
				lastRead = read
			}
			for _, r := range g.h.ledgerRows() {
				if r.PromptCacheBreak != "" {
					t.Fatalf("ledger row with break %q", r.PromptCacheBreak)
				}
			}
		})
	}
}

// A mixed workload through the gateway — chat and responses with OpenAI
// automatic caching, responses in explicit mode with injected breakpoints
// and in implicit mode with a client breakpoint, messages with injected
// breakpoints and with a client 1-hour breakpoint, and breaks of several
// causes (tools_reordered, instructions_changed, history_edited, ttl_gap,
// provider_miss) — and every prompt-cache figure of the report equals the
// sim's bill to the micro-dollar; the report lists each break the
// responses named.
func TestPromptCacheMixedWorkloadReportEqualsSimBill(t *testing.T) {
	g := newPCRig(t, false)
	// One operation per agent: a chain is per (tenant, operation, model).
	inject := func(op string) map[string]string {
		return map[string]string{"Groundhog-Operation": op, "Groundhog-Prompt-Cache-Breakpoints": "auto"}
	}
	plain := func(op string) map[string]string { return map[string]string{"Groundhog-Operation": op} }
	breaks := map[string]int64{}
	sendBody := func(shape groundhog.Shape, b []byte, hdr map[string]string) (read, write int64) {
		t.Helper()
		res := sdkSend(t, g.h, shape, b, hdr)
		if v := res.Header.Get("Groundhog-Prompt-Cache-Break"); v != "" {
			breaks[v]++
		}
		return pcHeader(t, res)
	}
	send := func(c pcConvo, hdr map[string]string) { t.Helper(); sendBody(c.shape, c.body(), hdr) }
	// chat, automatic caching: three turns, then the tools reordered.
	c := baseAgent(groundhog.ShapeChat)
	send(c, plain("chat"))
	send(c.next(1), plain("chat"))
	c = c.next(1).next(2)
	c.tools = []pcTool{c.tools[1], c.tools[0], c.tools[2]}
	send(c, plain("chat"))
	// responses, explicit mode with injected breakpoints, then the
	// instructions changed.
	r := baseAgent(groundhog.ShapeResponses)
	r.explicit = true
	send(r, inject("explicit"))
	send(r.next(1), inject("explicit"))
	r = r.next(1).next(2)
	r.system = "Be terse. " + r.system
	send(r, inject("explicit"))
	// responses, implicit mode (billed writes) with the client's breakpoint.
	im := baseAgent(groundhog.ShapeResponses)
	im.system = "Implicit. " + im.system
	im.marks = []int{0}
	send(im, plain("implicit"))
	send(im.next(1), plain("implicit"))
	// messages with injected breakpoints: history edited, then a pause past
	// the TTL, then the provider loses its cache.
	m := baseAgent(groundhog.ShapeMessages)
	m = m.next(1)
	send(m, inject("messages"))
	m = m.next(2)
	send(m, inject("messages"))
	e := m.next(3)
	e.turns[1].user = "Edited: " + e.turns[1].user
	send(e, inject("messages"))
	g.clock.Advance(6 * time.Minute)
	send(e.next(4), inject("messages"))
	g.cache.evict()
	send(e.next(4).next(5), inject("messages"))
	// messages with a client 1-hour breakpoint on the system block.
	long := baseAgent(groundhog.ShapeMessages)
	long.system = "Long-lived. " + long.system
	body := func(c pcConvo) []byte {
		return []byte(strings.Replace(string(c.body()), `"cache_control":{"type":"ephemeral"}`, `"cache_control":{"type":"ephemeral","ttl":"1h"}`, 1))
	}
	long.marks = []int{-1}
	for i := range 3 {
		if _, w := sendBody(groundhog.ShapeMessages, body(long), plain("long")); i == 0 && w == 0 {
			t.Fatal("the 1-hour breakpoint wrote nothing")
		}
		long = long.next(i + 1)
	}
	_, pc := checkReportEqualsBill(t, g.h, g.clock.Now())
	if b := readFullBill(t, g.h); b.CacheWrite1hTokens == 0 || b.CacheWriteTokens == b.CacheWrite1hTokens {
		t.Fatalf("the workload did not write both 5-minute and 1-hour entries: %+v", b)
	}
	got := map[string]int64{}
	for _, b := range pc.Breaks {
		got[b.Cause] = b.Calls
	}
	want := map[string]int64{"tools_reordered": 1, "instructions_changed": 1, "history_edited": 1, "ttl_gap": 1, "provider_miss": 1}
	if fmt.Sprint(breaks) != fmt.Sprint(want) {
		t.Errorf("the responses named breaks %v, want %v", breaks, want)
	}
	if fmt.Sprint(got) != fmt.Sprint(breaks) {
		t.Errorf("report prompt_cache_breaks %v, the responses said %v", got, breaks)
	}
}
