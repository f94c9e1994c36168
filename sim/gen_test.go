package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"   \n\t ", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"  hello   world ", 4}, // hell|o worl|d
		{"a\tb\nc\u00a0d", 4},   // NBSP is whitespace too
		{"日本語", 3},              // 9 bytes
		{"{\"city\":\"Paris\"}", 4},
		{"\xff\xfe", 1}, // invalid UTF-8 still counts by bytes
	} {
		if got := CountTokens(c.text); got != c.want {
			t.Errorf("CountTokens(%q) = %d, want %d", c.text, got, c.want)
		}
		// The prompt tokenizer agrees with the counter.
		ts := newTokenStream(0)
		ts.text(c.text)
		if ts.n != c.want {
			t.Errorf("tokenStream(%q) = %d tokens, want %d", c.text, ts.n, c.want)
		}
	}
}

func TestTokenStreamPrefixes(t *testing.T) {
	// Same leading tokens, same points; one differing token changes every
	// later point and none before it.
	a, b := newTokenStream(2), newTokenStream(2)
	a.text("one two six four five ten")
	b.text("one two six FOUR five ten")
	if len(a.marks) != 3 || a.marks[0] != b.marks[0] || a.marks[1] == b.marks[1] || a.marks[2] == b.marks[2] {
		t.Fatalf("marks %v vs %v", a.marks, b.marks)
	}
	// Token boundaries matter: "ab c" and "a bc" differ.
	x, y := newTokenStream(0), newTokenStream(0)
	x.text("ab c")
	y.text("a bc")
	if x.point() == y.point() {
		t.Fatal("different tokenizations share a digest")
	}
}

func TestGenerate(t *testing.T) {
	var sd seed
	sd[0] = 7
	c := generate(sd, 0, 0, nil)
	if c.tokens < 16 || c.tokens > 64 || c.truncated || CountTokens(c.text()) != c.tokens || strings.Join(c.deltas(), "") != c.text() {
		t.Fatalf("completion %q: %d tokens (count %d)", c.text(), c.tokens, CountTokens(c.text()))
	}
	for _, d := range c.deltas() {
		if CountTokens(d) != 1 {
			t.Fatalf("delta %q is not one token", d)
		}
	}
	capped := generate(sd, 0, 5, nil)
	if !capped.truncated || capped.tokens != 5 || !strings.HasPrefix(c.text(), capped.text()) {
		t.Fatalf("capped %q of %q", capped.text(), c.text())
	}
	if generate(sd, 1, 0, nil).text() == c.text() {
		t.Fatal("choice 1 repeats choice 0")
	}
	schema := json.RawMessage(`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":2},
		"opt":{"type":["null","boolean"]},"n":{"type":"number"},"nested":{"properties":{"k":{"const":"v"}}},"any":{"anyOf":[{"type":"integer"}]}}}`)
	tc := generate(sd, 0, 0, &toolSpec{name: "f", schema: schema}).tool
	var v struct {
		Tags   []string       `json:"tags"`
		Opt    *bool          `json:"opt"`
		N      *float64       `json:"n"`
		Nested map[string]any `json:"nested"`
		Any    *int           `json:"any"`
	}
	if err := json.Unmarshal([]byte(tc.args), &v); err != nil || len(v.Tags) != 2 || v.Opt == nil || v.N == nil || v.Nested["k"] != "v" || v.Any == nil {
		t.Fatalf("args %s (%v)", tc.args, err)
	}
	if empty := generate(sd, 0, 0, &toolSpec{name: "f"}).tool.args; empty != "{}" && !strings.HasPrefix(empty, `"`) {
		t.Fatalf("schemaless args %s", empty)
	}
}

func TestDeterminism(t *testing.T) {
	_, base := startSim(t, Config{})
	type chatOut struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	call := func(body string) chatOut {
		t.Helper()
		status, _, b := post(t, base, "/v1/chat/completions", body)
		var out chatOut
		if err := json.Unmarshal(b, &out); status != 200 || err != nil {
			t.Fatalf("%d %s", status, b)
		}
		return out
	}
	const msgs = `"messages":[{"role":"user","content":"Write about rivers"}]`
	ref := call(`{"model":"sim-small",` + msgs + `}`)
	text := ref.Choices[0].Message.Content
	for _, c := range []struct {
		name, body string
		same       bool
	}{
		{"identical", `{"model":"sim-small",` + msgs + `}`, true},
		{"reordered and spaced", `{ ` + msgs + ` , "model" : "sim-small" }`, true},
		{"user and metadata", `{"model":"sim-small","user":"u1","metadata":{"a":"b"},"store":true,` + msgs + `}`, true},
		{"temperature", `{"model":"sim-small","temperature":0.2,` + msgs + `}`, false},
		{"seed", `{"model":"sim-small","seed":42,` + msgs + `}`, false},
		{"model", `{"model":"sim-large",` + msgs + `}`, false},
		{"message", `{"model":"sim-small","messages":[{"role":"user","content":"Write about lakes"}]}`, false},
	} {
		out := call(c.body)
		if got := out.Choices[0].Message.Content; (got == text) != c.same {
			t.Errorf("%s: text %q vs %q, want same=%v", c.name, got, text, c.same)
		}
		if out.ID == ref.ID {
			t.Errorf("%s: id %s repeats: ids are per call", c.name, out.ID)
		}
	}
	capped := call(`{"model":"sim-small","max_completion_tokens":4,` + msgs + `}`)
	if c := capped.Choices[0]; c.FinishReason != "length" || capped.Usage.CompletionTokens != 4 || !strings.HasPrefix(text, c.Message.Content) {
		t.Fatalf("capped %+v, want a 4-token prefix of %q", capped, text)
	}
	two := call(`{"model":"sim-small","n":2,` + msgs + `}`)
	if len(two.Choices) != 2 || two.Choices[0].Message.Content != text || two.Choices[1].Message.Content == text ||
		two.Usage.CompletionTokens != CountTokens(text)+CountTokens(two.Choices[1].Message.Content) {
		t.Fatalf("n=2: %+v", two)
	}
	// Anthropic: cache_control markers do not change the output.
	anth := func(body string) string {
		status, _, b := post(t, base, "/v1/messages", body)
		var out struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(b, &out); status != 200 || err != nil {
			t.Fatalf("%d %s", status, b)
		}
		return out.Content[0].Text
	}
	plain := anth(`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	marked := anth(`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`)
	if plain != marked {
		t.Fatalf("cache_control changed the text: %q vs %q", plain, marked)
	}
}

func TestListenBaseURL(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", ":0"} {
		s := New(Config{})
		base, shutdown, err := s.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
			t.Errorf("Listen(%q) = %q", addr, base)
		}
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
