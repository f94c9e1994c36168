package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/gateway"
)

// store is Google's File Search API on fakeGoogle's account: stores
// (create, get, list, delete), :importFile of a file, their documents and
// the operations imports and uploads start.
func (f *fakeGoogle) store(w http.ResponseWriter, r *http.Request, rest string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	switch {
	case rest == "fileSearchStores" && r.Method == http.MethodPost:
		var cfg struct {
			DisplayName string `json:"displayName"`
		}
		_ = json.Unmarshal(body, &cfg)
		f.next++
		name := fmt.Sprintf("fileSearchStores/s%03d", f.next)
		f.items["fileSearchStores"][name] = true
		f.order["fileSearchStores"] = append(f.order["fileSearchStores"], name)
		_ = enc.Encode(map[string]any{"name": name, "displayName": cfg.DisplayName, "createTime": "2026-12-06T00:00:00Z"})
		return
	case rest == "fileSearchStores":
		f.list(w, r, "fileSearchStores")
		return
	}
	id, sub, _ := strings.Cut(strings.TrimPrefix(rest, "fileSearchStores/"), "/")
	id, method, _ := strings.Cut(id, ":")
	name := "fileSearchStores/" + id
	if !f.items["fileSearchStores"][name] {
		notFound(w)
		return
	}
	switch {
	case method == "importFile":
		var in struct {
			FileName string `json:"fileName"`
		}
		if json.Unmarshal(body, &in) != nil || !f.items["files"][in.FileName] {
			notFound(w)
			return
		}
		f.next++
		_ = enc.Encode(map[string]any{"name": fmt.Sprintf("%s/operations/imp%03d", name, f.next), "done": true,
			"response": map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.ImportFileResponse",
				"parent": name, "documentName": name + "/documents/d1"}})
	case sub == "documents":
		_ = enc.Encode(map[string]any{"documents": []any{map[string]any{"name": name + "/documents/d1", "displayName": "d1", "state": "STATE_ACTIVE"}}})
	case strings.HasPrefix(sub, "documents/") && r.Method == http.MethodDelete:
		fmt.Fprint(w, `{}`)
	case strings.HasPrefix(sub, "documents/"):
		_ = enc.Encode(map[string]any{"name": name + "/" + sub, "displayName": "d1", "state": "STATE_ACTIVE"})
	case strings.Contains(sub, "operations/"):
		_ = enc.Encode(map[string]any{"name": name + "/" + sub, "done": true})
	case r.Method == http.MethodDelete:
		delete(f.items["fileSearchStores"], name)
		fmt.Fprint(w, `{}`)
	default:
		_ = enc.Encode(map[string]any{"name": name, "displayName": name})
	}
}

// storeUpload is uploadToFileSearchStore: a resumable upload whose last
// chunk answers the operation that indexes it.
func (f *fakeGoogle) storeUpload(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	path := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/upload/v1beta/"), "/upload/v1/")
	name, _, _ := strings.Cut(path, ":")
	if !f.items["fileSearchStores"][name] {
		notFound(w)
		return
	}
	cmd := r.Header.Get("X-Goog-Upload-Command")
	if cmd == "start" {
		f.next++
		id := fmt.Sprintf("up%03d", f.next)
		f.uploads[id] = name
		w.Header().Set("X-Goog-Upload-Url", f.url+"/upload/v1beta/"+name+":uploadToFileSearchStore?upload_id="+id+"&upload_protocol=resumable")
		w.Header().Set("X-Goog-Upload-Status", "active")
		return
	}
	id := r.URL.Query().Get("upload_id")
	if f.uploads[id] != name {
		notFound(w)
		return
	}
	if !strings.Contains(cmd, "finalize") {
		w.Header().Set("X-Goog-Upload-Status", "active")
		return
	}
	delete(f.uploads, id)
	f.next++
	w.Header().Set("X-Goog-Upload-Status", "final")
	_ = json.NewEncoder(w).Encode(map[string]any{"name": fmt.Sprintf("%s/upload/operations/u%03d", name, f.next), "done": true,
		"response": map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.UploadToFileSearchStoreResponse",
			"parent": name, "documentName": name + "/documents/d1"}})
}

