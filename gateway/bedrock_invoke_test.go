package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// invokeBody is a native Anthropic body for Bedrock's InvokeModel.
func invokeBody(text string) []byte {
	return []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":` +
		mustJSON(text) + `}]}]}`)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// invokeText reads the text and usage of an InvokeModel answer: Anthropic's
// Messages body.
func invokeText(t *testing.T, body []byte) (string, map[string]any) {
	t.Helper()
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage map[string]any `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Type != "message" || len(m.Content) == 0 || m.Content[0].Text == "" {
		t.Fatalf("not an Anthropic message: %s (%v)", body, err)
	}
	return m.Content[0].Text, m.Usage
}

// invokeStreamText reads an InvokeModelWithResponseStream to its end
// through the SDK's decoder: every chunk is one Anthropic event; it returns
// the text of the deltas and whether message_stop came.
func invokeStreamText(t *testing.T, out *bedrockruntime.InvokeModelWithResponseStreamOutput) string {
	t.Helper()
	st := out.GetStream()
	defer st.Close()
	var b strings.Builder
	var types_ []string
	for ev := range st.Events() {
		chunk, ok := ev.(*types.ResponseStreamMemberChunk)
		if !ok {
			t.Fatalf("event %T, want a chunk", ev)
		}
		var e struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(chunk.Value.Bytes, &e); err != nil {
			t.Fatalf("chunk bytes %q: %v", chunk.Value.Bytes, err)
		}
		types_ = append(types_, e.Type)
		if e.Type == "content_block_delta" {
			b.WriteString(e.Delta.Text)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(types_) < 3 || types_[0] != "message_start" || types_[len(types_)-1] != "message_stop" {
		t.Fatalf("stream events %v", types_)
	}
	return b.String()
}

// TestBedrockSDKInvokeModelCachesAcrossStreamModes: InvokeModel with
// Anthropic's native body through the AWS SDK is cached: the same call
// again is a hit, and InvokeModelWithResponseStream with the same body is
// answered from the same entry in chunk events the SDK decodes — one
// upstream call in all, booked at the simulator's bill under the path's
// model id.
func TestBedrockSDKInvokeModelCachesAcrossStreamModes(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Cache": "use"})
	ctx := context.Background()
	in := &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"),
		Body: invokeBody("say hello through invoke")}
	first, err := cl.InvokeModel(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(first.ResultMetadata, "Groundhog-Cache"); got != "miss" {
		t.Fatalf("first call: Groundhog-Cache %q, want miss", got)
	}
	text, usage := invokeText(t, first.Body)
	if n, _ := usage["output_tokens"].(float64); n == 0 {
		t.Fatalf("usage missing: %v", usage)
	}
	second, err := cl.InvokeModel(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(second.ResultMetadata, "Groundhog-Cache"); got != "hit" {
		t.Fatalf("second call: Groundhog-Cache %q, want hit", got)
	}
	if again, _ := invokeText(t, second.Body); again != text {
		t.Fatal("the hit answered another text")
	}
	st, err := cl.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId: in.ModelId, ContentType: in.ContentType, Body: in.Body})
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(st.ResultMetadata, "Groundhog-Cache"); got != "hit" {
		t.Fatalf("stream call: Groundhog-Cache %q, want hit", got)
	}
	if streamed := invokeStreamText(t, st); streamed != text {
		t.Fatalf("stream from the cache: %q, want %q", streamed, text)
	}
	bill := h.Sim.Bill() // exact
	if bill.Calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", bill.Calls)
	}
	var spent groundhog.Money
	outcomes := map[groundhog.Outcome]int{}
	for _, r := range h.ledgerRows() {
		outcomes[r.Outcome]++
		if r.Model != bedrockModel || r.Shape != groundhog.ShapeMessages {
			t.Errorf("row model %q shape %q, want %q as messages", r.Model, r.Shape, bedrockModel)
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

// TestBedrockSDKInvokeStreamCoalesces: 8 identical
// InvokeModelWithResponseStream calls at once (one SDK client each) make
// one upstream call; every one decodes the whole stream.
func TestBedrockSDKInvokeStreamCoalesces(t *testing.T) {
	g := newGate()
	h := newHarness(t, withBedrockPrices(), withGate(g))
	const n = 8
	body := invokeBody("eight invokes at once")
	fp, err := bedrock.InvokeFingerprintBody(bedrockModel, body)
	if err != nil {
		t.Fatal(err)
	}
	hash := hashOf(t, "messages", string(fp))
	clients := make([]*bedrockruntime.Client, n)
	for i := range clients {
		clients[i] = bedrockClient(t, h, map[string]string{"Groundhog-Cache": "use"})
	}
	texts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := clients[i].InvokeModelWithResponseStream(context.Background(), &bedrockruntime.InvokeModelWithResponseStreamInput{
				ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: body})
			if err != nil {
				t.Error(err)
				return
			}
			texts[i] = invokeStreamText(t, out)
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

// TestBedrockSDKInvokeIdempotentReplay: a retried InvokeModel with the same
// Idempotency-Key is replayed, not paid again.
func TestBedrockSDKInvokeIdempotentReplay(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Idempotency-Key": "invoke-order-7"})
	in := &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"),
		Body: invokeBody("place the invoke order once")}
	first, err := cl.InvokeModel(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.InvokeModel(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(again.ResultMetadata, "Idempotent-Replayed"); got != "true" {
		t.Fatalf("Idempotent-Replayed %q, want true", got)
	}
	a, _ := invokeText(t, first.Body)
	b, _ := invokeText(t, again.Body)
	if a != b {
		t.Fatal("the replay answered another text")
	}
	if calls := h.bill().Calls; calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", calls)
	}
}

// TestBedrockSDKInvokeExceptions: a simulated throttle on InvokeModel
// reaches the SDK as a ThrottlingException, and a native body without
// max_tokens is the simulator's ValidationException.
func TestBedrockSDKInvokeExceptions(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Sim-Fault": "status=429"})
	_, err := cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
		ContentType: aws.String("application/json"), Body: invokeBody("too fast")})
	var throttled *types.ThrottlingException
	if !errors.As(err, &throttled) {
		t.Fatalf("error %v (%T), want a ThrottlingException", err, err)
	}
	plain := bedrockClient(t, h, nil)
	_, err = plain.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
		ContentType: aws.String("application/json"), Body: []byte(`{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":"hi"}]}`)})
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) {
		t.Fatalf("error %v (%T), want a ValidationException", err, err)
	}
}
