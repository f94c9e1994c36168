package config

import (
	"fmt"

	"github.com/groundhog-ai/groundhog"
)

// CompactionConfig sets the cost model of working-state compaction
// (docs/agent-state.md): when compacting pays, and which model does it.
type CompactionConfig struct {
	// Model is the summarizing model; "" uses the model of the request the
	// context is assembled for.
	Model string `yaml:"model"`
	// MinStateTokens: a smaller state is never worth compacting.
	MinStateTokens int64 `yaml:"min_state_tokens"`
	// TargetPercent is the expected size, in percent, of the compactable
	// part of the state (findings, failed approaches, next step) after a
	// compaction; the verbatim part (objective, constraints, evidence)
	// never shrinks.
	TargetPercent int64 `yaml:"target_percent"`
	// MinSavingUSD: the net saving (expected saving − cost) a compaction
	// must reach, in decimal USD.
	MinSavingUSD string `yaml:"min_saving_usd"`
	// StepsLeft is the expected number of remaining steps when a request
	// gives none; 0 estimates it from the agent session (as many steps again as
	// it has state versions).
	StepsLeft int64 `yaml:"steps_left"`
	// MaxOutputTokens caps the summarizing call's output.
	MaxOutputTokens int64 `yaml:"max_output_tokens"`

	// MinSaving is MinSavingUSD parsed; filled by Finish.
	MinSaving groundhog.Money `yaml:"-"`
}

// DefaultCompaction is the built-in compaction policy.
func DefaultCompaction() CompactionConfig {
	return CompactionConfig{MinStateTokens: 1024, TargetPercent: 40, MinSavingUSD: "0", MaxOutputTokens: 4096}
}

// finish validates c and parses MinSavingUSD.
func (c *CompactionConfig) finish() error {
	if c.MinStateTokens < 0 || c.StepsLeft < 0 || c.MaxOutputTokens < 1 {
		return fmt.Errorf("compaction: min_state_tokens and steps_left must be ≥ 0, max_output_tokens ≥ 1")
	}
	if c.TargetPercent < 1 || c.TargetPercent > 100 {
		return fmt.Errorf("compaction: target_percent must be between 1 and 100")
	}
	if c.MinSavingUSD == "" {
		c.MinSavingUSD = "0"
	}
	m, err := groundhog.ParseMoney(c.MinSavingUSD)
	if err != nil || m < 0 {
		return fmt.Errorf("compaction: min_saving_usd %q is not a non-negative decimal amount", c.MinSavingUSD)
	}
	c.MinSaving = m
	return nil
}
