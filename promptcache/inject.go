package promptcache

import (
	"encoding/json"
	"sort"

	"github.com/groundhog-ai/groundhog"
)

// Options tune breakpoint injection.
type Options struct {
	// TTL, when set ("1h" for Anthropic and Bedrock, "30m" for OpenAI explicit), is the
	// ttl of the injected markers. It is applied only when the client placed
	// no marker of its own, so Anthropic's "longer before shorter" order
	// always holds.
	TTL string
	// Explicit sets prompt_cache_options {"mode":"explicit"} on a Responses
	// body that has no prompt_cache_options: the provider then writes only
	// at the breakpoints.
	Explicit bool
}

// Inject returns body with provider cache breakpoints added by the
// static-plus-moving strategy, for Anthropic Messages (cache_control),
// OpenAI Responses (prompt_cache_breakpoint on input_text parts) and Bedrock
// Converse (a {"cachePoint":{"type":"default"}} block inserted after the
// chosen block). Chat and embeddings bodies are returned unchanged (they
// have no explicit markers). model overrides the body's model for the rules
// when not empty (a Converse body names none: pass the path's model id).
//
// Placement, while the budget (the provider's limit minus the client's own
// markers) allows:
//  1. static: on the last tool or instructions block, unless the client
//     marked one itself;
//  2. moving: on the last markable block of the newest user turn (user
//     message or tool result), unless the client marked that turn or a
//     later one;
//  3. earlier turns, newest first, which is where the previous requests
//     wrote: for Anthropic only those farther than the 20-block lookback
//     from the next breakpoint after them (the others are found by the
//     lookback anyway).
//
// No marker is placed where the prefix is shorter than the model's minimum,
// on an empty text or thinking block, or in an additional_tools item. Client
// markers are kept as they are. The edit is minimal: each marker is inserted
// right after the last member of its block — a plain-string Anthropic system
// prompt or message content, which the provider reads as one text block,
// becomes that block ([{"type":"text","text":…}]) to carry it — and every
// other byte of body stays as it was. The request's fingerprint is taken
// from the client's body, and the prefix hashes skip markers, so neither
// changes.
// Errors are *groundhog.Error with code EINVALID (body not parseable).
func Inject(shape groundhog.Shape, model string, body []byte, opts Options) ([]byte, error) {
	p, err := ParseModel(shape, model, body)
	if err != nil {
		return nil, err
	}
	if model == "" {
		model = p.Model
	}
	out, _, err := inject(p, ModelRules(shape, model), opts)
	return out, err
}

