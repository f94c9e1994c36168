package wire

import (
	"errors"
	"os"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

func TestUsageFromBody(t *testing.T) {
	embeddings, err := os.ReadFile("testdata/embeddings_body.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		shape     groundhog.Shape
		body      string
		wantModel string
		want      groundhog.Usage
		err       error
	}{
		{"chat", groundhog.ShapeChat,
			`{"model":"gpt-4o","usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":64}}}`,
			"gpt-4o", groundhog.Usage{InputTokens: 100, CachedInputTokens: 64, OutputTokens: 20}, nil},
		{"chat cache write", groundhog.ShapeChat,
			`{"model":"m","usage":{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":90}}}`,
			"m", groundhog.Usage{InputTokens: 100, CacheWriteTokens: 90, OutputTokens: 1}, nil},
		{"chat null details", groundhog.ShapeChat,
			`{"model":"m","usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":null}}`,
			"m", groundhog.Usage{InputTokens: 5, OutputTokens: 1}, nil},
		{"responses", groundhog.ShapeResponses,
			`{"model":"gpt-5","usage":{"input_tokens":300,"input_tokens_details":{"cached_tokens":256,"cache_write_tokens":32},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":30}}}`,
			"gpt-5", groundhog.Usage{InputTokens: 300, CachedInputTokens: 256, CacheWriteTokens: 32, OutputTokens: 40}, nil},
		{"embeddings", groundhog.ShapeEmbeddings, string(embeddings),
			"text-embedding-3-small", groundhog.Usage{InputTokens: 8}, nil},
		{"anthropic sums input", groundhog.ShapeMessages,
			`{"model":"claude","usage":{"input_tokens":10,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,"output_tokens":7}}`,
			"claude", groundhog.Usage{InputTokens: 1210, CachedInputTokens: 1000, CacheWriteTokens: 200, OutputTokens: 7}, nil},
		{"anthropic without cache fields", groundhog.ShapeMessages,
			`{"model":"claude","usage":{"input_tokens":10,"output_tokens":7}}`,
			"claude", groundhog.Usage{InputTokens: 10, OutputTokens: 7}, nil},
		{"bedrock style on messages", groundhog.ShapeMessages,
			`{"model":"anthropic.claude","usage":{"inputTokens":10,"outputTokens":7,"totalTokens":1317,"cacheReadInputTokens":1000,"cacheWriteInputTokens":300}}`,
			"anthropic.claude", groundhog.Usage{InputTokens: 1310, CachedInputTokens: 1000, CacheWriteTokens: 300, OutputTokens: 7}, nil},
		{"bedrock style on chat", groundhog.ShapeChat,
			`{"model":"m","usage":{"inputTokens":3,"outputTokens":2,"cacheReadInputTokens":4}}`,
			"m", groundhog.Usage{InputTokens: 7, CachedInputTokens: 4, OutputTokens: 2}, nil},
		{"bedrock cache fields fill in OpenAI details", groundhog.ShapeChat,
			`{"model":"m","usage":{"prompt_tokens":50,"completion_tokens":2,"cacheReadInputTokens":40,"cacheWriteInputTokens":5}}`,
			"m", groundhog.Usage{InputTokens: 50, CachedInputTokens: 40, CacheWriteTokens: 5, OutputTokens: 2}, nil},
		{"bedrock cache fields on anthropic usage", groundhog.ShapeMessages,
			`{"model":"m","usage":{"input_tokens":5,"output_tokens":2,"cacheReadInputTokens":40}}`,
			"m", groundhog.Usage{InputTokens: 45, CachedInputTokens: 40, OutputTokens: 2}, nil},
		{"integral float", groundhog.ShapeChat, `{"usage":{"prompt_tokens":12.0,"completion_tokens":1e1}}`,
			"", groundhog.Usage{InputTokens: 12, OutputTokens: 10}, nil},
		{"missing usage", groundhog.ShapeChat, `{"model":"m","choices":[]}`, "m", groundhog.Usage{}, nil},
		{"null usage", groundhog.ShapeMessages, `{"model":"m","usage":null}`, "m", groundhog.Usage{}, nil},
		{"negative count", groundhog.ShapeChat, `{"model":"m","usage":{"prompt_tokens":-1}}`, "m", groundhog.Usage{}, ErrMalformed},
		{"fractional count", groundhog.ShapeChat, `{"model":"m","usage":{"prompt_tokens":1.5}}`, "m", groundhog.Usage{}, ErrMalformed},
		{"string count", groundhog.ShapeMessages, `{"model":"m","usage":{"input_tokens":"12"}}`, "m", groundhog.Usage{}, ErrMalformed},
		{"usage not an object", groundhog.ShapeChat, `{"model":"m","usage":[1]}`, "m", groundhog.Usage{}, ErrMalformed},
		{"body not JSON", groundhog.ShapeChat, `{"model":`, "", groundhog.Usage{}, ErrMalformed},
		{"body an array", groundhog.ShapeChat, `[{"usage":{}}]`, "", groundhog.Usage{}, ErrMalformed},
		{"unknown shape", "completions", `{}`, "", groundhog.Usage{}, ErrUnknownShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, u, err := UsageFromBody(tt.shape, []byte(tt.body))
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if model != tt.wantModel || u != tt.want {
				t.Fatalf("got %q %+v, want %q %+v", model, u, tt.wantModel, tt.want)
			}
		})
	}
}

