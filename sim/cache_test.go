package sim

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/groundhog-ai/groundhog"
)

// sleepRecorder is a Config.Sleep that records the durations asked for and
// returns at once.
type sleepRecorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = append(r.d, d)
	return ctx.Err()
}

// take returns the recorded durations and forgets them.
func (r *sleepRecorder) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.d
	r.d = nil
	return d
}

// longText is n one-token words: a prompt of a known size.
func longText(n int, word string) string {
	return strings.TrimSpace(strings.Repeat(word+" ", n))
}

func chatParams(model string, msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: msgs}
}

func TestLatencyModel(t *testing.T) {
	const (
		first     = 200 * time.Millisecond
		perPrompt = time.Millisecond
		perOutput = 10 * time.Millisecond
	)
	rec := &sleepRecorder{}
	_, base := startSim(t, Config{FirstToken: first, PerPromptToken: perPrompt, PerOutputToken: perOutput, Sleep: rec.Sleep})
	client := openaiClient(base)
	ctx := context.Background()

	short := chatParams("sim-small", openai.UserMessage("hello there"))
	cc, err := client.Chat.Completions.New(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	ttft := first + perPrompt*time.Duration(cc.Usage.PromptTokens)
	out := time.Duration(cc.Usage.CompletionTokens)
	if got := rec.take(); len(got) != 2 || got[0] != ttft || got[1] != perOutput*out {
		t.Fatalf("non-stream sleeps %v, want [%v %v]", got, ttft, perOutput*out)
	}

	st := client.Chat.Completions.NewStreaming(ctx, short)
	for st.Next() {
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	got := rec.take()
	if len(got) != int(out) || got[0] != ttft {
		t.Fatalf("stream sleeps %v, want TTFT %v then %d × %v", got, ttft, out-1, perOutput)
	}
	for _, d := range got[1:] {
		if d != perOutput {
			t.Fatalf("stream sleeps %v: want %v between chunks", got, perOutput)
		}
	}

	// A 1504-token prompt: the second time its first 1408 tokens (11 blocks)
	// are cached and only 96 tokens delay the first token.
	long := chatParams("sim-small", openai.UserMessage(longText(1500, "ok")))
	var ttfts []time.Duration
	var cached []int64
	for range 2 {
		cc, err := client.Chat.Completions.New(ctx, long)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Usage.PromptTokens != 1504 {
			t.Fatalf("prompt tokens %d, want 1504", cc.Usage.PromptTokens)
		}
		ttfts = append(ttfts, rec.take()[0])
		cached = append(cached, cc.Usage.PromptTokensDetails.CachedTokens)
	}
	if cached[0] != 0 || cached[1] != 1408 {
		t.Fatalf("cached tokens %v, want [0 1408]", cached)
	}
	if ttfts[0] != first+1504*perPrompt || ttfts[1] != first+96*perPrompt {
		t.Fatalf("TTFTs %v, want [%v %v]", ttfts, first+1504*perPrompt, first+96*perPrompt)
	}
}

func TestOpenAIPrefixCache(t *testing.T) {
	clock := newFakeClock()
	s, base := startSim(t, Config{Clock: clock})
	client := openaiClient(base)
	ctx := context.Background()
	cachedOf := func(t *testing.T, c *openai.Client, p openai.ChatCompletionNewParams) int64 {
		t.Helper()
		cc, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return cc.Usage.PromptTokensDetails.CachedTokens
	}

	t.Run("minimum", func(t *testing.T) {
		for _, c := range []struct {
			words int
			want  int64
		}{
			{1019, 0},    // 1023 tokens: under the minimum, never cached
			{1020, 1024}, // exactly 1024
			{1200, 1152}, // 1204 tokens: whole blocks only
		} {
			p := chatParams("sim-small", openai.UserMessage(longText(c.words, "min")))
			cachedOf(t, client, p)
			if got := cachedOf(t, client, p); got != c.want {
				t.Errorf("%d-token prompt: cached %d, want %d", c.words+4, got, c.want)
			}
		}
	})

	t.Run("shared prefix", func(t *testing.T) {
		sys := openai.SystemMessage(longText(1300, "sys"))
		cachedOf(t, client, chatParams("sim-small", sys, openai.UserMessage("first question")))
		before := s.Bill()
		p := chatParams("sim-small", sys, openai.UserMessage("another question entirely"))
		cc, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		// The system message is 1304 tokens: 10 whole blocks are shared.
		if cc.Usage.PromptTokensDetails.CachedTokens != 1280 {
			t.Fatalf("cached %d, want 1280", cc.Usage.PromptTokensDetails.CachedTokens)
		}
		checkBilled(t, s, before, "sim-small", groundhog.Usage{InputTokens: cc.Usage.PromptTokens, CachedInputTokens: 1280, OutputTokens: cc.Usage.CompletionTokens})
		// Another key, another model, or an edited start: no sharing.
		if got := cachedOf(t, openaiClient(base, option.WithAPIKey("sk-other")), p); got != 0 {
			t.Errorf("other API key read %d cached tokens", got)
		}
		if got := cachedOf(t, client, chatParams("sim-large", sys, openai.UserMessage("x"))); got != 0 {
			t.Errorf("other model read %d cached tokens", got)
		}
		if got := cachedOf(t, client, chatParams("sim-small", openai.SystemMessage("Now: 12:00. "+longText(1300, "sys")), openai.UserMessage("x"))); got != 0 {
			t.Errorf("edited prefix read %d cached tokens", got)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		p := chatParams("sim-small", openai.UserMessage(longText(1100, "ttl")))
		cachedOf(t, client, p)
		for i, step := range []struct {
			advance time.Duration
			want    int64
		}{
			{4 * time.Minute, 1024}, // reuse refreshes the TTL…
			{4 * time.Minute, 1024}, // …so 8 minutes after the write it still hits
			{5*time.Minute + time.Second, 0},
			{0, 1024}, // the miss wrote it again
		} {
			clock.Advance(step.advance)
			if got := cachedOf(t, client, p); got != step.want {
				t.Fatalf("step %d: cached %d, want %d", i, got, step.want)
			}
		}
	})
}

func TestPrefixCacheUnit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewPrefixCache(time.Minute)
	pts := []PrefixPoint{{1, 512}, {2, 1024}, {3, 1152}, {4, 1280}}
	writes := func(ttl time.Duration, pts ...PrefixPoint) []PrefixWrite {
		var w []PrefixWrite
		for _, p := range pts {
			w = append(w, PrefixWrite{PrefixPoint: p, TTL: ttl})
		}
		return w
	}
	if got := c.Store("k", "m", writes(0, pts...), now); got != 1280 {
		t.Fatalf("Store = %d, want 1280", got)
	}
	if got := c.Lookup("k", "m", []PrefixPoint{{1, 512}, {2, 1024}, {3, 1152}, {9, 1280}}, now); got != 1152 {
		t.Fatalf("Lookup = %d, want the longest shared point 1152", got)
	}
	if got := c.Lookup("k2", "m", pts, now); got != 0 {
		t.Fatalf("another scope read %d", got)
	}
	// 1152 was refreshed at +0s by the lookup, 1024 was not.
	later := now.Add(50 * time.Second)
	c.Lookup("k", "m", pts[:3], later)
	at := now.Add(70 * time.Second)
	if got := c.Lookup("k", "m", pts, at); got != 1152 {
		t.Fatalf("after refresh: Lookup = %d, want 1152", got)
	}
	if got := c.Lookup("k", "m", pts[:2], at); got != 0 {
		t.Fatalf("expired 1024 still hits")
	}
	// A write's own TTL outlives the default, is renewed by reads, and a
	// shorter rewrite does not cut it.
	long := PrefixPoint{5, 4096}
	c.Store("k", "m", writes(time.Hour, long), now)
	c.Store("k", "m", writes(0, long), now)
	if got := c.Lookup("k", "m", []PrefixPoint{long}, now.Add(59*time.Minute)); got != 4096 {
		t.Fatalf("1h entry after 59m: Lookup = %d", got)
	}
	if got := c.Lookup("k", "m", []PrefixPoint{long}, now.Add(118*time.Minute)); got != 4096 {
		t.Fatalf("1h entry renewed at 59m, read at 118m: Lookup = %d", got)
	}
	// A store long after sweeps expired entries.
	mc := c.(*memPrefixCache)
	c.Store("k", "m", writes(0, PrefixPoint{7, 2048}), now.Add(10*time.Hour))
	if len(mc.entries) != 1 {
		t.Fatalf("%d entries after the sweep, want 1", len(mc.entries))
	}
	var none NoPrefixCache
	if none.Store("k", "m", writes(0, pts...), now) != 0 || none.Lookup("k", "m", pts, now) != 0 {
		t.Fatal("NoPrefixCache cached")
	}
}

func TestAnthropicCacheControl(t *testing.T) {
	clock := newFakeClock()
	rec := &sleepRecorder{}
	s, base := startSim(t, Config{Clock: clock, FirstToken: time.Second, PerPromptToken: time.Millisecond, Sleep: rec.Sleep})
	client := anthropicClient(base)
	ctx := context.Background()
	const model = "claude-sonnet-4-5"
	send := func(t *testing.T, p anthropic.MessageNewParams) anthropic.Usage {
		t.Helper()
		p.Model, p.MaxTokens = model, 200
		msg, err := client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return msg.Usage
	}
	user := func(text string, cc bool) anthropic.MessageParam {
		b := anthropic.TextBlockParam{Text: text}
		if cc {
			b.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		return anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &b})
	}
	system := func(words int, cc bool) []anthropic.TextBlockParam {
		b := anthropic.TextBlockParam{Text: longText(words, "rule")}
		if cc {
			b.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		return []anthropic.TextBlockParam{b}
	}

	t.Run("breakpoint", func(t *testing.T) {
		// Breakpoint after the system block: 3 framing + 1500 tokens.
		p := anthropic.MessageNewParams{System: system(1500, true), Messages: []anthropic.MessageParam{user("hi", false)}}
		const bp, total = 1503, 1503 + 1 + 3 + 1 + 1
		before := s.Bill()
		rec.take()
		u := send(t, p)
		if u.CacheCreationInputTokens != bp || u.CacheReadInputTokens != 0 || u.InputTokens != total-bp || u.CacheCreation.Ephemeral5mInputTokens != bp {
			t.Fatalf("first usage %s, want creation %d", u.RawJSON(), bp)
		}
		checkBilled(t, s, before, model, groundhog.Usage{InputTokens: total, CacheWriteTokens: bp, OutputTokens: u.OutputTokens})
		// Writes are computed: the first token waits for all of them.
		if got := rec.take()[0]; got != time.Second+total*time.Millisecond {
			t.Fatalf("first TTFT %v", got)
		}
		before = s.Bill()
		u = send(t, p)
		if u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != bp || u.InputTokens != total-bp {
			t.Fatalf("second usage %s, want read %d", u.RawJSON(), bp)
		}
		checkBilled(t, s, before, model, groundhog.Usage{InputTokens: total, CachedInputTokens: bp, OutputTokens: u.OutputTokens})
		if got := rec.take()[0]; got != time.Second+(total-bp)*time.Millisecond {
			t.Fatalf("second TTFT %v", got)
		}
		// The stream reports the same in message_start and message_delta.
		p.Model, p.MaxTokens = model, 200
		st := client.Messages.NewStreaming(ctx, p)
		var acc anthropic.Message
		for st.Next() {
			acc.Accumulate(st.Current())
		}
		if st.Err() != nil || acc.Usage.CacheReadInputTokens != bp || acc.Usage.InputTokens != total-bp {
			t.Fatalf("streamed usage %s (%v)", acc.Usage.RawJSON(), st.Err())
		}
	})

	t.Run("only up to a breakpoint", func(t *testing.T) {
		// Long, but no breakpoint: nothing is cached on Anthropic.
		p := anthropic.MessageNewParams{System: system(1600, false), Messages: []anthropic.MessageParam{user("hi", false)}}
		send(t, p)
		if u := send(t, p); u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
			t.Fatalf("usage without breakpoint %s", u.RawJSON())
		}
		// A breakpoint under the minimum caches nothing either.
		p = anthropic.MessageNewParams{System: system(900, true), Messages: []anthropic.MessageParam{user("hi", false)}}
		send(t, p)
		if u := send(t, p); u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
			t.Fatalf("usage under minimum %s", u.RawJSON())
		}
	})

	t.Run("moving breakpoint with lookback", func(t *testing.T) {
		// Turn 1 marks its last user block; turn 2 marks only its own last
		// block, and finds turn 1's prefix by looking back.
		sys := system(1200, false)
		first := send(t, anthropic.MessageNewParams{System: sys, Messages: []anthropic.MessageParam{user("question one", true)}})
		bp1 := first.CacheCreationInputTokens
		if bp1 != 3+1200+1+3+3 { // system framing+text+end, user framing, ques|tion|one
			t.Fatalf("turn 1 creation %d", bp1)
		}
		second := send(t, anthropic.MessageNewParams{System: sys, Messages: []anthropic.MessageParam{
			user("question one", false),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("answer")),
			user("question two", true),
		}})
		if second.CacheReadInputTokens != bp1 || second.CacheCreationInputTokens != 1+3+2+1+3+3 {
			t.Fatalf("turn 2 usage %s, want read %d", second.RawJSON(), bp1)
		}
	})

	t.Run("automatic", func(t *testing.T) {
		p := anthropic.MessageNewParams{System: system(1100, false), Messages: []anthropic.MessageParam{user("auto", false)},
			CacheControl: anthropic.NewCacheControlEphemeralParam()}
		if u := send(t, p); u.CacheCreationInputTokens != 3+1100+1+3+1 {
			t.Fatalf("automatic caching usage %s", u.RawJSON())
		}
		if u := send(t, p); u.CacheReadInputTokens != 3+1100+1+3+1 {
			t.Fatalf("automatic caching second usage %s", u.RawJSON())
		}
	})

	t.Run("ttl and key scope", func(t *testing.T) {
		p := anthropic.MessageNewParams{System: system(1050, true), Messages: []anthropic.MessageParam{user("ttl", false)}}
		send(t, p)
		other := anthropicClient(base, aoption.WithAPIKey("sk-ant-other"))
		p2 := p
		p2.Model, p2.MaxTokens = model, 200
		if msg, err := other.Messages.New(ctx, p2); err != nil || msg.Usage.CacheReadInputTokens != 0 {
			t.Fatalf("other key: %v %v", err, msg)
		}
		clock.Advance(DefaultCacheTTL)
		if u := send(t, p); u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != 1053 {
			t.Fatalf("after TTL usage %s", u.RawJSON())
		}
	})
}
