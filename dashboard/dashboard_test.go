package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

func TestReportEqualsBuildReport(t *testing.T) {
	d, db := newTestDashboard(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	yesterday := testNow.AddDate(0, 0, -1)
	tests := []struct {
		name  string
		query string
		key   string
		want  ledger.ReportParams
	}{
		{"default is today UTC", "", keyAcme, ledger.ReportParams{Day: testNow, Tenant: "acme"}},
		{"today", "day=today", keyAcme, ledger.ReportParams{Day: testNow, Tenant: "acme"}},
		{"yesterday", "day=yesterday", keyAcme, ledger.ReportParams{Day: yesterday, Tenant: "acme"}},
		{"date", "day=2025-03-25", keyAcme, ledger.ReportParams{Day: time.Date(2025, 3, 25, 0, 0, 0, 0, time.UTC), Tenant: "acme"}},
		{"tz shifts the day boundaries", "day=2025-03-30&tz=Europe/Paris", keyAcme,
			ledger.ReportParams{Day: time.Date(2025, 3, 30, 12, 0, 0, 0, paris), Location: paris, Tenant: "acme"}},
		{"operation filter", "day=today&operation=extract", keyAcme, ledger.ReportParams{Day: testNow, Tenant: "acme", Operation: "extract"}},
		{"escaped operation", "operation=" + url.QueryEscape("<script>alert(1)</script>"), keyAcme,
			ledger.ReportParams{Day: testNow, Tenant: "acme", Operation: "<script>alert(1)</script>"}},
		{"json explicitly", "format=json", keyBeta, ledger.ReportParams{Day: testNow, Tenant: "beta"}},
		{"day with no rows", "day=2024-01-01", keyAcme, ledger.ReportParams{Day: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Tenant: "acme"}},
	}
	h := d.ReportHandler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, h, http.MethodGet, ReportPath+"?"+tt.query, tt.key)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if cc := w.Header().Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				t.Errorf("Cache-Control %q: tenant data must not be cached", cc)
			}
			want := wantReport(t, db, tt.want)
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("body differs from ledger.BuildReport's WriteJSON:\n got %s\nwant %s", w.Body, want)
			}
		})
	}

	t.Run("csv", func(t *testing.T) {
		w := get(t, h, http.MethodGet, ReportPath+"?day=yesterday&format=csv", keyAcme)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		rep, err := ledger.BuildReport(context.Background(), db, ledger.ReportParams{Day: yesterday, Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := rep.WriteCSV(&want); err != nil {
			t.Fatal(err)
		}
		if w.Body.String() != want.String() {
			t.Errorf("CSV differs:\n got %s\nwant %s", w.Body, want.String())
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Errorf("Content-Type %q", ct)
		}
	})

	t.Run("HEAD", func(t *testing.T) {
		w := get(t, h, http.MethodHead, ReportPath+"?day=today", keyAcme)
		if w.Code != http.StatusOK {
			t.Errorf("HEAD: status %d", w.Code)
		}
	})

	t.Run("Options.Location is the default zone", func(t *testing.T) {
		dp := New(Options{Logger: quietLog, Store: db, Auth: testAuth, Clock: fakeClock{testNow}, Location: paris})
		w := get(t, dp.ReportHandler(), http.MethodGet, ReportPath+"?day=2025-03-30", keyAcme)
		want := wantReport(t, db, ledger.ReportParams{Day: time.Date(2025, 3, 30, 0, 0, 0, 0, paris), Location: paris, Tenant: "acme"})
		if !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("body differs from the Europe/Paris report:\n got %s\nwant %s", w.Body, want)
		}
		utc := wantReport(t, db, ledger.ReportParams{Day: time.Date(2025, 3, 30, 0, 0, 0, 0, time.UTC), Tenant: "acme"})
		if bytes.Equal(want, utc) {
			t.Fatal("the sample data gives the same report in UTC and Europe/Paris: the test proves nothing")
		}
	})
}