// video is predictLongRunning (a Veo generation) and the operation it
// starts.
func (f *fakeGoogle) video(w http.ResponseWriter, r *http.Request, rest string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if model, ok := strings.CutSuffix(rest, ":predictLongRunning"); ok {
		f.next++
		name := fmt.Sprintf("%s/operations/v%03d", model, f.next)
		f.items["operations"][name] = true
		f.order["operations"] = append(f.order["operations"], name)
		fmt.Fprintf(w, `{"name":%q}`, name)
		return
	}
	if !f.items["operations"][rest] {
		notFound(w)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"name": rest, "done": true, "response": map[string]any{
		"@type":                 "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
		"generateVideoResponse": map[string]any{"generatedSamples": []any{map[string]any{"video": map[string]any{"uri": "https://generativelanguage.googleapis.com/v1beta/files/vid:download?alt=media"}}}}}})
}

// googleCall sends a raw Gemini API request with a gateway key.
func googleCall(t *testing.T, h *harness, method, path, body, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Goog-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func googleNotFound(status int, body string) bool {
	var e googleError
	return status == http.StatusNotFound && json.Unmarshal([]byte(body), &e) == nil && e.Error.Status == "NOT_FOUND" && e.Error.Code == 404
}

func listStores(t *testing.T, cl *genai.Client) []string {
	t.Helper()
	var names []string
	for s, err := range cl.FileSearchStores.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, s.Name)
	}
	return names
}

func fileSearchTool(stores ...string) *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{{FileSearch: &genai.FileSearch{FileSearchStoreNames: stores}}}}
}

