package dashboard

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// The provider prompt-cache part of the page (docs/prompt-caching.md): a table with
// the prompt-cache figures of every operation and the total, the breaks by
// cause of the scope, and two charts over the window (hit ratio, net
// saving, which can be negative).

// promptCacheColumns are the prompt-cache keys of the report, in the JSON's
// order.
var promptCacheColumns = []column{
	{"cached read", "input tokens read from the provider's prompt cache", "cached_read_tokens"},
	{"cache write", "input tokens written to the provider's prompt cache (all TTLs)", "cache_write_tokens"},
	{"of them 1h", "cache writes with a one-hour TTL (priced higher)", "cache_write_1h_tokens"},
	{"uncached", "input tokens neither read nor written", "uncached_input_tokens"},
	{"hit%", "cached read ÷ all input tokens", "prompt_cache_hit_ratio"},
	{"net saved", "what the reads saved minus what the writes cost above the input rate (USD; negative: caching lost money)", "prompt_cache_saved_usd"},
	{"unknown", "calls using the prompt cache with a model not in the price table (left out of net saved)", "prompt_cache_unknown_calls"},
	{"breaks", "calls whose prefix reuse broke, by cause", "prompt_cache_breaks"},
	{"vs provider", "calls that asked the provider for its own cache verdict, by groundhog's cause / the provider's reason", "prompt_cache_agreement"},
	{"fan-out held", "calls held until a sibling had written the shared prefix", "fan_out_held"},
	{"writes avoided", "cached-read tokens of the held calls: what they would have written again", "fan_out_write_tokens_avoided"},
}

// promptCacheView is the template's data for the prompt-cache section.
type promptCacheView struct {
	Columns []column
	Rows    []tableRow
	Total   tableRow
	Breaks  []breakRow // of the page's scope (the selected operation or the total)
	Losing  bool       // the scope's net saving is negative
	Unknown int64      // the scope's calls with an unknown saving
}

// breakRow is one cause of the breaks table.
type breakRow struct {
	Cause, Example        string
	Calls, UncachedTokens string
	Operation             string
	Total                 bool
}

// ratioText is a ratio as the JSON writes it (4 decimals) and as a
// percentage with 2 decimals.
func ratioText(r float64) [2]string {
	return [2]string{strconv.FormatFloat(r, 'f', 4, 64), strconv.FormatFloat(r*100, 'f', 2, 64) + "%"}
}

// savedText is a net saving as the JSON writes it (null when unknown) and
// as the table shows it.
func savedText(m groundhog.Money) [2]string {
	if m == groundhog.CostUnknown {
		return [2]string{"null", "unknown"}
	}
	return [2]string{jsonMoney(groundhog.TotalOf(m)), tableMoney(groundhog.TotalOf(m))}
}

// breaksJSON renders breaks exactly as json.Marshal renders the decoded
// report value (objects with sorted keys), so data-value can be compared
// with the report; the text lists the causes and their calls.
func breaksJSON(bs []ledger.PromptCacheBreak) [2]string {
	arr := make([]map[string]any, 0, len(bs))
	texts := make([]string, 0, len(bs))
	for _, b := range bs {
		arr = append(arr, map[string]any{"cause": b.Cause, "calls": b.Calls, "example_request_hash": b.ExampleRequestHash, "uncached_tokens": b.UncachedTokens})
		texts = append(texts, b.Cause+" ×"+strconv.FormatInt(b.Calls, 10))
	}
	j, err := json.Marshal(arr)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	text := strings.Join(texts, ", ")
	if text == "" {
		text = "none"
	}
	return [2]string{string(j), text}
}

