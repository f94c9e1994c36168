package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/groundhog-ai/groundhog"
)

// RunFigures are the figures of an agent run (docs/agent-runs.md), over
// the report day's rows:
//
//   - ModelCalls, ToolCalls: rows whose operation is not / is "mcp:…".
//   - Spend: sum of Cost (known costs only); Saved: sum of Saved.
//   - Repeats: rows whose (tenant, request hash) appeared in an earlier row
//     of the day, in any run (the repeat rule of Row).
//   - RepeatSpend: sum of Cost over the repeats: what was paid again for
//     work already done that day.
//   - WasteRatio: RepeatSpend ÷ Spend, 4 decimals (0 when Spend is 0).
//   - PromptCacheReadTokens: provider prompt-cache reads (cached input
//     tokens); PromptCacheBreaks: rows with a break in prefix reuse.
//   - ToolDuplicatesAvoided: tool calls answered without running the tool
//     (replayed, cache_hit, coalesced); ToolSuspectedDuplicates: tool calls
//     with outcome suspected_duplicate (ran again without a key).
//   - UnknownCostCalls: rows whose cost is unknown (left out of the sums).
type RunFigures struct {
	ModelCalls, ToolCalls   int64
	Spend, Saved            groundhog.Total
	Repeats                 int64
	RepeatSpend             groundhog.Total
	PromptCacheReadTokens   int64
	PromptCacheBreaks       int64
	ToolDuplicatesAvoided   int64
	ToolSuspectedDuplicates int64
	UnknownCostCalls        int64
}

// WasteRatio is RepeatSpend ÷ Spend rounded to 4 decimals, 0 when Spend is 0.
func (f RunFigures) WasteRatio() float64 {
	s := f.Spend.Float64()
	if s <= 0 {
		return 0
	}
	return roundShare(f.RepeatSpend.Float64() / s)
}

func roundShare(v float64) float64 {
	return float64(int64(v*10000+0.5)) / 10000
}

// Add adds g's figures to f's (a run's own to its tree's, runs to a total).
func (f *RunFigures) Add(g RunFigures) {
	f.ModelCalls += g.ModelCalls
	f.ToolCalls += g.ToolCalls
	f.Spend = f.Spend.Plus(g.Spend)
	f.Saved = f.Saved.Plus(g.Saved)
	f.Repeats += g.Repeats
	f.RepeatSpend = f.RepeatSpend.Plus(g.RepeatSpend)
	f.PromptCacheReadTokens += g.PromptCacheReadTokens
	f.PromptCacheBreaks += g.PromptCacheBreaks
	f.ToolDuplicatesAvoided += g.ToolDuplicatesAvoided
	f.ToolSuspectedDuplicates += g.ToolSuspectedDuplicates
	f.UnknownCostCalls += g.UnknownCostCalls
}

// Run is one agent run of a session report: its own figures (rows carrying
// its session id) and its tree's (its own plus every descendant's).
type Run struct {
	Session string
	Parent  string // "" for a top-level run
	Depth   int    // 0 for a top-level run (or the run a report is asked for)
	Own     RunFigures
	Tree    RunFigures
}

// SessionReport is the agent-run report of one day: the runs in tree order
// (each run followed by its subagents, siblings sorted by id).
type SessionReport struct {
	Day  string
	Runs []Run
}

