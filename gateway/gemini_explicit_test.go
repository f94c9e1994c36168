package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// explicitBill is the part of GET /sim/v1/bill that explicit caches add.
type explicitBill struct {
	fullBill
	CacheCreations    int64  `json:"cache_creations"`
	CacheCreateTokens int64  `json:"cache_create_tokens"`
	StorageUSDExact   string `json:"storage_usd_exact"`
}

func readExplicitBill(t *testing.T, h *harness) explicitBill {
	t.Helper()
	res, err := http.Get(h.SimURL + "/sim/v1/bill")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b explicitBill
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGeminiSDKExplicitCacheLifecycle: the official SDK creates, gets,
// lists (page by page), extends and deletes an explicit cache through the
// gateway against the simulator; calls naming it read its tokens at the
// cached rate; a mixed workload (implicit reads, the explicit cache living
// 90 simulated minutes across a UTC midnight, streamed calls) is booked so
// that the reports of the two days add up to the simulator's bill to the
// micro-dollar, storage rent included: the create's row costs the cache's
// tokens at the input rate, and the rent is one row per cache and day.
func TestGeminiSDKExplicitCacheLifecycle(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 3, 14, 23, 15, 0, 0, time.UTC)}
	h := newHarness(t, withClock(clock))
	cl := geminiClient(t, h, "k", nil)
	ctx := context.Background()

	doc := "The contract follows. " + words(2000, "clause")
	cc, err := cl.Caches.Create(ctx, geminiModel, &genai.CreateCachedContentConfig{
		TTL:               time.Hour,
		DisplayName:       "contract",
		SystemInstruction: genai.NewContentFromText("You answer questions on the contract.", genai.RoleUser),
		Contents:          []*genai.Content{genai.NewContentFromText(doc, genai.RoleUser)},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens := int64(cc.UsageMetadata.TotalTokenCount)
	if cc.Name == "" || tokens < 1024 || !cc.ExpireTime.Equal(cc.CreateTime.Add(time.Hour)) {
		t.Fatalf("created %+v", cc)
	}
	got, err := cl.Caches.Get(ctx, cc.Name, nil)
	if err != nil || got.Name != cc.Name || got.DisplayName != "contract" {
		t.Fatalf("get: %v %+v", err, got)
	}
	second, err := cl.Caches.Create(ctx, geminiModel, &genai.CreateCachedContentConfig{
		TTL: 10 * time.Minute, Contents: []*genai.Content{genai.NewContentFromText(words(1100, "note"), genai.RoleUser)},
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := cl.Caches.List(ctx, &genai.ListCachedContentsConfig{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for {
		for _, c := range page.Items {
			listed[c.Name] = true
		}
		if page, err = page.Next(ctx); err != nil {
			break
		}
	}
	if err != genai.ErrPageDone || len(listed) != 2 || !listed[cc.Name] || !listed[second.Name] {
		t.Fatalf("listed %v (%v)", listed, err)
	}

	// Reads of the explicit cache, body and stream, and implicit reads of a
	// shared system instruction.
	useCache := &genai.GenerateContentConfig{CachedContent: cc.Name}
	var explicitReads int64
	for i := range 3 {
		contents := genai.Text(fmt.Sprintf("what does clause %d say?", i))
		if i == 1 {
			_, u, _ := geminiStream(t, cl, geminiModel, contents, useCache)
			if int64(u.CachedContentTokenCount) != tokens || int64(u.PromptTokenCount) <= tokens {
				t.Fatalf("stream usage %+v with a %d-token cache", u, tokens)
			}
			explicitReads += int64(u.CachedContentTokenCount)
			continue
		}
		res, err := cl.Models.GenerateContent(ctx, geminiModel, contents, useCache)
		if err != nil {
			t.Fatal(err)
		}
		if u := res.UsageMetadata; int64(u.CachedContentTokenCount) != tokens || int64(u.PromptTokenCount) <= tokens {
			t.Fatalf("usage %+v with a %d-token cache", u, tokens)
		}
		explicitReads += tokens
	}
	sys := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Support agent. "+words(1500, "rule"), genai.RoleUser)}
	for i := range 3 {
		if i == 2 {
			geminiStream(t, cl, geminiModel, genai.Text(fmt.Sprintf("ticket %d", i)), sys)
			continue
		}
		if _, err := cl.Models.GenerateContent(ctx, geminiModel, genai.Text(fmt.Sprintf("ticket %d", i)), sys); err != nil {
			t.Fatal(err)
		}
	}
	// A request naming the cache with its own system instruction is refused
	// by the provider.
	_, err = cl.Models.GenerateContent(ctx, geminiModel, genai.Text("x"), &genai.GenerateContentConfig{CachedContent: cc.Name, SystemInstruction: genai.NewContentFromText("y", genai.RoleUser)})
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusBadRequest {
		t.Fatalf("cache with a system instruction: %v", err)
	}

	// 50 minutes on (past midnight), extend it; 40 more, delete it: it
	// lived 90 minutes, 45 on each day. A sweep after midnight books the
	// first day's piece and the second cache's whole life.
	clock.Advance(50 * time.Minute)
	h.GW.SweepCacheRent(ctx)
	up, err := cl.Caches.Update(ctx, cc.Name, &genai.UpdateCachedContentConfig{TTL: time.Hour})
	if err != nil || !up.ExpireTime.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("update: %v %+v", err, up)
	}
	clock.Advance(40 * time.Minute)
	if _, err := cl.Caches.Delete(ctx, cc.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Caches.Get(ctx, cc.Name, nil); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		t.Fatalf("get after delete: %v", err)
	}
	// The second cache expired after 10 minutes: gone.
	if _, err := cl.Caches.Get(ctx, second.Name, nil); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		t.Fatalf("get after expiry: %v", err)
	}
	h.GW.SweepCacheRent(ctx) // nothing left: the deletion booked the rest

	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	bill := readExplicitBill(t, h)
	p, _ := h.Cfg.PriceTable.Lookup(geminiModel)
	rent, err := groundhog.ParseMoney(bill.StorageUSDExact)
	if err != nil {
		t.Fatal(err)
	}
	secondTokens := int64(second.UsageMetadata.TotalTokenCount)
	wantRent := p.CacheStorageCost(tokens, 90*60) + p.CacheStorageCost(secondTokens, 10*60)
	if rent != wantRent || rent <= 0 {
		t.Fatalf("sim rent %s, want %s", rent.Format(12), wantRent.Format(12))
	}
	billUSD, err := groundhog.ParseMoney(bill.USD)
	if err != nil {
		t.Fatal(err)
	}
	if bill.CacheCreations != 2 || bill.CacheCreateTokens != tokens+secondTokens || bill.CachedInputTokens < explicitReads {
		t.Fatalf("bill %+v", bill)
	}
	var spend, booked groundhog.Total
	var reported int64
	first, _ := ledger.DayBounds(clock.Now().Add(-24*time.Hour), time.UTC)
	for _, day := range []time.Time{clock.Now().Add(-24 * time.Hour), clock.Now()} {
		rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: day})
		if err != nil {
			t.Fatal(err)
		}
		spend, booked = spend.Plus(rep.Total.Spend), booked.Plus(rep.Total.CacheRent)
		reported += rep.Total.Calls
	}
	// The report's calls are the calls made: the rent rows are none.
	var calls int64
	for _, r := range h.ledgerRows() {
		if r.Outcome != groundhog.OutcomeCacheRent && !r.Time.Before(first) && r.Time.Before(first.Add(48*time.Hour)) {
			calls++
		}
	}
	if reported != calls || calls == 0 {
		t.Errorf("report counted %d calls over both days, the ledger holds %d calls", reported, calls)
	}
	if got, want := spend.String(), billUSD.String(); got != want {
		t.Errorf("report spend over both days %s, sim bill %s", got, want)
	}
	if got, want := booked.String(), rent.String(); got != want {
		t.Errorf("report storage rent %s, sim storage %s", got, want)
	}
	var creates []groundhog.Money
	rents := map[string][]groundhog.LedgerEntry{}
	for _, r := range h.ledgerRows() {
		switch {
		case r.Outcome == groundhog.OutcomeCacheRent:
			rents[r.Model+" "+r.Time.Format(time.RFC3339)] = append(rents[r.Model+" "+r.Time.Format(time.RFC3339)], r)
		case r.Outcome == groundhog.OutcomePassthrough && r.Cost != 0:
			creates = append(creates, r.Cost)
		}
	}
	want := []groundhog.Money{groundhog.Money(tokens * p.Input), groundhog.Money(secondTokens * p.Input)}
	if len(creates) != 2 || creates[0]+creates[1] != want[0]+want[1] || want[0] <= 0 {
		t.Errorf("create rows cost %v, want %v", creates, want)
	}
	// One rent row per cache and day: the contract's two (45 minutes on
	// each day, the second piece the rent of 90 minutes minus 45) and
	// the second cache's one.
	created := cc.CreateTime.UTC()
	midnight := time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)
	wantRows := map[string]groundhog.Money{
		geminiModel + " " + created.Format(time.RFC3339):  p.CacheStorageCost(tokens, 45*60) + p.CacheStorageCost(secondTokens, 10*60),
		geminiModel + " " + midnight.Format(time.RFC3339): p.CacheStorageCost(tokens, 90*60) - p.CacheStorageCost(tokens, 45*60),
	}
	if len(rents) != 2 || len(rents[geminiModel+" "+created.Format(time.RFC3339)]) != 2 || len(rents[geminiModel+" "+midnight.Format(time.RFC3339)]) != 1 {
		t.Fatalf("rent rows %v, want two on %s and one at %s", rents, created, midnight)
	}
	for k, rows := range rents {
		var sum groundhog.Money
		for _, r := range rows {
			sum += r.Cost
			if r.Operation != "passthrough" || r.Tenant == "" {
				t.Errorf("rent row %+v", r)
			}
		}
		if sum != wantRows[k] {
			t.Errorf("rent rows at %s cost %s, want %s", k, sum.Format(12), wantRows[k].Format(12))
		}
	}
}
