package sim

import (
	"encoding/json"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

// OpenAI Responses prompt-cache diagnostics. A request whose
// prompt_cache_options carries "comparison_response_id" gets a
// "prompt_cache_diagnostics" object on its response (on response.completed
// when streaming), comparing it with the request that produced the named
// response:
//
//	{"type":"cache_hit"}                          nothing diverged (the request repeats or extends it)
//	{"type":"comparison_response_not_found"}      the id names no response the provider keeps
//	{"type":"cache_miss","reason":R,
//	 "cache_missed_tokens":N,                     prompt tokens from the divergence on
//	 "comparison_reusable_tokens":M}              the longest prefix the compared request wrote
//
// R is the first level that differs, in this order: model_changed,
// prompt_cache_key_changed, tools_changed, text_format_changed,
// reasoning_effort_changed, verbosity_changed, then the input
// (context_compacted when a compaction item sits at or after the first
// differing item, input_changed otherwise; the instructions count as input),
// then service_tier_changed. Every response is kept (the baseline need not
// have asked for diagnostics), the most recent responsesPrintMax of them.
//
// The settings levels scope the cache as well (cacheSalt): a
// request that changes one of them reads nothing, as the diagnosis says.

// responsesPrint is what the provider keeps of a Responses request for the
// comparison: hashes and token positions, no text.
type responsesPrint struct {
	model, key string
	tools      uint64
	set        responsesSettings
	toolsEnd   int           // tokens of the tools
	instr      PrefixPoint   // after the instructions
	items      []PrefixPoint // after each input item
	compaction []bool        // the input item is a compaction item
	total      int           // prompt tokens
	reusable   int           // the longest prefix the request wrote
}

// responsesSettings are the request settings a cached prefix must share,
// normalized so that a default spelled out equals one left out.
type responsesSettings struct {
	format, effort, verbosity, tier string
}

// settingsOf reads the cache-relevant settings of a Responses body.
func settingsOf(body []byte) responsesSettings {
	var r struct {
		Reasoning *struct {
			Effort *string `json:"effort"`
		} `json:"reasoning"`
		Text *struct {
			Format    json.RawMessage `json:"format"`
			Verbosity *string         `json:"verbosity"`
		} `json:"text"`
		ServiceTier *string `json:"service_tier"`
	}
	var s responsesSettings
	if json.Unmarshal(body, &r) != nil {
		return s
	}
	if r.Reasoning != nil && r.Reasoning.Effort != nil {
		s.effort = *r.Reasoning.Effort
	}
	if r.Text != nil {
		if hasMarker(r.Text.Format) {
			if f := compactJSON(r.Text.Format); f != `{"type":"text"}` {
				s.format = f
			}
		}
		if r.Text.Verbosity != nil && *r.Text.Verbosity != "medium" {
			s.verbosity = *r.Text.Verbosity
		}
	}
	if r.ServiceTier != nil && *r.ServiceTier != "auto" && *r.ServiceTier != "default" {
		s.tier = *r.ServiceTier
	}
	return s
}

// cacheSalt is what the settings add to the prompt's cache key: "" for the
// defaults, so a request that sets none caches as before.
func (s responsesSettings) cacheSalt() string {
	if s == (responsesSettings{}) {
		return ""
	}
	return strings.Join([]string{"settings", s.format, s.effort, s.verbosity, s.tier}, "\x00")
}

// comparisonID returns prompt_cache_options.comparison_response_id, and
// whether the request set one.
func comparisonID(opts json.RawMessage) (string, bool) {
	if !hasMarker(opts) {
		return "", false
	}
	var o struct {
		ID *string `json:"comparison_response_id"`
	}
	if json.Unmarshal(opts, &o) != nil || o.ID == nil {
		return "", false
	}
	return *o.ID, true
}

// checkComparisonID refuses a comparison_response_id that is not a string
// (or null), as the API does.
func checkComparisonID(opts json.RawMessage) error {
	if !hasMarker(opts) {
		return nil
	}
	var o struct {
		ID json.RawMessage `json:"comparison_response_id"`
	}
	if json.Unmarshal(opts, &o) != nil || !hasMarker(o.ID) {
		return nil // not an object: newOpenAICache says so
	}
	var s string
	if json.Unmarshal(o.ID, &s) != nil {
		return groundhog.Errorf(groundhog.EINVALID, "Invalid type for 'prompt_cache_options.comparison_response_id': expected a string.")
	}
	return nil
}

// onlyComparison reports whether prompt_cache_options holds nothing but
// comparison_response_id: asking for diagnostics leaves the caching mode
// as it is.
func onlyComparison(opts json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(opts, &m) != nil {
		return false
	}
	_, ok := m["comparison_response_id"]
	return ok && len(m) == 1
}

func hashTools(tools []json.RawMessage) uint64 {
	f := fnv.New64a()
	for _, t := range tools {
		f.Write([]byte(compactJSON(t)))
		f.Write([]byte{0})
	}
	return f.Sum64()
}

// promptCacheDiagnostics is the prompt_cache_diagnostics object.
type promptCacheDiagnostics struct {
	Type                     string `json:"type"`
	Reason                   string `json:"reason,omitempty"`
	CacheMissedTokens        *int   `json:"cache_missed_tokens,omitempty"`
	ComparisonReusableTokens *int   `json:"comparison_reusable_tokens,omitempty"`
}

// compareResponses compares cur with the baseline prev (nil when unknown).
func compareResponses(prev, cur *responsesPrint) *promptCacheDiagnostics {
	if prev == nil {
		return &promptCacheDiagnostics{Type: "comparison_response_not_found"}
	}
	miss := func(reason string, from int) *promptCacheDiagnostics {
		n, m := max(cur.total-from, 0), prev.reusable
		return &promptCacheDiagnostics{Type: "cache_miss", Reason: reason, CacheMissedTokens: &n, ComparisonReusableTokens: &m}
	}
	switch {
	case prev.model != cur.model:
		return miss("model_changed", 0)
	case prev.key != cur.key:
		return miss("prompt_cache_key_changed", 0)
	case prev.tools != cur.tools:
		return miss("tools_changed", 0)
	case prev.set.format != cur.set.format:
		return miss("text_format_changed", 0)
	case prev.set.effort != cur.set.effort:
		return miss("reasoning_effort_changed", 0)
	case prev.set.verbosity != cur.set.verbosity:
		return miss("verbosity_changed", 0)
	case prev.instr != cur.instr:
		return miss("input_changed", cur.toolsEnd)
	}
	for i := range min(len(prev.items), len(cur.items)) {
		if prev.items[i] == cur.items[i] {
			continue
		}
		from := cur.instr.Tokens
		if i > 0 {
			from = cur.items[i-1].Tokens
		}
		for _, c := range cur.compaction[i:] {
			if c {
				return miss("context_compacted", from)
			}
		}
		return miss("input_changed", from)
	}
	if len(cur.items) < len(prev.items) {
		return miss("input_changed", cur.total)
	}
	if prev.set.tier != cur.set.tier {
		return miss("service_tier_changed", 0)
	}
	return &promptCacheDiagnostics{Type: "cache_hit"}
}

// printStore keeps prints of recent requests by response id, bounded: the
// oldest go first, as a provider keeps them "for a limited time".
type printStore[P any] struct {
	mu    sync.Mutex
	byID  map[string]P
	order []string
}

// responsesPrintMax bounds the Responses prints kept (as diagStoreMax the
// Anthropic ones).
const responsesPrintMax = 4096

func (d *printStore[P]) put(id string, p P, limit int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]P{}
	}
	d.byID[id] = p
	d.order = append(d.order, id)
	for len(d.order) > limit {
		delete(d.byID, d.order[0])
		d.order = d.order[1:]
	}
}

// del removes id and reports whether it was kept.
func (d *printStore[P]) del(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.byID[id]
	delete(d.byID, id)
	return ok
}

func (d *printStore[P]) get(id string) P {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byID[id]
}

// diagnoseResponses keeps cur under id and returns the diagnostics the
// request asked for (nil when it named no comparison response).
func (s *Server) diagnoseResponses(opts json.RawMessage, id string, cur *responsesPrint) *promptCacheDiagnostics {
	defer s.respPrints.put(id, cur, responsesPrintMax)
	cmp, ok := comparisonID(opts)
	if !ok {
		return nil
	}
	return compareResponses(s.respPrints.get(cmp), cur)
}
