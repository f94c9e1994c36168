package wire

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	groundhog "github.com/groundhog-ai/groundhog"
)

// These tests prove the synthesized streams are what the official SDKs
// expect: an httptest server replays EventsFromBody's output with
// WriteEvent, the SDK's streaming decoder reads it, and its accumulator (or
// the caller's own accumulation of deltas, for Responses) must rebuild what
// the original body said.

// serveEvents returns a server that answers requests to wantPath with evs
// as an event stream.
func serveEvents(t *testing.T, wantPath string, evs []groundhog.Event) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wantPath {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		if shape, ok := ShapeForPath(r.URL.Path); !ok || !shape.Valid() {
			http.Error(w, "ShapeForPath does not know "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range evs {
			if err := WriteEvent(w, e); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serveError returns a server that answers every request with status and
// body as JSON.
func serveError(t *testing.T, status int, body []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func openaiClient(srv *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

func anthropicClient(srv *httptest.Server) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(srv.URL+"/"), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0))
}

// bodiesOf returns the testdata bodies of shape plus the bodies rebuilt
// from the testdata provider streams of shape.
func bodiesOf(t *testing.T, shape groundhog.Shape) map[string][]byte {
	out := map[string][]byte{}
	files, _ := filepath.Glob("testdata/" + string(shape) + "_body*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	files, _ = filepath.Glob("testdata/" + string(shape) + "_*.sse")
	for _, f := range files {
		b, err := BodyFromEvents(shape, loadStream(t, f))
		if err != nil {
			t.Fatal(err)
		}
		out["from "+filepath.Base(f)] = b
	}
	if len(out) < 2 {
		t.Fatalf("only %d %s bodies", len(out), shape)
	}
	return out
}

var chatParams = openai.ChatCompletionNewParams{
	Model:         "gpt-4.1",
	Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
}

func TestOpenAIChatSDKAcceptsSynthesizedStream(t *testing.T) {
	for name, body := range bodiesOf(t, groundhog.ShapeChat) {
		t.Run(name, func(t *testing.T) {
			evs, err := EventsFromBody(groundhog.ShapeChat, body, true)
			if err != nil {
				t.Fatal(err)
			}
			client := openaiClient(serveEvents(t, "/v1/chat/completions", evs))
			stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams)
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for stream.Next() {
				chunks++
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("accumulator rejected chunk %d", chunks)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if chunks != len(evs)-1 { // all but [DONE]
				t.Fatalf("SDK saw %d chunks, we sent %d", chunks, len(evs)-1)
			}
			want := summarize(t, groundhog.ShapeChat, body)
			got := chatSummary(t, acc.ChatCompletion)
			got.Usage = groundhog.Usage{
				InputTokens:       acc.Usage.PromptTokens,
				CachedInputTokens: acc.Usage.PromptTokensDetails.CachedTokens,
				OutputTokens:      acc.Usage.CompletionTokens,
			}
			// The SDK accumulator does not sum cache_write_tokens; the
			// round-trip tests check that field through UsageFromEvents.
			want.Usage.CacheWriteTokens = 0
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("accumulated\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

func TestOpenAIResponsesSDKAcceptsSynthesizedStream(t *testing.T) {
	for name, body := range bodiesOf(t, groundhog.ShapeResponses) {
		t.Run(name, func(t *testing.T) {
			evs, err := EventsFromBody(groundhog.ShapeResponses, body, false)
			if err != nil {
				t.Fatal(err)
			}
			client := openaiClient(serveEvents(t, "/v1/responses", evs))
			stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
				Model: "gpt-5",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
			})
			var (
				n         int64
				final     *responses.Response
				text      = map[string]string{} // item id -> output text from deltas
				refusal   = map[string]string{}
				args      = map[string]string{} // item id -> arguments from deltas
				reasoning = map[string]string{}
			)
			for stream.Next() {
				e := stream.Current()
				if e.SequenceNumber != n {
					t.Fatalf("event %d has sequence_number %d", n, e.SequenceNumber)
				}
				n++
				if e.AsAny() == nil {
					t.Fatalf("SDK does not know event type %q", e.Type)
				}
				switch e.Type {
				case "response.output_text.delta":
					text[e.ItemID] += e.Delta
				case "response.refusal.delta":
					refusal[e.ItemID] += e.Delta
				case "response.function_call_arguments.delta":
					args[e.ItemID] += e.Delta
				case "response.function_call_arguments.done":
					if args[e.ItemID] != e.Arguments {
						t.Fatalf("arguments.done %q, deltas %q", e.Arguments, args[e.ItemID])
					}
				case "response.reasoning_summary_text.delta":
					reasoning[e.ItemID] += e.Delta + "/"
				case "response.completed":
					r := e.Response
					final = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if n != int64(len(evs)) || final == nil {
				t.Fatalf("SDK saw %d events (final %v), we sent %d", n, final != nil, len(evs))
			}
			if !jsonEqual(t, []byte(final.RawJSON()), body) {
				t.Fatalf("response.completed carries\n%s\nwant\n%s", final.RawJSON(), body)
			}
			// The deltas alone must spell out every item of the body.
			var want responses.Response
			if err := want.UnmarshalJSON(body); err != nil {
				t.Fatal(err)
			}
			for _, item := range want.Output {
				switch item.Type {
				case "message":
					var txt, ref string
					for _, p := range item.Content {
						txt += p.Text
						ref += p.Refusal
					}
					if text[item.ID] != txt || refusal[item.ID] != ref {
						t.Fatalf("item %s: deltas %q/%q, want %q/%q", item.ID, text[item.ID], refusal[item.ID], txt, ref)
					}
				case "function_call":
					if args[item.ID] != item.Arguments.OfString {
						t.Fatalf("item %s: argument deltas %q, want %q", item.ID, args[item.ID], item.Arguments.OfString)
					}
				case "reasoning":
					var all string
					for _, p := range item.Summary {
						all += p.Text
					}
					if strings.ReplaceAll(reasoning[item.ID], "/", "") != strings.ReplaceAll(all, "/", "") {
						t.Fatalf("item %s: summary deltas %q, want %q", item.ID, reasoning[item.ID], all)
					}
				}
			}
		})
	}
}

func TestAnthropicSDKAcceptsSynthesizedStream(t *testing.T) {
	for name, body := range bodiesOf(t, groundhog.ShapeMessages) {
		t.Run(name, func(t *testing.T) {
			evs, err := EventsFromBody(groundhog.ShapeMessages, body, false)
			if err != nil {
				t.Fatal(err)
			}
			client := anthropicClient(serveEvents(t, "/v1/messages", evs))
			stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
				Model:     "claude-sonnet-4-5",
				MaxTokens: 1024,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
			})
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("Accumulate: %v", err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			// The SDK keeps the wire JSON with the deltas applied: it must
			// be the original body, field for field.
			if !jsonEqual(t, []byte(msg.RawJSON()), body) {
				t.Fatalf("accumulated message\n%s\nwant\n%s", msg.RawJSON(), body)
			}
			want := summarize(t, groundhog.ShapeMessages, body)
			got := messageSummary(t, msg)
			got.Usage = groundhog.Usage{
				InputTokens:       msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens,
				CachedInputTokens: msg.Usage.CacheReadInputTokens,
				CacheWriteTokens:  msg.Usage.CacheCreationInputTokens,
				OutputTokens:      msg.Usage.OutputTokens,
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("accumulated\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

// TestSDKsSeeErrorEvent: a stream cut by ErrorEvent after some events is
// an error for every SDK, never a short success.
func TestSDKsSeeErrorEvent(t *testing.T) {
	const msg = "upstream connection lost"
	cut := func(shape groundhog.Shape, file string) []groundhog.Event {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := EventsFromBody(shape, b, true)
		if err != nil {
			t.Fatal(err)
		}
		return append(evs[:3:3], ErrorEvent(shape, groundhog.EUPSTREAM, msg))
	}
	t.Run("chat", func(t *testing.T) {
		srv := serveEvents(t, "/v1/chat/completions", cut(groundhog.ShapeChat, "testdata/chat_body_text.json"))
		client := openaiClient(srv)
		stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams)
		for stream.Next() {
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("err = %v, want the error event", err)
		}
	})
	t.Run("responses", func(t *testing.T) {
		srv := serveEvents(t, "/v1/responses", cut(groundhog.ShapeResponses, "testdata/responses_body.json"))
		client := openaiClient(srv)
		stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "gpt-5"})
		for stream.Next() {
			if stream.Current().Type == "response.completed" {
				t.Fatal("completed after an error")
			}
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("err = %v, want the error event", err)
		}
	})
	t.Run("messages", func(t *testing.T) {
		srv := serveEvents(t, "/v1/messages", cut(groundhog.ShapeMessages, "testdata/messages_body.json"))
		client := anthropicClient(srv)
		stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10})
		for stream.Next() {
		}
		err := stream.Err()
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.Type() != "api_error" || apiErr.Message != msg {
			t.Fatalf("err = %v, want an api_error with our message", err)
		}
	})
}

// TestSDKsParseErrorBody: ErrorBody is the error shape the SDKs decode.
func TestSDKsParseErrorBody(t *testing.T) {
	const msg = "operation in progress; retry later"
	t.Run("openai", func(t *testing.T) {
		srv := serveError(t, http.StatusConflict, ErrorBody(groundhog.ShapeChat, groundhog.ECONFLICT, msg))
		client := openaiClient(srv)
		_, err := client.Chat.Completions.New(context.Background(), chatParams)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *openai.Error", err)
		}
		if apiErr.StatusCode != http.StatusConflict || apiErr.Type != "conflict_error" || apiErr.Message != msg || apiErr.Code != groundhog.ECONFLICT {
			t.Fatalf("parsed %d %q %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Message, apiErr.Code)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		srv := serveError(t, http.StatusRequestEntityTooLarge, ErrorBody(groundhog.ShapeMessages, groundhog.ETOOLARGE, msg))
		client := anthropicClient(srv)
		_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *anthropic.Error", err)
		}
		if apiErr.StatusCode != http.StatusRequestEntityTooLarge || apiErr.Type() != "request_too_large" || apiErr.Message != msg {
			t.Fatalf("parsed %d %q %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message)
		}
	})
}
