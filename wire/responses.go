package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	groundhog "github.com/groundhog-ai/groundhog"
)

// OpenAI Responses: the stream is a series of typed events (the "event:"
// name repeats the payload's "type"), each with a sequence_number, and the
// terminal event (response.completed, response.incomplete or
// response.failed) carries the whole response object, which is exactly the
// non-stream body.

// responsesEvent is the part of a Responses stream event groundhog reads.
type responsesEvent struct {
	Type        string          `json:"type"`
	Response    json.RawMessage `json:"response"`
	OutputIndex *int64          `json:"output_index"`
	Item        json.RawMessage `json:"item"`
}

// eventType returns the event's type: the payload's "type" field, or the
// SSE event name when the payload has none.
func (e *responsesEvent) eventType(ev groundhog.Event) string {
	if e.Type != "" {
		return e.Type
	}
	return ev.Name
}

// responsesBodyFromEvents returns the response object of the terminal event.
// When that object has no output (the API may omit it), the output is
// rebuilt from the response.output_item.done events.
func responsesBodyFromEvents(events []groundhog.Event) ([]byte, error) {
	var (
		terminal json.RawMessage
		items    = map[int64]json.RawMessage{}
	)
	for i, ev := range events {
		d := bytes.TrimSpace(ev.Data)
		if len(d) == 0 {
			continue
		}
		var e responsesEvent
		if err := json.Unmarshal(d, &e); err != nil {
			return nil, fmt.Errorf("responses event %d: %w: %w", i, ErrMalformed, err)
		}
		switch e.eventType(ev) {
		case "error", "response.failed":
			return nil, fmt.Errorf("responses event %d: %w", i, ErrStreamFailed)
		case "response.completed", "response.incomplete":
			if terminal == nil {
				terminal = e.Response
			}
		case "response.output_item.done":
			if e.OutputIndex != nil && e.Item != nil {
				items[*e.OutputIndex] = e.Item
			}
		}
	}
	if terminal == nil {
		return nil, fmt.Errorf("responses: %w: no response.completed", ErrIncompleteStream)
	}
	resp, err := parseObject(terminal)
	if err != nil {
		return nil, fmt.Errorf("responses: terminal response: %w", err)
	}
	if st, _ := resp.str("status"); st == "failed" {
		return nil, fmt.Errorf("responses: %w: response status failed", ErrStreamFailed)
	}
	if out := resp.get("output"); out == nil || isNull(out) {
		elems := make([]json.RawMessage, 0, len(items))
		for _, k := range slices.Sorted(maps.Keys(items)) {
			var c bytes.Buffer
			if err := json.Compact(&c, items[k]); err != nil {
				return nil, fmt.Errorf("responses: output item: %w: %w", ErrMalformed, err)
			}
			elems = append(elems, c.Bytes())
		}
		resp.set("output", jsonArray(elems))
	}
	return resp.bytes(), nil
}

// responsesStream builds Responses events with consecutive sequence numbers.
type responsesStream struct {
	events []groundhog.Event
	seq    int64
}

// emit appends an event of type typ whose payload is type, sequence_number
// and then fields, in that order (as OpenAI sends them).
func (s *responsesStream) emit(typ string, fields ...member) {
	o := make(object, 0, len(fields)+2)
	o = append(o, member{"type", jsonString(typ)}, member{"sequence_number", jsonInt(s.seq)})
	o = append(o, fields...)
	s.seq++
	s.events = append(s.events, groundhog.Event{Name: typ, Data: o.bytes()})
}

// responsesEventsFromBody synthesizes the event stream of a response object.
func responsesEventsFromBody(body []byte) ([]groundhog.Event, error) {
	resp, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("responses body: %w", err)
	}
	// The terminal event follows the status; any other status (a background
	// response still queued, say) can only end as response.completed, and
	// StreamComplete's status check keeps such a stream out of the cache.
	terminal := "response.completed"
	switch st, _ := resp.str("status"); st {
	case "incomplete":
		terminal = "response.incomplete"
	case "failed":
		terminal = "response.failed"
	}
	outputs, ok := resp.arr("output")
	if !ok && resp.has("output") && !isNull(resp.get("output")) {
		return nil, fmt.Errorf("responses body: %w: output is not an array", ErrMalformed)
	}

	// The response as it looks while running: no output, no usage yet.
	running := resp.clone()
	running.setIfPresent("status", rawInProgress)
	running.set("output", rawEmptyArr)
	for _, k := range []string{"usage", "completed_at", "error", "incomplete_details"} {
		running.setIfPresent(k, rawNull)
	}
	var s responsesStream
	s.emit("response.created", member{"response", running.raw()})
	s.emit("response.in_progress", member{"response", running.raw()})
	for i, raw := range outputs {
		item, err := parseCompactObject(raw)
		if err != nil {
			return nil, fmt.Errorf("responses body: output item %d: %w", i, err)
		}
		s.item(int64(i), item, raw)
	}
	s.emit(terminal, member{"response", resp.raw()})
	return s.events, nil
}

