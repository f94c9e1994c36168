package dashboard

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

//go:embed dashboard.html
var pageSource string

var pageTmpl = template.Must(template.New("dashboard").Parse(pageSource))

// securityHeaders are sent with every HTML answer. The page has no script
// and loads nothing from anywhere, so the policy forbids both: even a bug
// in escaping could not run code in the user's browser.
func securityHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "private, no-store")
}

// Handler serves GET /groundhog/ ([?operation=O][&day=D][&tz=Zone]): the
// dashboard of the caller's tenant as one HTML page with inline SVG charts
// and no script. It shows, for the Options.Days days ending with day
// (default today in tz, default Options.Location):
//
//   - calls and repeats per day, spend, saved and shadow saved per day (USD),
//     and the calls answered without the provider (cache hits, coalesced,
//     replayed; stacked) per day, for the operation chosen with ?operation=
//     or for all operations (the report's total);
//   - the report of day: every number the JSON report has, formatted like
//     the terminal table, each in an element carrying data-field (the JSON
//     key), data-value (the number exactly as the JSON writes it) and
//     data-operation (the operation) or data-total (the total object);
//   - the 30-day projection;
//   - the MCP tool calls of day per tool (executed, cache hits, coalesced,
//     replayed, suspected duplicates) and their total, the report JSON's
//     "tools" and "tool_total", each cell carrying data-tool-field and
//     data-tool-value, its row data-tool (the operation) or data-tool-total;
//   - the agent runs of day: top-level runs with their subagent trees
//     folded in (ledger.BuildSessionReport), costliest tree first, at most
//     RunsShown, and a total over every run of the day, each run linking to
//     its session report.
//
// Each day is one ledger.BuildReport call. Errors are small HTML pages with
// the status ReportHandler would use; a 401 asks the browser for HTTP Basic
// credentials (the gateway key as the password, see authenticate).
func (d *Dashboard) Handler() http.Handler {
	return http.HandlerFunc(d.servePage)
}

