package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/gateway"
)

// fakeGemini is the Gemini API's cachedContents lifecycle (create, get,
// list with a page token, patch, delete) in front of the simulated
// provider, which serves every other route. It records every request it
// receives, as the provider would see them.
type fakeGemini struct {
	mu     sync.Mutex
	caches map[string]bool // name → exists
	next   int
	seen   []string // "METHOD path body"
	url    string   // where it listens
}

func (f *fakeGemini) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func (f *fakeGemini) handler(simURL *string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path+" "+string(body))
		f.mu.Unlock()
		_, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/") // without the version
		if strings.HasSuffix(rest, ":generateContent") && strings.Contains(string(body), "cachedContents/") {
			// The simulator has no explicit caches: answer as Google would.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"from the cache"}]},"finishReason":"STOP"}],`+
				`"usageMetadata":{"promptTokenCount":1200,"cachedContentTokenCount":1100,"candidatesTokenCount":4,"totalTokenCount":1204},"modelVersion":"`+geminiModel+`"}`)
			return
		}
		if rest != "cachedContents" && !strings.HasPrefix(rest, "cachedContents/") {
			target, _ := url.Parse(*simURL)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		cache := func(name string) map[string]any {
			return map[string]any{"name": name, "model": "models/" + geminiModel, "displayName": name, "expireTime": "2030-01-01T00:00:00Z"}
		}
		switch {
		case rest == "cachedContents" && r.Method == http.MethodPost:
			f.next++
			name := fmt.Sprintf("cachedContents/c%03d", f.next)
			if f.caches == nil {
				f.caches = map[string]bool{}
			}
			f.caches[name] = true
			_ = json.NewEncoder(w).Encode(cache(name))
		case rest == "cachedContents" && r.Method == http.MethodGet:
			var list []map[string]any
			for name := range f.caches {
				list = append(list, cache(name))
			}
			slices.SortFunc(list, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
			_ = json.NewEncoder(w).Encode(map[string]any{"cachedContents": list, "nextPageToken": "page-2"})
		case !f.caches[rest]:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		case r.Method == http.MethodDelete:
			delete(f.caches, rest)
			fmt.Fprint(w, `{}`)
		default: // get, patch
			_ = json.NewEncoder(w).Encode(cache(rest))
		}
	})
}

// newCacheHarness is a harness whose Gemini upstream is a fakeGemini.
func newCacheHarness(t *testing.T) (*harness, *fakeGemini) {
	f := &fakeGemini{}
	var simURL string
	up := httptest.NewServer(f.handler(&simURL))
	t.Cleanup(up.Close)
	f.url = up.URL
	h := newHarness(t, func(s *setup) {
		s.gemini = &gateway.Upstream{BaseURL: up.URL, APIKey: "provider-secret", Provider: "gemini"}
	})
	simURL = h.SimURL
	return h, f
}

// isNotFound reports whether err is Google's 404 NOT_FOUND as the SDK
// raises it.
func isNotFound(err error) bool {
	var api genai.APIError
	return errors.As(err, &api) && api.Code == http.StatusNotFound && api.Status == "NOT_FOUND"
}

func createCache(t *testing.T, cl *genai.Client, text string) string {
	t.Helper()
	c, err := cl.Caches.Create(context.Background(), geminiModel, &genai.CreateCachedContentConfig{
		Contents: genai.Text(text), DisplayName: text,
	})
	if err != nil || !strings.HasPrefix(c.Name, "cachedContents/") {
		t.Fatalf("create cache: %+v %v", c, err)
	}
	return c.Name
}

