// Package explicitcache decides when groundhog holds a Gemini explicit
// cache (cachedContents) for a tenant's repeated prompt prefix, and keeps
// the caches it made: it reads the shared prefix of generateContent
// requests, tracks how often each prefix comes back, creates a cache only
// when its cost model says the cache pays for itself against implicit
// caching, points later requests at it, extends it while reuse pays and
// deletes it once reuse stops paying.
package explicitcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// MaxContents bounds the leading contents of a request that are prefix
// candidates: a longer conversation's later turns are not tracked.
const MaxContents = 256

// The members of a GenerateContentRequest that a request naming a cache
// must not set (the cache holds them), under their JSON and proto names.
var cacheOwned = []string{"systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config"}

// Request is a generateContent body as the manager reads it: the members
// a cache can hold, each in canonical form (decoded and encoded again, so
// member order and spacing do not change a prefix's identity).
type Request struct {
	top      map[string]json.RawMessage
	head     []byte            // canonical systemInstruction, tools and toolConfig; empty when none is set
	contents []json.RawMessage // canonical contents, in order
	points   []point           // prefix candidates, shortest first
}

// point is one prefix candidate: the head and the first Contents contents.
type point struct {
	Contents int
	ID       string // hex SHA-256, scoped to the tenant and the model
}

// ParseRequest reads body for tenant and model. ok is false when the body
// cannot use a managed cache: not a JSON object, it already names a
// cachedContent, or it has no prefix candidate (fewer than two contents and
// nothing in systemInstruction, tools or toolConfig).
func ParseRequest(tenant, model string, body []byte) (*Request, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return nil, false
	}
	if _, named := top["cachedContent"]; named {
		return nil, false
	}
	if _, named := top["cached_content"]; named {
		return nil, false
	}
	r := &Request{top: top}
	var head bytes.Buffer
	for _, k := range []string{"systemInstruction", "tools", "toolConfig"} {
		v, ok := top[k]
		if !ok {
			v, ok = top[snake(k)]
		}
		if !ok || string(v) == "null" {
			continue
		}
		c, err := canonical(v)
		if err != nil {
			return nil, false
		}
		head.WriteString(k)
		head.WriteByte(0)
		head.Write(c)
		head.WriteByte(0)
	}
	r.head = head.Bytes()
	var contents []json.RawMessage
	if raw, ok := top["contents"]; ok && json.Unmarshal(raw, &contents) != nil {
		return nil, false
	}
	for _, c := range contents {
		cc, err := canonical(c)
		if err != nil {
			return nil, false
		}
		r.contents = append(r.contents, cc)
	}
	// The chain of candidates: the head alone (when set), then the head
	// with each further leading content. The last content always stays in
	// the request: it is what varies.
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write(r.head)
	sum := h.Sum(nil)
	if len(r.head) > 0 {
		r.points = append(r.points, point{0, hex.EncodeToString(sum)})
	}
	for k := 1; k < len(r.contents) && k <= MaxContents; k++ {
		e := sha256.Sum256(r.contents[k-1])
		h.Reset()
		h.Write(sum)
		h.Write(e[:])
		sum = h.Sum(nil)
		r.points = append(r.points, point{k, hex.EncodeToString(sum)})
	}
	if len(r.points) == 0 {
		return nil, false
	}
	return r, true
}

// CacheBody returns the body of a cachedContents create for the prefix
// of the first n contents: the model, the request's systemInstruction,
// tools and toolConfig, those contents, and ttl ("600s").
func (r *Request) CacheBody(model string, n int, ttl string) []byte {
	out := map[string]json.RawMessage{}
	for _, k := range []string{"systemInstruction", "tools", "toolConfig"} {
		if v, ok := r.top[k]; ok && string(v) != "null" {
			out[k] = v
		} else if v, ok := r.top[snake(k)]; ok && string(v) != "null" {
			out[k] = v
		}
	}
	if n > 0 {
		out["contents"], _ = json.Marshal(r.contents[:n])
	}
	out["model"], _ = json.Marshal("models/" + model)
	if ttl != "" {
		out["ttl"], _ = json.Marshal(ttl)
	}
	b, _ := json.Marshal(out)
	return b
}

// Rewrite returns the request to send upstream when the cache name holds
// the prefix of the first n contents: the body without systemInstruction,
// tools and toolConfig, without those contents, naming the cache. Every
// other member (generationConfig, safetySettings, …) is kept as sent.
func (r *Request) Rewrite(name string, n int) []byte {
	out := make(map[string]json.RawMessage, len(r.top)+1)
	for k, v := range r.top {
		out[k] = v
	}
	for _, k := range cacheOwned {
		delete(out, k)
	}
	out["contents"], _ = json.Marshal(r.contents[n:])
	out["cachedContent"], _ = json.Marshal(name)
	b, _ := json.Marshal(out)
	return b
}

// canonical returns raw decoded and encoded again: object members sorted,
// no insignificant space.
func canonical(raw json.RawMessage) ([]byte, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func snake(k string) string {
	switch k {
	case "systemInstruction":
		return "system_instruction"
	case "toolConfig":
		return "tool_config"
	}
	return k
}
