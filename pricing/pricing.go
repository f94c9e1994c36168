// Package pricing holds the price table: what each model costs per million
// tokens, as exact integers, loaded from YAML.
package pricing

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/groundhog-ai/groundhog"
)

// Table maps a model name to its price. Lookups try the exact name first,
// then the name without a trailing snapshot date ("gpt-4o-mini-2024-07-18"
// → "gpt-4o-mini", "claude-sonnet-4-5-20250929" → "claude-sonnet-4-5"), then
// the longest configured prefix ending in "*" ("gpt-4o-mini*").
type Table map[string]groundhog.Price

// PricesTaken is the date the built-in table's provider prices were last
// checked against the providers' public pricing pages (shown by
// "groundhog prices"). A price changed after it is wrong here until the
// table is updated: prices_file or prices: in the configuration win.
const PricesTaken = "2026-12-01"

// anthropicAliases maps each of Anthropic's "-latest" model aliases to the
// family of the dated snapshot it answers with (claude-3-5-haiku-latest
// answers as claude-3-5-haiku-20241022).
var anthropicAliases = map[string]string{
	"claude-3-opus-latest":     "claude-3-opus",
	"claude-3-5-haiku-latest":  "claude-3-5-haiku",
	"claude-3-5-sonnet-latest": "claude-3-5-sonnet",
	"claude-3-7-sonnet-latest": "claude-3-7-sonnet",
}

