package gemini_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// A response as the Gemini API sends it for a prompt of 2,345 tokens of
// which 2,048 were read from the implicit cache, with thinking.
var body = []byte(`{"candidates":[{"content":{"parts":[{"text":"Hello there."}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":2345,"candidatesTokenCount":4,"totalTokenCount":2449,"cachedContentTokenCount":2048,"thoughtsTokenCount":100,
"promptTokensDetails":[{"modality":"TEXT","tokenCount":2345}]},"modelVersion":"gemini-2.5-flash","responseId":"abc"}`)

func TestUsageIsInclusiveOfTheCache(t *testing.T) {
	model, u, err := gemini.UsageFromBody(body)
	if err != nil {
		t.Fatal(err)
	}
	want := groundhog.Usage{InputTokens: 2345, CachedInputTokens: 2048, OutputTokens: 104}
	if model != "gemini-2.5-flash" || u != want {
		t.Fatalf("got %q %+v, want gemini-2.5-flash %+v (prompt includes the cached tokens; thoughts are output)", model, u, want)
	}
	// A tool-use prompt is input on top of the prompt.
	_, u, err = gemini.UsageFromBody([]byte(`{"usageMetadata":{"promptTokenCount":10,"toolUsePromptTokenCount":5,"candidatesTokenCount":1}}`))
	if err != nil || u != (groundhog.Usage{InputTokens: 15, OutputTokens: 1}) {
		t.Fatalf("tool use prompt: %+v %v", u, err)
	}
	// More cached than prompt tokens cannot be: malformed.
	if _, _, err := gemini.UsageFromBody([]byte(`{"usageMetadata":{"promptTokenCount":10,"cachedContentTokenCount":11}}`)); err == nil {
		t.Fatal("cached > prompt accepted")
	}
}

func TestUsageOfRoundTrips(t *testing.T) {
	u := groundhog.Usage{InputTokens: 5000, CachedInputTokens: 4096, OutputTokens: 7}
	b, _ := json.Marshal(map[string]any{"usageMetadata": gemini.UsageOf(u)})
	if _, got, err := gemini.UsageFromBody(b); err != nil || got != u {
		t.Fatalf("%s: %+v %v", b, got, err)
	}
	if bytes.Contains(b, []byte("cachedContentTokenCount")) == (u.CachedInputTokens == 0) {
		t.Fatalf("%s", b)
	}
}

// A stream of three chunks, as streamGenerateContent?alt=sse sends them:
// every chunk carries the usage so far, the last one the finishReason.
var stream = []groundhog.Event{
	{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)},
	{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"lo "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)},
	{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"there."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4,"totalTokenCount":13},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)},
}

func TestStream(t *testing.T) {
	if !gemini.StreamComplete(stream) {
		t.Fatal("complete stream not complete")
	}
	if gemini.StreamComplete(stream[:2]) || gemini.IsTerminal(stream[1]) || !gemini.IsTerminal(stream[2]) {
		t.Fatal("a stream without its finishReason is complete")
	}
	model, u, err := gemini.UsageFromEvents(stream)
	if err != nil || model != "gemini-2.5-flash" || u != (groundhog.Usage{InputTokens: 9, OutputTokens: 4}) {
		t.Fatalf("%q %+v %v", model, u, err)
	}
	b, err := gemini.BodyFromEvents(stream)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
				Role string `json:"role"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		ResponseID string `json:"responseId"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Candidates) != 1 || len(got.Candidates[0].Content.Parts) != 1 || got.Candidates[0].Content.Parts[0].Text != "Hello there." ||
		got.Candidates[0].FinishReason != "STOP" || got.Candidates[0].Content.Role != "model" || got.ResponseID != "r1" {
		t.Fatalf("joined body: %s", b)
	}
	if _, u2, _ := gemini.UsageFromBody(b); u2 != u {
		t.Fatalf("joined usage %+v, stream %+v", u2, u)
	}
	// And back: one chunk, complete, with the same usage.
	evs, err := gemini.EventsFromBody(b)
	if err != nil || !gemini.StreamComplete(evs) {
		t.Fatalf("%v %v", evs, err)
	}
	// An error chunk ends a stream that is not complete.
	broken := append(stream[:2:2], groundhog.Event{Data: gemini.ErrorBody(503, "overloaded")})
	if gemini.StreamComplete(broken) || !gemini.IsError(broken[2]) {
		t.Fatal("a stream ended by an error is complete")
	}
}

