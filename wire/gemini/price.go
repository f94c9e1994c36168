package gemini

import (
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// LongContextTokens is the prompt length above which the Gemini models
// priced by prompt length (the Pro models) charge their long-context rates.
const LongContextTokens = 200_000

// LongContextSuffix names the price-table entry of a model's long-context
// rates: "gemini-2.5-pro" is priced up to LongContextTokens prompt tokens,
// "gemini-2.5-pro>200k" above.
const LongContextSuffix = ">200k"

// PriceModel returns the price-table entry that prices a call of model
// whose usage is u: the model without "models/" and without a stable
// version suffix ("-001", "-002", "-latest"), and for a Pro model
// (Tiered) whose prompt (input plus tool-use prompt) is over
// LongContextTokens, that entry with LongContextSuffix. A table without
// the long-context entry prices such a call as unknown, never at the
// short-context rates.
func PriceModel(model string, u groundhog.Usage) string {
	m := BaseModel(model)
	if u.InputTokens > LongContextTokens && Tiered(m) {
		m += LongContextSuffix
	}
	return m
}

// Tiered reports whether model is priced by prompt length: the Pro models
// (gemini-2.5-pro, gemini-3-pro-preview, …) are; Flash and Flash-Lite have
// one rate whatever the prompt's length.
func Tiered(model string) bool {
	for _, f := range strings.Split(BaseModel(model), "-") {
		if f == "pro" {
			return true
		}
	}
	return false
}

// BaseModel strips "models/" and a version suffix ("-001", "-latest").
func BaseModel(model string) string {
	m := TrimModel(model)
	if rest, ok := strings.CutSuffix(m, "-latest"); ok {
		return rest
	}
	if i := strings.LastIndexByte(m, '-'); i > 0 && len(m)-i == 4 && digits(m[i+1:]) {
		return m[:i]
	}
	return m
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// UsageParts is the usage of a call of model as the price table reads it:
// one part priced at PriceModel's entry.
func UsageParts(model string, u groundhog.Usage) []groundhog.UsagePart {
	return []groundhog.UsagePart{{Kind: "gemini", Model: PriceModel(model, u), Usage: u}}
}
