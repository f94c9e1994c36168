package sim

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// fakeClock is a groundhog.Clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startSim serves a new Server on a loopback port for the test's duration.
func startSim(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s := New(cfg)
	return s, serve(t, s)
}

// serve serves s on a loopback port for the test's duration and returns its
// base URL.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	base, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return base
}

// SDK clients never retry here: a retried faulted call would hide what the
// sim did (and bill it twice).
func openaiClient(base string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

func anthropicClient(base string, opts ...aoption.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(base + "/"), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

// checkBilled asserts that the bill grew from before by exactly one call
// with usage u for model, priced with the default table.
func checkBilled(t *testing.T, s *Server, before Bill, model string, u groundhog.Usage) {
	t.Helper()
	after := s.Bill()
	got := Bill{
		Calls: after.Calls - before.Calls, InputTokens: after.InputTokens - before.InputTokens,
		CachedInputTokens: after.CachedInputTokens - before.CachedInputTokens,
		CacheWriteTokens:  after.CacheWriteTokens - before.CacheWriteTokens,
		OutputTokens:      after.OutputTokens - before.OutputTokens, USD: after.USD - before.USD,
	}
	want := Bill{Calls: 1, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens, USD: pricing.Default().Cost(model, u)}
	if got != want {
		t.Fatalf("bill grew by %+v, want %+v", got, want)
	}
}

func checkNotBilled(t *testing.T, s *Server, before Bill) {
	t.Helper()
	if after := s.Bill(); after != before {
		t.Fatalf("bill changed from %+v to %+v, want unchanged", before, after)
	}
}

var weatherSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city":  map[string]any{"type": "string"},
		"days":  map[string]any{"type": "integer", "minimum": 1},
		"units": map[string]any{"type": "string", "enum": []any{"c", "f"}},
	},
	"required": []any{"city"},
}

// checkWeatherArgs asserts args is a JSON object built from weatherSchema.
func checkWeatherArgs(t *testing.T, args string) {
	t.Helper()
	var v struct {
		City  string  `json:"city"`
		Days  float64 `json:"days"`
		Units string  `json:"units"`
	}
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatalf("tool arguments %q: %v", args, err)
	}
	if v.City == "" || v.Days < 1 || v.Days != math.Trunc(v.Days) || (v.Units != "c" && v.Units != "f") {
		t.Fatalf("tool arguments %q do not follow the schema", args)
	}
}

