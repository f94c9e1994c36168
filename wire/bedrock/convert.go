package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"

	groundhog "github.com/groundhog-ai/groundhog"
)

// A Converse body, as far as conversion reads it. Members this package does
// not know are kept where the other form has a place for them.
type converseBody struct {
	Output                        converseOutput  `json:"output"`
	StopReason                    string          `json:"stopReason"`
	Usage                         json.RawMessage `json:"usage,omitempty"`
	Metrics                       json.RawMessage `json:"metrics,omitempty"`
	AdditionalModelResponseFields json.RawMessage `json:"additionalModelResponseFields,omitempty"`
	Trace                         json.RawMessage `json:"trace,omitempty"`
	PerformanceConfig             json.RawMessage `json:"performanceConfig,omitempty"`
	ServiceTier                   json.RawMessage `json:"serviceTier,omitempty"`
}

type converseOutput struct {
	Message struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"message"`
}

type messageStop struct {
	StopReason                    string          `json:"stopReason"`
	AdditionalModelResponseFields json.RawMessage `json:"additionalModelResponseFields,omitempty"`
}

type metadataEvent struct {
	Usage             json.RawMessage `json:"usage,omitempty"`
	Metrics           json.RawMessage `json:"metrics,omitempty"`
	Trace             json.RawMessage `json:"trace,omitempty"`
	PerformanceConfig json.RawMessage `json:"performanceConfig,omitempty"`
	ServiceTier       json.RawMessage `json:"serviceTier,omitempty"`
}

type blockIndex struct {
	ContentBlockIndex *int `json:"contentBlockIndex"`
}

// toolUseBlock is the toolUse member of a content block.
type toolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input,omitempty"`
	Type      string          `json:"type,omitempty"`
}

// blockAcc accumulates one content block of a stream.
type blockAcc struct {
	kind      string // "text", "toolUse", "reasoningContent", or "" until known
	text      bytes.Buffer
	toolUse   toolUseBlock
	input     bytes.Buffer
	signature string
	redacted  []byte
	citations []json.RawMessage
	other     json.RawMessage // a start of a kind this package does not know
}

