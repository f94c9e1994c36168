package promptcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// StableKey returns the stable prompt_cache_key
// "app:prompt_version:model:digest12", where digest12 is the first 12 hex
// digits of SHA-256 over the instructions and the tools (tools in canonical
// JSON, so the same tools serialized differently give the same key; their
// order counts, as it does for the provider). Every session of an app
// version then shares one provider cache scope.
func StableKey(app, promptVersion, model, instructions string, tools []byte) string {
	h := sha256.New()
	h.Write([]byte("instructions\x00"))
	h.Write([]byte(instructions))
	h.Write([]byte("\x00tools\x00"))
	if len(tools) > 0 {
		if c, err := fingerprint.Canonicalize(tools); err == nil {
			tools = c
		}
		h.Write(tools)
	}
	return app + ":" + promptVersion + ":" + model + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// SetCacheKey sets prompt_cache_key in an OpenAI-shape body (chat or
// responses) to StableKey(app, promptVersion, model, instructions, tools),
// unless the client set one: then body is returned unchanged with the
// client's key. The instructions are the Responses instructions and the
// content of the leading system/developer messages. The key is added as the
// body's last member; no other byte changes. Errors are *groundhog.Error with
// code EINVALID.
func SetCacheKey(shape groundhog.Shape, body []byte, app, promptVersion string) ([]byte, string, error) {
	if shape != groundhog.ShapeChat && shape != groundhog.ShapeResponses {
		return nil, "", groundhog.Errorf(groundhog.EINVALID, "prompt_cache_key applies to the OpenAI chat and responses shapes, not %q", shape)
	}
	p, err := Parse(shape, body)
	if err != nil {
		return nil, "", err
	}
	if k := p.fields.get("prompt_cache_key"); !isNull(body, k) {
		return body, p.CacheKey, nil
	}
	var ins []byte
	if v := p.fields.get("instructions"); v.ok() {
		ins = append(ins, body[v.start:v.end]...)
	}
	for _, s := range p.Segments {
		if s.Kind == KindInstructions && s.top != "instructions" {
			ins = append(ins, 0)
			ins = append(ins, body[s.val.start:s.val.end]...)
		}
	}
	var tools []byte
	if v := p.fields.get("tools"); v.ok() {
		tools = body[v.start:v.end]
	}
	key := StableKey(app, promptVersion, p.Model, string(ins), tools)
	kj, _ := json.Marshal(key)
	at, comma := insertPoint(body, p.root)
	out := make([]byte, 0, len(body)+len(kj)+24)
	out = append(out, body[:at]...)
	out = append(out, comma+`"prompt_cache_key":`...)
	out = append(out, kj...)
	out = append(out, body[at:]...)
	return out, key, nil
}
