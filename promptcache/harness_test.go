package promptcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// fakeClock is a groundhog.Clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// words returns n distinct one-token words seeded by tag, so two texts with
// different tags share no words.
func words(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d ", tag[:1], i%1000)
	}
	return strings.TrimSpace(b.String())
}

type tool struct{ name, desc string }

type turn struct {
	user, assistant string
	image           bool // the user turn carries an image block too
}

// convo is a conversation rendered into the body of any shape.
type convo struct {
	shape      groundhog.Shape
	model      string
	tools      []tool
	system     string
	turns      []turn
	toolChoice string // "" none, else a tool_choice type
	thinking   bool   // Anthropic extended thinking on
	key        string // prompt_cache_key
	explicit   bool   // Responses explicit mode
	marks      []int  // turns (indexes) whose user block the client marks
	extraTools bool   // Responses: an additional_tools item after the newest turn
	cached     string // Gemini: the cachedContent the request names
}

func baseConvo(shape groundhog.Shape) convo {
	return convo{
		shape: shape, model: "sim-small",
		tools: []tool{
			{"search", "Search the knowledge base. " + words("search", 150)},
			{"lookup", "Look up an order by id. " + words("lookup", 150)},
			{"refund", "Refund an order. " + words("refund", 150)},
		},
		system: "You are a support agent. " + words("system", 900),
		turns:  []turn{{user: "My order has not arrived. " + words("u", 60), assistant: "Let me check. " + words("a", 40)}},
	}
}

// next returns c with one more turn.
func (c convo) next(i int) convo {
	c.turns = append(append([]turn(nil), c.turns...), turn{user: fmt.Sprintf("Follow-up %d: ", i) + words("f", 150), assistant: fmt.Sprintf("Answer %d ", i) + words("r", 150)})
	return c
}

func (c convo) body() []byte {
	m := map[string]any{"model": c.model}
	var msgs []any
	mark := func(i int) bool {
		for _, k := range c.marks {
			if k == i {
				return true
			}
		}
		return false
	}
	last := len(c.turns) - 1
	switch c.shape {
	case groundhog.ShapeChat:
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.name, "description": t.desc, "parameters": map[string]any{"type": "object"}}})
		}
		m["tools"] = tools
		msgs = append(msgs, map[string]any{"role": "system", "content": c.system})
		for i, t := range c.turns {
			var content any = t.user
			if t.image {
				content = []any{map[string]any{"type": "text", "text": t.user}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}}
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": content})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": t.assistant})
			}
		}
		m["messages"] = msgs
		if c.key != "" {
			m["prompt_cache_key"] = c.key
		}
	case groundhog.ShapeResponses:
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"type": "function", "name": t.name, "description": t.desc, "parameters": map[string]any{"type": "object"}})
		}
		m["tools"] = tools
		m["instructions"] = c.system
		for i, t := range c.turns {
			part := map[string]any{"type": "input_text", "text": t.user}
			if mark(i) {
				part["prompt_cache_breakpoint"] = map[string]any{"mode": "explicit"}
			}
			parts := []any{part}
			if t.image {
				parts = append(parts, map[string]any{"type": "input_image", "image_url": "data:image/png;base64,AAAA"})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": parts})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": t.assistant}}})
			}
		}
		if c.extraTools {
			msgs = append(msgs, map[string]any{"type": "additional_tools", "tools": []any{map[string]any{"type": "function", "name": "escalate", "parameters": map[string]any{"type": "object"}}}})
		}
		m["input"] = msgs
		if c.key != "" {
			m["prompt_cache_key"] = c.key
		}
		if c.explicit {
			m["prompt_cache_options"] = map[string]any{"mode": "explicit"}
		}
	case groundhog.ShapeMessages:
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"name": t.name, "description": t.desc, "input_schema": map[string]any{"type": "object"}})
		}
		m["tools"] = tools
		m["max_tokens"] = 100
		m["system"] = []any{map[string]any{"type": "text", "text": c.system}}
		if c.toolChoice != "" {
			m["tool_choice"] = map[string]any{"type": c.toolChoice}
		}
		if c.thinking {
			m["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 1024}
		}
		for i, t := range c.turns {
			block := map[string]any{"type": "text", "text": t.user}
			if mark(i) {
				block["cache_control"] = map[string]any{"type": "ephemeral"}
			}
			blocks := []any{block}
			if t.image {
				blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": blocks})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": t.assistant}}})
			}
		}
		m["messages"] = msgs
	case groundhog.ShapeConverse:
		// The model is the path's (callSim), not the body's.
		delete(m, "model")
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"toolSpec": map[string]any{"name": t.name, "description": t.desc, "inputSchema": map[string]any{"json": map[string]any{"type": "object"}}}})
		}
		if len(tools) > 0 {
			tc := map[string]any{"tools": tools}
			if c.toolChoice != "" {
				tc["toolChoice"] = map[string]any{c.toolChoice: map[string]any{}}
			}
			m["toolConfig"] = tc
		}
		m["inferenceConfig"] = map[string]any{"maxTokens": 100}
		m["system"] = []any{map[string]any{"text": c.system}}
		for i, t := range c.turns {
			blocks := []any{map[string]any{"text": t.user}}
			if t.image {
				blocks = append(blocks, map[string]any{"image": map[string]any{"format": "png", "source": map[string]any{"bytes": "AAAA"}}})
			}
			if mark(i) {
				blocks = append(blocks, map[string]any{"cachePoint": map[string]any{"type": "default"}})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": blocks})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"text": t.assistant}}})
			}
		}
		m["messages"] = msgs
	case groundhog.ShapeGemini:
		// The model is the path's (callSim), not the body's.
		delete(m, "model")
		var decls []any
		for _, t := range c.tools {
			decls = append(decls, map[string]any{"name": t.name, "description": t.desc, "parameters": map[string]any{"type": "OBJECT"}})
		}
		if len(decls) > 0 {
			m["tools"] = []any{map[string]any{"functionDeclarations": decls}}
		}
		if c.toolChoice != "" {
			m["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": c.toolChoice}}
		}
		if c.cached != "" {
			m["cachedContent"] = c.cached
		}
		m["generationConfig"] = map[string]any{"maxOutputTokens": 100}
		m["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": c.system}}}
		for i, t := range c.turns {
			parts := []any{map[string]any{"text": t.user}}
			if t.image {
				parts = append(parts, map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": "AAAA"}})
			}
			msgs = append(msgs, map[string]any{"role": "user", "parts": parts})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "model", "parts": []any{map[string]any{"text": t.assistant}}})
			}
		}
		m["contents"] = msgs
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

