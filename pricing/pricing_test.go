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

// The table as the README shows it, under "prices:" (the configuration's
// form), reads as the same table; a bad entry under it is still an error,
// and a top-level key that is neither a model nor "prices" still fails.
func TestParseYAMLUnderPricesKey(t *testing.T) {
	flat := "my-finetune:\n  input: 0.50\n  cached_input: 0.05\n  cache_write: 0.625\n  cache_write_1h: 1.00\n  output: 2.00\n\"claude-*\":\n  input: 3\n  output: 15\n"
	want, err := Parse(strings.NewReader(flat))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := "prices:\n" + strings.ReplaceAll("  "+strings.TrimSuffix(flat, "\n"), "\n", "\n  ") + "\n"
	got, err := Parse(strings.NewReader(wrapped))
	if err != nil {
		t.Fatalf("Parse(%q): %v", wrapped, err)
	}
	if len(got) != 2 || got["my-finetune"] != want["my-finetune"] || got["claude-*"] != want["claude-*"] {
		t.Fatalf("under prices: %+v, want %+v", got, want)
	}
	for _, bad := range []string{"prices:\n  m: {input: abc, output: 1}", "prices:\n  m: {input: 1, output: 1, bogus: 2}", "prices: {}\nother: 1", "pricez:\n  m: {input: 1, output: 1}"} {
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

// TestDatedSnapshots: real providers answer with dated model names; each
// must take its own family's price, never a sibling's by prefix.
func TestDatedSnapshots(t *testing.T) {
	tab := Default()
	for _, tc := range []struct{ dated, family string }{
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-2024-11-20", "gpt-4o"},
		{"gpt-4o-2024-05-13", "gpt-4o"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"gpt-5-nano-2025-08-07", "gpt-5-nano"},
		{"o3-2025-04-16", "o3"},
		{"o4-mini-2025-04-16", "o4-mini"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"claude-opus-4-5-20251101", "claude-opus-4-5"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-3-7-sonnet-20250219", "claude-3-7-sonnet"},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"claude-3-haiku-20240307", "claude-3-haiku"},
		{"claude-3-opus-20240229", "claude-3-opus"},
		{"claude-opus-4-6-20260205", "claude-opus-4-6"},
		{"claude-sonnet-4-6-20260217", "claude-sonnet-4-6"},
		{"gpt-6.2-sol-2026-11-17", "gpt-6.2-sol"},
	} {
		if got := Family(tc.dated); got != tc.family {
			t.Errorf("Family(%q) = %q, want %q", tc.dated, got, tc.family)
		}
		want, ok := tab[tc.family]
		if !ok {
			t.Fatalf("family %q not in the default table", tc.family)
		}
		got, ok := tab.Lookup(tc.dated)
		if !ok || got != want {
			t.Errorf("Lookup(%q) = %+v %v, want %s's %+v", tc.dated, got, ok, tc.family, want)
		}
		u := groundhog.Usage{InputTokens: 1000, OutputTokens: 100}
		if c := tab.Cost(tc.dated, u); !c.Known() || c != want.Cost(u) {
			t.Errorf("Cost(%q) = %v, want %v", tc.dated, c, want.Cost(u))
		}
	}
	// The siblings differ in price, so a prefix mix-up would show.
	if tab["gpt-4o"] == tab["gpt-4o-mini"] || tab["gpt-4.1"] == tab["gpt-4.1-mini"] {
		t.Fatal("test premise: sibling prices must differ")
	}
}

func TestFamilyLeavesOtherNames(t *testing.T) {
	for _, m := range []string{
		"gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5", "sim-small", "o3", "",
		"model-12345678",        // eight digits that are no date
		"model-2024-13-01",      // no month 13
		"gpt-4o-mini-2024-7-18", // not zero-padded
		"-20250101",
		"text-embedding-3-small",
	} {
		if got := Family(m); got != m {
			t.Errorf("Family(%q) = %q, want unchanged", m, got)
		}
	}
	tab := Default()
	for _, m := range []string{"gpt-4o-mini-fast", "gpt-4o-2024", "claude-sonnet-4-5-latest", "gpt-9-2025-01-01"} {
		if _, ok := tab.Lookup(m); ok {
			t.Errorf("Lookup(%q) known; an unknown name must stay unknown", m)
		}
	}
}
