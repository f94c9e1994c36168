package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	groundhog "github.com/groundhog-ai/groundhog"
)

// shapeOf returns the shape of a testdata file from its name prefix.
func shapeOf(t testing.TB, path string) groundhog.Shape {
	base := filepath.Base(path)
	for _, s := range []groundhog.Shape{groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages, groundhog.ShapeEmbeddings} {
		if strings.HasPrefix(base, string(s)+"_") {
			return s
		}
	}
	t.Fatalf("no shape for %s", path)
	return ""
}

// summary is what a client sees of an answer: the fields every conversion
// must keep. It is computed with the official SDKs' types, so it also
// checks that bodies we build parse as the SDKs expect.
type summary struct {
	ID, Model string
	Text      string   // output text, choice by choice / block by block
	Refusal   string   // refusals
	Thinking  string   // reasoning / thinking text and signatures
	Tools     []string // tool calls as name(id)=compact JSON input
	Stop      string   // finish reasons / stop reason / status
	Usage     groundhog.Usage
}

func compactJSON(t testing.TB, s string) string {
	t.Helper()
	if s == "" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("tool input %q is not JSON: %v", s, err)
	}
	return b.String()
}

func summarize(t testing.TB, shape groundhog.Shape, body []byte) summary {
	t.Helper()
	var s summary
	switch shape {
	case groundhog.ShapeChat:
		var c openai.ChatCompletion
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("openai.ChatCompletion: %v", err)
		}
		s = chatSummary(t, c)
	case groundhog.ShapeResponses:
		var r responses.Response
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("responses.Response: %v", err)
		}
		s = responseSummary(t, r)
	case groundhog.ShapeMessages:
		var m anthropic.Message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("anthropic.Message: %v", err)
		}
		s = messageSummary(t, m)
	}
	model, u, err := UsageFromBody(shape, body)
	if err != nil {
		t.Fatalf("UsageFromBody: %v", err)
	}
	if s.Model != model {
		t.Fatalf("UsageFromBody model %q, SDK model %q", model, s.Model)
	}
	s.Usage = u
	return s
}

// chatSummary summarizes a chat completion (without usage).
func chatSummary(t testing.TB, c openai.ChatCompletion) summary {
	s := summary{ID: c.ID, Model: c.Model}
	var stops []string
	for _, ch := range c.Choices {
		s.Text += ch.Message.Content + "|"
		s.Refusal += ch.Message.Refusal + "|"
		for _, tc := range ch.Message.ToolCalls {
			s.Tools = append(s.Tools, fmt.Sprintf("%s(%s)=%s", tc.Function.Name, tc.ID, compactJSON(t, tc.Function.Arguments)))
		}
		stops = append(stops, ch.FinishReason)
	}
	s.Stop = strings.Join(stops, ",")
	return s
}

// responseSummary summarizes a Responses response (without usage).
func responseSummary(t testing.TB, r responses.Response) summary {
	s := summary{ID: r.ID, Model: string(r.Model), Stop: string(r.Status)}
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, p := range item.Content {
				s.Text += p.Text
				s.Refusal += p.Refusal
			}
		case "function_call":
			s.Tools = append(s.Tools, fmt.Sprintf("%s(%s)=%s", item.Name, item.CallID, compactJSON(t, item.Arguments.OfString)))
		case "reasoning":
			for _, p := range item.Summary {
				s.Thinking += p.Text + "|"
			}
		}
	}
	return s
}

