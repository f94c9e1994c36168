package gateway_test

// Regression tests from the code review of the gateway: each one
// demonstrated a defect (since fixed) and fails if it comes back.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/sim"
)

const reviewProviderKey = "sk-provider-SECRET-do-not-leak"

// 1. isTerminal and wire.StreamComplete disagree: a stream that
// StreamComplete accepts (and that is cached) may never show relay a
// terminal event, so relay ends at io.EOF with no ledger row, no settled
// claim and no cost trailer.
func TestReviewRelayUnrecognisedTerminalLosesRow(t *testing.T) {
	// A Responses stream from an OpenAI-compatible server that sends data-only
	// events serialized with Python's default separators ("type": "...").
	events := []string{
		`{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "model": "sim-small"}}`,
		`{"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "content_index": 0, "delta": "hi"}`,
		`{"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "model": "sim-small", "output": [{"type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}], "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}}}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	}))
	defer up.Close()
	r := newHarness(t, withUpstream(up.URL+"/v1", reviewProviderKey), withConfig(func(c *config.Config) { c.Idempotency.Lease = 300 * time.Millisecond }))
	body := `{"model":"sim-small","stream":true,"input":"hi"}`
	res, b := r.post("/v1/responses", body, map[string]string{"Idempotency-Key": "k-terminal", "Groundhog-Cache": "use"})
	if res.StatusCode != 200 || !strings.Contains(string(b), "response.completed") {
		t.Fatalf("status %d body %q", res.StatusCode, b)
	}
	if res.Trailer.Get("Groundhog-Cost-USD") == "" {
		t.Errorf("complete stream delivered without a Groundhog-Cost-USD trailer")
	}
	if rows := r.ledgerRows(); len(rows) != 1 {
		t.Errorf("ledger rows for one complete streamed call: got %d, want 1", len(rows))
	}
	// The claim is settled before the terminal event is written, so the
	// record is terminal as soon as the client has the complete stream.
	op, err := r.Idem.GetByKey(context.Background(), groundhog.LocalTenant, "k-terminal")
	if err != nil {
		t.Fatal(err)
	}
	if !op.Status.Terminal() {
		t.Errorf("operation record is %s after a complete, delivered stream (want completed)", op.Status)
	}
}

// blockingStore makes the first GetCache wait until released and then miss,
// as a lookup that read the store just before another flight wrote it.
type blockingStore struct {
	groundhog.CacheStore
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) GetCache(ctx context.Context, tenant, hash string, now time.Time) (*groundhog.CacheEntry, error) {
	if b.calls.Add(1) == 1 {
		close(b.entered)
		<-b.release
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "miss")
	}
	return b.CacheStore.GetCache(ctx, tenant, hash, now)
}

// 2. The leader's second cache look-up (upstreamCall's re-check) can answer
// from the cache, but the call is then accounted as an upstream call with
// the original cost: the ledger's upstream spend exceeds the provider's bill
// and the client is told "miss" and charged a cost.
func TestReviewRecheckHitCountedAsUpstream(t *testing.T) {
	bs := &blockingStore{entered: make(chan struct{}), release: make(chan struct{})}
	simSrv := sim.New(sim.Config{Prices: config.Default().PriceTable})
	simURL, shutdown, err := simSrv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	r := newHarness(t, withUpstream(simURL+"/v1", reviewProviderKey), withCacheStore(func(s groundhog.CacheStore) groundhog.CacheStore { bs.CacheStore = s; return bs }))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"recheck"}]}`
	hdr := map[string]string{"Groundhog-Cache": "use"}
	var wg sync.WaitGroup
	var resB *http.Response
	wg.Add(1)
	go func() { defer wg.Done(); resB, _ = r.post("/v1/chat/completions", body, hdr) }()
	<-bs.entered
	resA, _ := r.post("/v1/chat/completions", body, hdr) // leads, pays, stores
	close(bs.release)
	wg.Wait()
	t.Logf("A: cache=%s cost=%s; B: cache=%s cost=%s", resA.Header.Get("Groundhog-Cache"), resA.Header.Get("Groundhog-Cost-USD"),
		resB.Header.Get("Groundhog-Cache"), resB.Header.Get("Groundhog-Cost-USD"))

	var spend groundhog.Money
	upstream := 0
	for _, row := range r.ledgerRows() {
		if row.Outcome == groundhog.OutcomeUpstream {
			upstream++
			spend += row.Cost
		}
	}
	res, err := http.Get(simURL + "/sim/v1/bill")
	if err != nil {
		t.Fatal(err)
	}
	bill, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if upstream != 1 {
		t.Errorf("ledger has %d upstream rows (spend %s) for one provider call (bill %s)", upstream, spend, bill)
	}
	if resB.Header.Get("Groundhog-Cache") == "miss" && resB.Header.Get("Groundhog-Cost-USD") != "0.000000" {
		t.Errorf("B was served from the cache but says Groundhog-Cache: miss, Groundhog-Cost-USD: %s", resB.Header.Get("Groundhog-Cost-USD"))
	}
}

// 3. /v1/models/{id} builds the upstream URL from the decoded path, so an
// escaped slash walks out of /models on the provider, with the gateway's
// provider key attached (and redirects are followed).
func TestReviewModelsPathEscapesToOtherProviderEndpoints(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/files", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":"file-of-another-tenant"}]}`)
	})
	mux.HandleFunc("/v1/models/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"m"}`)
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	r := newHarness(t, withUpstream(up.URL+"/v1", reviewProviderKey))
	res, err := http.Get(r.URL + "/v1/models/..%2Ffiles")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) > 0 || strings.Contains(string(b), "another-tenant") {
		t.Errorf("GET /v1/models/..%%2Ffiles reached the provider's /v1/files: %q; client got %d %s", seen, res.StatusCode, b)
	}
}

