package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// PromptCacheOptions size the support-agent workload of RunPromptCache: turn
// k (1…Turns) sends the shared prefix (tools and instructions, PrefixTokens)
// plus k × TurnTokens of history, to Model.
type PromptCacheOptions struct {
	PrefixTokens int    // default 8000
	TurnTokens   int    // default 2000
	Turns        int    // default 6
	Model        string // default sim-small
}

// DefaultPromptCacheOptions are the sizes of the worked example.
var DefaultPromptCacheOptions = PromptCacheOptions{PrefixTokens: 8000, TurnTokens: 2000, Turns: 6, Model: "sim-small"}

// The configurations, in the order they run and print. Each sends the same
// turns through the OpenAI Responses API with:
//
//   - none: prompt_cache_options explicit mode and no breakpoint (nothing is
//     written, nothing read);
//   - static: explicit mode, one breakpoint after tools + instructions;
//   - moving: explicit mode, a breakpoint on every turn, earlier ones kept;
//   - implicit: implicit mode (the provider saves through the newest message);
//   - both: implicit mode plus the static breakpoint.
var promptCacheConfigs = []string{"none", "static", "moving", "implicit", "both"}

// PromptCacheConfiguration is what one configuration cost, as groundhog's
// ledger measured it, beside the closed form and the provider's own bill.
type PromptCacheConfiguration struct {
	Name             string
	UncachedTokens   int64 // input tokens neither read from nor written to the prompt cache
	CachedReadTokens int64
	CacheWriteTokens int64
	// InputCost is the input side of the run priced from the ledger's usage:
	// uncached at the input rate, reads at the cached rate, writes at the
	// write rate.
	InputCost groundhog.Money
	// RelativeToNone is InputCost ÷ none's InputCost; ClosedFormRelative the
	// same ratio computed from the sizes and the rate multipliers alone.
	RelativeToNone     float64
	ClosedFormRelative float64
	// SimBillInputUSD is the simulated provider's bill for the run's input
	// (its input_usd), read over HTTP.
	SimBillInputUSD groundhog.Money
}

// PromptCacheResult is the demo's outcome.
type PromptCacheResult struct {
	Options PromptCacheOptions
	// WriteMultiplier and ReadMultiplier are the model's write and cached
	// rates ÷ its input rate (w and r of the closed forms).
	WriteMultiplier, ReadMultiplier float64
	Configurations                  []PromptCacheConfiguration
}

func (o *PromptCacheOptions) defaults() error {
	d := DefaultPromptCacheOptions
	if o.PrefixTokens == 0 {
		o.PrefixTokens = d.PrefixTokens
	}
	if o.TurnTokens == 0 {
		o.TurnTokens = d.TurnTokens
	}
	if o.Turns == 0 {
		o.Turns = d.Turns
	}
	if o.Model == "" {
		o.Model = d.Model
	}
	switch {
	case o.PrefixTokens < 1024 || o.PrefixTokens > 1_000_000:
		return groundhog.Errorf(groundhog.EINVALID, "--prefix-tokens must be 1024…1000000 (the provider caches nothing under 1,024 tokens), got %d", o.PrefixTokens)
	case o.TurnTokens < 16 || o.TurnTokens > 1_000_000:
		return groundhog.Errorf(groundhog.EINVALID, "--turn-tokens must be 16…1000000, got %d", o.TurnTokens)
	case o.Turns < 2 || o.Turns > 50:
		return groundhog.Errorf(groundhog.EINVALID, "--turns must be 2…50, got %d", o.Turns)
	}
	return nil
}

