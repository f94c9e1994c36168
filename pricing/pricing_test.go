package pricing

import (
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

func TestCostExact(t *testing.T) {
	tab := Default()
	// gpt-4o-mini: 1,000,000 input tokens at $0.15 = $0.150000 exactly.
	c := tab.Cost("gpt-4o-mini", groundhog.Usage{InputTokens: 1_000_000})
	if got := c.String(); got != "0.150000" {
		t.Fatalf("cost = %s, want 0.150000", got)
	}
	// 1 token at $0.15/M = 150,000 picodollars: exact, not rounded away.
	if c := tab.Cost("gpt-4o-mini", groundhog.Usage{InputTokens: 1}); c != 150_000 {
		t.Fatalf("1 token = %d pico, want 150000", c)
	}
	// cached and write tokens are priced separately from the uncached rest.
	u := groundhog.Usage{InputTokens: 3000, CachedInputTokens: 1000, CacheWriteTokens: 1000, OutputTokens: 10}
	p := tab["sim-small"]
	want := groundhog.Money(1000*p.Input + 1000*p.CachedInput + 1000*p.CacheWrite + 10*p.Output)
	if got := tab.Cost("sim-small", u); got != want {
		t.Fatalf("cost = %d, want %d", got, want)
	}
	if tab.Cost("no-such-model", u) != groundhog.CostUnknown {
		t.Fatal("unknown model must cost CostUnknown, never 0")
	}
}

func TestParseYAML(t *testing.T) {
	tab, err := Parse(strings.NewReader(`
my-model:
  input: "0.5"
  output: 2
"fam-*":
  input: 1
  cached_input: 0.1
  cache_write: 1.25
  output: 4
`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := tab.Lookup("my-model")
	if !ok || p.Input != 500_000 || p.Output != 2_000_000 || p.CachedInput != 500_000 || p.CacheWrite != 625_000 {
		t.Fatalf("my-model = %+v", p)
	}
	if p, ok := tab.Lookup("fam-7b"); !ok || p.CachedInput != 100_000 {
		t.Fatalf("prefix lookup = %+v %v", p, ok)
	}
	for _, bad := range []string{"m: {input: abc, output: 1}", "m: {input: 1}", "m: {input: -1, output: 1}", "m: {input: 1, output: 1, bogus: 2}", "m: {input: 0.0000001, output: 1}"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestMoneyFormat(t *testing.T) {
	for _, c := range []struct {
		m    groundhog.Money
		want string
	}{
		{24 * groundhog.Dollar, "24.000000"},
		{4 * groundhog.Dollar / 1000, "0.004000"},
		{499_999, "0.000000"},
		{500_000, "0.000001"},
		{-3 * groundhog.Microdollar, "-0.000003"},
		{groundhog.CostUnknown, "unknown"},
	} {
		if got := c.m.String(); got != c.want {
			t.Errorf("%d.String() = %q, want %q", c.m, got, c.want)
		}
	}
	if m, err := groundhog.ParseMoney("0.004"); err != nil || m != 4*groundhog.Dollar/1000 {
		t.Fatalf("ParseMoney = %d %v", m, err)
	}
}
