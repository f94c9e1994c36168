package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// A six-turn agent loop whose client places no cache markers: through the
// gateway with breakpoint injection (per request by header, or per
// operation by config) the provider reads most of each prompt from its
// cache, without it nothing; the request hash of every turn is the same
// either way, and so is the client's answer.
func TestBreakpointInjectionRaisesReads(t *testing.T) {
	type run struct {
		bill   fullBill
		hashes []string
	}
	loop := func(t *testing.T, shape groundhog.Shape, hdr map[string]string, opts ...harnessOpt) run {
		h := newHarness(t, opts...)
		c := baseAgent(shape)
		// OpenAI: the client opted into explicit caching (billed writes)
		// but places no breakpoints. In automatic mode the gateway does not
		// inject: a breakpoint would switch the request to billed writes.
		c.explicit = shape == groundhog.ShapeResponses
		var r run
		for i := range 6 {
			if i > 0 {
				c = c.next(i)
			}
			res := sdkSend(t, h, shape, c.body(), hdr)
			r.hashes = append(r.hashes, res.Header.Get("Groundhog-Request-Hash"))
		}
		r.bill = readFullBill(t, h)
		return r
	}
	op := map[string]string{"Groundhog-Operation": "agent"}
	byHeader := map[string]string{"Groundhog-Operation": "agent", "Groundhog-Prompt-Cache-Breakpoints": "auto"}
	byConfig := withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{"agent": {PromptCache: config.OperationPromptCache{Breakpoints: "auto"}}}
	})
	for _, shape := range []groundhog.Shape{groundhog.ShapeMessages, groundhog.ShapeResponses} {
		t.Run(string(shape), func(t *testing.T) {
			none := loop(t, shape, op)
			header := loop(t, shape, byHeader)
			conf := loop(t, shape, op, byConfig)
			t.Logf("%s: reads %d → %d (config %d), input_usd %s → %s", shape, none.bill.CachedInputTokens, header.bill.CachedInputTokens,
				conf.bill.CachedInputTokens, none.bill.InputUSD, header.bill.InputUSD)
			if header.bill.InputTokens != none.bill.InputTokens {
				t.Fatalf("injection changed the prompt: %d vs %d input tokens", header.bill.InputTokens, none.bill.InputTokens)
			}
			if shape == groundhog.ShapeMessages && (none.bill.CachedInputTokens != 0 || header.bill.CachedInputTokens < none.bill.InputTokens/2) {
				t.Errorf("cached reads %d without injection, %d with; want 0 and most of the %d input tokens", none.bill.CachedInputTokens, header.bill.CachedInputTokens, none.bill.InputTokens)
			}
			if header.bill.CachedInputTokens <= none.bill.CachedInputTokens || money(t, header.bill.InputUSD) >= money(t, none.bill.InputUSD) {
				t.Errorf("injection did not raise reads or lower the input bill: %+v vs %+v", header.bill, none.bill)
			}
			if conf.bill != header.bill {
				t.Errorf("config breakpoints: auto billed %+v, the header %+v", conf.bill, header.bill)
			}
			for i := range none.hashes {
				if none.hashes[i] == "" || header.hashes[i] != none.hashes[i] || conf.hashes[i] != none.hashes[i] {
					t.Fatalf("turn %d: request hash %q without injection, %q / %q with", i, none.hashes[i], header.hashes[i], conf.hashes[i])
				}
			}
		})
	}
}

func money(t *testing.T, s string) groundhog.Money {
	t.Helper()
	m, err := groundhog.ParseMoney(s)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return m
}

