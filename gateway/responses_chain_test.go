package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// TestResponsesChainReportEqualsSimBill: a stored response read back and
// listed, continued with previous_response_id, compacted
// (/v1/responses/compact, passed through) and continued from the compacted
// window, through the gateway with the official SDK: the report's spend
// equals the simulated provider's bill to the micro-dollar, and the
// compaction (whose answer names no model) is priced as the model asked.
func TestResponsesChainReportEqualsSimBill(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	oa := openaiClient(h)
	op := func(name string) option.RequestOption { return option.WithHeader("Groundhog-Operation", name) }

	// A first turn long enough for the provider's prompt cache.
	r1, err := oa.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-small",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(words(1500, "rule") + " first question")}}, op("turn"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := oa.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r1.ID || got.Usage.InputTokens != r1.Usage.InputTokens || got.OutputText() != r1.OutputText() {
		t.Fatalf("Get: %v %+v, want %s", err, got, r1.RawJSON())
	}
	items, err := oa.Responses.InputItems.List(ctx, r1.ID, responses.InputItemListParams{})
	if err != nil || len(items.Data) != 1 || items.Data[0].Type != "message" {
		t.Fatalf("InputItems.List: %v %+v", err, items)
	}

	// The continuation reads the first turn's whole context, cached.
	next := responses.ResponseNewParams{Model: "sim-small", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and then")}}
	useCache := option.WithHeader("Groundhog-Cache", "use")
	r2, err := oa.Responses.New(ctx, next, op("turn"), useCache)
	if err != nil {
		t.Fatal(err)
	}
	if want := r1.Usage.InputTokens + r1.Usage.OutputTokens + 4 + 2 + 4; r2.Usage.InputTokens != want || r2.Usage.InputTokensDetails.CachedTokens == 0 {
		t.Fatalf("continuation usage %s, want %d input tokens, some cached", r2.Usage.RawJSON(), want)
	}
	// The same continuation again is an exact-cache hit: the answer
	// depends on the body and the stored (immutable) chain only.
	var hit *http.Response
	again, err := oa.Responses.New(ctx, next, op("turn"), useCache, option.WithResponseInto(&hit))
	if err != nil {
		t.Fatal(err)
	}
	if hit.Header.Get("Groundhog-Cache") != "hit" || again.ID != r2.ID {
		t.Fatalf("repeat continuation: Groundhog-Cache %q id %s, want a hit answering %s", hit.Header.Get("Groundhog-Cache"), again.ID, r2.ID)
	}

	// Compact the conversation: the user messages and one compaction item.
	c, err := oa.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "sim-small", PreviousResponseID: openai.String(r2.ID)}, op("compact"))
	if err != nil {
		t.Fatal(err)
	}
	context := r2.Usage.InputTokens + r2.Usage.OutputTokens + 4
	if len(c.Output) != 3 || c.Output[2].Type != "compaction" || c.Usage.InputTokens != context || c.Usage.OutputTokens != 64+context/4 {
		t.Fatalf("compaction %s, want 2 messages and a compaction of %d input tokens", c.RawJSON(), context)
	}
	// Continue from the compacted window.
	var window responses.ResponseInputParam
	for _, it := range c.Output[:2] {
		window = append(window, responses.ResponseInputItemParamOfMessage(it.Content[0].Text, responses.EasyInputMessageRoleUser))
	}
	window = append(window, responses.ResponseInputItemParamOfCompaction(c.Output[2].EncryptedContent),
		responses.ResponseInputItemParamOfMessage("what next", responses.EasyInputMessageRoleUser))
	r3, err := oa.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-small",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: window}}, op("turn"))
	if err != nil {
		t.Fatal(err)
	}
	// The kept messages (the first turn's whole prompt, "and then"), the
	// summary and "what next", each framed by 4 tokens.
	if want := r1.Usage.InputTokens + (2 + 4) + (c.Usage.OutputTokens + 4) + (2 + 4); r3.Usage.InputTokens != want {
		t.Fatalf("after compaction: %d input tokens, want %d", r3.Usage.InputTokens, want)
	}

	// Deleted: gone for the provider (a new continuation is refused).
	if err := oa.Responses.Delete(ctx, r1.ID); err != nil {
		t.Fatal(err)
	}
	var apiErr *openai.Error
	if _, err := oa.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("Get after Delete: %v", err)
	}
	_, err = oa.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-small", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("once more")}}, op("turn"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" {
		t.Fatalf("continuing a deleted response: %v", err)
	}

	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	bill := readFullBill(t, h)
	if rep.Total.Spend.String() != bill.USD || rep.Total.UnknownCostCalls != 0 {
		t.Fatalf("report spend %s (%d unknown), sim bill %s", rep.Total.Spend, rep.Total.UnknownCostCalls, bill.USD)
	}
	if exact, _ := rep.Total.Spend.Money(); exact != h.Sim.Bill().USD {
		t.Fatalf("report spend %d picodollars, sim bill %d", exact, h.Sim.Bill().USD)
	}
	// The compaction's row: its usage priced as sim-small.
	p, _ := h.Cfg.PriceTable.Lookup("sim-small")
	u := groundhog.Usage{InputTokens: c.Usage.InputTokens, CachedInputTokens: c.Usage.InputTokensDetails.CachedTokens, OutputTokens: c.Usage.OutputTokens}
	want := groundhog.Money((u.InputTokens-u.CachedInputTokens)*p.Input + u.CachedInputTokens*p.CachedInput + u.OutputTokens*p.Output)
	for _, row := range rep.Operations {
		if row.Operation == "compact" {
			if row.Spend.String() != want.String() || row.UnknownCostCalls != 0 {
				t.Fatalf("compaction row spend %s (%d unknown), want %s", row.Spend, row.UnknownCostCalls, want)
			}
			return
		}
	}
	t.Fatalf("no compact operation in the report: %+v", rep.Operations)
}
