package promptcache

import (
	"bytes"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

func TestGuessShape(t *testing.T) {
	for body, want := range map[string]groundhog.Shape{
		`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`:                               chat,
		`{"model":"claude-sonnet-4-5","max_tokens":9,"system":"s","messages":[]}`:                     messages,
		`{"model":"c","messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`: messages,
		`{"model":"gpt-5","input":"hi"}`:                                                              responses,
		`{"model":"text-embedding-3-small","input":["a"]}`:                                            groundhog.ShapeEmbeddings,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`:                                      groundhog.ShapeGemini,
	} {
		if got, err := GuessShape([]byte(body)); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", body, got, err, want)
		}
	}
	if _, err := GuessShape([]byte(`{"model":"x"}`)); err == nil {
		t.Error("no messages or input: guessed")
	}
}

// Diff on each shape: the path goes down to the differing value, the
// windows mark exactly the differing part, and markers are no difference.
func TestDiff(t *testing.T) {
	for _, shape := range cacheShapes {
		a := baseConvo(shape)
		b := a.next(1)
		b.system = strings.Replace(b.system, "s500", "CHANGED", 1)
		res, err := Diff(shape, a.body(), b.body())
		if err != nil {
			t.Fatal(err)
		}
		wantPath := map[groundhog.Shape]string{chat: "messages[0].content", responses: "instructions", messages: "system[0].text"}[shape]
		if res.Match || res.Cause != CauseInstructionsChanged || res.Path != wantPath {
			t.Fatalf("%s: %+v", shape, res)
		}
		if got := res.A[res.DiffA[0]:res.DiffA[1]]; got != "s500" {
			t.Fatalf("%s: A's differing part %q", shape, got)
		}
		if got := res.B[res.DiffB[0]:res.DiffB[1]]; got != "CHANGED" {
			t.Fatalf("%s: B's differing part %q", shape, got)
		}
		if res.ReusableTokens <= 0 || res.ReusableTokens >= res.TokenOffset+1000 {
			t.Fatalf("%s: reusable %d", shape, res.ReusableTokens)
		}
		// The same request with markers injected: a match.
		body := b.body()
		marked, err := Inject(shape, "", body, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := Diff(shape, body, marked); !res.Match || res.Cause != "" {
			t.Fatalf("%s: markers count as a difference: %+v", shape, res)
		}
	}
	// Model changed.
	a := baseConvo(chat)
	b := a.next(1)
	b.model = "sim-large"
	res, _ := Diff(chat, a.body(), b.body())
	if res.Cause != CauseModelChanged || res.Path != "model" || res.Match {
		t.Fatalf("model: %+v", res)
	}
}

func TestInjectOptions(t *testing.T) {
	body := baseConvo(responses).next(1).body()
	out, err := Inject(responses, "", body, Options{Explicit: true, TTL: "30m"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out, []byte(`,"prompt_cache_options":{"mode":"explicit","ttl":"30m"}}`)) {
		t.Fatalf("explicit mode not set: %s", out[len(out)-80:])
	}
	p, _ := Parse(responses, out)
	if !p.Explicit || p.TTL.Minutes() != 30 {
		t.Fatalf("parsed back: explicit %v ttl %v", p.Explicit, p.TTL)
	}
	m := baseConvo(messages).next(1).body()
	out, _ = Inject(messages, "", m, Options{TTL: "1h"})
	if !bytes.Contains(out, []byte(`"cache_control":{"type":"ephemeral","ttl":"1h"}`)) {
		t.Fatal("1h ttl not applied")
	}
	// With a client marker, the ttl is not applied (longer before shorter).
	mc := withMarks(baseConvo(messages).next(1), 0).body()
	out, _ = Inject(messages, "", mc, Options{TTL: "1h"})
	if bytes.Contains(out, []byte(`"ttl":"1h"`)) {
		t.Fatal("1h ttl applied beside the client's 5m marker")
	}
}
