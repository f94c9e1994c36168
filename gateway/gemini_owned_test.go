package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/gateway"
)

// fakeGoogle is the Gemini API's files (resumable media uploads, get,
// list, delete), batches (batchGenerateContent, get, list, cancel,
// delete) and tuned models (create, get, list, delete, generateContent,
// operations) on one account, in front of the simulated provider, which
// serves every other route. Lists are paged by pageSize (default 2) and
// pageToken. It records every request it receives, as Google would see
// them.
type fakeGoogle struct {
	mu      sync.Mutex
	url     string
	next    int
	uploads map[string]string          // upload_id → display name
	items   map[string]map[string]bool // collection → names, existing
	order   map[string][]string        // collection → names in creation order
	seen    []string                   // "METHOD path?query body"
}

func newFakeGoogle() *fakeGoogle {
	return &fakeGoogle{uploads: map[string]string{}, items: map[string]map[string]bool{
		"files": {}, "batches": {}, "tunedModels": {}, "fileSearchStores": {}, "operations": {},
	}, order: map[string][]string{}}
}

func (f *fakeGoogle) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// add makes a resource as if someone else (another tool on the same
// account) had.
func (f *fakeGoogle) add(c, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[c][name] = true
	f.order[c] = append(f.order[c], name)
}

func (f *fakeGoogle) handler(simURL *string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI()+" "+string(body))
		f.mu.Unlock()
		p := r.URL.Path
		rest := strings.TrimPrefix(p, "/v1beta/")
		if v1, ok := strings.CutPrefix(p, "/v1/"); ok {
			rest = v1
		}
		switch {
		case strings.HasPrefix(p, "/upload/v1beta/fileSearchStores/") || strings.HasPrefix(p, "/upload/v1/fileSearchStores/"):
			f.storeUpload(w, r, body)
		case rest == "fileSearchStores" || strings.HasPrefix(rest, "fileSearchStores/"):
			f.store(w, r, rest, body)
		case strings.HasSuffix(rest, ":predictLongRunning") || strings.HasPrefix(rest, "models/") && strings.Contains(rest, "/operations"):
			f.video(w, r, rest)
		case strings.HasPrefix(p, "/upload/v1beta/files"):
			f.upload(w, r, body)
		case rest == "files" || strings.HasPrefix(rest, "files/") ||
			rest == "batches" || strings.HasPrefix(rest, "batches/") ||
			rest == "tunedModels" || strings.HasPrefix(rest, "tunedModels/") ||
			strings.HasSuffix(rest, ":batchGenerateContent"):
			f.resource(w, r, rest, body)
		default:
			target, _ := url.Parse(*simURL)
			r.Body = io.NopCloser(bytes.NewReader(body))
			httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
		}
	})
}

