package gateway_test

import (
	"context"
	"errors"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/groundhog-ai/groundhog"
)

// longSystem is a system prompt over the simulated models' 1,024-token
// prompt-cache minimum.
var longSystem = strings.Repeat("You are a careful assistant for the shipping desk. ", 300)

func cachedTurn(question string, points int) *bedrockruntime.ConverseInput {
	sys := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: longSystem}}
	for range points {
		sys = append(sys, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
	}
	return &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), System: sys, Messages: userMessage(question)}
}

// TestBedrockPromptCacheCostMatchesBill: a cachePoint after a long system
// prompt writes the prefix on the first call and reads it on the next
// (usage cacheWriteInputTokens, then cacheReadInputTokens, seen by the
// SDK); the cachePoint leaves the request hash; every ledger figure
// equals the simulator's bill to the micro-dollar; five cachePoints are a
// ValidationException.
func TestBedrockPromptCacheCostMatchesBill(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, nil)
	ctx := context.Background()
	first, err := cl.Converse(ctx, cachedTurn("where is parcel 1?", 1))
	if err != nil {
		t.Fatal(err)
	}
	if w := aws.ToInt32(first.Usage.CacheWriteInputTokens); w < 1024 {
		t.Fatalf("first call wrote %d tokens to the prompt cache, want the system prompt", w)
	}
	second, err := cl.Converse(ctx, cachedTurn("where is parcel 2?", 1))
	if err != nil {
		t.Fatal(err)
	}
	if r := aws.ToInt32(second.Usage.CacheReadInputTokens); r != aws.ToInt32(first.Usage.CacheWriteInputTokens) {
		t.Fatalf("second call read %d tokens, want the %d written", r, aws.ToInt32(first.Usage.CacheWriteInputTokens))
	}
	withPoint, err := cl.Converse(ctx, cachedTurn("same inputs?", 1))
	if err != nil {
		t.Fatal(err)
	}
	without, err := cl.Converse(ctx, cachedTurn("same inputs?", 0))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := responseHeader(withPoint.ResultMetadata, "Groundhog-Request-Hash"), responseHeader(without.ResultMetadata, "Groundhog-Request-Hash"); a == "" || a != b {
		t.Fatalf("request hash with a cachePoint %q, without %q", a, b)
	}
	_, err = cl.Converse(ctx, cachedTurn("too many", 5))
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) {
		t.Fatalf("five cachePoints: %v, want a ValidationException", err)
	}
	bill := h.Sim.Bill()
	var cost groundhog.Money
	var u groundhog.Usage
	for _, r := range h.ledgerRows() {
		if r.Outcome == groundhog.OutcomeUpstream {
			cost += r.Cost
			u = u.Add(r.Usage)
		}
	}
	if cost != bill.USD || !cost.Known() {
		t.Fatalf("ledger cost %s, simulator bill %s", cost, bill.USD)
	}
	if u.CachedInputTokens != bill.CachedInputTokens || u.CacheWriteTokens != bill.CacheWriteTokens || u.InputTokens != bill.InputTokens || u.OutputTokens != bill.OutputTokens {
		t.Fatalf("ledger usage %+v, bill %+v", u, bill)
	}
}

// TestBedrockPassthroughRoutes: InvokeModel with a body that is not
// Anthropic's native one reaches the provider through the gateway as it is
// (the simulator only models Anthropic bodies: its ValidationException
// comes back to the SDK) and is ledgered as passthrough, with the path's
// model id.
func TestBedrockPassthroughRoutes(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, nil)
	_, err := cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
		ContentType: aws.String("application/json"), Body: []byte(`{"inputText":"hello","textGenerationConfig":{"maxTokenCount":10}}`)})
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "anthropic_version") {
		t.Fatalf("InvokeModel: %v, want the provider's ValidationException", err)
	}
	rows := h.ledgerRows()
	if len(rows) != 1 || rows[0].Outcome != groundhog.OutcomePassthrough || rows[0].Model != bedrockModel || rows[0].Provider != "sim" {
		t.Fatalf("rows %+v", rows)
	}
}

// TestBedrockStreamBrokenUpstream: a ConverseStream whose upstream
// connection breaks mid-stream never looks complete to the SDK (it ends
// with an exception or a broken connection) and is not cached: the same
// call again goes upstream.
func TestBedrockStreamBrokenUpstream(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Sim-Fault": "reset-mid-stream", "Groundhog-Cache": "use"})
	for range 2 {
		out, err := cl.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: userMessage("break it")})
		if err != nil {
			t.Fatal(err)
		}
		st := out.GetStream()
		stopped := false
		for ev := range st.Events() {
			if _, ok := ev.(*types.ConverseStreamOutputMemberMessageStop); ok {
				stopped = true
			}
		}
		if st.Err() == nil || stopped {
			t.Fatalf("broken stream: err %v, messageStop seen %v", st.Err(), stopped)
		}
		st.Close()
	}
	if calls := h.bill().Calls; calls != 2 {
		t.Fatalf("upstream calls = %d, want 2 (a broken stream is never cached)", calls)
	}
}

// TestBedrockUpstreamSigV4: with a signer (no Bedrock API key), every
// Converse call goes upstream signed with SigV4 for the bedrock service in
// the configured region, over the exact body sent, and the client's own
// X-Amz-* headers are not forwarded.
func TestBedrockUpstreamSigV4(t *testing.T) {
	type seen struct{ auth, date, sha, clientHdr string }
	got := make(chan seen, 1)
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date"), r.Header.Get("X-Amz-Content-Sha256"), r.Header.Get("X-Amz-Client-Thing")}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"signed"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4},"metrics":{"latencyMs":1}}`))
	}))
	t.Cleanup(sim.Close)
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, nil
	})
	up := gateway.Upstream{BaseURL: sim.URL, Provider: "bedrock", Sign: bedrock.NewSigner(creds, "eu-west-3", nil)}
	h := newHarness(t, withBedrockPrices(), func(s *setup) { s.bedrock = &up })
	cl := bedrockClient(t, h, map[string]string{"X-Amz-Client-Thing": "mine"})
	out, err := cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("arn:aws:bedrock:eu-west-3:1:inference-profile/eu.m"), Messages: userMessage("sign me")})
	if err != nil {
		t.Fatal(err)
	}
	if converseText(t, out) != "signed" {
		t.Fatal("wrong answer")
	}
	s := <-got
	if !strings.HasPrefix(s.auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(s.auth, "/eu-west-3/bedrock/aws4_request") || s.date == "" {
		t.Fatalf("upstream Authorization %q X-Amz-Date %q", s.auth, s.date)
	}
	if s.clientHdr != "" {
		t.Fatalf("the client's X-Amz-* header reached the provider: %q", s.clientHdr)
	}
}

// TestBedrockPromptCacheKeyNotInjected: Groundhog-Prompt-Cache-Key: auto
// writes no prompt_cache_key into a Converse body (Bedrock has no such
// member and would refuse the request).
func TestBedrockPromptCacheKeyNotInjected(t *testing.T) {
	sent := make(chan []byte, 1)
	h := newHarness(t, withBedrockPrices(), func(s *setup) {
		s.tap = func(path string, body []byte) {
			if strings.HasPrefix(path, "/model/") {
				sent <- body
			}
		}
	})
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Prompt-Cache-Key": "auto", "Groundhog-Operation": "support"})
	if _, err := cl.Converse(context.Background(), cachedTurn("key?", 1)); err != nil {
		t.Fatal(err)
	}
	if b := <-sent; strings.Contains(string(b), "prompt_cache_key") {
		t.Fatalf("upstream body carries a prompt_cache_key: %s", b)
	}
}
