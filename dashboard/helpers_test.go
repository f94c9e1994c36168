package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// quietLog drops the handlers' logs of internal errors, which the tests
// provoke on purpose.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeClock is a groundhog.Clock that tells a fixed time.
type fakeClock struct{ t time.Time }

func (c fakeClock) Now() time.Time { return c.t }

// testNow is the tests' "now": the afternoon after the 2025 spring DST
// change in Europe (30 March), so a 14-day window in Europe/Paris crosses a
// 23-hour day.
var testNow = time.Date(2025, 3, 31, 15, 4, 5, 0, time.UTC)

// Gateway keys of the test tenants, as the gateway's authenticate maps them.
const (
	keyAcme  = "gh_acme"
	keyBeta  = "gh_beta"
	keyEmpty = "gh_empty" // Auth returns "" and no error: a broken Auth
	keyDown  = "gh_down"  // the key store is unavailable
)

// testAuth mimics the gateway's authenticate: Bearer keys only.
func testAuth(r *http.Request) (string, error) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "missing gateway key")
	}
	tok, ok := strings.CutPrefix(a, "Bearer ")
	if !ok {
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "Authorization header must be \"Bearer <gateway key>\"")
	}
	switch tok {
	case keyAcme:
		return "acme", nil
	case keyBeta:
		return "beta", nil
	case keyEmpty:
		return "", nil
	case keyDown:
		return "", groundhog.WrapError(groundhog.EUNAVAILABLE, "key store unavailable", fmt.Errorf("disk I/O error"))
	}
	return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "unknown gateway key")
}

