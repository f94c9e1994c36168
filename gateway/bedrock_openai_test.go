package gateway_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
)

// gptOSS is an OpenAI open-weight model id on Bedrock, priced by the
// built-in Bedrock rows.
const gptOSS = "openai.gpt-oss-120b-1:0"

// withOpenAIOnBedrock sends the OpenAI routes to the simulator standing in
// for Bedrock's OpenAI-compatible endpoint (/openai/v1), with a Bedrock API
// key, as upstream: bedrock configures it.
func withOpenAIOnBedrock() harnessOpt { return func(s *setup) { s.onBedrock = true } }

// TestOpenAISDKOnBedrockEndpoint: chat completions and Responses through
// the gateway to Bedrock's OpenAI-compatible endpoint reach /openai/v1,
// cache like any OpenAI call, are booked on the bedrock provider under the
// Bedrock model id, and cost what the simulator billed, to the
// micro-dollar, at the built-in Bedrock price (never unknown).
func TestOpenAISDKOnBedrockEndpoint(t *testing.T) {
	var paths []string
	h := newHarness(t, withOpenAIOnBedrock(), func(s *setup) { s.tap = func(path string, _ []byte) { paths = append(paths, path) } })
	cl := openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("Groundhog-Cache", "use"))
	ctx := context.Background()
	chat := openai.ChatCompletionNewParams{Model: gptOSS, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from bedrock's openai endpoint")}}
	first, err := cl.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	if first.Choices[0].Message.Content == "" || again.Choices[0].Message.Content != first.Choices[0].Message.Content {
		t.Fatalf("answers %q / %q", first.Choices[0].Message.Content, again.Choices[0].Message.Content)
	}
	if _, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: gptOSS,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and through responses")}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if p != "/openai/v1/chat/completions" && p != "/openai/v1/responses" {
			t.Errorf("upstream path %s, want Bedrock's /openai/v1 routes", p)
		}
	}
	bill := h.Sim.Bill() // exact; the HTTP bill rounds to the micro-dollar
	if bill.Calls != 2 {
		t.Fatalf("upstream calls %d, want 2 (the repeat is a hit)", bill.Calls)
	}
	var spent groundhog.Money
	for _, r := range h.ledgerRows() {
		if r.Provider != "bedrock" || r.Model != gptOSS {
			t.Errorf("row provider %q model %q", r.Provider, r.Model)
		}
		if !r.Cost.Known() {
			t.Fatalf("row cost unknown for %s", r.Model)
		}
		spent += r.Cost
	}
	if spent != bill.USD || spent == 0 {
		t.Fatalf("ledger %s, simulator bill %s", spent, bill.USD)
	}
}
