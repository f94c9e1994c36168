// Package compaction decides when compacting an agent's working state pays
// for itself, and performs compactions without ever losing the user's
// words (docs/agent-state.md): the objective and constraints are carried verbatim
// by groundhog, evidence references survive, only the findings, failed
// approaches and next step may be rewritten.
//
// The decision is a cost model in exact money (groundhog.Money): what the
// smaller state saves on every expected remaining step against what the
// summarizing call costs plus the prompt-cache entry it invalidates.
package compaction

import (
	"fmt"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/sim"
)

// Reasons of a Decision, machine-readable (the Reason text starts with one).
const (
	ReasonPays          = "pays"
	ReasonDoesNotPay    = "does_not_pay"
	ReasonBelowMinimum  = "state_below_minimum"
	ReasonNothing       = "nothing_to_compact"
	ReasonNoStepsLeft   = "no_steps_left"
	ReasonPriceUnknown  = "price_unknown"
	StepsGiven          = "given"
	StepsConfigured     = "configured"
	StepsEstimated      = "estimated"
	promptFramingTokens = 2 * sim.MessageOverhead // system + user message of the summarizing call
)

// MaxStepsLeft bounds the expected remaining steps (and keeps every amount
// inside exact money).
const MaxStepsLeft = 1_000_000

// Inputs are the figures of one decision.
//
// StateTokens is the rendered state's size; VerbatimTokens the part of it
// that never shrinks (objective, constraints, evidence lines, headings).
// StepsLeft < 0 means unknown: Decide then uses the configured default or
// estimates it as StepsSoFar (as many steps again as the session has
// taken; versions count steps, one state write a step). Model prices the carried tokens; SummaryModel the summarizing
// call ("" = Model). PromptCache says the request carries cache
// breakpoints, so a compaction also invalidates the cached state and pays
// for its re-write at the write rate.
type Inputs struct {
	StateTokens    int64
	VerbatimTokens int64
	PromptTokens   int64 // the summarizing call's own instructions
	StepsLeft      int64
	StepsSoFar     int64
	Model          string
	SummaryModel   string
	PromptCache    bool
}

// Decision is the answer returned with every assembled context and by
// every compaction.
type Decision struct {
	Compact             bool            `json:"compact"`
	Reason              string          `json:"reason"`
	ExpectedSaving      groundhog.Money `json:"-"`
	Cost                groundhog.Money `json:"-"`
	ExpectedSavingUSD   string          `json:"expected_saving_usd"`
	CostUSD             string          `json:"cost_usd"`
	StateTokens         int64           `json:"state_tokens"`
	ExpectedStateTokens int64           `json:"expected_state_tokens"`
	StepsLeft           int64           `json:"steps_left"`
	StepsLeftSource     string          `json:"steps_left_source"`
	Model               string          `json:"model"`
	SummaryModel        string          `json:"summary_model"`
}

// Decide applies the cost model of cfg with prices from prices:
//
//	after    = verbatim + (state − verbatim) × target_percent / 100
//	saving   = (state − after) × steps_left × input price of Model
//	cost     = (prompt + state) × input price of SummaryModel
//	         + after × output price of SummaryModel
//	         + after × cache-write price of Model       (only with PromptCache)
//	compact  = state ≥ min_state_tokens and saving − cost ≥ min_saving and saving > cost
//
// An unpriced model gives compact false with reason price_unknown and the
// amounts "unknown", never a zero.
func Decide(cfg config.CompactionConfig, prices pricing.Table, in Inputs) (d Decision) {
	d = Decision{StateTokens: in.StateTokens, Model: in.Model, SummaryModel: in.SummaryModel,
		ExpectedSaving: groundhog.CostUnknown, Cost: groundhog.CostUnknown}
	if d.SummaryModel == "" {
		d.SummaryModel = cfg.Model
	}
	if d.SummaryModel == "" {
		d.SummaryModel = in.Model
	}
	switch {
	case in.StepsLeft >= 0:
		d.StepsLeft, d.StepsLeftSource = in.StepsLeft, StepsGiven
	case cfg.StepsLeft > 0:
		d.StepsLeft, d.StepsLeftSource = cfg.StepsLeft, StepsConfigured
	default:
		d.StepsLeft, d.StepsLeftSource = max(in.StepsSoFar, 0), StepsEstimated
	}
	d.StepsLeft = min(d.StepsLeft, MaxStepsLeft)
	verbatim := min(max(in.VerbatimTokens, 0), in.StateTokens)
	pct := cfg.TargetPercent
	if pct < 1 || pct > 100 {
		pct = 100
	}
	d.ExpectedStateTokens = verbatim + (in.StateTokens-verbatim)*pct/100
	defer func() { d.ExpectedSavingUSD, d.CostUSD = d.ExpectedSaving.String(), d.Cost.String() }()

	p, okP := prices.Lookup(in.Model)
	sp, okS := prices.Lookup(d.SummaryModel)
	if !okP || !okS {
		missing := in.Model
		if okP {
			missing = d.SummaryModel
		}
		d.Reason = fmt.Sprintf("%s: model %q has no price in the price table", ReasonPriceUnknown, missing)
		return d
	}
	shrink := in.StateTokens - d.ExpectedStateTokens
	d.ExpectedSaving = groundhog.Money(shrink * d.StepsLeft * p.Input)
	d.Cost = groundhog.Money((in.PromptTokens+promptFramingTokens+in.StateTokens)*sp.Input + d.ExpectedStateTokens*sp.Output)
	if in.PromptCache {
		d.Cost += groundhog.Money(d.ExpectedStateTokens * p.CacheWrite)
	}
	switch {
	case in.StateTokens < cfg.MinStateTokens:
		d.Reason = fmt.Sprintf("%s: the state is %d tokens, under min_state_tokens %d", ReasonBelowMinimum, in.StateTokens, cfg.MinStateTokens)
	case shrink <= 0:
		d.Reason = fmt.Sprintf("%s: only verbatim fields (objective, constraints, evidence) are left", ReasonNothing)
	case d.StepsLeft == 0:
		d.Reason = fmt.Sprintf("%s: no step left to carry the smaller state", ReasonNoStepsLeft)
	case d.ExpectedSaving > d.Cost && d.ExpectedSaving-d.Cost >= cfg.MinSaving:
		d.Compact = true
		d.Reason = fmt.Sprintf("%s: %d fewer tokens on each of %d steps save $%s for $%s", ReasonPays, shrink, d.StepsLeft, d.ExpectedSaving, d.Cost)
	default:
		d.Reason = fmt.Sprintf("%s: %d fewer tokens on each of %d steps save $%s, the compaction costs $%s (min net saving $%s)",
			ReasonDoesNotPay, shrink, d.StepsLeft, d.ExpectedSaving, d.Cost, cfg.MinSaving)
	}
	return d
}
