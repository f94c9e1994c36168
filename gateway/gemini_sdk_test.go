package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// geminiModel is priced in the built-in table (implicit-cache reads at
// the cached rate, no write fee).
const geminiModel = "gemini-2.5-flash"

// geminiClient is the official Go SDK (google.golang.org/genai, Gemini API
// backend) pointed at the gateway with a custom base URL, the gateway key
// as its API key (sent as x-goog-api-key). headers go with every request.
func geminiClient(t *testing.T, h *harness, key string, headers map[string]string) *genai.Client {
	t.Helper()
	hdr := http.Header{}
	for k, v := range headers {
		hdr.Set(k, v)
	}
	cl, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: h.URL, Headers: hdr},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func geminiHeader(r *genai.GenerateContentResponse, name string) string {
	if r == nil || r.SDKHTTPResponse == nil {
		return ""
	}
	return r.SDKHTTPResponse.Headers.Get(name)
}

// geminiStream reads a streamGenerateContent to its end through the SDK
// and returns the joined text, the last chunk's usage and the first
// chunk's headers.
func geminiStream(t *testing.T, cl *genai.Client, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig) (string, *genai.GenerateContentResponseUsageMetadata, http.Header) {
	t.Helper()
	var b strings.Builder
	var usage *genai.GenerateContentResponseUsageMetadata
	var hdr http.Header
	finished := false
	for chunk, err := range cl.Models.GenerateContentStream(context.Background(), model, contents, cfg) {
		if err != nil {
			t.Errorf("stream: %v", err)
			return "", nil, nil
		}
		if hdr == nil && chunk.SDKHTTPResponse != nil {
			hdr = chunk.SDKHTTPResponse.Headers
		}
		b.WriteString(chunk.Text())
		if chunk.UsageMetadata != nil {
			usage = chunk.UsageMetadata
		}
		if len(chunk.Candidates) > 0 && chunk.Candidates[0].FinishReason != "" {
			finished = true
		}
	}
	if !finished || usage == nil {
		t.Errorf("stream incomplete: finished %v usage %v", finished, usage)
	}
	return b.String(), usage, hdr
}

// TestGeminiSDKStreamThenBodyFromOneEntry: a streamGenerateContent through
// the genai SDK, then generateContent with the same inputs is answered
// from the same cache entry, and again: one upstream call in all, booked
// at the simulator's bill, every row of shape gemini.
func TestGeminiSDKStreamThenBodyFromOneEntry(t *testing.T) {
	h := newHarness(t)
	cl := geminiClient(t, h, "any-key-while-keyless", map[string]string{"Groundhog-Cache": "use"})
	ctx := context.Background()
	contents := genai.Text("say hello to the gemini shape")
	streamed, usage, hdr := geminiStream(t, cl, geminiModel, contents, nil)
	if hdr.Get("Groundhog-Cache") != "miss" || streamed == "" || usage.CandidatesTokenCount == 0 {
		t.Fatalf("stream: Groundhog-Cache %q, text %q, usage %+v", hdr.Get("Groundhog-Cache"), streamed, usage)
	}
	for i := range 2 {
		res, err := cl.Models.GenerateContent(ctx, geminiModel, contents, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := geminiHeader(res, "Groundhog-Cache"); got != "hit" {
			t.Fatalf("body call %d: Groundhog-Cache %q, want hit", i, got)
		}
		if res.Text() != streamed || res.UsageMetadata.CandidatesTokenCount != usage.CandidatesTokenCount ||
			res.UsageMetadata.PromptTokenCount != usage.PromptTokenCount {
			t.Fatalf("body from the stream's entry: %q %+v, stream %q %+v", res.Text(), res.UsageMetadata, streamed, usage)
		}
		if len(res.Candidates) != 1 || res.Candidates[0].FinishReason != genai.FinishReasonStop {
			t.Fatalf("candidates %+v", res.Candidates)
		}
	}
	// And a stream again, from the entry too.
	again, _, hdr := geminiStream(t, cl, geminiModel, contents, nil)
	if hdr.Get("Groundhog-Cache") != "hit" || again != streamed {
		t.Fatalf("second stream: %q %q", hdr.Get("Groundhog-Cache"), again)
	}
	bill := h.bill()
	if bill.Calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", bill.Calls)
	}
	var spent groundhog.Money
	outcomes := map[groundhog.Outcome]int{}
	for _, r := range h.ledgerRows() {
		outcomes[r.Outcome]++
		if r.Shape != groundhog.ShapeGemini || r.Model != geminiModel || r.Provider != "sim" {
			t.Errorf("row shape %q model %q provider %q", r.Shape, r.Model, r.Provider)
		}
		spent += r.Cost
	}
	if outcomes[groundhog.OutcomeUpstream] != 1 || outcomes[groundhog.OutcomeCacheHit] != 3 {
		t.Fatalf("outcomes %v", outcomes)
	}
	if spent != h.Sim.Bill().USD || !spent.Known() || spent == 0 || spent.String() != bill.USD.String() {
		t.Fatalf("ledger cost %s, simulator bill %s", spent, bill.USD)
	}
}