func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) {
	tenant, err := d.authenticate(r)
	if err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	if err := checkMethod(r); err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	q, err := query(r, "operation", "day", "tz")
	if err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	loc, err := d.location(q)
	if err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	last, err := d.day(q, loc)
	if err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	reports := make([]*ledger.Report, 0, d.o.Days)
	y, m, dd := last.In(loc).Date()
	for i := d.o.Days - 1; i >= 0; i-- {
		// Calendar arithmetic, not 24h steps: DST days are 23 or 25 hours.
		day := time.Date(y, m, dd-i, 0, 0, 0, 0, loc)
		rep, err := ledger.BuildReport(r.Context(), d.o.Store, ledger.ReportParams{Day: day, Location: loc, Tenant: tenant})
		if err != nil {
			d.writeHTMLError(w, r, err)
			return
		}
		reports = append(reports, rep)
	}
	runs, err := ledger.BuildSessionReport(r.Context(), d.o.Store, ledger.ReportParams{Day: last, Location: loc, Tenant: tenant}, "")
	if err != nil {
		d.writeHTMLError(w, r, err)
		return
	}
	_, selected := q["operation"]
	v := buildPage(pageParams{
		Tenant: tenant, Reports: reports, Operation: q.Get("operation"), Selected: selected,
		TZ: q.Get("tz"), DayParam: q.Get("day"), DefaultTZ: d.o.Location.String(), Loc: loc,
	})
	v.Runs = buildRuns(runs, loc.String())
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, v); err != nil {
		d.writeHTMLError(w, r, fmt.Errorf("dashboard: render: %w", err))
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

var errorTmpl = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>groundhog dashboard: {{.Status}} {{.StatusText}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:40rem;padding:0 1rem;color:#1f2328}code{background:#f0f1f3;padding:0 .25em;border-radius:3px}</style>
</head><body><h1>{{.Status}} {{.StatusText}}</h1><p>{{.Message}}</p>
{{if eq .Status 401}}<p>The dashboard shows the numbers of the tenant of a gateway key. Enter the key as the password when your browser asks (any user name), or send <code>Authorization: Bearer &lt;key&gt;</code>.</p>{{end}}
</body></html>
`))

// writeHTMLError answers err as a small HTML page with the status the JSON
// endpoint would use.
func (d *Dashboard) writeHTMLError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := d.clientError(r, err)
	var buf bytes.Buffer
	_ = errorTmpl.Execute(&buf, map[string]any{"Status": status, "StatusText": http.StatusText(status), "Message": msg})
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if status == http.StatusMethodNotAllowed {
		h.Set("Allow", "GET, HEAD")
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="groundhog dashboard", charset="UTF-8"`)
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageParams is what buildPage needs: the reports of consecutive days
// (oldest first, the page's day last) and the request's choices.
type pageParams struct {
	Tenant    string
	Reports   []*ledger.Report
	Operation string // the selected operation; meaningful when Selected
	Selected  bool
	TZ        string // ?tz= as given ("" when absent)
	DayParam  string // ?day= as given ("" when absent)
	DefaultTZ string
	Loc       *time.Location
}

// pageView is the template's data.
type pageView struct {
	Tenant    string
	Day       string
	From      string
	Days      int
	Zone      string
	Scope     string // "all operations" or the selected operation's name
	Selected  bool
	Operation string
	Nav       []navItem
	Cards     []card
	Headline  card // the 30-day projection
	Charts    []chartView
	Columns   []column
	Rows      []tableRow
	Total     tableRow
	Unknown   int64
	// UnknownRent counts the days of explicit-cache rent of unknown cost
	// (no calls: a note of their own).
	UnknownRent int64
	JSONHref    string
	CSVHref     string
	Form        formView

	// PromptCache is the provider prompt-cache section (promptcache.go).
	PromptCache promptCacheView
	// Runs is the agent-runs section (runs.go).
	Runs runsView
	// Tools is the day's MCP tool calls (tools.go).
	Tools toolsView
}

type navItem struct {
	Label   string
	Href    string
	Current bool
}

type formView struct {
	Day, TZ   string
	Operation string
	Selected  bool
}

// card is one headline number of the page's day.
type card struct {
	Label string
	Hint  string
	Num   cell
}

// cell is one number of the report: Field is its JSON key, Value the exact
// JSON number, Text what the table shows; Operation names its row, or
// Total marks the total.
type cell struct {
	Field     string
	Value     string
	Text      string
	Operation string
	Total     bool
}

type column struct {
	Label string
	Title string // what the column means
	Field string
}

type tableRow struct {
	Operation string // raw name; "" is shown as (none)
	Label     string
	Href      string
	Current   bool
	Total     bool
	Cells     []cell
}

// columns are the report's keys in the JSON's order, with the terminal
// table's short headers.
var columns = []column{
	{"calls", "calls (all outcomes)", "calls"},
	{"distinct", "distinct request hashes", "distinct"},
	{"repeats", "calls repeating a request hash seen earlier the same day", "repeats"},
	{"repeat%", "repeats ÷ calls", "repeat_share"},
	{"repeat cost", "what the repeats cost (USD)", "repeat_cost_usd"},
	{"concurrent", "calls that arrived while an identical call was in flight", "concurrent_identical"},
	{"cache hits", "served from the exact cache", "cache_hits"},
	{"coalesced", "shared an identical in-flight call's result", "coalesced"},
	{"replayed", "idempotency replays of a stored result", "replayed"},
	{"upstream", "calls sent to the provider", "upstream_calls"},
	{"spend", "paid to the provider (USD)", "spend_usd"},
	{"cache rent", "storage rent of explicit caches, part of spend (USD)", "cache_rent_usd"},
	{"saved", "cost avoided by the cache, coalescing and replays (USD)", "saved_usd"},
	{"shadow saved", "what a cache would have saved where it is off (USD)", "shadow_saved_usd"},
	{"projected 30d", "30 × (saved + shadow saved) (USD)", "projected_30d_usd"},
}

// jsonMoney is a report figure as the JSON report writes it: six decimals.
func jsonMoney(t groundhog.Total) string { return t.Format(6) }

// tableMoney is the tables' money format, as the terminal table's
// (ledger.Report.WriteTable): six decimals in every cell, so a column never
// mixes 0.01 with 0.000900.
func tableMoney(t groundhog.Total) string { return t.Format(6) }

// cardMoney is a headline card's money format: cents, or six decimals for
// a non-zero amount under a cent (a small real cost never reads 0.00). A
// card is one figure, not a column, so it may be shorter.
func cardMoney(t groundhog.Total) string {
	if m, ok := t.Money(); ok && m != 0 && m < groundhog.Dollar/100 && m > -groundhog.Dollar/100 {
		return m.Format(6)
	}
	return t.Format(2)
}

// fieldValues returns, for the row, each column's (JSON value, table text).
func fieldValues(r ledger.Row) map[string][2]string {
	i := func(v int64) [2]string { s := strconv.FormatInt(v, 10); return [2]string{s, s} }
	m := func(v groundhog.Total) [2]string { return [2]string{jsonMoney(v), tableMoney(v)} }
	return map[string][2]string{
		"calls": i(r.Calls), "distinct": i(r.Distinct), "repeats": i(r.Repeats),
		"repeat_share": {strconv.FormatFloat(r.RepeatShare, 'f', 4, 64),
			strconv.FormatFloat(r.RepeatShare*100, 'f', 2, 64) + "%"},
		"repeat_cost_usd": m(r.RepeatCost), "concurrent_identical": i(r.ConcurrentIdentical),
		"cache_hits": i(r.CacheHits), "coalesced": i(r.Coalesced), "replayed": i(r.Replayed),
		"upstream_calls": i(r.UpstreamCalls), "spend_usd": m(r.Spend), "cache_rent_usd": m(r.CacheRent), "saved_usd": m(r.Saved),
		"shadow_saved_usd": m(r.ShadowSaved), "projected_30d_usd": m(r.Projected30d),
	}
}

func opLabel(op string) string {
	if op == "" {
		return "(none)"
	}
	return op
}

// href builds a link to the dashboard with the page's day and zone kept and
// the operation set (or cleared when op is nil).
func (p pageParams) href(op *string) string {
	q := url.Values{}
	if op != nil {
		q.Set("operation", *op)
	}
	if p.DayParam != "" {
		q.Set("day", p.DayParam)
	}
	if p.TZ != "" {
		q.Set("tz", p.TZ)
	}
	if len(q) == 0 {
		return "?"
	}
	return "?" + q.Encode()
}

// rowOf returns the selected operation's row of rep (a zero row when it had
// no call that day), or the total.
func (p pageParams) rowOf(rep *ledger.Report) ledger.Row {
	if !p.Selected {
		return rep.Total
	}
	for _, r := range rep.Operations {
		if r.Operation == p.Operation {
			return r
		}
	}
	return ledger.Row{Operation: p.Operation}
}

func buildPage(p pageParams) pageView {
	today := p.Reports[len(p.Reports)-1]
	v := pageView{
		Tenant: p.Tenant, Day: today.Day, From: p.Reports[0].Day, Days: len(p.Reports),
		Zone: p.Loc.String(), Selected: p.Selected, Operation: p.Operation, Unknown: today.Total.UnknownCostCalls,
		UnknownRent: today.Total.UnknownRentDays,
		Columns:     columns,
		Form:        formView{Day: today.Day, TZ: p.Loc.String(), Operation: p.Operation, Selected: p.Selected},
	}
	v.Scope = "all operations"
	if p.Selected {
		v.Scope = "operation " + opLabel(p.Operation)
	}

	// Operation selector: every operation seen in the window, so an
	// operation that was busy last week stays one click away today.
	seen := map[string]bool{}
	var ops []string
	for _, rep := range p.Reports {
		for _, r := range rep.Operations {
			if !seen[r.Operation] {
				seen[r.Operation] = true
				ops = append(ops, r.Operation)
			}
		}
	}
	if p.Selected && !seen[p.Operation] {
		ops = append(ops, p.Operation)
	}
	slices.Sort(ops)
	v.Nav = append(v.Nav, navItem{Label: "All operations", Href: p.href(nil), Current: !p.Selected})
	for _, op := range ops {
		op := op
		v.Nav = append(v.Nav, navItem{Label: opLabel(op), Href: p.href(&op), Current: p.Selected && op == p.Operation})
	}

	// Headline numbers of the day, for the scope.
	scope := p.rowOf(today)
	fv := fieldValues(scope)
	cardTotals := map[string]groundhog.Total{"repeat_cost_usd": scope.RepeatCost, "spend_usd": scope.Spend, "projected_30d_usd": scope.Projected30d}
	mk := func(label, field, hint string) card {
		c := card{Label: label, Hint: hint, Num: cell{Field: field, Value: fv[field][0], Text: fv[field][1]}}
		if p.Selected {
			c.Num.Operation = p.Operation
		} else {
			c.Num.Total = true
		}
		if t, ok := cardTotals[field]; ok {
			c.Num.Text = "$" + cardMoney(t)
		} else if strings.HasSuffix(field, "_usd") {
			c.Num.Text = "$" + c.Num.Text
		}
		return c
	}
	v.Cards = []card{
		mk("Calls", "calls", ""),
		mk("Repeats", "repeats", "same request earlier that day"),
		mk("Repeat share", "repeat_share", ""),
		mk("Repeat cost", "repeat_cost_usd", "what the repeats cost"),
		mk("Concurrent identical", "concurrent_identical", "only coalescing removes these"),
		mk("Spend", "spend_usd", "paid to the provider"),
	}
	v.Headline = mk("30-day projection", "projected_30d_usd", "30 × (saved + shadow saved) of "+today.Day)

	// Charts over the window, for the scope.
	days := make([]string, len(p.Reports))
	rows := make([]ledger.Row, len(p.Reports))
	for i, rep := range p.Reports {
		days[i], rows[i] = rep.Day, p.rowOf(rep)
	}
	count := func(name, class, field string, get func(ledger.Row) int64) series {
		s := series{Name: name, Class: class, Field: field}
		for _, r := range rows {
			n := get(r)
			s.vals = append(s.vals, float64(n))
			s.texts = append(s.texts, strconv.FormatInt(n, 10))
		}
		return s
	}
	money := func(name, class, field string, get func(ledger.Row) groundhog.Total) series {
		s := series{Name: name, Class: class, Field: field}
		for _, r := range rows {
			m := get(r)
			s.vals = append(s.vals, m.Float64())
			s.texts = append(s.texts, jsonMoney(m))
		}
		return s
	}
	span := fmt.Sprintf("%s, %s to %s (%s)", v.Scope, v.From, v.Day, v.Zone)
	v.Charts = []chartView{
		layout(chartView{ID: "calls", Title: "Calls and repeats per day", AxisNote: "calls",
			Desc: "Grouped bars: calls and same-day repeats per day for " + span},
			days, []series{
				count("calls", "s-calls", "calls", func(r ledger.Row) int64 { return r.Calls }),
				count("repeats", "s-repeats", "repeats", func(r ledger.Row) int64 { return r.Repeats }),
			}, false, false),
		layout(chartView{ID: "money", Title: "Spend and savings per day", AxisNote: "USD",
			Desc: "Grouped bars: spend, saved and shadow saved (what a cache would have saved where it is off), in US dollars per day for " + span},
			days, []series{
				money("spend", "s-spend", "spend_usd", func(r ledger.Row) groundhog.Total { return r.Spend }),
				money("saved", "s-saved", "saved_usd", func(r ledger.Row) groundhog.Total { return r.Saved }),
				money("shadow saved", "s-shadow", "shadow_saved_usd", func(r ledger.Row) groundhog.Total { return r.ShadowSaved }),
			}, false, true),
		layout(chartView{ID: "avoided", Title: "Calls answered without the provider", AxisNote: "calls",
			Desc: "Stacked bars: cache hits, coalesced calls and idempotent replays per day for " + span},
			days, []series{
				count("cache hits", "s-hits", "cache_hits", func(r ledger.Row) int64 { return r.CacheHits }),
				count("coalesced", "s-coalesced", "coalesced", func(r ledger.Row) int64 { return r.Coalesced }),
				count("replayed", "s-replayed", "replayed", func(r ledger.Row) int64 { return r.Replayed }),
			}, true, false),
	}

	pc, pcCharts := buildPromptCache(p, today, days, rows, span)
	v.PromptCache, v.Charts = pc, append(v.Charts, pcCharts...)

	// The day's report, as the JSON has it: every operation and the total.
	for _, r := range today.Operations {
		v.Rows = append(v.Rows, p.reportRow(r, false, columns, fieldValues))
	}
	v.Total = p.reportRow(today.Total, true, columns, fieldValues)
	v.Tools = buildTools(today)

	rq := url.Values{"day": {today.Day}, "tz": {p.Loc.String()}}
	v.JSONHref = ReportPath + "?" + rq.Encode()
	rq.Set("format", "csv")
	v.CSVHref = ReportPath + "?" + rq.Encode()
	return v
}

// reportRow renders one report row (an operation, or the total) of a table
// whose cells are cols, valued by vals (JSON value and shown text per field).
func (p pageParams) reportRow(r ledger.Row, total bool, cols []column, vals func(ledger.Row) map[string][2]string) tableRow {
	t := tableRow{Operation: r.Operation, Label: opLabel(r.Operation), Total: total}
	if total {
		t.Label = ledger.TotalLabel
		t.Current = !p.Selected
	} else {
		op := r.Operation
		t.Href = p.href(&op)
		t.Current = p.Selected && op == p.Operation
	}
	vs := vals(r)
	for _, c := range cols {
		t.Cells = append(t.Cells, cell{Field: c.Field, Value: vs[c.Field][0], Text: vs[c.Field][1], Operation: r.Operation, Total: total})
	}
	return t
}
