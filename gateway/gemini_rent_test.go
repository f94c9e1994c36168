package gateway_test

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/postgres"
	"github.com/groundhog-ai/groundhog/storetest"
)

// advanceFails is a RentedCacheStore whose AdvanceRent fails: a gateway
// on it writes a rent row and dies before its record says so.
type advanceFails struct{ groundhog.RentedCacheStore }

func (advanceFails) AdvanceRent(context.Context, string, string, time.Time, time.Time, bool) (bool, error) {
	return false, errors.New("killed before advancing")
}

// rentRows returns the ledger's cache_rent rows in store.
func rentRows(t *testing.T, store groundhog.LedgerStore) []groundhog.LedgerEntry {
	t.Helper()
	var out []groundhog.LedgerEntry
	err := store.ScanLedger(context.Background(), groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		if e.Outcome == groundhog.OutcomeCacheRent {
			out = append(out, *e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// twoDayReports returns the spend and the storage rent of the reports of
// the UTC day of day and the day before.
func twoDayReports(t *testing.T, store groundhog.LedgerStore, day time.Time) (spend, rent groundhog.Total) {
	t.Helper()
	for _, d := range []time.Time{day.Add(-24 * time.Hour), day} {
		rep, err := ledger.BuildReport(context.Background(), store, ledger.ReportParams{Day: d})
		if err != nil {
			t.Fatal(err)
		}
		spend, rent = spend.Plus(rep.Total.Spend), rent.Plus(rep.Total.CacheRent)
	}
	return spend, rent
}

// TestGeminiCacheRentSurvivesRestart: a cache created by the SDK at 23:50
// lives across midnight. A gateway books the first day's piece and is
// killed before its record says so; a new gateway on the same store books
// it again (the ledger keeps one row) and the record advances. An update
// of the cache's expireTime shortens its life; once it expired, one more
// new gateway books the second day. The rent booked equals the simulated
// provider's to the micro-dollar, in one row per day, and the reports of
// the two days add up to its whole bill.
func TestGeminiCacheRentSurvivesRestart(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 5, 2, 23, 50, 0, 0, time.UTC)}
	h := newHarness(t, withClock(clock))
	cl := geminiClient(t, h, "k", nil)
	ctx := context.Background()
	cc, err := cl.Caches.Create(ctx, geminiModel, &genai.CreateCachedContentConfig{
		TTL: 2 * time.Hour, Contents: []*genai.Content{genai.NewContentFromText(words(1500, "term"), genai.RoleUser)},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens := int64(cc.UsageMetadata.TotalTokenCount)

	clock.Advance(30 * time.Minute) // 00:20
	crashed := h.Opts
	crashed.RentedCaches = advanceFails{h.DB}
	gateway.New(crashed).SweepCacheRent(ctx)
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := rentRows(t, h.DB); len(rows) != 1 {
		t.Fatalf("%d rent rows after the first sweep, want the first day's", len(rows))
	}
	restarted := gateway.New(h.Opts)
	restarted.SweepCacheRent(ctx)
	restarted.SweepCacheRent(ctx)

	expire := time.Date(2026, 5, 3, 1, 0, 0, 0, time.UTC)
	up, err := cl.Caches.Update(ctx, cc.Name, &genai.UpdateCachedContentConfig{ExpireTime: expire})
	if err != nil || !up.ExpireTime.Equal(expire) {
		t.Fatalf("update: %v %+v", err, up)
	}
	clock.Advance(2 * time.Hour) // 02:20: expired at 01:00
	gateway.New(h.Opts).SweepCacheRent(ctx)
	h.GW.SweepCacheRent(ctx)
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	p, _ := h.Cfg.PriceTable.Lookup(geminiModel)
	bill := readExplicitBill(t, h)
	storage, err := groundhog.ParseMoney(bill.StorageUSDExact)
	if err != nil {
		t.Fatal(err)
	}
	if want := p.CacheStorageCost(tokens, 70*60); storage != want || storage <= 0 {
		t.Fatalf("sim storage %s, want 70 minutes: %s", storage.Format(12), want.Format(12))
	}
	rows := rentRows(t, h.DB)
	first := p.CacheStorageCost(tokens, 10*60)
	if len(rows) != 2 || !rows[0].Time.Equal(cc.CreateTime) || rows[0].Cost != first ||
		!rows[1].Time.Equal(time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)) || rows[1].Cost != storage-first {
		t.Fatalf("rent rows %+v, want %s at creation and %s at midnight", rows, first.Format(12), (storage - first).Format(12))
	}
	spend, rent := twoDayReports(t, h.DB, clock.Now())
	if rent.String() != storage.String() {
		t.Errorf("reports' storage rent %s, sim %s", rent, storage)
	}
	if spend.String() != bill.USD {
		t.Errorf("reports' spend %s, sim bill %s", spend, bill.USD)
	}
}

// costMetric is the sum of m's groundhog_cost_usd_total series.
func costMetric(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var sum float64
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "groundhog_cost_usd_total{"); ok {
			v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}

// TestGeminiCacheRentTwoReplicasPostgres: two gateways on one PostgreSQL
// store sweep the rent of one cache at once, after midnight and after its
// expiry: each day's piece is booked once, and the reports (from the
// store's daily rollups) add up to the simulated provider's bill.
func TestGeminiCacheRentTwoReplicasPostgres(t *testing.T) {
	u := storetest.FreshPostgres(t)
	ctx := context.Background()
	clock := &testClock{t: time.Date(2026, 6, 9, 23, 40, 0, 0, time.UTC)}
	h := newHarness(t, withClock(clock))
	pg, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	type replica struct {
		gw  *gateway.Server
		lw  *ledger.Writer
		m   *metrics.Metrics
		url string
	}
	open := func() replica {
		lw, err := ledger.OpenWriter(ctx, pg, ledger.WriterOptions{JournalDir: filepath.Join(t.TempDir(), "journal")})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(cache.Options{Store: pg, MaxBytes: h.Cfg.Cache.MemoryBytes})
		if err != nil {
			t.Fatal(err)
		}
		o := h.Opts
		m := metrics.New(nil)
		o.Keys, o.Cache, o.Ledger, o.Ready, o.Resources = pg, c, &observe.Recorder{Next: lw, Metrics: m}, pg.Ping, nil
		o.Idem = idempotency.New(idempotency.Options{Store: pg, Lease: h.Cfg.Idempotency.Lease, Retention: h.Cfg.Idempotency.Retention})
		gw := gateway.New(o)
		srv := httptest.NewServer(gw)
		t.Cleanup(func() { srv.Close(); _ = lw.Close(context.Background()) })
		return replica{gw, lw, m, srv.URL}
	}
	a, b := open(), open()
	cl := geminiClient(t, &harness{URL: a.url}, "k", nil)
	cc, err := cl.Caches.Create(ctx, geminiModel, &genai.CreateCachedContentConfig{
		TTL: time.Hour, Contents: []*genai.Content{genai.NewContentFromText(words(1500, "term"), genai.RoleUser)},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens := int64(cc.UsageMetadata.TotalTokenCount)

	sweepTogether := func() {
		var wg sync.WaitGroup
		for range 3 {
			for _, r := range []replica{a, b} {
				wg.Add(1)
				go func() { defer wg.Done(); r.gw.SweepCacheRent(ctx) }()
			}
		}
		wg.Wait()
	}
	clock.Advance(30 * time.Minute) // 00:10
	sweepTogether()
	clock.Advance(time.Hour) // 01:10: expired at 00:40
	sweepTogether()
	for _, r := range []replica{a, b} {
		if err := r.lw.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	p, _ := h.Cfg.PriceTable.Lookup(geminiModel)
	bill := readExplicitBill(t, h)
	storage, err := groundhog.ParseMoney(bill.StorageUSDExact)
	if err != nil {
		t.Fatal(err)
	}
	if want := p.CacheStorageCost(tokens, 60*60); storage != want {
		t.Fatalf("sim storage %s, want an hour's: %s", storage.Format(12), want.Format(12))
	}
	rows := rentRows(t, pg)
	first := p.CacheStorageCost(tokens, 20*60)
	if len(rows) != 2 || rows[0].Cost != first || rows[1].Cost != storage-first {
		t.Fatalf("rent rows %+v, want one per day: %s and %s", rows, first.Format(12), (storage - first).Format(12))
	}
	spend, rent := twoDayReports(t, pg, clock.Now())
	if rent.String() != storage.String() {
		t.Errorf("reports' storage rent %s, sim %s", rent, storage)
	}
	if spend.String() != bill.USD {
		t.Errorf("reports' spend %s, sim bill %s", spend, bill.USD)
	}
	// The spend metric, summed over the replicas as a dashboard sums it,
	// is the bill too: each piece counted by the sweep that booked it.
	var metric float64
	for _, r := range []replica{a, b} {
		metric += costMetric(t, r.m)
	}
	if want := float64(p.Cost(groundhog.Usage{InputTokens: tokens})+storage) / 1e12; math.Abs(metric-want) > 1e-12 {
		t.Errorf("groundhog_cost_usd_total over the replicas %.12f, want the create and the rent: %.12f", metric, want)
	}
}

// TestGeminiCacheRentUnknownPrice: the rent of a cache of a model the
// price table does not price is booked unknown — one row per day, counted
// in the report's unknown rent days, not as a call — never 0.
func TestGeminiCacheRentUnknownPrice(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 7, 1, 23, 30, 0, 0, time.UTC)}
	h := newHarness(t, withClock(clock))
	ctx := context.Background()
	err := h.DB.PutRentedCache(ctx, groundhog.RentedCache{Tenant: "local", Operation: "docs", Model: "mystery-model", Name: "cachedContents/m",
		Tokens: 5000, Created: clock.Now(), Expire: clock.Now().Add(time.Hour), BookedUntil: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	h.GW.SweepCacheRent(ctx)
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows := rentRows(t, h.DB)
	if len(rows) != 2 || rows[0].Cost != groundhog.CostUnknown || rows[1].Cost != groundhog.CostUnknown {
		t.Fatalf("rent rows %+v, want two of unknown cost", rows)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.UnknownRentDays != 1 || rep.Total.UnknownCostCalls != 0 || rep.Total.Calls != 0 || rep.Total.CacheRent.Sign() != 0 || rep.Total.Spend.Sign() != 0 {
		t.Fatalf("report %+v", rep.Total)
	}
}