// Groundhog-Prompt-Cache-Key: auto sets prompt_cache_key to
// app:prompt_version:model (plus a digest of the tool names when the request
// has tools) — the operation name
// and v1 by default, the operation's configured app and prompt_version when
// set — the same for every session of the app, and never replaces a key
// the client set. Checked on the body that reaches the provider.
func TestStableCacheKeyAuto(t *testing.T) {
	var mu sync.Mutex
	var sent []string // prompt_cache_key of each upstream body ("" when absent)
	tap := func(path string, body []byte) {
		var b struct {
			Key *string `json:"prompt_cache_key"`
		}
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		if b.Key == nil {
			sent = append(sent, "")
		} else {
			sent = append(sent, *b.Key)
		}
	}
	h := newHarness(t, func(s *setup) { s.tap = tap }, withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{"helpdesk": {PromptCache: config.OperationPromptCache{App: "acme-support", PromptVersion: "v7"}}}
	}))
	oa := openaiClient(h)
	ctx := context.Background()
	system := "You are a support agent. " + words(1200, "system")
	chat := func(user, key, op string, auto bool) {
		t.Helper()
		p := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)}}
		if key != "" {
			p.PromptCacheKey = openai.String(key)
		}
		opts := []option.RequestOption{option.WithHeader("Groundhog-Operation", op)}
		if auto {
			opts = append(opts, option.WithHeader("Groundhog-Prompt-Cache-Key", "auto"))
		}
		if _, err := oa.Chat.Completions.New(ctx, p, opts...); err != nil {
			t.Fatal(err)
		}
	}
	chat("session one: where is my order?", "", "support", true)
	chat("session two: I want a refund.", "", "support", true)
	chat("session three", "", "helpdesk", true)
	chat("session four", "client-key-42", "support", true)
	chat("session five", "", "support", false)
	if _, err := oa.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-small", Instructions: openai.String(system),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("session six")}},
		option.WithHeader("Groundhog-Operation", "support"), option.WithHeader("Groundhog-Prompt-Cache-Key", "auto")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 6 {
		t.Fatalf("%d upstream bodies, want 6", len(sent))
	}
	format := regexp.MustCompile(`^([^:]+):([^:]+):sim-small$`)
	for i, want := range []string{"support:v1", "support:v1", "acme-support:v7"} {
		m := format.FindStringSubmatch(sent[i])
		if m == nil || m[1]+":"+m[2] != want {
			t.Errorf("call %d sent prompt_cache_key %q, want %s:sim-small", i, sent[i], want)
		}
	}
	if sent[0] != sent[1] {
		t.Errorf("two sessions of one app got keys %q and %q, want one", sent[0], sent[1])
	}
	// The documented digest: the gateway's key is promptcache.SetCacheKey's.
	body, _ := json.Marshal(map[string]any{"model": "sim-small", "messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": "x"}}})
	if _, want, err := promptcache.SetCacheKey(groundhog.ShapeChat, body, "support", "v1"); err != nil || sent[0] != want {
		t.Errorf("key %q, promptcache.SetCacheKey says %q (%v)", sent[0], want, err)
	}
	if sent[3] != "client-key-42" {
		t.Errorf("the client's key became %q", sent[3])
	}
	if sent[4] != "" {
		t.Errorf("without the header a key %q was set", sent[4])
	}
	if !format.MatchString(sent[5]) || !strings.HasPrefix(sent[5], "support:v1:") {
		t.Errorf("responses call sent prompt_cache_key %q", sent[5])
	}
}

// A relayed stream learns its usage at the end: the prompt-cache headers
// come as trailers, like the cost headers.
func TestPromptCacheStreamTrailers(t *testing.T) {
	h := newHarness(t)
	c := baseAgent(groundhog.ShapeMessages)
	c.marks = []int{-1}
	send := func(c pcConvo) http.Header {
		t.Helper()
		var m map[string]any
		_ = json.Unmarshal(c.body(), &m)
		m["stream"] = true
		b, _ := json.Marshal(m)
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/messages", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.Header.Get("Groundhog-Prompt-Cache") != "" {
			t.Fatalf("prompt-cache header before the usage is known: %q", res.Header.Get("Groundhog-Prompt-Cache"))
		}
		if _, ok := res.Trailer["Groundhog-Prompt-Cache"]; !ok { // the client moves the Trailer header here
			t.Fatalf("Groundhog-Prompt-Cache not announced as a trailer: %v", res.Trailer)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
		}
		return res.Trailer
	}
	first := send(c)
	second := send(c.next(1))
	var r1, w1, r2, w2 int64
	fmt.Sscanf(first.Get("Groundhog-Prompt-Cache"), "read=%d write=%d", &r1, &w1)
	fmt.Sscanf(second.Get("Groundhog-Prompt-Cache"), "read=%d write=%d", &r2, &w2)
	if w1 == 0 || r1 != 0 || r2 != w1 {
		t.Fatalf("trailers %q then %q: want the first to write the prefix and the second to read it",
			first.Get("Groundhog-Prompt-Cache"), second.Get("Groundhog-Prompt-Cache"))
	}
	if first.Get("Groundhog-Prompt-Cache-Break") != "" || second.Get("Groundhog-Prompt-Cache-Break") != "" {
		t.Fatal("break trailer on an unchanged prefix")
	}
}