func TestOpenAIChatSDK(t *testing.T) {
	ctx := context.Background()
	s, base := startSim(t, Config{})
	client := openaiClient(base)
	params := openai.ChatCompletionNewParams{
		Model: "sim-small",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage("Say hello to the world"),
		},
	}
	// 2 framed messages: "You are terse." is You|are|ters|e. and "Say hello
	// to the world" Say|hell|o|to|the|worl|d.
	const wantPrompt = 2*MessageOverhead + 4 + 7

	before := s.Bill()
	cc, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	text := cc.Choices[0].Message.Content
	if cc.Object != "chat.completion" || cc.Model != "sim-small" || !strings.HasPrefix(cc.ID, "chatcmpl-") || text == "" {
		t.Fatalf("completion = %+v", cc)
	}
	if cc.Usage.PromptTokens != wantPrompt || cc.Usage.CompletionTokens != int64(CountTokens(text)) ||
		cc.Usage.TotalTokens != cc.Usage.PromptTokens+cc.Usage.CompletionTokens {
		t.Fatalf("usage = %+v for %d-token text, want prompt %d", cc.Usage, CountTokens(text), wantPrompt)
	}
	if n := cc.Usage.CompletionTokens; n < 16 || n > 64 || cc.Choices[0].FinishReason != "stop" {
		t.Fatalf("%d output tokens, finish %q: want 16-64 and stop", n, cc.Choices[0].FinishReason)
	}
	u := groundhog.Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens}
	checkBilled(t, s, before, "sim-small", u)

	t.Run("stream", func(t *testing.T) {
		before := s.Bill()
		p := params
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := client.Chat.Completions.NewStreaming(ctx, p)
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				t.Fatalf("accumulator rejected chunk %s", stream.Current().RawJSON())
			}
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		got := acc.Choices[0].Message.Content
		if got != text {
			t.Fatalf("streamed text %q != non-streamed %q", got, text)
		}
		// role chunk + one per token + finish chunk + usage chunk
		if want := int(cc.Usage.CompletionTokens) + 3; chunks != want {
			t.Fatalf("%d chunks, want %d", chunks, want)
		}
		if acc.Usage.PromptTokens != wantPrompt || acc.Usage.CompletionTokens != cc.Usage.CompletionTokens || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("streamed usage %+v finish %q", acc.Usage, acc.Choices[0].FinishReason)
		}
		checkBilled(t, s, before, "sim-small", u)
	})

	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Parameters: openai.FunctionParameters(weatherSchema),
	})}
	t.Run("tool call", func(t *testing.T) {
		p := params
		p.Tools = tools
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Use the tool for Paris")}
		before := s.Bill()
		cc, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ch := cc.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("choice = %s", ch.RawJSON())
		}
		args := ch.Message.ToolCalls[0].Function.Arguments
		checkWeatherArgs(t, args)
		if want := int64(CountTokens("get_weather") + CountTokens(args)); cc.Usage.CompletionTokens != want {
			t.Fatalf("tool call output tokens %d, want %d", cc.Usage.CompletionTokens, want)
		}
		checkBilled(t, s, before, "sim-small", groundhog.Usage{InputTokens: cc.Usage.PromptTokens, OutputTokens: cc.Usage.CompletionTokens})

		stream := client.Chat.Completions.NewStreaming(ctx, p)
		var acc openai.ChatCompletionAccumulator
		var finished []openai.FinishedChatCompletionToolCall
		for stream.Next() {
			acc.AddChunk(stream.Current())
			if tc, ok := acc.JustFinishedToolCall(); ok {
				finished = append(finished, tc)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(finished) != 1 || finished[0].Name != "get_weather" || finished[0].Arguments != args ||
			finished[0].ID != acc.Choices[0].Message.ToolCalls[0].ID || acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("streamed tool calls %+v, want get_weather(%s)", finished, args)
		}

		// Any user question with tools offered calls one (the agent loop's
		// first step); answering a tool result, the model talks.
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")}
		if cc, err := client.Chat.Completions.New(ctx, p); err != nil || cc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("a user question with tools offered: %v %v", err, cc)
		}
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Use the tool"), ch.Message.ToParam(), openai.ToolMessage("sunny", ch.Message.ToolCalls[0].ID)}
		cc, err = client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Choices[0].FinishReason != "stop" || len(cc.Choices[0].Message.ToolCalls) != 0 {
			t.Fatalf("unexpected tool call: %s", cc.Choices[0].RawJSON())
		}
		// tool_choice forces a call; "none" forbids it.
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
		if cc, err := client.Chat.Completions.New(ctx, p); err != nil || cc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("tool_choice required: %v %v", err, cc)
		}
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("use a tool")}
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
		if cc, err := client.Chat.Completions.New(ctx, p); err != nil || cc.Choices[0].FinishReason != "stop" {
			t.Fatalf("tool_choice none: %v %v", err, cc)
		}
	})
}

