package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runPrices runs "groundhog prices ARGS…" in process and returns its
// standard output.
func runPrices(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// Flag values outlive an Execute: start each run from the defaults.
	cmd, _, err := rootCmd.Find([]string{"prices"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Flags().Set("config", ""); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(append([]string{"prices"}, args...))
	err = rootCmd.Execute()
	rootCmd.SetArgs(nil)
	return out.String(), err
}

func TestPricesCommand(t *testing.T) {
	dir := t.TempDir()
	community, err := filepath.Abs("../../pricing/testdata/model_prices_and_context_window.json")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "groundhog.yaml")
	cfg := "prices_file: " + community + "\nprices:\n  my-model:\n    input: 0.5\n    output: 2\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := runPrices(t, "--config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"built-in prices taken 2026-12-01", "write 1h",
		"gpt-4o  ", "prices_file " + community, "config prices:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// gpt-4o's row: the community file's $2 / $1 / $8, not the built-in $2.50.
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "gpt-4o" {
			if strings.Join(f[1:6], " ") != "2.00 1.00 2.00 2.00 8.00" {
				t.Errorf("gpt-4o row = %q", line)
			}
		}
	}

	out, err = runPrices(t, "--config", cfgPath, "gpt-4o-2024-08-06")
	if err != nil || !strings.Contains(out, "entry:   gpt-4o (dated family)") || !strings.Contains(out, "source:  prices_file "+community) {
		t.Errorf("dated gpt-4o: %v\n%s", err, out)
	}
	out, err = runPrices(t, "--config", cfgPath, "my-model")
	if err != nil || !strings.Contains(out, "(exact)") || !strings.Contains(out, "source:  config prices:") || !strings.Contains(out, "0.50") {
		t.Errorf("my-model: %v\n%s", err, out)
	}
	out, err = runPrices(t, "claude-haiku-4-5-20251001")
	if err != nil || !strings.Contains(out, "entry:   claude-haiku-4-5 (dated family)") || !strings.Contains(out, "built-in, prices taken 2026-12-01") {
		t.Errorf("claude dated: %v\n%s", err, out)
	}
	out, err = runPrices(t, "no-such-model")
	if !errors.Is(err, errUnknownModel) || !strings.Contains(out, "no-such-model: unknown") {
		t.Errorf("unknown model: err %v\n%s", err, out)
	}
}