// TestTenantScoping checks that a key only ever sees its own tenant: the
// report and the dashboard of beta carry none of acme's operations or
// numbers, and each equals the tenant-scoped BuildReport, never the
// all-tenants one.
func TestTenantScoping(t *testing.T) {
	d, db := newTestDashboard(t)
	all := wantReport(t, db, ledger.ReportParams{Day: testNow})
	for _, tc := range []struct {
		key, tenant, own, other string
	}{
		{keyAcme, "acme", "summarize", "beta-secret-op"},
		{keyBeta, "beta", "beta-secret-op", "summarize"},
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			want := wantReport(t, db, ledger.ReportParams{Day: testNow, Tenant: tc.tenant})
			if bytes.Equal(want, all) {
				t.Fatal("tenant report equals the all-tenants report: the data proves nothing")
			}
			// A tenant parameter is refused, never obeyed.
			w := get(t, d.ReportHandler(), http.MethodGet, ReportPath+"?day=today&tenant="+tc.other, tc.key)
			if w.Code != http.StatusBadRequest {
				t.Errorf("?tenant=: status %d, want 400", w.Code)
			}
			w = get(t, d.ReportHandler(), http.MethodGet, ReportPath+"?day=today", tc.key)
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("report of %s differs from its tenant-scoped BuildReport:\n got %s\nwant %s", tc.tenant, w.Body, want)
			}
			if strings.Contains(w.Body.String(), tc.other) {
				t.Errorf("report of %s names %q", tc.tenant, tc.other)
			}
			// Even asking for the other tenant's operation by name gives
			// nothing.
			w = get(t, d.ReportHandler(), http.MethodGet, ReportPath+"?operation="+url.QueryEscape(tc.other), tc.key)
			rep := decodeReport(t, w.Body.Bytes())
			if ops := rep["operations"].([]any); len(ops) != 0 {
				t.Errorf("operation %q of the other tenant: %v", tc.other, ops)
			}

			page := get(t, d.Handler(), http.MethodGet, "/groundhog/", tc.key)
			if page.Code != http.StatusOK {
				t.Fatalf("dashboard: status %d: %s", page.Code, page.Body)
			}
			body := page.Body.String()
			if strings.Contains(body, tc.other) {
				t.Errorf("dashboard of %s names %q", tc.tenant, tc.other)
			}
			if !strings.Contains(body, tc.own) {
				t.Errorf("dashboard of %s does not name its own operation %q", tc.tenant, tc.own)
			}
			if n := checkDOMAgainstReport(t, body, want); n < 15 {
				t.Errorf("only %d numbers compared", n)
			}
			// Every chart bar of every day is the tenant's own number.
			checkBars(t, db, body, tc.tenant, "", nil)
		})
	}
}

// checkBars compares every chart bar in doc with the report of its day for
// tenant (the operation's row, or the total when op is "").
func checkBars(t *testing.T, db groundhog.LedgerStore, doc, tenant, op string, loc *time.Location) {
	t.Helper()
	if loc == nil {
		loc = time.UTC
	}
	reports := map[string]map[string]any{}
	bars := 0
	for _, n := range domNumbers(doc) {
		if n.day == "" {
			continue
		}
		bars++
		row, ok := reports[n.day]
		if !ok {
			day, err := time.ParseInLocation("2006-01-02", n.day, loc)
			if err != nil {
				t.Fatalf("bar day %q: %v", n.day, err)
			}
			rep := decodeReport(t, dayReport(t, db, tenant, day, loc))
			row = rep["total"].(map[string]any)
			if op != "" {
				row = map[string]any{}
				for _, o := range rep["operations"].([]any) {
					if m := o.(map[string]any); m["operation"] == op {
						row = m
					}
				}
			}
			reports[n.day] = row
		}
		want := zeroOf(n.field)
		if v, ok := row[n.field]; ok {
			want = fmtJSONNumber(v)
		}
		if n.value != want {
			t.Errorf("bar %s on %s: %q, report %q", n.field, n.day, n.value, want)
		}
	}
	if bars != chartSeries*DefaultDays {
		t.Errorf("%d bars, want %d (%d series × %d days)", bars, chartSeries*DefaultDays, chartSeries, DefaultDays)
	}
	if len(reports) != DefaultDays {
		t.Errorf("bars cover %d days, want %d", len(reports), DefaultDays)
	}
}

// dayReports memoizes the sample store's day reports that checkBars
// compares bars with (the store is read-only once filled).
var dayReports = map[string][]byte{}

func dayReport(t *testing.T, db groundhog.LedgerStore, tenant string, day time.Time, loc *time.Location) []byte {
	k := tenant + "|" + loc.String() + "|" + day.Format("2006-01-02")
	if db != groundhog.LedgerStore(sample.db) {
		return wantReport(t, db, ledger.ReportParams{Day: day, Location: loc, Tenant: tenant})
	}
	if b, ok := dayReports[k]; ok {
		return b
	}
	b := wantReport(t, db, ledger.ReportParams{Day: day, Location: loc, Tenant: tenant})
	dayReports[k] = b
	return b
}

