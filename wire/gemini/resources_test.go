package gemini

import (
	"slices"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

func TestResourcePath(t *testing.T) {
	for _, c := range []struct {
		path string
		want Resource
		ok   bool
	}{
		{"/v1beta/files", Resource{Collection: Files}, true},
		{"/v1beta/files:register", Resource{Collection: Files, Method: "register"}, true},
		{"/v1beta/files/abc", Resource{Collection: Files, Name: "files/abc"}, true},
		{"/v1beta/files/abc:download", Resource{Collection: Files, Name: "files/abc", Method: "download"}, true},
		{"/v1beta/batches/b1:cancel", Resource{Collection: Batches, Name: "batches/b1", Method: "cancel"}, true},
		{"/v1beta/tunedModels/t1/operations/o1", Resource{Collection: TunedModels, Name: "tunedModels/t1", Sub: "operations/o1"}, true},
		{"/v1beta/tunedModels/t1:generateContent", Resource{Collection: TunedModels, Name: "tunedModels/t1", Method: "generateContent"}, true},
		{"/v1beta/tunedModels/t%31", Resource{Collection: TunedModels, Name: "tunedModels/t%31"}, true},
		{"/v1beta/filesx", Resource{}, false},
		{"/v1beta/models/gemini-2.5-flash:generateContent", Resource{}, false},
		{"/v1/files/abc", Resource{}, false},
		{"/v1/batches", Resource{}, false},
		{"/v1beta/fileSearchStores", Resource{Collection: FileSearchStores}, true},
		{"/v1beta/fileSearchStores/s1:importFile", Resource{Collection: FileSearchStores, Name: "fileSearchStores/s1", Method: "importFile"}, true},
		{"/v1beta/fileSearchStores/s1/documents/d1", Resource{Collection: FileSearchStores, Name: "fileSearchStores/s1", Sub: "documents/d1"}, true},
		{"/v1beta/fileSearchStores/s1/upload/operations/o1", Resource{Collection: FileSearchStores, Name: "fileSearchStores/s1", Sub: "upload/operations/o1"}, true},
		{"/v1/fileSearchStores/s1", Resource{Collection: FileSearchStores, Name: "fileSearchStores/s1"}, true},
		{"/v1/tunedModels/t1", Resource{Collection: TunedModels, Name: "tunedModels/t1"}, true},
		{"/v1beta/models/veo/operations/o1", Resource{Collection: ModelOperations, Model: "models/veo", Name: "models/veo/operations/o1"}, true},
		{"/v1/models/veo/operations", Resource{Collection: ModelOperations, Model: "models/veo"}, true},
		{"/v1beta/models/veo/operationsx", Resource{}, false},
		{"/v1beta/models/veo", Resource{}, false},
	} {
		got, ok := ResourcePath(c.path)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestBodyRefs(t *testing.T) {
	for _, c := range []struct {
		name, body           string
		files, caches, tuned []string
	}{
		{"file part", `{"contents":[{"parts":[{"fileData":{"fileUri":"files/a","mimeType":"text/plain"}}]}]}`, []string{"files/a"}, nil, nil},
		{"Google's URL", `{"contents":[{"parts":[{"file_data":{"file_uri":"https://generativelanguage.googleapis.com/v1beta/files/b"}}]}]}`, []string{"files/b"}, nil, nil},
		{"other URLs name no file", `{"contents":[{"parts":[{"fileData":{"fileUri":"https://www.youtube.com/watch?v=1"}},{"fileData":{"fileUri":"gs://bucket/x"}}]}]}`, nil, nil, nil},
		{"odd URL on Google's host", `{"contents":[{"parts":[{"fileData":{"fileUri":"https://generativelanguage.googleapis.com/v1beta/files/b/../c"}}]}]}`, []string{"https://generativelanguage.googleapis.com/v1beta/files/b/../c"}, nil, nil},
		{"escaped and repeated", `{"contents":[{"parts":[{"fileData":{"file\u0055ri":"files/a","fileUri":"files/b"}}]}]}`, []string{"files/a", "files/b"}, nil, nil},
		{"batch", `{"batch":{"inputConfig":{"fileName":"files/in","requests":{"requests":[{"request":{"model":"tunedModels/t","cachedContent":"c1","contents":[]}}]}}}}`, []string{"files/in"}, []string{"cachedContents/c1"}, []string{"tunedModels/t"}},
		{"tuned source", `{"baseModel":"models/x","tunedModelSource":{"tunedModel":"t9"}}`, nil, nil, []string{"tunedModels/t9"}},
		{"file search tool", `{"tools":[{"fileSearch":{"fileSearchStoreNames":["fileSearchStores/a","b"]}},{"file_search":{"file_search_store_names":["fileSearchStores/c"]}}]}`, nil, nil, nil},
		{"user data not read", `{"contents":[{"parts":[{"functionCall":{"name":"f","args":{"fileUri":"files/z"}}}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"properties":{"fileUri":{"type":"string"}}}}]}]}`, nil, nil, nil},
	} {
		refs, err := BodyRefs([]byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(refs.Files, c.files) || !slices.Equal(refs.Caches, c.caches) || !slices.Equal(refs.TunedModels, c.tuned) {
			t.Errorf("%s: %+v, want files %v caches %v tuned %v", c.name, refs, c.files, c.caches, c.tuned)
		}
	}
	stores, err := BodyRefs([]byte(`{"tools":[{"fileSearch":{"fileSearchStoreNames":["fileSearchStores/a","b"]}},{"file_search":{"file_search_store_names":["fileSearchStores/c"]}}]}`))
	if want := []string{"fileSearchStores/a", "fileSearchStores/b", "fileSearchStores/c"}; err != nil || !slices.Equal(stores.FileSearchStores, want) {
		t.Errorf("file search stores: %+v %v, want %v", stores, err, want)
	}
	for _, bad := range []string{``, `x`, `[]`, `{"a":`, `{} {}`, `{"fileUri":5}`, `{"batch":{"inputConfig":{"fileName":{}}}}`, `{"fileSearchStoreNames":[1]}`} {
		if _, err := BodyRefs([]byte(bad)); groundhog.ErrorCode(err) != groundhog.EINVALID {
			t.Errorf("%q: %v, want EINVALID", bad, err)
		}
	}
}

func TestCreatedNamesAndLists(t *testing.T) {
	if got := CreatedNames(Files, []byte(`{"file":{"name":"files/a"}}`)); !slices.Equal(got, []string{"files/a"}) {
		t.Errorf("upload: %v", got)
	}
	if got := CreatedNames(Files, []byte(`{"files":[{"name":"files/a"},{"name":"files/b"}]}`)); !slices.Equal(got, []string{"files/a", "files/b"}) {
		t.Errorf("register: %v", got)
	}
	if got := CreatedNames(TunedModels, []byte(`{"name":"tunedModels/t/operations/o","metadata":{"tunedModel":"tunedModels/t"}}`)); !slices.Equal(got, []string{"tunedModels/t"}) {
		t.Errorf("tune: %v", got)
	}
	if got := CreatedNames(Batches, []byte(`{"name":"batches/b","metadata":{}}`)); !slices.Equal(got, []string{"batches/b"}) {
		t.Errorf("batch: %v", got)
	}
	if got := CreatedNames(Batches, []byte(`{"name":"files/b"}`)); got != nil {
		t.Errorf("a batch create answering another kind: %v", got)
	}
	list := []byte(`{"operations":[{"name":"batches/a","metadata":{"output":{"responsesFile":"files/ra"}}},{"name":"batches/b"}],"nextPageToken":"n"}`)
	names, next, err := ListNames(Batches, list)
	if err != nil || !slices.Equal(names, []string{"batches/a", "batches/b"}) || next != "n" {
		t.Fatalf("list: %v %q %v", names, next, err)
	}
	out, err := FilterList(Batches, list, func(n string) bool { return n == "batches/b" })
	if err != nil || string(out) != `{"nextPageToken":"n","operations":[{"name":"batches/b"}]}` {
		t.Errorf("filter: %s %v", out, err)
	}
	if got := BatchResultFiles(list); !slices.Equal(got, []string{"files/ra"}) {
		t.Errorf("results files: %v", got)
	}
	out, _ = FilterList(Files, []byte(`{"files":[{"name":"files/x"}],"nextPageToken":"n"}`), func(string) bool { return false })
	if string(out) != `{"nextPageToken":"n"}` {
		t.Errorf("empty page: %s", out)
	}
}

func TestUploadTargetAndKnownCollection(t *testing.T) {
	for _, c := range []struct {
		path, store string
		ok          bool
	}{
		{"/upload/v1beta/files", "", true},
		{"/upload/v1/files", "", true},
		{"/upload/v1beta/fileSearchStores/s1:uploadToFileSearchStore", "fileSearchStores/s1", true},
		{"/upload/v1/fileSearchStores/s1:uploadToFileSearchStore", "fileSearchStores/s1", true},
		{"/upload/v1beta/fileSearchStores/s1:importFile", "", false},
		{"/upload/v1beta/fileSearchStores/s1/x:uploadToFileSearchStore", "", false},
		{"/upload/v1beta/corpora", "", false},
	} {
		if store, ok := UploadTarget(c.path); store != c.store || ok != c.ok {
			t.Errorf("UploadTarget(%s) = %q %v, want %q %v", c.path, store, ok, c.store, c.ok)
		}
	}
	for path, want := range map[string]bool{
		"/v1beta/models": true, "/v1beta/models/x:generateContent": true, "/v1beta/files:register": true,
		"/v1/fileSearchStores/s": true, "/v1beta/cachedContents": true,
		"/v1beta/corpora": false, "/v1beta/operations/o": false, "/v1beta/generatedFiles": false, "/v1beta/": false,
	} {
		if got := KnownCollection(path); got != want {
			t.Errorf("KnownCollection(%s) = %v", path, got)
		}
	}
	for path, want := range map[string]bool{
		"/v1/tunedModels": true, "/v1/tunedModels/t:generateContent": true, "/v1/fileSearchStores": true,
		"/v1/models/veo/operations/o": true, "/upload/v1/files": true,
		"/v1/models/gpt-4o": false, "/v1/files": false, "/v1/batches": false, "/v1/tunedModelsX": false,
	} {
		if got := IsPath(path); got != want {
			t.Errorf("IsPath(%s) = %v", path, got)
		}
	}
}
