package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	db := filepath.Join(t.TempDir(), "g.db")
	key, err := exec.Command(binary, "keys", "create", "--tenant", "acme", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--db", db)
	m := regexp.MustCompile(`bill at (http://\S+/sim/v1/bill)\)`).FindStringSubmatch(gw.output())
	if m == nil {
		t.Fatalf("serve did not print the simulated provider's bill URL:\n%s", gw.output())
	}
	simURL := strings.TrimSuffix(m[1], "/sim/v1/bill")

	cmd := exec.Command("node", "--no-warnings", "gemini.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GROUNDHOG_URL="+gw.URL, "GEMINI_MODEL=gemini-2.5-flash",
		"GROUNDHOG_KEY="+strings.TrimSpace(string(key)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK run failed: %v\n%s", err, stderr.String())
	}
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
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("SDK output %q: %v", out, err)
	}
	t.Logf("SDK output: %s", bytes.TrimSpace(out))

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
	rep, err := exec.Command(binary, "report", "--format", "json", "--db", db).Output()
	if err != nil {
		t.Fatalf("report: %v %s", err, rep)
	}
	var r struct {
		UnknownCost int `json:"unknown_cost_calls"`
		Operations  []struct {
			Operation     string      `json:"operation"`
			Calls         int64       `json:"calls"`
			CacheHits     int64       `json:"cache_hits"`
			UpstreamCalls int64       `json:"upstream_calls"`
			Spend         json.Number `json:"spend_usd"`
			Saved         json.Number `json:"saved_usd"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(rep, &r); err != nil {
		t.Fatalf("report output: %v %s", err, rep)
	}
	var spend, saved groundhog.Money
	var calls, hits, upstream int64
	for _, op := range r.Operations {
		s, err := groundhog.ParseMoney(op.Spend.String())
		if err != nil {
			t.Fatal(err)
		}
		spend += s
		if op.Operation != "gemini-js" {
			continue
		}
		if saved, err = groundhog.ParseMoney(op.Saved.String()); err != nil {
			t.Fatal(err)
		}
		calls, hits, upstream = op.Calls, op.CacheHits, op.UpstreamCalls
	}
	b := simBillUSD(t, simURL)
	t.Logf("gemini-js: %d calls, %d cache hit(s), %d upstream, saved $%s; total spend $%s; sim bill: %d calls, $%s",
		calls, hits, upstream, saved, spend, b.Calls, b.USD)
	if calls != 5 || hits != 1 || upstream != 3 || b.Calls != 3 || r.UnknownCost != 0 {
		t.Errorf("report: %d calls, %d cache hits, %d upstream (sim: %d calls), %d of unknown cost; want 5, 1, 3 (3), 0", calls, hits, upstream, b.Calls, r.UnknownCost)
	}
	if spend != b.USD || saved <= 0 {
		t.Errorf("spend $%s, saved $%s; sim bill %d calls $%s: want the spend to be the bill and a saving from the hit", spend, saved, b.Calls, b.USD)
	}
}
