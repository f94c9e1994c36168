package benchbody

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The generators give valid JSON of about the size asked, the same bytes
// for the same arguments.
func TestBodiesAreDeterministicValidAndSized(t *testing.T) {
	for name, gen := range map[string]func(int, Options) []byte{"chat": Chat, "anthropic": Anthropic, "responses": Responses} {
		for _, size := range []int{1 << 10, 200 << 10} {
			b := gen(size, Options{Model: "sim-small"})
			if !json.Valid(b) {
				t.Fatalf("%s %d: not valid JSON", name, size)
			}
			if len(b) < size || len(b) > size+size/20+2048 {
				t.Errorf("%s %d: got %d bytes", name, size, len(b))
			}
			if !bytes.Equal(b, gen(size, Options{Model: "sim-small"})) {
				t.Errorf("%s %d: not deterministic", name, size)
			}
		}
	}
}

func TestChatShape(t *testing.T) {
	large := Chat(200<<10, Options{})
	if n := Messages(large); n < 300 || n > 380 {
		t.Errorf("200 KB body has %d messages, want about 340", n)
	}
	var v struct {
		Tools  []json.RawMessage `json:"tools"`
		Stream bool              `json:"stream"`
	}
	if err := json.Unmarshal(Chat(200<<10, Options{Stream: true}), &v); err != nil || len(v.Tools) != 8 || !v.Stream {
		t.Errorf("200 KB body: %d tools, stream %v, err %v", len(v.Tools), v.Stream, err)
	}
}

// An Anthropic body is a Messages request as coding agents send it.
func TestAnthropicShape(t *testing.T) {
	var v struct {
		Model  string `json:"model"`
		System []struct {
			CacheControl *struct{ Type string } `json:"cache_control"`
		} `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type  string          `json:"type"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		} `json:"messages"`
		Tools  []json.RawMessage `json:"tools"`
		Stream bool              `json:"stream"`
	}
	if err := json.Unmarshal(Anthropic(200<<10, Options{Stream: true}), &v); err != nil {
		t.Fatal(err)
	}
	if n := len(v.Messages); n < 300 || n > 380 {
		t.Errorf("200 KB body has %d messages, want about 340", n)
	}
	if len(v.Tools) != 8 || !v.Stream || v.Model != "claude-sonnet-4-5" {
		t.Errorf("200 KB body: %d tools, stream %v, model %q", len(v.Tools), v.Stream, v.Model)
	}
	if len(v.System) != 1 || v.System[0].CacheControl == nil {
		t.Errorf("system: %+v, want one block marked for the prompt cache", v.System)
	}
	// Roles alternate, starting and ending with the user; tool inputs are objects.
	for i, m := range v.Messages {
		if want := []string{"user", "assistant"}[i%2]; m.Role != want {
			t.Fatalf("message %d: role %s, want %s", i, m.Role, want)
		}
		for _, c := range m.Content {
			if c.Type == "tool_use" && (len(c.Input) == 0 || c.Input[0] != '{') {
				t.Fatalf("message %d: tool_use input %s, want an object", i, c.Input)
			}
		}
	}
	if v.Messages[len(v.Messages)-1].Role != "user" {
		t.Error("the last message is not the user's")
	}
}

// A Responses body is a Responses request as a stateless coding agent
// sends it: every turn's reasoning item sent back, function calls paired
// with their outputs.
func TestResponsesShape(t *testing.T) {
	b := Responses(200<<10, Options{Stream: true})
	var v struct {
		Model        string `json:"model"`
		Instructions string `json:"instructions"`
		Input        []struct {
			Type             string `json:"type"`
			Role             string `json:"role"`
			EncryptedContent string `json:"encrypted_content"`
			Arguments        string `json:"arguments"`
			CallID           string `json:"call_id"`
			Output           string `json:"output"`
		} `json:"input"`
		Tools []struct {
			Type, Name string
		} `json:"tools"`
		Store          *bool  `json:"store"`
		Stream         bool   `json:"stream"`
		PromptCacheKey string `json:"prompt_cache_key"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if n := Messages(b); n != len(v.Input) || n < 300 || n > 420 {
		t.Errorf("200 KB body has %d input items (Messages counts %d), want about 340", len(v.Input), n)
	}
	if len(v.Tools) != 8 || v.Tools[0].Type != "function" || v.Tools[0].Name == "" || !v.Stream || v.Model != "gpt-5-codex" ||
		v.Store == nil || *v.Store || v.PromptCacheKey == "" || len(v.Instructions) < 2<<10 {
		t.Errorf("200 KB body: %d tools (%+v), stream %v, model %q, store %v, prompt_cache_key %q, %d bytes of instructions",
			len(v.Tools), v.Tools[0], v.Stream, v.Model, v.Store, v.PromptCacheKey, len(v.Instructions))
	}
	calls := map[string]bool{}
	kinds := map[string]int{}
	for i, it := range v.Input {
		kinds[it.Type]++
		switch it.Type {
		case "reasoning":
			if it.EncryptedContent == "" {
				t.Fatalf("item %d: a reasoning item without its encrypted_content", i)
			}
		case "function_call":
			if !json.Valid([]byte(it.Arguments)) || it.CallID == "" {
				t.Fatalf("item %d: arguments %q, call_id %q", i, it.Arguments, it.CallID)
			}
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] || !json.Valid([]byte(it.Output)) {
				t.Fatalf("item %d: output for %q before its call, or not JSON", i, it.CallID)
			}
		}
	}
	if last := v.Input[len(v.Input)-1]; last.Type != "message" || last.Role != "user" {
		t.Errorf("the last item is %s/%s, not the user's message", last.Type, last.Role)
	}
	if kinds["reasoning"] == 0 || kinds["reasoning"] != kinds["function_call"] || kinds["function_call"] != kinds["function_call_output"] {
		t.Errorf("item kinds %v", kinds)
	}
}
