package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
)

func init() {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "prices [MODEL]",
		Short: "Print the price table, or what one model resolves to and where its price comes from",
		Long: `Without MODEL, print the effective price table — the built-in one, then
prices_file, then the configuration's prices: over it — in USD per million tokens:
input, cached input (a prompt-cache read), cache write (Anthropic 5 minutes, OpenAI
30 minutes), cache write 1h (Anthropic 1 hour, OpenAI 12 hours), output and
the storage rent of an explicit cache per million tokens per hour (Gemini's
cachedContents; "-" when the entry has none: such a rent is unknown), with the
source of each entry.

With MODEL, print the entry it resolves to — the exact name, its dated family
("gpt-4o-2024-08-06" → "gpt-4o") or the longest "*" prefix entry — and where that
entry comes from. An unknown model prints "unknown" and exits with status 1: its
calls would cost "unknown", never 0.`,
		Example: `  groundhog prices
  groundhog prices claude-sonnet-4-5-20250929
  groundhog prices --config groundhog.yaml gpt-4o`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cf.load(cmd)
			if err != nil {
				return err
			}
			layers, err := priceLayers(cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				return writePriceTable(out, cfg.PriceTable, layers)
			}
			model := args[0]
			entry, how, p, ok := cfg.PriceTable.Resolve(model)
			if !ok {
				fmt.Fprintf(out, "%s: unknown (in neither the built-in table, prices_file nor prices:)\n", model)
				return errUnknownModel
			}
			src := sourceOf(entry, layers)
			if src == builtinSource {
				src += ", prices taken " + pricing.PricesTaken
			}
			fmt.Fprintf(out, "model:   %s\nentry:   %s (%s)\nsource:  %s\n", model, entry, how, src)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "USD per million tokens:\tinput\tcached\twrite 5m\twrite 1h\toutput\tstorage/h")
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%s\t%s\n", rate(p.Input), rate(p.CachedInput), rate(p.CacheWrite), rate(p.CacheWrite1h), rate(p.Output), storageRate(p.CacheStoragePerHour))
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&cf.file, "config", "", "YAML configuration file (optional): its prices_file and prices: are applied")
	rootCmd.AddCommand(cmd)
}

// builtinSource names the built-in table as a source.
const builtinSource = "built-in"

// errUnknownModel makes "groundhog prices MODEL" exit 1 after it printed
// "unknown".
var errUnknownModel = fmt.Errorf("unknown model")

// priceLayer is one source of prices, in the order they are merged.
type priceLayer struct {
	name  string
	table pricing.Table
}

// priceLayers rebuilds the layers cfg.PriceTable was merged from (see
// config.Config.finish), so that an entry can be traced to its source.
func priceLayers(cfg *config.Config) ([]priceLayer, error) {
	layers := []priceLayer{{builtinSource, pricing.Default()}}
	if cfg.PricesFile != "" {
		t, err := pricing.Load(cfg.PricesFile)
		if err != nil {
			return nil, err
		}
		layers = append(layers, priceLayer{"prices_file " + cfg.PricesFile, t})
	}
	if len(cfg.Prices) > 0 {
		t, err := pricing.FromStrings(cfg.Prices)
		if err != nil {
			return nil, err
		}
		layers = append(layers, priceLayer{"config prices:", t})
	}
	return layers, nil
}

// sourceOf is the last layer that defines entry: the one whose price won.
func sourceOf(entry string, layers []priceLayer) string {
	for i := len(layers) - 1; i >= 0; i-- {
		if _, ok := layers[i].table[entry]; ok {
			return layers[i].name
		}
	}
	return "unknown"
}

func writePriceTable(w io.Writer, t pricing.Table, layers []priceLayer) error {
	fmt.Fprintf(w, "prices in USD per million tokens (built-in prices taken %s)\n\n", pricing.PricesTaken)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tinput\tcached\twrite 5m\twrite 1h\toutput\tstorage/h\tsource")
	for _, m := range t.Models() {
		p := t[m]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m, rate(p.Input), rate(p.CachedInput), rate(p.CacheWrite),
			rate(p.CacheWrite1h), rate(p.Output), storageRate(p.CacheStoragePerHour), sourceOf(m, layers))
	}
	return tw.Flush()
}

// storageRate shows an explicit cache's storage rent per million tokens
// per hour, "-" when the entry has none (such a rent is unknown).
func storageRate(microPerMillionHour int64) string {
	if microPerMillionHour <= 0 {
		return "-"
	}
	return rate(microPerMillionHour)
}

// rate shows microdollars per million tokens as dollars per million, with
// at least two decimals and no trailing zeros beyond them ("2.50", "0.075").
func rate(microPerMillion int64) string {
	s := (groundhog.Money(microPerMillion) * groundhog.Microdollar).Format(6)
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}
