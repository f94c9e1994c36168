package main

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/pricing"
)

func init() {
	var (
		cf                        configFlags
		format, tz, shape, prices string
		by                        string
		skipBad                   bool
		o                         ledger.AnalyzeOptions
	)
	cmd := &cobra.Command{
		Use:   "analyze FILE.jsonl",
		Short: "Measure duplicate work in an existing request log, before routing anything through groundhog",
		Long: `Read a request log (JSON Lines, one call a line), fingerprint every request exactly
as the gateway does, and print the duplicate-work report of each day in the file —
the same figures "groundhog report" gives for calls made through the gateway.

Each line is an object:
  timestamp    RFC 3339 string or unix seconds/milliseconds (required)
  operation    report row, a string (optional; "default" when absent, as in the gateway)
  tenant       tenant scope of the hash, a string (optional; "local" when absent)
  request      the provider request body, an object (required)
  usage        the provider's usage object (optional; priced with the price table)
  cost_usd     the call's cost in dollars, a JSON number or a decimal string such
               as "0.004" (optional; exact, wins over usage)
  duration_ms  how long the call took, a number (optional; finds concurrent calls)
  shape        the API: chat, responses, embeddings, messages, or openai.chat,
               openai.responses, openai.embeddings, anthropic.messages
  path         the route, e.g. /v1/chat/completions or /v1/messages
               (shape and path inferred from the request when absent, or --shape)

The calls were made without a cache, so repeats are reported as shadow savings:
what an exact cache plus coalescing would have saved. FILE "-" reads stdin. The
file is streamed: memory holds one day's distinct request hashes, not the file.`,
		Example: `  groundhog analyze requests.jsonl
  groundhog analyze --tz America/New_York --format csv --skip-bad requests.jsonl > report.csv
  groundhog analyze --tenant acme requests.jsonl
  groundhog analyze --by tenant requests.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cf.load(cmd)
			if err != nil {
				return err
			}
			if err := checkFormat(format); err != nil {
				return err
			}
			if o.Location, err = loadZone(tz); err != nil {
				return err
			}
			o.Prices = cfg.PriceTable
			if prices != "" {
				extra, err := pricing.Load(prices)
				if err != nil {
					return fmt.Errorf("--prices: %w", err)
				}
				o.Prices = o.Prices.Merge(extra)
			}
			if shape != "" {
				var ok bool
				if o.Shape, ok = ledger.ParseShape(shape); !ok {
					return fmt.Errorf("--shape %q: use chat, responses, embeddings or messages (or openai.chat, openai.responses, openai.embeddings, anthropic.messages, or a route path)", shape)
				}
			}
			switch by {
			case ledger.GroupByOperation, ledger.GroupByTenant:
				o.GroupBy = by
			default:
				return fmt.Errorf("--by %q: use operation or tenant", by)
			}
			o.SkipBad = skipBad

			var in io.Reader = os.Stdin
			size := int64(-1)
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
					size = st.Size()
				}
				in = f
			}
			stderr := cmd.ErrOrStderr()
			// The bar goes to stderr, by bytes read, only for a human
			// watching: never into a redirected log.
			var bar *progressbar.ProgressBar
			if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				bar = progressbar.DefaultBytes(size, "analyzing")
				o.Progress = func(n int64) { bar.Add64(n) }
			}
			reps, st, err := ledger.Analyze(cmd.Context(), in, o)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(stderr, "analyzed %d lines (%.1f MB): %d calls on %d day(s)", st.Lines, float64(st.Bytes)/1e6, st.Calls, len(reps))
			if st.Skipped > 0 {
				fmt.Fprintf(stderr, ", %d bad lines skipped (first: %v)", st.Skipped, st.FirstSkipped)
			}
			fmt.Fprintln(stderr)
			if len(reps) == 0 && format == "table" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no calls")
				return err
			}
			return writeReports(cmd.OutOrStdout(), format, reps, true)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cf.file, "config", "", "YAML configuration file (optional): its price table is used")
	fs.StringVar(&format, "format", "table", "output format: table, json (an array, one report per day) or csv")
	fs.StringVar(&tz, "tz", "UTC", `time zone of the day boundaries (IANA name such as Europe/Paris, or "Local")`)
	fs.StringVar(&shape, "shape", "", "API shape of lines that name none: chat, responses, embeddings, messages, a provider alias (anthropic.messages) or a route path (default: inferred)")
	fs.StringVar(&o.Tenant, "tenant", "", `count only this tenant's lines (lines without a tenant are "local")`)
	fs.StringVar(&by, "by", ledger.GroupByOperation, "what the report rows are: operation or tenant")
	fs.StringVar(&prices, "prices", "", "price table merged over the configuration's: YAML (USD per million tokens) or the community model_prices_and_context_window.json")
	fs.BoolVar(&skipBad, "skip-bad", false, "count bad lines and go on instead of stopping at the first")
	fs.DurationVar(&o.ReorderWindow, "reorder-window", ledger.DefaultReorderWindow, "how far back in time a line may be relative to an earlier line (logs written at completion are out of order)")
	rootCmd.AddCommand(cmd)
}
