package dashboard

import (
	"strconv"

	"github.com/groundhog-ai/groundhog/ledger"
)

// toolColumns are the tool-call table's figures: the keys of the report
// JSON's "tools" objects and of its "tool_total" (ledger.ToolRow).
var toolColumns = []column{
	{"calls", "tool calls (all outcomes)", "calls"},
	{"executed", "calls the tool server ran (upstream and suspected duplicates)", "executed"},
	{"cache hits", "answered from the read-only tool cache", "cache_hits"},
	{"coalesced", "shared an identical in-flight call's result", "coalesced"},
	{"replayed", "idempotency replays of a stored result", "replayed"},
	{"suspected dups", "side-effect calls made again without an idempotency key", "suspected_duplicates"},
}

// toolRowView is one tool of the day, or the total (Operation "").
type toolRowView struct {
	Operation, Server, Tool string
	Cells                   []runCell
}

// toolsView is the template's data for the MCP tool-call section.
type toolsView struct {
	Columns []column
	Rows    []toolRowView
	Total   toolRowView
}

func toolCells(t ledger.ToolRow) []runCell {
	vals := map[string]int64{"calls": t.Calls, "executed": t.Executed, "cache_hits": t.CacheHits,
		"coalesced": t.Coalesced, "replayed": t.Replayed, "suspected_duplicates": t.SuspectedDuplicates}
	cells := make([]runCell, 0, len(toolColumns))
	for _, c := range toolColumns {
		s := strconv.FormatInt(vals[c.Field], 10)
		cells = append(cells, runCell{Field: c.Field, Value: s, Text: s})
	}
	return cells
}

// buildTools is the tool-call section of the day's report (rep.Tools):
// empty when the day had no MCP tool call.
func buildTools(rep *ledger.Report) toolsView {
	rows, total := rep.Tools()
	v := toolsView{Columns: toolColumns}
	if len(rows) == 0 {
		return v
	}
	for _, t := range rows {
		v.Rows = append(v.Rows, toolRowView{Operation: t.Operation, Server: t.Server, Tool: t.Tool, Cells: toolCells(t)})
	}
	v.Total = toolRowView{Server: ledger.TotalLabel, Cells: toolCells(total)}
	return v
}
