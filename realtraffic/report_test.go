package realtraffic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

// reportSum is what the day's report must total after the replay, summed
// from each exchange's own expected figures: every call that reached the
// provider spends the exchange's cost and carries its usage; every other
// call of a modelled route was answered from the cache and saves that cost.
type reportSum struct {
	calls                          int64
	spend, saved                   groundhog.Total
	read, write, w1h, input        int64
	upstreamCalls, unknownCostRows int64
	// booked are the background responses whose usage is booked (once
	// each); days the days they were made, which the report must cover too.
	booked map[string]bool
	days   []time.Time
}

// add counts one exchange that made res.calls calls, upstream of which
// reached the provider.
func (s *reportSum) add(res *result, upstream int64) {
	s.calls += res.calls
	if res.relayed.priced {
		if id := res.relayed.once; id != "" {
			if s.booked[id] {
				return // read again: booked by the first read
			}
			if s.booked == nil {
				s.booked = map[string]bool{}
			}
			s.booked[id] = true
			s.days = append(s.days, res.relayed.day)
			s.calls++ // the booked row: the background run's own, beside the read's
		}
		res = &result{calls: res.calls, want: res.relayed}
	}
	if !res.want.priced {
		return // an error answer, or a relayed answer without usage: no usage, no known cost
	}
	hits := res.calls - upstream
	s.upstreamCalls += upstream
	s.read += upstream * res.want.read
	s.write += upstream * res.want.write
	s.w1h += upstream * res.want.w1h
	s.input += upstream * res.want.input
	if !res.want.cost.Known() {
		s.unknownCostRows += res.calls
		return
	}
	for range upstream {
		s.spend = s.spend.Add(res.want.cost)
	}
	for range hits {
		s.saved = s.saved.Add(res.want.cost)
	}
}

// expectRelayed is what the ledger of a passthrough exchange carries: a
// JSON answer's usage, in the route family's semantics, priced by the
// answer's own model, else by the request's (a compaction answer has none).
// A streamed answer's usage is the one its events carry. A stored response
// read back (GET /v1/responses/{id}) is free, but for a background one,
// whose usage is booked once per response on the day it was made.
func expectRelayed(t *testing.T, it *realtraffic.Interaction) expected {
	var e expected
	if it.Meta.Status/100 != 2 {
		return e
	}
	if it.Meta.Method == http.MethodGet && strings.HasPrefix(it.Meta.Route, "/v1/responses/") {
		var r struct {
			ID         string `json:"id"`
			CreatedAt  int64  `json:"created_at"`
			Background bool   `json:"background"`
		}
		if json.Unmarshal(it.Response, &r) != nil || !r.Background || r.ID == "" {
			return e
		}
		e.once, e.day = r.ID, time.Unix(r.CreatedAt, 0).UTC()
	}
	parts := partsOf(t, it.Meta.Provider, finalUsage(t, it))
	if len(parts) == 0 {
		return e
	}
	e.priced = true
	p := sumParts(parts)
	e.input, e.read, e.write, e.w1h, e.output = p.input, p.read, p.write, p.w1h, p.output
	e.cost = groundhog.CostUnknown
	if model := firstNonEmpty(it.Meta.ResponseModel, it.Meta.RequestModel); model != "" {
		e.cost = prices.Cost(model, groundhog.Usage{InputTokens: p.input, CachedInputTokens: p.read,
			CacheWriteTokens: p.write, CacheWrite1hTokens: p.w1h, OutputTokens: p.output})
	}
	return e
}

// checkReport builds the ledger's daily report (what "groundhog report"
// prints) for every day the replay touched and checks its totals against
// sum: calls, spend and saved to the picodollar, and the prompt-cache
// token counts.
func checkReport(t *testing.T, store groundhog.LedgerStore, from, to time.Time, sum reportSum) {
	t.Helper()
	var (
		calls, read, write, w1h, input int64
		spend, saved                   groundhog.Total
	)
	var days []time.Time
	for day := from.UTC(); ; day = day.Add(24 * time.Hour) {
		days = append(days, day)
		if _, end := ledger.DayBounds(day, time.UTC); !end.Before(to.Add(time.Second)) {
			break
		}
	}
	for _, d := range sum.days { // the days background responses were made, once each
		seen := false
		for _, e := range days {
			seen = seen || e.Format(time.DateOnly) == d.Format(time.DateOnly)
		}
		if !seen {
			days = append(days, d)
		}
	}
	for _, day := range days {
		rep, err := ledger.BuildReport(context.Background(), store, ledger.ReportParams{Day: day})
		if err != nil {
			t.Fatal(err)
		}
		tot := rep.Total
		calls += tot.Calls
		spend, saved = spend.Plus(tot.Spend), saved.Plus(tot.Saved)
		read += tot.PromptCache.CachedReadTokens
		write += tot.PromptCache.CacheWriteTokens
		w1h += tot.PromptCache.CacheWrite1hTokens
		input += tot.PromptCache.InputTokens
	}
	t.Logf("report: %d calls, spend %s, saved %s, input %d tokens (read %d, written %d, of which 1h %d)",
		calls, spend, saved, input, read, write, w1h)
	if calls != sum.calls {
		t.Errorf("report: %d calls, the suite made %d", calls, sum.calls)
	}
	if spend != sum.spend || saved != sum.saved {
		t.Errorf("report: spend %s saved %s, the exchanges' expected costs sum to spend %s saved %s", spend, saved, sum.spend, sum.saved)
	}
	if read != sum.read || write != sum.write || w1h != sum.w1h || input != sum.input {
		t.Errorf("report: tokens input %d read %d write %d (1h %d), the exchanges' usages sum to input %d read %d write %d (1h %d)",
			input, read, write, w1h, sum.input, sum.read, sum.write, sum.w1h)
	}
}