func notFound(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}`)
}

func (f *fakeGoogle) file(name string) map[string]any {
	return map[string]any{"name": name, "displayName": name, "mimeType": "text/plain", "sizeBytes": "5",
		"uri": "https://generativelanguage.googleapis.com/v1beta/" + name, "state": "ACTIVE", "source": "UPLOADED"}
}

// upload is Google's resumable protocol: a start answers the upload URL,
// a chunk with "finalize" makes the file.
func (f *fakeGoogle) upload(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	cmd := r.Header.Get("X-Goog-Upload-Command")
	if cmd == "start" {
		f.next++
		id := fmt.Sprintf("up%03d", f.next)
		var meta struct {
			File struct {
				DisplayName string `json:"displayName"`
			} `json:"file"`
		}
		_ = json.Unmarshal(body, &meta)
		f.uploads[id] = meta.File.DisplayName
		w.Header().Set("X-Goog-Upload-Url", f.url+"/upload/v1beta/files?upload_id="+id+"&upload_protocol=resumable")
		w.Header().Set("X-Goog-Upload-Status", "active")
		return
	}
	id := r.URL.Query().Get("upload_id")
	if _, ok := f.uploads[id]; !ok {
		notFound(w)
		return
	}
	if !strings.Contains(cmd, "finalize") {
		w.Header().Set("X-Goog-Upload-Status", "active")
		return
	}
	delete(f.uploads, id)
	f.next++
	name := fmt.Sprintf("files/f%03d", f.next)
	f.items["files"][name] = true
	f.order["files"] = append(f.order["files"], name)
	w.Header().Set("X-Goog-Upload-Status", "final")
	_ = json.NewEncoder(w).Encode(map[string]any{"file": f.file(name)})
}

func (f *fakeGoogle) batch(name string, done bool) map[string]any {
	meta := map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
		"model": "models/" + geminiModel, "displayName": name, "state": "BATCH_STATE_PENDING", "name": name}
	if done {
		meta["state"] = "BATCH_STATE_SUCCEEDED"
		meta["output"] = map[string]any{"responsesFile": "files/" + strings.TrimPrefix(name, "batches/") + "-results"}
	}
	return map[string]any{"name": name, "metadata": meta, "done": done}
}

func (f *fakeGoogle) tuned(name string) map[string]any {
	return map[string]any{"name": name, "baseModel": "models/gemini-1.5-flash-001", "state": "ACTIVE", "displayName": name}
}

func (f *fakeGoogle) resource(w http.ResponseWriter, r *http.Request, rest string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	switch {
	case strings.HasSuffix(rest, ":batchGenerateContent"):
		f.next++
		name := fmt.Sprintf("batches/b%03d", f.next)
		f.items["batches"][name] = true
		f.order["batches"] = append(f.order["batches"], name)
		_ = enc.Encode(f.batch(name, false))
		return
	case rest == "tunedModels" && r.Method == http.MethodPost:
		f.next++
		name := fmt.Sprintf("tunedModels/t%03d", f.next)
		f.items["tunedModels"][name] = true
		f.order["tunedModels"] = append(f.order["tunedModels"], name)
		_ = enc.Encode(map[string]any{"name": name + "/operations/op1", "metadata": map[string]any{
			"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.CreateTunedModelMetadata", "tunedModel": name, "totalSteps": 3}})
		return
	case rest == "files" || rest == "batches" || rest == "tunedModels":
		f.list(w, r, rest)
		return
	}
	name, method, _ := strings.Cut(rest, ":")
	name, sub, _ := strings.Cut(name, "/operations/")
	c, _, _ := strings.Cut(name, "/")
	if !f.items[c][name] {
		notFound(w)
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		delete(f.items[c], name)
		fmt.Fprint(w, `{}`)
	case sub != "":
		_ = enc.Encode(map[string]any{"name": name + "/operations/" + sub, "done": true})
	case c == "files":
		_ = enc.Encode(f.file(name))
	case c == "batches" && method == "cancel":
		fmt.Fprint(w, `{}`)
	case c == "batches":
		res := strings.TrimPrefix(name, "batches/")
		f.items["files"]["files/"+res+"-results"] = true
		_ = enc.Encode(f.batch(name, true))
	case method == "generateContent":
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"tuned answer"}]},"finishReason":"STOP"}],`+
			`"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}`)
	default:
		_ = enc.Encode(f.tuned(name))
	}
}