func TestOpenAIResponsesSDK(t *testing.T) {
	ctx := context.Background()
	s, base := startSim(t, Config{})
	client := openaiClient(base)
	params := responses.ResponseNewParams{
		Model:        "sim-large",
		Instructions: openai.String("Answer briefly."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me about groundhogs")},
	}
	// Answ|er|brie|fly. + Tell|me|abou|t|grou|ndho|gs
	const wantPrompt = 2*MessageOverhead + 4 + 7

	before := s.Bill()
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	text := r.OutputText()
	if r.Status != "completed" || !strings.HasPrefix(r.ID, "resp_") || text == "" || r.Instructions.OfString != "Answer briefly." {
		t.Fatalf("response = %s", r.RawJSON())
	}
	if r.Usage.InputTokens != wantPrompt || r.Usage.OutputTokens != int64(CountTokens(text)) ||
		r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Usage.InputTokensDetails.CachedTokens != 0 {
		t.Fatalf("usage = %s", r.Usage.RawJSON())
	}
	u := groundhog.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
	checkBilled(t, s, before, "sim-large", u)

	t.Run("stream", func(t *testing.T) {
		before := s.Bill()
		stream := client.Responses.NewStreaming(ctx, params)
		var types []string
		var deltas strings.Builder
		var final responses.Response
		for i := 0; stream.Next(); i++ {
			ev := stream.Current()
			if ev.SequenceNumber != int64(i) {
				t.Fatalf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
			}
			if len(types) == 0 || types[len(types)-1] != ev.Type {
				types = append(types, ev.Type)
			}
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.output_text.done":
				if ev.Text != text {
					t.Fatalf("output_text.done text %q, want %q", ev.Text, text)
				}
			case "response.completed":
				final = ev.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
		if strings.Join(types, ",") != strings.Join(want, ",") {
			t.Fatalf("event types %v, want %v", types, want)
		}
		if deltas.String() != text || final.OutputText() != text || final.Usage.InputTokens != wantPrompt || final.Usage.OutputTokens != u.OutputTokens {
			t.Fatalf("streamed %q / final %q usage %s, want %q", deltas.String(), final.OutputText(), final.Usage.RawJSON(), text)
		}
		checkBilled(t, s, before, "sim-large", u)
	})

	t.Run("function call stream", func(t *testing.T) {
		p := params
		p.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("check the weather with a tool")}
		p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weatherSchema}}}
		stream := client.Responses.NewStreaming(ctx, p)
		var args strings.Builder
		var done responses.Response
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.function_call_arguments.delta":
				args.WriteString(ev.Delta)
			case "response.completed":
				done = ev.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		checkWeatherArgs(t, args.String())
		if len(done.Output) != 1 || done.Output[0].Type != "function_call" || done.Output[0].Name != "get_weather" || done.Output[0].Arguments.OfString != args.String() {
			t.Fatalf("final output %s", done.RawJSON())
		}
	})

	t.Run("max_output_tokens", func(t *testing.T) {
		p := params
		p.MaxOutputTokens = openai.Int(3)
		r, err := client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.Usage.OutputTokens != 3 ||
			!strings.HasPrefix(text, r.OutputText()) {
			t.Fatalf("capped response %s", r.RawJSON())
		}
	})
}

func TestEmbeddingsSDK(t *testing.T) {
	ctx := context.Background()
	s, base := startSim(t, Config{})
	client := openaiClient(base)
	before := s.Bill()
	res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "sim-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first text", "second one here"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// firs|t|text + seco|nd|one|here: no framing for embeddings.
	if len(res.Data) != 2 || res.Usage.PromptTokens != 3+4 || res.Usage.TotalTokens != res.Usage.PromptTokens {
		t.Fatalf("embeddings = %s", res.RawJSON())
	}
	for i, d := range res.Data {
		var norm float64
		for _, f := range d.Embedding {
			norm += f * f
		}
		if d.Index != int64(i) || len(d.Embedding) != DefaultEmbeddingDims || math.Abs(norm-1) > 1e-5 {
			t.Fatalf("embedding %d: index %d, %d dims, norm² %v", i, d.Index, len(d.Embedding), norm)
		}
	}
	checkBilled(t, s, before, "sim-embed", groundhog.Usage{InputTokens: 7})

	// The same text embeds the same alone, in base64 and in a batch.
	one, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "sim-embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("second one here")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range one.Data[0].Embedding {
		if math.Abs(f-res.Data[1].Embedding[k]) > 1e-7 {
			t.Fatalf("base64 embedding %v != float %v", one.Data[0].Embedding, res.Data[1].Embedding)
		}
	}
	dims, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "sim-embed", Dimensions: openai.Int(64),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2, 3}, {4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dims.Data) != 2 || len(dims.Data[0].Embedding) != 64 || dims.Usage.PromptTokens != 4 {
		t.Fatalf("token-array embeddings = %d items, %d dims, %d tokens", len(dims.Data), len(dims.Data[0].Embedding), dims.Usage.PromptTokens)
	}
}

