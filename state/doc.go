package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
)

// The wire form of a working state is one JSON object with exactly these
// members (any may be absent, except constraints in a PUT):
//
//	objective, next_step                                  string
//	constraints, findings, failed_approaches, evidence    array of strings
//	ext                                                   object (application fields)
//
// Anything else is refused, naming the field, so a typo never silently
// drops data. Responses render the fixed members in that order, every
// list present ([] when empty), then ext when set: the seed record comes
// back byte for byte.

type member struct {
	key string
	val json.RawMessage
}

// members returns the members of a JSON object in document order, or
// ok false when raw is not an object. raw must be valid JSON.
func members(raw []byte) (ms []member, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, false, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		ms = append(ms, member{key, v})
	}
	return ms, true, nil
}

func encodeMembers(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshalNoEscape(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func invalid(format string, args ...any) error {
	return groundhog.Errorf(groundhog.EINVALID, format, args...)
}

// checkJSON refuses a body that is not a UTF-8 JSON object. Invalid UTF-8
// is refused rather than replaced: the state is stored verbatim.
func checkJSON(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return invalid("request body is empty")
	case !utf8.Valid(body):
		return invalid("request body is not valid UTF-8")
	case !json.Valid(body):
		return invalid("request body is not valid JSON")
	case trimmed[0] != '{':
		return invalid("request body must be a JSON object")
	}
	return nil
}

// Parse parses a full working-state document (a PUT body, or the result of
// a merge patch). requireConstraints refuses a document without
// "constraints": a PUT replaces the state, and a PUT that forgot the
// user's constraints must not erase them silently; "constraints": [] says
// "none" explicitly.
func Parse(body []byte, requireConstraints bool) (groundhog.WorkingState, error) {
	var s groundhog.WorkingState
	if err := checkJSON(body); err != nil {
		return s, err
	}
	ms, _, err := members(body)
	if err != nil {
		return s, invalid("request body is not valid JSON")
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.key] {
			return s, invalid("field %q appears more than once", m.key)
		}
		seen[m.key] = true
		switch m.key {
		case "objective":
			err = parseString(m, &s.Objective)
		case "next_step":
			err = parseString(m, &s.NextStep)
		case "constraints":
			err = parseList(m, &s.Constraints)
		case "findings":
			err = parseList(m, &s.Findings)
		case "failed_approaches":
			err = parseList(m, &s.FailedApproaches)
		case "evidence":
			err = parseList(m, &s.Evidence)
		case "ext":
			if m.val[0] != '{' {
				return s, invalid(`field "ext" must be an object`)
			}
			var c bytes.Buffer
			if err := json.Compact(&c, m.val); err != nil {
				return s, invalid(`field "ext" is not valid JSON`)
			}
			if c.Len() > 2 { // "{}" is no ext
				s.Ext = c.Bytes()
			}
		default:
			return s, invalid("unknown field %q (application fields belong in \"ext\")", m.key)
		}
		if err != nil {
			return s, err
		}
	}
	if requireConstraints && !seen["constraints"] {
		return s, invalid(`field "constraints" is required in a PUT (send [] for none)`)
	}
	if err := checkEvidence(s); err != nil {
		return s, err
	}
	normalize(&s)
	return s, nil
}

// knownFields are the members a working-state document may have.
var knownFields = map[string]bool{
	"objective": true, "constraints": true, "findings": true, "failed_approaches": true,
	"evidence": true, "next_step": true, "ext": true,
}

// checkPatch refuses a merge patch naming an unknown top-level member
// before any merging is done (the body's size is bounded by readBody).
func checkPatch(body []byte) error {
	ms, _, err := members(body)
	if err != nil {
		return invalid("request body is not valid JSON")
	}
	for _, m := range ms {
		if !knownFields[m.key] {
			return invalid("unknown field %q (application fields belong in \"ext\")", m.key)
		}
	}
	return nil
}

// Validate is the one check every state write passes — PUT, PATCH and a
// compaction, from a proposal or from the model's answer — before it is
// stored: every "ev_" evidence entry is a valid ref (EINVALID) and the
// rendered state is at most maxBytes (ETOOLARGE; maxBytes <= 0 is
// DefaultMaxBytes). A compaction also carries the objective and the
// constraints verbatim (compaction.Apply).
func Validate(s groundhog.WorkingState, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := checkEvidence(s); err != nil {
		return err
	}
	if n := int64(len(Render(s))); n > maxBytes {
		return groundhog.Errorf(groundhog.ETOOLARGE, "state would be %d bytes, more than the limit of %d", n, maxBytes)
	}
	return nil
}

