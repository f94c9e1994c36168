package dashboard

import (
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// RunsShown is how many agent runs the dashboard's runs table lists (the
// costliest trees of the day); the total row counts every run of the day.
const RunsShown = 20

// runColumns are the runs table's figures: the "tree" keys of the session
// report JSON (ledger.SessionReport.WriteJSON), whose names the cells carry
// in data-field.
var runColumns = []column{
	{Field: "model_calls", Label: "model calls", Title: "Model calls of the run and its subagents"},
	{Field: "tool_calls", Label: "tool calls", Title: "MCP tool calls of the run and its subagents"},
	{Field: "spend_usd", Label: "tree spend", Title: "What the run and its subagents paid (known prices only)"},
	{Field: "saved_usd", Label: "saved", Title: "What the cache, coalescing and replays saved the tree"},
	{Field: "repeat_spend_usd", Label: "repeats spend", Title: "Spend on calls whose request hash was seen earlier the same day"},
	{Field: "waste_ratio", Label: "waste ratio", Title: "Repeats spend ÷ tree spend"},
	{Field: "prompt_cache_read_tokens", Label: "cache reads", Title: "Input tokens read from the provider's prompt cache"},
	{Field: "prompt_cache_breaks", Label: "cache breaks", Title: "Calls whose provider prompt cache broke"},
	{Field: "tool_duplicates_avoided", Label: "tool dups avoided", Title: "Tool calls answered without running the tool (cache, coalesced, replayed)"},
	{Field: "tool_suspected_duplicates", Label: "tool dups suspected", Title: "Side-effect tool calls made again without an idempotency key"},
}

// runsView is the template's data for the agent-runs section.
type runsView struct {
	Columns []column
	Rows    []runRow
	Total   runRow
	Runs    int // top-level runs of the day
	Shown   int
}

// runRow is one top-level run (its subagent tree folded in), or the total.
type runRow struct {
	Session   string
	Href      string // the run's JSON report
	Subagents int
	Cells     []runCell
}

type runCell struct {
	Field string
	Value string // as the session report JSON has it
	Text  string
}

func runCells(f ledger.RunFigures) []runCell {
	i := func(v int64) [2]string { s := strconv.FormatInt(v, 10); return [2]string{s, s} }
	m := func(t groundhog.Total) [2]string { s := t.Format(6); return [2]string{s, s} }
	w := strconv.FormatFloat(f.WasteRatio(), 'f', 4, 64)
	vals := map[string][2]string{
		"model_calls": i(f.ModelCalls), "tool_calls": i(f.ToolCalls), "spend_usd": m(f.Spend), "saved_usd": m(f.Saved),
		"repeat_spend_usd": m(f.RepeatSpend), "waste_ratio": {w, w},
		"prompt_cache_read_tokens": i(f.PromptCacheReadTokens), "prompt_cache_breaks": i(f.PromptCacheBreaks),
		"tool_duplicates_avoided": i(f.ToolDuplicatesAvoided), "tool_suspected_duplicates": i(f.ToolSuspectedDuplicates),
	}
	cells := make([]runCell, 0, len(runColumns))
	for _, c := range runColumns {
		cells = append(cells, runCell{Field: c.Field, Value: vals[c.Field][0], Text: vals[c.Field][1]})
	}
	return cells
}

// buildRuns lists the top-level runs of rep (runs at depth 0, whose
// subagents the report lists right after them), the costliest trees first
// (ties by run id), at most RunsShown, and a total over every run of the
// day. Each run links to its session report endpoint for the same day and
// time zone.
func buildRuns(rep *ledger.SessionReport, tz string) runsView {
	v := runsView{Columns: runColumns}
	type root struct {
		run       ledger.Run
		subagents int
	}
	var roots []root
	for _, r := range rep.Runs {
		if r.Depth == 0 {
			roots = append(roots, root{run: r})
		} else if len(roots) > 0 {
			roots[len(roots)-1].subagents++
		}
	}
	sort.SliceStable(roots, func(i, j int) bool {
		if c := compareTotals(roots[i].run.Tree.Spend, roots[j].run.Tree.Spend); c != 0 {
			return c > 0
		}
		return roots[i].run.Session < roots[j].run.Session
	})
	var total ledger.RunFigures
	subagents := 0
	q := url.Values{"day": {rep.Day}, "tz": {tz}}.Encode()
	for n, r := range roots {
		total.Add(r.run.Tree)
		subagents += r.subagents
		if n >= RunsShown {
			continue
		}
		v.Rows = append(v.Rows, runRow{
			Session:   r.run.Session,
			Href:      strings.Replace(SessionReportPattern, "{id}", url.PathEscape(r.run.Session), 1) + "?" + q,
			Subagents: r.subagents,
			Cells:     runCells(r.run.Tree),
		})
	}
	v.Runs, v.Shown = len(roots), len(v.Rows)
	v.Total = runRow{Session: ledger.TotalLabel, Subagents: subagents, Cells: runCells(total)}
	return v
}

// compareTotals orders two sums of money: exactly when both fit a Money
// (every real day), by their float value otherwise.
func compareTotals(a, b groundhog.Total) int {
	am, aok := a.Money()
	bm, bok := b.Money()
	if !aok || !bok {
		af, bf := a.Float64(), b.Float64()
		switch {
		case af > bf:
			return 1
		case af < bf:
			return -1
		}
		return 0
	}
	switch {
	case am > bm:
		return 1
	case am < bm:
		return -1
	}
	return 0
}
