package promptcache

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// CacheDiagnosisBeta is the anthropic-beta value under which Anthropic
// answers a request's "diagnostics": {"previous_message_id": …} with its own
// verdict on why the prompt cache missed (diagnostics.cache_miss_reason).
const CacheDiagnosisBeta = "cache-diagnosis-2026-04-07"

// Reply is what the provider's answer tells the stage besides the usage.
type Reply struct {
	// ID is the answer's id (Anthropic msg_…), the comparison id of the
	// chain's next request when the stage asks the provider.
	ID string
	// Provider is the provider's own cache verdict when the request asked
	// for it: the miss reason (Anthropic cache_miss_reason.type, e.g.
	// system_changed), "none" when it found no divergence, "" when it was
	// not asked or said nothing.
	Provider string
}

// ReadReply reads the id and the provider's cache diagnostics of a
// successful answer: Anthropic Messages (the JSON body, or the message of a
// stream's message_start event; diagnostics.cache_miss_reason.type) and
// OpenAI Responses (the body, or the response of a stream's
// response.completed event; prompt_cache_diagnostics: "cache_hit", or the
// reason of a cache_miss such as tools_changed). Other shapes give a zero
// Reply.
func ReadReply(shape groundhog.Shape, body []byte, events []groundhog.Event) Reply {
	switch shape {
	case groundhog.ShapeMessages, groundhog.ShapeResponses:
	default:
		return Reply{}
	}
	if replyWalk {
		var w jsonwalk.Walker
		if r, ok := replyByWalk(&w, shape, body, events); ok {
			return r
		}
	}
	if shape == groundhog.ShapeResponses {
		return readResponsesReply(body, events)
	}
	return readMessagesReply(body, events)
}

// replyWalk turns on replyByWalk (tests turn it off to read every reply
// with json.Unmarshal, the reading it must equal).
var replyWalk = true

// The members ReadReply reads, in the order replyByWalk's names list them.
var (
	namesMessage   = []string{"message"}
	namesResponse  = []string{"response"}
	namesMessages  = []string{"id", "diagnostics"}
	namesResponses = []string{"id", "prompt_cache_diagnostics"}
	namesReason    = []string{"cache_miss_reason"}
	namesType      = []string{"type"}
	namesVerdict   = []string{"type", "reason"}
)

// replyByWalk is ReadReply in one pass of a Walker over the answer (and
// over the event holding it), without decoding it: an answer's text is
// read twice by json.Unmarshal otherwise (the event, then the answer in
// it), a few kilobytes to hundreds. It answers only when its reading is
// certainly json.Unmarshal's into the structs readMessagesReply and
// readResponsesReply use (jsonwalk.WalkObject: plain, distinct keys,
// strings without escapes, every member read of the struct's type); ok is
// false otherwise, and json.Unmarshal reads it.
func replyByWalk(w *jsonwalk.Walker, shape groundhog.Shape, body []byte, events []groundhog.Event) (r Reply, ok bool) {
	msg := body
	eventName, holder, names := "message_start", namesMessage, namesMessages
	if shape == groundhog.ShapeResponses {
		eventName, holder, names = "response.completed", namesResponse, namesResponses
	}
	for _, ev := range events {
		if ev.Name != eventName {
			continue
		}
		var inner []byte
		if _, ok := jsonwalk.WalkObject(w, ev.Data, holder, func(int) bool {
			inner = jsonwalk.RawValue(w)
			return inner != nil
		}); !ok {
			return Reply{}, false
		}
		msg = inner
		if shape == groundhog.ShapeMessages {
			break // the first message_start; a Responses stream's last response.completed
		}
	}
	if len(msg) == 0 {
		return Reply{}, true
	}
	var id, typ, reason []byte
	diag := false
	_, ok = jsonwalk.WalkObject(w, msg, names, func(i int) bool {
		if i == 0 {
			return jsonwalk.PlainStrTo(w, &id)
		}
		if w.Null() {
			return true // the pointer stays nil
		}
		if !w.At('{') {
			return false
		}
		diag = true
		if shape == groundhog.ShapeResponses {
			return jsonwalk.Members(w, namesVerdict, func(i int) bool {
				if i == 0 {
					return jsonwalk.PlainStrTo(w, &typ)
				}
				return jsonwalk.PlainStrTo(w, &reason)
			})
		}
		return jsonwalk.Members(w, namesReason, func(int) bool {
			return jsonwalk.NullOrMembers(w, namesType, func(int) bool { return jsonwalk.PlainStrTo(w, &typ) })
		})
	})
	if !ok {
		return Reply{}, false
	}
	r.ID = string(id)
	if !diag {
		return r, true
	}
	if shape == groundhog.ShapeResponses {
		switch {
		case string(typ) == "cache_miss" && len(reason) > 0:
			r.Provider = string(reason)
		case len(typ) > 0:
			r.Provider = string(typ)
		}
		return r, true
	}
	r.Provider = "none"
	if len(typ) > 0 {
		r.Provider = string(typ)
	}
	return r, true
}