func fmtJSONNumber(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestBadInput(t *testing.T) {
	d, _ := newTestDashboard(t)
	tests := []struct {
		name   string
		method string
		query  string
		status int
		only   string // "report" or "page": the case applies to one handler
	}{
		{"bad day", "GET", "day=tomorrow", 400, ""},
		{"bad date", "GET", "day=2025-13-01", 400, ""},
		{"empty day", "GET", "day=", 400, ""},
		{"day out of range", "GET", "day=0001-01-01", 400, ""},
		{"bad tz", "GET", "tz=Mars/Olympus_Mons", 400, ""},
		{"empty tz", "GET", "tz=", 400, ""},
		{"server-local tz", "GET", "tz=Local", 400, ""},
		{"tz path traversal", "GET", "tz=../../etc/passwd", 400, ""},
		{"bad format", "GET", "format=xml", 400, "report"},
		{"format on the dashboard", "GET", "format=json", 400, "page"},
		{"unknown parameter", "GET", "dya=today", 400, ""},
		{"tenant parameter", "GET", "tenant=beta", 400, ""},
		{"repeated parameter", "GET", "day=today&day=yesterday", 400, ""},
		{"malformed query", "GET", "day=%zz", 400, ""},
		{"POST", "POST", "day=today", 405, ""},
		{"PUT", "PUT", "", 405, ""},
		{"DELETE", "DELETE", "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.only != "page" {
				w := get(t, d.ReportHandler(), tt.method, ReportPath+"?"+tt.query, keyAcme)
				if w.Code != tt.status {
					t.Errorf("report: status %d, want %d: %s", w.Code, tt.status, w.Body)
				}
				var e struct {
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
					t.Errorf("report: error body %s (%v)", w.Body, err)
				}
				if tt.status == 405 && w.Header().Get("Allow") != "GET, HEAD" {
					t.Errorf("405 without Allow: %v", w.Header())
				}
			}
			if tt.only == "report" {
				return
			}
			w := get(t, d.Handler(), tt.method, "/groundhog/?"+tt.query, keyAcme)
			if w.Code != tt.status {
				t.Errorf("dashboard: status %d, want %d", w.Code, tt.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("dashboard error Content-Type %q", ct)
			}
		})
	}
}

func TestAuthFailures(t *testing.T) {
	d, _ := newTestDashboard(t)
	tests := []struct {
		name   string
		header string // Authorization
		status int
		typ    string
	}{
		{"no key", "", 401, "authentication_error"},
		{"unknown key", "Bearer gh_nope", 401, "authentication_error"},
		{"wrong scheme", "Token " + keyAcme, 401, "authentication_error"},
		{"key store down", "Bearer " + keyDown, 503, "server_error"},
		{"Auth returns no tenant", "Bearer " + keyEmpty, 500, "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} { // 401 before anything else
				r := newRequest(method, ReportPath+"?day=bogus&nope=1", tt.header)
				w := serve(d.ReportHandler(), r)
				if w.Code != tt.status {
					t.Errorf("%s report: status %d, want %d", method, w.Code, tt.status)
				}
				var e struct {
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Type != tt.typ || e.Error.Message == "" {
					t.Errorf("%s report: error body %s (%v)", method, w.Body, err)
				}
				if strings.Contains(w.Body.String(), "disk I/O") {
					t.Errorf("internal detail leaked: %s", w.Body)
				}
				w = serve(d.Handler(), newRequest(method, "/groundhog/?nope=1", tt.header))
				if w.Code != tt.status {
					t.Errorf("%s dashboard: status %d, want %d", method, w.Code, tt.status)
				}
				if tt.status == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
					t.Errorf("dashboard 401 does not ask the browser for credentials: %v", w.Header())
				}
				if strings.Contains(w.Body.String(), "disk I/O") {
					t.Errorf("internal detail leaked: %s", w.Body)
				}
			}
		})
	}

	// A browser sends the key through HTTP Basic: the password, or the user
	// name when the password is empty.
	for _, basic := range [][2]string{{"me", keyBeta}, {keyBeta, ""}} {
		r := newRequest("GET", "/groundhog/", "")
		r.SetBasicAuth(basic[0], basic[1])
		w := serve(d.Handler(), r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "beta-secret-op") {
			t.Errorf("Basic %q: status %d", basic, w.Code)
		}
		r = newRequest("GET", ReportPath, "")
		r.SetBasicAuth(basic[0], basic[1])
		if w := serve(d.ReportHandler(), r); w.Code != http.StatusOK {
			t.Errorf("report with Basic %q: status %d", basic, w.Code)
		}
	}
	r := newRequest("GET", "/groundhog/", "")
	r.SetBasicAuth("me", "gh_nope")
	if w := serve(d.Handler(), r); w.Code != http.StatusUnauthorized {
		t.Errorf("Basic with an unknown key: status %d", w.Code)
	}
}

