package promptcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/groundhog-ai/groundhog"
)

// StableKey returns the stable prompt_cache_key "app:prompt_version:model",
// followed by ":" and the first 12 hex digits of SHA-256 over the tool
// names when the request has tools (in their order, which counts for the
// provider as it does for the model). Only what identifies the agent goes
// into the key — never the instructions or a tool's definition, which can
// carry a volatile value (a timestamp, a session id): a key that moved with
// them would split the provider's cache scope on every call and hide the
// very change the break diagnosis has to name (volatile_in_prefix,
// instructions_changed). Every session of an app version then shares one
// provider cache scope.
func StableKey(app, promptVersion, model string, toolNames []string) string {
	key := app + ":" + promptVersion + ":" + model
	if len(toolNames) == 0 {
		return key
	}
	h := sha256.New()
	for _, n := range toolNames {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	return key + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// toolNames returns the names of the tools in an OpenAI-shape tools array:
// the function name (chat's function.name, Responses' name), else the
// tool's type for built-in tools (web_search, file_search, …).
func toolNames(tools []byte) []string {
	var ts []struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(tools) == 0 || json.Unmarshal(tools, &ts) != nil {
		return nil
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		switch {
		case t.Function.Name != "":
			names = append(names, t.Function.Name)
		case t.Name != "":
			names = append(names, t.Name)
		default:
			names = append(names, t.Type)
		}
	}
	return names
}

// SetCacheKey sets prompt_cache_key in an OpenAI-shape body (chat or
// responses) to StableKey(app, promptVersion, model, tool names), unless
// the client set one: then body is returned unchanged with the client's
// key. The key is added as the body's last member; no other byte changes.
// Errors are *groundhog.Error with code EINVALID.
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
	var tools []byte
	if v := p.fields.get("tools"); v.ok() {
		tools = body[v.start:v.end]
	}
	key := StableKey(app, promptVersion, p.Model, toolNames(tools))
	kj, _ := json.Marshal(key)
	at, comma := insertPoint(body, p.root)
	out := make([]byte, 0, len(body)+len(kj)+24)
	out = append(out, body[:at]...)
	out = append(out, comma+`"prompt_cache_key":`...)
	out = append(out, kj...)
	out = append(out, body[at:]...)
	return out, key, nil
}
