package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The most common break — a timestamp at the top of the system prompt —
// must not move the key Groundhog-Prompt-Cache-Key: auto sets: ten calls of
// one agent whose instructions carry the current time reach the provider
// with one prompt_cache_key, and every call after the first is reported as
// a volatile_in_prefix break (header and ledger), since the provider could
// read nothing of a prefix that starts with a new value each time.
func TestStableCacheKeyIgnoresVolatileInstructions(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]int{}
	tap := func(path string, body []byte) {
		var b struct {
			Key string `json:"prompt_cache_key"`
		}
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		keys[b.Key]++
	}
	h := newHarness(t, func(s *setup) { s.tap = tap })
	oa := openaiClient(h)
	ctx := context.Background()
	body := words(1500, "system")
	start := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "lookup_order", Description: openai.String("Look an order up."),
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
	})}
	var breaks []string
	for i := range 10 {
		system := fmt.Sprintf("Current time: %s. You are a support agent.\n%s", start.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), body)
		var res *http.Response
		_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-small", Tools: tools,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage("Where is order 42?")}},
			option.WithHeader("Groundhog-Operation", "support"), option.WithHeader("Groundhog-Prompt-Cache-Key", "auto"),
			option.WithResponseInto(&res))
		if err != nil {
			t.Fatal(err)
		}
		breaks = append(breaks, res.Header.Get("Groundhog-Prompt-Cache-Break"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 {
		t.Fatalf("the provider saw %d prompt_cache_key values in 10 calls, want 1: %v", len(keys), keys)
	}
	for k := range keys {
		if k == "" {
			t.Fatal("no prompt_cache_key reached the provider")
		}
	}
	for i, b := range breaks {
		want := "volatile_in_prefix"
		if i == 0 {
			want = ""
		}
		if b != want {
			t.Errorf("call %d: Groundhog-Prompt-Cache-Break %q, want %q", i, b, want)
		}
	}
	n := 0
	for _, r := range h.ledgerRows() {
		if r.PromptCacheBreak == "volatile_in_prefix" {
			n++
		}
	}
	if n != 9 {
		t.Errorf("%d ledger rows name volatile_in_prefix, want 9", n)
	}
}
