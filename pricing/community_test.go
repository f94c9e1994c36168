package pricing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

const communityFile = "testdata/model_prices_and_context_window.json"

// TestCommunityFileLoadsAndWins: the community JSON format loads through
// Load (the path prices_file takes), and its prices replace the built-in
// ones when merged over them, dated names included.
func TestCommunityFileLoadsAndWins(t *testing.T) {
	ft, err := Load(communityFile)
	if err != nil {
		t.Fatal(err)
	}
	// gpt-4o at $2 in / $1 cached / $8 out per million (the built-in says 2.50/1.25/10).
	want := groundhog.Price{Input: 2_000_000, CachedInput: 1_000_000, CacheWrite: 2_000_000, CacheWrite1h: 2_000_000, Output: 8_000_000}
	if got := ft["gpt-4o"]; got != want {
		t.Fatalf("gpt-4o = %+v, want %+v", got, want)
	}
	tab := Default().Merge(ft)
	if got, _ := tab.Lookup("gpt-4o"); got != want {
		t.Fatalf("merged gpt-4o = %+v, want the file's %+v", got, want)
	}
	if got, _ := tab.Lookup("gpt-4o-2024-08-06"); got != want {
		t.Fatalf("dated gpt-4o = %+v, want the file's family price", got)
	}
	u := groundhog.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}
	if c := tab.Cost("gpt-4o", u); c.String() != "10.000000" {
		t.Fatalf("cost = %s, want 10.000000 ($2 + $8)", c)
	}
	// An exact dated entry in the file wins over the built-in family.
	son := tab["claude-sonnet-4-5-20250929"]
	if son != (groundhog.Price{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, CacheWrite1h: 6_000_000, Output: 15_000_000}) {
		t.Fatalf("claude-sonnet-4-5-20250929 = %+v", son)
	}
	if e, how, _, _ := tab.Resolve("claude-sonnet-4-5-20250929"); e != "claude-sonnet-4-5-20250929" || how != MatchExact {
		t.Fatalf("Resolve = %q %q", e, how)
	}
	// Defaults for missing cache keys: read and writes at the input rate.
	if p := ft["gpt-4o-mini-2024-07-18"]; p.CachedInput != 75_000 || p.CacheWrite != 150_000 || p.CacheWrite1h != 150_000 {
		t.Fatalf("gpt-4o-mini-2024-07-18 = %+v", p)
	}
	// A missing 1h key takes the short write's rate.
	if p := ft["claude-team-haiku"]; p.CacheWrite != 1_250_000 || p.CacheWrite1h != 1_250_000 {
		t.Fatalf("claude-team-haiku = %+v", p)
	}
	// Skipped: the documentation entry, a per-pixel image model.
	for _, m := range []string{"sample_spec", "dall-e-3"} {
		if _, ok := ft[m]; ok {
			t.Errorf("%s loaded as a model", m)
		}
	}
	// Provider prefixes: registered bare when unambiguous, never over a
	// conflict.
	if p, ok := ft["gpt-team-model"]; !ok || p.Input != 1_100_000 || p != ft["openai/gpt-team-model"] {
		t.Errorf("bare gpt-team-model = %+v %v", p, ok)
	}
	if _, ok := ft["claude-team-haiku"]; !ok {
		t.Error("anthropic/claude-team-haiku not registered bare")
	}
	if _, ok := ft["claude-conflict"]; ok {
		t.Error("ambiguous bare name registered")
	}
	// Rounding half up at 1e-12 $/token.
	if p := ft["fine-rate-model"]; p.Input != 1_000_001 || p.Output != 1_000_000 {
		t.Errorf("fine-rate-model = %+v, want input rounded up to 1000001, output down to 1000000", p)
	}
}

func TestPerTokenRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"3e-06", 3_000_000},
		{"3E-6", 3_000_000},
		{"0.000003", 3_000_000},
		{"1.5e-05", 15_000_000},
		{"7.5e-08", 75_000},
		{"0", 0},
		{"0.0", 0},
		{"1e-12", 1},
		{"5e-13", 1},    // half: up
		{"4.99e-13", 0}, // below half: down
		{"2.5e-7", 250_000},
		// 0.1 + 0.2 style: the decimal text is exact, no float artefacts.
		{"3.0000000000000004e-07", 300_000},
	} {
		got, err := PerTokenRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("PerTokenRate(%q) = %d %v, want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"-1e-6", "abc", "1/3", "0x10", "Inf", "1e999999999", "", "2", ".5", "1."} {
		if _, err := PerTokenRate(bad); err == nil {
			t.Errorf("PerTokenRate(%q) accepted", bad)
		}
	}
}

func TestCommunityDetection(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// YAML written as JSON is still the YAML format.
	yamlJSON := write("y.json", `{"m": {"input": "1", "output": "2"}}`)
	if tab, err := Load(yamlJSON); err != nil || tab["m"].Input != 1_000_000 {
		t.Fatalf("YAML-as-JSON = %+v %v", tab, err)
	}
	yml := write("p.yaml", "m:\n  input: 0.5\n  output: 2\n")
	if tab, err := Load(yml); err != nil || tab["m"].Input != 500_000 {
		t.Fatalf("YAML = %+v %v", tab, err)
	}
	// A cost that is a string is an error naming the model, not a zero.
	bad := write("bad.json", `{"m": {"input_cost_per_token": "0.000001", "output_cost_per_token": 1e-6}}`)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), `"m"`) {
		t.Fatalf("string cost: err = %v", err)
	}
	neg := write("neg.json", `{"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}`)
	if _, err := Load(neg); err == nil {
		t.Fatal("negative cost accepted")
	}
	if !IsCommunityJSON([]byte(` {"a": {"input_cost_per_token": 0}} `)) || IsCommunityJSON([]byte(`{"a": {"input": 1}}`)) || IsCommunityJSON([]byte(`a: 1`)) {
		t.Fatal("IsCommunityJSON")
	}
}
