package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

func geminiWords(n int, w string) string {
	return strings.TrimSpace(strings.Repeat(w+" ", n))
}

// geminiDo sends method to base+path as key's caller and decodes the JSON
// answer into out (when not nil).
func geminiDo(t *testing.T, method, base, path, key, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", key)
	status, _, b := do(t, req)
	if out != nil && status == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if status != http.StatusOK {
		var e struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error.Code != status || e.Error.Status == "" {
			t.Fatalf("%s %s: %d not in Google's error shape: %s", method, path, status, b)
		}
	}
	return status
}

type simCache struct {
	Name          string `json:"name"`
	Model         string `json:"model"`
	CreateTime    string `json:"createTime"`
	ExpireTime    string `json:"expireTime"`
	UsageMetadata struct {
		TotalTokenCount int64 `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

type simGenerate struct {
	UsageMetadata struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
}

// TestGeminiExplicitCacheBill: a cache's creation is billed at the input
// rate, every read at the cached rate (promptTokenCount includes the
// cache), and its storage rent to the second over its life: up to the
// clock's now while alive, up to its deletion after.
func TestGeminiExplicitCacheBill(t *testing.T) {
	clock := newFakeClock()
	s, base := startSim(t, Config{Clock: clock})
	const model = "gemini-2.5-flash"
	p, _ := pricing.Default().Lookup(model)
	doc := geminiWords(1500, "clause")
	create := fmt.Sprintf(`{"model":"models/%s","systemInstruction":{"parts":[{"text":"You answer questions on the contract."}]},"contents":[{"role":"user","parts":[{"text":%q}]}],"ttl":"3600s","displayName":"contract"}`, model, doc)
	var c simCache
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/cachedContents", "k1", create, &c); st != http.StatusOK {
		t.Fatalf("create: %d", st)
	}
	if !strings.HasPrefix(c.Name, "cachedContents/") || c.Model != "models/"+model || c.UsageMetadata.TotalTokenCount < 1024 {
		t.Fatalf("created %+v", c)
	}
	tokens := c.UsageMetadata.TotalTokenCount
	created, _ := time.Parse(time.RFC3339Nano, c.CreateTime)
	if exp, _ := time.Parse(time.RFC3339Nano, c.ExpireTime); exp.Sub(created) != time.Hour {
		t.Fatalf("expireTime %s for a 3600s ttl created at %s", c.ExpireTime, c.CreateTime)
	}

	var g simGenerate
	gen := fmt.Sprintf(`{"cachedContent":%q,"contents":[{"role":"user","parts":[{"text":"what is clause 7?"}]}]}`, c.Name)
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/"+model+":generateContent", "k1", gen, &g); st != http.StatusOK {
		t.Fatalf("generate: %d", st)
	}
	u := g.UsageMetadata
	if u.CachedContentTokenCount != tokens || u.PromptTokenCount <= tokens {
		t.Fatalf("usage %+v with a %d-token cache", u, tokens)
	}
	// Another key does not see the cache; a request that names it with its
	// own system instruction is refused.
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/"+model+":generateContent", "k2", gen, nil); st != http.StatusNotFound {
		t.Fatalf("another key's generate: %d", st)
	}
	withSys := fmt.Sprintf(`{"cachedContent":%q,"systemInstruction":{"parts":[{"text":"x"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, c.Name)
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/"+model+":generateContent", "k1", withSys, nil); st != http.StatusBadRequest {
		t.Fatalf("cache and systemInstruction: %d", st)
	}
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/models/gemini-2.5-pro:generateContent", "k1", gen, nil); st != http.StatusBadRequest {
		t.Fatalf("another model: %d", st)
	}
	short := fmt.Sprintf(`{"model":"models/%s","contents":[{"role":"user","parts":[{"text":"too short"}]}]}`, model)
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/cachedContents", "k1", short, nil); st != http.StatusBadRequest {
		t.Fatalf("a cache under the minimum: %d", st)
	}

	clock.Advance(20*time.Minute + 500*time.Millisecond)
	b := s.Bill()
	wantRent := p.CacheStorageCost(tokens, 20*60)
	if b.StorageUSD != wantRent || wantRent <= 0 {
		t.Fatalf("rent after 20 minutes %s, want %s", b.StorageUSD.Format(12), wantRent.Format(12))
	}
	wantIn := groundhog.Money(tokens*p.Input + (u.PromptTokenCount-tokens)*p.Input + tokens*p.CachedInput)
	if b.InputUSD != wantIn || b.CacheCreations != 1 || b.CacheCreateTokens != tokens || b.Calls != 1 {
		t.Fatalf("bill %+v: input %s, want %s", b, b.InputUSD, wantIn)
	}
	if b.USD != b.InputUSD+b.OutputUSD+b.StorageUSD {
		t.Fatalf("usd %s ≠ input + output + storage", b.USD)
	}

	// PATCH moves the expiry; GET shows it; list finds it; DELETE ends the rent.
	var up simCache
	if st := geminiDo(t, http.MethodPatch, base, "/v1beta/"+c.Name+"?updateMask=ttl", "k1", `{"ttl":"7200s"}`, &up); st != http.StatusOK {
		t.Fatalf("patch: %d", st)
	}
	if st := geminiDo(t, http.MethodPatch, base, "/v1beta/"+c.Name+"?updateMask=model", "k1", `{"model":"x"}`, nil); st != http.StatusBadRequest {
		t.Fatalf("patch of the model: %d", st)
	}
	var list struct {
		CachedContents []simCache `json:"cachedContents"`
	}
	if geminiDo(t, http.MethodGet, base, "/v1/cachedContents?pageSize=10", "k1", "", &list); len(list.CachedContents) != 1 || list.CachedContents[0].ExpireTime != up.ExpireTime {
		t.Fatalf("list %+v, patched %+v", list, up)
	}
	list.CachedContents = nil
	if geminiDo(t, http.MethodGet, base, "/v1/cachedContents", "k2", "", &list); len(list.CachedContents) != 0 {
		t.Fatalf("another key lists %+v", list)
	}
	clock.Advance(70 * time.Minute) // past the first expiry, before the patched one
	if st := geminiDo(t, http.MethodGet, base, "/v1beta/"+c.Name, "k1", "", nil); st != http.StatusOK {
		t.Fatalf("get after the patch: %d", st)
	}
	if st := geminiDo(t, http.MethodDelete, base, "/v1beta/"+c.Name, "k1", "", nil); st != http.StatusOK {
		t.Fatalf("delete: %d", st)
	}
	if st := geminiDo(t, http.MethodGet, base, "/v1beta/"+c.Name, "k1", "", nil); st != http.StatusNotFound {
		t.Fatalf("get after delete: %d", st)
	}
	life := int64(90 * 60) // 20m0.5s + 70m, truncated to the second
	clock.Advance(5 * time.Hour)
	if got, want := s.Bill().StorageUSD, p.CacheStorageCost(tokens, life); got != want {
		t.Fatalf("rent after delete %s, want %s", got.Format(12), want.Format(12))
	}
}

// TestGeminiExplicitCacheExpires: an expired cache is gone (404) and its
// rent stops at its expiry.
func TestGeminiExplicitCacheExpires(t *testing.T) {
	clock := newFakeClock()
	s, base := startSim(t, Config{Clock: clock})
	const model = "gemini-2.5-pro"
	p, _ := pricing.Default().Lookup(model)
	create := fmt.Sprintf(`{"model":"models/%s","contents":[{"parts":[{"text":%q}]}],"expireTime":%q}`,
		model, geminiWords(4100, "word"), clock.Now().Add(10*time.Minute).Format(time.RFC3339))
	var c simCache
	if st := geminiDo(t, http.MethodPost, base, "/v1beta/cachedContents", "k", create, &c); st != http.StatusOK {
		t.Fatalf("create: %d", st)
	}
	clock.Advance(time.Hour)
	if st := geminiDo(t, http.MethodGet, base, "/v1beta/"+c.Name, "k", "", nil); st != http.StatusNotFound {
		t.Fatalf("get after expiry: %d", st)
	}
	if got, want := s.Bill().StorageUSD, p.CacheStorageCost(c.UsageMetadata.TotalTokenCount, 600); got != want || want <= 0 {
		t.Fatalf("rent %s, want %s", got.Format(12), want.Format(12))
	}
}
