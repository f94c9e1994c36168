package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// bedrockModel is a Bedrock model id with a cross-region inference
// profile prefix; the tests price it in the gateway's and the simulated
// provider's table alike.
const bedrockModel = "us.sim.converse-small-v1:0"

func withBedrockPrices() harnessOpt {
	return withConfig(func(c *config.Config) {
		c.Prices = map[string]pricing.YAMLPrice{bedrockModel: {Input: "3.00", CachedInput: "0.30", CacheWrite: "3.75", Output: "15.00"}}
	})
}

// bedrockClient is the AWS SDK for Go v2 bedrockruntime client pointed at
// the gateway (served over TLS: the SDK's bearer-token mode insists on
// HTTPS) with the gateway key as its bearer token, as AWS_BEARER_TOKEN_BEDROCK
// sets it. headers are added to every request.
func bedrockClient(t *testing.T, h *harness, headers map[string]string) *bedrockruntime.Client {
	t.Helper()
	srv := httptest.NewTLSServer(h.GW)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "any-key-while-keyless")
	return bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
		APIOptions: []func(*middleware.Stack) error{func(s *middleware.Stack) error {
			for k, v := range headers {
				if err := smithyhttp.AddHeaderValue(k, v)(s); err != nil {
					return err
				}
			}
			return nil
		}},
	})
}

func userMessage(text string) []types.Message {
	return []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: text}}}}
}

func responseHeader(md middleware.Metadata, name string) string {
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		return r.Header.Get(name)
	}
	return ""
}

func converseText(t *testing.T, out *bedrockruntime.ConverseOutput) string {
	t.Helper()
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok || len(msg.Value.Content) == 0 {
		t.Fatalf("no message in %#v", out.Output)
	}
	txt, ok := msg.Value.Content[0].(*types.ContentBlockMemberText)
	if !ok || txt.Value == "" {
		t.Fatalf("first block is not text: %#v", msg.Value.Content[0])
	}
	return txt.Value
}

// streamText reads a ConverseStream to its end through the SDK's decoder
// and returns the text and the metadata event's usage.
func streamText(t *testing.T, out *bedrockruntime.ConverseStreamOutput) (string, *types.TokenUsage) {
	t.Helper()
	st := out.GetStream()
	defer st.Close()
	var b strings.Builder
	var usage *types.TokenUsage
	sawStart, sawStop := false, false
	for ev := range st.Events() {
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			sawStart = true
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			if d, ok := e.Value.Delta.(*types.ContentBlockDeltaMemberText); ok {
				b.WriteString(d.Value)
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			sawStop = true
		case *types.ConverseStreamOutputMemberMetadata:
			usage = e.Value.Usage
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if !sawStart || !sawStop || usage == nil {
		t.Fatalf("stream incomplete: start %v stop %v usage %v", sawStart, sawStop, usage)
	}
	return b.String(), usage
}

// TestBedrockSDKConverseCachesAcrossStreamModes: Converse through the AWS
// SDK, the same call again is a hit, and ConverseStream with the same
// inputs is answered from the same entry, decoded by the SDK's eventstream
// reader — one upstream call in all, booked at the simulator's bill.
func TestBedrockSDKConverseCachesAcrossStreamModes(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Cache": "use"})
	ctx := context.Background()
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("say hello to the bedrock shape")}
	first, err := cl.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(first.ResultMetadata, "Groundhog-Cache"); got != "miss" {
		t.Fatalf("first call: Groundhog-Cache %q, want miss", got)
	}
	text := converseText(t, first)
	if first.Usage == nil || aws.ToInt32(first.Usage.OutputTokens) == 0 {
		t.Fatalf("usage missing: %#v", first.Usage)
	}
	second, err := cl.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(second.ResultMetadata, "Groundhog-Cache"); got != "hit" {
		t.Fatalf("second call: Groundhog-Cache %q, want hit", got)
	}
	if converseText(t, second) != text {
		t.Fatal("the hit answered another text")
	}
	st, err := cl.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages})
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(st.ResultMetadata, "Groundhog-Cache"); got != "hit" {
		t.Fatalf("stream call: Groundhog-Cache %q, want hit", got)
	}
	streamed, usage := streamText(t, st)
	if streamed != text || aws.ToInt32(usage.OutputTokens) != aws.ToInt32(first.Usage.OutputTokens) {
		t.Fatalf("stream from the cache: %q (usage %d), want %q", streamed, aws.ToInt32(usage.OutputTokens), text)
	}
	bill := h.bill()
	if bill.Calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", bill.Calls)
	}
	var spent groundhog.Money
	outcomes := map[groundhog.Outcome]int{}
	for _, r := range h.ledgerRows() {
		outcomes[r.Outcome]++
		if r.Shape != groundhog.ShapeConverse || r.Model != bedrockModel {
			t.Errorf("row shape %q model %q", r.Shape, r.Model)
		}
		spent += r.Cost
	}
	if outcomes[groundhog.OutcomeUpstream] != 1 || outcomes[groundhog.OutcomeCacheHit] != 2 {
		t.Fatalf("outcomes %v", outcomes)
	}
	if spent != bill.USD || !spent.Known() || spent == 0 {
		t.Fatalf("ledger cost %s, simulator bill %s", spent, bill.USD)
	}
}

