package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// OpenAI prompt-cache lifetimes.
const (
	// explicitCacheTTL is prompt_cache_options.ttl's one accepted value and
	// its default.
	explicitCacheTTL = 30 * time.Minute
	// extendedRetention is prompt_cache_retention "24h".
	extendedRetention = 24 * time.Hour
)

// openaiCacheFields are the request fields of both OpenAI routes that steer
// prompt caching.
type openaiCacheFields struct {
	PromptCacheKey       string          `json:"prompt_cache_key"`
	PromptCacheRetention *string         `json:"prompt_cache_retention"`
	PromptCacheOptions   json.RawMessage `json:"prompt_cache_options"`
}

// openaiCache accounts an OpenAI prompt for the prefix cache while it is
// tokenized: the automatic-caching block points (in ts), the ends of the
// messages that may hold the implicit breakpoint, and the explicit
// prompt_cache_breakpoint positions.
type openaiCache struct {
	limits CacheLimits
	ts     *tokenStream
	// options: prompt_cache_options was sent (or a breakpoint was): the
	// breakpoint rules apply instead of automatic block caching.
	options   bool
	explicit  bool          // mode "explicit": no implicit breakpoint
	ttl       time.Duration // lifetime of the writes; 0 = the default
	key       string
	ends      []PrefixPoint // after each eligible message, in order
	breaks    []PrefixPoint // at each prompt_cache_breakpoint, in order
	partTypes []string      // the content part types a breakpoint may mark
	// billsWrites: the model's automatic caching reports and bills its
	// writes (OpenAIModelRules.BillsWrites).
	billsWrites bool
	// noOptions: the model takes no breakpoint (OpenAIModelRules.NoOptions).
	noOptions bool
	model     string
}

// newOpenAICache validates the caching fields of a request for model and
// returns its accounting, tokenizing in blocks of the model's size.
// partTypes are the content part types that may carry a breakpoint
// (input_text, input_image, input_file on /v1/responses; text on chat).
func newOpenAICache(model string, f *openaiCacheFields, partTypes ...string) (*openaiCache, error) {
	l := cacheLimits(model)
	rules := openaiRules(model)
	c := &openaiCache{limits: l, ts: newTokenStream(l.OpenAIBlockTokens), key: f.PromptCacheKey, partTypes: partTypes,
		billsWrites: rules.BillsWrites, noOptions: rules.NoOptions, model: model}
	if f.PromptCacheRetention == nil && rules.DefaultRetention == "24h" {
		c.ttl = extendedRetention
	}
	if f.PromptCacheRetention != nil {
		switch *f.PromptCacheRetention {
		case "in_memory":
			if rules.Only24h {
				return nil, groundhog.Errorf(groundhog.EINVALID, "This model is compatible only with 24h extended prompt caching")
			}
		case "24h":
			c.ttl = extendedRetention
		default:
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid value for 'prompt_cache_retention': expected one of 'in_memory' or '24h', but got %q.", *f.PromptCacheRetention)
		}
	}
	if rules.Breakpoints { // implicit mode unless the options say explicit
		c.options, c.ttl = true, explicitCacheTTL
	}
	if err := checkComparisonID(f.PromptCacheOptions); err != nil {
		return nil, err
	}
	if !hasMarker(f.PromptCacheOptions) || onlyComparison(f.PromptCacheOptions) {
		// Asking for diagnostics alone changes nothing in how the
		// prompt is cached.
		return c, nil
	}
	if rules.NoOptions {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Unsupported parameter: 'prompt_cache_options' is not supported with the model %s: it is supported for gpt-5.6 and later models.", model)
	}
	var o struct {
		Mode *string `json:"mode"`
		TTL  *string `json:"ttl"`
		// ComparisonResponseID asks for diagnostics (openai_diagnostics.go).
		ComparisonResponseID *string `json:"comparison_response_id"`
	}
	if err := json.Unmarshal(f.PromptCacheOptions, &o); err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "Invalid type for 'prompt_cache_options': expected an object.", err)
	}
	c.options, c.ttl = true, explicitCacheTTL
	if o.Mode != nil {
		switch *o.Mode {
		case "implicit":
		case "explicit":
			c.explicit = true
		default:
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid value for 'prompt_cache_options.mode': expected one of 'implicit' or 'explicit', but got %q.", *o.Mode)
		}
	}
	if o.TTL != nil {
		if *o.TTL != "30m" {
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid value for 'prompt_cache_options.ttl': the simulated provider supports '30m' only, got %q.", *o.TTL)
		}
		if f.PromptCacheRetention != nil {
			return nil, groundhog.Errorf(groundhog.EINVALID, "'prompt_cache_options.ttl' and 'prompt_cache_retention' cannot both be set; use prompt_cache_options.ttl.")
		}
	}
	return c, nil
}

