package sim

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strings"
)

// CacheDiagnosisBeta is the anthropic-beta value that turns on Anthropic's
// cache diagnostics: with it, a request carrying
// "diagnostics": {"previous_message_id": <id or null>} gets a
// "diagnostics" object on its message (on message_start when streaming):
// {"cache_miss_reason": null} when nothing diverged from the named earlier
// request (or none was named), else {"cache_miss_reason": {"type": …}} with
// type model_changed, tools_changed, system_changed or messages_changed —
// the first level that diverged, in the order the provider caches — plus
// "cache_missed_input_tokens" (the tokens from the divergence on) for those,
// or previous_message_not_found for an id the provider does not know.
const CacheDiagnosisBeta = "cache-diagnosis-2026-04-07"

// requestPrint is what the provider keeps of a request for the comparison:
// hashes and token counts, no text.
type requestPrint struct {
	model          string
	tools, system  uint64
	msgs           []uint64 // hash of the messages up to and including each one
	toolsEnd, sysE int      // token offsets where the tools and the system end
	msgEnds        []int
	total          int
}

// diagnosisRequested reports whether the request asked for cache
// diagnostics: the beta header and a diagnostics object.
func diagnosisRequested(r *http.Request, raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	for _, v := range r.Header.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == CacheDiagnosisBeta {
				return true
			}
		}
	}
	return false
}

// hashJSON chains h with the prompt content of raw: cache_control markers
// are not part of the prompt, and a plain string is the same prompt as one
// text block holding it, so both are normalized away first.
func hashJSON(h uint64, raw []byte) uint64 {
	f := fnv.New64a()
	var b [8]byte
	for i := range 8 {
		b[i] = byte(h >> (8 * i))
	}
	f.Write(b[:])
	var v any
	if json.Unmarshal(raw, &v) == nil {
		n, _ := json.Marshal(normalizePrompt(v))
		f.Write(n)
	} else {
		f.Write(raw)
	}
	return f.Sum64()
}

// normalizePrompt drops cache_control members and turns a string system
// or message content into one text block.
func normalizePrompt(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		if s, ok := x["content"].(string); ok {
			x["content"] = []any{map[string]any{"type": "text", "text": s}}
		}
		for k, e := range x {
			x[k] = normalizePrompt(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizePrompt(e)
		}
		return x
	case string:
		return x
	}
	return v
}

// printRequest fingerprints a Messages request.
func printRequest(req *messagesRequest, total int) *requestPrint {
	p := &requestPrint{model: req.Model, total: total}
	for _, t := range req.Tools {
		p.tools = hashJSON(p.tools, t)
		p.toolsEnd += CountTokens(compactJSON(t)) + MessageOverhead
	}
	sys := req.System
	if len(sys) > 0 && sys[0] == '"' {
		var s string
		_ = json.Unmarshal(sys, &s)
		sys, _ = json.Marshal([]any{map[string]any{"type": "text", "text": s}})
	}
	p.system = hashJSON(0, sys)
	p.sysE = p.toolsEnd
	if len(req.System) > 0 && string(req.System) != "null" {
		p.sysE += CountTokens(compactJSON(req.System)) + MessageOverhead
	}
	h, end := uint64(0), p.sysE
	for _, m := range req.Messages {
		raw, _ := json.Marshal(m)
		h = hashJSON(h, raw)
		end += CountTokens(compactJSON(raw)) + MessageOverhead
		p.msgs = append(p.msgs, h)
		p.msgEnds = append(p.msgEnds, min(end, total))
	}
	return p
}

// diagStore keeps the prints of recent Messages requests by message id
// (printStore, at most diagStoreMax).
type diagStore struct {
	printStore[*requestPrint]
}

const diagStoreMax = 4096

type cacheMissReason struct {
	Type                   string `json:"type"`
	CacheMissedInputTokens *int   `json:"cache_missed_input_tokens,omitempty"`
}

type anthropicDiagnostics struct {
	CacheMissReason *cacheMissReason `json:"cache_miss_reason"`
}

// diagnose compares cur with the request named by the diagnostics object
// and records cur under id.
func (d *diagStore) diagnose(raw json.RawMessage, id string, cur *requestPrint) *anthropicDiagnostics {
	defer d.put(id, cur, diagStoreMax)
	var o struct {
		Prev *string `json:"previous_message_id"`
	}
	if json.Unmarshal(raw, &o) != nil || o.Prev == nil {
		return &anthropicDiagnostics{}
	}
	prev := d.get(*o.Prev)
	if prev == nil {
		return &anthropicDiagnostics{CacheMissReason: &cacheMissReason{Type: "previous_message_not_found"}}
	}
	miss := func(typ string, from int) *anthropicDiagnostics {
		n := max(cur.total-from, 0)
		return &anthropicDiagnostics{CacheMissReason: &cacheMissReason{Type: typ, CacheMissedInputTokens: &n}}
	}
	switch {
	case prev.model != cur.model:
		return miss("model_changed", 0)
	case prev.tools != cur.tools:
		return miss("tools_changed", 0)
	case prev.system != cur.system:
		return miss("system_changed", cur.toolsEnd)
	}
	// The new request may extend the earlier one; any earlier message that
	// differs is a divergence.
	for i := range min(len(prev.msgs), len(cur.msgs)) {
		if prev.msgs[i] != cur.msgs[i] {
			from := cur.sysE
			if i > 0 {
				from = cur.msgEnds[i-1]
			}
			return miss("messages_changed", from)
		}
	}
	if len(cur.msgs) < len(prev.msgs) {
		return miss("messages_changed", cur.total)
	}
	return &anthropicDiagnostics{}
}
