package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
)

// googleErr reads a Google-shaped error body and reports whether it has
// code status, a canonical status name and a message.
func googleErr(body []byte, status int) (googleError, bool) {
	var e googleError
	err := json.Unmarshal(body, &e)
	return e, err == nil && e.Error.Code == status && e.Error.Status != "" && e.Error.Message != ""
}

// TestGeminiRoutesRefuseBadKeys: with gateway keys stored, every Gemini
// route — the pipeline's, every passthrough, the cachedContents lifecycle,
// both API versions — answers a missing or wrong key (header or ?key=)
// with 401 UNAUTHENTICATED in Google's shape, and the provider sees
// nothing.
func TestGeminiRoutesRefuseBadKeys(t *testing.T) {
	h, f := newCacheHarness(t)
	createGatewayKey(t, h, "acme")
	m := "/v1beta/models/" + geminiModel
	gen := `{"contents":[{"parts":[{"text":"x"}]}]}`
	routes := []struct{ method, path, body string }{
		{"POST", m + ":generateContent", gen},
		{"POST", m + ":streamGenerateContent?alt=sse", gen},
		{"POST", "/v1/models/" + geminiModel + ":generateContent", gen},
		{"POST", "/v1/models/" + geminiModel + ":streamGenerateContent?alt=sse", gen},
		{"POST", m + ":countTokens", gen},
		{"POST", m + ":embedContent", `{"content":{"parts":[{"text":"x"}]}}`},
		{"POST", m + ":batchEmbedContents", `{"requests":[]}`},
		{"GET", "/v1beta/models", ""},
		{"GET", m, ""},
		{"POST", "/v1beta/cachedContents", `{"model":"models/` + geminiModel + `","contents":[]}`},
		{"GET", "/v1beta/cachedContents", ""},
		{"GET", "/v1beta/cachedContents/c001", ""},
		{"PATCH", "/v1beta/cachedContents/c001", `{"ttl":"60s"}`},
		{"DELETE", "/v1beta/cachedContents/c001", ""},
		{"GET", "/v1/cachedContents", ""},
		{"DELETE", "/v1/cachedContents/c001", ""},
		{"GET", "/v1beta/files", ""},
		{"DELETE", "/v1beta/files/f1", ""},
		{"GET", "/v1beta/tunedModels", ""},
	}
	creds := []struct {
		name, header, query string
	}{{"no key", "", ""}, {"wrong header key", "gh_wrong", ""}, {"wrong ?key=", "", "key=gh_wrong"}}
	for _, r := range routes {
		for _, c := range creds {
			u := h.URL + r.path
			if c.query != "" {
				u += map[bool]string{true: "&", false: "?"}[strings.Contains(u, "?")] + c.query
			}
			req, _ := http.NewRequest(r.method, u, strings.NewReader(r.body))
			req.Header.Set("Content-Type", "application/json")
			if c.header != "" {
				req.Header.Set("X-Goog-Api-Key", c.header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if e, ok := googleErr(body, 401); res.StatusCode != 401 || !ok || e.Error.Status != "UNAUTHENTICATED" {
				t.Errorf("%s %s, %s: %d %s", r.method, r.path, c.name, res.StatusCode, body)
			}
		}
	}
	if got := f.requests(); len(got) != 0 {
		t.Fatalf("unauthenticated requests reached the provider: %q", got)
	}
	if n := h.bill().Calls; n != 0 {
		t.Fatalf("the simulator billed %d calls", n)
	}
}

// TestGeminiCachedAnswerStaysWithTenant: the same generateContent body
// from two tenants with the response cache on: the second tenant's call is
// a miss answered by the provider, never the first tenant's stored answer;
// each tenant then hits its own entry.
func TestGeminiCachedAnswerStaysWithTenant(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	use := map[string]string{"Groundhog-Cache": "use"}
	acme := geminiClient(t, h, createGatewayKey(t, h, "acme"), use)
	globex := geminiClient(t, h, createGatewayKey(t, h, "globex"), use)
	ask := genai.Text("the quarterly numbers for my account")
	for i, c := range []struct {
		cl   *genai.Client
		want string
	}{{acme, "miss"}, {acme, "hit"}, {globex, "miss"}, {globex, "hit"}} {
		res, err := c.cl.Models.GenerateContent(ctx, geminiModel, ask, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := geminiHeader(res, "Groundhog-Cache"); got != c.want {
			t.Fatalf("call %d: Groundhog-Cache %q, want %q", i, got, c.want)
		}
	}
	if n := h.bill().Calls; n != 2 {
		t.Fatalf("the provider answered %d calls, want 2 (one per tenant)", n)
	}
	// Streams share the body's entry within a tenant only, too.
	_, _, hdr := geminiStream(t, globex, geminiModel, ask, nil)
	if hdr.Get("Groundhog-Cache") != "hit" || h.bill().Calls != 2 {
		t.Fatalf("globex stream: Groundhog-Cache %q, provider calls %d", hdr.Get("Groundhog-Cache"), h.bill().Calls)
	}
}

// TestGeminiBadBodies: bodies that are not a GenerateContentRequest, a
// body over max_body_bytes (by Content-Length and streamed chunked) and a
// body that stalls are refused in Google's error shape before anything is
// sent upstream.
func TestGeminiBadBodies(t *testing.T) {
	h := newHarness(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = 4096 }))
	path := "/v1beta/models/" + geminiModel + ":generateContent"
	for _, body := range []string{
		``, `null`, `[]`, `"contents"`, `42`, `{"contents":[`, `{"contents":[{"parts":[{"text":"x"}]}]} trailing`,
		`{"contents":[1]}`, `{"contents":{"parts":[]}}`, `{"contents":[{"parts":[{"text":"x"}]}],"tools":"none"}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"systemInstruction":"be brief"}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"safetySettings":{}}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"cachedContent":5}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":"hot"}`,
	} {
		for _, p := range []string{path, "/v1beta/models/" + geminiModel + ":streamGenerateContent?alt=sse"} {
			res, b := h.post(p, body, nil)
			if _, ok := googleErr(b, 400); res.StatusCode != 400 || !ok {
				t.Errorf("%s %q: %d %s", p, body, res.StatusCode, b)
			}
		}
	}
	big := `{"contents":[{"parts":[{"text":"` + strings.Repeat("a", 5000) + `"}]}]}`
	res, b := h.post(path, big, nil)
	if _, ok := googleErr(b, 413); res.StatusCode != 413 || !ok {
		t.Errorf("oversized body: %d %s", res.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodPost, h.URL+path, io.MultiReader(strings.NewReader(big))) // no Content-Length: chunked
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	chunked, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(chunked.Body)
	chunked.Body.Close()
	if _, ok := googleErr(b, 413); chunked.StatusCode != 413 || !ok {
		t.Errorf("oversized chunked body: %d %s", chunked.StatusCode, b)
	}

	srv := httptest.NewServer(httpguard.Handler(h.GW, httpguard.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	defer srv.Close()
	for _, p := range []string{path, "/v1beta/models/" + geminiModel + ":countTokens"} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n{\"contents\":", p)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a hang only
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no response to a stalled body: %v", p, err)
		}
		b, _ := io.ReadAll(res.Body)
		c.Close()
		if _, ok := googleErr(b, 408); res.StatusCode != 408 || !ok {
			t.Errorf("%s stalled body: %d %s", p, res.StatusCode, b)
		}
	}
	if n := h.bill().Calls; n != 0 {
		t.Fatalf("refused bodies reached the provider: %d calls", n)
	}
}

// TestGeminiMalformedUpstreamStream: a provider stream with a garbage line
// or a truncated JSON chunk, and a body answer cut mid-JSON, are errors to
// the client (an error chunk, or a 502 in Google's shape) and are never
// stored: the same call asked again goes to the provider again.
func TestGeminiMalformedUpstreamStream(t *testing.T) {
	good := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"modelVersion":"` + geminiModel + `"}` + "\n\n"
	for _, c := range []struct {
		name, path, ct, answer string
	}{
		{"garbage line", ":streamGenerateContent?alt=sse", "text/event-stream", good + "this is not an event\n\n" + `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}` + "\n\n"},
		{"truncated chunk", ":streamGenerateContent?alt=sse", "text/event-stream", good + `data: {"candidates":[{"content":{"role":"model","parts":[{"te` + "\n\n"},
		{"truncated body", ":generateContent", "application/json", `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", c.ct)
				fmt.Fprint(w, c.answer)
			}))
			defer up.Close()
			h := newHarness(t, func(s *setup) {
				s.gemini = &gateway.Upstream{BaseURL: up.URL, APIKey: "provider-secret", Provider: "gemini"}
			})
			path := "/v1beta/models/" + geminiModel + c.path
			body := `{"contents":[{"parts":[{"text":"say hello"}]}]}`
			for i := range 2 {
				res, b := h.post(path, body, map[string]string{"Groundhog-Cache": "use"})
				if res.Header.Get("Groundhog-Cache") == "hit" {
					t.Fatalf("call %d: a broken answer was served from the cache", i)
				}
				if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") && res.StatusCode == 200 {
					lines := strings.Split(strings.TrimSpace(string(b)), "\n")
					last := strings.TrimPrefix(lines[len(lines)-1], "data: ")
					if _, ok := googleErr([]byte(last), 502); !ok {
						t.Fatalf("call %d: stream does not end with an error chunk: %s", i, b)
					}
				} else if _, ok := googleErr(b, 502); res.StatusCode != 502 || !ok {
					t.Fatalf("call %d: %d %s", i, res.StatusCode, b)
				}
			}
			if n := calls.Load(); n != 2 {
				t.Fatalf("the provider was asked %d times, want 2 (nothing stored)", n)
			}
		})
	}
}
