package pricing

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// TestBedrockIDsResolveToBedrockPrices: Bedrock model ids — foundation ids,
// cross-region profiles, the global profile and ARNs — are priced from the
// Bedrock rows, never from the first-party ones; an id Bedrock's table does
// not have stays unknown.
func TestBedrockIDsResolveToBedrockPrices(t *testing.T) {
	tab := Default()
	for _, c := range []struct{ id, entry string }{
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5"},
		{"eu.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5"},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "global.anthropic.claude-sonnet-4-5"},
		{"global.anthropic.claude-opus-4-5-20251101-v1:0", "global.anthropic.claude-opus-4-5"},
		{"apac.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic.claude-sonnet-4"},
		{"global.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic.claude-sonnet-4"}, // no global row: one price
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic.claude-3-7-sonnet"},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-haiku"},
		{"us.amazon.nova-pro-v1:0", "amazon.nova-pro"},
		{"amazon.nova-micro-v1:0", "amazon.nova-micro"},
		{"us.meta.llama3-3-70b-instruct-v1:0", "meta.llama3-3-70b-instruct"},
		{"us.meta.llama4-maverick-17b-instruct-v1:0", "meta.llama4-maverick-17b-instruct"},
		{"openai.gpt-oss-120b-1:0", "openai.gpt-oss-120b"},
		{"openai.gpt-oss-20b-1:0", "openai.gpt-oss-20b"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5"},
		{"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0", "amazon.nova-lite"},
	} {
		entry, how, _, ok := tab.Resolve(c.id)
		if !ok || entry != c.entry || how != MatchBedrock {
			t.Errorf("%s resolves to %q (%s, %v), want %q", c.id, entry, how, ok, c.entry)
		}
		if _, ok := tab.Lookup(c.id); !ok {
			t.Errorf("%s: Lookup finds no price", c.id)
		}
	}
	for _, id := range []string{"us.anthropic.claude-unreleased-9-v1:0", "cohere.command-r-v1:0", "us.sim.converse-small-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:provisioned-model", "claude-sonnet-4-5.", ".x"} {
		if c := tab.Cost(id, groundhog.Usage{InputTokens: 10, OutputTokens: 10}); c.Known() {
			t.Errorf("%s costs %s, want unknown", id, c)
		}
	}
}

// TestBedrockCostExact: a Claude call with cache reads and writes through a
// geographic profile costs the regional rates (10% over the global
// profile's), exactly; Nova reads its cache at a quarter of the input rate.
func TestBedrockCostExact(t *testing.T) {
	tab := Default()
	u := groundhog.Usage{InputTokens: 10_000, CachedInputTokens: 2_000, CacheWriteTokens: 3_000, OutputTokens: 1_000}
	for _, c := range []struct {
		id, want string
	}{
		// 5,000 × 3.30 + 2,000 × 0.33 + 3,000 × 4.125 + 1,000 × 16.50, per million
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "0.046035"},
		// 5,000 × 3 + 2,000 × 0.30 + 3,000 × 3.75 + 1,000 × 15, per million
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "0.041850"},
		// 5,000 × 0.80 + 2,000 × 0.20 + 3,000 × 0.80 + 1,000 × 3.20, per million
		{"us.amazon.nova-pro-v1:0", "0.010000"},
		// no prompt cache: every input token at 0.15, output at 0.60
		{"openai.gpt-oss-120b-1:0", "0.002100"},
	} {
		if got := tab.Cost(c.id, u).String(); got != c.want {
			t.Errorf("%s costs %s, want %s", c.id, got, c.want)
		}
	}
	long := groundhog.Usage{InputTokens: 4_000, CacheWriteTokens: 4_000, CacheWrite1hTokens: 4_000}
	// 4,000 × 6.60 (2× the regional input rate) per million
	if got := tab.Cost("eu.anthropic.claude-sonnet-4-5-20250929-v1:0", long).String(); got != "0.026400" {
		t.Errorf("1-hour writes cost %s, want 0.026400", got)
	}
	if first, bed := tab.Cost("claude-sonnet-4-5-20250929", u), tab.Cost("us.anthropic.claude-sonnet-4-5-20250929-v1:0", u); first == bed {
		t.Errorf("the first-party model costs the Bedrock regional price %s", bed)
	}
}