// plan returns the indexes of the segments inject would mark.
func plan(p *Prefix, r Rules) []int {
	if p.NotApplicable || (p.Shape != groundhog.ShapeMessages && p.Shape != groundhog.ShapeResponses && p.Shape != groundhog.ShapeConverse) {
		return nil
	}
	budget := r.MaxBreakpoints - p.Markers
	if budget <= 0 {
		return nil
	}
	segs := p.Segments
	eligible := func(i int) bool { return segs[i].markable && !segs[i].Marker && segs[i].End >= r.MinTokens }
	var chosen []int
	pick := func(i int) {
		chosen = append(chosen, i)
		budget--
	}
	// 1. static
	static, clientStatic := -1, false
	for i, s := range segs {
		if s.Kind == KindTool || s.Kind == KindInstructions {
			clientStatic = clientStatic || s.Marker
			if s.markable {
				static = i
			}
		}
	}
	if static >= 0 && !clientStatic && eligible(static) {
		pick(static)
	}
	// User turns, newest first: the last markable block of each.
	var turns []int
	for i := len(segs) - 1; i >= 0; i-- {
		if !segs[i].turnEnd {
			continue
		}
		for k := i; k >= 0 && segs[k].Message == segs[i].Message; k-- {
			if segs[k].markable {
				turns = append(turns, k)
				break
			}
		}
	}
	if len(turns) == 0 || budget <= 0 {
		return chosen
	}
	// 2. moving: unless the client marked the newest turn or later.
	newest := turns[0]
	clientLater := false
	for k := len(segs) - 1; k >= 0 && segs[k].Message >= segs[newest].Message; k-- {
		clientLater = clientLater || segs[k].Marker
	}
	if !clientLater && eligible(newest) {
		pick(newest)
	}
	// 3. earlier turns.
	for _, i := range turns[1:] {
		if budget <= 0 {
			break
		}
		if !eligible(i) {
			continue
		}
		if r.Lookback > 0 {
			next := -1
			for k := i + 1; k < len(segs); k++ {
				if segs[k].Marker || contains(chosen, k) {
					next = k
					break
				}
			}
			if next >= 0 && next-i <= r.Lookback {
				continue
			}
		}
		pick(i)
	}
	sort.Ints(chosen)
	return chosen
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// inject applies plan to p's body; it returns the new body and the indexes
// of the segments it marked (body itself when none).
func inject(p *Prefix, r Rules, opts Options) ([]byte, []int, error) {
	idx := plan(p, r)
	b := p.body
	var marker string
	switch p.Shape {
	case groundhog.ShapeMessages:
		marker = `"cache_control":{"type":"ephemeral"}`
		if opts.TTL != "" && p.Markers == 0 {
			ttl, _ := json.Marshal(opts.TTL)
			marker = `"cache_control":{"type":"ephemeral","ttl":` + string(ttl) + `}`
		}
	case groundhog.ShapeResponses:
		marker = `"prompt_cache_breakpoint":{"mode":"explicit"}`
	case groundhog.ShapeConverse:
		marker = converseMarker
		if opts.TTL != "" && p.Markers == 0 {
			ttl, _ := json.Marshal(opts.TTL)
			marker = `{"cachePoint":{"type":"default","ttl":` + string(ttl) + `}}`
		}
	}
	type edit struct {
		at, end int // bytes at..end are replaced by text (end == at: an insertion)
		text    string
	}
	var edits []edit
	for _, i := range idx {
		if p.Shape == groundhog.ShapeConverse {
			// A cachePoint is a block of its own, right after the block
			// whose prefix it caches.
			v := p.Segments[i].val
			edits = append(edits, edit{v.end, v.end, "," + marker})
			continue
		}
		if w := p.Segments[i].wrap; w.ok() {
			// A plain string is the same prompt as one text block holding
			// it (Anthropic tokenizes and caches them alike), and only a
			// block can carry the marker.
			edits = append(edits, edit{w.start, w.end, `[{"type":"text","text":` + string(b[w.start:w.end]) + "," + marker + "}]"})
			continue
		}
		at, comma := insertPoint(b, p.Segments[i].val)
		edits = append(edits, edit{at, at, comma + marker})
	}
	if p.Shape == groundhog.ShapeResponses && len(idx) > 0 {
		if opts.Explicit && !p.fields.get("prompt_cache_options").ok() {
			mode := `"prompt_cache_options":{"mode":"explicit"`
			if opts.TTL != "" {
				ttl, _ := json.Marshal(opts.TTL)
				mode += `,"ttl":` + string(ttl)
			}
			at, comma := insertPoint(b, p.root)
			edits = append(edits, edit{at, at, comma + mode + "}"})
		}
	}
	if len(edits) == 0 {
		return b, nil, nil
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	n := len(b)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.at)
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		out = append(out, b[last:e.at]...)
		out = append(out, e.text...)
		last = e.end
	}
	out = append(out, b[last:]...)
	return out, idx, nil
}

// insertPoint returns where a new member goes in the object at v — right
// after its last member's value — and the separator it needs.
func insertPoint(b []byte, v span) (int, string) {
	end := -1
	members(b, v, func(m member) error { end = m.whole.end; return nil })
	if end < 0 {
		return v.start + 1, ""
	}
	return end, ","
}
