package ledger

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/groundhog-ai/groundhog"
)

// usdTotal is a report figure as a JSON number with exactly six decimals
// ("24.000000"): exact, since a Total is an integer of picodollars and the
// sixth decimal is rounded half up at the microdollar. An overflowed Total
// is a marshalling error, never a number.
type usdTotal groundhog.Total

func (t usdTotal) MarshalJSON() ([]byte, error) {
	if groundhog.Total(t).Overflow() {
		return nil, fmt.Errorf("ledger: a USD figure exceeds the exact range")
	}
	return []byte(groundhog.Total(t).Format(6)), nil
}

// share marshals a ratio with exactly four decimals.
type share float64

func (s share) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(s), 'f', 4, 64), nil
}

// jsonRow is Row as JSON: exactly the report keys, in this order.
type jsonRow struct {
	Operation           *string  `json:"operation,omitempty"`
	Tenant              *string  `json:"tenant,omitempty"`
	Calls               int64    `json:"calls"`
	Distinct            int64    `json:"distinct"`
	Repeats             int64    `json:"repeats"`
	RepeatShare         share    `json:"repeat_share"`
	RepeatCost          usdTotal `json:"repeat_cost_usd"`
	ConcurrentIdentical int64    `json:"concurrent_identical"`
	CacheHits           int64    `json:"cache_hits"`
	Coalesced           int64    `json:"coalesced"`
	Replayed            int64    `json:"replayed"`
	UpstreamCalls       int64    `json:"upstream_calls"`
	Spend               usdTotal `json:"spend_usd"`
	CacheRent           usdTotal `json:"cache_rent_usd"`
	Saved               usdTotal `json:"saved_usd"`
	ShadowSaved         usdTotal `json:"shadow_saved_usd"`
	Projected30d        usdTotal `json:"projected_30d_usd"`
	jsonPromptCache
}

type jsonReport struct {
	Day              string   `json:"day"`
	UnknownCostCalls int64    `json:"unknown_cost_calls"`
	UnknownRentDays  int64    `json:"unknown_rent_days"`
	RetryAttempts    int64    `json:"retry_attempts"`
	RetryCost        usdTotal `json:"retry_cost_usd"`
	// Exactly one of Operations and Tenants is set (see Report.Group); a
	// set empty slice is still written, as [].
	Operations *[]jsonRow `json:"operations,omitempty"`
	Tenants    *[]jsonRow `json:"tenants,omitempty"`
	Total      jsonRow    `json:"total"`
	// The MCP tool calls (Report.Tools); absent when grouped by tenant.
	Tools     *[]jsonToolRow `json:"tools,omitempty"`
	ToolTotal *jsonToolRow   `json:"tool_total,omitempty"`
}

func toJSONRow(r Row, withOp, byTenant bool) jsonRow {
	j := jsonRow{
		Calls: r.Calls, Distinct: r.Distinct, Repeats: r.Repeats, RepeatShare: share(r.RepeatShare),
		RepeatCost: usdTotal(r.RepeatCost), ConcurrentIdentical: r.ConcurrentIdentical,
		CacheHits: r.CacheHits, Coalesced: r.Coalesced, Replayed: r.Replayed, UpstreamCalls: r.UpstreamCalls,
		Spend: usdTotal(r.Spend), CacheRent: usdTotal(r.CacheRent), Saved: usdTotal(r.Saved), ShadowSaved: usdTotal(r.ShadowSaved), Projected30d: usdTotal(r.Projected30d),
		jsonPromptCache: toJSONPromptCache(r.PromptCache),
	}
	if withOp {
		op := r.Operation
		if byTenant {
			j.Tenant = &op
		} else {
			j.Operation = &op
		}
	}
	return j
}

func (r *Report) toJSON() jsonReport {
	byTenant := r.Group == GroupByTenant
	rows := make([]jsonRow, 0, len(r.Operations))
	for _, op := range r.Operations {
		rows = append(rows, toJSONRow(op, true, byTenant))
	}
	j := jsonReport{Day: r.Day, UnknownCostCalls: r.Total.UnknownCostCalls, UnknownRentDays: r.Total.UnknownRentDays, RetryAttempts: r.Total.Retries, RetryCost: usdTotal(r.Total.RetryCost), Total: toJSONRow(r.Total, false, false)}
	if byTenant {
		j.Tenants = &rows
	} else {
		j.Operations = &rows
		tools, total := r.Tools()
		js := make([]jsonToolRow, 0, len(tools))
		for _, t := range tools {
			js = append(js, toJSONToolRow(t, true))
		}
		jt := toJSONToolRow(total, false)
		j.Tools, j.ToolTotal = &js, &jt
	}
	return j
}