// 4. A Groundhog-Cache-TTL large enough to overflow time.Duration passes
// validation (400 expected) and yields a negative TTL: an entry that never
// expires.
func TestReviewCacheTTLOverflow(t *testing.T) {
	h := newHarness(t)
	body := `{"model":"sim-small","messages":[{"role":"user","content":"ttl overflow"}]}`
	res, b := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use", "Groundhog-Cache-TTL": "9223372037"})
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("Groundhog-Cache-TTL: 9223372037 (> max_ttl): status %d, want 400: %.100s", res.StatusCode, b)
	}
}

// 5. The versions of an operation chosen by a config rule (no
// Groundhog-Operation header) are not joined to the fingerprint: the hash is
// computed with Operations[""] before the rule is applied, so bumping that
// operation's versions does not invalidate its cache entries.
func TestReviewRuleOperationVersionsNotInFingerprint(t *testing.T) {
	hashWith := func(versions string, header bool) string {
		h := newHarness(t, withConfig(func(c *config.Config) {
			c.Operations = map[string]config.Operation{"extract": {Cache: true, Versions: versions}}
			c.Rules = []config.Rule{{Model: "sim-*", Operation: "extract"}}
		}))
		hdr := map[string]string{}
		if header {
			hdr["Groundhog-Operation"] = "extract"
		}
		res, _ := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"v"}]}`, hdr)
		return res.Header.Get("Groundhog-Request-Hash")
	}
	if hashWith("prompt=1", true) == hashWith("prompt=2", true) {
		t.Fatal("control: header-named operation versions are not in the hash either")
	}
	if a, b := hashWith("prompt=1", false), hashWith("prompt=2", false); a == b {
		t.Errorf("operation chosen by a rule: versions prompt=1 and prompt=2 give the same hash %s", a)
	}
}

// 6. A ledger Record failure is only logged: the client still gets a
// complete response that has no row (e.g. every call still running when
// serve's shutdown timeout closes the ledger writer).
func TestReviewRecordFailureStillAnswers(t *testing.T) {
	h := newHarness(t)
	if err := h.Ledger.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, b := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"no ledger"}]}`, nil)
	if res.StatusCode == http.StatusOK {
		t.Errorf("response completed (200, %d bytes) although its ledger row could not be recorded (writer closed)", len(b))
	}
}

// 7. Headers that change the model's output are not in the fingerprint: a
// Messages call with another anthropic-beta is served the cached answer.
func TestReviewAnthropicBetaNotInKey(t *testing.T) {
	h := newHarness(t)
	body := `{"model":"sim-small","max_tokens":16,"messages":[{"role":"user","content":"beta"}]}`
	h.post("/v1/messages", body, map[string]string{"Groundhog-Cache": "use", "anthropic-beta": "output-128k-2025-02-19"})
	res, _ := h.post("/v1/messages", body, map[string]string{"Groundhog-Cache": "use", "anthropic-beta": "interleaved-thinking-2025-05-14"})
	if res.Header.Get("Groundhog-Cache") == "hit" {
		t.Errorf("a call with a different anthropic-beta header was a cache hit")
	}
}

// 8. A 2xx non-streamed body is stored without checking it is complete: a
// close-delimited response (no Content-Length, not chunked) cut short by the
// provider reads as a clean EOF, and the truncated JSON is cached and
// replayed.
func TestReviewTruncatedCloseDelimitedBodyCached(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
		buf.WriteString(`{"id":"chatcmpl-1","object":"chat.completion","model":"sim-small","choices":[{"index":0,"message":{"role":"assistant","content":"the first half of`)
		buf.Flush()
	}))
	defer up.Close()
	r := newHarness(t, withUpstream(up.URL+"/v1", reviewProviderKey))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"truncated"}]}`
	hdr := map[string]string{"Groundhog-Cache": "use"}
	res1, b1 := r.post("/v1/chat/completions", body, hdr)
	res2, b2 := r.post("/v1/chat/completions", body, hdr)
	t.Logf("first: %d %s; second: %d cache=%s", res1.StatusCode, b1, res2.StatusCode, res2.Header.Get("Groundhog-Cache"))
	if res1.StatusCode == 200 {
		t.Errorf("truncated upstream body answered as a 200 success: %s", b1)
	}
	if res2.Header.Get("Groundhog-Cache") == "hit" {
		t.Errorf("truncated upstream body was cached and replayed: %s", b2)
	}
}
