package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/simulate"
)

func init() {
	var (
		cf     configFlags
		p      simulate.Params
		steps  []int64
		model  string
		format string
		plot   string
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Print the input tokens and cost of an agent run: full transcript vs compact working state",
		Long: `Print, for each step count, the total input tokens and their cost when every step
re-sends the whole transcript (t·n(n+1)/2, quadratic) and when it sends a compact
working state plus the last step (n·(state + t), linear), with and without provider
prompt caching, and how much each grows between consecutive step counts.

With --prompt-cache, the stable part of each prompt is read at the model's cached
rate and newly cached tokens are written at its cache-write rate: the full
transcript writes each new step and reads the rest; the compact state writes the
prefix once and re-writes the state on each step it changes (--state-change-every).
Prices come from the configured price table (--config); without --price costs are
"unknown".`,
		Example: `  groundhog simulate --steps 50,100 --tokens-per-step 2000 --state-tokens 4000
  groundhog simulate --steps 50,100,200 --tokens-per-step 2000 --state-tokens 4000 --prompt-cache --price sim-large --plot curves.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--format %q: use table or json", format)
			}
			cfg, err := cf.load(cmd)
			if err != nil {
				return err
			}
			p.Steps = steps
			if model != "" {
				price, ok := cfg.PriceTable.Lookup(model)
				if !ok {
					return fmt.Errorf("--price %q: the model is not in the price table (known: %v)", model, cfg.PriceTable.Models())
				}
				p.Model, p.Price = model, &price
			}
			res, err := simulate.Run(p)
			if err != nil {
				return err
			}
			if plot != "" {
				f, err := os.Create(plot)
				if err != nil {
					return err
				}
				if err := simulate.WritePlot(f, p); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if format == "json" {
				return simulate.WriteJSON(cmd.OutOrStdout(), res)
			}
			return simulate.WriteTable(cmd.OutOrStdout(), res)
		},
	}
	fs := cmd.Flags()
	addConfigFlags(fs, &cf)
	fs.Int64SliceVar(&steps, "steps", []int64{50, 100}, "step counts to compare, comma separated")
	fs.Int64Var(&p.TokensPerStep, "tokens-per-step", 2000, "tokens each step adds to the transcript (t)")
	fs.Int64Var(&p.StateTokens, "state-tokens", 4000, "tokens of the rendered working state")
	fs.Int64Var(&p.PrefixTokens, "prefix-tokens", 0, "stable prefix (tools, instructions) every request starts with")
	fs.Int64Var(&p.StateChangeEvery, "state-change-every", 1, "the state changes every this many steps (prompt-cache re-writes)")
	fs.BoolVar(&p.PromptCache, "prompt-cache", false, "also price the runs with provider prompt caching")
	fs.StringVar(&model, "price", "", "price the input tokens as this model of the price table")
	fs.StringVar(&format, "format", "table", "table or json")
	fs.StringVar(&plot, "plot", "", "write the cumulative curves as an SVG to this file")
	rootCmd.AddCommand(cmd)
}