func TestUsageFromEvents(t *testing.T) {
	chunk := func(s string) groundhog.Event { return ev("", s) }
	tests := []struct {
		name      string
		shape     groundhog.Shape
		evs       []groundhog.Event
		wantModel string
		want      groundhog.Usage
		err       error
	}{
		{"chat without include_usage", groundhog.ShapeChat, []groundhog.Event{
			chunk(`{"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"usage"},"finish_reason":"stop"}]}`),
			chunk("[DONE]"),
		}, "gpt-4o", groundhog.Usage{}, nil},
		{"chat usage chunk", groundhog.ShapeChat, []groundhog.Event{
			chunk(`{"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"usage":null}`),
			chunk(`{"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}`),
			chunk("[DONE]"),
		}, "gpt-4o", groundhog.Usage{InputTokens: 9, CachedInputTokens: 8, OutputTokens: 3}, nil},
		{"chat truncated stream still reports usage", groundhog.ShapeChat, []groundhog.Event{
			chunk(`{"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1}}`),
			chunk(`{"broken`),
		}, "m", groundhog.Usage{InputTokens: 2, OutputTokens: 1}, nil},
		{"chat malformed usage", groundhog.ShapeChat, []groundhog.Event{
			chunk(`{"model":"m","choices":[],"usage":{"prompt_tokens":"x"}}`),
		}, "m", groundhog.Usage{}, ErrMalformed},
		{"responses completed", groundhog.ShapeResponses, []groundhog.Event{
			ev("response.created", `{"type":"response.created","response":{"model":"gpt-5","usage":null}}`),
			ev("response.completed", `{"type":"response.completed","response":{"model":"gpt-5","usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":4}}}`),
		}, "gpt-5", groundhog.Usage{InputTokens: 30, CachedInputTokens: 10, OutputTokens: 4}, nil},
		{"responses incomplete is billed", groundhog.ShapeResponses, []groundhog.Event{
			ev("response.incomplete", `{"type":"response.incomplete","response":{"model":"gpt-5","usage":{"input_tokens":30,"output_tokens":100}}}`),
		}, "gpt-5", groundhog.Usage{InputTokens: 30, OutputTokens: 100}, nil},
		{"responses without terminal", groundhog.ShapeResponses, []groundhog.Event{
			ev("response.created", `{"type":"response.created","response":{"model":"gpt-5","usage":null}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","delta":"x"}`),
		}, "gpt-5", groundhog.Usage{}, nil},
		{"messages start and delta", groundhog.ShapeMessages, []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":0,"output_tokens":1}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"message_delta"}}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":55}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		}, "claude", groundhog.Usage{InputTokens: 100, CachedInputTokens: 90, OutputTokens: 55}, nil},
		{"messages cumulative delta overrides input side", groundhog.ShapeMessages, []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":12,"cache_creation_input_tokens":null,"output_tokens":30}}`),
		}, "claude", groundhog.Usage{InputTokens: 12, OutputTokens: 30}, nil},
		{"messages names from data only", groundhog.ShapeMessages, []groundhog.Event{
			ev("", `{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}`),
			ev("", `{"type":"message_delta","delta":{},"usage":{"output_tokens":2}}`),
		}, "claude", groundhog.Usage{InputTokens: 10, OutputTokens: 2}, nil},
		{"messages without delta", groundhog.ShapeMessages, []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{"model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}`),
		}, "claude", groundhog.Usage{InputTokens: 10, OutputTokens: 1}, nil},
		{"embeddings", groundhog.ShapeEmbeddings, nil, "", groundhog.Usage{}, ErrNotStreamable},
		{"unknown", "x", nil, "", groundhog.Usage{}, ErrUnknownShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, u, err := UsageFromEvents(tt.shape, tt.evs)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if model != tt.wantModel || u != tt.want {
				t.Fatalf("got %q %+v, want %q %+v", model, u, tt.wantModel, tt.want)
			}
		})
	}
}