// endMessage closes the current message and records its end as a possible
// implicit breakpoint.
func (c *openaiCache) endMessage() {
	c.ts.end()
	c.ends = append(c.ends, c.ts.point())
}

// content appends the tokens of a message content (a string or a list of
// parts), as writeContent counts them, recording a breakpoint after each
// part that carries prompt_cache_breakpoint. path names the content in
// errors ("input[2].content"). It returns the content's text.
func (c *openaiCache) content(raw json.RawMessage, path string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return writeContent(c.ts, raw), nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return writeContent(c.ts, raw), nil
	}
	var text bytes.Buffer
	for i, p := range parts {
		text.WriteString(writePart(c.ts, p))
		text.WriteByte(' ')
		var m struct {
			Type       string          `json:"type"`
			Breakpoint json.RawMessage `json:"prompt_cache_breakpoint"`
		}
		if json.Unmarshal(p, &m) != nil || !hasMarker(m.Breakpoint) {
			continue
		}
		where := fmt.Sprintf("%s[%d].prompt_cache_breakpoint", path, i)
		if c.noOptions {
			return "", groundhog.Errorf(groundhog.EINVALID, "Unsupported parameter: '%s' is not supported with the model %s: it is supported for gpt-5.6 and later models.", where, c.model)
		}
		if !slices.Contains(c.partTypes, m.Type) {
			return "", groundhog.Errorf(groundhog.EINVALID, "Unknown parameter: '%s'. Breakpoints are supported on %s content parts only.", where, strings.Join(c.partTypes, ", "))
		}
		var bp struct {
			Mode string  `json:"mode"`
			TTL  *string `json:"ttl"`
		}
		if err := json.Unmarshal(m.Breakpoint, &bp); err != nil || bp.Mode != "explicit" {
			return "", groundhog.Errorf(groundhog.EINVALID, "Invalid value for '%s': expected {\"mode\": \"explicit\"}.", where)
		}
		if bp.TTL != nil && *bp.TTL != "30m" {
			return "", groundhog.Errorf(groundhog.EINVALID, "Invalid value for '%s.ttl': the simulated provider supports '30m' only, got %q.", where, *bp.TTL)
		}
		c.breaks = append(c.breaks, c.ts.point())
		if !c.options {
			c.options, c.ttl = true, explicitCacheTTL
		}
	}
	return text.String(), nil
}