// list pages a collection by pageSize (default 2) and pageToken (an
// offset).
func (f *fakeGoogle) list(w http.ResponseWriter, r *http.Request, c string) {
	var live []string
	for _, n := range f.order[c] {
		if f.items[c][n] {
			live = append(live, n)
		}
	}
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size <= 0 {
		size = 2
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	from = min(from, len(live))
	to := min(from+size, len(live))
	var items []map[string]any
	for _, n := range live[from:to] {
		switch c {
		case "files":
			items = append(items, f.file(n))
		case "batches":
			items = append(items, f.batch(n, false))
		case "fileSearchStores":
			items = append(items, map[string]any{"name": n, "displayName": n})
		default:
			items = append(items, f.tuned(n))
		}
	}
	out := map[string]any{}
	member := c
	if c == "batches" {
		member = "operations"
	}
	if len(items) > 0 {
		out[member] = items
	}
	if to < len(live) {
		out["nextPageToken"] = strconv.Itoa(to)
	}
	_ = json.NewEncoder(w).Encode(out)
}

// newGoogleHarness is a harness whose Gemini upstream is a fakeGoogle
// with the gateway's own provider key (keyed: the account is shared).
func newGoogleHarness(t *testing.T, up gateway.Upstream) (*harness, *fakeGoogle) {
	f := newFakeGoogle()
	var simURL string
	srv := httptest.NewServer(f.handler(&simURL))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	up.BaseURL = srv.URL
	h := newHarness(t, func(s *setup) { s.gemini = &up })
	simURL = h.SimURL
	return h, f
}

// betaClient is a genai client on the v1beta API (where Google serves
// files, batches and tuned models) through the gateway.
func betaClient(t *testing.T, h *harness, key string) *genai.Client {
	t.Helper()
	cl, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: h.URL, APIVersion: "v1beta"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func uploadGeminiFile(t *testing.T, cl *genai.Client, text string) *genai.File {
	t.Helper()
	f, err := cl.Files.Upload(context.Background(), strings.NewReader(text), &genai.UploadFileConfig{MIMEType: "text/plain", DisplayName: text})
	if err != nil || !strings.HasPrefix(f.Name, "files/") {
		t.Fatalf("upload: %+v %v", f, err)
	}
	return f
}

// refusedQuietly fails the test unless nothing reached Google since
// before.
func refusedQuietly(t *testing.T, f *fakeGoogle, before int, what string) {
	t.Helper()
	if got := f.requests()[before:]; len(got) != 0 {
		t.Errorf("%s: refused requests reached the provider: %q", what, got)
	}
}

func listFiles(t *testing.T, cl *genai.Client) []string {
	t.Helper()
	var names []string
	for f, err := range cl.Files.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
	}
	return names
}

// TestGeminiFilesAreTenantScoped: through the official SDK a tenant
// uploads (resumable), reads, lists, uses and deletes its own files;
// another tenant's file is 404 NOT_FOUND on get, download, delete, in a
// generateContent part (as files/{id} or Google's URL), in countTokens and
// in a chunk of the other's upload — nothing sent upstream, no ledger
// row; lists show each tenant its own files, read past pages of others'
// so the SDK's paging reaches them all.
func TestGeminiFilesAreTenantScoped(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)
	mine := uploadGeminiFile(t, acme, "acme's notes")
	// Files of someone else on the account fill whole pages.
	for i := range 5 {
		f.add("files", fmt.Sprintf("files/outside%d", i))
	}
	theirs := uploadGeminiFile(t, globex, "globex's notes")

	before := len(f.requests())
	if _, err := globex.Files.Get(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("get another tenant's file: %v", err)
	}
	if _, err := globex.Files.Delete(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("delete another tenant's file: %v", err)
	}
	if _, err := globex.Files.Get(ctx, "files/outside1", nil); !isNotFound(err) {
		t.Errorf("get a file made outside the gateway: %v", err)
	}
	if _, err := globex.Models.GenerateContent(ctx, geminiModel, []*genai.Content{{Role: "user", Parts: []*genai.Part{
		genai.NewPartFromText("summarize"), genai.NewPartFromURI(mine.URI, "text/plain")}}}, nil); !isNotFound(err) {
		t.Errorf("generateContent with another tenant's file: %v", err)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1beta/models/" + geminiModel + ":generateContent", `{"contents":[{"parts":[{"fileData":{"fileUri":"` + mine.Name + `"}}]}]}`},
		{"/v1beta/models/" + geminiModel + ":generateContent", `{"contents":[{"parts":[{"file_data":{"file_uri":"https://generativelanguage.googleapis.com/v1beta/` + mine.Name + `"}}]}]}`},
		{"/v1beta/models/" + geminiModel + ":streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"fileData":{"fileUri":"` + theirs.Name + `"}},{"fileData":{"fileUri":"` + mine.Name + `"}}]}]}`},
		{"/v1beta/models/" + geminiModel + ":countTokens", `{"contents":[{"parts":[{"fileData":{"file\u0055ri":"` + mine.Name + `"}}]}]}`},
		{"/v1beta/" + mine.Name + ":download?alt=media", ``},
	} {
		res, body := h.post(c.path, c.body, map[string]string{"X-Goog-Api-Key": globexKey})
		var e googleError
		if res.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Error.Status != "NOT_FOUND" || e.Error.Code != 404 {
			t.Errorf("%s %s: %d %s", c.path, c.body, res.StatusCode, body)
		}
	}
	refusedQuietly(t, f, before, "files")
	for _, row := range h.ledgerRows() {
		if row.Tenant == "globex" && row.Outcome != groundhog.OutcomePassthrough {
			t.Errorf("a refused call left a ledger row: %+v", row)
		}
	}

	// A chunk of another tenant's resumable upload is refused.
	res, _ := h.post("/upload/v1beta/files", `{"file":{"displayName":"half"}}`, map[string]string{
		"X-Goog-Api-Key": acmeKey, "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"})
	upURL := res.Header.Get("X-Goog-Upload-Url")
	if res.StatusCode != 200 || !strings.HasPrefix(upURL, h.URL+"/upload/v1beta/files?") {
		t.Fatalf("start: %d, upload URL %q (want it on the gateway %s)", res.StatusCode, upURL, h.URL)
	}
	before = len(f.requests())
	res, body := h.post(strings.TrimPrefix(upURL, h.URL), "hello", map[string]string{
		"X-Goog-Api-Key": globexKey, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"})
	if res.StatusCode != 404 {
		t.Errorf("another tenant's upload chunk: %d %s", res.StatusCode, body)
	}
	refusedQuietly(t, f, before, "upload chunk")
	res, body = h.post(strings.TrimPrefix(upURL, h.URL), "hello", map[string]string{
		"X-Goog-Api-Key": acmeKey, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"})
	var up struct {
		File genai.File `json:"file"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &up) != nil || res.Header.Get("X-Goog-Upload-Status") != "final" {
		t.Fatalf("own upload chunk: %d %s", res.StatusCode, body)
	}

	// The owner uses its files.
	if got, err := acme.Files.Get(ctx, mine.Name, nil); err != nil || got.Name != mine.Name {
		t.Fatalf("get own file: %+v %v", got, err)
	}
	if _, err := acme.Models.GenerateContent(ctx, geminiModel, []*genai.Content{{Role: "user", Parts: []*genai.Part{
		genai.NewPartFromText("summarize"), genai.NewPartFromURI(mine.URI, "text/plain")}}}, nil); err != nil {
		t.Fatalf("generateContent with own file: %v", err)
	}
	if got, want := listFiles(t, acme), []string{mine.Name, up.File.Name}; !slices.Equal(got, want) {
		t.Errorf("acme's files: %v, want %v", got, want)
	}
	if got, want := listFiles(t, globex), []string{theirs.Name}; !slices.Equal(got, want) {
		t.Errorf("globex's files: %v, want %v", got, want)
	}

	// A delete forgets.
	if _, err := acme.Files.Delete(ctx, mine.Name, nil); err != nil {
		t.Fatalf("delete own file: %v", err)
	}
	before = len(f.requests())
	if _, err := acme.Files.Get(ctx, mine.Name, nil); !isNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	refusedQuietly(t, f, before, "after delete")
}

// TestGeminiBatchesAreTenantScoped: a batch's input file and every file,
// cache and tuned model its inline requests name must be the tenant's; the
// batch is its creator's only (get, cancel, delete, list); the file Google
// writes its results to becomes the owner's.
func TestGeminiBatchesAreTenantScoped(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)
	input := uploadGeminiFile(t, acme, `{"key":"1","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`)

	before := len(f.requests())
	if _, err := globex.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: input.Name}, nil); !isNotFound(err) {
		t.Errorf("a batch of another tenant's input file: %v", err)
	}
	inline := func(part *genai.Part, cfg *genai.GenerateContentConfig) *genai.BatchJobSource {
		return &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{
			{Contents: genai.Text("fine")},
			{Contents: []*genai.Content{{Role: "user", Parts: []*genai.Part{part}}}, Config: cfg},
		}}
	}
	if _, err := globex.Batches.Create(ctx, geminiModel, inline(genai.NewPartFromURI(input.URI, "text/plain"), nil), nil); !isNotFound(err) {
		t.Errorf("an inline request naming another tenant's file: %v", err)
	}
	if _, err := globex.Batches.Create(ctx, geminiModel, inline(genai.NewPartFromText("x"), &genai.GenerateContentConfig{CachedContent: "cachedContents/acme-cache"}), nil); !isNotFound(err) {
		t.Errorf("an inline request naming a cache the tenant did not create: %v", err)
	}
	refusedQuietly(t, f, before, "batch create")

	job, err := acme.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: input.Name}, nil)
	if err != nil || !strings.HasPrefix(job.Name, "batches/") {
		t.Fatalf("own batch: %+v %v", job, err)
	}
	f.add("batches", "batches/outside")
	theirs, err := globex.Batches.Create(ctx, geminiModel, inline(genai.NewPartFromText("x"), nil), nil)
	if err != nil {
		t.Fatalf("globex's inline batch: %v", err)
	}

	before = len(f.requests())
	if _, err := globex.Batches.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("get another tenant's batch: %v", err)
	}
	if err := globex.Batches.Cancel(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("cancel another tenant's batch: %v", err)
	}
	if _, err := globex.Batches.Delete(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("delete another tenant's batch: %v", err)
	}
	if _, err := globex.Batches.Get(ctx, "batches/outside", nil); !isNotFound(err) {
		t.Errorf("get a batch made outside the gateway: %v", err)
	}
	refusedQuietly(t, f, before, "batch routes")

	got, err := acme.Batches.Get(ctx, job.Name, nil)
	if err != nil || got.Dest == nil || got.Dest.FileName == "" {
		t.Fatalf("get own batch: %+v %v", got, err)
	}
	if rf, err := acme.Files.Get(ctx, got.Dest.FileName, nil); err != nil || rf.Name != got.Dest.FileName {
		t.Errorf("the owner reads its batch's results file: %+v %v", rf, err)
	}
	before = len(f.requests())
	if _, err := globex.Files.Get(ctx, got.Dest.FileName, nil); !isNotFound(err) {
		t.Errorf("another tenant reads the results file: %v", err)
	}
	refusedQuietly(t, f, before, "results file")

	for _, c := range []struct {
		cl   *genai.Client
		want string
	}{{acme, job.Name}, {globex, theirs.Name}} {
		var names []string
		for b, err := range c.cl.Batches.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, b.Name)
		}
		if !slices.Equal(names, []string{c.want}) {
			t.Errorf("batches listed: %v, want [%s]", names, c.want)
		}
	}
	if err := acme.Batches.Cancel(ctx, job.Name, nil); err != nil {
		t.Errorf("cancel own batch: %v", err)
	}
	if _, err := acme.Batches.Delete(ctx, job.Name, nil); err != nil {
		t.Fatalf("delete own batch: %v", err)
	}
	before = len(f.requests())
	if _, err := acme.Batches.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	refusedQuietly(t, f, before, "after delete")
}