func TestAnthropicSDK(t *testing.T) {
	ctx := context.Background()
	s, base := startSim(t, Config{})
	client := anthropicClient(base)
	params := anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello to the world"))},
	}
	const wantPrompt = 2*MessageOverhead + 4 + 7

	before := s.Bill()
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.StopReason != anthropic.StopReasonEndTurn || !strings.HasPrefix(msg.ID, "msg_") {
		t.Fatalf("message = %s", msg.RawJSON())
	}
	text := msg.Content[0].Text
	if msg.Usage.InputTokens != wantPrompt || msg.Usage.OutputTokens != int64(CountTokens(text)) ||
		msg.Usage.CacheReadInputTokens != 0 || msg.Usage.CacheCreationInputTokens != 0 {
		t.Fatalf("usage = %s", msg.Usage.RawJSON())
	}
	u := groundhog.Usage{InputTokens: wantPrompt, OutputTokens: msg.Usage.OutputTokens}
	checkBilled(t, s, before, "claude-haiku-4-5", u)

	t.Run("stream", func(t *testing.T) {
		before := s.Bill()
		stream := client.Messages.NewStreaming(ctx, params)
		var acc anthropic.Message
		var types []string
		for stream.Next() {
			ev := stream.Current()
			if err := acc.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
			if len(types) == 0 || types[len(types)-1] != ev.Type {
				types = append(types, ev.Type)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
		if strings.Join(types, ",") != strings.Join(want, ",") {
			t.Fatalf("events %v, want %v (ping is skipped by the SDK)", types, want)
		}
		if acc.Content[0].Text != text || acc.StopReason != anthropic.StopReasonEndTurn ||
			acc.Usage.InputTokens != wantPrompt || acc.Usage.OutputTokens != u.OutputTokens {
			t.Fatalf("accumulated %s, want text %q", acc.RawJSON(), text)
		}
		checkBilled(t, s, before, "claude-haiku-4-5", u)
	})

	t.Run("tool use", func(t *testing.T) {
		p := params
		p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city"}}}}}
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Use the tool for Paris"))}
		msg, err := client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" {
			t.Fatalf("message = %s", msg.RawJSON())
		}
		checkWeatherArgs(t, string(msg.Content[0].Input))

		stream := client.Messages.NewStreaming(ctx, p)
		var acc anthropic.Message
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.StopReason != anthropic.StopReasonToolUse || string(acc.Content[0].Input) != string(msg.Content[0].Input) {
			t.Fatalf("streamed tool input %s, want %s", acc.Content[0].Input, msg.Content[0].Input)
		}

		// Answering the tool result ends the loop with text.
		p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(msg.Content[0].ID, "sunny", false)))
		msg, err = client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonEndTurn {
			t.Fatalf("after tool result: %s", msg.RawJSON())
		}
	})

	t.Run("max_tokens", func(t *testing.T) {
		p := params
		p.MaxTokens = 5
		msg, err := client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonMaxTokens || msg.Usage.OutputTokens != 5 || !strings.HasPrefix(text, msg.Content[0].Text) {
			t.Fatalf("capped message %s", msg.RawJSON())
		}
	})

	t.Run("count_tokens", func(t *testing.T) {
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
			Model: params.Model, Messages: params.Messages,
			System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: params.System},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.InputTokens != wantPrompt {
			t.Fatalf("count_tokens = %d, want %d", n.InputTokens, wantPrompt)
		}
	})
}

func TestModelsSDK(t *testing.T) {
	ctx := context.Background()
	_, base := startSim(t, Config{})
	oc := openaiClient(base)
	page, err := oc.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "sim-small,sim-large,sim-embed" {
		t.Fatalf("openai models %v", ids)
	}
	if m, err := oc.Models.Get(ctx, "sim-large"); err != nil || m.ID != "sim-large" || m.Object != "model" {
		t.Fatalf("get model = %v, %v", m, err)
	}
	ac := anthropicClient(base)
	apage, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(apage.Data) != 3 || apage.Data[0].ID != "sim-small" || apage.Data[0].CreatedAt.IsZero() {
		t.Fatalf("anthropic models %s", apage.RawJSON())
	}
}
