package promptcache

import (
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// Rules are a provider's prompt-caching rules for one model, as groundhog
// estimates with them. They come from one table (ModelRules), never from
// constants scattered in code.
type Rules struct {
	// MinTokens is the shortest prefix the provider caches.
	MinTokens int
	// MaxBreakpoints is the most explicit markers a request may carry
	// (Anthropic: a 5th is a 400) or, for OpenAI explicit mode, the most the
	// provider writes per request; the injector never goes past it,
	// counting the client's own markers.
	MaxBreakpoints int
	// Lookback is how many block boundaries before each breakpoint the
	// provider checks for a cached prefix (Anthropic 20); 0 means only the
	// breakpoints themselves (OpenAI explicit).
	Lookback int
	// Considered is how many of a request's newest breakpoints the provider
	// matches against (OpenAI explicit 80); 0 means all.
	Considered int
	// Step is the granularity of automatic (implicit) matching in tokens
	// (OpenAI 128); 0 when the provider has no implicit caching.
	Step int
	// TTL is the default lifetime of an entry since its last use; LongTTL
	// the longer one a request may ask for (Anthropic "1h", OpenAI explicit
	// "30m").
	TTL, LongTTL time.Duration
}

// providerRules are the per-provider parts of Rules.
var providerRules = map[string]Rules{
	"anthropic": {MaxBreakpoints: 4, Lookback: 20, TTL: 5 * time.Minute, LongTTL: time.Hour},
	// Bedrock Converse: cachePoint blocks, with Anthropic's limits (the
	// models that cache through Converse are Anthropic's and Amazon's).
	"bedrock": {MaxBreakpoints: 4, Lookback: 20, TTL: 5 * time.Minute, LongTTL: time.Hour},
	"openai":  {MaxBreakpoints: 4, Considered: 80, Step: 128, TTL: 5 * time.Minute, LongTTL: 30 * time.Minute},
	// Gemini: implicit caching only, no marker. Google documents neither
	// the step of the prefixes it keeps nor their lifetime; groundhog
	// assumes what the simulator does (128-token steps, 5 minutes after
	// the last use).
	"gemini": {Step: 128, TTL: 5 * time.Minute},
}

// minTokens is the table of minimum cacheable prefixes, by model name
// prefix (the longest matching prefix wins); defaultMinTokens for any
// other model. Anthropic's minimum is per model (1,024 to 4,096 tokens);
// OpenAI's is 1,024 for every model; Gemini's is per model class. Config.MinTokens overrides it. A
// Bedrock model id is looked up by its base model without the vendor
// ("us.anthropic.claude-sonnet-4-5-20250929-v1:0" as "claude-sonnet-4-5-…",
// baseModel).
var minTokens = []struct {
	prefix string
	tokens int
}{
	{"sim-small", 1024},
	{"sim-large", 2048},
	{"claude-opus", 1024},
	{"claude-opus-4-5", 4096},
	{"claude-opus-4-6", 4096},
	{"claude-opus-4-7", 4096},
	{"claude-opus-4-8", 4096},
	{"claude-sonnet", 1024},
	{"claude-sonnet-4-6", 2048},
	{"claude-3-opus", 1024},
	{"claude-3-5-sonnet", 1024},
	{"claude-3-7-sonnet", 1024},
	{"claude-haiku", 2048},
	{"claude-haiku-4-5", 4096},
	{"claude-3-haiku", 2048},
	{"claude-3-5-haiku", 2048},
	{"gpt-", 1024},
	{"o1", 1024},
	{"o3", 1024},
	{"o4", 1024},
	// Gemini implicit caching (ai.google.dev/gemini-api/docs/caching):
	// 1,024 tokens on the Flash and Flash-Lite models, 4,096 on the Pro
	// models, as the simulator enforces (sim.GeminiMinTokens,
	// sim.GeminiProMinTokens).
	{"gemini-", 1024},
	{"gemini-pro", 4096},
	{"gemini-2.5-pro", 4096},
	{"gemini-3-pro", 4096},
	{"gemini-3.1-pro", 4096},
}

const defaultMinTokens = 1024

// ModelRules returns the caching rules for model on the provider of shape.
// Unknown models get their provider's rules with a 1,024-token minimum.
func ModelRules(shape groundhog.Shape, model string) Rules {
	return modelRules(shape, model, nil)
}

// modelRules is ModelRules with the minimum taken from overrides (model
// name prefix -> tokens, the longest matching prefix winning) when one
// matches.
//
// An override matches the model as named or its base model, so both
// "us.anthropic.claude-sonnet-4-6" and "claude-sonnet-4-6" reach a Bedrock
// model id.
func modelRules(shape groundhog.Shape, model string, overrides map[string]int) Rules {
	r := providerRules[shape.Provider()]
	r.MinTokens = defaultMinTokens
	base := baseModel(model)
	best := 0
	for _, m := range minTokens {
		if len(m.prefix) > best && strings.HasPrefix(base, m.prefix) {
			r.MinTokens, best = m.tokens, len(m.prefix)
		}
	}
	best = -1
	for prefix, n := range overrides {
		if len(prefix) > best && (strings.HasPrefix(model, prefix) || strings.HasPrefix(base, prefix)) {
			r.MinTokens, best = n, len(prefix)
		}
	}
	return r
}

// baseModel returns the model name the minimum table knows for a Bedrock
// model id: without an inference-profile region prefix or ARN
// (bedrock.BaseModel) and without the vendor ("anthropic.", "amazon.").
// Any other name is returned as it is.
func baseModel(model string) string {
	base := bedrock.BaseModel(model)
	for _, vendor := range []string{"anthropic.", "amazon."} {
		if rest, ok := strings.CutPrefix(base, vendor); ok {
			return rest
		}
	}
	return base
}
