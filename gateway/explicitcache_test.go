package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// ecDoc is a 30,000-token document (the simulator counts a 4-byte word as
// one token).
var ecDoc = func() string {
	var b strings.Builder
	for i := range 30_000 {
		fmt.Fprintf(&b, "%04d ", i%10_000)
	}
	return b.String()
}()

// ecBody is a question about ecDoc: the system instruction, the document
// as the first user turn and the model's acknowledgement are the prefix
// every question shares; the last turn varies.
func ecBody(doc string, i int) string {
	b, _ := json.Marshal(map[string]any{
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "Answer questions about the document."}}},
		"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": doc}}},
			map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Understood."}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": fmt.Sprintf("question %d: what is on line %d?", i, i*7)}}},
		},
	})
	return string(b)
}

// ecRig is a gateway and the simulated provider on one simulated clock,
// with a proxy between them that notes every request the provider
// receives and can refuse cache creates.
type ecRig struct {
	t      *testing.T
	h      *harness
	clk    *testClock
	mu     sync.Mutex
	seen   []string // "METHOD path body"
	refuse bool     // answer cache creates 503
}

func newECRig(t *testing.T, explicit string) *ecRig {
	g := &ecRig{t: t, clk: newTestClock()}
	var simURL string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.seen = append(g.seen, r.Method+" "+r.URL.Path+" "+string(body))
		refuse := g.refuse && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cachedContents")
		g.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`)
			return
		}
		target, _ := url.Parse(simURL)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	g.h = newHarness(t, withClock(g.clk), withConfig(func(c *config.Config) {
		c.PromptCache.Explicit = explicit
		c.PromptCache.ExplicitTTL = 20 * time.Minute // longer than the window: a deletion is the manager's, not an expiry
		c.PromptCache.ExplicitWindow = 10 * time.Minute
	}), func(s *setup) { s.gemini = &gateway.Upstream{BaseURL: proxy.URL, Provider: "sim"} })
	simURL = g.h.SimURL
	return g
}

// ask sends question i with key; it returns the answer's usageMetadata.
func (g *ecRig) ask(key string, doc string, i int) map[string]int64 {
	g.t.Helper()
	res, body := g.h.post("/v1beta/models/"+geminiModel+":generateContent", ecBody(doc, i), map[string]string{"X-Goog-Api-Key": key})
	if res.StatusCode != http.StatusOK {
		g.t.Fatalf("question %d: %d %s", i, res.StatusCode, body)
	}
	var a struct {
		Candidates    []json.RawMessage `json:"candidates"`
		UsageMetadata map[string]int64  `json:"usageMetadata"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Candidates) != 1 {
		g.t.Fatalf("question %d: %s", i, body)
	}
	return a.UsageMetadata
}

// advance moves the shared clock by d in 30-second steps, sweeping the
// managed caches and booking the caches' rent at each, as serve's loop
// does.
func (g *ecRig) advance(d time.Duration) {
	for d > 0 {
		step := min(d, 30*time.Second)
		g.clk.Advance(step)
		d -= step
		g.h.GW.SweepExplicitCaches(context.Background())
		g.h.GW.SweepCacheRent(context.Background())
	}
}

