package wire

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// decodeUsageFields gives json.Unmarshal's usageFields for every usage
// object it takes, and takes the ones providers send: random objects built
// from every field name (in other cases, escaped, with non-ASCII look-alikes,
// repeated), every kind of value in every place (null, numbers in every
// form, strings, arrays, nested objects, details objects that repeat, merge
// and are nulled), whitespace everywhere.
func TestDecodeUsageFieldsMatchesUnmarshal(t *testing.T) {
	names := []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "input_tokens", "output_tokens",
		"input_tokens_details", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation",
		"inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "total_tokens", "other"}
	inner := []string{"cached_tokens", "cache_write_tokens", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "audio_tokens"}
	ws := []string{"", "", " ", "\n\t", "  "}
	rng := rand.New(rand.NewSource(12))
	key := func(k string) string {
		switch rng.Intn(12) {
		case 0:
			return strings.ToUpper(k)
		case 1:
			return strings.ToUpper(k[:1]) + k[1:]
		case 2: // an escape
			return `\u00` + fmt.Sprintf("%02x", k[0]) + k[1:]
		case 3: // non-ASCII: the Kelvin sign folds to k, long s to s
			return strings.Replace(strings.Replace(k, "k", "\u212a", 1), "s", "\u017f", 1)
		case 4:
			return k + "x"
		}
		return k
	}
	var scalar func(depth int) string
	scalar = func(depth int) string {
		switch rng.Intn(14) {
		case 0:
			return "null"
		case 1:
			return `"12"`
		case 2:
			return "1.5"
		case 3:
			return "1e3"
		case 4:
			return "-3"
		case 5:
			return "true"
		case 6:
			return "[1,2]"
		case 7:
			if depth < 2 {
				return `{"cached_tokens":` + scalar(depth+1) + `}`
			}
			return "{}"
		case 8:
			return "12345678901234567890"
		}
		return fmt.Sprint(rng.Intn(100000))
	}
	object := func(keys []string, value func(k string) string) string {
		var sb strings.Builder
		sb.WriteString("{" + ws[rng.Intn(len(ws))])
		n := rng.Intn(7)
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString("," + ws[rng.Intn(len(ws))])
			}
			k := keys[rng.Intn(len(keys))]
			sb.WriteString(`"` + key(k) + `"` + ws[rng.Intn(len(ws))] + ":" + ws[rng.Intn(len(ws))] + value(k) + ws[rng.Intn(len(ws))])
		}
		sb.WriteString("}")
		return sb.String()
	}
	var value func(k string) string
	value = func(k string) string {
		if strings.Contains(k, "details") || k == "cache_creation" {
			switch rng.Intn(6) {
			case 0:
				return "null"
			case 1:
				return scalar(0)
			}
			return object(inner, func(string) string { return scalar(0) })
		}
		return scalar(0)
	}
	fast, total := 0, 0
	check := func(raw string) {
		t.Helper()
		total++
		var f1, f2 usageFields
		ok := decodeUsageFields([]byte(raw), &f1)
		err := json.Unmarshal([]byte(raw), &f2)
		if !ok {
			if !reflect.DeepEqual(f1, usageFields{}) {
				t.Fatalf("%s: declined but wrote %+v", raw, f1)
			}
			return
		}
		fast++
		if err != nil {
			t.Fatalf("%s: taken, but json.Unmarshal fails: %v", raw, err)
		}
		if !reflect.DeepEqual(f1, f2) {
			t.Fatalf("%s:\nfast      %s\nUnmarshal %s", raw, dump(f1), dump(f2))
		}
	}
	for i := 0; i < 30000; i++ {
		check(object(names, value))
	}
	// What providers send (and the sim): all taken.
	for _, raw := range []string{
		`{"prompt_tokens":1000,"completion_tokens":2,"total_tokens":1002,"prompt_tokens_details":{"cached_tokens":0}}`,
		`{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
		`{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}`,
		`{"input_tokens":2095,"output_tokens":503,"cache_creation_input_tokens":2051,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":2051,"ephemeral_1h_input_tokens":0}}`,
		`{"inputTokens":10,"outputTokens":5,"cacheReadInputTokens":3,"cacheWriteInputTokens":0}`,
		`{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{"cache_write_tokens":2}}`, // merged
		`{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":null}`,
		`{"cache_read_input_tokens":null}`,
	} {
		before := fast
		check(raw)
		if fast == before {
			t.Errorf("%s: not taken by the fast decoder", raw)
		}
	}
	t.Logf("%d of %d objects decoded without json.Unmarshal", fast, total)
	if fast < total/3 {
		t.Fatalf("only %d of %d objects took the fast decoder", fast, total)
	}
}

func dump(f usageFields) string {
	s := fmt.Sprintf("%+v", f)
	if f.PromptTokensDetails != nil {
		s += fmt.Sprintf(" ptd=%+v", *f.PromptTokensDetails)
	}
	if f.InputTokensDetails != nil {
		s += fmt.Sprintf(" itd=%+v", *f.InputTokensDetails)
	}
	if f.CacheCreation != nil {
		s += fmt.Sprintf(" cc=%+v", *f.CacheCreation)
	}
	return s
}
