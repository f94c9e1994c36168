package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/transport"
)

// newSim starts a simulated provider whose first token waits for release
// (closed by the caller) so calls can overlap without sleeping.
func newSim(t *testing.T, hold chan struct{}) (*sim.Server, string) {
	t.Helper()
	cfg := sim.Config{}
	if hold != nil {
		cfg.FirstToken = time.Millisecond
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case <-hold:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	s := sim.New(cfg)
	url, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return s, url
}

func newTransport(t *testing.T, simURL string) *transport.Transport {
	t.Helper()
	tr, err := transport.New(context.Background(), transport.Options{
		DB:            filepath.Join(t.TempDir(), "groundhog.db"),
		OpenAIBaseURL: simURL + "/v1", AnthropicBaseURL: simURL + "/v1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	return tr
}

func rows(t *testing.T, tr *transport.Transport) []groundhog.LedgerEntry {
	t.Helper()
	ctx := context.Background()
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var out []groundhog.LedgerEntry
	err := tr.Store().ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		out = append(out, *e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openai-go with the transport: the SDK's default base URL, a cache hit on
// the second call, an idempotent retry replayed, every call ledgered.
func TestOpenAISDKThroughTransport(t *testing.T) {
	s, url := newSim(t, nil)
	tr := newTransport(t, url)
	client := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: tr}), option.WithAPIKey("sk-test"))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	var first, second *http.Response
	a, err := client.Chat.Completions.New(ctx, params, option.WithHeader("Groundhog-Cache", "use"), option.WithResponseInto(&first))
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Chat.Completions.New(ctx, params, option.WithHeader("Groundhog-Cache", "use"), option.WithResponseInto(&second))
	if err != nil {
		t.Fatal(err)
	}
	if first.Header.Get("Groundhog-Cache") != "miss" || second.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("cache states %q, %q; want miss, hit", first.Header.Get("Groundhog-Cache"), second.Header.Get("Groundhog-Cache"))
	}
	if a.Choices[0].Message.Content != b.Choices[0].Message.Content || a.ID != b.ID {
		t.Fatalf("the hit differs from the original")
	}
	if s.Bill().Calls != 1 {
		t.Fatalf("sim billed %d calls, want 1", s.Bill().Calls)
	}

	// Idempotent retry: the second attempt replays.
	idem := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("charge the card")}}
	var replay *http.Response
	if _, err := client.Chat.Completions.New(ctx, idem, option.WithHeader("Idempotency-Key", "order-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Chat.Completions.New(ctx, idem, option.WithHeader("Idempotency-Key", "order-1"), option.WithResponseInto(&replay)); err != nil {
		t.Fatal(err)
	}
	if replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry not replayed: %v", replay.Header)
	}
	if s.Bill().Calls != 2 {
		t.Fatalf("sim billed %d calls, want 2", s.Bill().Calls)
	}

	// A stream arrives through the pipe and accumulates to a whole message.
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != a.Choices[0].Message.Content {
		t.Fatalf("streamed content %q, want %q", acc.Choices[0].Message.Content, a.Choices[0].Message.Content)
	}

	got := rows(t, tr)
	outcomes := map[groundhog.Outcome]int{}
	for _, r := range got {
		outcomes[r.Outcome]++
	}
	want := map[groundhog.Outcome]int{groundhog.OutcomeUpstream: 3, groundhog.OutcomeCacheHit: 1, groundhog.OutcomeReplayed: 1}
	if len(got) != 5 || outcomes[groundhog.OutcomeUpstream] != want[groundhog.OutcomeUpstream] ||
		outcomes[groundhog.OutcomeCacheHit] != 1 || outcomes[groundhog.OutcomeReplayed] != 1 {
		t.Fatalf("ledger outcomes %v, want %v", outcomes, want)
	}
}

// 50 concurrent identical calls through one transport cost one upstream
// call: the pipeline coalesces them in process.
func TestTransportCoalesces50(t *testing.T) {
	hold := make(chan struct{})
	s, url := newSim(t, hold)
	tr := newTransport(t, url)
	client := anthropic.NewClient(aoption.WithHTTPClient(&http.Client{Transport: tr}), aoption.WithAPIKey("sk-ant-test"))
	params := anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("same question"))}}
	const n = 50
	var wg sync.WaitGroup
	texts := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			m, err := client.Messages.New(context.Background(), params, aoption.WithHeader("Groundhog-Cache", "use"))
			errs[i] = err
			if err == nil {
				texts[i] = m.Content[0].Text
			}
		}(i)
	}
	// Release the provider once every call has joined the flight or is
	// waiting for it: the one upstream call is held until then.
	deadline := time.Now().Add(20 * time.Second)
	for tr.InFlight() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling a counter, not waiting for a result
	}
	close(hold)
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if texts[i] != texts[0] {
			t.Fatalf("call %d got another answer", i)
		}
	}
	if s.Bill().Calls != 1 {
		t.Fatalf("sim billed %d calls for %d identical concurrent calls, want 1", s.Bill().Calls, n)
	}
	if got := len(rows(t, tr)); got != n {
		t.Fatalf("%d ledger rows, want %d", got, n)
	}
}