// BuildSessionReport reports the agent runs of p's day (tenant p.Tenant,
// or all; p.Operation is ignored). With root set, only that run and its
// descendants are reported (none when the day has no row of it).
func BuildSessionReport(ctx context.Context, store groundhog.LedgerStore, p ReportParams, root string) (*SessionReport, error) {
	start, end := DayBounds(p.Day, p.Location)
	own := map[string]*RunFigures{}
	parentOf := map[string]string{}
	seen := map[hashKey]struct{}{}
	err := store.ScanLedger(ctx, groundhog.LedgerFilter{Tenant: p.Tenant, From: start, To: end}, func(e *groundhog.LedgerEntry) error {
		k := hashKey{e.Tenant, e.RequestHash}
		_, repeat := seen[k]
		if !repeat && e.RequestHash != "" {
			seen[k] = struct{}{}
		}
		if e.Session == "" {
			return nil
		}
		f := own[e.Session]
		if f == nil {
			f = new(RunFigures)
			own[e.Session] = f
		}
		if e.ParentSession != "" && parentOf[e.Session] == "" {
			parentOf[e.Session] = e.ParentSession
		}
		tool := strings.HasPrefix(e.Operation, "mcp:")
		if tool {
			f.ToolCalls++
			switch e.Outcome {
			case groundhog.OutcomeReplayed, groundhog.OutcomeCacheHit, groundhog.OutcomeCoalesced:
				f.ToolDuplicatesAvoided++
			case groundhog.OutcomeSuspectedDuplicate:
				f.ToolSuspectedDuplicates++
			}
		} else {
			f.ModelCalls++
		}
		if !e.Cost.Known() || !e.Saved.Known() {
			f.UnknownCostCalls++
		}
		if e.Cost.Known() {
			f.Spend = f.Spend.Add(e.Cost)
			if repeat {
				f.RepeatSpend = f.RepeatSpend.Add(e.Cost)
			}
		}
		if e.Saved.Known() {
			f.Saved = f.Saved.Add(e.Saved)
		}
		if repeat {
			f.Repeats++
		}
		f.PromptCacheReadTokens += e.Usage.CachedInputTokens
		if e.PromptCacheBreak != "" {
			f.PromptCacheBreaks++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A parent named by a subagent is a run even without rows of its own.
	for _, par := range parentOf {
		if own[par] == nil {
			own[par] = new(RunFigures)
		}
	}
	children := map[string][]string{}
	for s, par := range parentOf {
		children[par] = append(children[par], s)
	}
	for _, c := range children {
		sort.Strings(c)
	}
	rep := &SessionReport{Day: start.Format("2006-01-02")}
	done := map[string]bool{} // a cycle of parents is walked once
	var walk func(s string, depth int) RunFigures
	walk = func(s string, depth int) RunFigures {
		done[s] = true
		i := len(rep.Runs)
		rep.Runs = append(rep.Runs, Run{Session: s, Parent: parentOf[s], Depth: depth, Own: *own[s]})
		tree := *own[s]
		for _, c := range children[s] {
			if !done[c] {
				tree.Add(walk(c, depth+1))
			}
		}
		rep.Runs[i].Tree = tree
		return tree
	}
	if root != "" {
		if own[root] != nil {
			walk(root, 0)
		}
		return rep, nil
	}
	var roots []string
	for s := range own {
		if par := parentOf[s]; par == "" {
			roots = append(roots, s)
		}
	}
	sort.Strings(roots)
	for _, s := range roots {
		walk(s, 0)
	}
	var rest []string // runs only reachable through a cycle
	for s := range own {
		if !done[s] {
			rest = append(rest, s)
		}
	}
	sort.Strings(rest)
	for _, s := range rest {
		if !done[s] {
			walk(s, 0)
		}
	}
	return rep, nil
}

type jsonRunFigures struct {
	ModelCalls              int64    `json:"model_calls"`
	ToolCalls               int64    `json:"tool_calls"`
	Spend                   usdTotal `json:"spend_usd"`
	Saved                   usdTotal `json:"saved_usd"`
	Repeats                 int64    `json:"repeats"`
	RepeatSpend             usdTotal `json:"repeat_spend_usd"`
	WasteRatio              share    `json:"waste_ratio"`
	PromptCacheReadTokens   int64    `json:"prompt_cache_read_tokens"`
	PromptCacheBreaks       int64    `json:"prompt_cache_breaks"`
	ToolDuplicatesAvoided   int64    `json:"tool_duplicates_avoided"`
	ToolSuspectedDuplicates int64    `json:"tool_suspected_duplicates"`
	UnknownCostCalls        int64    `json:"unknown_cost_calls"`
}

func jsonFigures(f RunFigures) jsonRunFigures {
	return jsonRunFigures{f.ModelCalls, f.ToolCalls, usdTotal(f.Spend), usdTotal(f.Saved), f.Repeats,
		usdTotal(f.RepeatSpend), share(f.WasteRatio()), f.PromptCacheReadTokens, f.PromptCacheBreaks,
		f.ToolDuplicatesAvoided, f.ToolSuspectedDuplicates, f.UnknownCostCalls}
}

// WriteJSON writes r as {"day":…,"runs":[{"session","parent","depth","own":{…},"tree":{…}}]}.
func (r *SessionReport) WriteJSON(w io.Writer) error {
	type jsonRun struct {
		Session string         `json:"session"`
		Parent  string         `json:"parent"`
		Depth   int            `json:"depth"`
		Own     jsonRunFigures `json:"own"`
		Tree    jsonRunFigures `json:"tree"`
	}
	out := struct {
		Day  string    `json:"day"`
		Runs []jsonRun `json:"runs"`
	}{Day: r.Day, Runs: make([]jsonRun, 0, len(r.Runs))}
	for _, run := range r.Runs {
		out.Runs = append(out.Runs, jsonRun{run.Session, run.Parent, run.Depth, jsonFigures(run.Own), jsonFigures(run.Tree)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteTable writes r as a text table: one line per run, subagents
// indented under their parent, own figures then the tree's.
func (r *SessionReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Agent runs %s\n", r.Day)
	fmt.Fprintln(tw, "run\tmodel calls\ttool calls\tspend\tsaved\trepeats\trepeat spend\twaste\tcache reads\tcache breaks\ttool dups avoided\ttool dups suspected\ttree calls\ttree spend\ttree waste\t")
	for _, run := range r.Runs {
		o, t := run.Own, run.Tree
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%s\t%s\t%d\t%s\t%.4f\t%d\t%d\t%d\t%d\t%d\t%s\t%.4f\t\n",
			strings.Repeat("  ", run.Depth), run.Session, o.ModelCalls, o.ToolCalls, o.Spend.Format(6), o.Saved.Format(6),
			o.Repeats, o.RepeatSpend.Format(6), o.WasteRatio(), o.PromptCacheReadTokens, o.PromptCacheBreaks,
			o.ToolDuplicatesAvoided, o.ToolSuspectedDuplicates, t.ModelCalls+t.ToolCalls, t.Spend.Format(6), t.WasteRatio())
	}
	if len(r.Runs) == 0 {
		fmt.Fprintln(tw, "(no call carried a Groundhog-Session header this day)\t")
	}
	return tw.Flush()
}