// RunPromptCache runs the prompt-cache demo: the support-agent workload of o
// under each configuration (see promptCacheConfigs), through an in-process
// gateway to an in-process simulated provider. Each configuration has its
// own prompt_cache_key (so none reads another's entries), its own operation
// in the ledger, and a fresh bill.
func RunPromptCache(ctx context.Context, o PromptCacheOptions) (*PromptCacheResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	e, err := newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	price, ok := e.cfg.PriceTable.Lookup(o.Model)
	if !ok {
		return nil, groundhog.Errorf(groundhog.EINVALID, "model %q has no price in the price table", o.Model)
	}
	if price.Input == 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "model %q has a zero input price: nothing to compare", o.Model)
	}
	res := &PromptCacheResult{Options: o,
		WriteMultiplier: float64(price.CacheWrite) / float64(price.Input),
		ReadMultiplier:  float64(price.CachedInput) / float64(price.Input)}
	day := time.Now()
	for _, name := range promptCacheConfigs {
		if err := e.post(ctx, e.simURL+"/sim/v1/bill/reset", nil, nil, nil); err != nil {
			return nil, err
		}
		for k := 1; k <= o.Turns; k++ {
			body := turnBody(o, name, k)
			hdr := map[string]string{"Groundhog-Operation": "demo-prompt-cache-" + name, "Groundhog-Cache": "bypass"}
			if err := e.post(ctx, e.gwURL+"/v1/responses", body, hdr, nil); err != nil {
				return nil, fmt.Errorf("demo: %s turn %d: %w", name, k, err)
			}
		}
		var bill struct {
			InputUSD string `json:"input_usd"`
		}
		if err := e.get(ctx, e.simURL+"/sim/v1/bill", &bill); err != nil {
			return nil, err
		}
		c := PromptCacheConfiguration{Name: name}
		if c.SimBillInputUSD, err = groundhog.ParseMoney(bill.InputUSD); err != nil {
			return nil, fmt.Errorf("demo: the sim's bill has no input_usd (%q): %w", bill.InputUSD, err)
		}
		if err := e.ledger.Flush(ctx); err != nil {
			return nil, err
		}
		rep, err := ledger.BuildReport(ctx, e.db, ledger.ReportParams{Day: day, Operation: "demo-prompt-cache-" + name})
		if err != nil {
			return nil, err
		}
		pc := rep.Total.PromptCache
		c.UncachedTokens, c.CachedReadTokens, c.CacheWriteTokens = pc.UncachedInputTokens, pc.CachedReadTokens, pc.CacheWriteTokens
		long := pc.CacheWrite1hTokens
		c.InputCost = groundhog.Money(pc.UncachedInputTokens*price.Input + pc.CachedReadTokens*price.CachedInput +
			(pc.CacheWriteTokens-long)*price.CacheWrite + long*price.CacheWrite1h)
		c.ClosedFormRelative = closedForm(name, o, res.WriteMultiplier, res.ReadMultiplier)
		res.Configurations = append(res.Configurations, c)
	}
	none := res.Configurations[0].InputCost
	for i := range res.Configurations {
		if none > 0 {
			res.Configurations[i].RelativeToNone = round4(float64(res.Configurations[i].InputCost) / float64(none))
		}
	}
	return res, nil
}

