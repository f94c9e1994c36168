package groundhog_test

import (
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// TestCacheStorageCostAcrossDays: a cache's rent cut at UTC midnights (as a
// ledger books it, one piece per day) adds up to the rent of its whole
// life to the picodollar, each piece is the day's share prorated to the
// second, and a million tokens at $1.00 per million per hour cost exactly
// one dollar an hour.
func TestCacheStorageCostAcrossDays(t *testing.T) {
	p := groundhog.Price{CacheStoragePerHour: 1_000_000} // $1.00 per million tokens per hour
	if got := p.CacheStorageCost(1_000_000, 3600); got != groundhog.Dollar {
		t.Fatalf("a million tokens for an hour: %s", got)
	}
	created := time.Date(2026, 3, 1, 23, 30, 0, 700_000_000, time.UTC)
	end := time.Date(2026, 3, 3, 0, 15, 9, 0, time.UTC)
	for _, tokens := range []int64{1024, 3019, 777_777, 1_000_000} {
		whole := p.CacheStorageCost(tokens, groundhog.CacheLifeSeconds(created, end))
		var sum groundhog.Money
		var days int
		for from := created; from.Before(end); days++ {
			to := time.Date(from.Year(), from.Month(), from.Day()+1, 0, 0, 0, 0, time.UTC)
			if to.After(end) {
				to = end
			}
			piece := p.CacheStorageCost(tokens, groundhog.CacheLifeSeconds(created, to)) - p.CacheStorageCost(tokens, groundhog.CacheLifeSeconds(created, from))
			secs := groundhog.CacheLifeSeconds(created, to) - groundhog.CacheLifeSeconds(created, from)
			// The piece is its seconds' share, within the one picodollar
			// that truncation moves between neighbours.
			exact := groundhog.Money(tokens * p.CacheStoragePerHour * secs / 3600)
			if d := piece - exact; d < -1 || d > 1 {
				t.Errorf("%d tokens, day %d: %s for %d s, want about %s", tokens, days, piece.Format(12), secs, exact.Format(12))
			}
			sum += piece
			from = to
		}
		if days != 3 || sum != whole {
			t.Errorf("%d tokens: %d days summing to %s, whole life %s", tokens, days, sum.Format(12), whole.Format(12))
		}
	}
	if got := (groundhog.Price{}).CacheStorageCost(1000, 60); got != groundhog.CostUnknown {
		t.Errorf("rent without a storage rate: %s, want unknown", got)
	}
}
