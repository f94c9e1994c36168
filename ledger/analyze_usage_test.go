package ledger

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// usageCases are usage objects of every form parseUsage reads, and of
// many it must refuse or read the general way (spaces, escapes, nulls,
// floats, exponents, duplicates, wrong nesting).
var usageCases = []string{
	`{}`, `{ }`, `{"prompt_tokens":60,"completion_tokens":0,"total_tokens":60,"prompt_tokens_details":{"cached_tokens":0}}`,
	`{"input_tokens":32,"output_tokens":219,"cache_read_input_tokens":31,"cache_creation_input_tokens":0}`,
	`{"input_tokens":10,"output_tokens":5,"input_tokens_details":{"cached_tokens":3,"cache_write_tokens":2}}`,
	`{"input_tokens":10,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6}}`,
	`{"input_tokens":10,"cache_creation_input_tokens":3,"cache_creation":{"ephemeral_1h_input_tokens":6}}`,
	`{"inputTokens":7,"outputTokens":8,"cacheReadInputTokens":2,"cacheWriteInputTokens":1}`,
	`{"input_tokens":9,"cached_input_tokens":3,"cache_write_tokens":2,"cache_write_1h_tokens":1}`,
	`{"input_tokens":9,"cache_write_tokens":1,"cache_write_1h_tokens":2}`,
	`{"prompt_tokens":1,"prompt_tokens":2}`, `{"prompt_tokens":1,"prompt_tokens":null}`,
	`{"prompt_tokens_details":{"cached_tokens":1},"input_tokens_details":{"cached_tokens":2,"cached_tokens":3}}`,
	`{"prompt_tokens": 5}`, `{"prompt_tokens" :5}`, `{ "prompt_tokens":5}`, `{"prompt_tokens":5 }`,
	`{"prompt_tokens":5.0}`, `{"prompt_tokens":5e1}`, `{"prompt_tokens":-5}`, `{"prompt_tokens":"5"}`,
	`{"prompt_tokens":0005}`, `{"prompt_tokens":123456789012345678}`, `{"prompt_tokens":1234567890123456789}`,
	`{"prompt_tokens":12345678901234567890}`, `{"prompt_tokens":5x}`, `{"prompt_tokens":}`,
	`{"prompt_tokens":5,}`, `{"prompt_tokens":5`, `{"prompt_tokens"5}`, `{"prompt\u005ftokens":5}`,
	`{"prompt_tokens\"":5}`, `{"x":{"prompt_tokens":5}}`, `{"prompt_tokens":{"a":1}}`,
	`{"prompt_tokens_details":5}`, `{"cache_creation":5}`, `{"cache_creation":null}`,
	`{"prompt_tokens_details":null}`, `{"prompt_tokens_details":{"cached_tokens":{"a":1}}}`,
	`{"prompt_tokens_details":{"cached_tokens":null}}`, `{"prompt_tokens_details":{}}`,
	`{"cache_creation":{"ephemeral_1h_input_tokens":5,"x":[1]}}`, `{"x":[1,2],"prompt_tokens":3}`,
	`{"x":"y","prompt_tokens":3}`, `{"x":true}`, `{"prompt_tokens":3}x`, `[1]`, `null`, `5`, `{"":1}`,
	`{"prompt_tokens_details":{"cached_tokens":1}x,"prompt_tokens":2}`,
	`{"cache_creation":{"ephemeral_5m_input_tokens":1},"cache_creation":{"ephemeral_1h_input_tokens":1}}`,
}

// parseUsage gives what it gave before its fast path (parseUsageRef), for
// every case and for random objects built from the same parts.
func TestFastUsageAsRef(t *testing.T) {
	check := func(v string) {
		t.Helper()
		got, gerr := parseUsage([]byte(v))
		want, werr := parseUsageRef([]byte(v))
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%s: got %+v, %v; want %+v, %v", v, got, gerr, want, werr)
		}
	}
	for _, v := range usageCases {
		check(v)
	}
	keys := []string{"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "cached_input_tokens",
		"cache_write_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_write_1h_tokens",
		"inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "total_tokens",
		"cached_tokens", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "x"}
	nested := []string{"prompt_tokens_details", "input_tokens_details", "cache_creation", "x"}
	vals := []string{"0", "1", "7", "42", "1000", "0012", "null", "1.5", "-1", "2e2", `"3"`, "123456789012345678", "1234567890123456789"}
	rng := rand.New(rand.NewPCG(3, 4))
	var obj func(depth int) string
	obj = func(depth int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range rng.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			if rng.IntN(20) == 0 {
				b.WriteByte(' ')
			}
			if depth == 0 && rng.IntN(4) == 0 {
				fmt.Fprintf(&b, "%q:", nested[rng.IntN(len(nested))])
				if rng.IntN(10) == 0 {
					b.WriteString(vals[rng.IntN(len(vals))])
				} else {
					b.WriteString(obj(depth + 1))
				}
				continue
			}
			fmt.Fprintf(&b, "%q:%s", keys[rng.IntN(len(keys))], vals[rng.IntN(len(vals))])
		}
		b.WriteByte('}')
		return b.String()
	}
	for range 200_000 {
		check(obj(0))
	}
}

func FuzzFastUsage(f *testing.F) {
	for _, v := range usageCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, gerr := parseUsage([]byte(v))
		want, werr := parseUsageRef([]byte(v))
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: got %+v, %v; want %+v, %v", v, got, gerr, want, werr)
		}
	})
}

// The fast path reads the usual objects itself (a broken fast path that
// always declined would pass TestFastUsageAsRef).
func TestFastUsageTakesUsual(t *testing.T) {
	for _, v := range usageCases[2:9] {
		var f usageFields
		if !f.fast([]byte(v)) {
			t.Errorf("%s: fast path declined", v)
		}
	}
}
