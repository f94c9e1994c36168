package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// seedExcluded are the top-level request fields that do not change the
// generated content. The max-token limits are among them on purpose: a lower
// limit truncates the same text instead of producing another one, and choice
// 0 of n choices is the text of a single-choice request.
var seedExcluded = []string{
	"stream", "stream_options", "user", "metadata", "store", "prompt_cache_key",
	"prompt_cache_retention", "prompt_cache_options", "safety_identifier", "service_tier",
	"max_tokens", "max_completion_tokens", "max_output_tokens", "n",
}

// seed is the digest every generated output of one request derives from.
type seed [32]byte

// requestSeed digests the content of a request body: SHA-256 of the shape
// and the body's JSON with sorted keys, normalized numbers, no whitespace,
// without the seedExcluded fields and without any cache marker
// ("cache_control", "prompt_cache_breakpoint").
func requestSeed(shape groundhog.Shape, body []byte) (seed, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return seed{}, err
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range seedExcluded {
			delete(m, k)
		}
	}
	stripCacheControl(v)
	var buf bytes.Buffer
	buf.WriteString(string(shape))
	buf.WriteByte('\n')
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return seed{}, err
	}
	return sha256.Sum256(buf.Bytes()), nil
}

func stripCacheControl(v any) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "cache_control")
		delete(v, "prompt_cache_breakpoint")
		for _, e := range v {
			stripCacheControl(e)
		}
	case []any:
		for _, e := range v {
			stripCacheControl(e)
		}
	}
}

// derive returns a seed for one labelled use of s (a choice, an id…).
func (s seed) derive(label string, n uint64) seed {
	h := sha256.New()
	h.Write(s[:])
	h.Write([]byte(label))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	h.Write(b[:])
	var out seed
	h.Sum(out[:0])
	return out
}

func (s seed) rng() *rand.Rand { return rand.New(rand.NewChaCha8(s)) }

// id returns a provider-style id: prefix and 24 hex digits of s.
func (s seed) id(prefix string) string { return prefix + hex.EncodeToString(s[:12]) }

// words is the output vocabulary: every word is at most 3 bytes, so a word
// with a trailing period is still one token and an output of n words is
// exactly n tokens.
var words = strings.Fields(`the of and a to in is it you was for on are as his be at one had by but
not all we can her use an get has him see now way may day new two how its our out who oil sit
set run eat far sea eye red top sun big air end yes old cat dog fox owl bee sky map key log box
cup pen ink arc hub net bit law art war era age act aim arm bag bed cow cry cut dry ear egg fan
fat fee fig fit fly fog fun gap gas gem god gum gun guy hat hen hip hit hot ice ill jam jar jet
job joy kid kit lab lap leg lid lip low mad man mat mix mud mug nap nod nut oak oar odd ore owe
pad pan paw pay pea pet pie pin pit pot pub put ram ran rat raw ray rib rid rim rod row rug
sad saw say sip six ski sky son spy tab tag tan tap tar tax tea ten tie tin tip toe ton toy try
tub two van vet via wax web wet win wit yak yam yet zip zoo`)

// genWords returns n words of deterministic prose from rng: sentences of 5
// to 12 words, capitalized, ending in a period. Each element is one token.
func genWords(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	left := 0
	for i := range out {
		w := words[rng.IntN(len(words))]
		if left == 0 {
			left = 5 + rng.IntN(8)
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		left--
		if left == 0 || i == n-1 {
			w += "."
		}
		out[i] = w
	}
	return out
}

// outputLength returns the deterministic natural length of an output,
// 16 to 64 tokens.
func outputLength(rng *rand.Rand) int { return 16 + rng.IntN(49) }

// completion is one generated answer: either text or a tool call.
type completion struct {
	words     []string // text output, one token each
	truncated bool     // the max-token limit cut the text
	tool      *toolCall
	tokens    int // output tokens
}

type toolCall struct {
	name string
	args string // compact JSON object
}

// text returns the completion's text output.
func (c *completion) text() string { return strings.Join(c.words, " ") }

// deltas returns the text as streamed chunks of one token each.
func (c *completion) deltas() []string {
	out := make([]string, len(c.words))
	for i, w := range c.words {
		if i > 0 {
			w = " " + w
		}
		out[i] = w
	}
	return out
}

// argChunks splits the tool call's arguments into streamed pieces.
func (c *completion) argChunks() []string {
	var out []string
	a := c.tool.args
	for len(a) > 8 {
		out = append(out, a[:8])
		a = a[8:]
	}
	return append(out, a)
}

// toolSpec is a function tool a request offers.
type toolSpec struct {
	name   string
	schema json.RawMessage
}

// generate produces the answer for choice index of a request with seed s.
// limit is the max-token limit (0 = none). call, when non-nil, is the tool
// the model must call; a tool call is never truncated.
func generate(s seed, index int, limit int, call *toolSpec) *completion {
	rng := s.derive("choice", uint64(index)).rng()
	if call != nil {
		args, _ := json.Marshal(genValue(rng, decodeSchema(call.schema), 0))
		if string(args) == "null" {
			args = []byte("{}")
		}
		tc := &toolCall{name: call.name, args: string(args)}
		return &completion{tool: tc, tokens: CountTokens(tc.name) + CountTokens(tc.args)}
	}
	n := outputLength(rng)
	c := &completion{}
	if limit > 0 && limit < n {
		c.truncated = true
		c.words = genWords(rng, n)[:limit]
	} else {
		c.words = genWords(rng, n)
	}
	c.tokens = len(c.words)
	return c
}

func decodeSchema(raw json.RawMessage) map[string]any {
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

// genValue returns a deterministic value satisfying the common parts of a
// JSON schema: const, enum, type (object, array, string, integer, number,
// boolean, null), properties, items, anyOf/oneOf (first branch), minimum.
func genValue(rng *rand.Rand, schema map[string]any, depth int) any {
	if schema == nil || depth > 6 {
		return genString(rng)
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[rng.IntN(len(e))]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := schema[k].([]any); ok && len(alts) > 0 {
			if m, ok := alts[0].(map[string]any); ok {
				return genValue(rng, m, depth+1)
			}
		}
	}
	typ, _ := schema["type"].(string)
	if types, ok := schema["type"].([]any); ok {
		for _, t := range types {
			if s, _ := t.(string); s != "null" {
				typ = s
				break
			}
		}
	}
	if typ == "" {
		if _, ok := schema["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			sub, _ := props[k].(map[string]any)
			out[k] = genValue(rng, sub, depth+1)
		}
		return out
	case "array":
		items, _ := schema["items"].(map[string]any)
		n := 1
		if m, ok := schema["minItems"].(float64); ok && int(m) > n {
			n = min(int(m), 8)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(rng, items, depth+1)
		}
		return out
	case "integer":
		lo := 0
		if m, ok := schema["minimum"].(float64); ok {
			lo = int(m)
		}
		return lo + rng.IntN(100)
	case "number":
		lo := 0.0
		if m, ok := schema["minimum"].(float64); ok {
			lo = m
		}
		return lo + float64(rng.IntN(1000))/10
	case "boolean":
		return rng.IntN(2) == 1
	case "null":
		return nil
	default:
		return genString(rng)
	}
}

func genString(rng *rand.Rand) string {
	return strings.Join([]string{words[rng.IntN(len(words))], words[rng.IntN(len(words))]}, " ")
}