func openStore(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "groundhog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// workload describes the calls of one (tenant, operation) per day.
type workload struct {
	tenant, op string
	perDay     int   // calls on the newest day; older days have fewer
	pool       int   // distinct requests drawn from: smaller = more repeats
	cacheOn    bool  // repeats are answered from the cache (or coalesced)
	price      int64 // microdollars per call; -1 = unknown model
}

// sampleWorkloads is the dataset of the handler and Chromium tests: two
// tenants, an operation name that is an XSS attempt, cache on and off,
// unknown costs. Tenant beta's numbers are chosen to be unmistakable.
var sampleWorkloads = []workload{
	{tenant: "acme", op: "summarize", perDay: 200, pool: 150, price: 4000},
	{tenant: "acme", op: "extract", perDay: 120, pool: 60, cacheOn: true, price: 12500},
	{tenant: "acme", op: "<script>alert(1)</script>", perDay: 30, pool: 22, price: 900},
	{tenant: "acme", op: "classify", perDay: 60, pool: 40, cacheOn: true, price: 350},
	{tenant: "acme", op: "mystery-model", perDay: 12, pool: 10, price: -1},
	{tenant: "beta", op: "beta-secret-op", perDay: 377, pool: 100, price: 31337},
}

// genRows returns the rows of ws for the days days ending with the day of
// now (UTC), deterministic for a seed. Repeats are decided here the way the
// gateway would record them: a repeat of a hash seen earlier that day is a
// cache hit (or, 1 in 10, coalesced with InFlight set) when the cache is on,
// an upstream call otherwise; a few calls are idempotent replays.
func genRows(ws []workload, now time.Time, days int, seed uint64) []groundhog.LedgerEntry {
	rng := rand.New(rand.NewPCG(seed, 1))
	var rows []groundhog.LedgerEntry
	start, _ := ledger.DayBounds(now, time.UTC)
	for d := days - 1; d >= 0; d-- {
		dayStart := start.AddDate(0, 0, -d)
		for _, w := range ws {
			n := w.perDay * (days - d + 6) / (days + 6)
			seen := map[int]bool{}
			for i := 0; i < n; i++ {
				h := rng.IntN(w.pool)
				// Spread calls over the whole day (also the hours that fall
				// on another date in Europe/Paris).
				at := dayStart.Add(time.Duration(i) * 24 * time.Hour / time.Duration(n+1)).Add(time.Second)
				cost := groundhog.Money(w.price) * groundhog.Microdollar
				if w.price < 0 {
					cost = groundhog.CostUnknown
				}
				e := groundhog.LedgerEntry{
					ID: fmt.Sprintf("%s-%s-%d-%d", w.tenant, w.op, d, i), Time: at, Tenant: w.tenant, Operation: w.op,
					RequestHash: fmt.Sprintf("sha256:%s:%s:%d", w.tenant, w.op, h), Shape: groundhog.ShapeChat,
					Model: "sim-small", Provider: "sim", Outcome: groundhog.OutcomeUpstream, Status: 200,
					Usage: groundhog.Usage{InputTokens: 1000, OutputTokens: 100},
					Cost:  cost, FullCost: cost, Latency: 300 * time.Millisecond, Attempt: 1, CacheOn: w.cacheOn,
				}
				switch {
				case seen[h] && w.cacheOn && rng.IntN(10) == 0:
					e.Outcome, e.InFlight, e.Saved = groundhog.OutcomeCoalesced, true, cost
					e.Cost = 0
				case seen[h] && w.cacheOn:
					e.Outcome, e.Saved, e.Cost = groundhog.OutcomeCacheHit, cost, 0
				case seen[h] && rng.IntN(25) == 0:
					e.Outcome, e.Saved, e.Cost, e.Idempotent = groundhog.OutcomeReplayed, cost, 0, true
				case seen[h] && rng.IntN(8) == 0:
					e.InFlight = true // cache off: an identical call was in flight
				}
				if w.price < 0 {
					e.Saved = groundhog.CostUnknown
					if e.Outcome == groundhog.OutcomeUpstream {
						e.Saved = 0
					}
				}
				if e.Outcome == groundhog.OutcomeUpstream {
					samplePromptCache(&e, w, i)
				}
				seen[h] = true
				rows = append(rows, e)
			}
		}
	}
	return rows
}

// fill appends rows to the store through AppendLedger.
func fill(t testing.TB, db groundhog.LedgerStore, rows []groundhog.LedgerEntry) {
	t.Helper()
	for len(rows) > 0 {
		n := min(len(rows), 5000)
		if err := db.AppendLedger(context.Background(), rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
}

// sample is the store filled with the sample workloads, shared by the tests
// (which only read it): filling it once keeps the package's tests fast,
// also under -race on a busy machine.
var sample struct {
	once sync.Once
	dir  string
	db   *sqlite.DB
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sample.db != nil {
		sample.db.Close()
	}
	if sample.dir != "" {
		os.RemoveAll(sample.dir)
	}
	os.Exit(code)
}

// newTestDashboard returns a Dashboard over the store filled with the sample
// workloads, and the store.
func newTestDashboard(t testing.TB) (*Dashboard, *sqlite.DB) {
	t.Helper()
	sample.once.Do(func() {
		if sample.dir, sample.err = os.MkdirTemp("", "groundhog-dashboard-test"); sample.err != nil {
			return
		}
		ctx := context.Background()
		if sample.db, sample.err = sqlite.Open(ctx, filepath.Join(sample.dir, "groundhog.db")); sample.err != nil {
			return
		}
		sample.err = sample.db.AppendLedger(ctx, genRows(sampleWorkloads, testNow, DefaultDays+2, 42))
	})
	if sample.err != nil {
		t.Fatalf("sample store: %v", sample.err)
	}
	d := New(Options{Logger: quietLog, Store: sample.db, Auth: testAuth, Clock: fakeClock{testNow}})
	return d, sample.db
}

// get runs a request through h and returns the recorder.
func get(t testing.TB, h http.Handler, method, target, key string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// wantReport returns what WriteJSON writes for ledger.BuildReport(p).
func wantReport(t testing.TB, store groundhog.LedgerStore, p ledger.ReportParams) []byte {
	t.Helper()
	rep, err := ledger.BuildReport(context.Background(), store, p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// domNumber is an element of the page that shows a report number.
type domNumber struct {
	field, value, text string
	operation          string
	total, report      bool // the total object; a top-level report key
	card               bool // a headline card's number (class "num")
	day                string
}

var (
	// Chromium serializes attribute values with < and > unescaped, so a
	// tag ends at the first > outside quotes.
	tagRe  = regexp.MustCompile(`<(?:td|span|rect)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*/?>`)
	attrRe = regexp.MustCompile(`([a-zA-Z-]+)(?:="([^"]*)")?`)
)

// domNumbers extracts every element with a data-field attribute from an
// HTML document (as served, or as Chromium serializes its DOM), with the
// text up to the next tag.
func domNumbers(doc string) []domNumber {
	var out []domNumber
	for _, loc := range tagRe.FindAllStringSubmatchIndex(doc, -1) {
		attrs := doc[loc[2]:loc[3]]
		if !strings.Contains(attrs, "data-field=") {
			continue
		}
		n := domNumber{card: strings.Contains(attrs, `class="num"`)}
		for _, m := range attrRe.FindAllStringSubmatch(attrs, -1) {
			v := html.UnescapeString(m[2])
			switch m[1] {
			case "data-field":
				n.field = v
			case "data-value":
				n.value = v
			case "data-operation":
				n.operation = v
			case "data-total":
				n.total = true
			case "data-report":
				n.report = true
			case "data-day":
				n.day = v
			}
		}
		rest := doc[loc[1]:]
		if i := strings.IndexByte(rest, '<'); i >= 0 {
			n.text = html.UnescapeString(rest[:i])
		}
		out = append(out, n)
	}
	return out
}

// decodeReport decodes report JSON keeping numbers as written.
func decodeReport(t testing.TB, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode report: %v\n%s", err, b)
	}
	return m
}

// displayed returns the text the table shows for a JSON number of field.
func displayed(t testing.TB, field, value string, card bool) string {
	t.Helper()
	switch {
	case field == "repeat_share" || field == "prompt_cache_hit_ratio":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%s %q: %v", field, value, err)
		}
		return strconv.FormatFloat(f*100, 'f', 2, 64) + "%"
	case field == "prompt_cache_breaks":
		var bs []struct {
			Cause string `json:"cause"`
			Calls int64  `json:"calls"`
		}
		if err := json.Unmarshal([]byte(value), &bs); err != nil {
			t.Fatalf("prompt_cache_breaks %q: %v", value, err)
		}
		var parts []string
		for _, b := range bs {
			parts = append(parts, fmt.Sprintf("%s ×%d", b.Cause, b.Calls))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	case field == "prompt_cache_agreement":
		var as []struct {
			Cause  string `json:"cause"`
			Reason string `json:"provider_reason"`
			Calls  int64  `json:"calls"`
		}
		if err := json.Unmarshal([]byte(value), &as); err != nil {
			t.Fatalf("prompt_cache_agreement %q: %v", value, err)
		}
		var parts []string
		for _, a := range as {
			cause := a.Cause
			if cause == "" {
				cause = "-"
			}
			parts = append(parts, fmt.Sprintf("%s / %s ×%d", cause, a.Reason, a.Calls))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	case value == "null":
		return "unknown" // an unknown amount, never shown as 0
	case strings.HasSuffix(field, "_usd"):
		m, err := groundhog.ParseMoney(value)
		if err != nil {
			t.Fatalf("%s %q: %v", field, value, err)
		}
		if card {
			return cardMoney(groundhog.TotalOf(m))
		}
		// A table cell shows money as the JSON writes it: six decimals.
		return value
	}
	return value
}

// zeroOf is the JSON zero of a report key.
func zeroOf(field string) string {
	switch {
	case field == "repeat_share" || field == "prompt_cache_hit_ratio":
		return "0.0000"
	case field == "prompt_cache_breaks" || field == "prompt_cache_agreement":
		return "[]"
	case strings.HasSuffix(field, "_usd"):
		return "0.000000"
	}
	return "0"
}

// checkDOMAgainstReport checks that every report number shown in doc equals
// the report JSON's (data-value exactly, and the shown text as the terminal
// table formats it), and that every number of the JSON's operations and
// total is shown in the table. It returns how many numbers it compared.
func checkDOMAgainstReport(t testing.TB, doc string, reportJSON []byte) int {
	t.Helper()
	rep := decodeReport(t, reportJSON)
	rows := map[string]map[string]any{}
	for _, o := range rep["operations"].([]any) {
		m := o.(map[string]any)
		rows[m["operation"].(string)] = m
	}
	total := rep["total"].(map[string]any)
	shown := map[string]bool{}
	compared := 0
	for _, n := range domNumbers(doc) {
		if n.day != "" {
			continue // a chart bar: checked against that day's report elsewhere
		}
		var want string
		switch {
		case n.report:
			want = fmtJSONNumber(rep[n.field])
		case n.total:
			v, ok := total[n.field]
			if !ok {
				t.Errorf("DOM shows total %s, not a key of the report", n.field)
				continue
			}
			want = fmtJSONNumber(v)
			shown["\x00total\x00"+n.field] = true
		default:
			row, ok := rows[n.operation]
			if !ok {
				// The cards of an operation selected on a day it had no
				// call: the report has no row, the page must show zeros.
				want = zeroOf(n.field)
				break
			}
			want = fmtJSONNumber(row[n.field])
			shown[n.operation+"\x00"+n.field] = true
		}
		if n.value != want {
			t.Errorf("DOM %s of %q (total %v): data-value %q, report %q", n.field, n.operation, n.total, n.value, want)
		}
		if !n.report {
			text := strings.TrimPrefix(n.text, "$")
			if w := displayed(t, n.field, want, n.card); text != w {
				t.Errorf("DOM %s of %q (total %v) shows %q, want %q", n.field, n.operation, n.total, n.text, w)
			}
		}
		compared++
	}
	for op, row := range rows {
		for k := range row {
			if k != "operation" && !shown[op+"\x00"+k] {
				t.Errorf("report %s of operation %q is not shown", k, op)
			}
		}
	}
	for k := range total {
		if !shown["\x00total\x00"+k] {
			t.Errorf("report total %s is not shown", k)
		}
	}
	return compared
}
