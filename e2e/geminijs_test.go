package e2e

import (
	"path/filepath"
	"testing"

	"github.com/groundhog-ai/groundhog"
)

// geminiJSDir prepares the pinned Google Gen AI SDK for JavaScript of
// testdata/gemini-js.
func geminiJSDir(t *testing.T) string {
	return npmDir(t, "gemini-js", "the Google Gen AI SDK for JavaScript", "gemini.mjs", filepath.Join("@google", "genai"))
}

// geminiJSUsage is a usageMetadata object as the SDK returns it.
type geminiJSUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
}

// TestGeminiJSSDKThroughGroundhog drives `groundhog serve` (on its
// built-in simulated provider) with the Google Gen AI SDK for JavaScript
// (@google/genai, pinned in testdata/gemini-js), configured as a user
// would: the gateway key as apiKey and groundhog's URL as
// httpOptions.baseUrl. generateContent answers with text and usage and,
// asked twice with Groundhog-Cache: use, from groundhog's cache the second
// time (the Groundhog-Cache response header, read by the SDK);
// generateContentStream's SSE chunks decode in the SDK into the same text
// as the non-streamed call; countTokens passes through; an unknown key is
// refused with a 401. The report then counts the calls and the cache hit,
// and its spend is the simulated provider's bill.
func TestGeminiJSSDKThroughGroundhog(t *testing.T) {
	dir := geminiJSDir(t)
	sv := startSDKServe(t)
	var got struct {
		Generate struct {
			Text         string        `json:"text"`
			FinishReason string        `json:"finishReason"`
			Usage        geminiJSUsage `json:"usage"`
			Cache        string        `json:"cache"`
		} `json:"generate"`
		Cached struct {
			Text  string        `json:"text"`
			Usage geminiJSUsage `json:"usage"`
			Cache string        `json:"cache"`
		} `json:"cached"`
		Stream struct {
			Chunks       int            `json:"chunks"`
			Text         string         `json:"text"`
			FinishReason string         `json:"finishReason"`
			Usage        *geminiJSUsage `json:"usage"`
		} `json:"stream"`
		StreamTwin  string `json:"streamTwin"`
		CountTokens struct {
			TotalTokens int `json:"totalTokens"`
		} `json:"countTokens"`
		BadKey struct {
			Refused bool   `json:"refused"`
			Status  int    `json:"status"`
			Message string `json:"message"`
		} `json:"badKey"`
	}
	runNode(t, dir, "gemini.mjs", &got, "GROUNDHOG_URL="+sv.gw.URL, "GEMINI_MODEL=gemini-2.5-flash", "GROUNDHOG_KEY="+sv.key)

	g := got.Generate
	if g.Text == "" || g.FinishReason != "STOP" || g.Usage.PromptTokenCount == 0 || g.Usage.CandidatesTokenCount == 0 ||
		g.Usage.TotalTokenCount != g.Usage.PromptTokenCount+g.Usage.CandidatesTokenCount || g.Cache != "miss" {
		t.Errorf("generateContent: want text, STOP, usage and groundhog-cache: miss; got %+v", g)
	}
	if got.Cached.Cache != "hit" || got.Cached.Text != g.Text || got.Cached.Usage != g.Usage {
		t.Errorf("the repeated generateContent with Groundhog-Cache: use: want a hit with the first answer and usage; got %+v (first %+v)", got.Cached, g)
	}
	s := got.Stream
	if s.Chunks < 2 || s.Text == "" || s.Text != got.StreamTwin || s.FinishReason != "STOP" {
		t.Errorf("generateContentStream: %d chunks, text %q (finish %q); want several chunks of the non-streamed answer %q", s.Chunks, s.Text, s.FinishReason, got.StreamTwin)
	}
	if s.Usage == nil || s.Usage.PromptTokenCount == 0 || s.Usage.CandidatesTokenCount == 0 {
		t.Errorf("generateContentStream usage: %+v", s.Usage)
	}
	if got.CountTokens.TotalTokens <= 0 {
		t.Errorf("countTokens: %+v", got.CountTokens)
	}
	if b := got.BadKey; !b.Refused || b.Status != 401 {
		t.Errorf("an unknown key: want a 401 the SDK raises; got %+v", b)
	}

	// The ledger: five calls on the operation — four generate calls, one
	// of them from the cache, and the countTokens passthrough (free, not
	// on the bill) — three generate calls upstream; the spend is the
	// sim's bill.
	ops, spend, unknown := sdkReport(t, sv.db)
	var saved groundhog.Money
	var calls, hits, upstream int64
	for _, op := range ops {
		if op.Operation == "gemini-js" {
			saved, calls, hits, upstream = money(t, op.Saved), op.Calls, op.CacheHits, op.UpstreamCalls
		}
	}
	b := simBillUSD(t, sv.simURL)
	t.Logf("gemini-js: %d calls, %d cache hit(s), %d upstream, saved $%s; total spend $%s; sim bill: %d calls, $%s",
		calls, hits, upstream, saved, spend, b.Calls, b.USD)
	if calls != 5 || hits != 1 || upstream != 3 || b.Calls != 3 || unknown != 0 {
		t.Errorf("report: %d calls, %d cache hits, %d upstream (sim: %d calls), %d of unknown cost; want 5, 1, 3 (3), 0", calls, hits, upstream, b.Calls, unknown)
	}
	if spend != b.USD || saved <= 0 {
		t.Errorf("spend $%s, saved $%s; sim bill %d calls $%s: want the spend to be the bill and a saving from the hit", spend, saved, b.Calls, b.USD)
	}
}