func newRequest(method, target, authorization string) *http.Request {
	r, err := http.NewRequest(method, "http://gateway.test"+target, nil)
	if err != nil {
		panic(err)
	}
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// failingStore is a LedgerStore that is down.
type failingStore struct{}

func (failingStore) AppendLedger(context.Context, []groundhog.LedgerEntry) error { return nil }
func (failingStore) ScanLedger(context.Context, groundhog.LedgerFilter, func(*groundhog.LedgerEntry) error) error {
	return groundhog.WrapError(groundhog.EUNAVAILABLE, "store unavailable", errors.New("disk I/O error at /secret/path"))
}

func TestStoreUnavailable(t *testing.T) {
	d := New(Options{Logger: quietLog, Store: failingStore{}, Auth: testAuth, Clock: fakeClock{testNow}})
	for _, h := range []http.Handler{d.ReportHandler(), d.Handler()} {
		w := get(t, h, "GET", "/groundhog/", keyAcme)
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", w.Code)
		}
		if strings.Contains(w.Body.String(), "secret") || !strings.Contains(w.Body.String(), "store unavailable") {
			t.Errorf("body %s: want the client-safe message only", w.Body)
		}
	}
}

// TestDashboardEscapes checks that an operation name sent by a client is
// text everywhere on the page: in the table, the selector, links, titles.
func TestDashboardEscapes(t *testing.T) {
	d, _ := newTestDashboard(t)
	const evil = "<script>alert(1)</script>"
	for _, q := range []string{"", "?operation=" + url.QueryEscape(evil), "?operation=" + url.QueryEscape(`"><svg onload=alert(1)>`)} {
		w := get(t, d.Handler(), "GET", "/groundhog/"+q, keyAcme)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status %d", q, w.Code)
		}
		body := w.Body.String()
		for _, bad := range []string{"<script", "<svg onload", `"><svg`} {
			if strings.Contains(strings.ToLower(body), bad) {
				t.Errorf("%s: page contains %q", q, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the operation's name is not shown escaped", q)
		}
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("CSP %q must forbid scripts", csp)
		}
	}
}

// TestDashboardPage checks the page's structure and numbers: every number
// of the table and cards equals the report JSON, the bars equal each day's
// report, for all operations, one operation, and another zone.
func TestDashboardPage(t *testing.T) {
	d, db := newTestDashboard(t)
	paris, _ := time.LoadLocation("Europe/Paris")
	tests := []struct {
		name, query string
		op          string
		loc         *time.Location
		day         time.Time
	}{
		{"all operations", "", "", nil, testNow},
		{"one operation", "?operation=extract", "extract", nil, testNow},
		{"xss operation", "?operation=" + url.QueryEscape("<script>alert(1)</script>"), "<script>alert(1)</script>", nil, testNow},
		{"operation without calls", "?operation=nothing-here", "nothing-here", nil, testNow},
		{"Europe/Paris across DST, yesterday", "?tz=Europe/Paris&day=yesterday", "", paris, testNow.AddDate(0, 0, -1)},
		{"a past day", "?day=2025-03-20&operation=summarize", "summarize", nil, time.Date(2025, 3, 20, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, d.Handler(), "GET", "/groundhog/"+tt.query, keyAcme)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			body := w.Body.String()
			want := wantReport(t, db, ledger.ReportParams{Day: tt.day, Location: tt.loc, Tenant: "acme"})
			if n := checkDOMAgainstReport(t, body, want); n < 5*14 {
				t.Errorf("only %d numbers compared", n)
			}
			checkBars(t, db, body, "acme", tt.op, tt.loc)
			for _, s := range []string{"<title>Duplicate work", `role="img"`, "Calls and repeats per day",
				"Spend and savings per day", "Calls answered without the provider", "30-day projection"} {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if n := strings.Count(body, `<svg role="img" aria-label="`); n != charts {
				t.Errorf("%d labelled charts, want %d", n, charts)
			}
			if strings.Contains(body, "<script") || strings.Contains(body, "http://") && !strings.Contains(body, `xmlns="http://www.w3.org/2000/svg"`) {
				t.Errorf("page has a script or an external reference")
			}
			if strings.Contains(body, "https://") || strings.Contains(body, "src=") || strings.Contains(body, "<link") {
				t.Errorf("page loads an external asset")
			}
		})
	}
}