func TestShapeForPath(t *testing.T) {
	tests := []struct {
		path string
		want groundhog.Shape
		ok   bool
	}{
		{"/v1/chat/completions", groundhog.ShapeChat, true},
		{"/v1/chat/completions/", groundhog.ShapeChat, true},
		{"/v1/responses", groundhog.ShapeResponses, true},
		{"/v1/embeddings", groundhog.ShapeEmbeddings, true},
		{"/v1/messages", groundhog.ShapeMessages, true},
		{"/v1/messages/count_tokens", "", false},
		{"/v1/responses/resp_123", "", false},
		{"/v1/completions", "", false},
		{"/chat/completions", "", false},
		{"/V1/messages", "", false},
		{"", "", false},
		{"/", "", false},
	}
	for _, tt := range tests {
		got, ok := ShapeForPath(tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ShapeForPath(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

func TestErrorBody(t *testing.T) {
	tests := []struct {
		shape groundhog.Shape
		code  string
		want  string
	}{
		{groundhog.ShapeChat, groundhog.EINVALID, `{"error":{"message":"bad \"x\" <y>","type":"invalid_request_error","param":null,"code":"invalid"}}`},
		{groundhog.ShapeChat, groundhog.EUNAUTHORIZED, `{"error":{"message":"bad \"x\" <y>","type":"authentication_error","param":null,"code":"unauthorized"}}`},
		{groundhog.ShapeResponses, groundhog.ETOOLARGE, `{"error":{"message":"bad \"x\" <y>","type":"invalid_request_error","param":null,"code":"too_large"}}`},
		{groundhog.ShapeEmbeddings, groundhog.ECONFLICT, `{"error":{"message":"bad \"x\" <y>","type":"conflict_error","param":null,"code":"conflict"}}`},
		{groundhog.ShapeChat, groundhog.ETIMEOUT, `{"error":{"message":"bad \"x\" <y>","type":"server_error","param":null,"code":"timeout"}}`},
		{groundhog.ShapeMessages, groundhog.EINVALID, `{"type":"error","error":{"type":"invalid_request_error","message":"bad \"x\" <y>"}}`},
		{groundhog.ShapeMessages, groundhog.ETOOLARGE, `{"type":"error","error":{"type":"request_too_large","message":"bad \"x\" <y>"}}`},
		{groundhog.ShapeMessages, groundhog.EUNAVAILABLE, `{"type":"error","error":{"type":"overloaded_error","message":"bad \"x\" <y>"}}`},
		{groundhog.ShapeMessages, groundhog.EUPSTREAM, `{"type":"error","error":{"type":"api_error","message":"bad \"x\" <y>"}}`},
	}
	for _, tt := range tests {
		if got := string(ErrorBody(tt.shape, tt.code, `bad "x" <y>`)); got != tt.want {
			t.Errorf("ErrorBody(%s, %s) =\n %s\nwant\n %s", tt.shape, tt.code, got, tt.want)
		}
	}
}

func TestErrorType(t *testing.T) {
	codes := []string{
		groundhog.EINVALID, groundhog.EUNAUTHORIZED, groundhog.ENOTFOUND, groundhog.ECONFLICT,
		groundhog.EPRECONDITION, groundhog.ETOOLARGE, groundhog.EMEDIATYPE, groundhog.EMISMATCH,
		groundhog.ESTALE, groundhog.EUPSTREAM, groundhog.ETIMEOUT, groundhog.EUNAVAILABLE, groundhog.EINTERNAL, "",
	}
	want := map[groundhog.Shape][]string{
		groundhog.ShapeChat: {"invalid_request_error", "authentication_error", "not_found_error", "conflict_error",
			"invalid_request_error", "invalid_request_error", "invalid_request_error", "invalid_request_error",
			"conflict_error", "server_error", "server_error", "server_error", "server_error", "server_error"},
		groundhog.ShapeMessages: {"invalid_request_error", "authentication_error", "not_found_error", "invalid_request_error",
			"invalid_request_error", "request_too_large", "invalid_request_error", "invalid_request_error",
			"invalid_request_error", "api_error", "api_error", "overloaded_error", "api_error", "api_error"},
	}
	for shape, types := range want {
		for i, code := range codes {
			if got := ErrorType(shape, code); got != types[i] {
				t.Errorf("ErrorType(%s, %q) = %s, want %s", shape, code, got, types[i])
			}
		}
	}
}

func TestErrorEvent(t *testing.T) {
	tests := []struct {
		shape groundhog.Shape
		name  string
		data  string
	}{
		{groundhog.ShapeChat, "", `{"error":{"message":"lost","type":"server_error","param":null,"code":"upstream"}}`},
		{groundhog.ShapeResponses, "error", `{"type":"error","code":"upstream","message":"lost","param":null,"error":{"message":"lost","type":"server_error","param":null,"code":"upstream"}}`},
		{groundhog.ShapeMessages, "error", `{"type":"error","error":{"type":"api_error","message":"lost"}}`},
	}
	for _, tt := range tests {
		e := ErrorEvent(tt.shape, groundhog.EUPSTREAM, "lost")
		if e.Name != tt.name || string(e.Data) != tt.data {
			t.Errorf("ErrorEvent(%s) = %q %s, want %q %s", tt.shape, e.Name, e.Data, tt.name, tt.data)
		}
	}
}
