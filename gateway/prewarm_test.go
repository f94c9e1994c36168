package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/ledger"
)

// A non-streaming writer answers only when its whole answer is generated:
// warm-then-fan-out would hold the subagents behind it that long. Instead
// the first held one pre-warms the shared prefix with a max_tokens 0
// request (fan_out_prewarm_after after the writer went: here at once, the
// writer's prompt being processed), and when the provider has answered it every held call goes —
// here all four, held while the pre-warm was processed, come back while the
// writer is still generating. The
// pre-warm is booked as an upstream call of its own (no output, not a
// repeat), and the ledger's dollars equal the provider's bill.
func TestFanOutPrewarmReleasesFollowersOfNonStreamingWriter(t *testing.T) {
	prefix := "You coordinate research subagents. " + words(10000, "prefix")
	generating := make(chan struct{}, 1) // the writer reached its output
	gate := make(chan struct{})          // the writer's output is generated
	prewarmed := make(chan struct{})     // the pre-warm's prompt is processed
	var prefills atomic.Int32
	sleep := func(ctx context.Context, d time.Duration) error {
		var wait chan struct{}
		switch {
		case d == 2*time.Millisecond: // time to first token: the writer's, the pre-warm's, then the subagents'
			if prefills.Add(1) != 2 {
				return nil
			}
			wait = prewarmed
		case d < 10*time.Millisecond: // a subagent's one-token answer
			return nil
		default:
			generating <- struct{}{}
			wait = gate
		}
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	held := make(chan struct{}, 16)
	never := make(chan time.Time) // no maximum hold: only the pre-warm can release them
	fan := fanout.New(fanout.Config{OnHold: func() { held <- struct{}{} }, PrewarmAfter: time.Millisecond,
		After: func(d time.Duration) <-chan time.Time {
			if d == 10*time.Second { // the default maximum hold
				return never
			}
			return time.After(d)
		}})
	h := newHarness(t, withFanOut(fan), func(s *setup) {
		s.sim.FirstToken, s.sim.PerOutputToken, s.sim.Sleep = 2*time.Millisecond, time.Millisecond, sleep
	})
	an := anthropicClient(h)
	send := func(task string, maxTokens int64, res **http.Response) (*anthropic.Message, error) {
		return an.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: "sim-small", MaxTokens: maxTokens,
			System:   []anthropic.TextBlockParam{{Text: prefix, CacheControl: anthropic.NewCacheControlEphemeralParam()}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(task))},
		}, aoption.WithHeader("Groundhog-Operation", "subagents"), aoption.WithResponseInto(res))
	}
	type result struct {
		msg *anthropic.Message
		res *http.Response
		err error
	}
	writer := make(chan result, 1)
	go func() {
		var r result
		r.msg, r.err = send("Plan the research in depth.", 200, &r.res)
		writer <- r
	}()
	<-generating // the writer wrote the prefix and is generating its answer
	followers := make(chan result, 4)
	for i := range 4 {
		go func() {
			var r result
			r.msg, r.err = send(fmt.Sprintf("Subtask %d: one word.", i), 1, &r.res)
			followers <- r
		}()
		select {
		case <-held:
		case r := <-followers:
			t.Fatalf("a subagent was not held (error %v)", r.err)
		}
	}
	close(prewarmed) // the four are held: the provider answers the pre-warm
	var p int64
	for range 4 {
		select {
		case r := <-followers:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.msg.Usage.CacheReadInputTokens < 10000 || r.msg.Usage.CacheCreationInputTokens != 0 {
				t.Errorf("a subagent read %d and wrote %d, want the ≥ 10,000-token prefix read", r.msg.Usage.CacheReadInputTokens, r.msg.Usage.CacheCreationInputTokens)
			}
			p = r.msg.Usage.CacheReadInputTokens
		case <-time.After(20 * time.Second):
			t.Fatal("the subagents are still held while the non-streaming writer generates")
		}
	}
	close(gate)
	w := <-writer
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.msg.Usage.CacheCreationInputTokens != p {
		t.Errorf("the writer wrote %d, want the %d-token prefix", w.msg.Usage.CacheCreationInputTokens, p)
	}

	bill := readFullBill(t, h)
	if bill.Calls != 6 || bill.CacheWriteTokens != p || bill.CachedInputTokens != 5*p {
		t.Errorf("bill: %d calls, writes %d, reads %d; want 6 calls (writer, pre-warm, 4 subagents), the %d-token prefix written once and read 5 times",
			bill.Calls, bill.CacheWriteTokens, bill.CachedInputTokens, p)
	}
	rows := h.ledgerRows()
	var sum groundhog.Money
	var prewarms, heldRows int
	hashes := map[string]int{}
	for _, r := range rows {
		sum += r.Cost
		hashes[r.RequestHash]++
		if r.FanOutHeld {
			heldRows++
		}
		if r.Outcome == groundhog.OutcomeUpstream && r.Usage.OutputTokens == 0 {
			prewarms++
			if r.Stream || r.FanOutHeld || r.Usage.CachedInputTokens != p || !r.Cost.Known() {
				t.Errorf("pre-warm row %+v: want a priced read of the %d-token prefix, not streamed, not held", r, p)
			}
		}
	}
	if len(rows) != 6 || prewarms != 1 || heldRows != 4 || len(hashes) != 6 {
		t.Errorf("%d rows (%d pre-warms, %d held, %d distinct requests), want 6 (1, 4, 6)", len(rows), prewarms, heldRows, len(hashes))
	}
	if got := mustMoney(t, bill.USD, sum); got != "0.000000" {
		t.Errorf("ledger %s vs bill %s: differ by %s", sum, bill.USD, got)
	}
	if err := h.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(context.Background(), h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if tot := rep.Total; tot.UpstreamCalls != 6 || tot.Repeats != 0 || tot.PromptCache.FanOutHeld != 4 {
		t.Errorf("report: %d upstream calls, %d repeats, %d held; want 6, 0, 4", tot.UpstreamCalls, tot.Repeats, tot.PromptCache.FanOutHeld)
	}
}
