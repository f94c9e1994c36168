package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// runsSample stores a day of agent runs: "plan" (2 subagents, one of which
// has its own subagent: a 2-level tree) with model calls, a repeated call,
// prompt-cache reads and a break, and MCP tool calls executed, replayed and
// suspected duplicate; "solo", a run without subagents; and tenant beta's
// run "rival", costlier than both, which acme's page must not show.
func runsSample(t *testing.T) *httptest.Server {
	t.Helper()
	db := openStore(t)
	at := testNow.Add(-2 * time.Hour)
	n := 0
	row := func(tenant, session, parent, op, hash string, outcome groundhog.Outcome, cost groundhog.Money) groundhog.LedgerEntry {
		n++
		at = at.Add(time.Second)
		return groundhog.LedgerEntry{ID: fmt.Sprintf("r%03d", n), Time: at, Tenant: tenant, Operation: op,
			RequestHash: "sha256:" + hash, Outcome: outcome, Status: 200, Cost: cost, FullCost: cost,
			Session: session, ParentSession: parent}
	}
	µ := groundhog.Microdollar
	rows := []groundhog.LedgerEntry{
		row("acme", "plan", "", "chat", "p1", groundhog.OutcomeUpstream, 3_000*µ),
		row("acme", "plan", "", "chat", "p2", groundhog.OutcomeUpstream, 1_250*µ),
		row("acme", "plan.search", "plan", "chat", "s1", groundhog.OutcomeUpstream, 700*µ),
		row("acme", "plan.search", "plan", "chat", "s1", groundhog.OutcomeUpstream, 700*µ), // a repeat
		row("acme", "plan.search", "plan", "mcp:files/read", "t1", groundhog.OutcomeUpstream, 0),
		row("acme", "plan.search", "plan", "mcp:files/read", "t1", groundhog.OutcomeCacheHit, 0),
		row("acme", "plan.search.deep", "plan.search", "chat", "d1", groundhog.OutcomeUpstream, 2_100*µ),
		row("acme", "plan.search.deep", "plan.search", "mcp:tickets/create", "c1", groundhog.OutcomeUpstream, 0),
		row("acme", "plan.search.deep", "plan.search", "mcp:tickets/create", "c1", groundhog.OutcomeSuspectedDuplicate, 0),
		row("acme", "plan.write", "plan", "chat", "w1", groundhog.OutcomeUpstream, 900*µ),
		row("acme", "plan.write", "plan", "mcp:tickets/create", "c2", groundhog.OutcomeUpstream, 0),
		row("acme", "plan.write", "plan", "mcp:tickets/create", "c2", groundhog.OutcomeReplayed, 0),
		row("acme", "solo", "", "chat", "o1", groundhog.OutcomeUpstream, 1_500*µ),
		row("acme", "solo", "", "chat", "o2", groundhog.OutcomeCacheHit, 0),
		row("acme", "", "", "chat", "n1", groundhog.OutcomeUpstream, 9_000*µ), // not part of a run
		row("beta", "rival", "", "chat", "b1", groundhog.OutcomeUpstream, 50_000*µ),
	}
	rows[1].Usage.CachedInputTokens = 4_096
	rows[6].Usage.CachedInputTokens = 1_024
	rows[6].PromptCacheBreak = "system_changed"
	rows[13].Saved = 1_500 * µ
	if err := db.AppendLedger(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	d := New(Options{Store: db, Auth: testAuth, Clock: fakeClock{testNow}, Logger: quietLog})
	mux := http.NewServeMux()
	mux.Handle("GET /groundhog/{$}", d.Handler())
	mux.Handle(SessionReportPattern, d.SessionReportHandler())
	mux.Handle(ReportPath, d.ReportHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

var (
	runRowRe  = regexp.MustCompile(`(?s)<tr data-run="([^"]*)">(.*?)</tr>`)
	runTotRe  = regexp.MustCompile(`(?s)<tr data-run-total="">(.*?)</tr>`)
	runCellRe = regexp.MustCompile(`<td data-run-field="([^"]+)" data-run-value="([^"]*)">([^<]*)</td>`)
	runHrefRe = regexp.MustCompile(`<a href="([^"]*)">`)
)

type pageRun struct {
	session, href string
	fields        map[string]string // data-run-value per field
}

// pageRuns reads the runs table of a dashboard page (as served or as
// Chromium serializes its DOM); every cell's shown text must be its value.
func pageRuns(t *testing.T, doc string) (runs []pageRun, total map[string]string) {
	t.Helper()
	cells := func(body string) map[string]string {
		m := map[string]string{}
		for _, c := range runCellRe.FindAllStringSubmatch(body, -1) {
			v, text := html.UnescapeString(c[2]), html.UnescapeString(c[3])
			if v != text {
				t.Errorf("%s shows %q, its value is %q", c[1], text, v)
			}
			m[c[1]] = v
		}
		return m
	}
	for _, m := range runRowRe.FindAllStringSubmatch(doc, -1) {
		r := pageRun{session: html.UnescapeString(m[1]), fields: cells(m[2])}
		if h := runHrefRe.FindStringSubmatch(m[2]); h != nil {
			r.href = html.UnescapeString(h[1])
		}
		runs = append(runs, r)
	}
	if m := runTotRe.FindStringSubmatch(doc); m != nil {
		total = cells(m[1])
	}
	return runs, total
}

// runFigureKeys are the session report's tree figures the table shows.
var runFigureKeys = []string{"model_calls", "tool_calls", "spend_usd", "saved_usd", "repeat_spend_usd", "waste_ratio",
	"prompt_cache_read_tokens", "prompt_cache_breaks", "tool_duplicates_avoided", "tool_suspected_duplicates"}

// checkRunsPage compares every figure of the runs table in doc with the
// session report JSON that srv answers for the run its row links to.
func checkRunsPage(t *testing.T, srv *httptest.Server, doc string) {
	t.Helper()
	runs, total := pageRuns(t, doc)
	var order []string
	for _, r := range runs {
		order = append(order, r.session)
	}
	// plan's tree spends $0.008650, solo's $0.001500; beta's run is not acme's.
	if fmt.Sprint(order) != "[plan solo]" {
		t.Fatalf("runs on the page = %v, want [plan solo] (costliest tree first, no other tenant's run)", order)
	}
	sums := map[string]*big.Rat{}
	subagents := 0
	for _, r := range runs {
		want := url.Values{"day": {"2025-03-31"}, "tz": {"UTC"}}
		if r.href != "/groundhog/v1/sessions/"+r.session+"/report?"+want.Encode() {
			t.Errorf("%s links to %q", r.session, r.href)
		}
		req, _ := http.NewRequest("GET", srv.URL+r.href, nil)
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", r.href, resp.StatusCode, body)
		}
		var rep struct {
			Runs []struct {
				Session string                     `json:"session"`
				Depth   int                        `json:"depth"`
				Tree    map[string]json.RawMessage `json:"tree"`
			} `json:"runs"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&rep); err != nil || len(rep.Runs) == 0 || rep.Runs[0].Session != r.session {
			t.Fatalf("%s: %v %s", r.href, err, body)
		}
		if got, want := r.fields["subagents"], strconv.Itoa(len(rep.Runs)-1); got != want {
			t.Errorf("%s: subagents %s on the page, %s in its report", r.session, got, want)
		}
		n, _ := strconv.Atoi(r.fields["subagents"])
		subagents += n
		for _, k := range runFigureKeys {
			want := string(rep.Runs[0].Tree[k])
			if got := r.fields[k]; got != want {
				t.Errorf("%s: %s = %q on the page, %q in its report", r.session, k, got, want)
			}
			if k == "waste_ratio" {
				continue
			}
			v, ok := new(big.Rat).SetString(want)
			if !ok {
				t.Fatalf("%s: %s = %q", r.session, k, want)
			}
			if sums[k] == nil {
				sums[k] = new(big.Rat)
			}
			sums[k].Add(sums[k], v)
		}
	}
	if runs[0].fields["subagents"] != "3" {
		t.Errorf("plan has %s subagents on the page, want 3 (2 direct, 1 nested)", runs[0].fields["subagents"])
	}
	if total == nil {
		t.Fatal("no total row")
	}
	if total["subagents"] != strconv.Itoa(subagents) {
		t.Errorf("total subagents = %s, want %d", total["subagents"], subagents)
	}
	for k, s := range sums {
		got, ok := new(big.Rat).SetString(total[k])
		if !ok || got.Cmp(s) != 0 {
			t.Errorf("total %s = %q, want the runs' sum %s", k, total[k], s.FloatString(6))
		}
	}
	// Repeats spend $0.000700 of plan's $0.008650, and of the day's runs' $0.010150.
	if runs[0].fields["waste_ratio"] != "0.0809" || total["waste_ratio"] != "0.0690" {
		t.Errorf("waste ratios: plan %s, total %s; want 0.0809 and 0.0690", runs[0].fields["waste_ratio"], total["waste_ratio"])
	}
}

// The runs table of the served page shows, for each top-level run, the
// figures of its tree in the session report JSON it links to, and a total.
func TestRunsTable(t *testing.T) {
	srv := runsSample(t)
	req, _ := http.NewRequest("GET", srv.URL+"/groundhog/?day=2025-03-31", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("page: %d %s", resp.StatusCode, b)
	}
	checkRunsPage(t, srv, string(b))
}

// The same table as Chromium builds it from the page.
func TestRunsTableChromium(t *testing.T) {
	bin := findChromium(t)
	srv := runsSample(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("me", keyAcme)
	dom := string(runChromium(t, bin, u.String()+"/groundhog/?day=2025-03-31", "--dump-dom"))
	checkRunsPage(t, srv, dom)
}
