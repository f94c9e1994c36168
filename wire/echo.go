package wire

import (
	"bytes"
	"encoding/json"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// echoField is a request field that the provider echoes in its response
// while the fingerprint leaves it out of the cache key: a response stored
// for one caller carries that caller's value, and must carry the current
// caller's value when it answers another call (a hit, a coalesced answer, a
// replay). def is the value the provider echoes when the request omits the
// field; nil when that value is the provider's to choose (a model-dependent
// default), in which case a request that omits the field keeps the stored
// answer's own value.
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
		// store joins the key, and an omitted store is echoed as the
		// provider decides (false for a zero-retention organization): only
		// a request that sets it changes the stored value.
		{"store", nil},
		{"prompt_cache_key", rawNull},
		// The default retention depends on the model ("in_memory", "24h"):
		// only a request that sets it changes the stored value.
		{"prompt_cache_retention", nil},
	},
}

// HasEchoedFields reports whether responses of shape echo request fields
// that RewriteEcho would rewrite.
func HasEchoedFields(shape groundhog.Shape) bool { return len(echoed[shape]) > 0 }

// EchoFields returns the names of the request fields the responses of
// shape echo (nil when none), in the order RewriteEchoValues and
// NewEchoRewriterValues take their values. The slice is shared: do not
// modify it.
func EchoFields(shape groundhog.Shape) []string { return echoNames[shape] }

var echoNames = func() map[groundhog.Shape][]string {
	m := map[groundhog.Shape][]string{}
	for shape, fields := range echoed {
		for _, f := range fields {
			m[shape] = append(m[shape], f.name)
		}
	}
	return m
}()

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
	raw := make([][]byte, len(fields))
	for i, f := range fields {
		raw[i] = req.get(f.name)
	}
	return echoValuesOf(shape, raw), true
}

// echoValuesOf is echoValues from the request's values of the echoed fields
// (EchoFields order; nil for a field the request does not hold).
func echoValuesOf(shape groundhog.Shape, raw [][]byte) object {
	var vals object
	for i, f := range echoed[shape] {
		var v json.RawMessage
		if i < len(raw) {
			v = raw[i]
		}
		if v == nil {
			v = f.def
		}
		if v != nil {
			vals = append(vals, member{f.name, v})
		}
	}
	return vals
}

// spliceEcho returns the JSON object b with the value of each of its
// top-level members named in vals replaced by vals' value, and whether any
// changed. Only the differing values' bytes change (a value equal to the
// wanted one, compared as compact JSON, is left as it is): the rest of b —
// key order, spacing, number forms — stays byte for byte, and b itself is
// never modified. b is expected to be valid JSON (a stored answer); on
// anything else the result is meaningless but it never panics, and
// anything that does not start as an object is returned unchanged. Fields
// the provider did not echo are not added.
func spliceEcho(b []byte, vals object) ([]byte, bool) {
	var out []byte
	last := 0 // b[last:] is not yet copied to out
	ok := topMembers(b, 0, func(key []byte, start, end int) bool {
		if want := vals.get(string(key)); want != nil && !sameJSON(b[start:end], want) {
			out = append(append(out, b[last:start]...), want...)
			last = end
		}
		return true
	})
	if !ok || out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// sameJSON reports whether a and b are the same JSON value, spacing aside.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// RewriteEcho returns body (a response of shape) with its echoed request
// fields set from request, the current call's body: a stored or shared
// answer never shows another caller's user, metadata or store. A field
// whose omitted value is the provider's choice (prompt_cache_retention)
// keeps the stored answer's value unless request sets it. When nothing
// differs, body itself is returned (the stored bytes, never re-encoded);
// otherwise only the differing values change. A body that does not parse,
// or a shape that echoes nothing, is returned unchanged.
func RewriteEcho(shape groundhog.Shape, request, body []byte) []byte {
	vals, ok := echoValues(shape, request)
	if !ok || !jsonwalk.Valid(body) {
		return body
	}
	out, _ := spliceEcho(body, vals)
	return out
}

// RewriteEchoValues is RewriteEcho given the request's values of the
// echoed fields instead of the request: values[i] is the raw JSON value of
// the field EchoFields(shape)[i] in the request, nil when the request does
// not hold it. A caller that already knows where those values are (the
// fingerprint's pass finds them: fingerprint.Params.Top) need not have the
// whole request read again — at 200 KB that read costs more than the rest
// of a cache hit.
//
// body must be valid JSON, as every answer the gateway stores or shares is
// (it is validated when read from the provider): it is not validated again
// here, which would cost a hit of a 200 KB answer 70 µs. An invalid body
// gives a meaningless result, never a panic.
func RewriteEchoValues(shape groundhog.Shape, values [][]byte, body []byte) []byte {
	if len(echoed[shape]) == 0 {
		return body
	}
	out, _ := spliceEcho(body, echoValuesOf(shape, values))
	return out
}

// EchoRewriter rewrites the echoed request fields in the events of one
// stream (the "response" object of response.created, response.in_progress,
// response.completed, …). Build it once per call with NewEchoRewriter.
type EchoRewriter struct {
	vals    object
	trusted bool // events are not validated first (NewEchoRewriterValues)
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

// NewEchoRewriterValues is NewEchoRewriter given the request's values of
// the echoed fields, as RewriteEchoValues takes them; like it, it does not
// validate what it rewrites. The events of a stored stream were each read
// as JSON when the stream was judged complete; a live event that is not
// JSON stays not JSON, rewritten or not, and never makes the rewriter
// panic.
func NewEchoRewriterValues(shape groundhog.Shape, values [][]byte) *EchoRewriter {
	if len(echoed[shape]) == 0 {
		return nil
	}
	return &EchoRewriter{vals: echoValuesOf(shape, values), trusted: true}
}

// Event returns ev with the echoed fields of its response object rewritten
// as RewriteEcho rewrites a body: an event that needs no change is returned
// as it is. ev.Data is never modified: a changed event gets a new Data.
func (e *EchoRewriter) Event(ev groundhog.Event) groundhog.Event {
	if e == nil || !bytes.Contains(ev.Data, []byte(`"response"`)) || !e.trusted && !jsonwalk.Valid(ev.Data) {
		return ev
	}
	b := ev.Data
	i, ok := responseObject(b)
	if !ok {
		return ev
	}
	// The rest of the event from the response object on: the splice stops
	// at the object's end and keeps what follows.
	if r, changed := spliceEcho(b[i:], e.vals); changed {
		data := make([]byte, 0, i+len(r))
		ev.Data = append(append(data, b[:i]...), r...)
	}
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