// agreementJSON renders the agreement cells as breaksJSON does the breaks;
// the text lists "cause / reason ×calls" ("-" for no break).
func agreementJSON(as []ledger.PromptCacheAgreement) [2]string {
	arr := make([]map[string]any, 0, len(as))
	texts := make([]string, 0, len(as))
	for _, a := range as {
		arr = append(arr, map[string]any{"cause": a.Cause, "provider_reason": a.ProviderReason, "calls": a.Calls, "lost_tokens": a.LostTokens})
		texts = append(texts, agreementText(a.Cause, a.ProviderReason, a.Calls))
	}
	j, err := json.Marshal(arr)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	text := strings.Join(texts, ", ")
	if text == "" {
		text = "none"
	}
	return [2]string{string(j), text}
}

// agreementText is one agreement cell as the table shows it.
func agreementText(cause, reason string, calls int64) string {
	if cause == "" {
		cause = "-"
	}
	return cause + " / " + reason + " ×" + strconv.FormatInt(calls, 10)
}

// promptCacheValues returns, for the row, each prompt-cache column's (JSON
// value, table text).
func promptCacheValues(r ledger.Row) map[string][2]string {
	p := r.PromptCache
	i := func(v int64) [2]string { s := strconv.FormatInt(v, 10); return [2]string{s, s} }
	return map[string][2]string{
		"cached_read_tokens": i(p.CachedReadTokens), "cache_write_tokens": i(p.CacheWriteTokens),
		"cache_write_1h_tokens": i(p.CacheWrite1hTokens), "uncached_input_tokens": i(p.UncachedInputTokens),
		"prompt_cache_hit_ratio": ratioText(p.HitRatio), "prompt_cache_saved_usd": savedText(p.Saved),
		"prompt_cache_unknown_calls": i(p.UnknownCalls), "prompt_cache_breaks": breaksJSON(p.Breaks),
		"prompt_cache_agreement": agreementJSON(p.Agreement),
		"fan_out_held":           i(p.FanOutHeld), "fan_out_write_tokens_avoided": i(p.FanOutWriteTokensAvoided),
	}
}

// buildPromptCache fills the prompt-cache table of the day and the breaks of
// the scope, and returns the two prompt-cache charts over the window.
func buildPromptCache(p pageParams, today *ledger.Report, days []string, rows []ledger.Row, span string) (promptCacheView, []chartView) {
	v := promptCacheView{Columns: promptCacheColumns}
	for _, r := range today.Operations {
		v.Rows = append(v.Rows, p.reportRow(r, false, promptCacheColumns, promptCacheValues))
	}
	v.Total = p.reportRow(today.Total, true, promptCacheColumns, promptCacheValues)
	scope := p.rowOf(today)
	for _, b := range scope.PromptCache.Breaks {
		v.Breaks = append(v.Breaks, breakRow{Cause: b.Cause, Example: b.ExampleRequestHash,
			Calls: strconv.FormatInt(b.Calls, 10), UncachedTokens: strconv.FormatInt(b.UncachedTokens, 10),
			Operation: p.Operation, Total: !p.Selected})
	}
	v.Losing = scope.PromptCache.Saved < 0 && scope.PromptCache.Saved != groundhog.CostUnknown
	v.Unknown = scope.PromptCache.UnknownCalls

	hit := series{Name: "hit ratio", Class: "s-hit", Field: "prompt_cache_hit_ratio"}
	saved := series{Name: "net saving", Class: "s-saved", Field: "prompt_cache_saved_usd"}
	for _, r := range rows {
		hit.vals = append(hit.vals, r.PromptCache.HitRatio*100)
		hit.texts = append(hit.texts, ratioText(r.PromptCache.HitRatio)[0])
		m := r.PromptCache.Saved
		if m == groundhog.CostUnknown {
			saved.vals = append(saved.vals, 0)
		} else {
			saved.vals = append(saved.vals, float64(m)/float64(groundhog.Dollar))
		}
		saved.texts = append(saved.texts, savedText(m)[0])
	}
	hitChart := layout(chartView{ID: "prompt-cache-hits", Title: "Prompt-cache hit ratio per day", AxisNote: "%",
		Desc: "Bars: share of input tokens read from the provider's prompt cache, in percent per day for " + span},
		days, []series{hit}, false, false)
	for i := range hitChart.Bars {
		hitChart.Bars[i].Title = dayLabel(days[i]) + ": hit ratio " + ratioText(rows[i].PromptCache.HitRatio)[1]
	}
	savedChart := layoutSigned(chartView{ID: "prompt-cache-saved", Title: "Prompt-cache net saving per day", AxisNote: "USD",
		Desc: "Bars: net saving of the provider's prompt cache (reads' saving minus the writes' extra cost) in US dollars per day, below the zero line when caching lost money, for " + span},
		days, saved)
	return v, []chartView{hitChart, savedChart}
}

