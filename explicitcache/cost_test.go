package explicitcache

import (
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// flash is gemini-2.5-flash at Google's list prices (µ$ per Mtok): input
// 0.30, cached 0.03, creation billed at the input rate, storage 1.00 per
// hour. lite is gemini-2.5-flash-lite: 0.10, 0.01, 1.00 per hour.
var (
	flash = Rates{Input: 300_000, Cached: 30_000, Creation: 300_000, StoragePerHour: 1_000_000}
	lite  = Rates{Input: 100_000, Cached: 10_000, Creation: 100_000, StoragePerHour: 1_000_000}
)

var model = Model{TTL: 10 * time.Minute, Window: 10 * time.Minute, ImplicitLife: 5 * time.Minute}

func at(ds ...time.Duration) []time.Time {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	out := make([]time.Time, len(ds))
	for i, d := range ds {
		out[i] = t0.Add(d)
	}
	return out
}

func TestCreateEstimate(t *testing.T) {
	min := time.Minute
	for _, tc := range []struct {
		name     string
		rates    Rates
		uses     []time.Time
		milli    int64
		savings  groundhog.Money
		creation groundhog.Money
		rent     groundhog.Money
		net      groundhog.Money
		pays     bool
	}{
		{
			// Every 6 minutes, beyond the implicit cache's life: this
			// request and 2 × 10m / 12m = 1.666 later ones are reads only
			// an explicit cache serves. 30,000 × 0.27 µ$ = $0.0081 a read.
			name: "spaced beyond implicit life", rates: flash, uses: at(0, 6*min, 12*min),
			milli: 2666, savings: 21_594_600_000, creation: 9_000_000_000, rent: 5_000_000_000, net: 7_594_600_000, pays: true,
		},
		{
			// Every 30 seconds: implicit caching reads the prefix at the
			// cached rate for free; an explicit cache only adds cost.
			name: "implicit caching serves it", rates: flash, uses: at(0, 30*time.Second, 60*time.Second),
			milli: 0, savings: 0, creation: 9_000_000_000, rent: 5_000_000_000, net: -14_000_000_000, pays: false,
		},
		{
			// One gap of three is beyond implicit life, and not this
			// request's: 1 × 10m / 10m = 1 read, short of creation + rent.
			name: "mostly implicit", rates: flash, uses: at(0, 6*min, 8*min, 10*min),
			milli: 1000, savings: 8_100_000_000, creation: 9_000_000_000, rent: 5_000_000_000, net: -5_900_000_000, pays: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := model.CreateEstimate(tc.rates, 30_000, tc.uses, tc.uses[len(tc.uses)-1])
			if e.ExpectedMilliReads != tc.milli || e.Savings != tc.savings || e.Creation != tc.creation || e.Rent != tc.rent || e.Net != tc.net || e.Pays != tc.pays {
				t.Fatalf("estimate %+v; want reads %d savings %d creation %d rent %d net %d pays %v", e, tc.milli, tc.savings, tc.creation, tc.rent, tc.net, tc.pays)
			}
		})
	}
}

func TestUnknownPriceNeverCreates(t *testing.T) {
	noRent := flash
	noRent.StoragePerHour = 0
	for _, r := range []Rates{{}, noRent} {
		uses := at(0, 6*time.Minute, 12*time.Minute)
		e := model.CreateEstimate(r, 30_000, uses, uses[2])
		if e.Pays || e.Net.Known() || e.Rent.Known() {
			t.Fatalf("rates %+v: %+v; want unknown and no cache", r, e)
		}
	}
}

func TestKeepEstimate(t *testing.T) {
	min := time.Minute
	uses := at(0, 6*min, 12*min)
	for _, tc := range []struct {
		name  string
		rates Rates
		now   time.Duration
		milli int64
		net   groundhog.Money
		pays  bool
	}{
		// 1.666 reads × $0.0081 − $0.005 rent for 10 minutes.
		{"reuse continues", flash, 20 * min, 1666, 8_494_600_000, true},
		// Nothing within the window: no reads, only rent.
		{"reuse stopped", flash, 22*min + time.Second, 0, -5_000_000_000, false},
		// Flash-Lite saves $0.0027 a read: 1.666 reads do not cover the
		// same rent.
		{"cheap model", lite, 20 * min, 1666, -501_800_000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := model.KeepEstimate(tc.rates, 30_000, uses, at(tc.now)[0])
			if e.ExpectedMilliReads != tc.milli || e.Creation != 0 || e.Net != tc.net || e.Pays != tc.pays {
				t.Fatalf("estimate %+v; want reads %d net %d pays %v", e, tc.milli, tc.net, tc.pays)
			}
		})
	}
}
