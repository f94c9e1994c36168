package transport_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/transport"
)

// The OpenAI SDK with groundhog in process: the second identical call is
// a cache hit, and the provider was called once. (Here the provider is the
// simulated one; leave OpenAIBaseURL empty for api.openai.com.)
func ExampleNew_openai() {
	ctx := context.Background()
	provider := sim.New(sim.Config{})
	simURL, stop, _ := provider.Listen("127.0.0.1:0")
	defer stop(ctx)
	dir, _ := os.MkdirTemp("", "groundhog-example")
	defer os.RemoveAll(dir)

	t, err := transport.New(ctx, transport.Options{DB: filepath.Join(dir, "groundhog.db"), OpenAIBaseURL: simURL + "/v1"})
	if err != nil {
		panic(err)
	}
	defer t.Close(ctx)
	client := openai.NewClient(
		option.WithHTTPClient(&http.Client{Transport: t}),
		option.WithAPIKey("sk-..."),
		option.WithHeader("Groundhog-Cache", "use"),
	)
	for i := 0; i < 2; i++ {
		var res *http.Response
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "sim-small",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		}, option.WithResponseInto(&res))
		if err != nil {
			panic(err)
		}
		fmt.Println("Groundhog-Cache:", res.Header.Get("Groundhog-Cache"))
	}
	fmt.Println("provider calls:", provider.Bill().Calls)
	// Output:
	// Groundhog-Cache: miss
	// Groundhog-Cache: hit
	// provider calls: 1
}

// The Anthropic SDK with groundhog in process: a retry with the same
// Idempotency-Key replays the stored answer instead of paying again.
func ExampleNew_anthropic() {
	ctx := context.Background()
	provider := sim.New(sim.Config{})
	simURL, stop, _ := provider.Listen("127.0.0.1:0")
	defer stop(ctx)
	dir, _ := os.MkdirTemp("", "groundhog-example")
	defer os.RemoveAll(dir)

	t, err := transport.New(ctx, transport.Options{DB: filepath.Join(dir, "groundhog.db"), AnthropicBaseURL: simURL + "/v1"})
	if err != nil {
		panic(err)
	}
	defer t.Close(ctx)
	client := anthropic.NewClient(aoption.WithHTTPClient(&http.Client{Transport: t}), aoption.WithAPIKey("sk-ant-..."))
	params := anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("send the invoice"))}}
	for i := 0; i < 2; i++ {
		var res *http.Response
		if _, err := client.Messages.New(ctx, params, aoption.WithHeader("Idempotency-Key", "invoice-42"), aoption.WithResponseInto(&res)); err != nil {
			panic(err)
		}
		fmt.Printf("attempt %d replayed: %q\n", i+1, res.Header.Get("Idempotent-Replayed"))
	}
	fmt.Println("provider calls:", provider.Bill().Calls)
	// Output:
	// attempt 1 replayed: ""
	// attempt 2 replayed: "true"
	// provider calls: 1
}
