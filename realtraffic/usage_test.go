package realtraffic_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/realtraffic"
)

// expected is what the recorded usage says a call read from and wrote to
// the provider's prompt cache, and what it cost by the price table.
type expected struct {
	priced           bool // a 2xx answer of a modelled route
	failed           bool // a stream the provider ended with its own error
	read, write, w1h int64
	input, output    int64 // input: every prompt token (cached and written included)
	cost             groundhog.Money
	// once names a background response read back: its usage is booked
	// once per response, at its creation (day).
	once string
	day  time.Time
}

// usageObj is a usage object in every spelling the recordings use.
type usageObj struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
	Details          *struct {
		Cached *int64 `json:"cached_tokens"`
		Write  *int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	InDetails *struct {
		Cached *int64 `json:"cached_tokens"`
		Write  *int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	Creation      *struct {
		H1 *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	Iterations []json.RawMessage `json:"iterations"`
	Model      string            `json:"model"`
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// part is one priced piece of a usage: its model ("" for the call's) and
// its counts.
type part struct {
	model                           string
	input, read, write, w1h, output int64
}

// partsOf reads the parts of one usage object under the provider's
// semantics: OpenAI cached and written tokens are parts of the prompt
// count; Anthropic's are in addition to input_tokens; an Anthropic usage
// with iterations is the sum of its iterations, each on its own model.
func partsOf(t *testing.T, provider string, raw json.RawMessage) []part {
	var u usageObj
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatalf("recorded usage %s: %v", raw, err)
	}
	if provider == "anthropic" {
		if len(u.Iterations) > 0 {
			var out []part
			for _, it := range u.Iterations {
				out = append(out, partsOf(t, provider, it)...)
			}
			return out
		}
		p := part{model: u.Model, read: val(u.CacheRead), write: val(u.CacheCreation), output: val(u.OutputTokens)}
		if u.Creation != nil {
			p.w1h = val(u.Creation.H1)
		}
		p.input = val(u.InputTokens) + p.read + p.write
		return []part{p}
	}
	p := part{input: val(u.PromptTokens), output: val(u.CompletionTokens)}
	d := u.Details
	if u.PromptTokens == nil {
		p.input, p.output, d = val(u.InputTokens), val(u.OutputTokens), u.InDetails
	}
	if d != nil {
		p.read, p.write = val(d.Cached), val(d.Write)
	}
	return []part{p}
}

// finalUsage returns the usage a response reports in the end: the body's,
// or for a stream the last chunk's (chat), the terminal response's
// (Responses), or message_start's overlaid with each message_delta's
// non-null fields (Anthropic).
func finalUsage(t *testing.T, it *realtraffic.Interaction) json.RawMessage {
	if !it.Meta.Stream {
		return it.Meta.RecordedUsage
	}
	var evs []struct {
		Event string                     `json:"event"`
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(it.Meta.RecordedUsage, &evs); err != nil || len(evs) == 0 {
		return nil
	}
	if it.Meta.Provider != "anthropic" {
		b, _ := json.Marshal(evs[len(evs)-1].Usage)
		return b
	}
	merged := map[string]json.RawMessage{}
	for _, e := range evs {
		for k, v := range e.Usage {
			if string(v) != "null" {
				merged[k] = v
			}
		}
	}
	b, _ := json.Marshal(merged)
	return b
}

// expect computes the expected figures of an exchange from its recording.
func expect(t *testing.T, it *realtraffic.Interaction, sh groundhog.Shape) expected {
	var e expected
	if it.Meta.Status/100 != 2 {
		return e
	}
	e.priced = true
	model := firstNonEmpty(it.Meta.ResponseModel, it.Meta.RequestModel)
	parts := partsOf(t, it.Meta.Provider, finalUsage(t, it))
	e.failed = it.Meta.Stream && endsWithError(it.Response)
	if len(parts) == 0 && e.failed && sh == groundhog.ShapeResponses {
		e.cost = 0 // response.failed reporting no usage: nothing consumed
		return e
	}
	if len(parts) == 0 {
		e.cost = groundhog.CostUnknown // no usage reported: unknown, never 0
		return e
	}
	for _, p := range parts {
		e.input += p.input
		e.read += p.read
		e.write += p.write
		e.w1h += p.w1h
		e.output += p.output
		pr, ok := prices.Lookup(firstNonEmpty(p.model, model))
		if !ok && p.model == "" {
			pr, ok = prices.Lookup(it.Meta.RequestModel)
		}
		if !ok || e.cost == groundhog.CostUnknown {
			e.cost = groundhog.CostUnknown
			continue
		}
		uncached := max(p.input-p.read-p.write, 0)
		// Price fields are microdollars per million tokens: picodollars a token.
		e.cost += groundhog.Money(uncached*pr.Input + p.read*pr.CachedInput + (p.write-p.w1h)*pr.CacheWrite + p.w1h*pr.CacheWrite1h + p.output*pr.Output)
	}
	if e.input == 0 && e.output == 0 && e.read == 0 && e.write == 0 {
		e.cost = groundhog.CostUnknown
	}
	return e
}

// sumParts adds parts up.
func sumParts(ps []part) part {
	var s part
	for _, p := range ps {
		s.input += p.input
		s.read += p.read
		s.write += p.write
		s.w1h += p.w1h
		s.output += p.output
	}
	return s
}

// answerUsage reads the final usage of an answer as a client would: a
// body's usage; a stream's last chat usage chunk, terminal Responses
// event's response.usage, or Anthropic's message_start usage overlaid with
// the message_delta usages.
func answerUsage(provider string, stream bool, b []byte) json.RawMessage {
	if !stream {
		var body struct {
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(b, &body)
		return body.Usage
	}
	var last json.RawMessage
	merged := map[string]json.RawMessage{}
	for _, ev := range events(b) {
		var e struct {
			Type    string                     `json:"type"`
			Usage   map[string]json.RawMessage `json:"usage"`
			Message struct {
				Usage map[string]json.RawMessage `json:"usage"`
			} `json:"message"`
			Response struct {
				Usage json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(ev.Data, &e) != nil {
			continue
		}
		switch {
		case provider == "anthropic":
			for _, u := range []map[string]json.RawMessage{e.Message.Usage, e.Usage} {
				for k, v := range u {
					if string(v) != "null" {
						merged[k] = v
					}
				}
			}
		case e.Response.Usage != nil && string(e.Response.Usage) != "null":
			last = e.Response.Usage
		case e.Usage != nil:
			last, _ = json.Marshal(e.Usage)
		}
	}
	if provider == "anthropic" {
		last, _ = json.Marshal(merged)
	}
	return last
}

// endsWithError reports whether a recorded stream ends with the provider's
// own error: a last event response.failed or error.
func endsWithError(b []byte) bool {
	evs := events(b)
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1]
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(last.Data, &e)
	typ := firstNonEmpty(e.Type, last.Name)
	return typ == "response.failed" || typ == "error"
}
