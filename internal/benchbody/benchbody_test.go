package benchbody

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Both generators give valid JSON of about the size asked, the same bytes
// for the same arguments.
func TestBodiesAreDeterministicValidAndSized(t *testing.T) {
	for name, gen := range map[string]func(int, Options) []byte{"chat": Chat, "anthropic": Anthropic} {
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
