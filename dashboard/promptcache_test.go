package dashboard

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/pricing"
)

// The page's charts: calls, money, avoided, prompt-cache hit ratio and
// prompt-cache net saving; and their series.
const (
	charts      = 5
	chartSeries = 2 + 3 + 3 + 1 + 1
)

// samplePromptCache gives the sample's upstream calls prompt-cache usage,
// deterministically from i (the sample's random draws stay as they were):
// summarize writes then reads (a saving, with ttl_gap breaks), extract
// reads with 1h writes and tools_reordered breaks, fan-out held calls and
// provider verdicts on every fifth call,
// the XSS operation only writes (a net loss), mystery-model reads with an
// unknown price.
func samplePromptCache(e *groundhog.LedgerEntry, w workload, i int) {
	u := &e.Usage
	switch w.op {
	case "summarize":
		if i%4 == 0 {
			u.CacheWriteTokens = 800
		} else if i%4 != 3 {
			u.CachedInputTokens = 768
		}
		if i%9 == 0 {
			e.PromptCacheBreak, e.PromptCacheLostTokens = "ttl_gap", 512
		}
	case "extract":
		u.CachedInputTokens = 512
		if i%3 == 0 {
			u.CacheWriteTokens, u.CacheWrite1hTokens = 400, 400
		}
		if i%13 == 0 {
			e.PromptCacheBreak, e.PromptCacheLostTokens = "tools_reordered", 900
		}
		if i%7 == 0 {
			e.PromptCacheBreak, e.PromptCacheLostTokens = "volatile_in_prefix", 640
		}
		e.FanOutHeld = i%11 == 0
		if i%5 == 0 { // asked the provider for its own verdict
			e.ProviderCacheReason = "input_changed"
			if e.PromptCacheBreak == "" {
				e.ProviderCacheReason = "cache_hit"
			}
		}
	case "<script>alert(1)</script>":
		u.CacheWriteTokens = 900
	case "mystery-model":
		u.CachedInputTokens = 300
	}
	e.PromptCacheSaved = pricing.Default().PromptCacheSaving(e.Model, *u)
	if w.price < 0 {
		e.PromptCacheSaved = groundhog.CostUnknown
	}
}

var (
	breakRowRe  = regexp.MustCompile(`<tr data-break="([^"]*)"((?:\s+[a-z-]+(?:="[^"]*")?)*)>(.*?)</tr>`)
	breakCellRe = regexp.MustCompile(`<td[^>]*data-break-field="([^"]*)"[^>]*>([^<]*)</td>`)
)

// checkBreaksTable checks that the page's breaks table lists exactly the
// report's prompt_cache_breaks of the scope (the total, or operation op when
// not ""), in order, with the same calls, uncached tokens and example hash.
// It returns how many breaks it compared.
func checkBreaksTable(t *testing.T, doc string, reportJSON []byte, op string) int {
	t.Helper()
	var rep struct {
		Operations []struct {
			Operation string            `json:"operation"`
			Breaks    []json.RawMessage `json:"prompt_cache_breaks"`
		} `json:"operations"`
		Total struct {
			Breaks []json.RawMessage `json:"prompt_cache_breaks"`
		} `json:"total"`
	}
	if err := json.Unmarshal(reportJSON, &rep); err != nil {
		t.Fatal(err)
	}
	want := rep.Total.Breaks
	if op != "" {
		want = nil
		for _, o := range rep.Operations {
			if o.Operation == op {
				want = o.Breaks
			}
		}
	}
	rows := breakRowRe.FindAllStringSubmatch(doc, -1)
	if len(rows) != len(want) {
		t.Fatalf("breaks table has %d rows, report %d", len(rows), len(want))
	}
	for i, r := range rows {
		var w struct {
			Cause   string `json:"cause"`
			Calls   json.Number
			Example string      `json:"example_request_hash"`
			Lost    json.Number `json:"uncached_tokens"`
		}
		if err := json.Unmarshal(want[i], &w); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{"cause": html.UnescapeString(r[1])}
		for _, c := range breakCellRe.FindAllStringSubmatch(r[3], -1) {
			got[c[1]] = html.UnescapeString(c[2])
		}
		if got["cause"] != w.Cause || got["calls"] != w.Calls.String() || got["uncached_tokens"] != w.Lost.String() ||
			got["example_request_hash"] != w.Example {
			t.Errorf("break %d: page %v, report %s", i, got, want[i])
		}
		if scoped := strings.Contains(r[2], "data-total"); scoped != (op == "") {
			t.Errorf("break %d: scope attributes %q for operation %q", i, r[2], op)
		}
	}
	return len(rows)
}

