package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// MaxModelID bounds the model id of a route (an ARN of an inference
// profile or a provisioned model is well under it).
const MaxModelID = 2048

// Path returns the upstream path of a Converse call: /model/{modelId}/converse
// or /converse-stream, the model id escaped as one path segment (an ARN's
// "/" and ":" escaped, as the AWS SDK sends them).
func Path(modelID string, stream bool) string {
	p := "/model/" + escapeSegment(modelID) + "/converse"
	if stream {
		p += "-stream"
	}
	return p
}

// escapeSegment escapes s as one path segment the way the AWS SDK's REST
// binding does: every byte but the unreserved ones (RFC 3986) is escaped.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

// ParsePath reads an escaped request path of the Converse shape:
// "/model/{modelId}/converse" or "/model/{modelId}/converse-stream", the
// model id one escaped segment (so an ARN's "/" arrives as %2F). ok is
// false for any other path.
func ParsePath(escapedPath string) (modelID string, stream, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, "/model/")
	if !found {
		return "", false, false
	}
	seg, op, found := strings.Cut(rest, "/")
	if !found {
		return "", false, false
	}
	switch op {
	case "converse":
	case "converse-stream":
		stream = true
	default:
		return "", false, false
	}
	id, err := url.PathUnescape(seg)
	if err != nil || CheckModelID(id) != nil {
		return "", false, false
	}
	return id, stream, true
}

// CheckModelID validates a model id taken from a path: a foundation model
// id, with or without a cross-region inference profile prefix ("us.",
// "eu.", "apac.", "global."), or an ARN. It must be 1–MaxModelID bytes of
// visible ASCII, and no "/"-separated part of it may be "." or ".." (no
// model id or ARN has one; a server that decodes %2F before routing would
// read it as a path step).
func CheckModelID(id string) error {
	if id == "" {
		return groundhog.Errorf(groundhog.EINVALID, "missing model id in the path (/model/{modelId}/converse)")
	}
	if len(id) > MaxModelID {
		return groundhog.Errorf(groundhog.EINVALID, "model id is longer than %d bytes", MaxModelID)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return groundhog.Errorf(groundhog.EINVALID, "model id must be visible ASCII")
		}
	}
	for part := range strings.SplitSeq(id, "/") {
		if part == "." || part == ".." {
			return groundhog.Errorf(groundhog.EINVALID, "model id must not contain a %q path step", part)
		}
	}
	return nil
}

// Region prefixes of cross-region inference profiles.
var profilePrefixes = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// BaseModel returns the foundation model id inside id: without a
// cross-region inference profile prefix ("us.anthropic.claude-…" →
// "anthropic.claude-…"), and for an ARN of a foundation model or an
// inference profile, its resource id (with the profile prefix removed
// too). Any other id is returned as it is.
func BaseModel(id string) string {
	if strings.HasPrefix(id, "arn:") {
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
	}
	for _, p := range profilePrefixes {
		if rest, ok := strings.CutPrefix(id, p); ok {
			return rest
		}
	}
	return id
}

// FingerprintBody returns a Converse request body as the fingerprint reads
// it: the body's members, plus "model" set to the model id of the path (so
// the fingerprint's model and hash carry it), without the cachePoint blocks
// of "system", of every message's "content" and of "toolConfig.tools".
// A cachePoint tells Bedrock where to cache a prefix: it changes cost,
// never the answer, so a request with and without one has one hash.
//
// The result is JSON for the fingerprint, which canonicalizes it (member
// order, whitespace, numbers, escapes): two bodies that differ only in
// those have results that differ too, but one hash. The error is EINVALID
// when body is not a JSON object.
//
// The usual body takes one pass (spliceConverse); the rest are decoded and
// encoded again by encoding/json.
func FingerprintBody(modelID string, body []byte) ([]byte, error) {
	if out, ok := spliceConverse(modelID, body); ok {
		return out, nil
	}
	return decodeFingerprintBody(modelID, body)
}