// readMessagesReply is ReadReply of an Anthropic Messages answer by
// json.Unmarshal.
func readMessagesReply(body []byte, events []groundhog.Event) Reply {
	msg := body
	if len(events) > 0 {
		for _, ev := range events {
			if ev.Name == "message_start" {
				var s struct {
					Message json.RawMessage `json:"message"`
				}
				_ = json.Unmarshal(ev.Data, &s)
				msg = s.Message
				break
			}
		}
	}
	var m struct {
		ID          string `json:"id"`
		Diagnostics *struct {
			Reason *struct {
				Type string `json:"type"`
			} `json:"cache_miss_reason"`
		} `json:"diagnostics"`
	}
	if len(msg) == 0 || json.Unmarshal(msg, &m) != nil {
		return Reply{}
	}
	r := Reply{ID: m.ID}
	if d := m.Diagnostics; d != nil {
		r.Provider = "none"
		if d.Reason != nil && d.Reason.Type != "" {
			r.Provider = d.Reason.Type
		}
	}
	return r
}

// readResponsesReply is ReadReply of an OpenAI Responses answer by
// json.Unmarshal.
func readResponsesReply(body []byte, events []groundhog.Event) Reply {
	resp := body
	for _, ev := range events {
		if ev.Name == "response.completed" {
			var s struct {
				Response json.RawMessage `json:"response"`
			}
			_ = json.Unmarshal(ev.Data, &s)
			resp = s.Response
		}
	}
	var m struct {
		ID          string `json:"id"`
		Diagnostics *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"prompt_cache_diagnostics"`
	}
	if len(resp) == 0 || json.Unmarshal(resp, &m) != nil {
		return Reply{}
	}
	r := Reply{ID: m.ID}
	if d := m.Diagnostics; d != nil {
		switch {
		case d.Type == "cache_miss" && d.Reason != "":
			r.Provider = d.Reason
		case d.Type != "":
			r.Provider = d.Type // cache_hit
		}
	}
	return r
}

// askProviderFor asks the provider of shape for its cache diagnostics
// against the answer prev ("" when the chain has none): Anthropic Messages
// (askProvider) and OpenAI Responses (askComparison); other shapes are
// returned unchanged.
func askProviderFor(shape groundhog.Shape, body []byte, prev string) ([]byte, bool) {
	switch shape {
	case groundhog.ShapeMessages:
		return askProvider(body, prev)
	case groundhog.ShapeResponses:
		return askComparison(body, prev)
	}
	return body, false
}

// askComparison sets prompt_cache_options.comparison_response_id to prev
// in a Responses body: the member is added to the client's
// prompt_cache_options (or a new one is added as the body's last member);
// no other byte changes. A body that already names a comparison response,
// or whose prompt_cache_options is not an object, is left alone, and so is
// every body when prev is empty (OpenAI compares with an earlier response
// only; the first turn has none).
func askComparison(body []byte, prev string) ([]byte, bool) {
	if prev == "" {
		return body, false
	}
	root := span{skipWS(body, 0), len(bytes.TrimRight(body, " \t\r\n"))}
	if root.start >= root.end || body[root.start] != '{' {
		return body, false
	}
	id, _ := json.Marshal(prev)
	member := `"comparison_response_id":` + string(id)
	opts := field(body, root, "prompt_cache_options")
	var at, end int
	var ins string
	switch {
	case !opts.ok():
		a, comma := insertPoint(body, root)
		at, end, ins = a, a, comma+`"prompt_cache_options":{`+member+`}`
	case isNull(body, opts):
		at, end, ins = opts.start, opts.end, `{`+member+`}`
	case body[opts.start] != '{' || field(body, opts, "comparison_response_id").ok():
		return body, false
	default:
		a, comma := insertPoint(body, opts)
		at, end, ins = a, a, comma+member
	}
	out := make([]byte, 0, len(body)+len(ins))
	out = append(out, body[:at]...)
	out = append(out, ins...)
	out = append(out, body[end:]...)
	return out, true
}

// askProvider adds "diagnostics": {"previous_message_id": prev} (null when
// prev is empty) as the last member of an Anthropic body that has none.
func askProvider(body []byte, prev string) ([]byte, bool) {
	if bytes.Contains(body, []byte(`"diagnostics"`)) {
		return body, false // the client asked itself (or the word is in the text: leave it alone)
	}
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return body, false
	}
	id := "null"
	if prev != "" {
		id = strconv.Quote(prev)
	}
	out := make([]byte, 0, len(body)+48+len(id))
	out = append(out, body[:end]...)
	out = append(out, `,"diagnostics":{"previous_message_id":`+id+`}`...)
	out = append(out, body[end:]...)
	return out, true
}

// Header returns the value of Groundhog-Prompt-Cache-Break: groundhog's
// cause, followed by "; provider=<reason>" when the provider gave its own
// verdict; "" when nothing broke.
func (o Outcome) Header() string {
	h := o.Result.Header()
	if h != "" && o.Provider != "" {
		h += "; provider=" + o.Provider
	}
	return h
}