// The stage's request headers are validated like the others: a bad value
// is a 400 in the provider's error shape, before anything is sent.
func TestPromptCacheBadHeaders(t *testing.T) {
	h := newHarness(t)
	for name, v := range map[string]string{
		"Groundhog-Prompt-Cache-Breakpoints": "always",
		"Groundhog-Prompt-Cache-Key":         "mine",
		"Groundhog-Fan-Out":                  "maybe",
	} {
		res, body := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`, map[string]string{name: v})
		if res.StatusCode != http.StatusBadRequest || errorType(t, body) != "invalid_request_error" || !strings.Contains(string(body), name) {
			t.Errorf("%s: %s → %d %s", name, v, res.StatusCode, body)
		}
	}
	if b := readFullBill(t, h); b.Calls != 0 {
		t.Fatalf("%d provider calls for bad requests", b.Calls)
	}
}

// What reaches the provider: injected markers only where they pay. An
// OpenAI Responses body in automatic mode is sent as the client wrote it
// (a breakpoint would turn on billed writes), and so is one whose
// prompt_cache_options only names a comparison response (asking for
// diagnostics is not a caching mode); with prompt_cache_options it gets
// breakpoints; Groundhog-Prompt-Cache-Breakpoints: off overrides an
// operation configured auto.
func TestBreakpointInjectionUpstreamBodies(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	h := newHarness(t, func(s *setup) {
		s.tap = func(_ string, b []byte) { mu.Lock(); sent = append(sent, string(b)); mu.Unlock() }
	}, withConfig(func(c *config.Config) {
		c.Operations = map[string]config.Operation{"agent": {PromptCache: config.OperationPromptCache{Breakpoints: "auto"}}}
	}))
	auto := baseAgent(groundhog.ShapeResponses).next(1)
	explicit := auto
	explicit.explicit = true
	msgs := baseAgent(groundhog.ShapeMessages).next(1)
	op := map[string]string{"Groundhog-Operation": "agent"}
	off := map[string]string{"Groundhog-Operation": "agent", "Groundhog-Prompt-Cache-Breakpoints": "off"}
	comparing := func(body []byte) []byte {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		m["prompt_cache_options"] = map[string]any{"comparison_response_id": "resp_earlier"}
		out, _ := json.Marshal(m)
		return out
	}
	cases := []struct {
		name   string
		c      pcConvo
		hdr    map[string]string
		marker string // "" = the body must reach the provider unchanged
		edit   func([]byte) []byte
	}{
		{"responses automatic mode", auto, op, "", nil},
		{"responses asking for a comparison only", auto, op, "", comparing},
		{"responses prompt_cache_options", explicit, op, `"prompt_cache_breakpoint"`, nil},
		{"messages", msgs, op, `"cache_control"`, nil},
		{"messages header off", msgs, off, "", nil},
	}
	for i, tc := range cases {
		body := tc.c.body()
		if tc.edit != nil {
			body = tc.edit(body)
		}
		sdkSend(t, h, tc.c.shape, body, tc.hdr)
		mu.Lock()
		got := sent[i]
		mu.Unlock()
		if tc.marker == "" && got != string(body) {
			t.Errorf("%s: the body was rewritten: %.200s…", tc.name, got)
		}
		if tc.marker != "" && !strings.Contains(got, tc.marker) {
			t.Errorf("%s: no %s in the upstream body", tc.name, tc.marker)
		}
	}
}
