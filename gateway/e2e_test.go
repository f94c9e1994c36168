package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

func openaiClient(h *harness, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(h.URL + "/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
	}, opts...)...)
}

func anthropicClient(h *harness, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(h.URL), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0),
	}, opts...)...)
}

// The official OpenAI SDK, unmodified but for its base URL: non-stream and
// stream; a repeated call with Groundhog-Cache: use is a hit that costs the
// provider nothing; refresh goes upstream once more.
func TestOpenAISDKCacheHitAndRefresh(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	client := openaiClient(h)
	params := openai.ChatCompletionNewParams{
		Model:    "sim-small",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarize the design of groundhog.")},
	}
	var first *http.Response
	c1, err := client.Chat.Completions.New(ctx, params, option.WithHeader("Groundhog-Cache", "use"), option.WithResponseInto(&first))
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Header.Get("Groundhog-Cache"); got != "miss" {
		t.Fatalf("first call Groundhog-Cache = %q, want miss", got)
	}
	hash := first.Header.Get("Groundhog-Request-Hash")
	if !strings.HasPrefix(hash, "sha256:") || len(hash) != 71 {
		t.Fatalf("Groundhog-Request-Hash = %q", hash)
	}
	if h.bill().Calls != 1 {
		t.Fatalf("bill after first call = %d calls, want 1", h.bill().Calls)
	}

	var second *http.Response
	c2, err := client.Chat.Completions.New(ctx, params, option.WithHeader("Groundhog-Cache", "use"), option.WithResponseInto(&second))
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Header.Get("Groundhog-Cache"); got != "hit" {
		t.Fatalf("second call Groundhog-Cache = %q, want hit", got)
	}
	if second.Header.Get("Groundhog-Request-Hash") != hash {
		t.Fatal("identical calls got different hashes")
	}
	if c2.Choices[0].Message.Content != c1.Choices[0].Message.Content || c2.ID != c1.ID {
		t.Fatalf("hit body differs from the original: %q vs %q", c2.Choices[0].Message.Content, c1.Choices[0].Message.Content)
	}
	if saved := second.Header.Get("Groundhog-Saved-USD"); saved != first.Header.Get("Groundhog-Cost-USD") || saved == "0.000000" {
		t.Fatalf("saved %q, want the original cost %q", saved, first.Header.Get("Groundhog-Cost-USD"))
	}
	if h.bill().Calls != 1 {
		t.Fatalf("a cache hit reached the provider: bill = %d calls", h.bill().Calls)
	}

	// A streaming request with the same inputs has the same hash and is
	// answered from the stored body as a stream the SDK accumulates.
	var third *http.Response
	stream := client.Chat.Completions.NewStreaming(ctx, params, option.WithHeader("Groundhog-Cache", "use"), option.WithResponseInto(&third))
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if third.Header.Get("Groundhog-Cache") != "hit" || third.Header.Get("Groundhog-Request-Hash") != hash {
		t.Fatalf("stream of the same inputs: cache %q hash %q", third.Header.Get("Groundhog-Cache"), third.Header.Get("Groundhog-Request-Hash"))
	}
	if acc.Choices[0].Message.Content != c1.Choices[0].Message.Content {
		t.Fatalf("stream from a stored body: %q, want %q", acc.Choices[0].Message.Content, c1.Choices[0].Message.Content)
	}

	var fourth *http.Response
	if _, err := client.Chat.Completions.New(ctx, params, option.WithHeader("Groundhog-Cache", "refresh"), option.WithResponseInto(&fourth)); err != nil {
		t.Fatal(err)
	}
	if fourth.Header.Get("Groundhog-Cache") != "refresh" || h.bill().Calls != 2 {
		t.Fatalf("refresh: cache %q, bill %d (want refresh, 2)", fourth.Header.Get("Groundhog-Cache"), h.bill().Calls)
	}
	// Without a cache header (operation cache off) every call goes upstream.
	var fifth *http.Response
	if _, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&fifth)); err != nil {
		t.Fatal(err)
	}
	if fifth.Header.Get("Groundhog-Cache") != "off" || h.bill().Calls != 3 {
		t.Fatalf("cache off: header %q, bill %d (want off, 3)", fifth.Header.Get("Groundhog-Cache"), h.bill().Calls)
	}
}