// messageSummary summarizes an Anthropic message (without usage).
func messageSummary(t testing.TB, m anthropic.Message) summary {
	s := summary{ID: m.ID, Model: string(m.Model), Stop: string(m.StopReason)}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			s.Text += b.Text
		case "thinking":
			s.Thinking += b.Thinking + "|sig=" + b.Signature
		case "tool_use", "server_tool_use":
			s.Tools = append(s.Tools, fmt.Sprintf("%s(%s)=%s", b.Name, b.ID, compactJSON(t, string(b.Input))))
		}
	}
	return s
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if err := da.Decode(&va); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	if err := db.Decode(&vb); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// streamExpectations are the contents of the hand-written provider streams.
var streamExpectations = map[string]summary{
	"chat_text.sse": {
		ID: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", Model: "gpt-4o-2024-08-06",
		Text:    "The capital of France is Paris. It\u2019s known for the Eiffel Tower \u2014 and caf\u00e9s <&>.\n\nAnything else?|",
		Refusal: "|", Stop: "stop",
		Usage: groundhog.Usage{InputTokens: 1117, CachedInputTokens: 1024, OutputTokens: 23},
	},
	"chat_tools.sse": {
		ID: "chatcmpl-BxToolsq7Lk2", Model: "gpt-4.1-mini-2025-04-14",
		Text: "|", Refusal: "|", Stop: "tool_calls",
		Tools: []string{
			`get_weather(call_DdmO9pD3xa9XTPNJ32zg2hcA)={"location":"Paris, France"}`,
			`get_time(call_ABbkWm3rYp0qMKvUqL2tJd8n)={"timezone":"Europe/Paris"}`,
		},
		Usage: groundhog.Usage{InputTokens: 2210, CachedInputTokens: 2048, CacheWriteTokens: 128, OutputTokens: 52},
	},
	"responses_text.sse": {
		ID: "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654", Model: "gpt-4.1-2025-04-14",
		Text:  "Hi there! \u201cHello\u201d in French is \u00abBonjour\u00bb \u2014 and <b>&amp;</b> stays literal. How can I help?",
		Stop:  "completed",
		Usage: groundhog.Usage{InputTokens: 37, OutputTokens: 25},
	},
	"responses_tools.sse": {
		ID: "resp_68af1d2c7e3c8195a1b0e53f0c2d9a4b0a7e5c1d2f3b4a59", Model: "o4-mini-2025-04-16",
		Thinking: "**Checking the weather**\n\nThe user asks about Paris; I should call get_weather with the city.|",
		Tools:    []string{`get_weather(call_9fKq2m1Zb7TnX4aWcL0pR3sD)={"location":"Paris, France","unit":"celsius"}`},
		Stop:     "completed",
		Usage:    groundhog.Usage{InputTokens: 1290, CachedInputTokens: 1152, CacheWriteTokens: 64, OutputTokens: 151},
	},
	"messages_text.sse": {
		ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Model: "claude-sonnet-4-5-20250929",
		Text: "Hello! The capital of France is Paris \u2014 \u201cla Ville Lumi\u00e8re\u201d. Need anything else? <ok> & done.",
		Stop: "end_turn",
		// Anthropic's input_tokens excludes cache reads and writes; groundhog sums them.
		Usage: groundhog.Usage{InputTokens: 12 + 2048 + 4096, CachedInputTokens: 4096, CacheWriteTokens: 2048, OutputTokens: 27},
	},
	"messages_tools_thinking.sse": {
		ID: "msg_01Aq9w938a90dw8q3vsx8aHe", Model: "claude-sonnet-4-5-20250929",
		Text:     "I'll check the current weather in San Francisco for you.",
		Thinking: "The user wants the weather in San Francisco. I have a get_weather tool; I'll call it with the city and unit.|sig=EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/Ekf2ePOkr1oFQPvsQF6ydUyMqGbHcyqS5ULHUZkVRuFAWlcQHpFG9lGuS5A=",
		Tools:    []string{`get_weather(toolu_01T1x1fJ34qAmk2tNTrN7Up6)={"location":"San Francisco, CA","unit":"fahrenheit"}`},
		Stop:     "tool_use",
		Usage:    groundhog.Usage{InputTokens: 472, OutputTokens: 189},
	},
}

