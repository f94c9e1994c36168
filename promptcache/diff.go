package promptcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// DiffResult is the first divergence between two request bodies' prefixes,
// as `groundhog prefix-diff` prints it.
type DiffResult struct {
	// Match is true when one prefix continues the other (or both are
	// equal): the later request can reuse all of the earlier one.
	Match bool `json:"-"`
	// Cause is the break cause ("" when the prefixes match and are long
	// enough to be cached; below_minimum when they match but are shorter
	// than the model's minimum).
	Cause   Cause  `json:"cause"`
	Pattern string `json:"-"`
	// ReusableTokens is how many prompt tokens B shares with A (estimated).
	ReusableTokens int `json:"reusable_tokens"`
	// Path is the JSON path of the first differing value in B ("" on a match);
	// TokenOffset its token offset.
	Path        string `json:"path"`
	TokenOffset int    `json:"-"`
	// A and B are the differing values with some context; the differing
	// part is A[DiffA[0]:DiffA[1]] and B[DiffB[0]:DiffB[1]] (byte offsets).
	A     string `json:"a"`
	B     string `json:"b"`
	DiffA [2]int `json:"-"`
	DiffB [2]int `json:"-"`
	// Advice is a one-line fix.
	Advice string `json:"advice"`
	// NotApplicable is set for embeddings bodies (no prefix to speak of).
	NotApplicable bool `json:"-"`
}

// GuessShape infers the API shape of a request body: "input" with
// instructions, tools or item objects is responses; an embedding model or
// embeddings-only fields is embeddings; "messages" with a top-level system,
// cache_control, max_tokens or input_schema tools is Anthropic messages;
// other "messages" bodies are chat.
func GuessShape(body []byte) (groundhog.Shape, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", groundhog.WrapError(groundhog.EINVALID, "request body is not a JSON object", err)
	}
	has := func(k string) bool { _, ok := m[k]; return ok }
	var model string
	json.Unmarshal(m["model"], &model)
	switch {
	case has("input") && (has("encoding_format") || has("dimensions") || bytes.Contains([]byte(model), []byte("embed"))):
		return groundhog.ShapeEmbeddings, nil
	case has("input") || has("instructions"):
		return groundhog.ShapeResponses, nil
	case has("messages") && (has("system") || has("cache_control") || has("thinking") ||
		bytes.Contains(m["messages"], []byte(`"cache_control"`)) || bytes.Contains(m["tools"], []byte(`"input_schema"`)) ||
		bytes.Contains(m["messages"], []byte(`"tool_result"`)) || bytes.Contains(m["messages"], []byte(`"tool_use"`))):
		return groundhog.ShapeMessages, nil
	case has("messages"):
		return groundhog.ShapeChat, nil
	case has("contents"):
		return groundhog.ShapeGemini, nil
	}
	return "", groundhog.Errorf(groundhog.EINVALID, "cannot tell the API shape: no messages, input or contents")
}

// Diff compares the prefix of b with that of a (the earlier request) as
// the provider would reuse it: A is taken as fully cached, and the first
// segment of B that differs is located down to the JSON value and
// classified.
func Diff(shape groundhog.Shape, a, b []byte) (*DiffResult, error) {
	pa, err := Parse(shape, a)
	if err != nil {
		return nil, fmt.Errorf("A: %w", err)
	}
	pb, err := Parse(shape, b)
	if err != nil {
		return nil, fmt.Errorf("B: %w", err)
	}
	res := &DiffResult{}
	if pa.NotApplicable {
		res.NotApplicable, res.Match = true, true
		res.Advice = "embeddings have no prompt prefix to cache: not applicable"
		return res, nil
	}
	r := rulesFor(pb)
	now := time.Unix(0, 0)
	rec := record(pa, r, now)
	for i := range rec.segs {
		rec.segs[i].Stored = 1
	}
	n := lcp(pb.Segments, rec.segs)
	if n > 0 {
		res.ReusableTokens = pb.Segments[n-1].End
	}
	cross := Cause("")
	switch {
	case pa.Model != pb.Model:
		cross = CauseModelChanged
	case pa.CacheKey != pb.CacheKey:
		cross = CauseCacheKeyChanged
	}
	if n >= len(pa.Segments) || n >= len(pb.Segments) {
		res.Match = cross == ""
		res.Cause = cross
		res.TokenOffset = res.ReusableTokens
		if res.Match && res.ReusableTokens < r.MinTokens {
			res.Cause = CauseBelowMinimum
		}
		if cross != "" {
			res.Path = map[Cause]string{CauseModelChanged: "model", CauseCacheKeyChanged: "prompt_cache_key"}[cross]
			res.A, res.B = string(pa.fieldBytes(res.Path)), string(pb.fieldBytes(res.Path))
			res.DiffA, res.DiffB = [2]int{0, len(res.A)}, [2]int{0, len(res.B)}
			res.ReusableTokens = 0
		}
		res.Advice = Advice(res.Cause, "", r)
		return res, nil
	}
	sa, sb := &pa.Segments[n], &pb.Segments[n]
	res.Cause, res.Pattern = classifyDivergence(pb, rec, n)
	if cross != "" {
		res.Cause, res.Pattern = cross, ""
	}
	res.TokenOffset = sb.Start
	va, vb := pa.segValue(sa), pb.segValue(sb)
	sub, xa, xb := firstDiff(va, vb)
	res.Path = sb.Path() + sub
	if sa.Path() != sb.Path() {
		res.Path = sb.Path()
		xa, xb = compact(va), compact(vb)
	}
	res.A, res.DiffA = window(xa, xb)
	res.B, res.DiffB = window(xb, xa)
	res.Advice = Advice(res.Cause, res.Pattern, r)
	return res, nil
}

