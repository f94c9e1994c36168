package wire

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// TestUsageFromValidBodyMatches: for valid JSON bodies of every shape —
// real answers, keys in other cases, duplicates, whitespace, a "usage"
// nested elsewhere, null or missing or malformed usage, escapes, non-ASCII
// keys, non-objects — UsageFromValidBody gives exactly UsageFromBody's
// model, usage and error.
func TestUsageFromValidBodyMatches(t *testing.T) {
	usages := []string{
		`{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8,"cache_write_tokens":2}}`,
		`{"input_tokens":10,"output_tokens":4,"input_tokens_details":{"cached_tokens":6}}`,
		`{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"cache_creation":{"ephemeral_1h_input_tokens":20},"output_tokens":7}`,
		`{"inputTokens":5,"outputTokens":2,"cacheReadInputTokens":1,"cacheWriteInputTokens":1}`,
		`{"prompt_tokens":-1}`, `{"prompt_tokens":1.5}`, `{"prompt_tokens":"7"}`, `null`, `[]`, `"x"`, `{}`, `{ "prompt_tokens" : 3 , "input_tokens":4 }`,
		`{"input_tokens":1,"cache_creation_input_tokens":1,"cache_creation":{"ephemeral_1h_input_tokens":5}}`,
	}
	models := []string{`"gpt-4o-mini"`, `"cl\u00e9ude"`, `"a\"b"`, `null`, `7`, `{"x":1}`, `""`}
	keys := map[string][]string{"model": {"model", "Model", "MODEL", "mOdEl", "mod\\u0065l", "modeł"}, "usage": {"usage", "Usage", "USAGE", "u\\u0073age", "uſage", "usage "}}
	others := []string{`"id":"chatcmpl-1"`, `"choices":[{"index":0,"message":{"role":"assistant","content":"hi \"usage\": {}"},"usage":{"prompt_tokens":99}}]`,
		`"object":"chat.completion"`, `"created":1700000000`, `"data":[{"embedding":[0.1,-2e-3,3]}]`, `"content":[{"type":"text","text":"}]{["}]`, `"ok":true`, `"n":null`}
	rng := rand.New(rand.NewSource(3))
	ws := []string{"", " ", "\n  ", "\t"}
	var bodies []string
	for range 3000 {
		var members []string
		for k := rng.Intn(6); k > 0; k-- {
			switch rng.Intn(3) {
			case 0:
				ks := keys["model"]
				members = append(members, `"`+ks[rng.Intn(len(ks))]+`"`+ws[rng.Intn(4)]+":"+ws[rng.Intn(4)]+models[rng.Intn(len(models))])
			case 1:
				ks := keys["usage"]
				members = append(members, `"`+ks[rng.Intn(len(ks))]+`":`+ws[rng.Intn(4)]+usages[rng.Intn(len(usages))])
			default:
				members = append(members, others[rng.Intn(len(others))])
			}
		}
		sep := ","
		if rng.Intn(2) == 0 {
			sep = ws[rng.Intn(4)] + "," + ws[rng.Intn(4)]
		}
		bodies = append(bodies, ws[rng.Intn(4)]+"{"+ws[rng.Intn(4)]+strings.Join(members, sep)+ws[rng.Intn(4)]+"}"+ws[rng.Intn(4)])
	}
	bodies = append(bodies, `[]`, `"x"`, `1`, `null`, `{}`, ` { } `)
	n := 0
	for _, body := range bodies {
		if !json.Valid([]byte(body)) {
			continue
		}
		n++
		for _, shape := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages, groundhog.ShapeEmbeddings, "nope"} {
			m1, u1, e1 := UsageFromBody(shape, []byte(body))
			m2, u2, e2 := UsageFromValidBody(shape, []byte(body))
			if m1 != m2 || u1 != u2 || fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Fatalf("%s %s:\nUsageFromBody      %q %+v %v\nUsageFromValidBody %q %+v %v", shape, body, m1, u1, e1, m2, u2, e2)
			}
		}
	}
	if n < 2000 {
		t.Fatalf("only %d valid bodies", n)
	}
}
