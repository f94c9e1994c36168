package ledger

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestTableMoneyOneFormatPerColumn: every money cell of the table has the
// same format — six decimals — whether the figure is a fraction of a cent
// or millions of dollars, so no column mixes 0.00 with 0.000123.
func TestTableMoneyOneFormatPerColumn(t *testing.T) {
	in := strings.Join([]string{
		logLine("2025-03-14T10:00:00Z", "tiny", "a", `,"cost_usd":0.000123`),
		logLine("2025-03-14T10:00:01Z", "tiny", "a", `,"cost_usd":0.000123`),
		logLine("2025-03-14T10:00:02Z", "huge", "b", `,"cost_usd":8000000.5`),
		logLine("2025-03-14T10:00:03Z", "zero", "c", `,"cost_usd":0`),
	}, "\n")
	reps, _ := analyze(t, in, AnalyzeOptions{})
	var buf bytes.Buffer
	if err := reps[0].WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	header := strings.Fields(lines[2])
	money := map[string]bool{"repeat_cost": true, "spend": true, "saved": true, "shadow_saved": true, "projected_30d": true}
	six := regexp.MustCompile(`^-?[0-9]+\.[0-9]{6}$`)
	rows := 0
	for _, l := range lines[3:] {
		f := strings.Fields(l)
		if len(f) != len(header) {
			break
		}
		rows++
		for i, h := range header {
			if money[h] && !six.MatchString(f[i]) {
				t.Errorf("row %s column %s = %q, want six decimals", f[0], h, f[i])
			}
		}
	}
	if rows != 4 {
		t.Fatalf("read %d rows, want 3 operations and the total:\n%s", rows, buf.String())
	}
	for _, want := range []string{"0.000246", "8000000.500000", "0.000123"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %s:\n%s", want, buf.String())
		}
	}
}
