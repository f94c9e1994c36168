package bedrock

import "github.com/groundhog-ai/groundhog/internal/jsonwalk"

// The fast paths of FingerprintBody and InvokeFingerprintBody: for the
// usual body, one pass (jsonwalk) validates it, checks the typed members
// as checkConverseTypes and checkInvokeTypes do, finds the cachePoint
// blocks, and returns the body with `"model":"<id>",` spliced in after its
// opening brace and the cachePoint blocks cut — the same members as the
// encoding/json path's re-encoding, so the same canonical form and hash,
// without its passes (a 200 KB Converse body: ≈ 18 ms of encoding/json).
// Each reports ok false, leaving the answer to the encoding/json path, for
// anything it does not settle alone: a body that is invalid or not an
// object, a typed member of a type the checks refuse or spelled in other
// letter cases (which encoding/json matches), a number the checks would
// have to round (an exponent, a fraction where a whole number is wanted,
// more digits than a float64 holds), a key with an escape, a non-ASCII
// byte or a repeat in an object the encoding/json path decodes, a "model"
// member of its own.

// cut is a span of the body the spliced copy replaces.
type cut struct {
	start, end int
	with       []byte
}

// splice returns body with `"model":"<id>"` and a comma (unless the
// object is empty) after its opening brace (at open), and the cuts
// applied, in order.
func splice(id string, body []byte, open int, cuts []cut) []byte {
	out := make([]byte, 0, len(body)+len(id)+len(`{"model":"",`))
	out = append(out, `{"model":"`...)
	out = append(out, id...)
	out = append(out, '"')
	at := open + 1
	if w := (jsonwalk.Walker{B: body, I: at}); !w.End() && !w.At('}') {
		out = append(out, ',') // members follow
	}
	for _, c := range cuts {
		out = append(out, body[at:c.start]...)
		out = append(out, c.with...)
		at = c.end
	}
	return append(out, body[at:]...)
}

// blocks steps over an array of blocks at w.I (or null), each stepped by
// block, which reports whether the block is a cachePoint block; when some
// are, it adds the cut that rebuilds the array without them.
func blocks(w *jsonwalk.Walker, cuts *[]cut, block func(cachePoint *bool) bool) bool {
	if w.Null() {
		return true
	}
	start := w.I
	type span struct {
		start, end int
		drop       bool
	}
	var elems []span
	dropped := false
	ok := w.Array(func() bool {
		e := span{start: w.I}
		if !block(&e.drop) {
			return false
		}
		e.end = w.I
		dropped = dropped || e.drop
		elems = append(elems, e)
		return true
	})
	if !ok || !dropped {
		return ok
	}
	with := []byte{'['}
	for _, e := range elems {
		if e.drop {
			continue
		}
		if len(with) > 1 {
			with = append(with, ',')
		}
		with = append(with, w.B[e.start:e.end]...)
	}
	*cuts = append(*cuts, cut{start: start, end: w.I, with: append(with, ']')})
	return true
}

// textBlock steps over a content or system block (null, or an object whose
// "text" is null or a string), noting a cachePoint member.
func textBlock(w *jsonwalk.Walker, cachePoint *bool) bool {
	if w.Null() {
		return true
	}
	return w.Object(func(key []byte) bool {
		switch string(key) {
		case "text":
			return w.NullOr(w.Str)
		case "cachePoint":
			*cachePoint = true
		}
		if jsonwalk.Fold(key, "text") {
			return false
		}
		return w.Value()
	})
}

// toolBlock steps over a tool of toolConfig.tools (null, or any object),
// noting a cachePoint member.
func toolBlock(w *jsonwalk.Walker, cachePoint *bool) bool {
	if w.Null() {
		return true
	}
	return w.Object(func(key []byte) bool {
		if string(key) == "cachePoint" {
			*cachePoint = true
		}
		return w.Value()
	})
}

