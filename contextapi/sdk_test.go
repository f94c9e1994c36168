package contextapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
)

// The assembled bodies, sent byte for byte by the official SDKs through the
// gateway: each is answered, and after a state update the next step reads
// the unchanged prefix from the provider's prompt cache.
func TestSDKsSendAssembledContext(t *testing.T) {
	g := start(t)
	ctx := context.Background()
	long := strings.Repeat("Refunds are idempotent by charge id; retries must reuse the key. ", 200) // > 1024 tokens
	oc := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ac := anthropic.NewClient(aoption.WithBaseURL(g.URL), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
	for _, c := range []struct {
		shape string
		last  string
		send  func(body json.RawMessage) (cached int64, err error)
	}{
		{"chat", `{"role":"user","content":"Continue."}`, func(body json.RawMessage) (int64, error) {
			r, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{}, option.WithRequestBody("application/json", []byte(body)))
			if err != nil {
				return 0, err
			}
			return r.Usage.PromptTokensDetails.CachedTokens, nil
		}},
		{"responses", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Continue."}]}`, func(body json.RawMessage) (int64, error) {
			r, err := oc.Responses.New(ctx, responses.ResponseNewParams{}, option.WithRequestBody("application/json", []byte(body)))
			if err != nil {
				return 0, err
			}
			return r.Usage.InputTokensDetails.CachedTokens, nil
		}},
		{"messages", `{"role":"user","content":"Continue."}`, func(body json.RawMessage) (int64, error) {
			r, err := ac.Messages.New(ctx, anthropic.MessageNewParams{}, aoption.WithRequestBody("application/json", []byte(body)))
			if err != nil {
				return 0, err
			}
			return r.Usage.CacheReadInputTokens, nil
		}},
	} {
		session := "sdk-" + c.shape
		putState(t, g, groundhog.LocalTenant, session, seedState(""), 0)
		reqBody, _ := json.Marshal(map[string]any{"shape": c.shape, "model": "sim-small", "instructions": long,
			"last_step": []json.RawMessage{json.RawMessage(c.last)}, "breakpoints": "auto"})
		step := func() int64 {
			code, _, body := post(t, g.URL+"/groundhog/v1/sessions/"+session+"/context", string(reqBody))
			if code != 200 {
				t.Fatalf("%s: context %d %s", c.shape, code, body)
			}
			var a contextAnswer
			_ = json.Unmarshal(body, &a)
			cached, err := c.send(a.Request)
			if err != nil {
				t.Fatalf("%s: the SDK call failed: %v", c.shape, err)
			}
			return cached
		}
		step()
		s := seedState("")
		s.Findings = append(s.Findings, "The downstream API accepts Idempotency-Key")
		putState(t, g, groundhog.LocalTenant, session, s, 1)
		if cached := step(); cached < 1024 {
			t.Errorf("%s: after a state update the next step read %d tokens from the prompt cache, want the prefix (≥ 1024)", c.shape, cached)
		}
	}
}
