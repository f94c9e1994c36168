package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// bedrockJSDir prepares the pinned AWS SDK for JavaScript v3 Bedrock
// Runtime client of testdata/bedrock-js.
func bedrockJSDir(t *testing.T) string {
	return npmDir(t, "bedrock-js", "the AWS SDK for JavaScript", "bedrock.mjs", filepath.Join("@aws-sdk", "client-bedrock-runtime"))
}

// bedrockJSUsage is a Converse usage object as the SDK returns it.
type bedrockJSUsage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// TestBedrockJSSDKThroughGroundhog drives `groundhog serve` (on its
// built-in simulated provider) with the AWS SDK for JavaScript v3 Bedrock
// Runtime client (pinned in testdata/bedrock-js), configured as a user
// would: a custom endpoint and a gateway key in AWS_BEARER_TOKEN_BEDROCK.
// Converse answers with text and usage and, asked twice with
// Groundhog-Cache: use, from groundhog's cache the second time;
// ConverseStream's eventstream decodes in the SDK into the same text as
// the non-streamed call; InvokeModel with Anthropic's native body answers
// Anthropic's JSON; the same SDK signing with SigV4 is refused with a 401
// that says to send the bearer token. The report then counts the calls
// and the cache hit, and its spend is the simulated provider's bill.
func TestBedrockJSSDKThroughGroundhog(t *testing.T) {
	dir := bedrockJSDir(t)
	sv := startSDKServe(t)

	const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	var got struct {
		Converse struct {
			Text       string         `json:"text"`
			StopReason string         `json:"stopReason"`
			Usage      bedrockJSUsage `json:"usage"`
			Status     int            `json:"status"`
			Cache      string         `json:"cache"`
		} `json:"converse"`
		Cached struct {
			Text  string         `json:"text"`
			Usage bedrockJSUsage `json:"usage"`
			Cache string         `json:"cache"`
		} `json:"cached"`
		Stream struct {
			Events     []string        `json:"events"`
			Text       string          `json:"text"`
			StopReason string          `json:"stopReason"`
			Usage      *bedrockJSUsage `json:"usage"`
		} `json:"stream"`
		StreamTwin string `json:"streamTwin"`
		Invoke     struct {
			Type       string `json:"type"`
			Role       string `json:"role"`
			Text       string `json:"text"`
			StopReason string `json:"stopReason"`
			Usage      struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		} `json:"invoke"`
		SigV4 struct {
			Refused bool   `json:"refused"`
			Name    string `json:"name"`
			Message string `json:"message"`
			Status  int    `json:"status"`
		} `json:"sigv4"`
	}
	runNode(t, dir, "bedrock.mjs", &got, "GROUNDHOG_URL="+sv.gw.URL, "BEDROCK_MODEL="+model, "AWS_BEARER_TOKEN_BEDROCK="+sv.key)

	c := got.Converse
	if c.Status != 200 || c.Text == "" || c.StopReason != "end_turn" || c.Usage.InputTokens == 0 ||
		c.Usage.OutputTokens == 0 || c.Usage.TotalTokens != c.Usage.InputTokens+c.Usage.OutputTokens || c.Cache != "miss" {
		t.Errorf("Converse: want 200, text, end_turn, usage and groundhog-cache: miss; got %+v", c)
	}
	if got.Cached.Cache != "hit" || got.Cached.Text != c.Text || got.Cached.Usage != c.Usage {
		t.Errorf("the repeated Converse with Groundhog-Cache: use: want a hit with the first answer and usage; got %+v (first %+v)", got.Cached, c)
	}

	s := got.Stream
	ev := strings.Join(s.Events, ",")
	if len(s.Events) < 4 || s.Events[0] != "messageStart" || !strings.Contains(ev, "contentBlockDelta") ||
		s.Events[len(s.Events)-2] != "messageStop" || s.Events[len(s.Events)-1] != "metadata" {
		t.Errorf("ConverseStream events: %v; want messageStart, contentBlockDelta…, messageStop, metadata", s.Events)
	}
	if s.Text == "" || s.Text != got.StreamTwin || s.StopReason != "end_turn" {
		t.Errorf("ConverseStream text %q (stop %q); want the non-streamed answer %q", s.Text, s.StopReason, got.StreamTwin)
	}
	if s.Usage == nil || s.Usage.InputTokens == 0 || s.Usage.OutputTokens == 0 {
		t.Errorf("ConverseStream metadata usage: %+v", s.Usage)
	}

	iv := got.Invoke
	if iv.Type != "message" || iv.Role != "assistant" || iv.Text == "" || iv.StopReason != "end_turn" ||
		iv.Usage.InputTokens == 0 || iv.Usage.OutputTokens == 0 {
		t.Errorf("InvokeModel with Anthropic's body: %+v", iv)
	}

	sig := got.SigV4
	if !sig.Refused || sig.Status != 401 || sig.Name != "UnrecognizedClientException" ||
		!strings.Contains(sig.Message, "bearer token") || !strings.Contains(sig.Message, "AWS_BEARER_TOKEN_BEDROCK") {
		t.Errorf("SigV4-signed Converse: want a 401 UnrecognizedClientException saying to send the bearer token; got %+v", sig)
	}

	// The ledger: five answered calls (the refused one is not a call), one
	// of them from the cache, four upstream; the spend is the sim's bill.
	ops, spend, unknown := sdkReport(t, sv.db)
	if len(ops) != 1 || ops[0].Operation != "bedrock-js" {
		t.Fatalf("report operations: %+v; want only bedrock-js", ops)
	}
	op := ops[0]
	b := simBillUSD(t, sv.simURL)
	saved := money(t, op.Saved)
	t.Logf("report: %d calls, %d cache hit(s), %d upstream, spend $%s, saved $%s; sim bill: %d calls, $%s",
		op.Calls, op.CacheHits, op.UpstreamCalls, spend, saved, b.Calls, b.USD)
	if op.Calls != 5 || op.CacheHits != 1 || op.UpstreamCalls != 4 || unknown != 0 {
		t.Errorf("report: %d calls, %d cache hits, %d upstream, %d of unknown cost; want 5, 1, 4, 0", op.Calls, op.CacheHits, op.UpstreamCalls, unknown)
	}
	if b.Calls != 4 || spend != b.USD || saved <= 0 {
		t.Errorf("spend $%s, saved $%s; sim bill %d calls $%s: want the spend to be the bill of 4 calls and a saving from the hit", spend, saved, b.Calls, b.USD)
	}
}
