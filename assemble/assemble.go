// Package assemble builds an agent step's provider request from its durable
// working state (docs/agent-state.md): a byte-stable prefix (tools, instructions),
// then the working state rendered deterministically, then the last step, so
// the input per step stays bounded instead of growing with the transcript.
// Everything here is pure: the same Input gives the same bytes in every run,
// process and machine.
package assemble

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/sim"
)

// DefaultMaxTokens is the max_tokens of a messages request whose Input sets
// none: Anthropic requires the field.
const DefaultMaxTokens = 1024

// MaxBreakpoints is the most cache markers a request may carry (Anthropic's
// limit; OpenAI's explicit mode writes at most as many).
const MaxBreakpoints = 4

// Input is everything a step's request is built from.
//
// Tools are in the shape's own format (chat {"type":"function","function":…},
// responses {"type":"function","name":…}, messages {"name","input_schema"})
// and LastStep holds the shape's own messages (chat, messages) or input items
// (responses); both are passed through as canonical JSON (RFC 8785), so the
// key order or spacing a client happens to send does not change the bytes.
// Evidence describes the "ev_" refs of State (from the evidence store);
// Inline are evidence contents to write after the state. MaxTokens 0 means
// none (DefaultMaxTokens for messages). Breakpoints places provider cache
// markers after the prefix and after the state (see Breakpoint placement on
// Assemble).
type Input struct {
	Shape        groundhog.Shape
	Model        string
	Tools        []json.RawMessage
	Instructions string
	State        groundhog.WorkingState
	Evidence     map[string]*groundhog.EvidenceInfo
	Inline       []Inline
	LastStep     []json.RawMessage
	MaxTokens    int64
	Breakpoints  bool
}

// Tokens are the sim's token counts (sim.CountTokens plus
// sim.MessageOverhead per message and per tool) of the request's three
// parts. LastStep counts the string values of each item except its "role"
// and "type", so it approximates a provider's count for structured items.
// (Messages: the instructions and state blocks share one system message,
// whose framing counts in Prefix, or in State without instructions.)
type Tokens struct {
	Prefix   int64 `json:"prefix"`
	State    int64 `json:"state"`
	LastStep int64 `json:"last_step"`
}

// Output is an assembled request.
//
// Request is the provider request body to send. Request[:PrefixBytes]
// depends only on the shape, model, max tokens, tools, instructions and
// breakpoint setting: a state update or a new last step never changes it.
// StateText is the rendered state as the request carries it, and
// StateTextTokens its sim.CountTokens (no framing).
type Output struct {
	Request         json.RawMessage
	Tokens          Tokens
	PrefixBytes     int
	StateText       string
	StateTextTokens int64
}