// decodeFingerprintBody is FingerprintBody by encoding/json.
func decodeFingerprintBody(modelID string, body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict(body, &top); err != nil || top == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	if err := checkConverseTypes(body); err != nil {
		return nil, err
	}
	if raw, ok := top["system"]; ok {
		top["system"] = dropCachePoints(raw)
	}
	if raw, ok := top["messages"]; ok {
		var msgs []json.RawMessage
		if json.Unmarshal(raw, &msgs) == nil {
			for i, m := range msgs {
				msgs[i] = withMember(m, "content", dropCachePoints)
			}
			top["messages"] = mustMarshal(msgs)
		}
	}
	if raw, ok := top["toolConfig"]; ok {
		top["toolConfig"] = withMember(raw, "tools", dropCachePoints)
	}
	top["model"] = mustMarshal(modelID)
	return mustMarshal(top), nil
}

// decodeStrict decodes body, which must be one JSON value and nothing
// more, into v.
func decodeStrict(body []byte, v any) error {
	if !json.Valid(body) {
		return errNotJSON
	}
	return json.Unmarshal(body, v)
}

var errNotJSON = errors.New("bedrock: not JSON")

// withMember returns the object raw with its member key replaced by
// f(member); raw as it is when it is not an object or lacks the member.
func withMember(raw json.RawMessage, key string, f func(json.RawMessage) json.RawMessage) json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return raw
	}
	v, ok := o[key]
	if !ok {
		return raw
	}
	o[key] = f(v)
	return mustMarshal(o)
}

// dropCachePoints returns the array raw without its cachePoint blocks
// (objects with a "cachePoint" member); raw as it is when it is not an
// array.
func dropCachePoints(raw json.RawMessage) json.RawMessage {
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil || elems == nil {
		return raw
	}
	kept := elems[:0]
	for _, e := range elems {
		if !IsCachePoint(e) {
			kept = append(kept, e)
		}
	}
	return mustMarshal(kept)
}

// IsCachePoint reports whether a content, system or tool block is a
// cachePoint block.
func IsCachePoint(block json.RawMessage) bool {
	b := bytes.TrimSpace(block)
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"cachePoint"`)) {
		return false
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(b, &o) != nil {
		return false
	}
	_, ok := o["cachePoint"]
	return ok
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values decoded from valid JSON (or strings) are marshalled.
		panic("bedrock: marshal: " + err.Error())
	}
	return b
}

// Passthrough is a Bedrock runtime route groundhog relays without modelling
// it (InvokeModel, InvokeModelWithResponseStream, CountTokens,
// ApplyGuardrail, the async-invoke routes).
type Passthrough struct {
	Path    string // the upstream path, every segment re-escaped
	ModelID string // the model id of a /model/{modelId}/… route, else ""
	Op      string // the route's last fixed segment: invoke, invoke-with-response-stream, count-tokens, apply, async-invoke
}

// ParsePassthrough reads an escaped request path of a Bedrock runtime
// route other than Converse: /model/{modelId}/invoke,
// /model/{modelId}/invoke-with-response-stream, /model/{modelId}/count-tokens,
// /guardrail/{id}/version/{version}/apply, /async-invoke and
// /async-invoke/{invocationArn}. The path sent upstream is rebuilt from the
// unescaped segments, each escaped again, so no path can climb out of the
// endpoint. ok is false for any other path.
func ParsePassthrough(escapedPath string) (p Passthrough, ok bool) {
	raw := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" || u == "." || u == ".." || CheckModelID(u) != nil {
			return Passthrough{}, false
		}
		segs[i] = u
	}
	build := func() string {
		var b strings.Builder
		for _, s := range segs {
			b.WriteByte('/')
			b.WriteString(escapeSegment(s))
		}
		return b.String()
	}
	switch {
	case len(segs) == 3 && segs[0] == "model":
		switch segs[2] {
		case "invoke", "invoke-with-response-stream", "count-tokens":
			return Passthrough{Path: build(), ModelID: segs[1], Op: segs[2]}, true
		}
	case len(segs) == 5 && segs[0] == "guardrail" && segs[2] == "version" && segs[4] == "apply":
		return Passthrough{Path: build(), Op: "apply"}, true
	case (len(segs) == 1 || len(segs) == 2) && segs[0] == "async-invoke":
		return Passthrough{Path: build(), Op: "async-invoke"}, true
	}
	return Passthrough{}, false
}