// BodyFromEvents builds the Converse body a complete ConverseStream
// stands for: the message's content blocks (text joined, toolUse input
// parsed from its pieces, reasoning text and signature), stopReason and
// additionalModelResponseFields from messageStop, usage, metrics, trace and
// performanceConfig from metadata. The error wraps ErrIncompleteStream for
// a stream StreamComplete rejects and ErrMalformed for a payload that does
// not parse.
func BodyFromEvents(events []groundhog.Event) ([]byte, error) {
	if !StreamComplete(events) {
		return nil, ErrIncompleteStream
	}
	var (
		role   = "assistant"
		blocks []*blockAcc
		stop   messageStop
		meta   metadataEvent
	)
	block := func(i *int) (*blockAcc, error) {
		if i == nil || *i < 0 || *i > 1<<16 {
			return nil, fmt.Errorf("%w: contentBlockIndex", ErrMalformed)
		}
		for len(blocks) <= *i {
			blocks = append(blocks, &blockAcc{})
		}
		return blocks[*i], nil
	}
	for _, ev := range events {
		switch ev.Name {
		case EventMessageStart:
			var s struct {
				Role string `json:"role"`
			}
			if err := json.Unmarshal(ev.Data, &s); err != nil {
				return nil, fmt.Errorf("%w: messageStart: %w", ErrMalformed, err)
			}
			if s.Role != "" {
				role = s.Role
			}
		case EventContentBlockStart:
			var s struct {
				blockIndex
				Start map[string]json.RawMessage `json:"start"`
			}
			if err := json.Unmarshal(ev.Data, &s); err != nil {
				return nil, fmt.Errorf("%w: contentBlockStart: %w", ErrMalformed, err)
			}
			b, err := block(s.ContentBlockIndex)
			if err != nil {
				return nil, err
			}
			if raw, ok := s.Start["toolUse"]; ok {
				b.kind = "toolUse"
				if err := json.Unmarshal(raw, &b.toolUse); err != nil {
					return nil, fmt.Errorf("%w: contentBlockStart toolUse: %w", ErrMalformed, err)
				}
			} else if len(s.Start) > 0 {
				b.other = mustMarshal(s.Start)
			}
		case EventContentBlockDelta:
			var d struct {
				blockIndex
				Delta map[string]json.RawMessage `json:"delta"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, fmt.Errorf("%w: contentBlockDelta: %w", ErrMalformed, err)
			}
			b, err := block(d.ContentBlockIndex)
			if err != nil {
				return nil, err
			}
			if err := b.delta(d.Delta); err != nil {
				return nil, err
			}
		case EventMessageStop:
			if err := json.Unmarshal(ev.Data, &stop); err != nil {
				return nil, fmt.Errorf("%w: messageStop: %w", ErrMalformed, err)
			}
		case EventMetadata:
			if err := json.Unmarshal(ev.Data, &meta); err != nil {
				return nil, fmt.Errorf("%w: metadata: %w", ErrMalformed, err)
			}
		}
	}
	var body converseBody
	body.Output.Message.Role = role
	body.Output.Message.Content = make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		raw, err := b.body()
		if err != nil {
			return nil, err
		}
		if raw != nil {
			body.Output.Message.Content = append(body.Output.Message.Content, raw)
		}
	}
	body.StopReason = stop.StopReason
	body.AdditionalModelResponseFields = stop.AdditionalModelResponseFields
	body.Usage, body.Metrics, body.Trace, body.PerformanceConfig, body.ServiceTier =
		meta.Usage, meta.Metrics, meta.Trace, meta.PerformanceConfig, meta.ServiceTier
	return json.Marshal(body)
}

// delta adds one contentBlockDelta's delta to the block.
func (b *blockAcc) delta(d map[string]json.RawMessage) error {
	if raw, ok := d["text"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: delta text: %w", ErrMalformed, err)
		}
		b.setKind("text")
		b.text.WriteString(s)
	}
	if raw, ok := d["toolUse"]; ok {
		var t struct {
			Input string `json:"input"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("%w: delta toolUse: %w", ErrMalformed, err)
		}
		b.setKind("toolUse")
		b.input.WriteString(t.Input)
	}
	if raw, ok := d["reasoningContent"]; ok {
		var r struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent []byte `json:"redactedContent"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: delta reasoningContent: %w", ErrMalformed, err)
		}
		b.setKind("reasoningContent")
		b.text.WriteString(r.Text)
		b.signature += r.Signature
		b.redacted = append(b.redacted, r.RedactedContent...)
	}
	if raw, ok := d["citation"]; ok {
		b.citations = append(b.citations, raw)
	}
	return nil
}

func (b *blockAcc) setKind(k string) {
	if b.kind == "" {
		b.kind = k
	}
}

// body returns the content block b accumulated (nil for an index no event
// filled).
func (b *blockAcc) body() (json.RawMessage, error) {
	switch b.kind {
	case "text":
		block := map[string]any{"text": b.text.String()}
		if len(b.citations) > 0 {
			block["citationsContent"] = map[string]any{"citations": b.citations}
		}
		return mustMarshal(block), nil
	case "toolUse":
		t := b.toolUse
		in := bytes.TrimSpace(b.input.Bytes())
		if len(in) == 0 {
			in = []byte("{}")
		}
		if !json.Valid(in) {
			return nil, fmt.Errorf("%w: toolUse input is not JSON", ErrMalformed)
		}
		t.Input = in
		return mustMarshal(map[string]any{"toolUse": t}), nil
	case "reasoningContent":
		if len(b.redacted) > 0 && b.text.Len() == 0 {
			return mustMarshal(map[string]any{"reasoningContent": map[string]any{"redactedContent": b.redacted}}), nil
		}
		rt := map[string]any{"text": b.text.String()}
		if b.signature != "" {
			rt["signature"] = b.signature
		}
		return mustMarshal(map[string]any{"reasoningContent": map[string]any{"reasoningText": rt}}), nil
	}
	if b.other != nil {
		return b.other, nil
	}
	return nil, nil
}

// EventsFromBody synthesizes the ConverseStream of a Converse body:
// messageStart, per content block its start (toolUse only), one delta and
// its stop, then messageStop and metadata, in the order and form Bedrock
// streams them, so the AWS SDK's stream reader accepts them. The error
// wraps ErrMalformed for a body that is not a Converse response.
func EventsFromBody(body []byte) ([]groundhog.Event, error) {
	var b converseBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	role := b.Output.Message.Role
	if role == "" {
		role = "assistant"
	}
	events := []groundhog.Event{{Name: EventMessageStart, Data: mustMarshal(map[string]string{"role": role})}}
	for i, raw := range b.Output.Message.Content {
		var block map[string]json.RawMessage
		if err := json.Unmarshal(raw, &block); err != nil {
			return nil, fmt.Errorf("%w: content block %d: %w", ErrMalformed, i, err)
		}
		delta := func(d any) {
			events = append(events, groundhog.Event{Name: EventContentBlockDelta,
				Data: mustMarshal(map[string]any{"contentBlockIndex": i, "delta": d})})
		}
		switch {
		case block["text"] != nil:
			var s string
			if err := json.Unmarshal(block["text"], &s); err != nil {
				return nil, fmt.Errorf("%w: content block %d text: %w", ErrMalformed, i, err)
			}
			delta(map[string]string{"text": s})
		case block["toolUse"] != nil:
			var t toolUseBlock
			if err := json.Unmarshal(block["toolUse"], &t); err != nil {
				return nil, fmt.Errorf("%w: content block %d toolUse: %w", ErrMalformed, i, err)
			}
			in := t.Input
			if len(in) == 0 {
				in = json.RawMessage("{}")
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, in); err != nil {
				return nil, fmt.Errorf("%w: content block %d toolUse input: %w", ErrMalformed, i, err)
			}
			start := toolUseBlock{ToolUseID: t.ToolUseID, Name: t.Name, Type: t.Type}
			events = append(events, groundhog.Event{Name: EventContentBlockStart,
				Data: mustMarshal(map[string]any{"contentBlockIndex": i, "start": map[string]any{"toolUse": start}})})
			delta(map[string]any{"toolUse": map[string]string{"input": compact.String()}})
		case block["reasoningContent"] != nil:
			var r struct {
				ReasoningText *struct {
					Text      string `json:"text"`
					Signature string `json:"signature"`
				} `json:"reasoningText"`
				RedactedContent []byte `json:"redactedContent"`
			}
			if err := json.Unmarshal(block["reasoningContent"], &r); err != nil {
				return nil, fmt.Errorf("%w: content block %d reasoningContent: %w", ErrMalformed, i, err)
			}
			if r.ReasoningText != nil {
				delta(map[string]any{"reasoningContent": map[string]string{"text": r.ReasoningText.Text}})
				if r.ReasoningText.Signature != "" {
					delta(map[string]any{"reasoningContent": map[string]string{"signature": r.ReasoningText.Signature}})
				}
			} else {
				delta(map[string]any{"reasoningContent": map[string]any{"redactedContent": r.RedactedContent}})
			}
		default:
			return nil, fmt.Errorf("%w: content block %d has no streamable member", ErrMalformed, i)
		}
		events = append(events, groundhog.Event{Name: EventContentBlockStop, Data: mustMarshal(map[string]int{"contentBlockIndex": i})})
	}
	events = append(events, groundhog.Event{Name: EventMessageStop,
		Data: mustMarshal(messageStop{StopReason: b.StopReason, AdditionalModelResponseFields: b.AdditionalModelResponseFields})})
	events = append(events, groundhog.Event{Name: EventMetadata,
		Data: mustMarshal(metadataEvent{Usage: b.Usage, Metrics: b.Metrics, Trace: b.Trace, PerformanceConfig: b.PerformanceConfig, ServiceTier: b.ServiceTier})})
	return events, nil
}