// TestGeminiSDKStreamCoalesces: 8 identical streamGenerateContent calls at
// once make one upstream call; every one decodes the whole stream.
func TestGeminiSDKStreamCoalesces(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	cl := geminiClient(t, h, "k", map[string]string{"Groundhog-Cache": "use"})
	const n = 8
	fp, err := gemini.FingerprintBody(geminiModel, []byte(`{"contents":[{"parts":[{"text":"eight at once"}],"role":"user"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	hash := hashOf(t, "gemini", string(fp))
	texts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts[i], _, _ = geminiStream(t, cl, geminiModel, genai.Text("eight at once"), nil)
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

// TestGeminiSDKIdempotentReplay: a retried generateContent with the same
// Idempotency-Key is replayed, not paid again.
func TestGeminiSDKIdempotentReplay(t *testing.T) {
	h := newHarness(t)
	cl := geminiClient(t, h, "k", map[string]string{"Idempotency-Key": "order-42"})
	first, err := cl.Models.GenerateContent(context.Background(), geminiModel, genai.Text("place the order once"), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.Models.GenerateContent(context.Background(), geminiModel, genai.Text("place the order once"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := geminiHeader(again, "Idempotent-Replayed"); got != "true" {
		t.Fatalf("Idempotent-Replayed %q, want true", got)
	}
	if again.Text() != first.Text() || first.Text() == "" {
		t.Fatal("the replay answered another text")
	}
	if calls := h.bill().Calls; calls != 1 {
		t.Fatalf("upstream calls = %d, want 1", calls)
	}
}

// TestGeminiReportEqualsSimBill: a mixed Gemini workload through the SDK —
// calls sharing a 3,000-token system instruction (implicit caching reads
// it from the second call on), streamed and not, an exact-cache hit, a
// prompt under the minimum, a function call — and every figure of the
// report equals the simulator's bill to the micro-dollar: spend, input
// tokens (promptTokenCount, which already includes the cached tokens:
// never added twice), cached reads, uncached input and the saving of the
// exact cache.
func TestGeminiReportEqualsSimBill(t *testing.T) {
	h := newHarness(t)
	cl := geminiClient(t, h, "k", nil)
	ctx := context.Background()
	prefix := "You are the support agent. " + words(3000, "rule")
	sys := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText(prefix, genai.RoleUser),
		HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"Groundhog-Operation": {"support"}, "Groundhog-Cache": {"use"}}}}
	var reads int32
	for i := range 5 {
		contents := genai.Text(fmt.Sprintf("question %d about the invoice", i))
		if i == 2 {
			_, u, _ := geminiStream(t, cl, geminiModel, contents, sys)
			reads += u.CachedContentTokenCount
			continue
		}
		res, err := cl.Models.GenerateContent(ctx, geminiModel, contents, sys)
		if err != nil {
			t.Fatal(err)
		}
		u := res.UsageMetadata
		if i > 0 && (u.CachedContentTokenCount == 0 || u.CachedContentTokenCount > u.PromptTokenCount) {
			t.Fatalf("call %d: implicit cache read %d of a %d-token prompt", i, u.CachedContentTokenCount, u.PromptTokenCount)
		}
		reads += u.CachedContentTokenCount
	}
	// An exact repeat: answered by the gateway, no provider call.
	hit, err := cl.Models.GenerateContent(ctx, geminiModel, genai.Text("question 4 about the invoice"), sys)
	if err != nil || geminiHeader(hit, "Groundhog-Cache") != "hit" {
		t.Fatalf("repeat: %v %q", err, geminiHeader(hit, "Groundhog-Cache"))
	}
	// Under the minimum: nothing cached. A function call, on another operation.
	short := &genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"Groundhog-Operation": {"short"}}}}
	if _, err := cl.Models.GenerateContent(ctx, geminiModel, genai.Text("short"), short); err != nil {
		t.Fatal(err)
	}
	tools := &genai.GenerateContentConfig{HTTPOptions: short.HTTPOptions, Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "lookup_order", Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"id": {Type: genai.TypeString}}, Required: []string{"id"}}}}}}}
	fc, err := cl.Models.GenerateContent(ctx, geminiModel, genai.Text("where is my order?"), tools)
	if err != nil || len(fc.FunctionCalls()) != 1 || fc.FunctionCalls()[0].Name != "lookup_order" {
		t.Fatalf("function call: %v %+v", err, fc)
	}

	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	bill := readFullBill(t, h)
	pc := rep.Total.PromptCache
	if bill.CachedInputTokens == 0 || bill.CachedInputTokens != int64(reads) || bill.CacheWriteTokens != 0 {
		t.Fatalf("bill %+v, the SDK saw %d cached tokens", bill, reads)
	}
	p, _ := h.Cfg.PriceTable.Lookup(geminiModel)
	var hitCost groundhog.Money
	for _, r := range h.ledgerRows() {
		if r.Outcome == groundhog.OutcomeCacheHit {
			hitCost += r.Saved
		}
	}
	checks := []struct {
		name      string
		got, want string
	}{
		{"spend_usd", rep.Total.Spend.String(), bill.USD},
		{"input tokens", fmt.Sprint(pc.InputTokens), fmt.Sprint(bill.InputTokens)},
		{"cached_read_tokens", fmt.Sprint(pc.CachedReadTokens), fmt.Sprint(bill.CachedInputTokens)},
		{"cache_write_tokens", fmt.Sprint(pc.CacheWriteTokens), "0"},
		{"uncached_input_tokens", fmt.Sprint(pc.UncachedInputTokens), fmt.Sprint(bill.InputTokens - bill.CachedInputTokens)},
		{"prompt_cache_saved_usd", pc.Saved.String(), groundhog.Money(bill.CachedInputTokens * (p.Input - p.CachedInput)).String()},
		{"input_usd", mustMoney(t, bill.InputUSD, 0), (-groundhog.Money((bill.InputTokens-bill.CachedInputTokens)*p.Input + bill.CachedInputTokens*p.CachedInput)).String()},
		{"calls upstream", fmt.Sprint(rep.Total.UpstreamCalls), fmt.Sprint(bill.Calls)},
		{"saved by the exact cache", rep.Total.Saved.String(), hitCost.String()},
		{"prompt_cache_unknown_calls", fmt.Sprint(pc.UnknownCalls), "0"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("report %s = %s, sim bill says %s", c.name, c.got, c.want)
		}
	}
	if hitCost <= 0 {
		t.Errorf("the exact-cache hit saved %s", hitCost)
	}
	for _, r := range rep.Operations {
		if reads := r.PromptCache.CachedReadTokens; (r.Operation == "short") != (reads == 0) {
			t.Errorf("operation %s read %d prompt-cache tokens", r.Operation, reads)
		}
	}
}

// googleError is the error body a Gemini client reads.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// TestGeminiErrors: malformed JSON, a member of the wrong type, no
// contents, an unknown method and a bad key are answered in Google's
// error shape with the right status, before anything reaches the
// provider; a simulated 429 and 503 reach the SDK as APIErrors with their
// Google status.
func TestGeminiErrors(t *testing.T) {
	h := newHarness(t)
	path := "/v1beta/models/" + geminiModel + ":generateContent"
	for _, c := range []struct {
		name, path, body string
		status           int
		gstatus          string
	}{
		{"malformed JSON", path, `{"contents":[`, 400, "INVALID_ARGUMENT"},
		{"contents not an array", path, `{"contents":"hi"}`, 400, "INVALID_ARGUMENT"},
		{"generationConfig not an object", path, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":[1]}`, 400, "INVALID_ARGUMENT"},
		{"no contents", path, `{}`, 400, "INVALID_ARGUMENT"},
		{"bad model name", "/v1beta/models/gem%20ini:generateContent", `{"contents":[{"parts":[{"text":"x"}]}]}`, 404, "NOT_FOUND"},
	} {
		res, body := h.post(c.path, c.body, map[string]string{"Content-Type": "application/json"})
		var e googleError
		if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != c.status || e.Error.Code != c.status || e.Error.Status != c.gstatus || e.Error.Message == "" {
			t.Errorf("%s: %d %s", c.name, res.StatusCode, body)
		}
	}
	if calls := h.bill().Calls; calls != 0 {
		t.Fatalf("refused requests reached the provider: %d calls", calls)
	}
	res, body := h.post("/v1beta/models/"+geminiModel+":generateContent", `{"contents":[{"parts":[{"text":"x"}]}]}`, map[string]string{"Content-Type": "text/plain"})
	if res.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(body), `"status":"INVALID_ARGUMENT"`) {
		t.Errorf("text/plain body: %d %s", res.StatusCode, body)
	}
	for status, name := range map[int]string{429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"} {
		cl := geminiClient(t, h, "k", map[string]string{"Sim-Fault": fmt.Sprintf("status=%d", status)})
		_, err := cl.Models.GenerateContent(context.Background(), geminiModel, genai.Text("too fast"), nil)
		var api genai.APIError
		if !errors.As(err, &api) || api.Code != status || api.Status != name {
			t.Errorf("fault %d: %v (%+v), want %d %s", status, err, api, status, name)
		}
	}
}

// TestGeminiGatewayKeys: with gateway keys stored, an unknown or missing
// key is 401 UNAUTHENTICATED in Google's shape, in the x-goog-api-key
// header and in ?key= alike; the right key passes both ways, and the SDK
// sends it as x-goog-api-key.
func TestGeminiGatewayKeys(t *testing.T) {
	h := newHarness(t)
	secret := createGatewayKey(t, h, "acme")
	path := "/v1beta/models/" + geminiModel + ":generateContent"
	for _, c := range []struct {
		hdr   map[string]string
		query string
		want  int
	}{
		{map[string]string{"X-Goog-Api-Key": "wrong"}, "", 401},
		{nil, "?key=wrong", 401},
		{nil, "", 401},
		{map[string]string{"X-Goog-Api-Key": secret}, "", 200},
		{nil, "?key=" + secret, 200},
	} {
		hdr := map[string]string{"Content-Type": "application/json"}
		for k, v := range c.hdr {
			hdr[k] = v
		}
		res, body := h.post(path+c.query, `{"contents":[{"parts":[{"text":"who am i"}]}]}`, hdr)
		if res.StatusCode != c.want {
			t.Errorf("%v %q: %d %s", c.hdr, c.query, res.StatusCode, body)
			continue
		}
		var e googleError
		if c.want == 401 && (json.Unmarshal(body, &e) != nil || e.Error.Status != "UNAUTHENTICATED") {
			t.Errorf("401 body %s", body)
		}
	}
	cl := geminiClient(t, h, secret, nil)
	if _, err := cl.Models.GenerateContent(context.Background(), geminiModel, genai.Text("who am i"), nil); err != nil {
		t.Fatalf("the SDK with the gateway key: %v", err)
	}
}

// createGatewayKey stores a gateway key for tenant (which ends keyless
// mode) and returns its secret.
func createGatewayKey(t *testing.T, h *harness, tenant string) string {
	t.Helper()
	s, k := groundhog.NewAPIKey(tenant, time.Now())
	if err := h.DB.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGeminiProviderKeyAndPassthrough: whichever way the client sends its
// gateway key (x-goog-api-key through the SDK, ?key= in the URL), the
// provider sees only the gateway's Gemini key in x-goog-api-key and no key
// parameter; countTokens passes through authenticated, is answered by the
// provider and ledgered as a free passthrough call.
func TestGeminiProviderKeyAndPassthrough(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	var simURL string
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		target, _ := url.Parse(simURL)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	h := newHarness(t, func(s *setup) {
		s.gemini = &gateway.Upstream{BaseURL: rec.URL, APIKey: "provider-secret", Provider: "gemini"}
	})
	simURL = h.SimURL
	secret := createGatewayKey(t, h, "acme")
	cl := geminiClient(t, h, secret, nil)
	if _, err := cl.Models.GenerateContent(context.Background(), geminiModel, genai.Text("keys"), nil); err != nil {
		t.Fatal(err)
	}
	res, body := h.post("/v1beta/models/"+geminiModel+":streamGenerateContent?alt=sse&key="+secret, `{"contents":[{"parts":[{"text":"keys in the url"}]}]}`, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), "data: ") {
		t.Fatalf("?key= stream: %d %s", res.StatusCode, body)
	}
	ct, err := cl.Models.CountTokens(context.Background(), geminiModel, genai.Text("count these four words"), nil)
	if err != nil || ct.TotalTokens == 0 {
		t.Fatalf("countTokens: %+v %v", ct, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("the provider saw %d requests, want 3", len(seen))
	}
	for _, r := range seen {
		if r.Header.Get("X-Goog-Api-Key") != "provider-secret" || r.URL.Query().Has("key") ||
			strings.Contains(r.URL.RawQuery+fmt.Sprint(r.Header), secret) {
			t.Errorf("upstream %s %s got key %q, headers %v", r.Method, r.URL, r.Header.Get("X-Goog-Api-Key"), r.Header)
		}
	}
	var pass int
	for _, row := range h.ledgerRows() {
		if row.Outcome == groundhog.OutcomePassthrough {
			pass++
			if row.Cost != 0 || row.Tenant != "acme" || row.Model != geminiModel {
				t.Errorf("countTokens row: %+v", row)
			}
		}
	}
	if pass != 1 {
		t.Fatalf("%d passthrough rows, want 1", pass)
	}
}

// TestGeminiSDKEmbedContent: the SDK's embedContent (sent as
// batchEmbedContents) passes through to the provider and is ledgered with
// an unknown cost: Google's answer carries no token count to price.
func TestGeminiSDKEmbedContent(t *testing.T) {
	h := newHarness(t)
	cl := geminiClient(t, h, "any-key-while-keyless", nil)
	res, err := cl.Models.EmbedContent(context.Background(), "gemini-embedding-001",
		[]*genai.Content{genai.NewContentFromText("the harbor at dawn", genai.RoleUser), genai.NewContentFromText("the harbor at dusk", genai.RoleUser)},
		&genai.EmbedContentConfig{OutputDimensionality: genai.Ptr[int32](768)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != 2 || len(res.Embeddings[0].Values) != 768 {
		t.Fatalf("embeddings: %d", len(res.Embeddings))
	}
	// A passthrough's row is written once its answer is relayed.
	var rows []groundhog.LedgerEntry
	waitFor(t, func() bool { rows = h.ledgerRows(); return len(rows) > 0 })
	if len(rows) != 1 || rows[0].Outcome != groundhog.OutcomePassthrough || rows[0].Cost.Known() {
		t.Fatalf("ledger: %+v, want one passthrough row of unknown cost", rows)
	}
	if bill := h.bill(); bill.Calls != 1 || !bill.USD.Known() || bill.USD == 0 {
		t.Fatalf("the simulator billed %+v", bill)
	}
}
