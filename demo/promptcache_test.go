package demo

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestPromptCacheDemo runs the demo at its default sizes: for every
// configuration the sim's bill for the input equals groundhog's input cost
// to the micro-dollar, moving < static < none, and the measurement agrees
// with the closed form to 0.02 (0.62 and 0.36 of none at w = 1.25, r = 0.1).
func TestPromptCacheDemo(t *testing.T) {
	res, err := RunPromptCache(t.Context(), PromptCacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	res.WriteTable(&table)
	t.Logf("\n%s", table.String())
	byName := map[string]PromptCacheConfiguration{}
	for _, c := range res.Configurations {
		byName[c.Name] = c
		if c.SimBillInputUSD.Format(6) != c.InputCost.Format(6) {
			t.Errorf("%s: sim bill input $%s, groundhog input cost $%s", c.Name, c.SimBillInputUSD, c.InputCost)
		}
		if d := math.Abs(c.RelativeToNone - c.ClosedFormRelative); d > 0.02 {
			t.Errorf("%s: measured %.4f of none, closed form %.4f", c.Name, c.RelativeToNone, c.ClosedFormRelative)
		}
	}
	none, static, moving := byName["none"], byName["static"], byName["moving"]
	if !(moving.InputCost < static.InputCost && static.InputCost < none.InputCost) {
		t.Errorf("input cost: moving $%s, static $%s, none $%s; want moving < static < none", moving.InputCost, static.InputCost, none.InputCost)
	}
	if none.CachedReadTokens != 0 || none.CacheWriteTokens != 0 {
		t.Errorf("none used the prompt cache: %+v", none)
	}
	if math.Abs(static.ClosedFormRelative-0.62) > 0.005 {
		t.Errorf("static closed form %.4f, want about 0.62", static.ClosedFormRelative)
	}
	if math.Abs(moving.ClosedFormRelative-0.36) > 0.005 {
		t.Errorf("moving closed form %.4f, want about 0.36", moving.ClosedFormRelative)
	}
	// Nominal sizes: none's input is Σ(P + T·k) within 1 %.
	nominal := int64(0)
	for k := 1; k <= 6; k++ {
		nominal += int64(8000 + 2000*k)
	}
	if d := math.Abs(float64(none.UncachedTokens-nominal)) / float64(nominal); d > 0.01 {
		t.Errorf("none sent %d input tokens, nominal %d", none.UncachedTokens, nominal)
	}

	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Configurations []map[string]json.RawMessage `json:"configurations"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Configurations) != 5 {
		t.Fatalf("%d configurations in the JSON", len(doc.Configurations))
	}
	for _, c := range doc.Configurations {
		for _, k := range []string{"name", "uncached_tokens", "cached_read_tokens", "cache_write_tokens", "input_cost_usd",
			"relative_to_none", "closed_form_relative", "sim_bill_input_usd"} {
			if _, ok := c[k]; !ok {
				t.Errorf("configuration %s lacks %q", c["name"], k)
			}
		}
		if len(c) != 8 {
			t.Errorf("configuration %s has %d keys, want 8", c["name"], len(c))
		}
		if string(c["input_cost_usd"]) != string(c["sim_bill_input_usd"]) {
			t.Errorf("%s: input_cost_usd %s != sim_bill_input_usd %s", c["name"], c["input_cost_usd"], c["sim_bill_input_usd"])
		}
	}
}

func TestPromptCacheDemoRejectsBadSizes(t *testing.T) {
	for _, o := range []PromptCacheOptions{{PrefixTokens: 500}, {Turns: 1}, {TurnTokens: -5}, {Model: "no-such-model"}} {
		if _, err := RunPromptCache(t.Context(), o); err == nil {
			t.Errorf("RunPromptCache(%+v) accepted", o)
		}
	}
}