// TestStreamFixedPoint: a real provider stream → body → synthesized stream
// → body is a fixed point (same bytes), the body holds what the stream
// said, and both streams are complete.
func TestStreamFixedPoint(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) != len(streamExpectations) {
		t.Fatalf("%d testdata streams, %d expectations", len(files), len(streamExpectations))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			shape := shapeOf(t, f)
			evs := loadStream(t, f)
			if !StreamComplete(shape, evs) {
				t.Fatal("provider stream not complete")
			}
			body1, err := BodyFromEvents(shape, evs)
			if err != nil {
				t.Fatalf("BodyFromEvents: %v", err)
			}
			got := summarize(t, shape, body1)
			if want := streamExpectations[filepath.Base(f)]; !reflect.DeepEqual(got, want) {
				t.Fatalf("body from stream:\n got %+v\nwant %+v\nbody %s", got, want, body1)
			}
			_, streamUsage, err := UsageFromEvents(shape, evs)
			if err != nil || streamUsage != got.Usage {
				t.Fatalf("UsageFromEvents = %+v, %v; body usage %+v", streamUsage, err, got.Usage)
			}
			evs2, err := EventsFromBody(shape, body1, true)
			if err != nil {
				t.Fatalf("EventsFromBody: %v", err)
			}
			if !StreamComplete(shape, evs2) {
				t.Fatal("synthesized stream not complete")
			}
			body2, err := BodyFromEvents(shape, evs2)
			if err != nil {
				t.Fatalf("BodyFromEvents(synthesized): %v", err)
			}
			if !bytes.Equal(body1, body2) {
				t.Fatalf("not a fixed point:\n%s\n%s", body1, body2)
			}
			_, u2, err := UsageFromEvents(shape, evs2)
			if err != nil || u2 != got.Usage {
				t.Fatalf("UsageFromEvents(synthesized) = %+v, %v; want %+v", u2, err, got.Usage)
			}
		})
	}
}

// TestBodyRoundTrip: a real provider body → stream → body keeps every
// field (compared as JSON values), and usage read from the stream equals
// usage read from the body.
func TestBodyRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*_body*.json")
	for _, f := range files {
		shape := shapeOf(t, f)
		if shape == groundhog.ShapeEmbeddings {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := summarize(t, shape, body)
			evs, err := EventsFromBody(shape, body, true)
			if err != nil {
				t.Fatalf("EventsFromBody: %v", err)
			}
			if !StreamComplete(shape, evs) {
				t.Fatal("synthesized stream not complete")
			}
			back, err := BodyFromEvents(shape, evs)
			if err != nil {
				t.Fatalf("BodyFromEvents: %v", err)
			}
			if !jsonEqual(t, body, back) {
				t.Fatalf("body changed in a round trip:\n%s\n%s", body, back)
			}
			if got := summarize(t, shape, back); !reflect.DeepEqual(got, want) {
				t.Fatalf("summary changed: got %+v want %+v", got, want)
			}
			_, u, err := UsageFromEvents(shape, evs)
			if err != nil || u != want.Usage {
				t.Fatalf("UsageFromEvents = %+v, %v; want %+v", u, err, want.Usage)
			}
			if want.Usage == (groundhog.Usage{}) {
				t.Fatal("fixture without usage: the usage checks above prove nothing")
			}
		})
	}
}

// TestChatWithoutIncludeUsage: without stream_options.include_usage the
// stream has no usage chunk and no "usage" members; the body rebuilt from
// it has the same content and no usage.
func TestChatWithoutIncludeUsage(t *testing.T) {
	body, err := os.ReadFile("testdata/chat_body_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := EventsFromBody(groundhog.ShapeChat, body, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if bytes.Contains(e.Data, []byte(`"usage"`)) {
			t.Fatalf("chunk mentions usage: %s", e.Data)
		}
	}
	_, u, err := UsageFromEvents(groundhog.ShapeChat, evs)
	if err != nil || u != (groundhog.Usage{}) {
		t.Fatalf("UsageFromEvents = %+v, %v; want zero", u, err)
	}
	back, err := BodyFromEvents(groundhog.ShapeChat, evs)
	if err != nil {
		t.Fatal(err)
	}
	want, got := summarize(t, groundhog.ShapeChat, body), summarize(t, groundhog.ShapeChat, back)
	want.Usage = groundhog.Usage{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(back, &o); err != nil || o["usage"] != nil {
		t.Fatalf("body has usage %s (err %v)", o["usage"], err)
	}
}

