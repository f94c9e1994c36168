package realtraffic_test

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

// unpriceable are the recorded models the price table leaves unknown on
// purpose, with why: a price it cannot express would be a wrong figure.
var unpriceable = map[string]string{
	"gpt-4o-audio-preview": "audio prompt tokens cost 16× the text rate inside the same prompt_tokens count",
}

// unpriceableModel reports whether model belongs to an unpriceable family.
func unpriceableModel(model string) bool {
	_, ok := unpriceable[pricing.Family(model)]
	return ok
}

// iterationModels returns the model of every usage.iterations entry in a
// recorded usage (an object, or a stream's list of {event, usage}).
func iterationModels(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if its, ok := v["iterations"].([]any); ok {
				for _, it := range its {
					if m, ok := it.(map[string]any); ok {
						if name, ok := m["model"].(string); ok && name != "" {
							out = append(out, name)
						}
					}
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestRecordedModelsPriced lists every model a successful recorded exchange
// of a priced route names — the request's model, the response's, and each
// model of an Anthropic usage.iterations (advisor runs, compaction) — and
// fails for each one the built-in price table does not price, except the
// few it leaves unknown on purpose (unpriceable, each with its reason).
func TestRecordedModelsPriced(t *testing.T) {
	all, err := realtraffic.Load(realtraffic.Folder(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{} // model → exchanges naming it
	for _, it := range all {
		m := it.Meta
		if !modelled[m.Route] || m.Status/100 != 2 {
			continue
		}
		names := append([]string{m.RequestModel, m.ResponseModel}, iterationModels(m.RecordedUsage)...)
		for _, n := range names {
			if n != "" {
				seen[n]++
			}
		}
	}
	models := make([]string, 0, len(seen))
	for n := range seen {
		models = append(models, n)
	}
	sort.Strings(models)
	if len(models) == 0 {
		t.Fatal("no model named by any recorded exchange")
	}
	var unknown int
	for _, n := range models {
		p, ok := prices.Lookup(n)
		switch {
		case unpriceableModel(n):
			if ok {
				t.Errorf("%s is priced, but the suite lists it as unpriceable (%s)", n, unpriceable[pricing.Family(n)])
			}
			t.Logf("%-36s %3d exchanges  unknown on purpose: %s", n, seen[n], unpriceable[pricing.Family(n)])
		case !ok:
			unknown++
			t.Errorf("%s (%d exchanges) has no price: add it to the built-in table", n, seen[n])
		case p.Input == 0:
			t.Errorf("%s has an input price of zero", n)
		default:
			t.Logf("%-36s %3d exchanges  input %d cached %d write %d write1h %d output %d µ$/M",
				n, seen[n], p.Input, p.CachedInput, p.CacheWrite, p.CacheWrite1h, p.Output)
		}
	}
	t.Logf("%d recorded models, %d unpriced", len(models), unknown)
}
