package pricing

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// CostParts prices each iteration at its own model's rates, and is unknown
// when any of them is unpriced (never a partial figure).
func TestCostParts(t *testing.T) {
	table := Default()
	sonnet := groundhog.Usage{InputTokens: 1000, OutputTokens: 100}
	for _, tt := range []struct {
		name  string
		parts []groundhog.UsagePart
		want  string
	}{
		{"no parts: the call's usage", nil, "0.003000"}, // 1000×$2 + 100×$10 per million (claude-sonnet-5)
		{"same model", []groundhog.UsagePart{{Usage: sonnet}, {Usage: sonnet}}, "0.006000"},
		{"advisor on opus", []groundhog.UsagePart{{Usage: sonnet}, {Model: "claude-opus-4-8", Usage: sonnet}}, "0.010500"},
		{"unpriced part", []groundhog.UsagePart{{Usage: sonnet}, {Model: "no-such-model", Usage: sonnet}}, "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := table.CostParts("claude-sonnet-5", sonnet, tt.parts)
			if got.Known() != (tt.want != "unknown") {
				t.Fatalf("cost %v, want %s", got, tt.want)
			}
			if want, err := groundhog.ParseMoney(tt.want); err == nil && got != want {
				t.Fatalf("cost %v, want %s", got, tt.want)
			}
		})
	}
}
