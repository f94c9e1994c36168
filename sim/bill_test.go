package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// TestBillJSON: GET /sim/v1/bill prices uncached input, reads, short writes
// and 1h writes apart, and its JSON (field names are a contract) round-trips.
func TestBillJSON(t *testing.T) {
	s, base := startSim(t, Config{})
	// One Anthropic call writing 1103 tokens for 1h and 100 for 5m, then one
	// reading all 1203.
	body := mreq(nil, []any{ablock(1100, "rule", "1h"), ablock(100, "more", "5m")}, amsg("user", ablock(1, "hi", "")))
	callMessages(t, base, body)
	callMessages(t, base, body)
	req, _ := http.NewRequest(http.MethodGet, base+"/sim/v1/bill", nil)
	status, _, raw := do(t, req)
	if status != 200 {
		t.Fatalf("GET bill: %d %s", status, raw)
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"cache_create_tokens", "cache_creations", "cache_write_1h_tokens", "cache_write_tokens", "cached_input_tokens", "calls", "input_tokens", "input_usd", "output_tokens", "output_usd", "storage_usd", "storage_usd_exact", "usd"}
	if !slices.Equal(keys, want) {
		t.Fatalf("bill keys %v, want %v", keys, want)
	}
	// The JSON carries dollars to the microdollar.
	var dec Bill
	b := s.Bill()
	if err := json.Unmarshal(raw, &dec); err != nil || dec.InputUSD.String() != b.InputUSD.String() || dec.USD.String() != b.USD.String() ||
		dec.OutputUSD.String() != b.OutputUSD.String() || dec.CacheWrite1hTokens != b.CacheWrite1hTokens || dec.InputTokens != b.InputTokens {
		t.Fatalf("decoded %+v (%v), want %+v", dec, err, b)
	}
	p := pricing.Default()["sim-small"]
	const uncached = 2 * 6
	wantIn := groundhog.Money(uncached*p.Input + 1203*p.CachedInput + 100*p.CacheWrite + 1103*2*p.Input)
	if b.Calls != 2 || b.InputTokens != 2*1209 || b.CachedInputTokens != 1203 || b.CacheWriteTokens != 1203 || b.CacheWrite1hTokens != 1103 ||
		b.InputUSD != wantIn || b.OutputUSD != groundhog.Money(b.OutputTokens*p.Output) || b.USD != b.InputUSD+b.OutputUSD {
		t.Fatalf("bill %s, want input_usd %s", raw, wantIn)
	}
	if m["input_usd"] != wantIn.String() {
		t.Fatalf("input_usd %v, want %q", m["input_usd"], wantIn.String())
	}
}
