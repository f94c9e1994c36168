package ledger

import (
	"github.com/groundhog-ai/groundhog"

	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
)

// usd is one Money figure as a JSON number with six decimals, null when
// unknown.
type usd groundhog.Money

func (m usd) MarshalJSON() ([]byte, error) {
	if groundhog.Money(m) == groundhog.CostUnknown {
		return []byte("null"), nil
	}
	return []byte(groundhog.Money(m).Format(6)), nil
}

// jsonPromptCache is PromptCache as JSON, embedded in every report row.
type jsonPromptCache struct {
	CachedReadTokens         int64                  `json:"cached_read_tokens"`
	CacheWriteTokens         int64                  `json:"cache_write_tokens"`
	CacheWrite1hTokens       int64                  `json:"cache_write_1h_tokens"`
	UncachedInputTokens      int64                  `json:"uncached_input_tokens"`
	HitRatio                 share                  `json:"prompt_cache_hit_ratio"`
	Saved                    usd                    `json:"prompt_cache_saved_usd"`
	UnknownCalls             int64                  `json:"prompt_cache_unknown_calls"`
	Breaks                   []jsonPromptCacheBreak `json:"prompt_cache_breaks"`
	Agreement                []jsonAgreement        `json:"prompt_cache_agreement"`
	FanOutHeld               int64                  `json:"fan_out_held"`
	FanOutWriteTokensAvoided int64                  `json:"fan_out_write_tokens_avoided"`
}

type jsonPromptCacheBreak struct {
	Cause              string `json:"cause"`
	Calls              int64  `json:"calls"`
	ExampleRequestHash string `json:"example_request_hash"`
	UncachedTokens     int64  `json:"uncached_tokens"`
}

// jsonAgreement is one cell of the agreement with the provider's verdict;
// cause is "" where groundhog saw no break.
type jsonAgreement struct {
	Cause          string `json:"cause"`
	ProviderReason string `json:"provider_reason"`
	Calls          int64  `json:"calls"`
	LostTokens     int64  `json:"lost_tokens"`
}

// toJSONPromptCache renders p; prompt_cache_saved_usd is null when unknown,
// and prompt_cache_breaks and prompt_cache_agreement are [] (not null) when
// empty.
func toJSONPromptCache(p PromptCache) jsonPromptCache {
	j := jsonPromptCache{
		CachedReadTokens: p.CachedReadTokens, CacheWriteTokens: p.CacheWriteTokens, CacheWrite1hTokens: p.CacheWrite1hTokens,
		UncachedInputTokens: p.UncachedInputTokens, HitRatio: share(p.HitRatio), Saved: usd(p.Saved),
		UnknownCalls: p.UnknownCalls, Breaks: make([]jsonPromptCacheBreak, 0, len(p.Breaks)),
		Agreement:  make([]jsonAgreement, 0, len(p.Agreement)),
		FanOutHeld: p.FanOutHeld, FanOutWriteTokensAvoided: p.FanOutWriteTokensAvoided,
	}
	for _, b := range p.Breaks {
		j.Breaks = append(j.Breaks, jsonPromptCacheBreak(b))
	}
	for _, a := range p.Agreement {
		j.Agreement = append(j.Agreement, jsonAgreement(a))
	}
	return j
}

// promptCacheCSVHeader are the prompt-cache columns, after the others. The
// breaks column holds the JSON array of the JSON report.
var promptCacheCSVHeader = []string{"cached_read_tokens", "cache_write_tokens", "cache_write_1h_tokens",
	"uncached_input_tokens", "prompt_cache_hit_ratio", "prompt_cache_saved_usd", "prompt_cache_unknown_calls",
	"prompt_cache_breaks", "fan_out_held", "fan_out_write_tokens_avoided"}

func promptCacheCSV(p PromptCache) []string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	breaks, err := json.Marshal(toJSONPromptCache(p).Breaks)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return []string{i(p.CachedReadTokens), i(p.CacheWriteTokens), i(p.CacheWrite1hTokens), i(p.UncachedInputTokens),
		strconv.FormatFloat(p.HitRatio, 'f', 4, 64), p.Saved.Format(6), i(p.UnknownCalls), string(breaks),
		i(p.FanOutHeld), i(p.FanOutWriteTokensAvoided)}
}

// writePromptCacheTable appends the prompt-cache section of the terminal
// table: one line per operation whose prompt cache did anything, the total,
// notes for a net loss and unknown savings, and the breaks by cause. It
// writes nothing when the provider's prompt cache did nothing all day.
func (r *Report) writePromptCacheTable(buf *bytes.Buffer) error {
	if !r.Total.PromptCache.Active() {
		return nil
	}
	fmt.Fprintf(buf, "\nprovider prompt cache on %s\n\n", r.Day)
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, r.groupLabel()+"\tinput_tokens\tcached_read\tcache_write\tof_them_1h\tuncached\thit%\tnet_saved\tfan_out_held\twrites_avoided\t\n")
	var losing []string
	line := func(op string, p PromptCache) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s%%\t%s\t%d\t%d\t\n", op, p.InputTokens, p.CachedReadTokens,
			p.CacheWriteTokens, p.CacheWrite1hTokens, p.UncachedInputTokens, strconv.FormatFloat(p.HitRatio*100, 'f', 2, 64),
			tableMoneyOne(p.Saved), p.FanOutHeld, p.FanOutWriteTokensAvoided)
		if p.Saved < 0 && p.Saved != -1 {
			losing = append(losing, op)
		}
	}
	for _, row := range r.Operations {
		if !row.PromptCache.Active() {
			continue
		}
		op := row.Operation
		if op == "" {
			op = "(none)"
		}
		line(op, row.PromptCache)
	}
	line(TotalLabel, r.Total.PromptCache)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, op := range losing {
		fmt.Fprintf(buf, "\nnote: the prompt cache lost money for %s: its writes cost more above the input rate than its reads saved (net_saved is negative).\n", op)
	}
	if n := r.Total.PromptCache.UnknownCalls; n > 0 {
		fmt.Fprintf(buf, "\nnote: %d call(s) used the prompt cache with a model not in the price table; their saving is unknown and left out of net_saved.\n", n)
	}
	if len(r.Total.PromptCache.Breaks) > 0 {
		fmt.Fprintf(buf, "\nprompt-cache breaks by cause\n\n")
		tw = tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "cause\tcalls\tuncached_tokens\texample_request_hash\n")
		for _, b := range r.Total.PromptCache.Breaks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", b.Cause, b.Calls, b.UncachedTokens, b.ExampleRequestHash)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return r.writeAgreementTable(buf)
}

// writeAgreementTable appends the agreement between groundhog's causes and
// the provider's own verdicts (calls that asked the provider), nothing when
// no call did.
func (r *Report) writeAgreementTable(buf *bytes.Buffer) error {
	ag := r.Total.PromptCache.Agreement
	if len(ag) == 0 {
		return nil
	}
	fmt.Fprintf(buf, "\nprompt-cache verdicts: groundhog and the provider\n\n")
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "groundhog_cause\tprovider_reason\tcalls\tlost_tokens\n")
	for _, a := range ag {
		cause := a.Cause
		if cause == "" {
			cause = "(no break)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", cause, a.ProviderReason, a.Calls, a.LostTokens)
	}
	return tw.Flush()
}

// tableMoneyOne formats one Money figure as tableMoney does a Total.
func tableMoneyOne(m groundhog.Money) string {
	if m == groundhog.CostUnknown {
		return "unknown"
	}
	return tableMoney(groundhog.TotalOf(m))
}