// The SDK's own provider key reaches the provider; a key set in Options
// wins over it.
func TestTransportProviderKey(t *testing.T) {
	var got []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	for _, c := range []struct{ optKey, want string }{{"", "Bearer sk-from-sdk"}, {"sk-from-options", "Bearer sk-from-options"}} {
		tr, err := transport.New(context.Background(), transport.Options{DB: filepath.Join(t.TempDir(), "g.db"), OpenAIBaseURL: up.URL + "/v1", OpenAIAPIKey: c.optKey})
		if err != nil {
			t.Fatal(err)
		}
		client := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: tr}), option.WithAPIKey("sk-from-sdk"))
		if _, err := client.Files.List(context.Background(), openai.FileListParams{}); err != nil {
			t.Fatal(err)
		}
		_ = tr.Close(context.Background())
		mu.Lock()
		last := got[len(got)-1]
		mu.Unlock()
		if last != c.want {
			t.Fatalf("provider got Authorization %q, want %q", last, c.want)
		}
	}
}

// When the transport forwards the callers' own provider keys, each key is
// its own tenant: a caller with another key (or one the provider revoked)
// never receives a cached answer or an idempotent replay made for another
// key, while the same key still hits its own cache. The ledger names the
// tenant by a digest, never by the key.
func TestTransportScopesByForwardedKey(t *testing.T) {
	s, url := newSim(t, nil)
	tr := newTransport(t, url)
	ctx := context.Background()
	const keyA, keyB = "sk-org-a-secret", "sk-org-b-secret"
	clientA := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: tr}), option.WithAPIKey(keyA))
	clientB := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: tr}), option.WithAPIKey(keyB))
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("org secrets")}}
	call := func(c openai.Client, opts ...option.RequestOption) *http.Response {
		t.Helper()
		var res *http.Response
		if _, err := c.Chat.Completions.New(ctx, params, append(opts, option.WithResponseInto(&res))...); err != nil {
			t.Fatal(err)
		}
		return res
	}
	use := option.WithHeader("Groundhog-Cache", "use")
	if got := call(clientA, use).Header.Get("Groundhog-Cache"); got != "miss" {
		t.Fatalf("A's first call: Groundhog-Cache %q, want miss", got)
	}
	if got := call(clientB, use).Header.Get("Groundhog-Cache"); got != "miss" {
		t.Fatalf("B's call with A's inputs: Groundhog-Cache %q, want miss (another key's answer)", got)
	}
	if got := call(clientA, use).Header.Get("Groundhog-Cache"); got != "hit" {
		t.Fatalf("A's second call: Groundhog-Cache %q, want hit", got)
	}

	idem := option.WithHeader("Idempotency-Key", "order-1")
	if got := call(clientA, idem).Header.Get("Idempotent-Replayed"); got == "true" {
		t.Fatalf("A's first idempotent call replayed")
	}
	if got := call(clientB, idem).Header.Get("Idempotent-Replayed"); got == "true" {
		t.Fatalf("B's call with A's Idempotency-Key replayed A's result")
	}
	if got := call(clientA, idem).Header.Get("Idempotent-Replayed"); got != "true" {
		t.Fatalf("A's retry not replayed: Idempotent-Replayed %q", got)
	}
	if s.Bill().Calls != 4 {
		t.Fatalf("sim billed %d calls, want 4 (A and B each a miss and a first idempotent call)", s.Bill().Calls)
	}

	tenants := map[string]bool{}
	for _, r := range rows(t, tr) {
		tenants[r.Tenant] = true
		if strings.Contains(r.Tenant, keyA) || strings.Contains(r.Tenant, keyB) || r.Tenant == groundhog.LocalTenant {
			t.Fatalf("ledger tenant %q: want a digest of the key", r.Tenant)
		}
	}
	if len(tenants) != 2 {
		t.Fatalf("ledger tenants %v, want one per key", tenants)
	}
}

// A transport forwarding the caller's own provider key reaches the
// caller's own account: a file made outside groundhog is listed, read and
// deleted through it, as the provider itself keeps accounts apart.
func TestTransportOwnAccountFilesUnscoped(t *testing.T) {
	_, url := newSim(t, nil)
	ctx := context.Background()
	direct := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("sk-own"))
	f, err := direct.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("made elsewhere\n"), "x.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	client := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: newTransport(t, url)}), option.WithAPIKey("sk-own"), option.WithMaxRetries(0))
	if got, err := client.Files.Get(ctx, f.ID); err != nil || got.ID != f.ID {
		t.Fatalf("get a file of the caller's own account: %+v %v", got, err)
	}
	page, err := client.Files.List(ctx, openai.FileListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.ID {
		t.Fatalf("list the caller's own account: %+v %v", page, err)
	}
	if del, err := client.Files.Delete(ctx, f.ID); err != nil || !del.Deleted {
		t.Fatalf("delete: %+v %v", del, err)
	}
}
