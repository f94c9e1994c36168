package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	groundhog "github.com/groundhog-ai/groundhog"
)

// CachePrefix starts the name of every explicit cache (CachedContent):
// "cachedContents/{id}".
const CachePrefix = "cachedContents/"

// CachePath reads a request path (unescaped) of the cachedContents
// routes: /v1beta/cachedContents (or /v1/…) is the collection (create,
// list); anything else that starts with it names one cache, whose name is
// the path after the version ("cachedContents/{id}", with whatever follows
// it). ok is false for any other path.
func CachePath(path string) (name string, collection, ok bool) {
	rest, found := strings.CutPrefix(path, "/"+APIVersion+"/")
	if !found {
		rest, found = strings.CutPrefix(path, "/"+StableVersion+"/")
	}
	if !found {
		return "", false, false
	}
	if rest == "cachedContents" || rest == "cachedContents/" {
		return "", true, true
	}
	if strings.HasPrefix(rest, "cachedContents") {
		return rest, false, true // cachedContents/{id}, or any other method on the collection: checked as a name
	}
	return "", false, false
}

// CacheName returns a cachedContent reference as the API names the cache:
// with its "cachedContents/" prefix (the SDKs add it when a caller gives
// the bare id).
func CacheName(ref string) string {
	if strings.HasPrefix(ref, CachePrefix) {
		return ref
	}
	return CachePrefix + ref
}

// CachedContentRefs returns the caches a request body names: every
// cachedContent member of a GenerateContentRequest (under its JSON name or
// its proto name cached_content, which Google also accepts; each
// occurrence when the member is repeated), and those of the
// generateContentRequest a CountTokensRequest may wrap. A value that is
// not a string is returned as its JSON text, which names no cache. A body
// that is not a JSON object names none (the route's own checks refuse
// it).
func CachedContentRefs(body []byte) []string {
	return cacheRefs(body, true)
}

func cacheRefs(body []byte, nested bool) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		switch key {
		case "cachedContent", "cached_content":
			var ref string
			switch {
			case string(v) == "null":
			case json.Unmarshal(v, &ref) == nil:
				out = append(out, CacheName(ref))
			default:
				out = append(out, string(v))
			}
		case "generateContentRequest", "generate_content_request":
			if nested {
				out = append(out, cacheRefs(v, false)...)
			}
		}
	}
	return out
}

// CreatedCacheName returns the name member of a CachedContent answer (the
// answer to a create), or "" when the body has none.
func CreatedCacheName(body []byte) string {
	var c struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &c) != nil {
		return ""
	}
	return c.Name
}

// CachedContent is what groundhog reads of a CachedContent answer (a
// create, get or update): its name, model ("models/…"), life and size.
type CachedContent struct {
	Name       string
	Model      string
	CreateTime time.Time
	ExpireTime time.Time
	Tokens     int64 // usageMetadata.totalTokenCount
}

// ParseCachedContent reads a CachedContent answer; ok is false when body
// is not one (no name, or times that are not RFC 3339).
func ParseCachedContent(body []byte) (c CachedContent, ok bool) {
	var v struct {
		Name          string `json:"name"`
		Model         string `json:"model"`
		CreateTime    string `json:"createTime"`
		ExpireTime    string `json:"expireTime"`
		UsageMetadata struct {
			TotalTokenCount int64 `json:"totalTokenCount"`
		} `json:"usageMetadata"`
	}
	if json.Unmarshal(body, &v) != nil || v.Name == "" || v.UsageMetadata.TotalTokenCount < 0 {
		return c, false
	}
	c = CachedContent{Name: v.Name, Model: v.Model, Tokens: v.UsageMetadata.TotalTokenCount}
	var err error
	if v.CreateTime != "" {
		if c.CreateTime, err = time.Parse(time.RFC3339Nano, v.CreateTime); err != nil {
			return c, false
		}
	}
	if v.ExpireTime != "" {
		if c.ExpireTime, err = time.Parse(time.RFC3339Nano, v.ExpireTime); err != nil {
			return c, false
		}
	}
	return c, true
}

// cacheList is a ListCachedContentsResponse; its other members are kept
// as they are.
type cacheList struct {
	CachedContents []json.RawMessage `json:"cachedContents"`
}

// CacheListNames returns the names of the caches of a list answer, in
// order.
func CacheListNames(body []byte) ([]string, error) {
	var l cacheList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's cache list is not JSON", err)
	}
	out := make([]string, 0, len(l.CachedContents))
	for _, c := range l.CachedContents {
		out = append(out, CreatedCacheName(c))
	}
	return out, nil
}

// FilterCacheList returns a list answer with only the caches keep accepts
// by name; nextPageToken and every other member stay as they were. An
// empty result has no cachedContents member, as Google's own empty pages.
func FilterCacheList(body []byte, keep func(name string) bool) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's cache list is not a JSON object", err)
	}
	var l cacheList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's cache list is malformed", err)
	}
	var kept []json.RawMessage
	for _, c := range l.CachedContents {
		if n := CreatedCacheName(c); n != "" && keep(n) {
			kept = append(kept, c)
		}
	}
	delete(top, "cachedContents")
	if len(kept) > 0 {
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's cache list is malformed", err)
		}
		top["cachedContents"] = b
	}
	return json.Marshal(top)
}
