package promptcache

import (
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
)

var (
	chat      = groundhog.ShapeChat
	responses = groundhog.ShapeResponses
	messages  = groundhog.ShapeMessages
)

// One case per cause, in every shape where the cause exists: a
// conversation is warmed up without a break, then one request breaks reuse
// in one way, and the verdict names exactly that cause.
func TestCauses(t *testing.T) {
	cases := []struct {
		cause   Cause
		pattern string
		shapes  []groundhog.Shape
		inject  bool // messages only: breakpoints injected (else the client's)
		run     func(g *rig, c convo) (Result, *Call)
	}{
		{CauseToolsReordered, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = []tool{c.tools[2], c.tools[0], c.tools[1]}
			return g.do(c, nil)
		}},
		{CauseToolsChanged, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.tools = append([]tool(nil), c.tools...)
			c.tools[1].desc += " Now also by email."
			return g.do(c, nil)
		}},
		{CauseInstructionsChanged, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			c = c.next(1)
			c.system = "You are a friendly support agent. " + c.system
			return g.do(c, nil)
		}},
		{CauseVolatileInPrefix, "iso_timestamp", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			sys := c.system
			c.system = "Now: 2026-12-01T09:00:00Z. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Now: 2026-12-01T09:00:30Z. " + sys
			return g.do(c, nil)
		}},
		{CauseVolatileInPrefix, "uuid", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			sys := c.system
			c.system = "Trace 123e4567-e89b-12d3-a456-426614174000. " + sys
			g.ok(c)
			c = c.next(1)
			c.system = "Trace 9f8e7d6c-e89b-12d3-a456-426614174999. " + sys
			return g.do(c, nil)
		}},
		{CauseModelChanged, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			c.system += " " + words("big", 1300) // over sim-large's 2,048 minimum
			g.ok(c)
			c = c.next(1)
			c.model = "sim-large"
			return g.do(c, nil)
		}},
		{CauseHistoryEdited, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			c = c.next(1)
			g.ok(c)
			c = c.next(2)
			g.ok(c)
			c = c.next(3)
			c.turns[1].user = "Edited: " + c.turns[1].user
			return g.do(c, nil)
		}},
		{CauseParametersChanged, "", []groundhog.Shape{messages}, true, func(g *rig, c convo) (Result, *Call) {
			c.toolChoice = "auto"
			g.ok(c)
			c = c.next(1)
			c.toolChoice = "any"
			// Anthropic keeps the tools and system levels, drops the
			// messages level (the in-tree sim does not model that yet).
			return g.do(c, read(0))
		}},
		{CauseParametersChanged, "", []groundhog.Shape{messages}, true, func(g *rig, c convo) (Result, *Call) {
			c.toolChoice = "auto"
			g.ok(c)
			c = c.next(1)
			c.thinking = true // thinking turned on: the messages level is dropped
			return g.do(c, read(0))
		}},
		{CauseParametersChanged, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			c = c.next(1).next(2)
			g.ok(c)
			c = c.next(3)
			c.turns = append([]turn(nil), c.turns...)
			c.turns[1].image = true // an image added to an earlier turn
			return g.do(c, nil)
		}},
		{CauseCacheKeyChanged, "", []groundhog.Shape{chat, responses}, true, func(g *rig, c convo) (Result, *Call) {
			c.key = "session-1"
			g.ok(c)
			g.ok(c.next(1))
			// A new session with its own key: the same tools and
			// instructions, but a separate provider cache scope.
			c.key = "session-2"
			c.turns = []turn{{user: "Where is my refund? " + words("w", 60)}}
			return g.do(c, read(0))
		}},
		{CauseTTLGap, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.clock.Advance(6 * time.Minute)
			return g.do(c.next(1), nil)
		}},
		{CauseBelowMinimum, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			c.tools = nil
			c.system = "You are brief. " + words("s", 600)
			g.do(c, nil)
			return g.do(c.next(1), nil)
		}},
		// A long prompt (far above the minimum) whose earlier turn carried
		// no breakpoint: nothing was stored, and the cause says so instead
		// of below_minimum.
		{CauseNoBreakpoint, "", []groundhog.Shape{messages}, false, func(g *rig, c convo) (Result, *Call) {
			c.system += " " + words("big", 3000)
			g.do(c, nil)
			return g.do(c.next(1), nil)
		}},
		{CauseBreakpointMoved, "", []groundhog.Shape{responses}, false, func(g *rig, c convo) (Result, *Call) {
			c.explicit = true
			c.marks = []int{0}
			g.do(c, read(0))
			c = c.next(1)
			c.marks = []int{1} // the client moved its only breakpoint
			return g.do(c, read(0))
		}},
		{CauseBreakpointMoved, "", []groundhog.Shape{messages}, false, func(g *rig, c convo) (Result, *Call) {
			c.marks = []int{0}
			g.ok(c)
			c = c.next(1)
			c.marks = nil // the client dropped its breakpoint
			return g.do(c, nil)
		}},
		{CauseLookbackExceeded, "", []groundhog.Shape{messages}, false, func(g *rig, c convo) (Result, *Call) {
			c.marks = []int{0}
			g.ok(c)
			for i := 1; i <= 12; i++ { // 24 more blocks
				c = c.next(i)
			}
			c.marks = []int{12}
			return g.do(c, nil)
		}},
		{CauseProviderMiss, "", cacheShapes, true, func(g *rig, c convo) (Result, *Call) {
			g.ok(c)
			g.sim = sim.New(sim.Config{Clock: g.clock}) // the provider lost its cache
			return g.do(c.next(1), nil)
		}},
	}
	seen := map[Cause]bool{}
	for _, tc := range cases {
		for _, shape := range tc.shapes {
			name := string(tc.cause) + "/" + string(shape)
			if tc.pattern != "" {
				name += "/" + tc.pattern
			}
			t.Run(name, func(t *testing.T) {
				g := newRig(t, tc.inject && shape == messages)
				res, call := tc.run(g, baseConvo(shape))
				if !res.Break || res.Cause != tc.cause || res.Pattern != tc.pattern {
					t.Fatalf("verdict %+v, want cause %s pattern %q (diagnosis %+v)", res, tc.cause, tc.pattern, call.Diagnosis)
				}
				if res.Lost != res.Expected-res.Read || res.Lost <= 0 {
					t.Fatalf("lost tokens %d, want expected %d − read %d", res.Lost, res.Expected, res.Read)
				}
				if res.Header() != string(tc.cause) {
					t.Fatalf("header %q", res.Header())
				}
			})
		}
		seen[tc.cause] = true
	}
	for _, c := range Causes {
		if !seen[c] {
			t.Errorf("no test case for cause %s", c)
		}
	}
}

