package metrics

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// TestToolCallsCounter: MCP tool calls are counted per server, tool and
// outcome; model calls are not; and client-chosen tool names beyond the
// operation cap fold into server="other", tool="other", every call still
// counted.
func TestToolCallsCounter(t *testing.T) {
	m := New(nil)
	obs := func(op string, o groundhog.Outcome, n int) {
		for range n {
			m.Observe(&groundhog.LedgerEntry{Tenant: "acme", Operation: op, Outcome: o})
		}
	}
	obs("mcp:fs/write_file", groundhog.OutcomeUpstream, 3)
	obs("mcp:fs/write_file", groundhog.OutcomeSuspectedDuplicate, 2)
	obs("mcp:fs/write_file", groundhog.OutcomeReplayed, 4)
	obs("mcp:search/query", groundhog.OutcomeCacheHit, 5)
	obs("mcp:search/query", groundhog.OutcomeCoalesced, 1)
	obs("summarize", groundhog.OutcomeUpstream, 7)
	out := scrape(t, m)
	for _, want := range []string{
		`groundhog_tool_calls_total{outcome="upstream",server="fs",tool="write_file"} 3`,
		`groundhog_tool_calls_total{outcome="suspected_duplicate",server="fs",tool="write_file"} 2`,
		`groundhog_tool_calls_total{outcome="replayed",server="fs",tool="write_file"} 4`,
		`groundhog_tool_calls_total{outcome="cache_hit",server="search",tool="query"} 5`,
		`groundhog_tool_calls_total{outcome="coalesced",server="search",tool="query"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if n := strings.Count(out, "\ngroundhog_tool_calls_total{"); n != 5 {
		t.Errorf("%d tool series, want 5 (model calls are not tool calls)", n)
	}

	const names = 5000
	for i := range names {
		obs(fmt.Sprintf("mcp:srv%d/tool%d", i, i), groundhog.OutcomeUpstream, 1)
	}
	out = scrape(t, m)
	series := regexp.MustCompile(`(?m)^groundhog_tool_calls_total\{.*\} (\d+)$`).FindAllStringSubmatch(out, -1)
	if max := MaxObservedOperations + 1; len(series) > max+5 {
		t.Fatalf("%d tool series after %d unique tool names, want at most %d", len(series), names, max+5)
	}
	total := 0
	for _, s := range series {
		var n int
		fmt.Sscan(s[1], &n)
		total += n
	}
	if want := 3 + 2 + 4 + 5 + 1 + names; total != want {
		t.Errorf("tool calls counted %d, want %d", total, want)
	}
	if !strings.Contains(out, `groundhog_tool_calls_total{outcome="upstream",server="other",tool="other"}`) {
		t.Error("tool calls past the cap are not counted under server=\"other\", tool=\"other\"")
	}
}
