package pricing

import (
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

func TestCacheWrite1hRate(t *testing.T) {
	tab, err := Parse(strings.NewReader(`
default-1h:
  input: 3
  output: 15
explicit-1h:
  input: 3
  cache_write_1h: 5.5
  output: 15
`))
	if err != nil {
		t.Fatal(err)
	}
	if p := tab["default-1h"]; p.CacheWrite1h != 6_000_000 || p.CacheWrite != 3_750_000 {
		t.Fatalf("default-1h = %+v, want 1h write 2× input and short write 1.25×", p)
	}
	if p := tab["explicit-1h"]; p.CacheWrite1h != 5_500_000 {
		t.Fatalf("explicit-1h = %+v", p)
	}
	if p := Default()["claude-sonnet-4-5"]; p.CacheWrite1h != 6_000_000 {
		t.Fatalf("claude-sonnet-4-5 1h write = %d, want $6/M (2× input)", p.CacheWrite1h)
	}
	if _, err := Parse(strings.NewReader("m: {input: 1, output: 1, cache_write_1h: x}")); err == nil {
		t.Fatal("bad cache_write_1h accepted")
	}
}

func TestCostPricesEachInputKind(t *testing.T) {
	tab := Default()
	// sim-small per million: input 1.00, read 0.10, 5m write 1.25, 1h write 2.00, output 3.00.
	u := groundhog.Usage{InputTokens: 10_000, CachedInputTokens: 4_000, CacheWriteTokens: 3_000, CacheWrite1hTokens: 1_000, OutputTokens: 100}
	// uncached 3000 × 1.00 + reads 4000 × 0.10 + short writes 2000 × 1.25 + 1h writes 1000 × 2.00 + 100 × 3.00
	want := groundhog.Money(3000*1_000_000 + 4000*100_000 + 2000*1_250_000 + 1000*2_000_000 + 100*3_000_000)
	if got := tab.Cost("sim-small", u); got != want {
		t.Fatalf("cost = %d, want %d", got, want)
	}
}

func TestPromptCacheSaving(t *testing.T) {
	tab := Default()
	tests := []struct {
		name string
		u    groundhog.Usage
		want groundhog.Money
	}{
		{"no caching", groundhog.Usage{InputTokens: 5000, OutputTokens: 9}, 0},
		// 8000 reads save 0.90/M each = 7,200,000,000 pico; 2000 short writes cost 0.25/M extra.
		{"reads and short writes", groundhog.Usage{InputTokens: 12_000, CachedInputTokens: 8000, CacheWriteTokens: 2000},
			8000*900_000 - 2000*250_000},
		// a first call that only writes loses money: the saving is negative.
		{"writes only", groundhog.Usage{InputTokens: 8000, CacheWriteTokens: 8000}, -8000 * 250_000},
		{"1h writes cost twice the input", groundhog.Usage{InputTokens: 3000, CachedInputTokens: 1000, CacheWriteTokens: 2000, CacheWrite1hTokens: 1500},
			1000*900_000 - 500*250_000 - 1500*1_000_000},
	}
	for _, tt := range tests {
		got := tab.PromptCacheSaving("sim-small", tt.u)
		if got != tt.want {
			t.Errorf("%s: saving = %d, want %d", tt.name, got, tt.want)
		}
		// The saving is exactly the cost without a prompt cache minus the cost with it.
		p := tab["sim-small"]
		none := p.Cost(groundhog.Usage{InputTokens: tt.u.InputTokens, OutputTokens: tt.u.OutputTokens})
		if d := none - p.Cost(tt.u); d != got {
			t.Errorf("%s: saving %d != cost(none) − cost = %d", tt.name, got, d)
		}
	}
	if got := tab.PromptCacheSaving("no-such-model", groundhog.Usage{InputTokens: 10, CachedInputTokens: 5}); got != groundhog.CostUnknown {
		t.Fatalf("unpriced model saving = %d, want CostUnknown", got)
	}
}
