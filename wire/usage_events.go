package wire

import (
	"encoding/json"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// The members of stream events that UsagePartsFromEvents reads, two ways
// with one outcome for every input, as the events StreamComplete reads
// (complete_events.go; pinned by TestUsageMarksMatchUnmarshal and
// FuzzUsageMarks).

// usageMark is what the usage of a stream is read from in one event:
//
//   - chat: json.Unmarshal into struct{ Model string; Usage json.RawMessage }
//     (model and usage);
//   - responses: into struct{ Type string; Response struct{ Model string;
//     Usage json.RawMessage } } (model and usage the response's);
//   - messages: into struct{ Type string; Message struct{ Model string;
//     Usage json.RawMessage }; Usage json.RawMessage } (model and usage the
//     message's, top the event's own usage).
//
// ok is false when json.Unmarshal fails.
type usageMark struct {
	typ, model, usage, top []byte // nil when absent (typ and model: or null)
}

func readUsageMark(w *jsonwalk.Walker, shape string, data []byte) (e usageMark, ok bool) {
	if eventWalk {
		if e, ok, fast := readUsageMarkFast(w, shape, data); fast {
			return e, ok
		}
	}
	return usageMarkByUnmarshal(shape, data)
}

// modelAndUsage is the model and usage members json.Unmarshal reads.
type modelAndUsage struct {
	Model string          `json:"model"`
	Usage json.RawMessage `json:"usage"`
}

func usageMarkByUnmarshal(shape string, data []byte) (usageMark, bool) {
	var typ, model string
	var usage, top json.RawMessage
	var err error
	switch shape {
	case "chat":
		var c modelAndUsage
		err = unmarshalObject(data, &c)
		model, usage = c.Model, c.Usage
	case "responses":
		var r struct {
			Type     string        `json:"type"`
			Response modelAndUsage `json:"response"`
		}
		err = unmarshalObject(data, &r)
		typ, model, usage = r.Type, r.Response.Model, r.Response.Usage
	default:
		var m struct {
			Type    string          `json:"type"`
			Message modelAndUsage   `json:"message"`
			Usage   json.RawMessage `json:"usage"`
		}
		err = unmarshalObject(data, &m)
		typ, model, usage, top = m.Type, m.Message.Model, m.Message.Usage, m.Usage
	}
	if err != nil {
		return usageMark{}, false
	}
	e := usageMark{usage: usage, top: top}
	if typ != "" {
		e.typ = []byte(typ)
	}
	if model != "" {
		e.model = []byte(model)
	}
	return e, true
}

func readUsageMarkFast(w *jsonwalk.Walker, shape string, data []byte) (e usageMark, ok, fast bool) {
	takeModelUsage := func(i int) bool {
		if i == 0 {
			return jsonwalk.PlainStrTo(w, &e.model)
		}
		e.usage = jsonwalk.RawValue(w)
		return e.usage != nil
	}
	var notObject bool
	switch shape {
	case "chat":
		notObject, ok = jsonwalk.WalkObject(w, data, []string{"model", "usage"}, takeModelUsage)
	default:
		inner := "response"
		if shape != "responses" {
			inner = "message"
		}
		names := []string{"type", inner, "usage"}
		if shape == "responses" {
			names = names[:2] // a top-level usage is not read
		}
		notObject, ok = jsonwalk.WalkObject(w, data, names, func(i int) bool {
			switch i {
			case 0:
				return jsonwalk.PlainStrTo(w, &e.typ)
			case 1:
				return jsonwalk.NullOrMembers(w, []string{"model", "usage"}, takeModelUsage)
			}
			e.top = jsonwalk.RawValue(w)
			return e.top != nil
		})
	}
	if notObject {
		return usageMark{}, false, true
	}
	if !ok {
		return usageMark{}, false, false
	}
	if len(e.typ) == 0 {
		e.typ = nil
	}
	if len(e.model) == 0 {
		e.model = nil
	}
	return e, true, true
}
