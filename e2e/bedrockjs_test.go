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

	const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	cmd := exec.Command("node", "--no-warnings", "bedrock.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GROUNDHOG_URL="+gw.URL, "BEDROCK_MODEL="+model,
		"AWS_BEARER_TOKEN_BEDROCK="+strings.TrimSpace(string(key)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK run failed: %v\n%s", err, stderr.String())
	}
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
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("SDK output %q: %v", out, err)
	}
	t.Logf("SDK output: %s", bytes.TrimSpace(out))

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

	sv := got.SigV4
	if !sv.Refused || sv.Status != 401 || sv.Name != "UnrecognizedClientException" ||
		!strings.Contains(sv.Message, "bearer token") || !strings.Contains(sv.Message, "AWS_BEARER_TOKEN_BEDROCK") {
		t.Errorf("SigV4-signed Converse: want a 401 UnrecognizedClientException saying to send the bearer token; got %+v", sv)
	}

	// The ledger: five answered calls (the refused one is not a call), one
	// of them from the cache, four upstream; the spend is the sim's bill.
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
	if len(r.Operations) != 1 || r.Operations[0].Operation != "bedrock-js" {
		t.Fatalf("report operations: %s; want only bedrock-js", rep)
	}
	op := r.Operations[0]
	b := simBillUSD(t, simURL)
	spend, err := groundhog.ParseMoney(op.Spend.String())
	if err != nil {
		t.Fatal(err)
	}
	saved, err := groundhog.ParseMoney(op.Saved.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %d calls, %d cache hit(s), %d upstream, spend $%s, saved $%s; sim bill: %d calls, $%s",
		op.Calls, op.CacheHits, op.UpstreamCalls, spend, saved, b.Calls, b.USD)
	if op.Calls != 5 || op.CacheHits != 1 || op.UpstreamCalls != 4 || r.UnknownCost != 0 {
		t.Errorf("report: %d calls, %d cache hits, %d upstream, %d of unknown cost; want 5, 1, 4, 0", op.Calls, op.CacheHits, op.UpstreamCalls, r.UnknownCost)
	}
	if b.Calls != 4 || spend != b.USD || saved <= 0 {
		t.Errorf("spend $%s, saved $%s; sim bill %d calls $%s: want the spend to be the bill of 4 calls and a saving from the hit", spend, saved, b.Calls, b.USD)
	}
}