// A volatile value after the last breakpoint (in the newest user message)
// is not in the reused prefix: no break.
func TestVolatileAfterPrefixIsNoBreak(t *testing.T) {
	for _, shape := range cacheShapes {
		t.Run(string(shape), func(t *testing.T) {
			g := newRig(t, shape == messages)
			c := baseConvo(shape)
			g.ok(c)
			c = c.next(1)
			c.turns[1].user = "At 2026-12-01T09:00:30Z: " + c.turns[1].user
			g.ok(c)
		})
	}
}

func TestVolatileClassify(t *testing.T) {
	for in, want := range map[string]string{
		"2026-12-01T08:27:58Z": "iso_timestamp", "2026-12-01T08:27:58.123+02:00": "iso_timestamp",
		"2026-12-01": "date", "01/12/2026": "date", "08:27:58": "time", "8:27": "time",
		"123e4567-e89b-12d3-a456-426614174000": "uuid", "req_8f3a9b2c": "request_id", "request-id=77": "request_id",
		"a8F3kq92LmZx01Qp": "nonce", "1764577678": "iso_timestamp",
	} {
		ms := findVolatile([]byte("x "+in+" y"), nil)
		if len(ms) != 1 || ms[0].kind.String() != want {
			t.Errorf("%q: matches %+v, want one %s", in, ms, want)
		}
	}
	for _, in := range []string{"version 2", "user_profile_2024", "HTTP/1.1", "step 12 of 30", "ISO-8601"} {
		if ms := findVolatile([]byte(in), nil); len(ms) != 0 {
			t.Errorf("%q: false volatile %+v", in, ms)
		}
	}
	if !strings.Contains(CauseVolatileInPrefix.String(), "volatile") {
		t.Fatal()
	}
}