// A stored stream answers a later non-stream request.
func TestOpenAISDKStreamThenBody(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	client := openaiClient(h, option.WithHeader("Groundhog-Cache", "use"))
	params := openai.ChatCompletionNewParams{
		Model:         "sim-large",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Name three rivers.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Usage.PromptTokens == 0 || acc.Choices[0].Message.Content == "" {
		t.Fatalf("streamed completion incomplete: %+v", acc.ChatCompletion)
	}
	var res *http.Response
	body, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("non-stream after stream: %q, want hit", res.Header.Get("Groundhog-Cache"))
	}
	if body.Choices[0].Message.Content != acc.Choices[0].Message.Content {
		t.Fatalf("assembled body %q != streamed %q", body.Choices[0].Message.Content, acc.Choices[0].Message.Content)
	}
	if h.bill().Calls != 1 {
		t.Fatalf("bill = %d, want 1", h.bill().Calls)
	}
}

func TestOpenAISDKResponsesAndEmbeddings(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	client := openaiClient(h, option.WithHeader("Groundhog-Cache", "use"))
	for i := 0; i < 2; i++ {
		r, err := client.Responses.New(ctx, responsesParams("Write a haiku about caches."))
		if err != nil {
			t.Fatal(err)
		}
		if r.OutputText() == "" {
			t.Fatal("empty responses output")
		}
	}
	stream := client.Responses.NewStreaming(ctx, responsesParams("Write a haiku about caches."))
	var text strings.Builder
	completed := false
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			completed = true
		}
	}
	if err := stream.Err(); err != nil || !completed || text.Len() == 0 {
		t.Fatalf("responses stream: err %v completed %v text %q", err, completed, text.String())
	}
	for i := 0; i < 2; i++ {
		e, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "sim-embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Data) != 2 || len(e.Data[0].Embedding) == 0 {
			t.Fatalf("embeddings: %+v", e.Data)
		}
	}
	if got := h.bill().Calls; got != 2 {
		t.Fatalf("bill = %d calls, want 2 (one responses, one embeddings)", got)
	}
}

func TestAnthropicSDKCacheAndStream(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	client := anthropicClient(h, aoption.WithHeader("Groundhog-Cache", "use"))
	params := anthropic.MessageNewParams{
		Model:     "sim-small",
		MaxTokens: 128,
		System:    []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Explain fencing tokens."))},
	}
	var r1, r2 *http.Response
	m1, err := client.Messages.New(ctx, params, aoption.WithResponseInto(&r1))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := client.Messages.New(ctx, params, aoption.WithResponseInto(&r2))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Header.Get("Groundhog-Cache") != "miss" || r2.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("cache headers %q, %q", r1.Header.Get("Groundhog-Cache"), r2.Header.Get("Groundhog-Cache"))
	}
	if m1.Content[0].Text != m2.Content[0].Text || m1.Content[0].Text == "" {
		t.Fatal("hit differs from original")
	}
	stream := client.Messages.NewStreaming(ctx, params)
	msg := anthropic.Message{}
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Content[0].Text != m1.Content[0].Text || msg.StopReason == "" {
		t.Fatalf("stream from stored body: %+v", msg)
	}
	if h.bill().Calls != 1 {
		t.Fatalf("bill = %d, want 1", h.bill().Calls)
	}
	// A fresh streaming request goes upstream and streams live.
	params.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Another question."))}
	stream = client.Messages.NewStreaming(ctx, params)
	msg = anthropic.Message{}
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || len(msg.Content) == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("live stream: err %v msg %+v", err, msg)
	}
	if h.bill().Calls != 2 {
		t.Fatalf("bill = %d, want 2", h.bill().Calls)
	}
}

