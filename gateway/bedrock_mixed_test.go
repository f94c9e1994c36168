package gateway_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// invokeCachedBody is a native Anthropic body whose long system prompt
// carries a cache_control breakpoint.
func invokeCachedBody(question string) []byte {
	b, err := json.Marshal(map[string]any{
		"anthropic_version": "bedrock-2023-05-31", "max_tokens": 48,
		"system":   []any{map[string]any{"type": "text", "text": longSystem, "cache_control": map[string]string{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": question}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// TestBedrockMixedWorkloadCostMatchesBill: a Bedrock workload of Converse
// calls with cachePoints, InvokeModel calls with cache_control and calls to
// the OpenAI-compatible endpoint, with repeats answered from the cache:
// the prompt cache is written then read on both Bedrock APIs, and the
// report's spend, upstream calls and token counts equal the simulator's
// bill exactly.
func TestBedrockMixedWorkloadCostMatchesBill(t *testing.T) {
	h := newHarness(t, withBedrockPrices(), withOpenAIOnBedrock())
	ctx := context.Background()
	conv := bedrockClient(t, h, map[string]string{"Groundhog-Operation": "converse", "Groundhog-Cache": "use"})
	inv := bedrockClient(t, h, map[string]string{"Groundhog-Operation": "invoke", "Groundhog-Cache": "use"})
	oai := openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("Groundhog-Operation", "openai-compatible"), option.WithHeader("Groundhog-Cache", "use"))

	var convRead, invRead int64
	for i, q := range []string{"parcel 1?", "parcel 2?", "parcel 2?"} { // the last is a repeat: a hit
		out, err := conv.Converse(ctx, cachedTurn(q, 1))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			convRead = int64(aws.ToInt32(out.Usage.CacheReadInputTokens))
		}
	}
	for i, q := range []string{"invoice 1?", "invoice 2?", "invoice 2?"} {
		out, err := inv.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
			ContentType: aws.String("application/json"), Body: invokeCachedBody(q)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			var m struct {
				Usage struct {
					CacheRead int64 `json:"cache_read_input_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(out.Body, &m); err != nil {
				t.Fatal(err)
			}
			invRead = m.Usage.CacheRead
		}
	}
	for _, q := range []string{"summary 1", "summary 2", "summary 2"} {
		if _, err := oai.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: gptOSS,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}); err != nil {
			t.Fatal(err)
		}
	}
	if convRead < 1024 || invRead < 1024 {
		t.Fatalf("prompt cache reads: Converse %d, InvokeModel %d tokens; want the long system prompt", convRead, invRead)
	}
	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	bill := h.Sim.Bill()
	var total groundhog.Total
	var upstream int64
	for _, op := range rep.Operations {
		total = total.Plus(op.Spend)
		upstream += int64(op.UpstreamCalls)
	}
	if len(rep.Operations) != 3 || upstream != bill.Calls || bill.Calls != 6 {
		t.Fatalf("report: %d operations, %d upstream calls; simulator: %d calls", len(rep.Operations), upstream, bill.Calls)
	}
	spend, ok := total.Money()
	if !ok || spend != bill.USD || spend == 0 {
		t.Fatalf("report spend %s, simulator bill %s", spend, bill.USD)
	}
	var u groundhog.Usage
	for _, r := range h.ledgerRows() {
		u = u.Add(r.Usage)
	}
	if u.InputTokens != bill.InputTokens || u.CachedInputTokens != bill.CachedInputTokens ||
		u.CacheWriteTokens != bill.CacheWriteTokens || u.OutputTokens != bill.OutputTokens {
		t.Fatalf("ledger usage %+v, bill %+v", u, bill)
	}
}

// TestBedrockInvokeBreakpointInjection: with breakpoint injection on, an
// InvokeModel agent loop over a long system prompt without cache_control
// gets its breakpoints placed by the gateway: the second turn reads the
// prefix from the prompt cache, and the request hash is the client's body's.
func TestBedrockInvokeBreakpointInjection(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	cl := bedrockClient(t, h, map[string]string{"Groundhog-Prompt-Cache-Breakpoints": "auto"})
	body := func(q string) []byte {
		b, _ := json.Marshal(map[string]any{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 32,
			"system": longSystem, "messages": []any{map[string]any{"role": "user", "content": q}}})
		return b
	}
	var read int64
	for i, q := range []string{"turn 1", "turn 2"} {
		b := body(q)
		out, err := cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel),
			ContentType: aws.String("application/json"), Body: b})
		if err != nil {
			t.Fatal(err)
		}
		fp, err := bedrock.InvokeFingerprintBody(bedrockModel, b)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := responseHeader(out.ResultMetadata, "Groundhog-Request-Hash"), hashOf(t, "messages", string(fp)); got != want {
			t.Fatalf("turn %d: request hash %s, want the client body's %s", i+1, got, want)
		}
		var m struct {
			Usage struct {
				CacheRead int64 `json:"cache_read_input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(out.Body, &m); err != nil {
			t.Fatal(err)
		}
		read = m.Usage.CacheRead
	}
	if read < 1024 {
		t.Fatalf("turn 2 read %d tokens from the prompt cache, want the system prompt", read)
	}
}
