// Package simulate reproduces the transcript-growth arithmetic of an agent
// (docs/agent-state.md): the input tokens and their cost when every step re-sends
// the whole transcript (quadratic total) against a compact working state
// plus the last step (linear total), with and without provider prompt
// caching. Everything is exact integer arithmetic; money is groundhog.Money.
package simulate

import (
	"fmt"
	"math"
	"strconv"

	"github.com/groundhog-ai/groundhog"
)

// Params describes the simulated agent.
//
// TokensPerStep (t) is what one step adds to the transcript; StateTokens (s)
// the size of the rendered working state; PrefixTokens (p) a stable prefix
// (tools and instructions) every request starts with, in both modes.
// StateChangeEvery (k ≥ 1) says the state changes on steps 1, 1+k, 1+2k, …
// (1: every step). Price prices the input tokens; nil means unknown and every
// cost is groundhog.CostUnknown.
type Params struct {
	Steps            []int64
	TokensPerStep    int64
	StateTokens      int64
	PrefixTokens     int64
	StateChangeEvery int64
	PromptCache      bool
	Model            string
	Price            *groundhog.Price
}

// Validate reports the first parameter a simulation cannot use.
func (p Params) Validate() error {
	if len(p.Steps) == 0 {
		return fmt.Errorf("steps: at least one step count is required")
	}
	for _, n := range p.Steps {
		if n < 1 || n > 100_000 {
			return fmt.Errorf("steps: %d is not between 1 and 100000", n)
		}
	}
	if p.TokensPerStep < 1 || p.TokensPerStep > 1_000_000 {
		return fmt.Errorf("tokens-per-step: %d is not between 1 and 1000000", p.TokensPerStep)
	}
	if p.StateTokens < 0 || p.StateTokens > 1_000_000 {
		return fmt.Errorf("state-tokens: %d is not between 0 and 1000000", p.StateTokens)
	}
	if p.PrefixTokens < 0 || p.PrefixTokens > 1_000_000 {
		return fmt.Errorf("prefix-tokens: %d is not between 0 and 1000000", p.PrefixTokens)
	}
	if p.StateChangeEvery < 1 {
		return fmt.Errorf("state-change-every: must be at least 1")
	}
	return nil
}

// Tally is the input of a whole run: total input tokens (cached and written
// ones included, OpenAI semantics), how many of them were read from and
// written to the provider's prompt cache, and their cost.
type Tally struct {
	InputTokens      int64           `json:"input_tokens"`
	CachedReadTokens int64           `json:"cached_read_tokens"`
	CacheWriteTokens int64           `json:"cache_write_tokens"`
	Cost             groundhog.Money `json:"-"`
	CostUSD          string          `json:"cost_usd"`
}

// Row is one step count's figures. FullCached and CompactCached are set
// only with Params.PromptCache.
type Row struct {
	Steps         int64  `json:"steps"`
	Full          Tally  `json:"full_transcript"`
	Compact       Tally  `json:"compact_state"`
	FullCached    *Tally `json:"full_transcript_prompt_cache,omitempty"`
	CompactCached *Tally `json:"compact_state_prompt_cache,omitempty"`
}

// Ratio compares two consecutive step counts: how many times the input
// tokens grow from From steps to To steps, as decimal strings with two
// decimals ("3.96").
type Ratio struct {
	From    int64  `json:"from_steps"`
	To      int64  `json:"to_steps"`
	Full    string `json:"full_transcript"`
	Compact string `json:"compact_state"`
}

// Result is a whole simulation.
type Result struct {
	Model            string  `json:"model"`
	TokensPerStep    int64   `json:"tokens_per_step"`
	StateTokens      int64   `json:"state_tokens"`
	PrefixTokens     int64   `json:"prefix_tokens"`
	StateChangeEvery int64   `json:"state_change_every"`
	PromptCache      bool    `json:"prompt_cache"`
	Rows             []Row   `json:"rows"`
	Ratios           []Ratio `json:"ratios"`
}

// FullTranscriptTokens is the input of n steps that each re-send the whole
// transcript: step k sends p + k·t, in all n·p + t·n(n+1)/2.
func FullTranscriptTokens(n, t, p int64) int64 { return n*p + t*n*(n+1)/2 }

// CompactTokens is the input of n steps that each send the prefix, the
// state and the last step: n·(p + s + t).
func CompactTokens(n, t, s, p int64) int64 { return n * (p + s + t) }

