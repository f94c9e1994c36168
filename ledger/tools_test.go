package ledger

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The report sums MCP tool calls per tool (operation mcp:SERVER/TOOL):
// executed counts what the server ran (upstream and suspected duplicates),
// the other figures their outcomes; model operations are not tools. The
// JSON, the CSV and the table carry the same figures.
func TestToolFigures(t *testing.T) {
	acc := NewAccumulator("")
	n := 0
	add := func(op string, o groundhog.Outcome, times int) {
		for range times {
			n++
			e := row(n, time.Duration(n)*time.Second, op, "h"+op+string(o), 0)
			e.Outcome = o
			acc.Add(&e)
		}
	}
	add("mcp:crm/send_email", groundhog.OutcomeUpstream, 2)
	add("mcp:crm/send_email", groundhog.OutcomeSuspectedDuplicate, 3)
	add("mcp:crm/send_email", groundhog.OutcomeReplayed, 4)
	add("mcp:crm/send_email", groundhog.OutcomeRejected, 1)
	add("mcp:docs/search", groundhog.OutcomeUpstream, 1)
	add("mcp:docs/search", groundhog.OutcomeCacheHit, 5)
	add("mcp:docs/search", groundhog.OutcomeCoalesced, 6)
	add("summarize", groundhog.OutcomeUpstream, 7)
	add("mcp:", groundhog.OutcomeUpstream, 1) // not a tool operation
	rep := acc.Report("2025-03-14")

	tools, total := rep.Tools()
	want := []ToolRow{
		{Operation: "mcp:crm/send_email", Server: "crm", Tool: "send_email", Calls: 10, Executed: 5, Replayed: 4, SuspectedDuplicates: 3},
		{Operation: "mcp:docs/search", Server: "docs", Tool: "search", Calls: 12, Executed: 1, CacheHits: 5, Coalesced: 6},
	}
	if len(tools) != 2 || tools[0] != want[0] || tools[1] != want[1] {
		t.Fatalf("tools %+v, want %+v", tools, want)
	}
	if (total != ToolRow{Calls: 22, Executed: 6, CacheHits: 5, Coalesced: 6, Replayed: 4, SuspectedDuplicates: 3}) {
		t.Fatalf("tool total %+v", total)
	}

	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools     []map[string]any `json:"tools"`
		ToolTotal map[string]any   `json:"tool_total"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tools) != 2 || doc.Tools[0]["server"] != "crm" || doc.Tools[0]["tool"] != "send_email" ||
		doc.Tools[0]["executed"] != 5.0 || doc.Tools[0]["suspected_duplicates"] != 3.0 || doc.Tools[1]["coalesced"] != 6.0 {
		t.Errorf("JSON tools %v", doc.Tools)
	}
	if doc.ToolTotal["executed"] != 6.0 || doc.ToolTotal["cache_hits"] != 5.0 || doc.ToolTotal["replayed"] != 4.0 || doc.ToolTotal["operation"] != nil {
		t.Errorf("JSON tool_total %v", doc.ToolTotal)
	}

	b.Reset()
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	got := map[string][2]string{}
	for _, r := range recs[1:] {
		got[r[1]] = [2]string{r[col["tool_executed"]], r[col["tool_suspected_duplicates"]]}
	}
	if got["mcp:crm/send_email"] != [2]string{"5", "3"} || got["mcp:docs/search"] != [2]string{"1", "0"} ||
		got["summarize"] != [2]string{"0", "0"} || got[TotalLabel] != [2]string{"6", "3"} {
		t.Errorf("CSV tool columns %v", got)
	}

	b.Reset()
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	i := strings.Index(table, "MCP tool calls on 2025-03-14")
	if i < 0 {
		t.Fatalf("no tool section in\n%s", table)
	}
	for _, line := range []string{"crm  send_email     10         5           0          0         4               3",
		"total                22         6           5          6         4               3"} {
		if !strings.Contains(strings.Join(strings.Fields(table[i:]), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("tool section lacks %q:\n%s", line, table[i:])
		}
	}

	// A day without tool calls has an empty list and no table section.
	empty := NewAccumulator("").Report("2025-03-15")
	b.Reset()
	_ = empty.WriteJSON(&b)
	if !strings.Contains(b.String(), `"tools": []`) {
		t.Errorf("empty day JSON lacks an empty tools list:\n%s", b.String())
	}
	b.Reset()
	_ = empty.WriteTable(&b)
	if strings.Contains(b.String(), "MCP tool calls") {
		t.Error("a day without tool calls has a tool section")
	}
}