// item emits the events of one output item: added, its content or
// arguments as deltas, done.
func (s *responsesStream) item(index int64, item object, raw json.RawMessage) {
	outIdx := member{"output_index", jsonInt(index)}
	itemID := member{"item_id", orDefault(item.get("id"), rawEmptyStr)}
	added := item.clone()
	added.setIfPresent("status", rawInProgress)
	typ, _ := item.str("type")
	switch typ {
	case "message":
		added.set("content", rawEmptyArr)
	case "function_call":
		added.set("arguments", rawEmptyStr)
	case "reasoning":
		added.set("summary", rawEmptyArr)
	}
	s.emit("response.output_item.added", outIdx, member{"item", added.raw()})

	switch typ {
	case "message":
		parts, _ := item.arr("content")
		for j, p := range parts {
			part, err := parseCompactObject(p)
			if err != nil {
				continue // not an object: nothing to stream, output_item.done carries it
			}
			s.contentPart(itemID, outIdx, int64(j), part, p)
		}
	case "function_call":
		args, _ := item.str("arguments")
		for _, p := range splitText(args) {
			s.emit("response.function_call_arguments.delta", itemID, outIdx, member{"delta", jsonString(p)})
		}
		s.emit("response.function_call_arguments.done", itemID, outIdx, member{"arguments", jsonString(args)})
	case "reasoning":
		summary, _ := item.arr("summary")
		for k, p := range summary {
			part, err := parseCompactObject(p)
			if err != nil {
				continue
			}
			sumIdx := member{"summary_index", jsonInt(int64(k))}
			text, _ := part.str("text")
			empty := part.clone()
			empty.setIfPresent("text", rawEmptyStr)
			s.emit("response.reasoning_summary_part.added", itemID, outIdx, sumIdx, member{"part", empty.raw()})
			for _, piece := range splitText(text) {
				s.emit("response.reasoning_summary_text.delta", itemID, outIdx, sumIdx, member{"delta", jsonString(piece)})
			}
			s.emit("response.reasoning_summary_text.done", itemID, outIdx, sumIdx, member{"text", jsonString(text)})
			s.emit("response.reasoning_summary_part.done", itemID, outIdx, sumIdx, member{"part", p})
		}
	}
	s.emit("response.output_item.done", outIdx, member{"item", raw})
}

// contentPart emits one content part of a message item.
func (s *responsesStream) contentPart(itemID, outIdx member, j int64, part object, raw json.RawMessage) {
	ci := member{"content_index", jsonInt(j)}
	typ, _ := part.str("type")
	empty := part.clone()
	switch typ {
	case "output_text":
		empty.set("text", rawEmptyStr)
		empty.setIfPresent("annotations", rawEmptyArr)
		empty.setIfPresent("logprobs", rawEmptyArr)
	case "refusal":
		empty.set("refusal", rawEmptyStr)
	}
	s.emit("response.content_part.added", itemID, outIdx, ci, member{"part", empty.raw()})
	switch typ {
	case "output_text":
		text, _ := part.str("text")
		for _, p := range splitText(text) {
			s.emit("response.output_text.delta", itemID, outIdx, ci, member{"delta", jsonString(p)}, member{"logprobs", rawEmptyArr})
		}
		annotations, _ := part.arr("annotations")
		for k, a := range annotations {
			s.emit("response.output_text.annotation.added", itemID, outIdx, ci,
				member{"annotation_index", jsonInt(int64(k))}, member{"annotation", a})
		}
		logprobs := part.get("logprobs")
		if _, ok := rawArray(logprobs); !ok {
			logprobs = rawEmptyArr
		}
		s.emit("response.output_text.done", itemID, outIdx, ci, member{"text", jsonString(text)}, member{"logprobs", logprobs})
	case "refusal":
		text, _ := part.str("refusal")
		for _, p := range splitText(text) {
			s.emit("response.refusal.delta", itemID, outIdx, ci, member{"delta", jsonString(p)})
		}
		s.emit("response.refusal.done", itemID, outIdx, ci, member{"refusal", jsonString(text)})
	}
	s.emit("response.content_part.done", itemID, outIdx, ci, member{"part", raw})
}
