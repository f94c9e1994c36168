package ledger

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ToolOperationPrefix starts the operation of every MCP tool call the
// gateway books: "mcp:SERVER/TOOL" (docs/mcp.md).
const ToolOperationPrefix = "mcp:"

// SplitToolOperation returns the server and tool of an MCP tool call's
// operation "mcp:SERVER/TOOL", and false for any other operation.
func SplitToolOperation(op string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(op, ToolOperationPrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "/")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// ToolRow is what the gateway did with the calls of one MCP tool (or of
// every tool, the total) on the report's day, from its report Row:
//
//   - Executed: calls the tool server ran (outcomes upstream and
//     suspected_duplicate): what the server itself counts.
//   - CacheHits, Coalesced, Replayed: calls answered without running the
//     tool (read-only cache, an identical call in flight, an idempotency
//     key's stored result).
//   - SuspectedDuplicates: side-effect calls made again without a key
//     (a subset of Executed).
type ToolRow struct {
	Operation           string // "mcp:SERVER/TOOL"; "" for the total
	Server, Tool        string
	Calls               int64 // every outcome, errors and refusals included
	Executed            int64
	CacheHits           int64
	Coalesced           int64
	Replayed            int64
	SuspectedDuplicates int64
}

// Avoided is the calls answered without running the tool.
func (t ToolRow) Avoided() int64 { return t.CacheHits + t.Coalesced + t.Replayed }

func (t *ToolRow) plus(u ToolRow) {
	t.Calls += u.Calls
	t.Executed += u.Executed
	t.CacheHits += u.CacheHits
	t.Coalesced += u.Coalesced
	t.Replayed += u.Replayed
	t.SuspectedDuplicates += u.SuspectedDuplicates
}

func toolRowOf(r Row) ToolRow {
	server, tool, _ := SplitToolOperation(r.Operation)
	return ToolRow{Operation: r.Operation, Server: server, Tool: tool, Calls: r.Calls,
		Executed: r.UpstreamCalls + r.SuspectedDuplicates, CacheHits: r.CacheHits, Coalesced: r.Coalesced,
		Replayed: r.Replayed, SuspectedDuplicates: r.SuspectedDuplicates}
}

// Tools returns the report's MCP tool calls: one row per tool operation
// (in the operations' order) and their total. A report grouped by tenant
// has none.
func (r *Report) Tools() (rows []ToolRow, total ToolRow) {
	rows = []ToolRow{}
	if r.Group == GroupByTenant {
		return rows, total
	}
	for _, op := range r.Operations {
		if _, _, ok := SplitToolOperation(op.Operation); !ok {
			continue
		}
		t := toolRowOf(op)
		rows = append(rows, t)
		total.plus(t)
	}
	return rows, total
}

type jsonToolRow struct {
	Operation           *string `json:"operation,omitempty"`
	Server              *string `json:"server,omitempty"`
	Tool                *string `json:"tool,omitempty"`
	Calls               int64   `json:"calls"`
	Executed            int64   `json:"executed"`
	CacheHits           int64   `json:"cache_hits"`
	Coalesced           int64   `json:"coalesced"`
	Replayed            int64   `json:"replayed"`
	SuspectedDuplicates int64   `json:"suspected_duplicates"`
}

func toJSONToolRow(t ToolRow, named bool) jsonToolRow {
	j := jsonToolRow{Calls: t.Calls, Executed: t.Executed, CacheHits: t.CacheHits, Coalesced: t.Coalesced,
		Replayed: t.Replayed, SuspectedDuplicates: t.SuspectedDuplicates}
	if named {
		op, server, tool := t.Operation, t.Server, t.Tool
		j.Operation, j.Server, j.Tool = &op, &server, &tool
	}
	return j
}

// writeToolTable writes the tool-call section of the terminal table, when
// the day had MCP tool calls.
func (r *Report) writeToolTable(w io.Writer) error {
	rows, total := r.Tools()
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nMCP tool calls on %s\n\n", r.Day)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "server\ttool\tcalls\texecuted\tcache_hits\tcoalesced\treplayed\tsuspected_dups\t\n")
	line := func(server, tool string, t ToolRow) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", server, tool, t.Calls, t.Executed, t.CacheHits,
			t.Coalesced, t.Replayed, t.SuspectedDuplicates)
	}
	for _, t := range rows {
		line(t.Server, t.Tool, t)
	}
	line(TotalLabel, "", total)
	return tw.Flush()
}
