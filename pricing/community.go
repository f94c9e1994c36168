package pricing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// The community price file ("model_prices_and_context_window.json", shared
// by several gateways) maps a model name to an object of per-token dollar
// costs and other keys:
//
//	{"claude-sonnet-4-5": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
//	  "cache_read_input_token_cost": 3e-07, "cache_creation_input_token_cost": 3.75e-06,
//	  "cache_creation_input_token_cost_above_1hr": 6e-06, "litellm_provider": "anthropic", ...}}
//
// Only the five cost keys are read; every other key is ignored.
const (
	keyInput       = "input_cost_per_token"
	keyOutput      = "output_cost_per_token"
	keyCacheRead   = "cache_read_input_token_cost"
	keyCacheWrite  = "cache_creation_input_token_cost"
	keyCacheWrite1 = "cache_creation_input_token_cost_above_1hr"
)

// sampleSpec is the community file's documentation entry, not a model.
const sampleSpec = "sample_spec"

// bareProviders are the prefixes of the providers groundhog serves: an
// entry "anthropic/claude-…" or "openai/gpt-…" is also registered under the
// bare name, since that is what a client sends.
var bareProviders = []string{"openai/", "anthropic/"}

// IsCommunityJSON reports whether b is a price file in the community JSON
// format: a JSON object at least one of whose values is an object with an
// "input_cost_per_token" key. A YAML table (even one written as JSON, whose
// values carry "input") is not.
func IsCommunityJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	for _, v := range top {
		var fields map[string]json.RawMessage
		if json.Unmarshal(v, &fields) == nil {
			if _, ok := fields[keyInput]; ok {
				return true
			}
		}
	}
	return false
}

// ParseCommunity reads a price file in the community JSON format.
//
// Each entry with both input_cost_per_token and output_cost_per_token
// becomes a price; entries without them (image, audio and rerank models
// priced per call or per second), entries that are not objects, and the
// "sample_spec" documentation entry are skipped. A missing
// cache_read_input_token_cost means cached input costs the input rate (no
// discount known); a missing cache_creation_input_token_cost means writes
// cost the input rate (no write surcharge, as OpenAI's older models); a
// missing cache_creation_input_token_cost_above_1hr means a one-hour write
// costs the short write's rate.
//
// Costs are per token in dollars. They are read from the JSON number's
// decimal text (never through float64) and converted exactly to
// microdollars per million tokens (= picodollars per token); a cost finer
// than that — more than 12 decimals of a dollar per token — is rounded half
// up at 1e-12 $/token. A cost that is not a non-negative JSON number (a
// string, say) is an error naming the model.
//
// An entry "openai/NAME" or "anthropic/NAME" is also registered as NAME
// unless the file has NAME itself or the two prefixed entries disagree on
// the price.
func ParseCommunity(r io.Reader) (Table, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("price table (community JSON): %w", err)
	}
	t := Table{}
	for model, v := range raw {
		if model == sampleSpec {
			continue
		}
		p, ok, err := communityPrice(v)
		if err != nil {
			return nil, fmt.Errorf("price table (community JSON): model %q: %w", model, err)
		}
		if ok {
			t[model] = p
		}
	}
	// Bare names: only where unambiguous, never over an explicit entry.
	bare := map[string]groundhog.Price{}
	conflict := map[string]bool{}
	for model, p := range t {
		for _, pre := range bareProviders {
			name, ok := strings.CutPrefix(model, pre)
			if !ok || name == "" {
				continue
			}
			if q, dup := bare[name]; dup && q != p {
				conflict[name] = true
			}
			bare[name] = p
		}
	}
	for name, p := range bare {
		if _, explicit := t[name]; !explicit && !conflict[name] {
			t[name] = p
		}
	}
	return t, nil
}

// communityPrice converts one entry; ok is false for an entry to skip.
func communityPrice(v json.RawMessage) (groundhog.Price, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var fields map[string]any
	if dec.Decode(&fields) != nil {
		return groundhog.Price{}, false, nil // not an object
	}
	rate := func(key string) (int64, bool, error) {
		x, present := fields[key]
		if !present || x == nil {
			return 0, false, nil
		}
		n, isNum := x.(json.Number)
		if !isNum {
			return 0, false, fmt.Errorf("%s must be a number of dollars per token", key)
		}
		r, err := PerTokenRate(n.String())
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", key, err)
		}
		return r, true, nil
	}
	var p groundhog.Price
	var in, out, ok bool
	var err error
	if p.Input, in, err = rate(keyInput); err != nil {
		return p, false, err
	}
	if p.Output, out, err = rate(keyOutput); err != nil {
		return p, false, err
	}
	if !in || !out {
		return p, false, nil
	}
	if p.CachedInput, ok, err = rate(keyCacheRead); err != nil {
		return p, false, err
	} else if !ok {
		p.CachedInput = p.Input
	}
	if p.CacheWrite, ok, err = rate(keyCacheWrite); err != nil {
		return p, false, err
	} else if !ok {
		p.CacheWrite = p.Input
	}
	if p.CacheWrite1h, ok, err = rate(keyCacheWrite1); err != nil {
		return p, false, err
	} else if !ok {
		p.CacheWrite1h = p.CacheWrite
	}
	return p, true, nil
}

// maxRate bounds a rate: $1,000,000 per million tokens, far above any
// real price, so that Price.Cost's products stay in range for sane usage.
const maxRate = 1_000_000 * 1_000_000

// PerTokenRate converts a decimal number of dollars per token (the text
// of a JSON number: "3e-06", "0.000003", "1.5E-5") to microdollars per
// million tokens, exactly: the text is parsed as a rational number, never
// through float64. A value finer than 1e-12 $/token is rounded half up at
// 1e-12 $/token ("1.0000000000005e-06" → 1000001). Negative, non-numeric
// or absurd (over $1 per token) values are errors.
func PerTokenRate(s string) (int64, error) {
	if !jsonNumber(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		// A huge exponent would make big.Rat build a huge number.
		if e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || e > 30 || e < -30 {
			return 0, fmt.Errorf("price %q is out of range", s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("negative price %q", s)
	}
	r.Mul(r, big.NewRat(1_000_000_000_000, 1))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > maxRate {
		return 0, fmt.Errorf("price %q is out of range", s)
	}
	return q.Int64(), nil
}

// jsonNumber reports whether s is JSON number syntax (big.Rat alone would
// also take "1/3", "0x10" and "Inf"-like forms).
func jsonNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		f := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == f {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		e := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == e {
			return false
		}
	}
	return i == len(s)
}
