package gemini_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// FuzzFingerprintBody: the Gemini canonicalizer never panics, and a body
// it accepts hashes the same however it is serialized (indented, members
// in another order), with the path's model in the hash.
func FuzzFingerprintBody(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5}}`))
	f.Add([]byte(`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[]}]}`))
	f.Add([]byte(`{"contents":"not an array"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := gemini.FingerprintBody("gemini-2.5-flash", body)
		if err != nil {
			return
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("accepted a body that is not JSON: %v", err)
		}
		again, _ := json.MarshalIndent(v, "", "  ")
		b, err := gemini.FingerprintBody("gemini-2.5-flash", again)
		if err != nil {
			t.Fatalf("re-serialized body refused: %v", err)
		}
		p := fingerprint.Params{Shape: groundhog.ShapeGemini, Tenant: "t"}
		ra, err := fingerprint.Compute(p, a)
		if err != nil {
			return // refused by the fingerprint (invalid UTF-8): a 400, never hashed
		}
		rb, err := fingerprint.Compute(p, b)
		if err != nil || ra.Hash != rb.Hash || ra.Model != "gemini-2.5-flash" {
			t.Fatalf("hashes differ: %+v / %+v %v", ra, rb, err)
		}
	})
}

// FuzzStreamUsage feeds arbitrary bytes to the SSE reader and the Gemini
// stream usage parser: they never panic, and a usage they accept never
// counts more cached than input tokens nor anything negative.
func FuzzStreamUsage(f *testing.F) {
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5000,\"cachedContentTokenCount\":4096,\"candidatesTokenCount\":3}}\r\n\r\n"))
	f.Add([]byte("data: {\"usageMetadata\":{\"promptTokenCount\":-1}}\n\n"))
	f.Add([]byte("data: {\"error\":{\"code\":503,\"message\":\"x\",\"status\":\"UNAVAILABLE\"}}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := wire.NewSSEReader(bytes.NewReader(b))
		var events []groundhog.Event
		for range 1000 {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			events = append(events, ev)
		}
		_, u, err := gemini.UsageFromEvents(events)
		gemini.StreamComplete(events)
		if _, berr := gemini.BodyFromEvents(events); berr == nil && gemini.StreamComplete(events) {
			if _, err := gemini.BodyFromEvents(events); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			return
		}
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedInputTokens < 0 || u.CachedInputTokens > u.InputTokens {
			t.Fatalf("usage %+v", u)
		}
	})
}

// FuzzCachedContentRefs: reading the caches a body names never panics, and
// whatever cachedContent string encoding/json reads from a JSON object is
// among the references, however the member name is escaped.
func FuzzCachedContentRefs(f *testing.F) {
	f.Add([]byte(`{"contents":[],"cachedContent":"cachedContents/a"}`))
	f.Add([]byte(`{"cached\u0043ontent":"b","cachedContent":"cachedContents/a"}`))
	f.Add([]byte(`{"generateContentRequest":{"cached_content":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		refs := gemini.CachedContentRefs(body)
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return
		}
		for k, v := range top {
			var s string
			if (k == "cachedContent" || k == "cached_content") && string(v) != "null" && json.Unmarshal(v, &s) == nil {
				found := false
				for _, r := range refs {
					found = found || r == gemini.CacheName(s)
				}
				if !found {
					t.Fatalf("%s names %q, refs %q", body, s, refs)
				}
			}
		}
	})
}

// FuzzResourcePath: a path the resource reader takes names, under its
// collection, a resource whose name the path holds, and every such path
// is on a collection the gateway serves.
func FuzzResourcePath(f *testing.F) {
	for _, p := range []string{"/v1beta/files/a:download", "/v1/fileSearchStores/s/documents/d", "/v1beta/models/veo/operations/o:cancel", "/v1/files/a", "/upload/v1beta/fileSearchStores/s:uploadToFileSearchStore"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if store, ok := gemini.UploadTarget(path); ok && store != "" && !strings.Contains(path, store+":") {
			t.Fatalf("%q: upload target %q not in the path", path, store)
		}
		res, ok := gemini.ResourcePath(path)
		if !ok {
			return
		}
		if !gemini.KnownCollection(path) || !gemini.IsPath(path) {
			t.Fatalf("%q: a resource path on an unknown collection", path)
		}
		if res.Name != "" && (!strings.Contains(path, "/"+res.Name) || !strings.HasPrefix(res.Name, res.Collection+"/") && !strings.HasPrefix(res.Name, res.Model+"/"+res.Collection+"/")) {
			t.Fatalf("%q: %+v", path, res)
		}
	})
}