// 200 concurrent identical streaming calls with the cache on: exactly one
// upstream call, and every client receives the complete, identical event
// sequence — followers receive it live from the leader's stream.
func TestConcurrentIdenticalStreamsCoalesce(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	const n = 200
	body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"one answer for all"}]}`
	type result struct {
		events []groundhog.Event
		state  string
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Groundhog-Cache", "use")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer res.Body.Close()
			results[i].state = res.Header.Get("Groundhog-Cache")
			rd := wire.NewSSEReader(res.Body)
			for {
				ev, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					results[i].err = err
					return
				}
				results[i].events = append(results[i].events, ev)
			}
		}(i)
	}
	<-g.arrived // the leader is at the provider, holding its first token
	waitFor(t, func() bool { return h.GW.InFlight() == n && h.GW.Followers("local", hashOf(t, "chat", body)) == n-1 })
	g.open()
	wg.Wait()
	if got := h.bill().Calls; got != 1 {
		t.Fatalf("bill = %d upstream calls, want exactly 1", got)
	}
	states := map[string]int{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("client %d: %v", i, r.err)
		}
		states[r.state]++
		if len(r.events) != len(results[0].events) {
			t.Fatalf("client %d got %d events, client 0 got %d", i, len(r.events), len(results[0].events))
		}
		for j := range r.events {
			if r.events[j].Name != results[0].events[j].Name || !bytes.Equal(r.events[j].Data, results[0].events[j].Data) {
				t.Fatalf("client %d event %d differs", i, j)
			}
		}
	}
	if last := results[0].events[len(results[0].events)-1]; string(last.Data) != "[DONE]" {
		t.Fatalf("stream not complete: last event %q", last.Data)
	}
	if states["miss"] != 1 || states["coalesced"] != n-1 {
		t.Fatalf("cache states %v, want 1 miss and %d coalesced", states, n-1)
	}
	rows := h.ledgerRows()
	if len(rows) != n {
		t.Fatalf("ledger rows = %d, want %d", len(rows), n)
	}
	var upstream, coalesced, inflight int
	for _, r := range rows {
		switch r.Outcome {
		case groundhog.OutcomeUpstream:
			upstream++
		case groundhog.OutcomeCoalesced:
			coalesced++
			if r.Saved <= 0 {
				t.Fatalf("coalesced row saved %d", r.Saved)
			}
		}
		if r.InFlight {
			inflight++
		}
	}
	if upstream != 1 || coalesced != n-1 || inflight != n-1 {
		t.Fatalf("ledger: upstream %d coalesced %d in-flight %d", upstream, coalesced, inflight)
	}
}

// Tenant B's identical request never receives tenant A's entry.
func TestTenantIsolation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	keys := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		secret, k := groundhog.NewAPIKey(tenant, time.Now())
		if err := h.DB.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		keys[tenant] = secret
	}
	body := `{"model":"sim-small","messages":[{"role":"user","content":"shared question"}]}`
	call := func(tenant string) (*http.Response, []byte) {
		return h.post("/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + keys[tenant], "Groundhog-Cache": "use"})
	}
	ra, _ := call("acme")
	ra2, _ := call("acme")
	rb, bodyB := call("globex")
	if ra.StatusCode != 200 || rb.StatusCode != 200 {
		t.Fatalf("statuses %d %d: %s", ra.StatusCode, rb.StatusCode, bodyB)
	}
	if ra2.Header.Get("Groundhog-Cache") != "hit" {
		t.Fatalf("acme's repeat: %q, want hit", ra2.Header.Get("Groundhog-Cache"))
	}
	if rb.Header.Get("Groundhog-Cache") != "miss" {
		t.Fatalf("globex got %q for acme's cached request, want miss", rb.Header.Get("Groundhog-Cache"))
	}
	if ra.Header.Get("Groundhog-Request-Hash") == rb.Header.Get("Groundhog-Request-Hash") {
		t.Fatal("two tenants share a request hash")
	}
	if h.bill().Calls != 2 {
		t.Fatalf("bill = %d, want 2 (one per tenant)", h.bill().Calls)
	}
	// Without a key, once keys exist, nothing is served — not even a hit.
	res, b := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"})
	if res.StatusCode != 401 || errorType(t, b) == "" {
		t.Fatalf("no key: %d %s", res.StatusCode, b)
	}
	res, b = h.post("/v1/chat/completions", body, map[string]string{"Authorization": "Bearer gh_wrong", "Groundhog-Cache": "use"})
	if res.StatusCode != 401 {
		t.Fatalf("unknown key: %d %s", res.StatusCode, b)
	}
	// The Anthropic SDK's x-api-key header authenticates too.
	res, b = h.post("/v1/messages", `{"model":"sim-small","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Api-Key": keys["acme"]})
	if res.StatusCode != 200 {
		t.Fatalf("x-api-key: %d %s", res.StatusCode, b)
	}
}

func responsesParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "sim-small",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
	}
}

// waitFor polls an in-memory condition of the system under test, bounded.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(time.Millisecond)
	}
}
