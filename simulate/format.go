package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints r as an aligned terminal table: one line per step
// count, then the growth ratios between consecutive step counts.
func WriteTable(w io.Writer, r *Result) error {
	model := r.Model
	if model == "" {
		model = "(no price)"
	}
	fmt.Fprintf(w, "tokens per step %s, state %s tokens, prefix %s tokens, model %s\n\n",
		groupDigits(r.TokensPerStep), groupDigits(r.StateTokens), groupDigits(r.PrefixTokens), model)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "steps\tfull transcript tokens\tfull USD\tcompact tokens\tcompact USD\t"
	if r.PromptCache {
		head += "full USD (prompt cache)\tcompact USD (prompt cache)\t"
	}
	fmt.Fprintln(tw, head)
	for _, row := range r.Rows {
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t", row.Steps, groupDigits(row.Full.InputTokens), row.Full.CostUSD,
			groupDigits(row.Compact.InputTokens), row.Compact.CostUSD)
		if row.FullCached != nil && row.CompactCached != nil {
			line += fmt.Sprintf("%s\t%s\t", row.FullCached.CostUSD, row.CompactCached.CostUSD)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "\n%d → %d steps: full transcript ×%s, compact state ×%s", q.From, q.To, q.Full, q.Compact)
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w)
	}
	if r.PromptCache {
		fmt.Fprintf(w, "\nprompt cache: the stable part is read at the cached rate; the state is re-written (write rate) on every %d step(s); the last step is uncached\n", r.StateChangeEvery)
	}
	return nil
}

// WriteJSON prints r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
