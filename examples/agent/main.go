// Command agent is a small agent loop against the simulated provider that
// keeps its working state in groundhog instead of a growing transcript:
//
//   - the objective and the user's constraints live in the session's state
//     (versioned, compare-and-swap), never in a summary;
//   - a large tool output (a 4,000-line log) is stored as evidence and the
//     state carries only its reference;
//   - every step asks groundhog for its request body (stable prefix +
//     rendered state + last step) and sends it through the gateway;
//   - one side-effecting tool call (a refund) goes through the operations
//     API, so the retry after a lost answer does not refund twice;
//   - a repeated lookup is answered from the response cache;
//   - at the end it prints the duplicate-work report of its own run and
//     the input tokens it sent against what the full transcript would have
//     sent.
//
// Run it with `go run ./examples/agent` (an in-process gateway on a
// temporary SQLite file), or against a running `groundhog serve` with
// `go run ./examples/agent --gateway http://127.0.0.1:8080 [--key KEY]`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/groundhog-ai/groundhog/localgw"
)

func main() {
	gatewayURL := flag.String("gateway", "", "base URL of a running groundhog gateway (default: start one in process)")
	key := flag.String("key", "", "gateway key (none for a keyless local gateway)")
	steps := flag.Int("steps", 12, "agent steps to run")
	flag.Parse()
	if err := realMain(context.Background(), os.Stdout, *gatewayURL, *key, *steps); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context, out io.Writer, gatewayURL, key string, steps int) error {
	opts := Options{Steps: steps, Key: key, GatewayURL: gatewayURL, Session: "example-agent"}
	if gatewayURL == "" {
		dir, err := os.MkdirTemp("", "groundhog-agent-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		g, err := localgw.Start(ctx, dir, localgw.Options{})
		if err != nil {
			return err
		}
		defer g.Close()
		opts.GatewayURL = g.URL
		opts.FlushLedger = g.Ledger.Flush
		fmt.Fprintf(out, "in-process gateway at %s (simulated provider, SQLite in %s)\n\n", g.URL, dir)
	}
	sum, err := Run(ctx, opts, out)
	if err != nil {
		return err
	}
	return sum.Print(out)
}
