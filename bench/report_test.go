package bench

import (
	"strings"
	"testing"
)

// The analyze figure is printed against both baselines of the same run:
// bare line reading (the goal, marked unreachable by design) and
// Analyze's own floor.
func TestReportAnalyzeBaselines(t *testing.T) {
	r := &Report{Results: map[string]Result{}, Analyze: &AnalyzeResult{
		Lines: 200000, Bytes: 85_500_000, AnalyzeLPS: 150000, ReadLinesLPS: 5_000_000, FloorLPS: 300000,
	}}
	var b strings.Builder
	r.WriteMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| analyze lines/s ÷ plain line reading, 200000 lines / 85.5 MB (in process) | 0.03× | 150000 ÷ 5000000 lines/s | — (a figure, not a goal",
		"| analyze lines/s ÷ its floor: line reading + one fingerprint per line on the same workers (ledger.FingerprintLines) | 0.50× | 150000 ÷ 300000 lines/s |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks\n%s\n---\n%s", want, out)
		}
	}
}