// requests returns the requests the provider received whose method and
// path start with prefix ("POST /v1beta/cachedContents").
func (g *ecRig) requests(prefix string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, s := range g.seen {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// liveCaches lists the caches alive at the provider (asked directly,
// with no gateway in between).
func (g *ecRig) liveCaches() []string {
	g.t.Helper()
	res, err := http.Get(g.h.SimURL + "/v1beta/cachedContents")
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	var l struct {
		CachedContents []struct {
			Name string `json:"name"`
		} `json:"cachedContents"`
	}
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &l); err != nil {
		g.t.Fatalf("list: %d %s", res.StatusCode, b)
	}
	var out []string
	for _, c := range l.CachedContents {
		out = append(out, c.Name)
	}
	return out
}

// ledgerUSD sums the ledger's known costs.
func (g *ecRig) ledgerUSD() groundhog.Money {
	g.t.Helper()
	ctx := context.Background()
	if err := g.h.Ledger.Flush(ctx); err != nil {
		g.t.Fatal(err)
	}
	var sum groundhog.Money
	// The simulated clock runs hours ahead of the wall clock.
	err := g.h.DB.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: g.clk.Now().Add(time.Hour)}, func(r *groundhog.LedgerEntry) error {
		if !r.Cost.Known() {
			g.t.Fatalf("row with an unknown cost: %+v", r)
		}
		sum += r.Cost
		return nil
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return sum
}

// workload asks n questions spaced by gap, sweeping in between.
func (g *ecRig) workload(key string, n int, gap time.Duration) (cachedReads int) {
	for i := range n {
		if i > 0 {
			g.advance(gap)
		}
		u := g.ask(key, ecDoc, i)
		if u["cachedContentTokenCount"] >= 30_000 {
			cachedReads++
		}
	}
	return cachedReads
}

// TestExplicitCacheSpacedWorkloadPays: 20 questions over one shared
// 30,000-token prefix, 6 minutes apart — beyond the 5 minutes implicit
// caching keeps a prefix, so with auto off every question pays the whole
// prefix at the input rate. With auto on the manager creates exactly one
// cache once the prefix came back three times, later questions read it at
// the cached rate, and the whole bill (creation and storage rent
// included) is below the implicit-only bill. Once the questions stop, the
// cache is deleted within the window, before its own expiry, and no rent
// accrues after. The ledger equals the provider's bill to the micro-dollar.
func TestExplicitCacheSpacedWorkloadPays(t *testing.T) {
	off := newECRig(t, "off")
	off.workload("k", 20, 6*time.Minute)
	offBill := off.h.bill().USD

	on := newECRig(t, "auto")
	reads := on.workload("k", 20, 6*time.Minute)
	if creates := on.requests("POST /v1beta/cachedContents"); len(creates) != 1 {
		t.Fatalf("%d caches created, want 1", len(creates))
	}
	if reads != 18 { // questions 3 to 20
		t.Fatalf("%d questions read the managed cache, want 18", reads)
	}
	// The workload stopped: the next sweeps find no reuse within the
	// window, and the manager deletes the cache.
	on.advance(10*time.Minute + 30*time.Second)
	if live := on.liveCaches(); len(live) != 0 {
		t.Fatalf("caches still alive after reuse stopped: %v", live)
	}
	if dels := on.requests("DELETE /v1beta/cachedContents/"); len(dels) != 1 {
		t.Fatalf("%d deletions, want 1 (the manager's, before the cache's 20-minute expiry)", len(dels))
	}
	onBill := on.h.bill().USD
	on.advance(2 * time.Hour)
	if after := on.h.bill().USD; after != onBill {
		t.Fatalf("rent accrued after the deletion: bill %s, then %s", onBill, after)
	}
	t.Logf("20 questions 6 minutes apart over a 30,000-token prefix: implicit caching only %s, with a managed explicit cache %s", offBill, onBill)
	if onBill >= offBill {
		t.Fatalf("with a managed cache the bill is %s, not below the implicit-only %s", onBill, offBill)
	}
	if l := on.ledgerUSD(); l.String() != onBill.String() {
		t.Fatalf("ledger %s, provider's bill %s", l, onBill)
	}
	if l := off.ledgerUSD(); l.String() != offBill.String() {
		t.Fatalf("auto off: ledger %s, provider's bill %s", l, offBill)
	}
}

// TestExplicitCacheDeclinedWhenImplicitServes: the same 20 questions 30
// seconds apart. Implicit caching reads the prefix at the cached rate for
// free; an explicit cache could only add creation and rent, so the manager
// creates none and the bill is the implicit-only one.
func TestExplicitCacheDeclinedWhenImplicitServes(t *testing.T) {
	off := newECRig(t, "off")
	off.workload("k", 20, 30*time.Second)
	on := newECRig(t, "auto")
	on.workload("k", 20, 30*time.Second)
	if creates := on.requests("POST /v1beta/cachedContents"); len(creates) != 0 {
		t.Fatalf("%d caches created, want none", len(creates))
	}
	offBill, onBill := off.h.bill().USD, on.h.bill().USD
	t.Logf("20 questions 30 seconds apart: implicit only %s, auto %s", offBill, onBill)
	if onBill != offBill {
		t.Fatalf("auto bill %s, implicit-only %s: want equal", onBill, offBill)
	}
}

// TestExplicitCacheNotForTwo: a prefix sent twice is not reuse enough.
func TestExplicitCacheNotForTwo(t *testing.T) {
	g := newECRig(t, "auto")
	g.workload("k", 2, 6*time.Minute)
	if creates := g.requests("POST /v1beta/cachedContents"); len(creates) != 0 {
		t.Fatalf("%d caches created for 2 requests, want none", len(creates))
	}
}

// TestExplicitCacheCreateFailureFallsBack: the provider refuses the
// create; every question is still answered, from the client's own body.
func TestExplicitCacheCreateFailureFallsBack(t *testing.T) {
	g := newECRig(t, "auto")
	g.refuse = true
	reads := g.workload("k", 5, 6*time.Minute)
	if reads != 0 || len(g.requests("POST /v1beta/cachedContents")) == 0 {
		t.Fatalf("reads %d, creates tried %d: want the manager to have tried and every question answered without a cache", reads, len(g.requests("POST /v1beta/cachedContents")))
	}
	for _, r := range g.requests("POST /v1beta/models/") {
		if strings.Contains(r, "cachedContent") {
			t.Fatalf("a question named a cache that was never made: %.200s", r)
		}
	}
}

// TestExplicitCacheGoneResendsOriginal: a managed cache deleted behind the
// manager's back (the provider answers 404) is forgotten, and the question
// is answered from the client's own body.
func TestExplicitCacheGoneResendsOriginal(t *testing.T) {
	g := newECRig(t, "auto")
	g.workload("k", 3, 6*time.Minute)
	live := g.liveCaches()
	if len(live) != 1 {
		t.Fatalf("live caches %v, want 1", live)
	}
	req, _ := http.NewRequest(http.MethodDelete, g.h.SimURL+"/v1beta/"+live[0], nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode/100 != 2 {
		t.Fatalf("deleting at the provider: %v %v", res, err)
	}
	res.Body.Close()
	g.advance(time.Minute)
	before := len(g.requests("POST /v1beta/models/"))
	u := g.ask("k", ecDoc, 99)
	if u["cachedContentTokenCount"] >= 30_000 {
		t.Fatalf("usage %v: a read of a deleted cache", u)
	}
	sent := g.requests("POST /v1beta/models/")[before:]
	if len(sent) != 2 || !strings.Contains(sent[0], live[0]) || strings.Contains(sent[1], "cachedContent") {
		t.Fatalf("%d requests upstream; want the one naming the deleted cache, then the client's own body", len(sent))
	}
	if got := g.h.GW.ExplicitCaches(); len(got) != 0 {
		t.Fatalf("the manager still holds %v", got)
	}
}

// TestExplicitCacheTenantIsolation: two tenants with the same prefix get
// one cache each; tenant B's questions never name tenant A's cache.
func TestExplicitCacheTenantIsolation(t *testing.T) {
	g := newECRig(t, "auto")
	ctx := context.Background()
	keyA, a := groundhog.NewAPIKey("tenant-a", g.clk.Now())
	keyB, b := groundhog.NewAPIKey("tenant-b", g.clk.Now())
	for _, k := range []groundhog.APIKey{a, b} {
		if err := g.h.DB.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	g.workload(keyA, 4, 6*time.Minute)
	live := g.liveCaches()
	if len(live) != 1 {
		t.Fatalf("tenant A's caches %v, want 1", live)
	}
	before := len(g.requests("POST /v1beta/models/"))
	g.workload(keyB, 4, 6*time.Minute)
	for _, r := range g.requests("POST /v1beta/models/")[before:] {
		if strings.Contains(r, live[0]) {
			t.Fatalf("tenant B's question named tenant A's cache %s", live[0])
		}
	}
	if creates := g.requests("POST /v1beta/cachedContents"); len(creates) != 2 {
		t.Fatalf("%d caches created, want one per tenant", len(creates))
	}
	// Tenant B cannot reach A's cache by name either.
	res, body := g.h.post("/v1beta/models/"+geminiModel+":generateContent",
		`{"cachedContent":"`+live[0]+`","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, map[string]string{"X-Goog-Api-Key": keyB})
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("tenant B naming A's cache: %d %s", res.StatusCode, body)
	}
}

// TestExplicitCacheKeepsTheClientsKey: a streamed question sent upstream
// naming the managed cache is stored under the client's own body: the
// same question as a body call is a hit, with the same usage (the cached
// tokens reported honestly), and the ledger row carries the client's
// request hash.
func TestExplicitCacheKeepsTheClientsKey(t *testing.T) {
	g := newECRig(t, "auto")
	g.workload("k", 2, 6*time.Minute)
	g.advance(6 * time.Minute)
	body := ecBody(ecDoc, 2)
	hdr := map[string]string{"X-Goog-Api-Key": "k", "Groundhog-Cache": "use"}
	res, stream := g.h.post("/v1beta/models/"+geminiModel+":streamGenerateContent?alt=sse", body, hdr)
	if res.StatusCode != http.StatusOK || res.Header.Get("Groundhog-Cache") != "miss" {
		t.Fatalf("stream: %d %s %.300s", res.StatusCode, res.Header.Get("Groundhog-Cache"), stream)
	}
	named := 0
	for _, r := range g.requests("POST /v1beta/models/" + geminiModel + ":streamGenerateContent") {
		if strings.Contains(r, `"cachedContent":"cachedContents/`) && !strings.Contains(r, "0000 0001") {
			named++
		}
	}
	if named != 1 {
		t.Fatalf("%d streamed requests named the cache without the prefix, want 1", named)
	}
	lines := strings.Split(strings.TrimSpace(string(stream)), "\n")
	var last struct {
		UsageMetadata map[string]int64 `json:"usageMetadata"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[len(lines)-1], "data: ")), &last); err != nil {
		t.Fatalf("last chunk %q: %v", lines[len(lines)-1], err)
	}
	if u := last.UsageMetadata; u["cachedContentTokenCount"] < 30_000 || u["promptTokenCount"] <= u["cachedContentTokenCount"] {
		t.Fatalf("stream usage %v: want the cache's tokens read, included in the prompt", u)
	}
	res, again := g.h.post("/v1beta/models/"+geminiModel+":generateContent", body, hdr)
	if res.StatusCode != http.StatusOK || res.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("the same question as a body call: %d %q, want a hit", res.StatusCode, res.Header.Get("Groundhog-Cache"))
	}
	var a struct {
		UsageMetadata map[string]int64 `json:"usageMetadata"`
	}
	if err := json.Unmarshal(again, &a); err != nil || a.UsageMetadata["cachedContentTokenCount"] != last.UsageMetadata["cachedContentTokenCount"] {
		t.Fatalf("hit usage %v, stream usage %v", a.UsageMetadata, last.UsageMetadata)
	}
	fp, err := gemini.FingerprintBody(geminiModel, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := hashOf(t, string(groundhog.ShapeGemini), string(fp))
	found := false
	if err := g.h.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = g.h.DB.ScanLedger(context.Background(), groundhog.LedgerFilter{From: time.Unix(0, 0), To: g.clk.Now().Add(time.Hour)}, func(r *groundhog.LedgerEntry) error {
		found = found || r.RequestHash == want && r.Outcome == groundhog.OutcomeUpstream && r.Stream
		return nil
	})
	if !found {
		t.Fatalf("no upstream stream row with the client's request hash %s", want)
	}
}

// TestExplicitCacheRentSurvivesRestart: a managed cache made shortly
// before midnight outlives its gateway, killed (no shutdown deletes the
// cache), and expires by its TTL after midnight. A new gateway on the same
// store books its rent to its expiry, one row per UTC day, and the ledger
// equals the provider's bill to the micro-dollar.
func TestExplicitCacheRentSurvivesRestart(t *testing.T) {
	g := newECRig(t, "auto")
	g.clk.mu.Lock()
	g.clk.t = time.Date(2026, 8, 20, 23, 40, 0, 0, time.UTC)
	g.clk.mu.Unlock()
	g.workload("k", 4, 6*time.Minute)
	if creates := g.requests("POST /v1beta/cachedContents"); len(creates) != 1 {
		t.Fatalf("%d caches created, want 1", len(creates))
	}
	g.clk.Advance(time.Hour) // the killed gateway sweeps no more; the cache expires
	if live := g.liveCaches(); len(live) != 0 {
		t.Fatalf("caches alive an hour on: %v", live)
	}
	restarted := gateway.New(g.h.Opts)
	restarted.SweepCacheRent(context.Background())
	if err := g.h.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var days []string
	for _, r := range g.h.ledgerRows() {
		if r.Outcome == groundhog.OutcomeCacheRent {
			if r.Cost <= 0 {
				t.Fatalf("rent row %+v", r)
			}
			days = append(days, r.Time.Format(time.DateOnly))
		}
	}
	if len(days) != 2 || days[0] == days[1] {
		t.Fatalf("rent rows on %v, want one on each day", days)
	}
	if l, bill := g.ledgerUSD(), g.h.bill().USD; l.String() != bill.String() {
		t.Fatalf("ledger %s, provider's bill %s", l, bill)
	}
}