// fieldBytes returns the raw bytes of a top-level field.
func (p *Prefix) fieldBytes(k string) []byte {
	v := p.fields.get(k)
	if !v.ok() {
		return nil
	}
	return p.body[v.start:v.end]
}

// segValue returns a segment's JSON with markers removed.
func (p *Prefix) segValue(s *Segment) []byte {
	bd := builder{p: p, mk: []byte(`"` + markerKey(p.Shape) + `"`)}
	return bd.strip(nil, s.val)
}

func compact(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// firstDiff walks two JSON values to the first differing leaf and returns
// its path suffix (".text", "[2].name") and both values as text (a string's
// own text; other values as compact JSON).
func firstDiff(a, b []byte) (path, x, y string) {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return "", string(a), string(b)
	}
	for {
		switch ta := va.(type) {
		case map[string]any:
			tb, ok := vb.(map[string]any)
			if !ok {
				return path, render(va), render(vb)
			}
			keys := map[string]bool{}
			for k := range ta {
				keys[k] = true
			}
			for k := range tb {
				keys[k] = true
			}
			var ks []string
			for k := range keys {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			next := ""
			for _, k := range ks {
				if render(ta[k]) != render(tb[k]) {
					next = k
					break
				}
			}
			if next == "" {
				return path, render(va), render(vb)
			}
			path += "." + next
			va, vb = ta[next], tb[next]
		case []any:
			tb, ok := vb.([]any)
			if !ok {
				return path, render(va), render(vb)
			}
			i := 0
			for i < len(ta) && i < len(tb) && render(ta[i]) == render(tb[i]) {
				i++
			}
			if i == len(ta) || i == len(tb) {
				return path, render(va), render(vb)
			}
			path += "[" + strconv.Itoa(i) + "]"
			va, vb = ta[i], tb[i]
		default:
			return path, render(va), render(vb)
		}
	}
}

func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// contextBytes is how much unchanged text window keeps around a difference.
const contextBytes = 40

// window returns x cut to the part that differs from y plus context (with
// "…" where cut) and the byte range of the differing part in the result.
func window(x, y string) (string, [2]int) {
	p := 0
	for p < len(x) && p < len(y) && x[p] == y[p] {
		p++
	}
	s := 0
	for s < len(x)-p && s < len(y)-p && x[len(x)-1-s] == y[len(y)-1-s] {
		s++
	}
	// Keep whole UTF-8 sequences.
	for p > 0 && p < len(x) && x[p]&0xC0 == 0x80 {
		p--
	}
	from := max(0, p-contextBytes)
	for from > 0 && x[from]&0xC0 == 0x80 {
		from--
	}
	to := min(len(x), len(x)-s+contextBytes)
	for to < len(x) && x[to]&0xC0 == 0x80 {
		to++
	}
	out, off := "", 0
	if from > 0 {
		out, off = "…", len("…")
	}
	out += x[from:to]
	if to < len(x) {
		out += "…"
	}
	return out, [2]int{off + p - from, off + len(x) - s - from}
}

// Advice returns the one-line fix for a cause.
func Advice(c Cause, pattern string, r Rules) string {
	switch c {
	case "":
		return "nothing to fix: the later request reuses the whole earlier prefix"
	case CauseToolsReordered:
		return "sort tools by name once at start and send them in the same order on every call"
	case CauseToolsChanged:
		return "keep tool definitions fixed for a session; add new tools at the end (or as additional_tools) instead of editing earlier ones"
	case CauseInstructionsChanged:
		return "keep the system prompt byte-identical across calls; put per-call details in the newest user message"
	case CauseVolatileInPrefix:
		if pattern == "" {
			pattern = "volatile value"
		}
		return "move the " + pattern + " after the last breakpoint (into the newest user message), or drop it"
	case CauseModelChanged:
		return "keep one model per conversation: each model has its own prompt cache"
	case CauseHistoryEdited:
		return "append to the history instead of editing or trimming earlier messages and tool results"
	case CauseParametersChanged:
		return "keep tool_choice, thinking and images fixed within a conversation: changing them drops the cached messages"
	case CauseCacheKeyChanged:
		return "use one prompt_cache_key per app and prompt version, not per session (Groundhog-Prompt-Cache-Key: auto)"
	case CauseTTLGap:
		return "the prefix expired between calls: call again within the TTL, or ask for a longer one (Anthropic ttl 1h)"
	case CauseBelowMinimum:
		return fmt.Sprintf("the shared prefix is under the model's minimum of %d tokens: nothing is cached until the stable prefix is longer", r.MinTokens)
	case CauseNoBreakpoint:
		return "the earlier request had no cache breakpoint, so the provider stored nothing to reuse: mark the end of the stable prefix (cache_control, prompt_cache_breakpoint) or let groundhog place them (Groundhog-Prompt-Cache-Breakpoints: auto)"
	case CauseBreakpointMoved:
		return "keep the earlier turn's breakpoint when adding a new one (Groundhog-Prompt-Cache-Breakpoints: auto)"
	case CauseLookbackExceeded:
		return fmt.Sprintf("add a breakpoint within %d blocks after the change, or keep the earlier turn's breakpoint", r.Lookback)
	case CauseProviderMiss:
		return "nothing to fix in the request: the provider evicted the entry or served it elsewhere"
	}
	return ""
}
