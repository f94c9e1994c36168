package pricing

import (
	"strings"
)

// MatchBedrock: the name is an Amazon Bedrock model id (a foundation
// model, a cross-region inference profile or an ARN of either) whose
// foundation model family is an entry; see BedrockFamily.
const MatchBedrock Match = "bedrock model"

// bedrockDefaults are Amazon Bedrock's on-demand prices (USD per million
// tokens, us-east-1, taken on PricesTaken from aws.amazon.com/bedrock/pricing
// and the providers' Bedrock model pages), by foundation model family as
// BedrockFamily names it. Bedrock's prices are not always the first-party
// ones, so Bedrock ids never fall back to the first-party rows.
//
// Anthropic's Claude 4.5 models and later are priced by endpoint: the
// "global." cross-region profile at the first-party rates, and in-region
// ids and geographic profiles ("us.", "eu.", "apac.", …) 10% higher. The
// older Claude models cost the same everywhere. Prompt-cache reads are 0.1×
// input, 5-minute writes 1.25× and 1-hour writes 2×. Amazon Nova reads the
// cache at 0.25× input and writes it at the input rate; Meta Llama and
// OpenAI's open-weight models on Bedrock have no prompt cache (both cache
// rates are the input rate, never a discount that does not exist).
var bedrockDefaults = map[string][5]string{
	//                                         input    cached    write    write1h  output
	"anthropic.claude-opus-4-5":          {"5.50", "0.55", "6.875", "11.00", "27.50"},
	"global.anthropic.claude-opus-4-5":   {"5.00", "0.50", "6.25", "10.00", "25.00"},
	"anthropic.claude-sonnet-4-5":        {"3.30", "0.33", "4.125", "6.60", "16.50"},
	"global.anthropic.claude-sonnet-4-5": {"3.00", "0.30", "3.75", "6.00", "15.00"},
	"anthropic.claude-haiku-4-5":         {"1.10", "0.11", "1.375", "2.20", "5.50"},
	"global.anthropic.claude-haiku-4-5":  {"1.00", "0.10", "1.25", "2.00", "5.00"},
	"anthropic.claude-opus-4-1":          {"15.00", "1.50", "18.75", "30.00", "75.00"},
	"anthropic.claude-opus-4":            {"15.00", "1.50", "18.75", "30.00", "75.00"},
	"anthropic.claude-sonnet-4":          {"3.00", "0.30", "3.75", "6.00", "15.00"},
	"anthropic.claude-3-7-sonnet":        {"3.00", "0.30", "3.75", "6.00", "15.00"},
	"anthropic.claude-3-5-haiku":         {"0.80", "0.08", "1.00", "1.60", "4.00"},
	"anthropic.claude-3-haiku":           {"0.25", "0.03", "0.30", "0.50", "1.25"},
	"amazon.nova-premier":                {"2.50", "0.625", "2.50", "2.50", "12.50"},
	"amazon.nova-pro":                    {"0.80", "0.20", "0.80", "0.80", "3.20"},
	"amazon.nova-lite":                   {"0.06", "0.015", "0.06", "0.06", "0.24"},
	"amazon.nova-micro":                  {"0.035", "0.00875", "0.035", "0.035", "0.14"},
	"meta.llama3-3-70b-instruct":         {"0.72", "0.72", "0.72", "0.72", "0.72"},
	"meta.llama3-1-70b-instruct":         {"0.72", "0.72", "0.72", "0.72", "0.72"},
	"meta.llama3-1-8b-instruct":          {"0.22", "0.22", "0.22", "0.22", "0.22"},
	"meta.llama4-maverick-17b-instruct":  {"0.24", "0.24", "0.24", "0.24", "0.97"},
	"meta.llama4-scout-17b-instruct":     {"0.17", "0.17", "0.17", "0.17", "0.66"},
	"openai.gpt-oss-120b":                {"0.15", "0.15", "0.15", "0.15", "0.60"},
	"openai.gpt-oss-20b":                 {"0.07", "0.07", "0.07", "0.07", "0.30"},
}

// addBedrock adds the Bedrock rows to t.
func addBedrock(t Table) {
	for model, p := range bedrockDefaults {
		pr, err := parsePrice(p[0], p[1], p[2], p[4])
		if err == nil {
			pr.CacheWrite1h, err = perMillion(p[3])
		}
		if err != nil {
			panic(err)
		}
		t[model] = pr
	}
}

// bedrockGeoPrefixes are the region prefixes of cross-region inference
// profiles.
var bedrockGeoPrefixes = []string{"us.", "eu.", "apac.", "us-gov.", "jp.", "au.", "ca.", "global."}

// BedrockFamily returns the foundation model family of an Amazon Bedrock
// model id, and whether the id names the global cross-region profile:
// an ARN's resource id is taken, the profile prefix removed, then the
// version suffix (":0", "-v1", the "-1" of "openai.gpt-oss-120b-1:0") and
// the snapshot date. "us.anthropic.claude-sonnet-4-5-20250929-v1:0" →
// "anthropic.claude-sonnet-4-5". ok is false for a name that is not a
// Bedrock id (no "provider." part).
func BedrockFamily(model string) (family string, global, ok bool) {
	id := model
	if strings.HasPrefix(id, "arn:") {
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return "", false, false
		}
		id = id[i+1:]
	}
	for _, p := range bedrockGeoPrefixes {
		if rest, cut := strings.CutPrefix(id, p); cut {
			id, global = rest, p == "global."
			break
		}
	}
	dot := strings.IndexByte(id, '.')
	if dot <= 0 || dot == len(id)-1 {
		return "", false, false
	}
	versioned := false
	if i := strings.LastIndexByte(id, ':'); i > dot && digits(id[i+1:]) {
		id, versioned = id[:i], true
	}
	if i := strings.LastIndexByte(id, '-'); i > dot {
		switch v := id[i+1:]; {
		case len(v) > 1 && v[0] == 'v' && digits(v[1:]):
			id = id[:i]
		case versioned && digits(v) && len(v) < 4:
			id = id[:i]
		}
	}
	return Family(id), global, true
}

// lookupBedrock prices a Bedrock model id by its family: the global
// profile's row for a "global." id when there is one, else the family's.
func (t Table) lookupBedrock(model string) (string, bool) {
	fam, global, ok := BedrockFamily(model)
	if !ok {
		return "", false
	}
	if global {
		if _, ok := t["global."+fam]; ok {
			return "global." + fam, true
		}
	}
	if _, ok := t[fam]; ok {
		return fam, true
	}
	return "", false
}
