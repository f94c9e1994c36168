package sim

import (
	"net/http"
	"strings"
	"time"
)

// Models lists the sim's own models, as GET /v1/models returns them. Any
// other model name is accepted too (and priced as sim-small when the price
// table does not know it).
var Models = []string{"sim-small", "sim-large", "sim-embed"}

// modelEpoch is the fixed creation time the model objects report.
var modelEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func modelObject(fam family, id string) any {
	if fam == familyAnthropic {
		return anthropicModel{Type: "model", ID: id, DisplayName: id, CreatedAt: modelEpoch.Format(time.RFC3339)}
	}
	return openAIModel{ID: id, Object: "model", Created: modelEpoch.Unix(), OwnedBy: "groundhog-sim"}
}

// listModels answers GET /v1/models in the caller's format (Anthropic when
// the anthropic-version header is present).
func (s *Server) listModels(w http.ResponseWriter, _ *http.Request, fam family) {
	data := make([]any, len(Models))
	for i, m := range Models {
		data[i] = modelObject(fam, m)
	}
	if fam == familyAnthropic {
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false,
			"first_id": Models[0], "last_id": Models[len(Models)-1]})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// getModel answers GET /v1/models/{id}: every id exists, as every model name
// is accepted.
func (s *Server) getModel(w http.ResponseWriter, _ *http.Request, fam family, id string) {
	writeJSON(w, http.StatusOK, modelObject(fam, id))
}

// CacheLimits are one model's prompt-caching rules, as its provider
// documents them. OpenAI* limits apply on the OpenAI routes, Anthropic* on
// /v1/messages: the sim's model names answer on both.
type CacheLimits struct {
	// OpenAIMinTokens is the shortest prefix OpenAI caches (automatic and
	// explicit modes alike).
	OpenAIMinTokens int
	// OpenAIBlockTokens is the granularity of automatic caching: a read or a
	// write covers whole blocks from the start of the prompt.
	OpenAIBlockTokens int
	// OpenAIMaxWrites is how many breakpoints one request writes in
	// prompt_cache_options mode (the latest ones; in implicit mode the
	// implicit breakpoint takes one of them).
	OpenAIMaxWrites int
	// OpenAIMatchBreakpoints is how many of the latest breakpoints of a
	// request a read is looked for at.
	OpenAIMatchBreakpoints int
	// AnthropicMinTokens is the shortest prefix a cache_control breakpoint
	// caches.
	AnthropicMinTokens int
	// AnthropicMaxBreakpoints is the most cache_control blocks a request may
	// carry (one more is a 400).
	AnthropicMaxBreakpoints int
	// AnthropicLookback is how many block boundaries before each breakpoint
	// a read is looked for at.
	AnthropicLookback int
}

// smallLimits are sim-small's rules, also those of any model missing from
// ModelCacheLimits.
var smallLimits = CacheLimits{
	OpenAIMinTokens: 1024, OpenAIBlockTokens: 128, OpenAIMaxWrites: 4, OpenAIMatchBreakpoints: 80,
	AnthropicMinTokens: 1024, AnthropicMaxBreakpoints: 4, AnthropicLookback: 20,
}

// ModelCacheLimits is the sim's model table of prompt-caching rules: every
// caching limit the sim enforces comes from here, so a new model or limit is
// one entry. Servers read it on every call: change it only before any
// Server runs.
var ModelCacheLimits = map[string]CacheLimits{
	"sim-small": smallLimits,
	"sim-large": func() CacheLimits { l := smallLimits; l.AnthropicMinTokens = 2048; return l }(),
}

// cacheLimits returns model's caching rules; an unknown model has
// sim-small's.
func cacheLimits(model string) CacheLimits {
	if l, ok := ModelCacheLimits[model]; ok {
		return l
	}
	return smallLimits
}