// FullTranscriptCached is the full-transcript run with prompt caching: step
// 1 writes its whole prompt; step k > 1 reads the previous prompt (p +
// (k-1)·t) and writes the t new tokens. Reads (n-1)·p + t·n(n-1)/2, writes
// p + n·t.
func FullTranscriptCached(n, t, p int64) groundhog.Usage {
	return groundhog.Usage{
		InputTokens:       FullTranscriptTokens(n, t, p),
		CachedInputTokens: (n-1)*p + t*n*(n-1)/2,
		CacheWriteTokens:  p + n*t,
	}
}

// CompactCached is the compact run with prompt caching: the prefix is
// written once and read after; the state is written on each step it changed
// (ceil(n/k) of them) and read on the others; the last step is always new,
// uncached input.
func CompactCached(n, t, s, p, k int64) groundhog.Usage {
	writes := (n + k - 1) / k
	return groundhog.Usage{
		InputTokens:       CompactTokens(n, t, s, p),
		CachedInputTokens: (n-1)*p + (n-writes)*s,
		CacheWriteTokens:  p + writes*s,
	}
}

// Run computes the figures of p. It fails on invalid parameters and when a
// cost exceeds what groundhog.Money holds exactly (about $9.2 million).
func Run(p Params) (*Result, error) {
	if p.StateChangeEvery == 0 {
		p.StateChangeEvery = 1
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t, s, pre, k := p.TokensPerStep, p.StateTokens, p.PrefixTokens, p.StateChangeEvery
	res := &Result{Model: p.Model, TokensPerStep: t, StateTokens: s, PrefixTokens: pre,
		StateChangeEvery: k, PromptCache: p.PromptCache, Rows: []Row{}, Ratios: []Ratio{}}
	for i, n := range p.Steps {
		var err error
		row := Row{Steps: n}
		tally := func(dst *Tally, u groundhog.Usage) {
			if err == nil {
				*dst, err = p.tally(u)
			}
		}
		tally(&row.Full, groundhog.Usage{InputTokens: FullTranscriptTokens(n, t, pre)})
		tally(&row.Compact, groundhog.Usage{InputTokens: CompactTokens(n, t, s, pre)})
		if p.PromptCache {
			row.FullCached, row.CompactCached = new(Tally), new(Tally)
			tally(row.FullCached, FullTranscriptCached(n, t, pre))
			tally(row.CompactCached, CompactCached(n, t, s, pre, k))
		}
		if err != nil {
			return nil, fmt.Errorf("%d steps: %w", n, err)
		}
		res.Rows = append(res.Rows, row)
		if i > 0 {
			prev := res.Rows[i-1]
			res.Ratios = append(res.Ratios, Ratio{From: prev.Steps, To: n,
				Full:    RatioString(row.Full.InputTokens, prev.Full.InputTokens),
				Compact: RatioString(row.Compact.InputTokens, prev.Compact.InputTokens)})
		}
	}
	return res, nil
}

func (p Params) tally(u groundhog.Usage) (Tally, error) {
	c := groundhog.CostUnknown
	if p.Price != nil {
		uncached := u.InputTokens - u.CachedInputTokens - u.CacheWriteTokens
		sum := int64(0)
		for _, term := range [][2]int64{{uncached, p.Price.Input}, {u.CachedInputTokens, p.Price.CachedInput}, {u.CacheWriteTokens, p.Price.CacheWrite}} {
			if term[1] != 0 && term[0] > (math.MaxInt64-sum)/term[1] {
				return Tally{}, fmt.Errorf("the cost exceeds $9,000,000, past exact money: use fewer steps or tokens")
			}
			sum += term[0] * term[1]
		}
		c = p.Price.Cost(u)
	}
	return Tally{InputTokens: u.InputTokens, CachedReadTokens: u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteTokens, Cost: c, CostUSD: c.String()}, nil
}

// RatioString renders num/den with two decimals, rounded half up, computed
// in integers ("3.96" for 10100000/2550000). A zero den renders "n/a".
func RatioString(num, den int64) string {
	if den <= 0 || num < 0 {
		return "n/a"
	}
	q := (num*200 + den) / (2 * den) // hundredths, rounded half up
	frac := strconv.FormatInt(q%100, 10)
	if len(frac) < 2 {
		frac = "0" + frac
	}
	return strconv.FormatInt(q/100, 10) + "." + frac
}