// MarshalJSON renders the report as WriteJSON does (without the trailing
// newline and indentation), so a Report can be embedded in other JSON.
func (r *Report) MarshalJSON() ([]byte, error) { return json.Marshal(r.toJSON()) }

// WriteJSON writes the report as one indented JSON object:
//
//	{"day": "2025-03-14", "unknown_cost_calls": 0,
//	 "operations": [{"operation": "summarize", "calls": 40000, ..., "projected_30d_usd": 720.000000}],
//	 "total": {"calls": 40000, ...}}
//
// Each operation object and the total carry exactly the keys calls,
// distinct, repeats, repeat_share, repeat_cost_usd, concurrent_identical,
// cache_hits, coalesced, replayed, upstream_calls, spend_usd, saved_usd,
// shadow_saved_usd, projected_30d_usd (operations also "operation"), then the
// prompt-cache keys cached_read_tokens, cache_write_tokens,
// cache_write_1h_tokens, uncached_input_tokens, prompt_cache_hit_ratio,
// prompt_cache_saved_usd (null when unknown, negative when caching lost
// money), prompt_cache_unknown_calls, prompt_cache_breaks ([{"cause",
// "calls", "example_request_hash", "uncached_tokens"}]), fan_out_held and
// fan_out_write_tokens_avoided (see PromptCache). Money is
// a JSON number in dollars with exactly six decimals; repeat_share has four.
// unknown_cost_calls counts the calls left out of the USD figures because
// their model has no price; unknown_rent_days the days of explicit-cache
// storage rent left out of spend_usd and cache_rent_usd because their
// model has no storage price (rent rows are no calls, see Row);
// retry_attempts and retry_cost_usd count the
// upstream attempts that re-ran an idempotent operation (attempt > 1).
// "tools" lists the MCP tool calls per tool ({"operation", "server",
// "tool", "calls", "executed", "cache_hits", "coalesced", "replayed",
// "suspected_duplicates"}, see ToolRow) and "tool_total" their sums (both
// absent from a report grouped by tenant).
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r.toJSON(), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteJSONReports writes several reports (Analyze's, one per day) as one
// indented JSON array of report objects in the WriteJSON format.
func WriteJSONReports(w io.Writer, reports []*Report) error {
	js := make([]jsonReport, 0, len(reports))
	for _, r := range reports {
		js = append(js, r.toJSON())
	}
	b, err := json.MarshalIndent(js, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// csvHeader lists the CSV columns: the day, the operation ("total" on the
// total line), the report keys, unknown_cost_calls and unknown_rent_days.
var csvHeader = append([]string{"day", "operation", "calls", "distinct", "repeats", "repeat_share", "repeat_cost_usd",
	"concurrent_identical", "cache_hits", "coalesced", "replayed", "upstream_calls", "spend_usd", "saved_usd",
	"shadow_saved_usd", "projected_30d_usd", "unknown_cost_calls", "retry_attempts", "retry_cost_usd"},
	append(promptCacheCSVHeader, "tool_executed", "tool_suspected_duplicates", "cache_rent_usd", "unknown_rent_days")...)

// TotalLabel names the total line in the table and CSV outputs.
const TotalLabel = "total"

func (r *Report) csvRecords(cw *csv.Writer) error {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	m := func(v groundhog.Total) string { return v.Format(6) }
	rows := append(append([]Row(nil), r.Operations...), r.Total)
	_, toolTotal := r.Tools()
	for n, row := range rows {
		op := row.Operation
		tool := ToolRow{}
		if n == len(rows)-1 {
			op = TotalLabel
			tool = toolTotal
		} else if _, _, ok := SplitToolOperation(op); ok && r.Group != GroupByTenant {
			tool = toolRowOf(row)
		}
		if err := cw.Write(append([]string{r.Day, op, i(row.Calls), i(row.Distinct), i(row.Repeats),
			strconv.FormatFloat(row.RepeatShare, 'f', 4, 64), m(row.RepeatCost), i(row.ConcurrentIdentical),
			i(row.CacheHits), i(row.Coalesced), i(row.Replayed), i(row.UpstreamCalls), m(row.Spend), m(row.Saved),
			m(row.ShadowSaved), m(row.Projected30d), i(row.UnknownCostCalls), i(row.Retries), m(row.RetryCost)},
			append(promptCacheCSV(row.PromptCache), i(tool.Executed), i(tool.SuspectedDuplicates), m(row.CacheRent), i(row.UnknownRentDays))...)); err != nil {
			return err
		}
	}
	return nil
}

// WriteCSV writes a header line, one line per operation and a total line
// (operation "total"). Columns: see csvHeader; money in dollars with six
// decimals. The unknown_cost_calls and unknown_rent_days columns are the
// CSV form of the table's notes on calls, and days of explicit-cache rent,
// whose cost is unknown. tool_executed and
// tool_suspected_duplicates are an MCP tool operation's Executed and
// SuspectedDuplicates (see ToolRow; 0 on other operations, the tools' sums
// on the total line); its cache_hits, coalesced and replayed columns are
// the tool's own.
func (r *Report) WriteCSV(w io.Writer) error {
	return WriteCSVReports(w, []*Report{r})
}

// WriteCSVReports writes several reports under one header line. When the
// reports are grouped by tenant (Report.Group) the second column is
// "tenant" instead of "operation".
func WriteCSVReports(w io.Writer, reports []*Report) error {
	cw := csv.NewWriter(w)
	header := csvHeader
	if len(reports) > 0 && reports[0].Group == GroupByTenant {
		header = append([]string(nil), csvHeader...)
		header[1] = GroupByTenant
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range reports {
		if err := r.csvRecords(cw); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// tableMoney is the table's one money format, for every money column and
// row: dollars with six decimals, rounded half up at the microdollar — the
// same figures as the JSON and CSV outputs. One format per column keeps the
// decimal points aligned and a small but real cost from reading as 0.00
// next to a large one shown in cents.
func tableMoney(t groundhog.Total) string {
	return t.Format(6)
}

// groupLabel names the rows' key column: "operation", or "tenant" for a
// report grouped by tenant.
func (r *Report) groupLabel() string {
	if r.Group == GroupByTenant {
		return GroupByTenant
	}
	return GroupByOperation
}

// WriteTable writes an aligned terminal table: a title line with the day,
// one line per operation, a total line, and a note when some calls (or
// days of explicit-cache rent) have an unknown cost. Money is in dollars with six decimals in every column (see
// tableMoney).
func (r *Report) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "duplicate work on %s\n\n", r.Day)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, r.groupLabel()+"\tcalls\tdistinct\trepeats\trepeat%\trepeat_cost\tconcurrent\tcache_hits\tcoalesced\treplayed\tupstream\tspend\tsaved\tshadow_saved\tprojected_30d\t\n")
	line := func(op string, row Row) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s%%\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			op, row.Calls, row.Distinct, row.Repeats, strconv.FormatFloat(row.RepeatShare*100, 'f', 2, 64),
			tableMoney(row.RepeatCost), row.ConcurrentIdentical, row.CacheHits, row.Coalesced, row.Replayed,
			row.UpstreamCalls, tableMoney(row.Spend), tableMoney(row.Saved), tableMoney(row.ShadowSaved),
			tableMoney(row.Projected30d))
	}
	for _, row := range r.Operations {
		op := row.Operation
		if op == "" {
			op = "(none)"
		}
		line(op, row)
	}
	line(TotalLabel, r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := r.Total.UnknownCostCalls; n > 0 {
		fmt.Fprintf(&buf, "\nnote: %d call(s) have an unknown cost (a model not in the price table, or an answer that reports no usage); their cost is left out of the USD columns, never counted as 0.\n", n)
	}
	if n := r.Total.UnknownRentDays; n > 0 {
		fmt.Fprintf(&buf, "\nnote: %d day(s) of explicit-cache storage rent have an unknown cost (model not in the price table); spend is partly unknown: that rent is left out of it, never counted as 0.\n", n)
	}
	if n := r.Total.Retries; n > 0 {
		fmt.Fprintf(&buf, "\nnote: %d upstream attempt(s) re-ran an idempotent operation after its first worker lost its lease (attempt > 1), costing %s.\n", n, tableMoney(r.Total.RetryCost))
	}
	if r.Total.CacheRent.Sign() != 0 {
		fmt.Fprintf(&buf, "\nstorage rent of explicit caches (included in spend): %s\n", tableMoney(r.Total.CacheRent))
	}
	if err := r.writePromptCacheTable(&buf); err != nil {
		return err
	}
	if err := r.writeToolTable(&buf); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
