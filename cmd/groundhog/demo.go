package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/demo"
)

func init() {
	demoCmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a demonstration against an in-process gateway and simulated provider",
		Args:  cobra.NoArgs,
	}
	var (
		o      = demo.DefaultPromptCacheOptions
		format string
	)
	pc := &cobra.Command{
		Use:   "prompt-cache",
		Short: "Show what provider prompt caching saves on a support-agent workload, measured and in closed form",
		Long: `Drive a support-agent workload through an in-process gateway to the simulated
provider: turn k sends a shared prefix (tools and instructions) plus k turns of
history, through the OpenAI Responses API, under five configurations:

  none      explicit prompt-cache mode without a breakpoint (nothing cached)
  static    explicit mode, one breakpoint after tools + instructions
  moving    explicit mode, a new breakpoint on every turn, earlier ones kept
  implicit  implicit mode (the provider saves through the newest message)
  both      implicit mode plus the static breakpoint

For each: uncached, cached-read and cache-write tokens and the input cost as
groundhog's ledger measured them, the cost relative to none, the closed-form
expectation beside it, and the simulated provider's own bill for the input.`,
		Example: `  groundhog demo prompt-cache
  groundhog demo prompt-cache --prefix-tokens 20000 --turns 10 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--format must be table or json, got %q", format)
			}
			res, err := demo.RunPromptCache(cmd.Context(), o)
			if err != nil {
				return err
			}
			if format == "json" {
				return res.WriteJSON(cmd.OutOrStdout())
			}
			return res.WriteTable(cmd.OutOrStdout())
		},
	}
	fs := pc.Flags()
	fs.IntVar(&o.PrefixTokens, "prefix-tokens", o.PrefixTokens, "tokens of the shared prefix (tools and instructions)")
	fs.IntVar(&o.TurnTokens, "turn-tokens", o.TurnTokens, "tokens each turn adds to the history")
	fs.IntVar(&o.Turns, "turns", o.Turns, "turns of the conversation")
	fs.StringVar(&o.Model, "model", o.Model, "model of the simulated provider")
	fs.StringVar(&format, "format", "table", "output: table or json")
	demoCmd.AddCommand(pc)
	rootCmd.AddCommand(demoCmd)
}