// layoutSigned lays out one money series whose values may be negative: bars
// grow up from the zero line for savings and down from it (class s-loss)
// for losses. An unknown value ("null") is drawn as no bar.
func layoutSigned(c chartView, days []string, s series) chartView {
	c.W, c.H = chartW, chartH
	c.PlotL, c.PlotR, c.PlotT, c.PlotB = f1(plotLeft), f1(plotRight), f1(plotTop), f1(plotBottom)
	c.CX, c.CY = f1((plotLeft+plotRight)/2), f1((plotTop+plotBottom)/2)
	c.Legend = []legendItem{{X: f1(plotLeft), Y: f1(legendY - 9), TextX: f1(plotLeft + 14), TextY: f1(legendY), Class: s.Class, Name: s.Name},
		{X: f1(plotLeft + 14 + float64(len(s.Name))*labelCharW + 18), Y: f1(legendY - 9),
			TextX: f1(plotLeft + 28 + float64(len(s.Name))*labelCharW + 18), TextY: f1(legendY), Class: "s-loss", Name: "net loss"}}
	lo, hi := 0.0, 0.0
	for _, v := range s.vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	c.Empty = lo == 0 && hi == 0
	step, _ := niceStep(hi-lo, false)
	top := math.Ceil(hi/step-1e-9) * step
	bottom := -math.Ceil(-lo/step-1e-9) * step
	if top-bottom <= 0 {
		top = step
	}
	ph := float64(plotBottom - plotTop)
	y := func(v float64) float64 { return plotBottom - (v-bottom)/(top-bottom)*ph }
	for v := bottom; v <= top+step/2; v += step {
		label := axisLabel(math.Abs(v), step, true)
		if v < -step/2 {
			label = "-" + label
		}
		c.YTicks = append(c.YTicks, tick{Pos: f1(y(v)), Label: label})
	}
	n := len(days)
	if n == 0 {
		return c
	}
	slot := float64(plotRight-plotLeft) / float64(n)
	gap := slot * barGapFrac
	k := max(int(math.Ceil(6*labelCharW*1.15/slot)), 1)
	for i, day := range days {
		x0 := plotLeft + float64(i)*slot + gap/2
		w := slot - gap
		if (n-1-i)%k == 0 {
			c.XLabels = append(c.XLabels, tick{Pos: f1(x0 + w/2), Label: dayLabel(day)})
		}
		v := s.vals[i]
		b := bar{Class: s.Class, Day: day, Field: s.Field, Value: s.texts[i], X: f1(x0), W: f1(w)}
		switch {
		case s.texts[i] == "null":
			b.Title = dayLabel(day) + ": " + s.Name + " unknown (model not in the price table)"
		case v < 0:
			b.Class = "s-loss"
			b.Title = dayLabel(day) + ": net loss -$" + trimMoney(strings.TrimPrefix(s.texts[i], "-"))
		default:
			b.Title = dayLabel(day) + ": " + s.Name + " " + tooltipValue(s.texts[i], true)
		}
		y0, y1 := y(0), y(v)
		b.Y, b.H = f1(math.Min(y0, y1)), f1(math.Abs(y0-y1))
		c.Bars = append(c.Bars, b)
	}
	return c
}
