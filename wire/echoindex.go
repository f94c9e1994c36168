package wire

import (
	"bytes"

	groundhog "github.com/groundhog-ai/groundhog"
)

// EchoIndex is where one answer holds the request fields it echoes
// (EchoFields): the place of each such top-level member's value in its
// body, or in each of its events' response object. An answer shared by
// many calls — a stored answer at each of its hits, a flight's answer for
// each of its followers — is walked once to build it; each call's own
// values are then written in by copying the bytes around those places.
// Walking a Responses answer's top level costs about a nanosecond a byte,
// and the answer echoes the request's instructions and tools (20–30 KB for
// a coding agent's, three times in a stream: response.created,
// response.in_progress, response.completed).
//
// An EchoIndex describes the answer it was built from and only that one:
// Rewrite checks that it is given an answer of the same shape and size and
// otherwise rewrites as RewriteEchoValues does, by walking it.
type EchoIndex struct {
	shape  groundhog.Shape
	fields []echoField
	// size is the length of the body, or the number of events, indexed.
	size   int
	stream bool
	body   []echoSpan
	events []eventSpans // the events that have something to rewrite
}

// eventSpans are the places in event i.
type eventSpans struct {
	i     int
	spans []echoSpan
}

// echoSpan is the value of an echoed member: of field fields[field], at
// start:end.
type echoSpan struct {
	field      int
	start, end int
}

// IndexEcho returns the index of resp, an answer of shape that is valid
// JSON as stored and shared answers are (see RewriteEchoValues), or nil when
// shape echoes nothing. Rewriting through it gives byte for byte what
// RewriteEchoValues gives for a body and NewEchoRewriterValues for events.
func IndexEcho(shape groundhog.Shape, resp *groundhog.Response) *EchoIndex {
	fields := echoed[shape]
	if len(fields) == 0 || resp == nil {
		return nil
	}
	x := &EchoIndex{shape: shape, fields: fields, stream: resp.Streamed}
	if !resp.Streamed {
		x.size = len(resp.Body)
		x.body = echoSpans(resp.Body, 0, fields)
		return x
	}
	x.size = len(resp.Events)
	for i, ev := range resp.Events {
		if at, ok := responseObject(ev.Data); ok {
			if spans := echoSpans(ev.Data, at, fields); len(spans) > 0 {
				x.events = append(x.events, eventSpans{i, spans})
			}
		}
	}
	return x
}

// For reports whether x was built from an answer of shape like resp (its
// kind, and its body's length or number of events).
func (x *EchoIndex) For(shape groundhog.Shape, resp *groundhog.Response) bool {
	if x == nil || resp == nil || x.shape != shape || x.stream != resp.Streamed {
		return false
	}
	if resp.Streamed {
		return x.size == len(resp.Events)
	}
	return x.size == len(resp.Body)
}

// Size is about the memory x holds, in bytes.
func (x *EchoIndex) Size() int {
	n := 96 + 24*len(x.body)
	for _, e := range x.events {
		n += 32 + 24*len(e.spans)
	}
	return n
}

// Rewrite returns resp with its echoed fields set to values (EchoFields
// order; nil for a field the request does not hold), as RewriteEchoValues
// and NewEchoRewriterValues do. resp must be the answer x was built from;
// it is never modified, and it is returned itself when nothing differs. An
// answer x was not built for is rewritten by walking it.
func (x *EchoIndex) Rewrite(shape groundhog.Shape, values [][]byte, resp *groundhog.Response) *groundhog.Response {
	if len(echoed[shape]) == 0 || !resp.OK() {
		return resp
	}
	if !x.For(shape, resp) {
		x = IndexEcho(shape, resp)
	}
	wants := x.wants(values)
	out := *resp
	if !resp.Streamed {
		body, changed := spliceAt(resp.Body, x.body, wants)
		if !changed {
			return resp
		}
		out.Body = body
		return &out
	}
	var events []groundhog.Event
	for _, at := range x.events {
		data, changed := spliceAt(resp.Events[at.i].Data, at.spans, wants)
		if !changed {
			continue
		}
		if events == nil {
			events = append([]groundhog.Event(nil), resp.Events...)
		}
		events[at.i].Data = data
	}
	if events == nil {
		return resp
	}
	out.Events = events
	return &out
}

// wants is, per echoed field, the value to echo: the request's, else the
// field's default (nil: the stored value stays), as echoValuesOf gives.
func (x *EchoIndex) wants(values [][]byte) [][]byte {
	wants := make([][]byte, len(x.fields))
	for i, f := range x.fields {
		if i < len(values) && values[i] != nil {
			wants[i] = values[i]
		} else {
			wants[i] = f.def
		}
	}
	return wants
}

// spliceAt returns b with the value at each span replaced by its field's
// wanted value where they differ (compared as compact JSON), and whether
// any did; b itself is never modified and is returned when nothing
// differs. Spans out of b or out of order are skipped: never a panic.
func spliceAt(b []byte, spans []echoSpan, wants [][]byte) ([]byte, bool) {
	var out []byte
	last := 0 // b[last:] is not yet copied to out
	for _, sp := range spans {
		want := wants[sp.field]
		if want == nil || sp.start < last || sp.end > len(b) || sp.start > sp.end || sameJSON(b[sp.start:sp.end], want) {
			continue
		}
		if out == nil {
			n := len(b)
			for _, w := range wants {
				n += len(w)
			}
			out = make([]byte, 0, n)
		}
		out = append(append(out, b[last:sp.start]...), want...)
		last = sp.end
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// echoSpans returns the places of the echoed members' values in the JSON
// object b holds from i on (its top level only), as spliceEcho would
// replace them: nil when b holds no object there or its members cannot be
// read.
func echoSpans(b []byte, i int, fields []echoField) []echoSpan {
	var spans []echoSpan
	ok := topMembers(b, i, func(key []byte, start, end int) bool {
		for f := range fields {
			if string(key) == fields[f].name {
				spans = append(spans, echoSpan{f, start, end})
				break
			}
		}
		return true
	})
	if !ok {
		return nil
	}
	return spans
}

// responseObject returns where the value of an event's top-level
// "response" member starts, as EchoRewriter.Event finds it.
func responseObject(b []byte) (int, bool) {
	if !bytes.Contains(b, []byte(`"response"`)) {
		return 0, false
	}
	at, found := 0, false
	topMembers(b, 0, func(key []byte, start, _ int) bool {
		if string(key) == "response" {
			at, found = start, true
			return false
		}
		return true
	})
	return at, found
}

// topMembers calls visit with the raw key (the bytes between its quotes,
// escapes as written) and the value's place of each top-level member of
// the JSON object b holds from i on, in order, until visit returns false or
// the object ends. It reports false when b holds no object at i or a key
// is unterminated (not JSON); b is expected to be valid JSON, and anything
// else gives meaningless places but never a panic.
func topMembers(b []byte, i int, visit func(key []byte, start, end int) bool) bool {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := StringEnd(b, i)
		if ke < i+2 { // an unterminated key: not JSON
			return false
		}
		key := b[i+1 : ke-1]
		i = SkipSpace(b, ke)
		i = SkipSpace(b, i+1) // ':'
		ve := ValueEnd(b, i)
		if !visit(key, i, ve) {
			return true
		}
		i = SkipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return true
}
