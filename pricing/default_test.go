package pricing

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// TestDefaultCacheWriteRates checks the built-in cache-write rates by
// model generation: GPT-5.6 models write at 1.25× input (both write
// columns: their one write length is 30 minutes), older OpenAI models
// write at the input rate, Anthropic models at 1.25× (5 minutes) and 2×
// (1 hour); a dated snapshot takes its family's rates.
func TestDefaultCacheWriteRates(t *testing.T) {
	tab := Default()
	for _, tc := range []struct {
		model                 string
		input, write, write1h int64 // µ$ per million tokens
	}{
		{"gpt-5.6", 5_000_000, 6_250_000, 6_250_000},
		{"gpt-5.6-sol", 5_000_000, 6_250_000, 6_250_000},
		{"gpt-5.6-terra", 2_000_000, 2_500_000, 2_500_000},
		{"gpt-5.6-luna", 200_000, 250_000, 250_000},
		{"gpt-5.5-2026-04-23", 5_000_000, 5_000_000, 5_000_000},
		{"gpt-5.4-2026-03-05", 2_500_000, 2_500_000, 2_500_000},
		{"gpt-5.4-mini-2026-03-17", 750_000, 750_000, 750_000},
		{"o3-mini-2025-01-31", 1_100_000, 1_100_000, 1_100_000},
		{"claude-sonnet-4-6", 3_000_000, 3_750_000, 6_000_000},
		{"claude-3-opus-latest", 15_000_000, 18_750_000, 30_000_000},
	} {
		p, ok := tab.Lookup(tc.model)
		if !ok {
			t.Errorf("%s: no price", tc.model)
			continue
		}
		if p.Input != tc.input || p.CacheWrite != tc.write || p.CacheWrite1h != tc.write1h {
			t.Errorf("%s: input %d write %d write1h %d, want %d %d %d", tc.model, p.Input, p.CacheWrite, p.CacheWrite1h, tc.input, tc.write, tc.write1h)
		}
	}
	// 4,012 tokens written and 8 uncached on gpt-5.6-sol, 4 out: the first
	// turn of a recorded explicit-breakpoint conversation.
	u := groundhog.Usage{InputTokens: 4020, CacheWriteTokens: 4012, OutputTokens: 4}
	if got, want := tab.Cost("gpt-5.6-sol", u), groundhog.Money(4012*6_250_000+8*5_000_000+4*30_000_000); got != want {
		t.Errorf("gpt-5.6-sol first turn: %v, want %v", got, want)
	}
	for _, m := range []string{"gpt-4o-audio-preview", "gpt-4o-audio-preview-2024-12-17"} {
		if c := tab.Cost(m, groundhog.Usage{InputTokens: 64, OutputTokens: 9}); c.Known() {
			t.Errorf("%s priced %v: audio and text tokens share one count, so its price is unknown", m, c)
		}
	}
}

// TestAnthropicAliases checks that a "-latest" alias is priced as the dated
// snapshot it answers with, so a call priced by its request's model (a
// stream cut before its first event) and one priced by its answer's agree.
func TestAnthropicAliases(t *testing.T) {
	tab := Default()
	for alias, snapshot := range map[string]string{
		"claude-3-opus-latest":     "claude-3-opus-20240229",
		"claude-3-5-haiku-latest":  "claude-3-5-haiku-20241022",
		"claude-3-5-sonnet-latest": "claude-3-5-sonnet-20241022",
		"claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
	} {
		a, ok := tab.Lookup(alias)
		if !ok {
			t.Errorf("%s: no price", alias)
			continue
		}
		s, ok := tab.Lookup(snapshot)
		if !ok {
			t.Errorf("%s: no price", snapshot)
			continue
		}
		if a != s {
			t.Errorf("%s priced %+v, its snapshot %s %+v", alias, a, snapshot, s)
		}
	}
}
