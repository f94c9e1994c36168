package assemble

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// seedState is the seed record, plus an ev_ ref.
func seedState() groundhog.WorkingState {
	return groundhog.WorkingState{
		Objective:        "Fix the webhook retry bug",
		Constraints:      []string{"No duplicate charges", "Rollback required"},
		Findings:         []string{"Worker may time out after downstream success"},
		FailedApproaches: []string{"Blind retry duplicates the action"},
		Evidence:         []string{"src/webhooks.py", "incident-1042", "ev_" + strings.Repeat("ab", 32)},
		NextStep:         "Check downstream idempotency support",
		Ext:              json.RawMessage(`{"ticket":"PAY-7","attempt":2}`),
	}
}

var seedInfo = map[string]*groundhog.EvidenceInfo{
	"ev_" + strings.Repeat("ab", 32): {Ref: "ev_" + strings.Repeat("ab", 32), Bytes: 48213, Lines: 1200, ContentType: "text/plain"},
}

func inputFor(shape groundhog.Shape, bp bool) Input {
	in := Input{Shape: shape, Model: "sim-small", Instructions: "You are a careful payments engineer. <Never> guess.",
		State: seedState(), Evidence: seedInfo, Breakpoints: bp}
	switch shape {
	case groundhog.ShapeChat:
		in.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","function":{"parameters":{"type":"object","properties":{"path":{"type":"string"}}},"name":"read_file"}}`)}
		in.LastStep = []json.RawMessage{json.RawMessage(`{"role": "user", "content": "Continue with the next step."}`)}
	case groundhog.ShapeResponses:
		in.Tools = []json.RawMessage{json.RawMessage(`{"type":"function","name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}`)}
		in.LastStep = []json.RawMessage{json.RawMessage(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Continue with the next step."}]}`)}
	case groundhog.ShapeMessages:
		in.Tools = []json.RawMessage{json.RawMessage(`{"name":"read_file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}`)}
		in.LastStep = []json.RawMessage{json.RawMessage(`{"role":"user","content":"Continue with the next step."}`)}
	}
	return in
}

var shapes = []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages}

func TestGolden(t *testing.T) {
	for _, shape := range shapes {
		for _, bp := range []bool{false, true} {
			name := string(shape)
			if bp {
				name += "_breakpoints"
			}
			t.Run(name, func(t *testing.T) {
				out, err := Assemble(inputFor(shape, bp))
				if err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, out.Request, "", "  "); err != nil {
					t.Fatalf("request is not JSON: %v\n%s", err, out.Request)
				}
				// The golden file holds the exact bytes (one line) and the
				// token counts; the indented form is for reading diffs.
				got := append(append([]byte(nil), out.Request...), '\n')
				tokens, _ := json.Marshal(out.Tokens)
				got = append(append(got, tokens...), '\n')
				path := filepath.Join("testdata", "golden", name+".json")
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update once)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("bytes differ from %s:\ngot  %s\nwant %s", path, got, want)
				}
				// Again, from a copy of the input with the JSON re-spaced:
				// canonical items give the same bytes.
				in2 := inputFor(shape, bp)
				for i, tl := range in2.Tools {
					var v any
					_ = json.Unmarshal(tl, &v)
					in2.Tools[i], _ = json.MarshalIndent(v, "", "   ")
				}
				out2, _ := Assemble(in2)
				if !bytes.Equal(out.Request, out2.Request) {
					t.Error("re-spaced tools changed the bytes")
				}
			})
		}
	}
}

// A state update changes only the bytes after the prefix: the prefix is
// identical, and so is the last step at the end.
func TestStateUpdateKeepsPrefix(t *testing.T) {
	for _, shape := range shapes {
		for _, bp := range []bool{false, true} {
			a, err := Assemble(inputFor(shape, bp))
			if err != nil {
				t.Fatal(err)
			}
			in := inputFor(shape, bp)
			in.State.Findings = append(in.State.Findings, "Downstream accepts an Idempotency-Key header")
			in.State.NextStep = "Pass the operation key downstream"
			b, err := Assemble(in)
			if err != nil {
				t.Fatal(err)
			}
			if a.PrefixBytes != b.PrefixBytes || a.PrefixBytes == 0 {
				t.Fatalf("%s: prefix length %d vs %d", shape, a.PrefixBytes, b.PrefixBytes)
			}
			common := 0
			for common < len(a.Request) && common < len(b.Request) && a.Request[common] == b.Request[common] {
				common++
			}
			if common < a.PrefixBytes {
				t.Errorf("%s: requests diverge at byte %d, inside the %d-byte prefix", shape, common, a.PrefixBytes)
			}
			if !strings.Contains(string(a.Request[:a.PrefixBytes]), "Never") {
				t.Errorf("%s: the prefix lacks the instructions: %s", shape, a.Request[:a.PrefixBytes])
			}
			if strings.Contains(string(a.Request[:a.PrefixBytes]), "Working state") {
				t.Errorf("%s: the prefix holds the state", shape)
			}
			if a.Tokens.Prefix != b.Tokens.Prefix || a.Tokens.LastStep != b.Tokens.LastStep || a.Tokens.State >= b.Tokens.State {
				t.Errorf("%s: tokens %+v then %+v", shape, a.Tokens, b.Tokens)
			}
			lastA := a.Request[len(a.Request)-60:]
			if !bytes.HasSuffix(b.Request, lastA) {
				t.Errorf("%s: the last step's bytes changed", shape)
			}
		}
	}
}