var shapePath = map[groundhog.Shape]string{
	groundhog.ShapeChat: "/v1/chat/completions", groundhog.ShapeResponses: "/v1/responses", groundhog.ShapeMessages: "/v1/messages",
}

// callSim sends body to the simulated provider in process and returns the
// usage it reports, normalized as the ledger reads it.
func callSim(t testing.TB, s *sim.Server, shape groundhog.Shape, apiKey string, body []byte) groundhog.Usage {
	t.Helper()
	return callSimModel(t, s, shape, "sim-small", apiKey, body)
}

// callSimModel is callSim with the model of a Converse call (its path's).
func callSimModel(t testing.TB, s *sim.Server, shape groundhog.Shape, model, apiKey string, body []byte) groundhog.Usage {
	t.Helper()
	path := shapePath[shape]
	switch shape {
	case groundhog.ShapeConverse:
		path = "/model/" + model + "/converse"
	case groundhog.ShapeGemini:
		path = gemini.Path(gemini.APIVersion, model, false)
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-goog-api-key", apiKey)
	if shape == groundhog.ShapeMessages {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("sim answered %d: %s", w.Code, w.Body.String())
	}
	var r struct {
		Usage struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			InputTokens        int64 `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
			// Bedrock Converse
			ConverseInput int64 `json:"inputTokens"`
			ConverseRead  int64 `json:"cacheReadInputTokens"`
			ConverseWrite int64 `json:"cacheWriteInputTokens"`
		} `json:"usage"`
	}
	if shape == groundhog.ShapeGemini {
		_, u, err := gemini.UsageFromBody(w.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	u := r.Usage
	switch shape {
	case groundhog.ShapeChat:
		return groundhog.Usage{InputTokens: u.PromptTokens, CachedInputTokens: u.PromptTokensDetails.CachedTokens}
	case groundhog.ShapeResponses:
		return groundhog.Usage{InputTokens: u.InputTokens, CachedInputTokens: u.InputTokensDetails.CachedTokens}
	case groundhog.ShapeConverse:
		return groundhog.Usage{InputTokens: u.ConverseInput + u.ConverseRead + u.ConverseWrite, CachedInputTokens: u.ConverseRead, CacheWriteTokens: u.ConverseWrite}
	}
	return groundhog.Usage{InputTokens: u.InputTokens + u.CacheRead + u.CacheCreation, CachedInputTokens: u.CacheRead, CacheWriteTokens: u.CacheCreation}
}

// rig runs requests through a Tracker and the sim, with one fake clock.
type rig struct {
	t      *testing.T
	clock  *fakeClock
	tr     *Tracker
	sim    *sim.Server
	tenant string
	op     string
	inject bool
}

func newRig(t *testing.T, inject bool) *rig {
	c := newClock()
	return &rig{t: t, clock: c, tr: NewTracker(Config{Clock: c}), sim: sim.New(sim.Config{Clock: c}), tenant: "acme", op: "support", inject: inject}
}

// do sends c to the sim and returns the verdict.
func (g *rig) do(c convo, u *groundhog.Usage) (Result, *Call) {
	g.t.Helper()
	call, err := g.tr.Before(context.Background(), &Request{Tenant: g.tenant, Operation: g.op, Shape: c.shape, Model: c.model, Body: c.body(), Breakpoints: g.inject})
	if err != nil {
		g.t.Fatal(err)
	}
	var usage groundhog.Usage
	if u != nil {
		// The provider's answer given by the test, for rules the in-tree sim
		// does not model (yet): it reads u.CachedInputTokens of a prompt of
		// groundhog's own estimated size.
		usage = *u
		usage.InputTokens = int64(call.prefix.Tokens)
	} else {
		usage = callSimModel(g.t, g.sim, c.shape, c.model, "sk-"+g.tenant, call.Body)
	}
	return g.tr.After(context.Background(), call, usage), call
}

// ok sends c and fails the test on a break.
func (g *rig) ok(c convo) Result {
	g.t.Helper()
	res, call := g.do(c, nil)
	if res.Break {
		g.t.Fatalf("unexpected break %+v (diagnosis %+v)", res, call.Diagnosis)
	}
	return res
}

// read is a provider answer that read n tokens.
func read(n int64) *groundhog.Usage { return &groundhog.Usage{CachedInputTokens: n} }