func checkEvidence(s groundhog.WorkingState) error {
	for i, e := range s.Evidence {
		if strings.HasPrefix(e, groundhog.EvidenceRefPrefix) && !groundhog.ValidEvidenceRef(e) {
			return invalid("evidence[%d] %q starts with %q but is not a valid evidence ref (ev_ + 64 lowercase hex digits)", i, e, groundhog.EvidenceRefPrefix)
		}
	}
	return nil
}

func parseString(m member, dst *string) error {
	if m.val[0] != '"' {
		return invalid("field %q must be a string", m.key)
	}
	return json.Unmarshal(m.val, dst)
}

func parseList(m member, dst *[]string) error {
	if m.val[0] != '[' {
		return invalid("field %q must be an array of strings", m.key)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(m.val, &items); err != nil {
		return invalid("field %q must be an array of strings", m.key)
	}
	out := make([]string, len(items))
	for i, it := range items {
		if it[0] != '"' {
			return invalid("field %q[%d] must be a string", m.key, i)
		}
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return invalid("field %q[%d] must be a string", m.key, i)
		}
	}
	*dst = out
	return nil
}

// normalize makes every list non-nil, so a state renders the same whether
// a list was absent or empty.
func normalize(s *groundhog.WorkingState) {
	for _, l := range []*[]string{&s.Constraints, &s.Findings, &s.FailedApproaches, &s.Evidence} {
		if *l == nil {
			*l = []string{}
		}
	}
}

// Render returns the wire form of s (see the package's format note).
func Render(s groundhog.WorkingState) []byte {
	normalize(&s)
	type fixed struct {
		Objective        string   `json:"objective"`
		Constraints      []string `json:"constraints"`
		Findings         []string `json:"findings"`
		FailedApproaches []string `json:"failed_approaches"`
		Evidence         []string `json:"evidence"`
		NextStep         string   `json:"next_step"`
	}
	b, err := marshalNoEscape(fixed{s.Objective, s.Constraints, s.Findings, s.FailedApproaches, s.Evidence, s.NextStep})
	if err != nil {
		panic(fmt.Sprintf("state: render: %v", err)) // strings and lists of strings always marshal
	}
	if len(s.Ext) > 0 {
		b = append(b[:len(b)-1], `,"ext":`...)
		b = append(b, s.Ext...)
		b = append(b, '}')
	}
	return b
}

// MergePatch applies the JSON Merge Patch patch (RFC 7396) to target and
// returns the result: members of an object patch replace or (when null)
// remove the target's, recursively for objects; anything else, arrays
// included, replaces the target whole. Member order is kept, new members
// come after the existing ones. Both must be valid JSON.
func MergePatch(target, patch []byte) ([]byte, error) {
	pm, isObj, err := members(patch)
	if err != nil {
		return nil, err
	}
	if !isObj {
		return patch, nil
	}
	tm, _, err := members(target)
	if err != nil && len(bytes.TrimSpace(target)) > 0 {
		return nil, err
	}
	// The target's members indexed by key (the last one of a repeated key,
	// as a decoder keeps): each patch member costs one lookup, so a patch
	// of n members into a target of m is O(n+m), not O(n·m). A removed
	// member keeps its slot with a nil value until the end.
	idx := make(map[string]int, len(tm)+len(pm))
	for i, m := range tm {
		idx[m.key] = i
	}
	for _, p := range pm {
		i, found := idx[p.key]
		if bytes.Equal(bytes.TrimSpace(p.val), []byte("null")) {
			if found {
				tm[i].val = nil
				delete(idx, p.key)
			}
			continue
		}
		var cur []byte
		if found {
			cur = tm[i].val
		}
		v, err := MergePatch(cur, p.val)
		if err != nil {
			return nil, err
		}
		if found {
			tm[i].val = v
		} else {
			idx[p.key] = len(tm)
			tm = append(tm, member{p.key, v})
		}
	}
	kept := tm[:0]
	for _, m := range tm {
		if m.val != nil {
			kept = append(kept, m)
		}
	}
	return encodeMembers(kept), nil
}

// readBody reads at most limit bytes of r; more is ETOOLARGE.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, httpguard.BodyError(err)
	}
	if int64(len(b)) > limit {
		return nil, groundhog.Errorf(groundhog.ETOOLARGE, "state is larger than %d bytes", limit)
	}
	return b, nil
}