// TestGeminiFileSearchStoresAreTenantScoped: through the official SDK a
// tenant creates a file search store, uploads to it, imports its own file
// into it, reads its documents and operations, searches it in a model
// call, lists and deletes it; another tenant naming the store (get,
// delete, an upload or import into it, its documents and operations, a
// fileSearch tool in generateContent, streamGenerateContent, countTokens
// or a batch's inline request) or importing the owner's file into its own
// store gets 404 NOT_FOUND with nothing sent to Google.
func TestGeminiFileSearchStoresAreTenantScoped(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)

	mine, err := acme.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "acme's store"})
	if err != nil || !strings.HasPrefix(mine.Name, "fileSearchStores/") {
		t.Fatalf("create: %+v %v", mine, err)
	}
	f.add("fileSearchStores", "fileSearchStores/outside")
	theirs, err := globex.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "globex's store"})
	if err != nil {
		t.Fatal(err)
	}
	acmeFile := uploadGeminiFile(t, acme, "acme's handbook")
	up, err := acme.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("acme's manual"), mine.Name, &genai.UploadToFileSearchStoreConfig{MIMEType: "text/plain"})
	if err != nil || !strings.HasPrefix(up.Name, mine.Name+"/upload/operations/") {
		t.Fatalf("upload to own store: %+v %v", up, err)
	}
	imp, err := acme.FileSearchStores.ImportFile(ctx, mine.Name, acmeFile.Name, nil)
	if err != nil || !strings.HasPrefix(imp.Name, mine.Name+"/operations/") {
		t.Fatalf("import own file: %+v %v", imp, err)
	}

	before := len(f.requests())
	if _, err := globex.FileSearchStores.Get(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("get another tenant's store: %v", err)
	}
	if _, err := globex.FileSearchStores.Get(ctx, "fileSearchStores/outside", nil); !isNotFound(err) {
		t.Errorf("get a store made outside the gateway: %v", err)
	}
	if err := globex.FileSearchStores.Delete(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("delete another tenant's store: %v", err)
	}
	if _, err := globex.FileSearchStores.ImportFile(ctx, mine.Name, acmeFile.Name, nil); !isNotFound(err) {
		t.Errorf("import into another tenant's store: %v", err)
	}
	if _, err := globex.FileSearchStores.ImportFile(ctx, theirs.Name, acmeFile.Name, nil); !isNotFound(err) {
		t.Errorf("import another tenant's file into an own store: %v", err)
	}
	if _, err := globex.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("planted"), mine.Name, &genai.UploadToFileSearchStoreConfig{MIMEType: "text/plain"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("upload into another tenant's store: %v", err)
	}
	if _, err := globex.FileSearchStores.Documents.Get(ctx, mine.Name+"/documents/d1", nil); !isNotFound(err) {
		t.Errorf("get a document of another tenant's store: %v", err)
	}
	if err := globex.FileSearchStores.Documents.Delete(ctx, mine.Name+"/documents/d1", nil); !isNotFound(err) {
		t.Errorf("delete a document of another tenant's store: %v", err)
	}
	if _, err := globex.FileSearchStores.Documents.List(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("list the documents of another tenant's store: %v", err)
	}
	if _, err := globex.Operations.GetImportFileOperation(ctx, &genai.ImportFileOperation{Name: imp.Name}, nil); !isNotFound(err) {
		t.Errorf("get another tenant's import operation: %v", err)
	}
	if _, err := globex.Operations.GetUploadToFileSearchStoreOperation(ctx, &genai.UploadToFileSearchStoreOperation{Name: up.Name}, nil); !isNotFound(err) {
		t.Errorf("get another tenant's upload operation: %v", err)
	}
	if _, err := globex.Models.GenerateContent(ctx, geminiModel, genai.Text("search"), fileSearchTool(theirs.Name, mine.Name)); !isNotFound(err) {
		t.Errorf("generateContent searching another tenant's store: %v", err)
	}
	for _, err := range globex.Models.GenerateContentStream(ctx, geminiModel, genai.Text("search"), fileSearchTool(mine.Name)) {
		if !isNotFound(err) {
			t.Errorf("streamGenerateContent searching another tenant's store: %v", err)
		}
		break
	}
	if _, err := globex.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{
		{Contents: genai.Text("fine")}, {Contents: genai.Text("search"), Config: fileSearchTool(mine.Name)},
	}}, nil); !isNotFound(err) {
		t.Errorf("a batch's inline request searching another tenant's store: %v", err)
	}
	short := strings.TrimPrefix(mine.Name, "fileSearchStores/")
	for _, c := range []struct{ path, body string }{
		{"/v1beta/models/" + geminiModel + ":countTokens", `{"generateContentRequest":{"model":"models/` + geminiModel + `","contents":[{"parts":[{"text":"x"}]}],"tools":[{"fileSearch":{"fileSearchStoreNames":["` + mine.Name + `"]}}]}}`},
		{"/v1beta/models/" + geminiModel + ":generateContent", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"file_search":{"file_search_store_names":["` + short + `"]}}]}`},
		{"/v1beta/cachedContents", `{"model":"models/` + geminiModel + `","contents":[{"parts":[{"text":"x"}]}],"tools":[{"fileSearch":{"fileSearchStoreNames":["` + mine.Name + `"]}}]}`},
	} {
		if status, body := googleCall(t, h, http.MethodPost, c.path, c.body, globexKey); !googleNotFound(status, body) {
			t.Errorf("%s %s: %d %s", c.path, c.body, status, body)
		}
	}
	refusedQuietly(t, f, before, "file search stores")

	// The owner uses its store.
	if got, err := acme.FileSearchStores.Get(ctx, mine.Name, nil); err != nil || got.Name != mine.Name {
		t.Fatalf("get own store: %+v %v", got, err)
	}
	if doc, err := acme.FileSearchStores.Documents.Get(ctx, mine.Name+"/documents/d1", nil); err != nil || doc.Name != mine.Name+"/documents/d1" {
		t.Errorf("get a document of the own store: %+v %v", doc, err)
	}
	if op, err := acme.Operations.GetImportFileOperation(ctx, imp, nil); err != nil || op.Name != imp.Name {
		t.Errorf("get own import operation: %+v %v", op, err)
	}
	if got, want := listStores(t, acme), []string{mine.Name}; !slices.Equal(got, want) {
		t.Errorf("acme's stores: %v, want %v", got, want)
	}
	if got, want := listStores(t, globex), []string{theirs.Name}; !slices.Equal(got, want) {
		t.Errorf("globex's stores: %v, want %v", got, want)
	}
	if err := acme.FileSearchStores.Delete(ctx, mine.Name, nil); err != nil {
		t.Fatalf("delete own store: %v", err)
	}
	before = len(f.requests())
	if _, err := acme.FileSearchStores.Get(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	refusedQuietly(t, f, before, "after delete")
}

// TestGeminiVideoOperationsAreTenantScoped: the operation a
// predictLongRunning starts is its starter's: another tenant's GET of it
// (the SDK's GetVideosOperation) is 404 NOT_FOUND, nothing sent.
func TestGeminiVideoOperationsAreTenantScoped(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)
	const veo = "veo-3.0-generate-001"
	// The SDK sends predictLongRunning only to Vertex AI; REST clients send
	// it to the Gemini API.
	status, body := googleCall(t, h, http.MethodPost, "/v1beta/models/"+veo+":predictLongRunning", `{"instances":[{"prompt":"a groundhog at dawn"}]}`, acmeKey)
	op := &genai.GenerateVideosOperation{}
	if status != http.StatusOK || json.Unmarshal([]byte(body), op) != nil || !strings.HasPrefix(op.Name, "models/"+veo+"/operations/") {
		t.Fatalf("predictLongRunning: %d %s", status, body)
	}
	f.add("operations", "models/"+veo+"/operations/outside")
	before := len(f.requests())
	if _, err := globex.Operations.GetVideosOperation(ctx, &genai.GenerateVideosOperation{Name: op.Name}, nil); !isNotFound(err) {
		t.Errorf("get another tenant's video operation: %v", err)
	}
	if _, err := globex.Operations.GetVideosOperation(ctx, &genai.GenerateVideosOperation{Name: "models/" + veo + "/operations/outside"}, nil); !isNotFound(err) {
		t.Errorf("get an operation started outside the gateway: %v", err)
	}
	refusedQuietly(t, f, before, "video operations")
	got, err := acme.Operations.GetVideosOperation(ctx, op, nil)
	if err != nil || !got.Done || got.Response == nil || len(got.Response.GeneratedVideos) != 1 {
		t.Fatalf("get own video operation: %+v %v", got, err)
	}
}

// uploadJSONL uploads a batch's input file through the SDK (a resumable
// upload, in 8 MiB chunks).
func uploadJSONL(t *testing.T, cl *genai.Client, jsonl string) *genai.File {
	t.Helper()
	f, err := cl.Files.Upload(context.Background(), strings.NewReader(jsonl), &genai.UploadFileConfig{MIMEType: "application/jsonl", DisplayName: "requests.jsonl"})
	if err != nil || !strings.HasPrefix(f.Name, "files/") {
		t.Fatalf("upload: %+v %v", f, err)
	}
	return f
}

// batchLine is one line of a batch's input file with parts.
func batchLine(parts string) string {
	return `{"key":"k","request":{"contents":[{"role":"user","parts":[` + parts + `]}]}}` + "\n"
}

// straddling returns an input file of over 8 MiB — two chunks of the
// SDK's upload — whose parts, in one line, cross the chunks' boundary.
func straddling(parts string) string {
	var b strings.Builder
	filler := batchLine(`{"text":"` + strings.Repeat("groundhog ", 100) + `"}`)
	for b.Len()+len(filler) < 8<<20-40 {
		b.WriteString(filler)
	}
	const head = `{"key":"k","request":{"contents":[{"role":"user","parts":[{"text":"`
	pad := 8<<20 - b.Len() - len(head) - len(`"},`) - 15 // parts start 15 bytes before the boundary
	b.WriteString(batchLine(`{"text":"` + strings.Repeat("x", pad) + `"},` + parts))
	b.WriteString(filler)
	return b.String()
}

// TestGeminiBatchInputFileNamesAreChecked: the lines of a batch's input
// file, uploaded through the SDK, are read as they pass through the
// gateway: a batch whose input file names another tenant's file (as
// files/{id} or Google's URL, under an escaped member name), a cache or a
// file search store the tenant did not create, or holds a line that may
// name one and cannot be read, is 404 NOT_FOUND with nothing sent to
// Google — also when that line crosses the boundary of two upload chunks,
// and when a chunk came out of order; an input file naming only the
// tenant's own resources makes a batch.
func TestGeminiBatchInputFileNamesAreChecked(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)
	acmeFile := uploadGeminiFile(t, acme, "acme's notes")
	acmeStore, err := acme.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "acme's store"})
	if err != nil {
		t.Fatal(err)
	}
	globexFile := uploadGeminiFile(t, globex, "globex's notes")
	fine := batchLine(`{"text":"hello"}`)
	for _, c := range []struct{ name, jsonl string }{
		{"another tenant's file", fine + batchLine(`{"fileData":{"fileUri":"`+acmeFile.Name+`","mimeType":"text/plain"}}`)},
		{"another tenant's file by Google's URL", batchLine(`{"file_data":{"file_uri":"`+acmeFile.URI+`"}}`) + fine},
		{"an escaped member name", fine + batchLine(`{"fileData":{"file\u0055ri":"`+acmeFile.Name+`"}}`)},
		{"a cache the tenant did not create", fine + `{"key":"c","request":{"cachedContent":"cachedContents/acme-cache","contents":[{"parts":[{"text":"x"}]}]}}`},
		{"another tenant's file search store", fine + `{"key":"s","request":{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"fileSearch":{"fileSearchStoreNames":["` + acmeStore.Name + `"]}}]}}` + "\n"},
		{"a line that cannot be read", fine + `{"key":"b","request":{"contents":[{"parts":[{"fileData":{"fileUri":"` + globexFile.Name + `"}}]}]` + "\n" + fine},
		{"across two chunks", straddling(`{"fileData":{"fileUri":"` + acmeFile.Name + `"}}`)},
		{"after many own names", strings.Repeat(batchLine(`{"fileData":{"fileUri":"`+globexFile.Name+`"}}`), 3000) + batchLine(`{"fileData":{"fileUri":"`+acmeFile.Name+`"}}`)},
	} {
		input := uploadJSONL(t, globex, c.jsonl)
		before := len(f.requests())
		if _, err := globex.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: input.Name}, nil); !isNotFound(err) {
			t.Errorf("%s: %v", c.name, err)
		}
		refusedQuietly(t, f, before, c.name)
	}
	// A chunk that is not the next in order leaves bytes unread: the file
	// is the tenant's, but not a batch's input.
	for offset, want := range map[string]bool{"7": false, "0": true} {
		res, _ := h.post("/upload/v1beta/files", `{"file":{"displayName":"requests.jsonl"}}`, map[string]string{
			"X-Goog-Api-Key": globexKey, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
		res, body := h.post(strings.TrimPrefix(res.Header.Get("X-Goog-Upload-Url"), h.URL), fine, map[string]string{
			"X-Goog-Api-Key": globexKey, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": offset})
		var up struct {
			File genai.File `json:"file"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(body, &up) != nil {
			t.Fatalf("upload at offset %s: %d %s", offset, res.StatusCode, body)
		}
		if _, err := globex.Files.Get(ctx, up.File.Name, nil); err != nil {
			t.Errorf("the file uploaded at offset %s: %v", offset, err)
		}
		_, err := globex.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: up.File.Name}, nil)
		if want && err != nil || !want && !isNotFound(err) {
			t.Errorf("a batch of the file uploaded at offset %s: %v", offset, err)
		}
	}
	for _, c := range []struct{ name, jsonl string }{
		{"own file", fine + batchLine(`{"fileData":{"fileUri":"`+globexFile.Name+`"}}`)},
		{"own file across two chunks", straddling(`{"fileData":{"fileUri":"` + globexFile.URI + `"}}`)},
		{"many own names", strings.Repeat(batchLine(`{"fileData":{"fileUri":"`+globexFile.Name+`"}}`), 3000)},
	} {
		input := uploadJSONL(t, globex, c.jsonl)
		if job, err := globex.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: input.Name}, nil); err != nil || !strings.HasPrefix(job.Name, "batches/") {
			t.Errorf("%s: %+v %v", c.name, job, err)
		}
	}
}

// TestGeminiResourcesScopedUnderV1: the Gemini resource routes Google
// also serves under /v1/ (the Go SDK's default version) — tuned models,
// file search stores with their documents, uploads and operations, a
// model's operations, caches — are scoped as under /v1beta/: another
// tenant's is 404 NOT_FOUND with nothing sent to Google, and the owner
// reaches its own. /v1/files and /v1/batches are OpenAI's routes: a
// Gemini file named there never reaches Google. A Gemini collection the
// gateway does not keep per tenant is not reachable on the shared account.
func TestGeminiResourcesScopedUnderV1(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme := betaClient(t, h, acmeKey)
	acmeV1, globexV1 := geminiClient(t, h, acmeKey, nil), geminiClient(t, h, globexKey, nil)

	job, err := acme.Tunings.Tune(ctx, "models/gemini-1.5-flash-001", &genai.TuningDataset{Examples: []*genai.TuningExample{{TextInput: "1", Output: "2"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := acme.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "acme's store"})
	if err != nil {
		t.Fatal(err)
	}
	file := uploadGeminiFile(t, acme, "acme's notes")
	imp, err := acme.FileSearchStores.ImportFile(ctx, store.Name, file.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	status, body := googleCall(t, h, http.MethodPost, "/v1beta/models/veo-3.0-generate-001:predictLongRunning", `{"instances":[{"prompt":"dawn"}]}`, acmeKey)
	var op struct{ Name string }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &op) != nil || op.Name == "" {
		t.Fatalf("predictLongRunning: %d %s", status, body)
	}
	cache := createCache(t, acme, strings.Repeat("acme's long document. ", 400))

	before := len(f.requests())
	if _, err := globexV1.Tunings.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("v1 get another tenant's tuned model: %v", err)
	}
	if _, err := globexV1.Models.GenerateContent(ctx, job.Name, genai.Text("hi"), nil); !isNotFound(err) {
		t.Errorf("v1 generateContent on another tenant's tuned model: %v", err)
	}
	if _, err := globexV1.FileSearchStores.Get(ctx, store.Name, nil); !isNotFound(err) {
		t.Errorf("v1 get another tenant's store: %v", err)
	}
	if err := globexV1.FileSearchStores.Delete(ctx, store.Name, nil); !isNotFound(err) {
		t.Errorf("v1 delete another tenant's store: %v", err)
	}
	if _, err := globexV1.FileSearchStores.ImportFile(ctx, store.Name, file.Name, nil); !isNotFound(err) {
		t.Errorf("v1 import into another tenant's store: %v", err)
	}
	if _, err := globexV1.FileSearchStores.Documents.List(ctx, store.Name, nil); !isNotFound(err) {
		t.Errorf("v1 documents of another tenant's store: %v", err)
	}
	if _, err := globexV1.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("planted"), store.Name, &genai.UploadToFileSearchStoreConfig{MIMEType: "text/plain"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("v1 upload into another tenant's store: %v", err)
	}
	if _, err := globexV1.Operations.GetImportFileOperation(ctx, &genai.ImportFileOperation{Name: imp.Name}, nil); !isNotFound(err) {
		t.Errorf("v1 get another tenant's import operation: %v", err)
	}
	if _, err := globexV1.Operations.GetVideosOperation(ctx, &genai.GenerateVideosOperation{Name: op.Name}, nil); !isNotFound(err) {
		t.Errorf("v1 get another tenant's video operation: %v", err)
	}
	if _, err := globexV1.Caches.Get(ctx, cache, nil); !isNotFound(err) {
		t.Errorf("v1 get another tenant's cache: %v", err)
	}
	if _, err := globexV1.Models.GenerateContent(ctx, geminiModel, genai.Text("search"), fileSearchTool(store.Name)); !isNotFound(err) {
		t.Errorf("v1 generateContent searching another tenant's store: %v", err)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/tunedModels/" + strings.TrimPrefix(job.Name, "tunedModels/") + ":generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`},
		{http.MethodGet, "/v1/" + store.Name + "/documents/d1", ``},
		{http.MethodGet, "/v1/" + store.Name + "/upload/operations/u1", ``},
		{http.MethodPost, "/upload/v1/" + store.Name + ":uploadToFileSearchStore", `{}`},
		{http.MethodGet, "/v1/" + op.Name, ``},
		{http.MethodGet, "/v1beta/corpora", ``},
		{http.MethodGet, "/v1beta/operations", ``},
		{http.MethodGet, "/v1beta/generatedFiles", ``},
	} {
		if status, body := googleCall(t, h, c.method, c.path, c.body, globexKey); !googleNotFound(status, body) {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, body)
		}
	}
	// /v1/files is OpenAI's: a Gemini file's name there is not Google's.
	if status, body := googleCall(t, h, http.MethodGet, "/v1/"+file.Name, ``, globexKey); status == http.StatusOK {
		t.Errorf("v1 files route: %d %s", status, body)
	}
	refusedQuietly(t, f, before, "/v1/ routes")
	// Lists under /v1/ show only the tenant's own.
	for _, path := range []string{"/v1/tunedModels", "/v1/fileSearchStores"} {
		if status, body := googleCall(t, h, http.MethodGet, path, ``, globexKey); status != http.StatusOK || strings.Contains(body, job.Name) || strings.Contains(body, store.Name) {
			t.Errorf("v1 list %s: %d %s", path, status, body)
		}
	}

	// The owner reaches its own under /v1/.
	if got, err := acmeV1.FileSearchStores.Get(ctx, store.Name, nil); err != nil || got.Name != store.Name {
		t.Errorf("v1 get own store: %+v %v", got, err)
	}
	if got, err := acmeV1.Tunings.Get(ctx, job.Name, nil); err != nil || got.Name != job.Name {
		t.Errorf("v1 get own tuned model: %+v %v", got, err)
	}
	if got, err := acmeV1.Operations.GetVideosOperation(ctx, &genai.GenerateVideosOperation{Name: op.Name}, nil); err != nil || !got.Done {
		t.Errorf("v1 get own video operation: %+v %v", got, err)
	}
}

// TestGeminiFileSearchLedger: a store's create is free, as Google bills
// it, and so is an upload's start; indexing into a store (the last chunk
// of uploadToFileSearchStore, importFile) is billed by embedding tokens
// the answer does not carry: unknown, never 0.
func TestGeminiFileSearchLedger(t *testing.T) {
	h, _ := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	cl := betaClient(t, h, createGatewayKey(t, h, "acme"))
	rows := func() []groundhog.Money {
		var costs []groundhog.Money
		for _, row := range h.ledgerRows() {
			if row.Tenant == "acme" {
				costs = append(costs, row.Cost)
			}
		}
		return costs
	}
	store, err := cl.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	file := uploadGeminiFile(t, cl, "notes")
	if got := rows(); len(got) != 3 || slices.ContainsFunc(got, func(m groundhog.Money) bool { return m != 0 }) {
		t.Fatalf("a store's create and a file's upload: %v, want three rows at 0", got)
	}
	if _, err := cl.FileSearchStores.ImportFile(ctx, store.Name, file.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("manual"), store.Name, &genai.UploadToFileSearchStoreConfig{MIMEType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	got := rows()
	if want := []groundhog.Money{0, 0, 0, groundhog.CostUnknown, 0, groundhog.CostUnknown}; !slices.Equal(got, want) {
		t.Errorf("import, then an upload's start and its last chunk: %v, want %v", got, want)
	}
}