// allStreams returns every stream the tests know: the provider streams in
// testdata and the synthesized streams of the testdata bodies.
func allStreams(t *testing.T) map[string]struct {
	shape groundhog.Shape
	evs   []groundhog.Event
} {
	out := map[string]struct {
		shape groundhog.Shape
		evs   []groundhog.Event
	}{}
	files, _ := filepath.Glob("testdata/*.sse")
	for _, f := range files {
		out[filepath.Base(f)] = struct {
			shape groundhog.Shape
			evs   []groundhog.Event
		}{shapeOf(t, f), loadStream(t, f)}
	}
	files, _ = filepath.Glob("testdata/*_body*.json")
	for _, f := range files {
		shape := shapeOf(t, f)
		if shape == groundhog.ShapeEmbeddings {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := EventsFromBody(shape, body, true)
		if err != nil {
			t.Fatal(err)
		}
		out["synthesized "+filepath.Base(f)] = struct {
			shape groundhog.Shape
			evs   []groundhog.Event
		}{shape, evs}
	}
	return out
}

// TestStreamCompleteStrict: no proper prefix of a complete stream is
// complete, and neither is a stream with an error event in it.
func TestStreamCompleteStrict(t *testing.T) {
	for name, s := range allStreams(t) {
		t.Run(name, func(t *testing.T) {
			if !StreamComplete(s.shape, s.evs) {
				t.Fatal("whole stream not complete")
			}
			for n := range len(s.evs) {
				if StreamComplete(s.shape, s.evs[:n]) {
					t.Fatalf("prefix of %d/%d events is complete", n, len(s.evs))
				}
			}
			errEv := ErrorEvent(s.shape, groundhog.EUPSTREAM, "upstream connection lost")
			for _, at := range []int{1, len(s.evs) / 2, len(s.evs) - 1, len(s.evs)} {
				evs := append(append(append([]groundhog.Event(nil), s.evs[:at]...), errEv), s.evs[at:]...)
				if StreamComplete(s.shape, evs) {
					t.Fatalf("stream with an error event at %d is complete", at)
				}
				if _, err := BodyFromEvents(s.shape, evs); !errors.Is(err, ErrStreamFailed) {
					t.Fatalf("BodyFromEvents with an error event at %d: err = %v, want ErrStreamFailed", at, err)
				}
			}
		})
	}
}

func TestStreamCompleteCases(t *testing.T) {
	chunk := func(idx int, finish string) groundhog.Event {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return ev("", fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":%d,"delta":{"content":"x"},"finish_reason":%s}]}`, idx, f))
	}
	done := ev("", "[DONE]")
	rs := func(typ string, extra string) groundhog.Event {
		return ev(typ, fmt.Sprintf(`{"type":%q,"sequence_number":0%s}`, typ, extra))
	}
	ms := func(typ string, extra string) groundhog.Event {
		return ev(typ, fmt.Sprintf(`{"type":%q%s}`, typ, extra))
	}
	tests := []struct {
		name  string
		shape groundhog.Shape
		evs   []groundhog.Event
		want  bool
	}{
		{"chat ok", groundhog.ShapeChat, []groundhog.Event{chunk(0, ""), chunk(0, "stop"), done}, true},
		{"chat length is a finish", groundhog.ShapeChat, []groundhog.Event{chunk(0, "length"), done}, true},
		{"chat no finish", groundhog.ShapeChat, []groundhog.Event{chunk(0, ""), done}, false},
		{"chat no DONE", groundhog.ShapeChat, []groundhog.Event{chunk(0, "stop")}, false},
		{"chat DONE twice", groundhog.ShapeChat, []groundhog.Event{chunk(0, "stop"), done, done}, false},
		{"chat two choices one unfinished", groundhog.ShapeChat, []groundhog.Event{chunk(0, "stop"), chunk(1, ""), done}, false},
		{"chat two choices both finished", groundhog.ShapeChat, []groundhog.Event{chunk(1, "stop"), chunk(0, "stop"), done}, true},
		{"chat garbage chunk", groundhog.ShapeChat, []groundhog.Event{ev("", "{not json"), chunk(0, "stop"), done}, false},
		{"chat error chunk", groundhog.ShapeChat, []groundhog.Event{chunk(0, "stop"), ev("", `{"error":{"message":"x"}}`), done}, false},
		{"chat empty", groundhog.ShapeChat, nil, false},
		{"responses ok", groundhog.ShapeResponses, []groundhog.Event{rs("response.created", ""), rs("response.completed", `,"response":{"status":"completed"}`)}, true},
		{"responses incomplete", groundhog.ShapeResponses, []groundhog.Event{rs("response.created", ""), rs("response.incomplete", `,"response":{"status":"incomplete"}`)}, true}, // capped by max_output_tokens: whole and deterministic
		{"responses failed", groundhog.ShapeResponses, []groundhog.Event{rs("response.created", ""), rs("response.failed", "")}, false},
		{"responses completed not last", groundhog.ShapeResponses, []groundhog.Event{rs("response.completed", ""), rs("response.in_progress", "")}, false},
		{"responses completed with wrong status", groundhog.ShapeResponses, []groundhog.Event{rs("response.completed", `,"response":{"status":"in_progress"}`)}, false},
		{"responses type from event name", groundhog.ShapeResponses, []groundhog.Event{ev("response.completed", `{"response":{}}`)}, true},
		{"messages ok", groundhog.ShapeMessages, []groundhog.Event{ms("ping", ""), ms("message_start", ""), ms("content_block_start", `,"index":0`), ms("content_block_stop", `,"index":0`), ms("message_delta", `,"delta":{"stop_reason":"end_turn"}`), ms("message_stop", "")}, true},
		{"messages no stop_reason", groundhog.ShapeMessages, []groundhog.Event{ms("message_start", ""), ms("message_delta", `,"delta":{"stop_reason":null}`), ms("message_stop", "")}, false},
		{"messages block not stopped", groundhog.ShapeMessages, []groundhog.Event{ms("message_start", ""), ms("content_block_start", `,"index":0`), ms("message_delta", `,"delta":{"stop_reason":"end_turn"}`), ms("message_stop", "")}, false},
		{"messages stop without start", groundhog.ShapeMessages, []groundhog.Event{ms("content_block_stop", `,"index":0`), ms("message_stop", "")}, false},
		{"messages event after stop", groundhog.ShapeMessages, []groundhog.Event{ms("message_start", ""), ms("message_delta", `,"delta":{"stop_reason":"end_turn"}`), ms("message_stop", ""), ms("ping", "")}, false},
		{"messages two starts", groundhog.ShapeMessages, []groundhog.Event{ms("message_start", ""), ms("message_start", ""), ms("message_delta", `,"delta":{"stop_reason":"end_turn"}`), ms("message_stop", "")}, false},
		{"embeddings never", groundhog.ShapeEmbeddings, []groundhog.Event{done}, false},
		{"unknown shape", "completions", []groundhog.Event{done}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StreamComplete(tt.shape, tt.evs); got != tt.want {
				t.Fatalf("StreamComplete = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConversionErrors(t *testing.T) {
	tests := []struct {
		name  string
		shape groundhog.Shape
		body  string            // for EventsFromBody when evs is nil
		evs   []groundhog.Event // for BodyFromEvents
		want  error
	}{
		{"embeddings cannot stream", groundhog.ShapeEmbeddings, `{"object":"list"}`, nil, ErrNotStreamable},
		{"unknown shape", "completions", `{}`, nil, ErrUnknownShape},
		{"chat body not JSON", groundhog.ShapeChat, `{"id":`, nil, ErrMalformed},
		{"chat body an array", groundhog.ShapeChat, `[]`, nil, ErrMalformed},
		{"chat choices not an array", groundhog.ShapeChat, `{"choices":{}}`, nil, ErrMalformed},
		{"responses completed event with failed status", groundhog.ShapeResponses, "", []groundhog.Event{ev("response.completed", `{"type":"response.completed","response":{"status":"failed"}}`)}, ErrStreamFailed},
		{"messages content not an array", groundhog.ShapeMessages, `{"content":"hi"}`, nil, ErrMalformed},
		{"embeddings has no stream to read", groundhog.ShapeEmbeddings, "", []groundhog.Event{ev("", "{}")}, ErrNotStreamable},
		{"chat no finish", groundhog.ShapeChat, "", []groundhog.Event{ev("", `{"choices":[{"index":0,"delta":{"content":"x"}}]}`), ev("", "[DONE]")}, ErrIncompleteStream},
		{"chat chunk not JSON", groundhog.ShapeChat, "", []groundhog.Event{ev("", `{"choices":[`)}, ErrMalformed},
		{"responses no terminal", groundhog.ShapeResponses, "", []groundhog.Event{ev("response.created", `{"type":"response.created","response":{}}`)}, ErrIncompleteStream},
		{"responses failed", groundhog.ShapeResponses, "", []groundhog.Event{ev("response.failed", `{"type":"response.failed","response":{"status":"failed"}}`)}, ErrStreamFailed},
		{"messages no stop", groundhog.ShapeMessages, "", []groundhog.Event{ev("message_start", `{"type":"message_start","message":{"content":[]}}`)}, ErrIncompleteStream},
		{"messages delta before start", groundhog.ShapeMessages, "", []groundhog.Event{ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{}}`)}, ErrMalformed},
		{"messages block index gap", groundhog.ShapeMessages, "", []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{}}`),
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		}, ErrMalformed},
		{"messages bad tool JSON", groundhog.ShapeMessages, "", []groundhog.Event{
			ev("message_start", `{"type":"message_start","message":{}}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_stop", `{"type":"message_stop"}`),
		}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.evs == nil {
				_, err = EventsFromBody(tt.shape, []byte(tt.body), true)
			} else {
				_, err = BodyFromEvents(tt.shape, tt.evs)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestEventsFromBodyDetails checks the parts of the synthesized streams
// that the SDK tests cannot see: event names, sequence numbers, the
// message_start output_tokens rule and the shape of chat chunks.
func TestEventsFromBodyDetails(t *testing.T) {
	t.Run("responses sequence numbers and names", func(t *testing.T) {
		body, _ := os.ReadFile("testdata/responses_body.json")
		evs, err := EventsFromBody(groundhog.ShapeResponses, body, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			var p struct {
				Type string `json:"type"`
				Seq  *int   `json:"sequence_number"`
			}
			if err := json.Unmarshal(e.Data, &p); err != nil || p.Seq == nil || *p.Seq != i || p.Type != e.Name {
				t.Fatalf("event %d: name %q type %q seq %v (err %v)", i, e.Name, p.Type, p.Seq, err)
			}
		}
		if evs[0].Name != "response.created" || evs[1].Name != "response.in_progress" || evs[len(evs)-1].Name != "response.completed" {
			t.Fatalf("first/last events: %s, %s, %s", evs[0].Name, evs[1].Name, evs[len(evs)-1].Name)
		}
		var created struct {
			Response struct {
				Status string          `json:"status"`
				Output json.RawMessage `json:"output"`
				Usage  json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal(evs[0].Data, &created); err != nil {
			t.Fatal(err)
		}
		if created.Response.Status != "in_progress" || string(created.Response.Output) != "[]" || string(created.Response.Usage) != "null" {
			t.Fatalf("response.created carries %+v", created.Response)
		}
	})
	t.Run("responses terminal follows status", func(t *testing.T) {
		for status, want := range map[string]string{"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed", "queued": "response.completed"} {
			evs, err := EventsFromBody(groundhog.ShapeResponses, []byte(`{"id":"r","status":"`+status+`","output":[]}`), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := evs[len(evs)-1].Name; got != want {
				t.Fatalf("status %s: terminal %s, want %s", status, got, want)
			}
		}
	})
	t.Run("messages output_tokens at start", func(t *testing.T) {
		for out, want := range map[int]string{0: "0", 1: "1", 503: "1"} {
			body := fmt.Sprintf(`{"id":"m","type":"message","role":"assistant","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":%d}}`, out)
			evs, err := EventsFromBody(groundhog.ShapeMessages, []byte(body), false)
			if err != nil {
				t.Fatal(err)
			}
			var start struct {
				Message struct {
					StopReason json.RawMessage `json:"stop_reason"`
					Usage      struct {
						OutputTokens json.RawMessage `json:"output_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if err := json.Unmarshal(evs[0].Data, &start); err != nil {
				t.Fatal(err)
			}
			if string(start.Message.Usage.OutputTokens) != want || string(start.Message.StopReason) != "null" {
				t.Fatalf("output %d: message_start output_tokens %s stop_reason %s", out, start.Message.Usage.OutputTokens, start.Message.StopReason)
			}
		}
	})
	t.Run("chat chunks", func(t *testing.T) {
		body, _ := os.ReadFile("testdata/chat_body_text.json")
		evs, err := EventsFromBody(groundhog.ShapeChat, body, true)
		if err != nil {
			t.Fatal(err)
		}
		if string(evs[len(evs)-1].Data) != "[DONE]" {
			t.Fatal("no [DONE]")
		}
		deltas := 0
		for i, e := range evs[:len(evs)-1] {
			var c struct {
				Object  string            `json:"object"`
				Choices []json.RawMessage `json:"choices"`
				Usage   json.RawMessage   `json:"usage"`
			}
			if err := json.Unmarshal(e.Data, &c); err != nil || e.Name != "" || c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %d: %s (err %v)", i, e.Data, err)
			}
			last := i == len(evs)-2
			if last != (len(c.Choices) == 0) || last == isNull(c.Usage) {
				t.Fatalf("chunk %d: choices %d usage %s", i, len(c.Choices), c.Usage)
			}
			if bytes.Contains(e.Data, []byte(`"delta":{"content":`)) {
				deltas++
			}
		}
		if deltas < 3 {
			t.Fatalf("content split in %d deltas, want a few", deltas)
		}
	})
}

func TestSplitText(t *testing.T) {
	tests := []string{
		"",
		"short",
		strings.Repeat("word ", 40),
		strings.Repeat("\u00e9", 100),    // 2-byte runes
		strings.Repeat("\U0001F389", 30), // 4-byte runes
		strings.Repeat("x", 100),         // no spaces
		"a" + strings.Repeat("\u4e16", 50),
	}
	for _, s := range tests {
		pieces := splitText(s)
		if strings.Join(pieces, "") != s {
			t.Fatalf("pieces of %q do not join back", s)
		}
		for _, p := range pieces {
			if p == "" || !utf8Valid(p) || len(p) > deltaSize {
				t.Fatalf("bad piece %q of %q", p, s)
			}
		}
		if len(s) > 3*deltaSize && len(pieces) < 3 {
			t.Fatalf("%d bytes in %d pieces", len(s), len(pieces))
		}
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