func TestStorable(t *testing.T) {
	if !gemini.Storable(body) {
		t.Fatal("a plain answer is not storable")
	}
	for _, b := range []string{
		`{"candidates":[{"finishReason":"SAFETY","index":0}]}`,
		`{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"candidates":[{"finishReason":"RECITATION"}]}`,
	} {
		if gemini.Storable([]byte(b)) {
			t.Errorf("%s is storable", b)
		}
	}
}

func TestPath(t *testing.T) {
	for _, c := range []struct {
		path, model, method string
		ok                  bool
	}{
		{"/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", "generateContent", true},
		{"/v1beta/models/gemini-2.5-flash-001:streamGenerateContent", "gemini-2.5-flash-001", "streamGenerateContent", true},
		{"/v1beta/models/gemini-3-pro-preview:countTokens", "gemini-3-pro-preview", "countTokens", true},
		{"/v1beta/models/gemini-2.5-flash", "", "", false},
		{"/v1beta/models/a%2Fb:generateContent", "", "", false},
		{"/v1beta/models/../x:generateContent", "", "", false},
		{"/v1/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", "generateContent", true},
		{"/v2/models/gemini-2.5-flash:generateContent", "", "", false},
	} {
		m, meth, ok := gemini.ParsePath(c.path)
		if m != c.model || meth != c.method || ok != c.ok {
			t.Errorf("%s: %q %q %v", c.path, m, meth, ok)
		}
	}
	if p := gemini.Path(gemini.Version("/v1beta/models/x:y"), "gemini-2.5-pro", true); p != "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse" {
		t.Fatal(p)
	}
}

func TestPriceModel(t *testing.T) {
	for _, c := range []struct {
		model  string
		prompt int64
		want   string
	}{
		{"gemini-2.5-pro", 200_000, "gemini-2.5-pro"},
		{"gemini-2.5-pro", 200_001, "gemini-2.5-pro>200k"},
		{"models/gemini-2.5-pro-002", 300_000, "gemini-2.5-pro>200k"},
		{"gemini-2.5-flash", 900_000, "gemini-2.5-flash"},
		{"gemini-2.5-flash-latest", 1, "gemini-2.5-flash"},
		{"gemini-3-pro-preview", 250_000, "gemini-3-pro-preview>200k"},
		{"gemini-2.5-flash-preview-09-2025", 1, "gemini-2.5-flash-preview-09-2025"},
	} {
		if got := gemini.PriceModel(c.model, groundhog.Usage{InputTokens: c.prompt}); got != c.want {
			t.Errorf("%s at %d: %q, want %q", c.model, c.prompt, got, c.want)
		}
	}
}

func TestErrorsAndRequests(t *testing.T) {
	var e struct {
		Error gemini.Error `json:"error"`
	}
	if err := json.Unmarshal(gemini.ErrorBody(http.StatusTooManyRequests, "slow down"), &e); err != nil ||
		e.Error != (gemini.Error{Code: 429, Message: "slow down", Status: "RESOURCE_EXHAUSTED"}) {
		t.Fatalf("%+v %v", e, err)
	}
	for _, b := range []string{`[]`, `{"contents":"hi"}`, `{"contents":[]}`, `{"contents":[{"parts":[]}],"generationConfig":[]}`, `{`} {
		if _, err := gemini.FingerprintBody("m", []byte(b)); groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("%s: %v", b, err)
		}
	}
	fp, err := gemini.FingerprintBody("gemini-2.5-flash", []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	if err != nil || !strings.Contains(string(fp), `"model":"gemini-2.5-flash"`) {
		t.Fatalf("%s %v", fp, err)
	}
}
