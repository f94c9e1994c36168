package wire

import (
	"errors"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// TestUsagePromptCacheFields reads every provider's prompt-cache counts from
// bodies shaped like the providers' own (trimmed to the usage-bearing parts).
func TestUsagePromptCacheFields(t *testing.T) {
	tests := []struct {
		name  string
		shape groundhog.Shape
		body  string
		want  groundhog.Usage
		err   error
	}{
		{"openai chat cached and written", groundhog.ShapeChat,
			`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":4096,"completion_tokens":12,"total_tokens":4108,
			  "prompt_tokens_details":{"cached_tokens":3072,"audio_tokens":0,"cache_write_tokens":896},
			  "completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
			groundhog.Usage{InputTokens: 4096, CachedInputTokens: 3072, CacheWriteTokens: 896, OutputTokens: 12}, nil},
		{"openai responses cached and written", groundhog.ShapeResponses,
			`{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","output":[],
			  "usage":{"input_tokens":10240,"input_tokens_details":{"cached_tokens":8192,"cache_write_tokens":2048},
			  "output_tokens":40,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":10280}}`,
			groundhog.Usage{InputTokens: 10240, CachedInputTokens: 8192, CacheWriteTokens: 2048, OutputTokens: 40}, nil},
		{"anthropic 5m and 1h writes", groundhog.ShapeMessages,
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",
			  "usage":{"input_tokens":50,"cache_creation_input_tokens":3000,"cache_read_input_tokens":8000,
			  "cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":9,"service_tier":"standard"}}`,
			groundhog.Usage{InputTokens: 11050, CachedInputTokens: 8000, CacheWriteTokens: 3000, CacheWrite1hTokens: 2000, OutputTokens: 9}, nil},
		{"anthropic split without total", groundhog.ShapeMessages,
			`{"model":"claude","usage":{"input_tokens":5,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":20},"output_tokens":1}}`,
			groundhog.Usage{InputTokens: 125, CacheWriteTokens: 120, CacheWrite1hTokens: 20, OutputTokens: 1}, nil},
		{"anthropic 1h part over the writes", groundhog.ShapeMessages,
			`{"model":"claude","usage":{"input_tokens":5,"cache_creation_input_tokens":10,"cache_creation":{"ephemeral_1h_input_tokens":20},"output_tokens":1}}`,
			groundhog.Usage{}, ErrMalformed},
		{"anthropic bad 1h count", groundhog.ShapeMessages,
			`{"model":"claude","usage":{"input_tokens":5,"cache_creation":{"ephemeral_1h_input_tokens":"x"},"output_tokens":1}}`,
			groundhog.Usage{}, ErrMalformed},
		{"bedrock converse cache counts", groundhog.ShapeMessages,
			`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn",
			  "usage":{"inputTokens":20,"outputTokens":4,"totalTokens":2024,"cacheReadInputTokens":1500,"cacheWriteInputTokens":500}}`,
			groundhog.Usage{InputTokens: 2020, CachedInputTokens: 1500, CacheWriteTokens: 500, OutputTokens: 4}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, u, err := UsageFromBody(tt.shape, []byte(tt.body))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if u != tt.want {
				t.Fatalf("usage = %+v, want %+v", u, tt.want)
			}
		})
	}
}

func TestUsagePromptCacheStreams(t *testing.T) {
	tests := []struct {
		name  string
		shape groundhog.Shape
		evs   []groundhog.Event
		want  groundhog.Usage
	}{
		{"chat stream usage chunk", groundhog.ShapeChat, []groundhog.Event{
			ev("", `{"id":"c","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}],"usage":null}`),
			ev("", `{"id":"c","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
			ev("", `{"id":"c","object":"chat.completion.chunk","model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":2048,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":1024}}}`),
			ev("", "[DONE]"),
		}, groundhog.Usage{InputTokens: 2048, CachedInputTokens: 1024, CacheWriteTokens: 1024, OutputTokens: 3}},
		{"responses stream completed", groundhog.ShapeResponses, []groundhog.Event{
			ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"model":"gpt-5","status":"in_progress","usage":null}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"delta":"ok"}`),
			ev("response.completed", `{"type":"response.completed","sequence_number":9,"response":{"model":"gpt-5","status":"completed",
				"usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096,"cache_write_tokens":896},"output_tokens":2,"total_tokens":5002}}}`),
		}, groundhog.Usage{InputTokens: 5000, CachedInputTokens: 4096, CacheWriteTokens: 896, OutputTokens: 2}},
		{"anthropic stream with cache_creation split", groundhog.ShapeMessages, []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],
				"usage":{"input_tokens":7,"cache_creation_input_tokens":2500,"cache_read_input_tokens":4000,
				"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":2000},"output_tokens":1}}}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		}, groundhog.Usage{InputTokens: 6507, CachedInputTokens: 4000, CacheWriteTokens: 2500, CacheWrite1hTokens: 2000, OutputTokens: 12}},
		{"anthropic cumulative delta repeats the cache counts", groundhog.ShapeMessages, []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":7,"cache_creation_input_tokens":1200,"cache_read_input_tokens":0,
				"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1200},"output_tokens":30}}`),
		}, groundhog.Usage{InputTokens: 1207, CacheWriteTokens: 1200, CacheWrite1hTokens: 1200, OutputTokens: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, u, err := UsageFromEvents(tt.shape, tt.evs)
			if err != nil {
				t.Fatal(err)
			}
			if u != tt.want {
				t.Fatalf("usage = %+v, want %+v", u, tt.want)
			}
		})
	}
}