// stringList steps over null or an array of strings (or nulls).
func stringList(w *jsonwalk.Walker) bool {
	return w.NullOr(func() bool { return w.Array(func() bool { return w.NullOr(w.Str) }) })
}

// messages steps over null or an array of messages: null, or objects whose
// role is null or a string and whose content content steps over.
func messages(w *jsonwalk.Walker, content func() bool) bool {
	return w.NullOr(func() bool {
		return w.Array(func() bool {
			return w.NullOr(func() bool {
				return w.Object(func(key []byte) bool {
					switch string(key) {
					case "role":
						return w.NullOr(w.Str)
					case "content":
						return content()
					}
					return !jsonwalk.Fold(key, "role", "content") && w.Value()
				})
			})
		})
	})
}

// spliceConverse is FingerprintBody's fast path.
func spliceConverse(modelID string, body []byte) ([]byte, bool) {
	if !jsonwalk.PlainString(modelID) {
		return nil, false
	}
	w := &jsonwalk.Walker{B: body}
	w.WS()
	open := w.I
	var cuts []cut
	text := func(cp *bool) bool { return textBlock(w, cp) }
	ok := w.Object(func(key []byte) bool {
		switch string(key) {
		case "messages":
			return messages(w, func() bool { return blocks(w, &cuts, text) })
		case "system":
			return blocks(w, &cuts, text)
		case "inferenceConfig":
			return w.NullOr(func() bool {
				return w.Object(func(key []byte) bool {
					switch string(key) {
					case "maxTokens":
						return w.NullOr(w.Integer)
					case "temperature", "topP":
						return w.NullOr(w.Float)
					case "stopSequences":
						return stringList(w)
					}
					return !jsonwalk.Fold(key, "maxtokens", "temperature", "topp", "stopsequences") && w.Value()
				})
			})
		case "toolConfig":
			return w.NullOr(func() bool {
				return w.Object(func(key []byte) bool {
					if string(key) == "tools" {
						return blocks(w, &cuts, func(cp *bool) bool { return toolBlock(w, cp) })
					}
					return !jsonwalk.Fold(key, "tools") && w.Value()
				})
			})
		case "additionalModelResponseFieldPaths":
			return stringList(w)
		case "requestMetadata":
			return w.NullOr(func() bool {
				return w.Object(func([]byte) bool { return w.NullOr(w.Str) })
			})
		}
		return !jsonwalk.Fold(key, "model", "messages", "system", "inferenceconfig", "toolconfig",
			"additionalmodelresponsefieldpaths", "requestmetadata") && w.Value()
	})
	if !ok || !w.End() {
		return nil, false
	}
	return splice(modelID, body, open, cuts), true
}

// spliceInvoke is InvokeFingerprintBody's fast path.
func spliceInvoke(modelID string, body []byte) ([]byte, bool) {
	if !jsonwalk.PlainString(modelID) {
		return nil, false
	}
	w := &jsonwalk.Walker{B: body}
	w.WS()
	open := w.I
	ok := w.Object(func(key []byte) bool {
		switch string(key) {
		case "messages":
			// A message's content: a string or an array of blocks.
			return messages(w, func() bool { return w.NullOr(func() bool { return (w.At('"') || w.At('[')) && w.Value() }) })
		case "max_tokens", "top_k":
			return w.NullOr(w.Integer)
		case "temperature", "top_p":
			return w.NullOr(w.Float)
		case "stop_sequences":
			return stringList(w)
		case "tools":
			return w.NullOr(func() bool {
				return w.Array(func() bool { return w.NullOr(func() bool { return w.At('{') && w.Value() }) })
			})
		}
		return !jsonwalk.Fold(key, "model", "messages", "max_tokens", "top_k", "temperature", "top_p", "stop_sequences", "tools") && w.Value()
	})
	if !ok || !w.End() {
		return nil, false
	}
	return splice(modelID, body, open, nil), true
}