// plan returns the points to look a read up at, the prefixes to write, and
// whether writes are reported and billed.
//
// Automatic caching (no prompt_cache_options, no breakpoint): every whole
// block of at least the minimum, both ways; writes are free and unreported,
// except on a model that bills them.
//
// prompt_cache_options mode: reads are matched exactly at a breakpoint —
// the latest OpenAIMatchBreakpoints of the explicit ones and, in implicit
// mode, the message ends — never at an unmarked shorter prefix. Explicit
// mode writes the latest OpenAIMaxWrites explicit breakpoints; implicit mode
// writes the implicit breakpoint (the end of the newest eligible message)
// and the latest OpenAIMaxWrites−1 explicit ones. Only breakpoints of at
// least the minimum count. Writes live ttl (30 minutes) and are billed.
func (c *openaiCache) plan() (lookup []PrefixPoint, store []PrefixWrite, report bool) {
	minTokens := c.limits.OpenAIMinTokens
	eligible := func(pts []PrefixPoint) []PrefixPoint {
		var out []PrefixPoint
		for _, p := range pts {
			if p.Tokens >= minTokens && (len(out) == 0 || out[len(out)-1] != p) {
				out = append(out, p)
			}
		}
		return out
	}
	latest := func(pts []PrefixPoint, n int) []PrefixPoint { return pts[len(pts)-min(n, len(pts)):] }
	writes := func(pts []PrefixPoint) []PrefixWrite {
		out := make([]PrefixWrite, len(pts))
		for i, p := range pts {
			out[i] = PrefixWrite{PrefixPoint: p, TTL: c.ttl}
		}
		return out
	}
	if !c.options {
		marks := eligible(c.ts.marks)
		return marks, writes(marks), c.billsWrites
	}
	breaks := eligible(c.breaks)
	cands := breaks
	var saved []PrefixPoint
	if c.explicit {
		saved = latest(breaks, c.limits.OpenAIMaxWrites)
	} else {
		cands = eligible(sortPoints(append(slices.Clone(breaks), c.ends...)))
		saved = latest(breaks, c.limits.OpenAIMaxWrites-1)
		if n := len(c.ends); n > 0 && c.ends[n-1].Tokens >= minTokens {
			saved = eligible(sortPoints(append(slices.Clone(saved), c.ends[n-1])))
		}
	}
	return latest(cands, c.limits.OpenAIMatchBreakpoints), writes(saved), true
}

// sortPoints sorts pts by position (points at one position are equal).
func sortPoints(pts []PrefixPoint) []PrefixPoint {
	slices.SortFunc(pts, func(a, b PrefixPoint) int { return a.Tokens - b.Tokens })
	return pts
}

// apply sets the job's prefix-cache fields from the plan.
func (c *openaiCache) apply(j *job) {
	j.prompt = c.ts.n
	j.lookup, j.store, j.reportWrites = c.plan()
	j.cacheKey = c.key
}

// hasKey reports whether the JSON value raw holds key at any depth.
func hasKey(raw json.RawMessage, key string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v[key]; ok {
				return true
			}
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// allowedTools narrows tools to those an allowed_tools tool_choice names
// (Responses {"type":"allowed_tools","mode","tools":[{"type":"function",
// "name"}]}, chat {"type":"allowed_tools","allowed_tools":{"mode","tools":
// [{"type":"function","function":{"name"}}]}}) and returns its mode. It
// restricts which tools may be called; the tools sent (the cached catalog)
// are unchanged. ok is false when tool_choice is not allowed_tools.
func allowedTools(raw json.RawMessage, tools []toolSpec) (mode string, allowed []toolSpec, ok bool) {
	type ref struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var o struct {
		Type  string `json:"type"`
		Mode  string `json:"mode"`
		Tools []ref  `json:"tools"`
		Chat  *struct {
			Mode  string `json:"mode"`
			Tools []ref  `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(raw, &o) != nil || o.Type != "allowed_tools" {
		return "", nil, false
	}
	if o.Chat != nil {
		o.Mode, o.Tools = o.Chat.Mode, o.Chat.Tools
	}
	names := map[string]bool{}
	for _, r := range o.Tools {
		names[r.Name+r.Function.Name] = true
	}
	for _, t := range tools {
		if names[t.name] {
			allowed = append(allowed, t)
		}
	}
	if o.Mode == "" {
		o.Mode = "auto"
	}
	return o.Mode, allowed, true
}

// retentionOf is the prompt_cache_retention a Responses answer echoes: the
// request's, else the model's default (openaiModelRules).
func retentionOf(model string, asked *string) string {
	if asked != nil {
		return *asked
	}
	return openaiRules(model).DefaultRetention
}