// The assembled requests are valid for the provider: the sim answers each
// with 200, counts the same prompt tokens as Tokens (for text items), and,
// with breakpoints on a long prefix, reads the prefix from its prompt cache
// on the next step after a state update.
func TestSimAcceptsAndCaches(t *testing.T) {
	s := sim.New(sim.Config{})
	long := strings.Repeat("Policy line about refunds and retries. ", 400) // > 1024 tokens
	for _, shape := range shapes {
		path := map[groundhog.Shape]string{groundhog.ShapeChat: "/v1/chat/completions", groundhog.ShapeResponses: "/v1/responses", groundhog.ShapeMessages: "/v1/messages"}[shape]
		send := func(body []byte) (int, groundhog.Usage) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer k-"+string(shape))
			req.Header.Set("x-api-key", "k-"+string(shape))
			s.ServeHTTP(rec, req)
			var u struct {
				Usage struct {
					PromptTokens  int64 `json:"prompt_tokens"`
					InputTokens   int64 `json:"input_tokens"`
					CacheRead     int64 `json:"cache_read_input_tokens"`
					CacheCreation int64 `json:"cache_creation_input_tokens"`
					PromptDetails struct {
						Cached int64 `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
					InputDetails struct {
						Cached int64 `json:"cached_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &u)
			if rec.Code != 200 {
				t.Logf("%s answer: %s", shape, rec.Body.String())
			}
			x := u.Usage
			return rec.Code, groundhog.Usage{InputTokens: x.PromptTokens + x.InputTokens + x.CacheRead + x.CacheCreation,
				CachedInputTokens: x.PromptDetails.Cached + x.InputDetails.Cached + x.CacheRead}
		}
		in := inputFor(shape, true)
		in.Instructions = long
		a, err := Assemble(in)
		if err != nil {
			t.Fatal(err)
		}
		code, u := send(a.Request)
		if code != 200 {
			t.Fatalf("%s: sim answered %d", shape, code)
		}
		if total := a.Tokens.Prefix + a.Tokens.State + a.Tokens.LastStep; u.InputTokens != total {
			t.Errorf("%s: sim counted %d prompt tokens, Tokens say %d (%+v)", shape, u.InputTokens, total, a.Tokens)
		}
		in.State.NextStep = "Something else entirely"
		b, _ := Assemble(in)
		_, u2 := send(b.Request)
		if u2.CachedInputTokens < 1024 {
			t.Errorf("%s: after a state update only %d tokens read from the prompt cache", shape, u2.CachedInputTokens)
		}
	}
}

func TestBadInput(t *testing.T) {
	good := inputFor(groundhog.ShapeChat, false)
	for name, mut := range map[string]func(*Input){
		"shape":        func(in *Input) { in.Shape = "embeddings" },
		"model":        func(in *Input) { in.Model = " " },
		"no last step": func(in *Input) { in.LastStep = nil },
		"tool array":   func(in *Input) { in.Tools = []json.RawMessage{json.RawMessage(`[1]`)} },
		"bad item":     func(in *Input) { in.LastStep = []json.RawMessage{json.RawMessage(`{"role":`)} },
		"max tokens":   func(in *Input) { in.MaxTokens = -1 },
	} {
		in := good
		mut(&in)
		if _, err := Assemble(in); groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("%s: err %v, want code invalid", name, err)
		}
	}
}

func TestRenderStateVerbatim(t *testing.T) {
	s := seedState()
	s.Constraints = []string{"  Keep   two spaces  ", "Line one\nLine two", "<b>&amp;</b>"}
	txt := RenderState(s, seedInfo, []Inline{{Ref: "ev_x", Content: "log line"}})
	for _, want := range []string{"1.   Keep   two spaces  \n", "2. Line one\nLine two\n", "3. <b>&amp;</b>\n",
		"- ev_" + strings.Repeat("ab", 32) + ": text/plain, 48213 bytes, 1200 lines\n", "- src/webhooks.py: external reference\n",
		`{"attempt":2,"ticket":"PAY-7"}`, "## Evidence ev_x (inline)\nlog line\n"} {
		if !strings.Contains(txt, want) {
			t.Errorf("render lacks %q:\n%s", want, txt)
		}
	}
	out, _ := Assemble(Input{Shape: groundhog.ShapeChat, Model: "m", State: s, LastStep: []json.RawMessage{json.RawMessage(`{"role":"user","content":"x"}`)}})
	if !bytes.Contains(out.Request, []byte(`3. <b>&amp;</b>`)) {
		t.Errorf("the request escapes the constraint's bytes: %s", out.Request)
	}
}