// OpenAIModelRules are the prompt-cache semantics of one family of OpenAI
// models, which changed with the 2026 models: prompt_cache_retention
// ("in_memory" or "24h") before gpt-5.6, prompt_cache_options and
// prompt_cache_breakpoint (30-minute breakpoints) from gpt-5.6 on.
type OpenAIModelRules struct {
	// Prefix is the start of the model names the rules cover.
	Prefix string
	// DefaultRetention is the prompt_cache_retention a request that sets
	// none gets, and the Responses answer echoes: "in_memory" (entries
	// live Config.PrefixCacheTTL) or "24h".
	DefaultRetention string
	// Only24h: "in_memory" is a 400 ("This model is compatible only with
	// 24h extended prompt caching"); "24h" is accepted.
	Only24h bool
	// BillsWrites: automatic caching reports its writes as
	// cache_write_tokens and bills them at the cache-write price (1.25× the
	// input price); older models write for free and their chat usage has no
	// cache_write_tokens field.
	BillsWrites bool
	// NoOptions: the model predates explicit caching: prompt_cache_options
	// or a prompt_cache_breakpoint is a 400.
	NoOptions bool
	// Breakpoints: the model caches at breakpoints only — every request is
	// in prompt_cache_options mode (implicit unless it says explicit), its
	// writes live 30 minutes, and prompt_cache_retention, though accepted
	// and echoed, changes nothing.
	Breakpoints bool
}

// OpenAIModels is the table of OpenAI model families, the longest
// matching prefix winning; a model matching none (the sim's own models)
// has the first entry's rules, which accept every caching field. As with
// ModelCacheLimits, change it only before any Server runs.
var OpenAIModels = []OpenAIModelRules{
	{Prefix: "", DefaultRetention: "in_memory"},
	{Prefix: "gpt-", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "o1", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "o3", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "o4", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "computer-use-preview", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "gpt-5.4", DefaultRetention: "24h", NoOptions: true},
	{Prefix: "gpt-5.4-mini", DefaultRetention: "in_memory", NoOptions: true},
	{Prefix: "gpt-5.5", DefaultRetention: "24h", Only24h: true, NoOptions: true},
	{Prefix: "gpt-5.6", DefaultRetention: "24h", Only24h: true, BillsWrites: true, Breakpoints: true},
	{Prefix: "gpt-6", DefaultRetention: "24h", Only24h: true, BillsWrites: true, Breakpoints: true},
}

// openaiRules returns model's entry of OpenAIModels.
func openaiRules(model string) OpenAIModelRules {
	best := OpenAIModels[0]
	for _, r := range OpenAIModels[1:] {
		if strings.HasPrefix(model, r.Prefix) && len(r.Prefix) > len(best.Prefix) {
			best = r
		}
	}
	return best
}

// AnthropicMinimums is the shortest prefix a cache_control breakpoint
// caches, per Anthropic model family (name prefix, the longest matching one
// winning), as Anthropic documents it; a model matching none has 1,024
// tokens, and the sim's own models keep ModelCacheLimits'. Config.
// AnthropicMinTokens overrides it per server.
var AnthropicMinimums = map[string]int{
	"claude-3-haiku":    2048,
	"claude-3-5-haiku":  2048,
	"claude-haiku-4-5":  4096,
	"claude-opus-4-5":   4096,
	"claude-opus-4-6":   4096,
	"claude-opus-4-7":   4096,
	"claude-opus-4-8":   4096,
	"claude-sonnet-4-6": 2048,
}

// anthropicLimits returns model's caching rules on /v1/messages, its
// minimum taken from overrides, else AnthropicMinimums, else the model table.
func anthropicLimits(model string, overrides map[string]int) CacheLimits {
	l := cacheLimits(model)
	for _, table := range []map[string]int{overrides, AnthropicMinimums} {
		best, found := "", false
		for prefix := range table {
			if strings.HasPrefix(model, prefix) && (!found || len(prefix) > len(best)) {
				best, found = prefix, true
			}
		}
		if found {
			l.AnthropicMinTokens = table[best]
			return l
		}
	}
	return l
}