// Assemble builds the request of in. Errors have code EINVALID and name
// the offending field: a shape other than chat, responses or messages, an
// empty model, no last step, a tool or last-step item that is not a JSON
// object.
//
// Layout by shape (the prefix first, byte-identical across calls):
//
//	chat       {"model","max_completion_tokens"?,"tools"?,"messages":[system instructions?, system state, last step…]}
//	responses  {"model","max_output_tokens"?,"tools"?,"input":[developer instructions?, developer state, last step…]}
//	messages   {"model","max_tokens","tools"?,"system":[instructions?, state],"messages":[last step…]}
//
// Breakpoint placement, when in.Breakpoints: Anthropic "cache_control":
// {"type":"ephemeral"} on the instructions block (or, without
// instructions, on the last tool) and on the state block; OpenAI
// "prompt_cache_breakpoint":{"mode":"explicit"} on the instructions and
// state text parts. Markers the client already put in the last step count
// against MaxBreakpoints; when not both fit, the state's is left out first.
// (A minimal placement of our own; the general injector of promptcache/
// should replace it once it lands.)
func Assemble(in Input) (*Output, error) {
	switch in.Shape {
	case groundhog.ShapeChat, groundhog.ShapeResponses, groundhog.ShapeMessages:
	default:
		return nil, groundhog.Errorf(groundhog.EINVALID, "shape: must be chat, responses or messages, not %q", in.Shape)
	}
	if strings.TrimSpace(in.Model) == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "model: required")
	}
	if len(in.LastStep) == 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "last_step: at least one message or input item is required")
	}
	if in.MaxTokens < 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "max_tokens: must be positive")
	}
	tools, err := canonicalObjects("tools", in.Tools)
	if err != nil {
		return nil, err
	}
	last, err := canonicalObjects("last_step", in.LastStep)
	if err != nil {
		return nil, err
	}
	stateText := RenderState(in.State, in.Evidence, in.Inline)

	var tok Tokens
	for _, t := range tools {
		tok.Prefix += int64(sim.CountTokens(string(t)) + sim.MessageOverhead)
	}
	if in.Instructions != "" {
		tok.Prefix += int64(sim.CountTokens(in.Instructions) + sim.MessageOverhead)
	}
	stateTextTokens := int64(sim.CountTokens(stateText))
	tok.State = stateTextTokens
	if in.Shape != groundhog.ShapeMessages || in.Instructions == "" {
		// Messages: instructions and state are blocks of one system
		// message, framed once.
		tok.State += sim.MessageOverhead
	}
	for _, it := range last {
		tok.LastStep += int64(itemTokens(it) + sim.MessageOverhead)
	}

	// Breakpoint budget: the client's own markers first.
	prefixMark, stateMark := false, false
	if in.Breakpoints {
		marker := `"prompt_cache_breakpoint":`
		if in.Shape == groundhog.ShapeMessages {
			marker = `"cache_control":`
		}
		used := 0
		for _, it := range last {
			used += bytes.Count(it, []byte(marker))
		}
		for _, t := range tools {
			used += bytes.Count(t, []byte(marker))
		}
		prefixMark = in.Instructions != "" || (in.Shape == groundhog.ShapeMessages && len(tools) > 0)
		if prefixMark && used < MaxBreakpoints {
			used++
		} else {
			prefixMark = false
		}
		stateMark = used < MaxBreakpoints
	}

	var b bytes.Buffer
	b.WriteString(`{"model":`)
	writeString(&b, in.Model)
	maxTokens := in.MaxTokens
	if maxTokens == 0 && in.Shape == groundhog.ShapeMessages {
		maxTokens = DefaultMaxTokens
	}
	if maxTokens > 0 {
		field := map[groundhog.Shape]string{groundhog.ShapeChat: "max_completion_tokens",
			groundhog.ShapeResponses: "max_output_tokens", groundhog.ShapeMessages: "max_tokens"}[in.Shape]
		fmt.Fprintf(&b, `,%q:%d`, field, maxTokens)
	}
	if len(tools) > 0 {
		b.WriteString(`,"tools":[`)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			if prefixMark && in.Instructions == "" && i == len(tools)-1 {
				t = withField(t, `"cache_control":{"type":"ephemeral"}`)
			}
			b.Write(t)
		}
		b.WriteByte(']')
	}
	var prefixBytes int
	switch in.Shape {
	case groundhog.ShapeChat, groundhog.ShapeResponses:
		key, role, part := `,"messages":[`, "system", "text"
		if in.Shape == groundhog.ShapeResponses {
			key, role, part = `,"input":[`, "developer", "input_text"
		}
		b.WriteString(key)
		if in.Instructions != "" {
			writeOpenAIMessage(&b, in.Shape, role, part, in.Instructions, prefixMark)
			b.WriteByte(',')
		}
		prefixBytes = b.Len()
		writeOpenAIMessage(&b, in.Shape, role, part, stateText, stateMark)
		for _, it := range last {
			b.WriteByte(',')
			b.Write(it)
		}
		b.WriteString("]}")
	case groundhog.ShapeMessages:
		b.WriteString(`,"system":[`)
		if in.Instructions != "" {
			writeTextBlock(&b, in.Instructions, prefixMark)
			b.WriteByte(',')
		}
		prefixBytes = b.Len()
		writeTextBlock(&b, stateText, stateMark)
		b.WriteString(`],"messages":[`)
		for i, it := range last {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(it)
		}
		b.WriteString("]}")
	}
	return &Output{Request: json.RawMessage(b.Bytes()), Tokens: tok, PrefixBytes: prefixBytes, StateText: stateText, StateTextTokens: stateTextTokens}, nil
}

func writeOpenAIMessage(b *bytes.Buffer, shape groundhog.Shape, role, part, text string, mark bool) {
	if shape == groundhog.ShapeResponses {
		b.WriteString(`{"type":"message","role":`)
	} else {
		b.WriteString(`{"role":`)
	}
	writeString(b, role)
	b.WriteString(`,"content":[{"type":`)
	writeString(b, part)
	b.WriteString(`,"text":`)
	writeString(b, text)
	if mark {
		b.WriteString(`,"prompt_cache_breakpoint":{"mode":"explicit"}`)
	}
	b.WriteString("}]}")
}

func writeTextBlock(b *bytes.Buffer, text string, mark bool) {
	b.WriteString(`{"type":"text","text":`)
	writeString(b, text)
	if mark {
		b.WriteString(`,"cache_control":{"type":"ephemeral"}`)
	}
	b.WriteByte('}')
}

// writeString writes s as a JSON string, without HTML escaping, so the
// bytes the model reads are the state's bytes.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// withField adds field to the canonical JSON object obj unless obj already
// has a key of that name.
func withField(obj []byte, field string) []byte {
	key, _, _ := strings.Cut(field, ":")
	if bytes.Contains(obj, []byte(key+":")) {
		return obj
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, field...)
	return append(out, '}')
}

// canonicalObjects canonicalizes each item, which must be a JSON object.
func canonicalObjects(field string, items []json.RawMessage) ([][]byte, error) {
	out := make([][]byte, 0, len(items))
	for i, raw := range items {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '{' {
			return nil, groundhog.Errorf(groundhog.EINVALID, "%s[%d]: must be a JSON object", field, i)
		}
		c, err := fingerprint.Canonicalize(raw)
		if err != nil {
			return nil, groundhog.WrapError(groundhog.EINVALID, fmt.Sprintf("%s[%d]: invalid JSON", field, i), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// itemTokens counts the string values of a JSON item, except those of the
// "role" and "type" keys (framing the provider counts as overhead).
func itemTokens(item []byte) int {
	var v any
	if json.Unmarshal(item, &v) != nil {
		return 0
	}
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			n += sim.CountTokens(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				if k == "role" || k == "type" || k == "cache_control" || k == "prompt_cache_breakpoint" {
					continue
				}
				walk(e)
			}
		}
	}
	walk(v)
	return n
}