// TestDashboardDays checks the window: Options.Days consecutive calendar
// days ending with the page's day, also across a DST change.
func TestDashboardDays(t *testing.T) {
	_, db := newTestDashboard(t)
	for _, tc := range []struct {
		days int
		tz   string
		want []string
	}{
		{3, "Europe/Paris", []string{"2025-03-29", "2025-03-30", "2025-03-31"}},
		{2, "America/New_York", []string{"2025-03-30", "2025-03-31"}},
		{1, "", []string{"2025-03-31"}},
	} {
		d := New(Options{Logger: quietLog, Store: db, Auth: testAuth, Clock: fakeClock{testNow}, Days: tc.days})
		q := ""
		if tc.tz != "" {
			q = "?tz=" + tc.tz
		}
		w := get(t, d.Handler(), "GET", "/groundhog/"+q, keyAcme)
		var days []string
		for _, n := range domNumbers(w.Body.String()) {
			if n.day != "" && n.field == "calls" {
				days = append(days, n.day)
			}
		}
		if strings.Join(days, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Days=%d tz=%q: bars on %v, want %v", tc.days, tc.tz, days, tc.want)
		}
	}
}

func TestEmptyLedger(t *testing.T) {
	d := New(Options{Logger: quietLog, Store: openStore(t), Auth: testAuth, Clock: fakeClock{testNow}})
	w := get(t, d.Handler(), "GET", "/groundhog/", keyAcme)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	if !strings.Contains(body, "no calls on 2025-03-31") || strings.Count(body, "no data in these days") != charts {
		t.Errorf("empty ledger: no empty-state text")
	}
	rep := get(t, d.ReportHandler(), "GET", ReportPath, keyAcme)
	checkDOMAgainstReport(t, body, rep.Body.Bytes())
}

// TestCacheRentIsNoCall: a day with calls and the storage rent of explicit
// caches (known, and of a model without a storage price): the page's
// numbers are the report's, the rent is in spend but not in calls, and the
// unknown rent has a note of its own, not the unknown-cost calls' note.
func TestCacheRentIsNoCall(t *testing.T) {
	db := openStore(t)
	day, _ := ledger.DayBounds(testNow, time.UTC)
	rows := []groundhog.LedgerEntry{
		{ID: "a1", Time: day.Add(time.Hour), Tenant: "acme", Operation: "docs", RequestHash: "sha256:q1", Outcome: groundhog.OutcomeUpstream, Status: 200, Cost: groundhog.Dollar / 250, FullCost: groundhog.Dollar / 250},
		{ID: "a2", Time: day.Add(2 * time.Hour), Tenant: "acme", Operation: "docs", RequestHash: "sha256:q1", Outcome: groundhog.OutcomeUpstream, Status: 200, Cost: groundhog.Dollar / 250, FullCost: groundhog.Dollar / 250},
		{ID: "r1", Time: day, Tenant: "acme", Operation: "docs", RequestHash: "sha256:rent-1", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: groundhog.Dollar * 5 / 2, FullCost: groundhog.Dollar * 5 / 2},
		{ID: "r2", Time: day, Tenant: "acme", Operation: "memos", RequestHash: "sha256:rent-2", Outcome: groundhog.OutcomeCacheRent, Status: 200, Cost: groundhog.CostUnknown, FullCost: groundhog.CostUnknown},
	}
	if err := db.AppendLedger(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	d := New(Options{Logger: quietLog, Store: db, Auth: testAuth, Clock: fakeClock{testNow}})
	w := get(t, d.Handler(), "GET", "/groundhog/", keyAcme)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	rep := get(t, d.ReportHandler(), "GET", ReportPath, keyAcme)
	checkDOMAgainstReport(t, body, rep.Body.Bytes())
	doc := decodeReport(t, rep.Body.Bytes())
	total := doc["total"].(map[string]any)
	if fmtJSONNumber(total["calls"]) != "2" || fmtJSONNumber(total["spend_usd"]) != "2.508000" ||
		fmtJSONNumber(total["cache_rent_usd"]) != "2.500000" || fmtJSONNumber(doc["unknown_rent_days"]) != "1" || fmtJSONNumber(doc["unknown_cost_calls"]) != "0" {
		t.Errorf("report %s", rep.Body)
	}
	if !strings.Contains(body, "day(s) of explicit-cache storage rent have an unknown cost") || strings.Contains(body, "call(s) have an unknown cost") {
		t.Errorf("page notes:\n%s", body)
	}
}