// Default is the built-in table: the simulated provider's models and the
// current OpenAI and Anthropic model families, by their undated names (a
// dated snapshot resolves to its family, see Lookup). Prices are USD per
// million tokens, taken on PricesTaken from platform.claude.com's pricing
// and model pages, developers.openai.com's model pages and
// ai.google.dev's Gemini API pricing page.
//
// The four input rates: input (uncached), cached input (a prompt-cache
// read), cache write (a short write: Anthropic's 5-minute write, OpenAI's
// 30-minute "cache writes" rate) and cache write 1h (the long write:
// Anthropic's 1-hour write, OpenAI's 12-hour write). OpenAI models whose
// page lists no cache-write price write at the input rate, for both
// lengths: their prompt cache has no write surcharge.
//
// OpenAI's GPT-5.6 models bill cache writes at 1.25× input (their one
// write length is 30 minutes, so both write columns hold that rate);
// "gpt-5.6" is the alias of gpt-5.6-sol. Terra and Luna are at the prices
// of 30 July 2026. Models without prompt caching (gpt-4o-search-preview,
// computer-use-preview) have cached input at the input rate. Fees per tool
// call (web search, computer use) are not token prices and are not in the
// table.
//
// Models priced by prompt length (Claude Haiku 5.5: one rate up to 100K
// prompt tokens, another above) and OpenAI's long-context surcharge (over
// 272K input tokens) are not modelled: Haiku 5.5 is left out (unknown, never
// a wrong figure), and the OpenAI rows are the short-context rates. Models
// priced by modality (gpt-4o-audio-preview: audio tokens at 16× the text
// rate, in the same prompt_tokens count) are left out for the same reason.
func Default() Table {
	t := Table{}
	for model, p := range map[string][5]string{
		//                        input    cached   write    write1h  output
		"sim-small":              {"1.00", "0.10", "1.25", "2.00", "3.00"},
		"sim-large":              {"10.00", "1.00", "12.50", "20.00", "30.00"},
		"sim-embed":              {"0.02", "0.02", "0.02", "0.02", "0"},
		"gpt-4o-mini":            {"0.15", "0.075", "0.15", "0.15", "0.60"},
		"gpt-4o":                 {"2.50", "1.25", "2.50", "2.50", "10.00"},
		"gpt-4.1":                {"2.00", "0.50", "2.00", "2.00", "8.00"},
		"gpt-4.1-mini":           {"0.40", "0.10", "0.40", "0.40", "1.60"},
		"gpt-4.1-nano":           {"0.10", "0.025", "0.10", "0.10", "0.40"},
		"gpt-5":                  {"1.25", "0.125", "1.25", "1.25", "10.00"},
		"gpt-5-mini":             {"0.25", "0.025", "0.25", "0.25", "2.00"},
		"gpt-5-nano":             {"0.05", "0.005", "0.05", "0.05", "0.40"},
		"gpt-5-codex":            {"1.25", "0.125", "1.25", "1.25", "10.00"},
		"gpt-5.1":                {"1.25", "0.125", "1.25", "1.25", "10.00"},
		"gpt-5.2":                {"1.75", "0.175", "1.75", "1.75", "14.00"},
		"gpt-5.3-codex":          {"1.75", "0.175", "1.75", "1.75", "14.00"},
		"gpt-5.4":                {"2.50", "0.25", "2.50", "2.50", "15.00"},
		"gpt-5.4-mini":           {"0.75", "0.075", "0.75", "0.75", "4.50"},
		"gpt-5.5":                {"5.00", "0.50", "5.00", "5.00", "30.00"},
		"gpt-5.6":                {"5.00", "0.50", "6.25", "6.25", "30.00"},
		"gpt-5.6-sol":            {"5.00", "0.50", "6.25", "6.25", "30.00"},
		"gpt-5.6-terra":          {"2.00", "0.20", "2.50", "2.50", "12.00"},
		"gpt-5.6-luna":           {"0.20", "0.02", "0.25", "0.25", "1.20"},
		"gpt-6.2-sol":            {"2.00", "0.10", "2.50", "5.00", "10.00"},
		"gpt-6.1-terra":          {"1.00", "0.05", "1.25", "2.50", "5.00"},
		"o3":                     {"2.00", "0.50", "2.00", "2.00", "8.00"},
		"o3-mini":                {"1.10", "0.55", "1.10", "1.10", "4.40"},
		"o4-mini":                {"1.10", "0.275", "1.10", "1.10", "4.40"},
		"gpt-4o-search-preview":  {"2.50", "2.50", "2.50", "2.50", "10.00"},
		"computer-use-preview":   {"3.00", "3.00", "3.00", "3.00", "12.00"},
		"text-embedding-3-small": {"0.02", "0.02", "0.02", "0.02", "0"},
		"text-embedding-3-large": {"0.13", "0.13", "0.13", "0.13", "0"},
		"claude-fable-5-1":       {"10.00", "0.25", "12.50", "20.00", "50.00"},
		"claude-fable-5":         {"10.00", "1.00", "12.50", "20.00", "50.00"},
		"claude-opus-5-5":        {"4.00", "0.20", "5.00", "8.00", "20.00"},
		"claude-opus-5":          {"5.00", "0.50", "6.25", "10.00", "25.00"},
		"claude-opus-4-8":        {"5.00", "0.50", "6.25", "10.00", "25.00"},
		"claude-opus-4-7":        {"5.00", "0.50", "6.25", "10.00", "25.00"},
		"claude-opus-4-6":        {"5.00", "0.50", "6.25", "10.00", "25.00"},
		"claude-opus-4-5":        {"5.00", "0.50", "6.25", "10.00", "25.00"},
		"claude-opus-4-1":        {"15.00", "1.50", "18.75", "30.00", "75.00"},
		"claude-opus-4":          {"15.00", "1.50", "18.75", "30.00", "75.00"},
		"claude-opus-4-0":        {"15.00", "1.50", "18.75", "30.00", "75.00"},
		"claude-3-opus":          {"15.00", "1.50", "18.75", "30.00", "75.00"},
		"claude-sonnet-5-5":      {"2.00", "0.20", "2.50", "4.00", "10.00"},
		"claude-sonnet-5":        {"2.00", "0.20", "2.50", "4.00", "10.00"},
		"claude-sonnet-4-6":      {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-sonnet-4-5":      {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-sonnet-4":        {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-sonnet-4-0":      {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-3-7-sonnet":      {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-3-5-sonnet":      {"3.00", "0.30", "3.75", "6.00", "15.00"},
		"claude-haiku-4-5":       {"1.00", "0.10", "1.25", "2.00", "5.00"},
		"claude-3-5-haiku":       {"0.80", "0.08", "1.00", "1.60", "4.00"},
		"claude-3-haiku":         {"0.25", "0.03", "0.30", "0.50", "1.25"},
		// Gemini (text/image/video input rates): implicit caching reads at
		// the cached rate and writes for free (write = input); the Pro
		// models charge other rates for prompts over 200K tokens, under
		// their ">200k" entry (wire/gemini.PriceModel).
		"gemini-2.5-pro":            {"1.25", "0.125", "1.25", "1.25", "10.00"},
		"gemini-2.5-pro>200k":       {"2.50", "0.25", "2.50", "2.50", "15.00"},
		"gemini-2.5-flash":          {"0.30", "0.03", "0.30", "0.30", "2.50"},
		"gemini-2.5-flash-lite":     {"0.10", "0.01", "0.10", "0.10", "0.40"},
		"gemini-3-pro-preview":      {"2.00", "0.20", "2.00", "2.00", "12.00"},
		"gemini-3-pro-preview>200k": {"4.00", "0.40", "4.00", "4.00", "18.00"},
		"gemini-3-flash-preview":    {"0.50", "0.05", "0.50", "0.50", "3.00"},
		"gemini-embedding-001":      {"0.15", "0.15", "0.15", "0.15", "0"},
	} {
		pr, err := parsePrice(p[0], p[1], p[2], p[4])
		if err == nil {
			pr.CacheWrite1h, err = perMillion(p[3])
		}
		if err != nil {
			panic(err)
		}
		t[model] = pr
	}
	// Gemini explicit caches (cachedContents): storage rent per million
	// tokens per hour, Google's "storage price" column; the long-context
	// entries rent at the same rate.
	for model, rate := range map[string]string{
		"gemini-2.5-pro":            "4.50",
		"gemini-2.5-pro>200k":       "4.50",
		"gemini-2.5-flash":          "1.00",
		"gemini-2.5-flash-lite":     "1.00",
		"gemini-3-pro-preview":      "4.50",
		"gemini-3-pro-preview>200k": "4.50",
		"gemini-3-flash-preview":    "1.00",
	} {
		pr := t[model]
		v, err := perMillion(rate)
		if err != nil {
			panic(err)
		}
		pr.CacheStoragePerHour = v
		t[model] = pr
	}
	// Anthropic's aliases name their current snapshot; a request may name
	// the alias (and a stream cut before its first event is priced by the
	// request's model), the answer names the snapshot.
	for alias, family := range anthropicAliases {
		p, ok := t[family]
		if !ok {
			panic("pricing: alias " + alias + " of " + family + ", which has no price") // never a price of 0
		}
		t[alias] = p
	}
	addBedrock(t) // bedrock.go
	return t
}

// Lookup returns the price of model and whether it is known: the exact
// name, else the family a dated snapshot belongs to (see Family), else the
// longest "*" prefix entry, else, for an Amazon Bedrock model id, its
// foundation model family's entry (see BedrockFamily). The family is found by removing the date only,
// never by prefix, so "gpt-4o-2024-08-06" can never take gpt-4o-mini's price
// nor "gpt-4o-mini-2024-07-18" gpt-4o's.
func (t Table) Lookup(model string) (groundhog.Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	if fam := Family(model); fam != model {
		if p, ok := t[fam]; ok {
			return p, true
		}
	}
	best, bestLen := groundhog.Price{}, -1
	for name, p := range t {
		if prefix, ok := strings.CutSuffix(name, "*"); ok && strings.HasPrefix(model, prefix) && len(prefix) > bestLen {
			best, bestLen = p, len(prefix)
		}
	}
	if bestLen < 0 {
		if entry, ok := t.lookupBedrock(model); ok { // bedrock.go: a Bedrock id by its family
			return t[entry], true
		}
	}
	return best, bestLen >= 0
}

// Family returns model without a trailing snapshot date: "-YYYY-MM-DD"
// (OpenAI: "gpt-4.1-2025-04-14") or "-YYYYMMDD" (Anthropic:
// "claude-opus-4-1-20250805"). A name without such a suffix is returned
// unchanged.
func Family(model string) string {
	i := strings.LastIndexByte(model, '-')
	if i <= 0 {
		return model
	}
	if d := model[i+1:]; len(d) == 8 && digits(d) && plausibleDate(d[:4], d[4:6], d[6:]) {
		return model[:i]
	}
	// -YYYY-MM-DD: the last three dash-separated fields.
	parts := strings.Split(model, "-")
	if n := len(parts); n >= 4 {
		y, m, d := parts[n-3], parts[n-2], parts[n-1]
		if len(y) == 4 && len(m) == 2 && len(d) == 2 && digits(y+m+d) && plausibleDate(y, m, d) {
			return strings.Join(parts[:n-3], "-")
		}
	}
	return model
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// plausibleDate keeps a model number that happens to have eight digits from
// being read as a date: the year starts with 20, month 01–12, day 01–31.
func plausibleDate(y, m, d string) bool {
	return y[:2] == "20" && m >= "01" && m <= "12" && d >= "01" && d <= "31"
}

// Cost prices usage for model, or returns groundhog.CostUnknown when the
// model is not in the table (never a silent zero).
func (t Table) Cost(model string, u groundhog.Usage) groundhog.Money {
	p, ok := t.Lookup(model)
	if !ok {
		return groundhog.CostUnknown
	}
	return p.Cost(u)
}

// CostParts prices a call whose usage ran in several iterations: the sum
// of each part's usage at its own model's rates (a part without a model ran
// on model), CostUnknown when any of those models is not in the table. With
// no parts it is Cost(model, u).
func (t Table) CostParts(model string, u groundhog.Usage, parts []groundhog.UsagePart) groundhog.Money {
	if len(parts) == 0 {
		return t.Cost(model, u)
	}
	var sum groundhog.Money
	for _, p := range parts {
		m := p.Model
		if m == "" {
			m = model
		}
		c := t.Cost(m, p.Usage)
		if !c.Known() {
			return groundhog.CostUnknown
		}
		sum += c
	}
	return sum
}

// PromptCacheSaving is the net saving of the provider's prompt cache for
// usage u of model (groundhog.Price.PromptCacheSaving): reads × (input −
// cached_input) − short writes × (cache_write − input) − 1h writes ×
// (cache_write_1h − input), exact in picodollars and negative when the
// writes cost more than the reads saved. It is groundhog.CostUnknown when
// the model is not in the table, even for usage without cache tokens, so
// an unpriced model never reads as "saved 0".
func (t Table) PromptCacheSaving(model string, u groundhog.Usage) groundhog.Money {
	p, ok := t.Lookup(model)
	if !ok {
		return groundhog.CostUnknown
	}
	return p.PromptCacheSaving(u)
}

// Models returns the table's model names, sorted.
func (t Table) Models() []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// YAMLPrice is a price as written in YAML: decimal dollars per million
// tokens, as strings or numbers.
type YAMLPrice struct {
	Input       string `yaml:"input"`
	CachedInput string `yaml:"cached_input"`
	CacheWrite  string `yaml:"cache_write"`
	// CacheWrite1h is the rate of a one-hour prompt-cache write.
	CacheWrite1h string `yaml:"cache_write_1h"`
	Output       string `yaml:"output"`
	// CacheStoragePerMTokHour is the storage rent of an explicit cache
	// (Gemini's cachedContents) per million tokens per hour; missing means
	// not priced (the rent is then unknown).
	CacheStoragePerMTokHour string `yaml:"cache_storage_per_mtok_hour"`
}

// Parse reads a YAML mapping of model → {input, cached_input, cache_write,
// cache_write_1h, output, cache_storage_per_mtok_hour} in USD per million
// tokens (the last per hour). A missing cached_input
// defaults to input; a missing cache_write defaults to 1.25 × input; a
// missing cache_write_1h defaults to 2 × input. A file that is not such a
// mapping but holds it under one top-level "prices:" key (the form of the
// configuration file, as the README shows the table) is read as that
// mapping.
func Parse(r io.Reader) (Table, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	var raw map[string]YAMLPrice
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && err != io.EOF {
		var wrapped struct {
			Prices map[string]YAMLPrice `yaml:"prices"`
		}
		wdec := yaml.NewDecoder(bytes.NewReader(b))
		wdec.KnownFields(true)
		if wdec.Decode(&wrapped) != nil || wrapped.Prices == nil {
			return nil, fmt.Errorf("price table: %w", err)
		}
		raw = wrapped.Prices
	}
	return FromStrings(raw)
}

// FromStrings converts decimal-string prices (as in YAML) to a Table.
func FromStrings(raw map[string]YAMLPrice) (Table, error) {
	t := Table{}
	for model, p := range raw {
		pr, err := parsePrice(p.Input, p.CachedInput, p.CacheWrite, p.Output)
		if err == nil && p.CacheWrite1h != "" {
			pr.CacheWrite1h, err = perMillion(p.CacheWrite1h)
		}
		if err == nil && p.CacheStoragePerMTokHour != "" {
			pr.CacheStoragePerHour, err = perMillion(p.CacheStoragePerMTokHour)
		}
		if err != nil {
			return nil, fmt.Errorf("price table: model %q: %w", model, err)
		}
		t[model] = pr
	}
	return t, nil
}

// Load reads a price table file. Its format is told by its content: the
// community JSON format (see IsCommunityJSON and ParseCommunity), else the
// YAML table (see Parse).
func Load(path string) (Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Table
	if IsCommunityJSON(b) {
		t, err = ParseCommunity(bytes.NewReader(b))
	} else {
		t, err = Parse(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Merge returns a copy of t with every entry of over replacing t's.
func (t Table) Merge(over Table) Table {
	out := Table{}
	for k, v := range t {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// perMillion parses decimal dollars per million tokens into microdollars per
// million tokens (= picodollars per token).
func perMillion(s string) (int64, error) {
	m, err := groundhog.ParseMoney(s)
	if err != nil {
		return 0, err
	}
	if m < 0 {
		return 0, fmt.Errorf("negative price %q", s)
	}
	if m%groundhog.Microdollar != 0 {
		return 0, fmt.Errorf("price %q is finer than a microdollar per million tokens", s)
	}
	return int64(m / groundhog.Microdollar), nil
}

func parsePrice(input, cached, write, output string) (groundhog.Price, error) {
	var p groundhog.Price
	var err error
	if input == "" || output == "" {
		return p, fmt.Errorf("input and output prices are required")
	}
	if p.Input, err = perMillion(input); err != nil {
		return p, err
	}
	if p.Output, err = perMillion(output); err != nil {
		return p, err
	}
	p.CachedInput, p.CacheWrite, p.CacheWrite1h = p.Input, p.Input*5/4, 2*p.Input
	if cached != "" {
		if p.CachedInput, err = perMillion(cached); err != nil {
			return p, err
		}
	}
	if write != "" {
		if p.CacheWrite, err = perMillion(write); err != nil {
			return p, err
		}
	}
	return p, nil
}
