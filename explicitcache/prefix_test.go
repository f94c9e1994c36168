package explicitcache

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestPrefixIdentity(t *testing.T) {
	a := `{"systemInstruction":{"parts":[{"text":"be brief"}]},"tools":[{"functionDeclarations":[{"name":"f"}]}],
		"contents":[{"role":"user","parts":[{"text":"doc"}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"q1"}]}]}`
	// The same prefix, members in another order and spaced otherwise,
	// another last content.
	b := `{"contents":[{"parts":[{"text":"doc"}],"role":"user"},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"q2"}]}],
		"tools":[{"functionDeclarations":[{"name":"f"}]}], "system_instruction":{"parts":[{"text":"be brief"}]}}`
	ids := func(tenant, model, body string) []string {
		r, ok := ParseRequest(tenant, model, []byte(body))
		if !ok {
			t.Fatalf("%s: not eligible", body)
		}
		var out []string
		for _, p := range r.points {
			out = append(out, p.ID)
		}
		return out
	}
	pa, pb := ids("t1", "gemini-2.5-flash", a), ids("t1", "gemini-2.5-flash", b)
	if len(pa) != 3 || !reflect.DeepEqual(pa, pb) {
		t.Fatalf("points %v and %v: want the same 3 (head, head+1, head+2)", pa, pb)
	}
	if other := ids("t2", "gemini-2.5-flash", a); other[0] == pa[0] {
		t.Fatal("two tenants share a prefix identity")
	}
	if other := ids("t1", "gemini-2.5-pro", a); other[0] == pa[0] {
		t.Fatal("two models share a prefix identity")
	}
	if _, ok := ParseRequest("t1", "m", []byte(`{"cachedContent":"cachedContents/x","contents":[{"parts":[{"text":"q"}]}]}`)); ok {
		t.Fatal("a body naming its own cache is eligible")
	}
	if _, ok := ParseRequest("t1", "m", []byte(`{"contents":[{"parts":[{"text":"q"}]}]}`)); ok {
		t.Fatal("a body with one content and no head has a prefix")
	}
}

func TestRewrite(t *testing.T) {
	body := `{"systemInstruction":{"parts":[{"text":"s"}]},"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},"generationConfig":{"temperature":0},
		"contents":[{"role":"user","parts":[{"text":"doc"}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"q"}]}]}`
	r, _ := ParseRequest("t", "gemini-2.5-flash", []byte(body))
	var got map[string]any
	if err := json.Unmarshal(r.Rewrite("cachedContents/abc", 2), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cachedContent":    "cachedContents/abc",
		"generationConfig": map[string]any{"temperature": float64(0)},
		"contents":         []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "q"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rewrite %v; want %v", got, want)
	}
	var cache map[string]any
	if err := json.Unmarshal(r.CacheBody("gemini-2.5-flash", 2, "600s"), &cache); err != nil {
		t.Fatal(err)
	}
	if cache["model"] != "models/gemini-2.5-flash" || cache["ttl"] != "600s" || len(cache["contents"].([]any)) != 2 || cache["systemInstruction"] == nil || cache["toolConfig"] == nil || cache["generationConfig"] != nil {
		t.Fatalf("cache body %v", cache)
	}
}