// TestDashboardPromptCache checks the prompt-cache section against the
// report: the breaks of the total and of one operation, the loss note for
// an operation whose cache only wrote, and that the sample really has
// prompt-cache activity of every kind the page shows.
func TestDashboardPromptCache(t *testing.T) {
	d, db := newTestDashboard(t)
	tot := wantReportOf(t, db, "")
	if p := tot.Total.PromptCache; p.CachedReadTokens == 0 || p.CacheWrite1hTokens == 0 || len(p.Breaks) != 3 ||
		p.FanOutHeld == 0 || p.UnknownCalls == 0 || p.Saved <= 0 || len(p.Agreement) < 2 {
		t.Fatalf("sample prompt cache = %+v, want reads, 1h writes, 3 causes, held calls, unknowns, a saving and provider verdicts", p)
	}
	for _, tc := range []struct {
		op, query string
		loss      bool
	}{
		{"", "", false},
		{"extract", "?operation=extract", false},
		{"<script>alert(1)</script>", "?operation=%3Cscript%3Ealert%281%29%3C%2Fscript%3E", true},
	} {
		w := get(t, d.Handler(), "GET", "/groundhog/"+tc.query, keyAcme)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
		body := w.Body.String()
		rep := wantReport(t, db, ledger.ReportParams{Day: testNow, Tenant: "acme"})
		n := checkBreaksTable(t, body, rep, tc.op)
		if tc.op != "<script>alert(1)</script>" && n == 0 {
			t.Errorf("%q: no breaks compared", tc.op)
		}
		if got := strings.Contains(body, `id="pc-loss"`); got != tc.loss {
			t.Errorf("%q: loss note shown = %v, want %v", tc.op, got, tc.loss)
		}
		if !strings.Contains(body, "Prompt-cache hit ratio per day") || !strings.Contains(body, "Prompt-cache net saving per day") {
			t.Errorf("%q: prompt-cache charts missing", tc.op)
		}
	}
	// The loss shows as bars below the zero line.
	w := get(t, d.Handler(), "GET", "/groundhog/?operation=%3Cscript%3Ealert%281%29%3C%2Fscript%3E", keyAcme)
	if !strings.Contains(w.Body.String(), `class="s-loss" x=`) {
		t.Error("net losses are not drawn as loss bars")
	}
}

func wantReportOf(t *testing.T, db groundhog.LedgerStore, op string) *ledger.Report {
	t.Helper()
	rep, err := ledger.BuildReport(t.Context(), db, ledger.ReportParams{Day: testNow, Tenant: "acme", Operation: op})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestLayoutSigned(t *testing.T) {
	s := series{Name: "net saving", Class: "s-saved", Field: "f", vals: []float64{2, -1, 0}, texts: []string{"2.000000", "-1.000000", "null"}}
	c := layoutSigned(chartView{}, []string{"2025-03-01", "2025-03-02", "2025-03-03"}, s)
	if len(c.Bars) != 3 {
		t.Fatalf("%d bars", len(c.Bars))
	}
	zero := ""
	for _, tk := range c.YTicks {
		if tk.Label == "$0" {
			zero = tk.Pos
		}
	}
	if zero == "" {
		t.Fatalf("no zero tick in %+v", c.YTicks)
	}
	up, down := c.Bars[0], c.Bars[1]
	// The saving rises from the zero line, the loss hangs below it.
	if up.Class != "s-saved" || f1(parse(t, up.Y)+parse(t, up.H)) != zero {
		t.Errorf("saving bar %+v does not end on the zero line %s", up, zero)
	}
	if down.Class != "s-loss" || down.Y != zero || !strings.Contains(down.Title, "net loss -$1.00") {
		t.Errorf("loss bar %+v does not start on the zero line %s", down, zero)
	}
	if parse(t, up.H) <= parse(t, down.H) {
		t.Errorf("a $2 saving (%s) is not taller than a $1 loss (%s)", up.H, down.H)
	}
	if c.Bars[2].H != "0.0" || !strings.Contains(c.Bars[2].Title, "unknown") {
		t.Errorf("unknown bar %+v", c.Bars[2])
	}
	if c.YTicks[0].Label[0] != '-' {
		t.Errorf("lowest tick %q is not negative", c.YTicks[0].Label)
	}
}

func parse(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("coordinate %q: %v", s, err)
	}
	return f
}