// TestGeminiCachesAreTenantScoped: through the official SDK, a tenant
// creates, reads, updates, lists, uses and deletes its own explicit
// caches; every use of another tenant's cache — get, update, delete,
// generateContent, streamGenerateContent, countTokens, under the member's
// JSON or proto name — is 404 NOT_FOUND with nothing sent upstream and no
// ledger row; the list shows each tenant its own caches only, page token
// kept; a delete forgets the record.
func TestGeminiCachesAreTenantScoped(t *testing.T) {
	h, f := newCacheHarness(t)
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := geminiClient(t, h, acmeKey, nil), geminiClient(t, h, globexKey, nil)
	mine := createCache(t, acme, "acme's long document")
	theirs := createCache(t, globex, "globex's long document")

	// Globex against acme's cache: refused before the provider.
	before := len(f.requests())
	if _, err := globex.Caches.Get(ctx, mine, nil); !isNotFound(err) {
		t.Errorf("get another tenant's cache: %v", err)
	}
	if _, err := globex.Caches.Update(ctx, mine, &genai.UpdateCachedContentConfig{TTL: 3600e9}); !isNotFound(err) {
		t.Errorf("update another tenant's cache: %v", err)
	}
	if _, err := globex.Caches.Delete(ctx, mine, nil); !isNotFound(err) {
		t.Errorf("delete another tenant's cache: %v", err)
	}
	if _, err := globex.Models.GenerateContent(ctx, geminiModel, genai.Text("summarize"), &genai.GenerateContentConfig{CachedContent: mine}); !isNotFound(err) {
		t.Errorf("generateContent with another tenant's cache: %v", err)
	}
	for _, c := range []struct{ path, body string }{
		{":streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"s"}]}],"cachedContent":"` + mine + `"}`},
		{":generateContent", `{"contents":[{"parts":[{"text":"s"}]}],"cached_content":"` + mine + `"}`},
		{":generateContent", `{"contents":[{"parts":[{"text":"s"}]}],"cachedContent":"` + strings.TrimPrefix(mine, "cachedContents/") + `"}`},
		{":generateContent", `{"contents":[{"parts":[{"text":"s"}]}],"cached\u0043ontent":"` + mine + `"}`},
		{":generateContent", `{"contents":[{"parts":[{"text":"s"}]}],"cachedContent":"` + theirs + `","cachedContent":"` + mine + `"}`},
		{":countTokens", `{"generateContentRequest":{"model":"models/` + geminiModel + `","contents":[{"parts":[{"text":"s"}]}],"cachedContent":"` + mine + `"}}`},
	} {
		res, body := h.post("/v1beta/models/"+geminiModel+c.path, c.body, map[string]string{"X-Goog-Api-Key": globexKey})
		var e googleError
		if res.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Error.Status != "NOT_FOUND" || e.Error.Code != 404 {
			t.Errorf("%s %s: %d %s", c.path, c.body, res.StatusCode, body)
		}
	}
	if got := f.requests()[before:]; len(got) != 0 {
		t.Fatalf("refused requests reached the provider: %q", got)
	}
	for _, row := range h.ledgerRows() {
		if row.Tenant == "globex" && row.Outcome != groundhog.OutcomePassthrough {
			t.Errorf("a refused call left a ledger row: %+v", row)
		}
	}

	// Acme uses its own cache.
	if c, err := acme.Caches.Get(ctx, mine, nil); err != nil || c.Name != mine {
		t.Fatalf("get own cache: %+v %v", c, err)
	}
	if _, err := acme.Caches.Update(ctx, mine, &genai.UpdateCachedContentConfig{TTL: 3600e9}); err != nil {
		t.Fatalf("update own cache: %v", err)
	}
	res, err := acme.Models.GenerateContent(ctx, geminiModel, genai.Text("summarize"), &genai.GenerateContentConfig{CachedContent: mine})
	if err != nil || res.Text() == "" {
		t.Fatalf("generateContent with own cache: %v", err)
	}
	var sent bool
	for _, r := range f.requests() {
		sent = sent || strings.Contains(r, ":generateContent") && strings.Contains(r, mine)
	}
	if !sent {
		t.Fatal("generateContent with the tenant's own cache did not reach the provider with it")
	}

	// Each tenant lists its own caches; the page token passes.
	for _, c := range []struct {
		cl   *genai.Client
		key  string
		want string
	}{{acme, acmeKey, mine}, {globex, globexKey, theirs}} {
		var names []string
		page, err := c.cl.Caches.List(ctx, &genai.ListCachedContentsConfig{PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, cc := range page.Items {
			names = append(names, cc.Name)
		}
		if !slices.Equal(names, []string{c.want}) || page.NextPageToken != "page-2" {
			t.Errorf("list: %v, token %q; want [%s] and page-2", names, page.NextPageToken, c.want)
		}
	}

	// A delete forgets: the name is then unknown without asking the provider.
	if _, err := acme.Caches.Delete(ctx, mine, nil); err != nil {
		t.Fatalf("delete own cache: %v", err)
	}
	before = len(f.requests())
	if _, err := acme.Caches.Get(ctx, mine, nil); !isNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	if got := f.requests()[before:]; len(got) != 0 {
		t.Errorf("a forgotten cache was asked of the provider: %q", got)
	}
}

// TestGeminiCachesKeyless: with no gateway keys (loopback), the one
// default tenant creates, uses and lists its caches as before; a cache
// created outside the gateway is still not reachable through it.
func TestGeminiCachesKeyless(t *testing.T) {
	h, f := newCacheHarness(t)
	ctx := context.Background()
	cl := geminiClient(t, h, "any-key-while-keyless", nil)
	name := createCache(t, cl, "a local document")
	if _, err := cl.Models.GenerateContent(ctx, geminiModel, genai.Text("use it"), &genai.GenerateContentConfig{CachedContent: name}); err != nil {
		t.Fatalf("generateContent with the cache: %v", err)
	}
	f.mu.Lock()
	f.caches["cachedContents/outside"] = true
	f.mu.Unlock()
	page, err := cl.Caches.List(ctx, nil)
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != name {
		t.Fatalf("list: %+v %v", page.Items, err)
	}
	if _, err := cl.Caches.Get(ctx, "cachedContents/outside", nil); !isNotFound(err) {
		t.Fatalf("a cache the gateway did not create: %v", err)
	}
}

// TestGeminiCacheRecordSharedByReplicas: the record of who created a cache
// is in the database, so a second gateway on the same database (another
// replica, or the same one after a restart) serves the creator its cache
// and refuses it to another tenant.
func TestGeminiCacheRecordSharedByReplicas(t *testing.T) {
	h, f := newCacheHarness(t)
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	name := createCache(t, geminiClient(t, h, acmeKey, nil), "shared by replicas")

	c, err := cache.New(cache.Options{Store: h.DB, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	gw2 := gateway.New(gateway.Options{Config: h.Cfg, Keys: h.DB, Cache: c, Ledger: h.Ledger,
		Gemini: gateway.Upstream{BaseURL: f.url, APIKey: "provider-secret", Provider: "gemini"}})
	srv := httptest.NewServer(gw2)
	t.Cleanup(srv.Close)
	replica := &harness{t: t, URL: srv.URL}
	if got, err := geminiClient(t, replica, acmeKey, nil).Caches.Get(ctx, name, nil); err != nil || got.Name != name {
		t.Fatalf("the creator through the other replica: %+v %v", got, err)
	}
	if _, err := geminiClient(t, replica, globexKey, nil).Caches.Get(ctx, name, nil); !isNotFound(err) {
		t.Fatalf("another tenant through the other replica: %v", err)
	}
}
