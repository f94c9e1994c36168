package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/gateway"
)

// testClock is a fake clock shared by the gateway and the simulated
// provider, so TTLs pass without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

// newTestClock starts at the current time, or at the next UTC midnight
// when that is too close: the tests advance it by up to two hours and read
// the day's report, which must hold every call they made (a run in the
// last minutes before midnight otherwise split them over two days). It is
// moved forward, never back: parts of the harness the clock does not reach
// keep real time, and with a test clock behind it a hit turns into a miss
// (TestExplicitCacheKeepsTheClientsKey failed so).
func newTestClock() *testClock {
	t := time.Now().UTC().Truncate(time.Second)
	const room = 2*time.Hour + 10*time.Minute
	if end := t.Truncate(24 * time.Hour).Add(24 * time.Hour); end.Sub(t) < room {
		t = end
	}
	return &testClock{t: t}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock gives the gateway and the simulated provider one clock.
func withClock(c groundhog.Clock) harnessOpt {
	return func(s *setup) { s.clock, s.sim.Clock = c, c }
}

// withFanOut gives the gateway a warm-then-fan-out group.
func withFanOut(g *fanout.Group) harnessOpt { return func(s *setup) { s.fanOut = g } }

type pcTool struct {
	name, desc string
	deferred   bool // Messages: defer_loading (tool search loads it)
}

type pcTurn struct {
	user, assistant string
	image           bool // the user turn carries an image block too
}

// pcConvo is an agent conversation rendered into the body of any shape,
// as a client would send it (no cache markers unless marks says so).
type pcConvo struct {
	shape    groundhog.Shape
	model    string
	tools    []pcTool
	system   string
	turns    []pcTurn
	key      string // prompt_cache_key
	explicit bool   // Responses explicit mode
	marks    []int  // turns whose user block the client marks; -1 = the system block
}

func baseAgent(shape groundhog.Shape) pcConvo {
	return pcConvo{
		shape: shape, model: "sim-small",
		tools: []pcTool{
			{name: "search", desc: "Search the knowledge base. " + words(150, "search")},
			{name: "lookup", desc: "Look up an order by id. " + words(150, "lookup")},
			{name: "refund", desc: "Refund an order. " + words(150, "refund")},
		},
		system: "You are a support agent. " + words(900, "system"),
		turns:  []pcTurn{{user: "My order has not arrived. " + words(60, "u"), assistant: "Let me check. " + words(40, "a")}},
	}
}

// next returns c with one more turn.
func (c pcConvo) next(i int) pcConvo {
	c.turns = append(append([]pcTurn(nil), c.turns...), pcTurn{user: fmt.Sprintf("Follow-up %d: ", i) + words(150, "f"), assistant: fmt.Sprintf("Answer %d ", i) + words(150, "r")})
	return c
}

func (c pcConvo) marked(i int) bool {
	for _, k := range c.marks {
		if k == i {
			return true
		}
	}
	return false
}

func (c pcConvo) body() []byte {
	m := map[string]any{"model": c.model}
	var msgs []any
	last := len(c.turns) - 1
	switch c.shape {
	case groundhog.ShapeChat:
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.name, "description": t.desc, "parameters": map[string]any{"type": "object"}}})
		}
		if tools != nil {
			m["tools"] = tools
		}
		msgs = append(msgs, map[string]any{"role": "system", "content": c.system})
		for i, t := range c.turns {
			msgs = append(msgs, map[string]any{"role": "user", "content": t.user})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": t.assistant})
			}
		}
		m["messages"] = msgs
	case groundhog.ShapeResponses:
		var tools []any
		for _, t := range c.tools {
			tools = append(tools, map[string]any{"type": "function", "name": t.name, "description": t.desc, "parameters": map[string]any{"type": "object"}})
		}
		if tools != nil {
			m["tools"] = tools
		}
		m["instructions"] = c.system
		for i, t := range c.turns {
			part := map[string]any{"type": "input_text", "text": t.user}
			if c.marked(i) {
				part["prompt_cache_breakpoint"] = map[string]any{"mode": "explicit"}
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{part}})
			if i < last {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": t.assistant}}})
			}
		}
		m["input"] = msgs
		if c.explicit {
			m["prompt_cache_options"] = map[string]any{"mode": "explicit"}
		}
	case groundhog.ShapeMessages:
		var tools []any
		for _, t := range c.tools {
			tool := map[string]any{"name": t.name, "description": t.desc, "input_schema": map[string]any{"type": "object"}}
			if t.deferred {
				tool["defer_loading"] = true
			}
			tools = append(tools, tool)
		}
		if tools != nil {
			m["tools"] = tools
		}
		m["max_tokens"] = 100
		sys := map[string]any{"type": "text", "text": c.system}
		if c.marked(-1) {
			sys["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		m["system"] = []any{sys}
		for i, t := range c.turns {
			block := map[string]any{"type": "text", "text": t.user}
			if c.marked(i) {
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
	}
	if c.key != "" {
		m["prompt_cache_key"] = c.key
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

// sdkSend sends body through the gateway with the shape's official SDK
// (the body as given, headers added) and returns the HTTP response, whose
// body the SDK has read.
func sdkSend(t *testing.T, h *harness, shape groundhog.Shape, body []byte, hdr map[string]string) *http.Response {
	t.Helper()
	ctx := context.Background()
	var res *http.Response
	var err error
	switch shape {
	case groundhog.ShapeMessages:
		opts := []aoption.RequestOption{aoption.WithRequestBody("application/json", body), aoption.WithResponseInto(&res)}
		for k, v := range hdr {
			opts = append(opts, aoption.WithHeader(k, v))
		}
		an := anthropicClient(h)
		_, err = an.Messages.New(ctx, anthropic.MessageNewParams{}, opts...)
	case groundhog.ShapeChat, groundhog.ShapeResponses:
		opts := []option.RequestOption{option.WithRequestBody("application/json", body), option.WithResponseInto(&res)}
		for k, v := range hdr {
			opts = append(opts, option.WithHeader(k, v))
		}
		oa := openaiClient(h)
		if shape == groundhog.ShapeChat {
			_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{}, opts...)
		} else {
			_, err = oa.Responses.New(ctx, responses.ResponseNewParams{}, opts...)
		}
	default:
		t.Fatalf("no SDK call for shape %s", shape)
	}
	if err != nil {
		t.Fatalf("%s call: %v", shape, err)
	}
	return res
}

// pcHeader parses Groundhog-Prompt-Cache: read=N write=M.
func pcHeader(t *testing.T, res *http.Response) (read, write int64) {
	t.Helper()
	v := res.Header.Get("Groundhog-Prompt-Cache")
	if _, err := fmt.Sscanf(v, "read=%d write=%d", &read, &write); err != nil || !strings.HasPrefix(v, "read=") {
		t.Fatalf("Groundhog-Prompt-Cache = %q, want read=<tokens> write=<tokens>", v)
	}
	return read, write
}

// teeRecorder hands every row and its stages to f after next recorded it.
type teeRecorder struct {
	next gateway.Recorder
	f    func(groundhog.LedgerEntry, []groundhog.Stage)
}

func (r teeRecorder) Record(e groundhog.LedgerEntry) error { return r.RecordStages(e, nil) }

func (r teeRecorder) WantsStages() bool { return true }

func (r teeRecorder) RecordStages(e groundhog.LedgerEntry, stages []groundhog.Stage) error {
	var err error
	if sr, ok := r.next.(gateway.StageRecorder); ok {
		err = sr.RecordStages(e, stages)
	} else {
		err = r.next.Record(e)
	}
	r.f(e, stages)
	return err
}
