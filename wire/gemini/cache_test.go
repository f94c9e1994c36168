package gemini

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestCachePath(t *testing.T) {
	for _, c := range []struct {
		path, name string
		coll, ok   bool
	}{
		{"/v1beta/cachedContents", "", true, true},
		{"/v1/cachedContents/", "", true, true},
		{"/v1beta/cachedContents/abc", "cachedContents/abc", false, true},
		{"/v1/cachedContents/abc/more", "cachedContents/abc/more", false, true},
		{"/v1beta/cachedContents:batch", "cachedContents:batch", false, true},
		{"/v1beta/models/gemini-2.5-flash:generateContent", "", false, false},
		{"/v2/cachedContents/abc", "", false, false},
	} {
		name, coll, ok := CachePath(c.path)
		if name != c.name || coll != c.coll || ok != c.ok {
			t.Errorf("CachePath(%q) = %q %v %v", c.path, name, coll, ok)
		}
	}
}

func TestCachedContentRefs(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
	}{
		{`{"contents":[]}`, nil},
		{`{"cachedContent":"cachedContents/a"}`, []string{"cachedContents/a"}},
		{`{"cachedContent":"a"}`, []string{"cachedContents/a"}},
		{`{"cached_content":"cachedContents/a"}`, []string{"cachedContents/a"}},
		{`{"cached\u0043ontent":"cachedContents/a"}`, []string{"cachedContents/a"}},
		{`{"cachedContent":"cachedContents/a","cachedContent":"cachedContents/b"}`, []string{"cachedContents/a", "cachedContents/b"}},
		{`{"cachedContent":5}`, []string{"5"}},
		{`{"cachedContent":null}`, nil},
		{`{"generateContentRequest":{"cachedContent":"cachedContents/a"}}`, []string{"cachedContents/a"}},
		{`{"contents":[{"parts":[{"functionResponse":{"response":{"cachedContent":"x"}}}]}]}`, nil},
		{`[1]`, nil},
	} {
		if got := CachedContentRefs([]byte(c.body)); !slices.Equal(got, c.want) {
			t.Errorf("CachedContentRefs(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}

func TestFilterCacheList(t *testing.T) {
	body := []byte(`{"cachedContents":[{"name":"cachedContents/a","model":"m"},{"name":"cachedContents/b"},{"model":"nameless"}],"nextPageToken":"tok"}`)
	names, err := CacheListNames(body)
	if err != nil || !slices.Equal(names, []string{"cachedContents/a", "cachedContents/b", ""}) {
		t.Fatalf("names %q %v", names, err)
	}
	out, err := FilterCacheList(body, func(n string) bool { return n == "cachedContents/a" })
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CachedContents []map[string]string `json:"cachedContents"`
		NextPageToken  string              `json:"nextPageToken"`
	}
	if json.Unmarshal(out, &got) != nil || len(got.CachedContents) != 1 || got.CachedContents[0]["model"] != "m" || got.NextPageToken != "tok" {
		t.Fatalf("filtered: %s", out)
	}
	out, _ = FilterCacheList(body, func(string) bool { return false })
	if string(out) != `{"nextPageToken":"tok"}` {
		t.Fatalf("none kept: %s", out)
	}
	if _, err := FilterCacheList([]byte(`{"cachedContents":`), func(string) bool { return true }); err == nil {
		t.Fatal("a truncated list was accepted")
	}
}