// closedForm is the expected input cost of configuration name relative to
// none, with P prefix tokens, T tokens a turn, N turns, write multiplier w
// and read multiplier r:
//
//	none    = 1
//	static  = (P·w + T + Σ_{k=2..N}(P·r + T·k)) / D
//	moving  = ((P+T)·w + (N−1)·T·w + r·Σ_{k=2..N}(P + T(k−1))) / D
//	D       = Σ_{k=1..N}(P + T·k)
//
// implicit and both equal moving: the provider saves through the newest
// message each turn, so every turn reads the previous turn's whole prompt
// and writes only its own new turn (both keeps the static marker, which the
// longer saved prefix supersedes).
func closedForm(name string, o PromptCacheOptions, w, r float64) float64 {
	P, T, N := float64(o.PrefixTokens), float64(o.TurnTokens), o.Turns
	var d, static, moving float64
	for k := 1; k <= N; k++ {
		kf := float64(k)
		d += P + T*kf
		if k >= 2 {
			static += P*r + T*kf
			moving += r * (P + T*(kf-1))
		}
	}
	static += P*w + T
	moving += (P+T)*w + float64(N-1)*T*w
	switch name {
	case "none":
		return 1
	case "static":
		return round4(static / d)
	default:
		return round4(moving / d)
	}
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// text returns n one-token words (the sim counts a word of up to 4 bytes as
// one token), distinct per tag so different parts never share a prefix by
// accident.
func text(n int, tag byte) string {
	var b strings.Builder
	b.Grow(n * 5)
	for i := range n {
		b.WriteByte(tag)
		b.WriteString(strconv.Itoa(i % 1000))
		b.WriteByte(' ')
	}
	return b.String()
}

// turnBody is the Responses request of turn k under configuration name.
// Every message costs the sim's MessageOverhead (4) tokens on top of its
// text, so each text has 4 words fewer than its nominal size.
func turnBody(o PromptCacheOptions, name string, k int) []byte {
	const overhead = 4
	bp := map[string]string{"mode": "explicit"}
	part := func(s string, marker bool) []map[string]any {
		p := map[string]any{"type": "input_text", "text": s}
		if marker {
			p["prompt_cache_breakpoint"] = bp
		}
		return []map[string]any{p}
	}
	staticMarker := name == "static" || name == "both"
	input := []map[string]any{{"role": "developer", "content": part("You are the support agent; tools and policies follow. "+text(o.PrefixTokens-overhead-10, 'p'), staticMarker)}}
	for j := 1; j <= k; j++ {
		input = append(input, map[string]any{"role": "user", "content": part(text(o.TurnTokens-overhead, byte('a'+(j-1)%26)), name == "moving")})
	}
	mode := "explicit"
	if name == "implicit" || name == "both" {
		mode = "implicit"
	}
	b, err := json.Marshal(map[string]any{
		"model": o.Model, "input": input, "max_output_tokens": 8,
		"prompt_cache_key":     "groundhog-demo:" + name,
		"prompt_cache_options": map[string]string{"mode": mode},
	})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return b
}

// post sends body (JSON, may be nil) and decodes a 2xx answer into out
// (when not nil); any other status is an error with the body's start.
func (e *env) post(ctx context.Context, url string, body []byte, hdr map[string]string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(req, out)
}

func (e *env) get(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return do(req, out)
}

func do(req *http.Request, out any) error {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %.300s", req.Method, req.URL.Path, res.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// jsonUSD is money as a JSON number with six decimals.
type jsonUSD groundhog.Money

func (m jsonUSD) MarshalJSON() ([]byte, error) { return []byte(groundhog.Money(m).Format(6)), nil }

// ratio is a float as a JSON number with four decimals.
type ratio float64

func (r ratio) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(r), 'f', 4, 64), nil
}

// WriteJSON writes
//
//	{"configurations":[{"name","uncached_tokens","cached_read_tokens","cache_write_tokens",
//	  "input_cost_usd","relative_to_none","closed_form_relative","sim_bill_input_usd"}, …]}
//
// money in dollars with six decimals, ratios with four.
func (r *PromptCacheResult) WriteJSON(w io.Writer) error {
	type conf struct {
		Name               string  `json:"name"`
		UncachedTokens     int64   `json:"uncached_tokens"`
		CachedReadTokens   int64   `json:"cached_read_tokens"`
		CacheWriteTokens   int64   `json:"cache_write_tokens"`
		InputCost          jsonUSD `json:"input_cost_usd"`
		RelativeToNone     ratio   `json:"relative_to_none"`
		ClosedFormRelative ratio   `json:"closed_form_relative"`
		SimBillInputUSD    jsonUSD `json:"sim_bill_input_usd"`
	}
	out := struct {
		Configurations []conf `json:"configurations"`
	}{Configurations: []conf{}}
	for _, c := range r.Configurations {
		out.Configurations = append(out.Configurations, conf{c.Name, c.UncachedTokens, c.CachedReadTokens, c.CacheWriteTokens,
			jsonUSD(c.InputCost), ratio(c.RelativeToNone), ratio(c.ClosedFormRelative), jsonUSD(c.SimBillInputUSD)})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the configurations as an aligned terminal table with the
// workload and the multipliers in the title.
func (r *PromptCacheResult) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	o := r.Options
	fmt.Fprintf(&buf, "prompt-cache demo: %s, prefix %d tokens, %d turns of %d tokens (w = %.2f, r = %.2f)\n\n",
		o.Model, o.PrefixTokens, o.Turns, o.TurnTokens, r.WriteMultiplier, r.ReadMultiplier)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "configuration\tuncached\tcached_read\tcache_write\tinput_cost\tvs_none\tclosed_form\tsim_bill_input\t\n")
	for _, c := range r.Configurations {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t$%s\t%.4f\t%.4f\t$%s\t\n", c.Name, c.UncachedTokens, c.CachedReadTokens,
			c.CacheWriteTokens, c.InputCost.Format(6), c.RelativeToNone, c.ClosedFormRelative, c.SimBillInputUSD.Format(6))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