// TestBedrockSDKConverseStreamCoalesces: 8 identical ConverseStream calls
// at once make one upstream call; every one decodes the whole stream.
func TestBedrockSDKConverseStreamCoalesces(t *testing.T) {
	g := newGate()
	h := newHarness(t, withBedrockPrices(), withGate(g))
	const n = 8
	// One client per caller: the SDK's stream decoder is not meant to be
	// shared by concurrent streams.
	clients := make([]*bedrockruntime.Client, n)
	for i := range clients {
		clients[i] = bedrockClient(t, h, map[string]string{"Groundhog-Cache": "use"})
	}
	msgs := userMessage("eight at once")
	fp, err := bedrock.FingerprintBody(bedrockModel, []byte(`{"messages":[{"role":"user","content":[{"text":"eight at once"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	hash := hashOf(t, "converse", string(fp))
	texts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := clients[i].ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: msgs})
			if err != nil {
				t.Error(err)
				return
			}
			texts[i], _ = streamText(t, out)
		}()
	}
	waitFor(t, func() bool { return h.GW.Followers("local", hash) == n-1 })
	g.open()
	wg.Wait()
	for i := range texts {
		if texts[i] == "" || texts[i] != texts[0] {
			t.Fatalf("caller %d got %q, caller 0 %q", i, texts[i], texts[0])
		}
	}
	if calls := h.bill().Calls; calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", calls)
	}
}

// TestBedrockSDKIdempotentReplay: a retried Converse with the same
// Idempotency-Key is replayed, not paid again.
func TestBedrockSDKIdempotentReplay(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Idempotency-Key": "order-42"})
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("place the order once")}
	first, err := cl.Converse(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.Converse(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(again.ResultMetadata, "Idempotent-Replayed"); got != "true" {
		t.Fatalf("Idempotent-Replayed %q, want true", got)
	}
	if converseText(t, again) != converseText(t, first) {
		t.Fatal("the replay answered another text")
	}
	if calls := h.bill().Calls; calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", calls)
	}
}

// TestBedrockExceptions: a simulated throttle reaches the SDK as a
// ThrottlingException (status 429, x-amzn-errortype), and a SigV4-signed
// request is refused with a 401 that says to send a bearer token.
func TestBedrockExceptions(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Sim-Fault": "status=429"})
	_, err := cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("too fast")})
	var throttled *types.ThrottlingException
	if !errors.As(err, &throttled) {
		var api smithy.APIError
		errors.As(err, &api)
		t.Fatalf("error %v (%T), want a ThrottlingException", err, api)
	}
	res, body := h.post(bedrock.Path(bedrockModel, false), `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`,
		map[string]string{"Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261205/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc"})
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("X-Amzn-Errortype") == "" || !strings.Contains(string(body), "bearer") {
		t.Fatalf("SigV4 request: %d %s %s", res.StatusCode, res.Header.Get("X-Amzn-Errortype"), body)
	}
}