// TestGeminiTunedModelsAreTenantScoped: a tuned model is its creator's
// only — get, list, delete, generateContent, its operations, a batch on
// it, a tuned model built on it.
func TestGeminiTunedModelsAreTenantScoped(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	ctx := context.Background()
	acmeKey, globexKey := createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
	acme, globex := betaClient(t, h, acmeKey), betaClient(t, h, globexKey)
	data := &genai.TuningDataset{Examples: []*genai.TuningExample{{TextInput: "1", Output: "2"}}}
	job, err := acme.Tunings.Tune(ctx, "models/gemini-1.5-flash-001", data, nil)
	if err != nil || !strings.HasPrefix(job.Name, "tunedModels/") {
		t.Fatalf("tune: %+v %v", job, err)
	}
	f.add("tunedModels", "tunedModels/outside")
	theirs, err := globex.Tunings.Tune(ctx, "models/gemini-1.5-flash-001", data, nil)
	if err != nil {
		t.Fatal(err)
	}

	before := len(f.requests())
	if _, err := globex.Tunings.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("get another tenant's tuned model: %v", err)
	}
	if _, err := globex.Models.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("models.get of another tenant's tuned model: %v", err)
	}
	if _, err := globex.Models.Delete(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("delete another tenant's tuned model: %v", err)
	}
	if _, err := globex.Models.GenerateContent(ctx, job.Name, genai.Text("hi"), nil); !isNotFound(err) {
		t.Errorf("generateContent on another tenant's tuned model: %v", err)
	}
	if _, err := globex.Batches.Create(ctx, job.Name, &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{{Contents: genai.Text("x")}}}, nil); !isNotFound(err) {
		t.Errorf("a batch on another tenant's tuned model: %v", err)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1beta/" + job.Name + "/operations/op1", ""},
		{http.MethodPost, "/v1beta/tunedModels", `{"baseModel":"models/gemini-1.5-flash-001","tunedModelSource":{"tunedModel":"` + job.Name + `"}}`},
		{http.MethodPost, "/v1beta/models/" + geminiModel + ":countTokens", `{"generateContentRequest":{"model":"` + job.Name + `","contents":[{"parts":[{"text":"s"}]}]}}`},
	} {
		req, _ := http.NewRequest(c.method, h.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("X-Goog-Api-Key", globexKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var e googleError
		if res.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Error.Status != "NOT_FOUND" {
			t.Errorf("%s %s: %d %s", c.method, c.path, res.StatusCode, body)
		}
	}
	refusedQuietly(t, f, before, "tuned models")

	if m, err := acme.Models.Get(ctx, job.Name, nil); err != nil || m.Name != job.Name {
		t.Fatalf("get own tuned model: %+v %v", m, err)
	}
	if res, err := acme.Models.GenerateContent(ctx, job.Name, genai.Text("hi"), nil); err != nil || res.Text() != "tuned answer" {
		t.Fatalf("generateContent on own tuned model: %v", err)
	}
	for _, c := range []struct {
		cl   *genai.Client
		want string
	}{{acme, job.Name}, {globex, theirs.Name}} {
		var names []string
		page, err := c.cl.Models.List(ctx, &genai.ListModelsConfig{QueryBase: genai.Ptr(false), PageSize: 1})
		for ; err == nil; page, err = page.Next(ctx) {
			for _, m := range page.Items {
				names = append(names, m.Name)
			}
		}
		if !errors.Is(err, genai.ErrPageDone) {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{c.want}) {
			t.Errorf("tuned models listed: %v, want [%s]", names, c.want)
		}
	}
	if _, err := acme.Models.Delete(ctx, job.Name, nil); err != nil {
		t.Fatalf("delete own tuned model: %v", err)
	}
	before = len(f.requests())
	if _, err := acme.Models.Get(ctx, job.Name, nil); !isNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	refusedQuietly(t, f, before, "after delete")
}

// TestGeminiResourcesUnscoped: in keyless mode (one tenant) and when the
// client's own Gemini key is forwarded (its own account), files, batches
// and tuned models pass through unrecorded: those made outside the gateway
// stay reachable.
func TestGeminiResourcesUnscoped(t *testing.T) {
	for _, c := range []struct {
		name string
		up   gateway.Upstream
		key  func(h *harness) string
	}{
		{"keyless", gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"}, func(*harness) string { return "any-key-while-keyless" }},
		{"client key forwarded", gateway.Upstream{ForwardClientKey: true, Provider: "gemini"}, func(h *harness) string { return createGatewayKey(t, h, "acme") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f := newGoogleHarness(t, c.up)
			ctx := context.Background()
			cl := betaClient(t, h, c.key(h))
			mine := uploadGeminiFile(t, cl, "local")
			f.add("files", "files/outside")
			if got, err := cl.Files.Get(ctx, "files/outside", nil); err != nil || got.Name != "files/outside" {
				t.Fatalf("a file made outside the gateway: %+v %v", got, err)
			}
			if got := listFiles(t, cl); !slices.Equal(got, []string{mine.Name, "files/outside"}) {
				t.Errorf("list: %v", got)
			}
			if _, err := cl.Batches.Create(ctx, geminiModel, &genai.BatchJobSource{FileName: "files/outside"}, nil); err != nil {
				t.Errorf("a batch of a file made outside: %v", err)
			}
		})
	}
}

// TestGeminiResourceBadInput: malformed bodies on the create routes are
// Google-shaped 400s, nothing sent upstream.
func TestGeminiResourceBadInput(t *testing.T) {
	h, f := newGoogleHarness(t, gateway.Upstream{APIKey: "provider-secret", Provider: "gemini"})
	key := createGatewayKey(t, h, "acme")
	before := len(f.requests())
	for _, c := range []struct {
		path, body string
		hdr        map[string]string
	}{
		{"/v1beta/models/" + geminiModel + ":batchGenerateContent", `not json`, nil},
		{"/v1beta/models/" + geminiModel + ":batchGenerateContent", `["a"]`, nil},
		{"/v1beta/models/" + geminiModel + ":batchGenerateContent", `{"batch":{"inputConfig":{"fileName":7}}}`, nil},
		{"/v1beta/models/" + geminiModel + ":batchGenerateContent", `{"batch":{}} {}`, nil},
		{"/v1beta/models/" + geminiModel + ":batchGenerateContent", ``, nil},
		{"/v1beta/tunedModels", `{"baseModel":`, nil},
		{"/v1beta/files", `[]`, nil},
		{"/upload/v1beta/files", `{"file":`, map[string]string{"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"}},
	} {
		hdr := map[string]string{"X-Goog-Api-Key": key}
		for k, v := range c.hdr {
			hdr[k] = v
		}
		res, body := h.post(c.path, c.body, hdr)
		var e googleError
		if res.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Code != 400 || e.Error.Message == "" {
			t.Errorf("%s %q: %d %s", c.path, c.body, res.StatusCode, body)
		}
	}
	refusedQuietly(t, f, before, "bad input")
}
