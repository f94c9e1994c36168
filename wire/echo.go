package wire

import (
	"bytes"
	"encoding/json"

	groundhog "github.com/groundhog-ai/groundhog"
)

// echoField is a request field that the provider echoes in its response
// while the fingerprint leaves it out of the cache key: a response stored
// for one caller carries that caller's value, and must carry the current
// caller's value when it answers another call (a hit, a coalesced answer, a
// replay). def is the value the provider echoes when the request omits the
// field.
type echoField struct {
	name string
	def  json.RawMessage
}

// echoed lists the echoed request fields per shape. Only the Responses API
// echoes request fields (user, metadata, store, safety_identifier,
// prompt_cache_key, prompt_cache_retention; service_tier is echoed too but
// is part of the key, and the echoed value is the tier actually used). A
// chat completion echoes none (its service_tier and system_fingerprint
// describe the serving deployment, not the request), nor does an Anthropic
// message (metadata.user_id is not returned), nor an embedding list.
var echoed = map[groundhog.Shape][]echoField{
	groundhog.ShapeResponses: {
		{"user", rawNull},
		{"safety_identifier", rawNull},
		{"metadata", rawEmptyObj},
		{"store", json.RawMessage("true")},
		{"prompt_cache_key", rawNull},
		{"prompt_cache_retention", rawNull},
	},
}

// HasEchoedFields reports whether responses of shape echo request fields
// that RewriteEcho would rewrite.
func HasEchoedFields(shape groundhog.Shape) bool { return len(echoed[shape]) > 0 }

// echoValues returns, for each echoed field of shape, the value the
// provider would echo for request: the request's own value, or the default.
func echoValues(shape groundhog.Shape, request []byte) (object, bool) {
	fields := echoed[shape]
	if len(fields) == 0 {
		return nil, false
	}
	req, err := parseObject(request)
	if err != nil {
		return nil, false
	}
	var vals object
	for _, f := range fields {
		v := req.get(f.name)
		if v == nil {
			v = f.def
		}
		vals = append(vals, member{f.name, v})
	}
	return vals, true
}

// rewriteObject sets each echoed field that o has to its value in vals.
// Fields the provider did not echo are not added.
func rewriteObject(o object, vals object) {
	for _, m := range vals {
		o.setIfPresent(m.key, m.val)
	}
}

// RewriteEcho returns body (a response of shape) with its echoed request
// fields set from request, the current call's body: a stored or shared
// answer never shows another caller's user, metadata or store. A body that
// does not parse, or a shape that echoes nothing, is returned unchanged.
func RewriteEcho(shape groundhog.Shape, request, body []byte) []byte {
	vals, ok := echoValues(shape, request)
	if !ok {
		return body
	}
	o, err := parseObject(body)
	if err != nil {
		return body
	}
	rewriteObject(o, vals)
	return o.bytes()
}

// EchoRewriter rewrites the echoed request fields in the events of one
// stream (the "response" object of response.created, response.in_progress,
// response.completed, …). Build it once per call with NewEchoRewriter.
type EchoRewriter struct {
	vals object
}

// NewEchoRewriter returns a rewriter for the events of shape answering
// request, or nil when shape echoes nothing (or request does not parse). A
// nil *EchoRewriter returns events unchanged.
func NewEchoRewriter(shape groundhog.Shape, request []byte) *EchoRewriter {
	vals, ok := echoValues(shape, request)
	if !ok {
		return nil
	}
	return &EchoRewriter{vals: vals}
}

// Event returns ev with the echoed fields of its response object rewritten.
// ev.Data is never modified: a changed event gets a new Data.
func (e *EchoRewriter) Event(ev groundhog.Event) groundhog.Event {
	if e == nil || !bytes.Contains(ev.Data, []byte(`"response"`)) {
		return ev
	}
	o, err := parseObject(ev.Data)
	if err != nil {
		return ev
	}
	r, ok := o.obj("response")
	if !ok {
		return ev
	}
	rewriteObject(r, e.vals)
	o.set("response", r.raw())
	ev.Data = o.bytes()
	return ev
}

// Events returns events with every event rewritten (a new slice when any
// changed; events itself is never modified).
func (e *EchoRewriter) Events(events []groundhog.Event) []groundhog.Event {
	if e == nil {
		return events
	}
	out := make([]groundhog.Event, len(events))
	for i, ev := range events {
		out[i] = e.Event(ev)
	}
	return out
}
