// Command groundhog is the groundhog gateway, its simulated provider and its
// tools. Each subcommand lives in its own file and registers itself on
// rootCmd in an init function; this file only runs the root.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:   "groundhog",
	Short: "groundhog stops AI agents and LLM applications from paying twice for the same work",
	Long: `groundhog is an OpenAI/Anthropic-compatible gateway that removes repeated model
work: an exact response cache scoped per tenant, coalescing of identical calls in
flight, durable idempotency records, and a ledger that measures duplicate work.`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		if !errors.Is(err, errUnknownModel) { // already said on stdout
			fmt.Fprintln(os.Stderr, "groundhog:", err)
		}
		os.Exit(1)
	}
}
