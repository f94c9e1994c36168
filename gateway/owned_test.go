package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
)

// fakeResources is the OpenAI files, batches and uploads APIs and
// Anthropic's message batches and files APIs (a request with an
// anthropic-version header), as one provider account: create, list with
// cursors, get, delete, content, cancel, results, upload parts and
// complete. Lists are in creation order. It records every request it
// receives, as the provider would see them.
type fakeResources struct {
	mu      sync.Mutex
	n       int
	items   map[string][]map[string]any // "openai/files", "anthropic/message_batches", … → items in order
	content map[string][]byte           // file id (or upload id, its parts) → bytes
	seen    []string                    // "METHOD /path?query"
}

func newFakeResources(t *testing.T) (*fakeResources, string) {
	f := &fakeResources{items: map[string][]map[string]any{}, content: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeResources) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func (f *fakeResources) notFound(w http.ResponseWriter, anthropic bool, noun, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	if anthropic {
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"%s not found: %s"}}`, noun, id)
		return
	}
	fmt.Fprintf(w, `{"error":{"message":"No such %s object: %s","type":"invalid_request_error","param":"id","code":null}}`, noun, id)
}

func (f *fakeResources) find(coll, id string) (int, map[string]any) {
	for i, it := range f.items[coll] {
		if it["id"] == id {
			return i, it
		}
	}
	return -1, nil
}

func (f *fakeResources) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI())
	anth := r.Header.Get("Anthropic-Version") != ""
	p := strings.TrimPrefix(r.URL.Path, "/v1/")
	if f.serveModels(w, r, p) {
		return
	}
	var coll, rest, noun, prefix string
	for _, c := range []struct {
		anth                 bool
		path, coll, noun, id string
	}{
		{true, "messages/batches", "anthropic/message_batches", "Message batch", "msgbatch_"},
		{true, "files", "anthropic/files", "File", "file_"},
		{false, "files", "openai/files", "File", "file-"},
		{false, "batches", "openai/batches", "Batch", "batch_"},
		{false, "uploads", "openai/uploads", "Upload", "upload_"},
		{false, "vector_stores", "openai/vector_stores", "Vector store", "vs_"},
		{false, "conversations", "openai/conversations", "Conversation", "conv_"},
		{false, "evals", "openai/evals", "Eval", "eval_"},
		{false, "fine_tuning/jobs", "openai/fine_tuning/jobs", "Fine-tuning job", "ftjob-"},
	} {
		if r, ok := strings.CutPrefix(p, c.path); ok && c.anth == anth && (r == "" || r[0] == '/') {
			coll, rest, noun, prefix = c.coll, strings.TrimPrefix(r, "/"), c.noun, c.id
			break
		}
	}
	if coll == "" {
		f.notFound(w, anth, "Route", r.URL.Path)
		return
	}
	id, sub, _ := strings.Cut(rest, "/")
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case id == "" && r.Method == http.MethodPost:
		f.n++
		it := map[string]any{"id": prefix + strconv.Itoa(f.n)}
		switch coll {
		case "openai/files", "anthropic/files":
			file, hdr, err := r.FormFile("file")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(file)
			f.content[it["id"].(string)] = b
			if anth {
				it["type"], it["filename"], it["size_bytes"], it["mime_type"], it["created_at"], it["downloadable"] = "file", hdr.Filename, len(b), "text/plain", "2026-01-01T00:00:00Z", true
			} else {
				it["object"], it["filename"], it["bytes"], it["purpose"], it["created_at"], it["status"] = "file", hdr.Filename, len(b), r.FormValue("purpose"), 1700000000, "processed"
			}
		case "openai/batches":
			var body struct {
				InputFileID      string `json:"input_file_id"`
				Endpoint         string `json:"endpoint"`
				CompletionWindow string `json:"completion_window"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if i, _ := f.find("openai/files", body.InputFileID); i < 0 {
				f.notFound(w, false, "File", body.InputFileID)
				return
			}
			it["object"], it["endpoint"], it["input_file_id"], it["completion_window"], it["status"], it["created_at"] = "batch", body.Endpoint, body.InputFileID, body.CompletionWindow, "validating", 1700000000
		case "openai/uploads":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			it["object"], it["filename"], it["bytes"], it["purpose"], it["status"], it["created_at"], it["expires_at"] = "upload", body["filename"], body["bytes"], body["purpose"], "pending", 1700000000, 1700003600
		case "openai/vector_stores", "openai/conversations", "openai/evals", "openai/fine_tuning/jobs":
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			refs := []any{body["training_file"], body["validation_file"]}
			if ids, ok := body["file_ids"].([]any); ok {
				refs = append(refs, ids...)
			}
			for _, ref := range refs {
				if ref, ok := ref.(string); ok {
					if i, _ := f.find("openai/files", ref); i < 0 {
						f.notFound(w, false, "File", ref)
						return
					}
				}
			}
			for k, v := range body {
				it[k] = v
			}
			it["object"], it["created_at"] = strings.TrimSuffix(strings.ReplaceAll(strings.TrimPrefix(coll, "openai/"), "/", "."), "s"), 1700000000
		case "anthropic/message_batches":
			var body struct {
				Requests []struct {
					CustomID string `json:"custom_id"`
				} `json:"requests"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			var ids []string
			for _, q := range body.Requests {
				ids = append(ids, q.CustomID)
			}
			it["type"], it["processing_status"], it["created_at"], it["expires_at"] = "message_batch", "in_progress", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
			it["request_counts"] = map[string]int{"processing": len(ids)}
			it["custom_ids"] = ids
		}
		f.items[coll] = append(f.items[coll], it)
		reply(it)
	case id == "" && r.Method == http.MethodGet:
		q := r.URL.Query()
		limit := 20
		if n, err := strconv.Atoi(q.Get("limit")); err == nil {
			limit = n
		}
		all := f.items[coll]
		start := 0
		if after := q.Get("after") + q.Get("after_id") + q.Get("page"); after != "" {
			i, _ := f.find(coll, after)
			start = i + 1
		}
		end := min(start+limit, len(all))
		data := slices.Clone(all[start:end])
		page := map[string]any{"data": data, "has_more": end < len(all), "first_id": nil, "last_id": nil}
		if len(data) > 0 {
			page["first_id"], page["last_id"] = data[0]["id"], data[len(data)-1]["id"]
		}
		if anth && coll == "anthropic/files" {
			page["next_page"] = nil
			if end < len(all) {
				page["next_page"] = page["last_id"]
			}
		}
		if !anth {
			page["object"] = "list"
		}
		reply(page)
	default:
		i, it := f.find(coll, id)
		if it == nil {
			f.notFound(w, anth, noun, id)
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodGet && coll == "openai/batches" && it["output_file_id"] == nil:
			// The batch has run by the time it is read: the provider made
			// its output file.
			f.n++
			out := map[string]any{"id": "file-" + strconv.Itoa(f.n), "object": "file", "filename": "batch_output.jsonl", "bytes": 3,
				"purpose": "batch_output", "created_at": 1700000000, "status": "processed"}
			f.content[out["id"].(string)] = []byte("ok\n")
			f.items["openai/files"] = append(f.items["openai/files"], out)
			it["status"], it["output_file_id"] = "completed", out["id"]
			reply(it)
		case sub == "" && r.Method == http.MethodGet && coll == "openai/fine_tuning/jobs" && it["fine_tuned_model"] == nil:
			// The job has finished by the time it is read: its model exists.
			it["status"], it["fine_tuned_model"] = "succeeded", "ft:gpt-4o-mini-2024-07-18:org::"+id
			reply(it)
		case sub == "" && r.Method == http.MethodGet:
			reply(it)
		case sub == "files" && r.Method == http.MethodPost && coll == "openai/vector_stores":
			var body struct {
				FileID string `json:"file_id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if i, _ := f.find("openai/files", body.FileID); i < 0 {
				f.notFound(w, false, "File", body.FileID)
				return
			}
			reply(map[string]any{"id": body.FileID, "object": "vector_store.file", "vector_store_id": id, "status": "completed", "created_at": 1700000000})
		case sub == "" && r.Method == http.MethodDelete:
			f.items[coll] = slices.Delete(f.items[coll], i, i+1)
			switch coll {
			case "openai/files":
				reply(map[string]any{"id": id, "object": "file", "deleted": true})
			case "anthropic/files":
				reply(map[string]any{"id": id, "type": "file_deleted"})
			case "openai/vector_stores":
				reply(map[string]any{"id": id, "object": "vector_store.deleted", "deleted": true})
			default:
				reply(map[string]any{"id": id, "type": "message_batch_deleted"})
			}
		case sub == "content" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(f.content[id])
		case sub == "cancel" && r.Method == http.MethodPost:
			if anth {
				it["processing_status"] = "canceling"
			} else {
				it["status"] = "cancelling"
			}
			reply(it)
		case sub == "results" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/x-jsonl")
			for _, cid := range it["custom_ids"].([]string) {
				fmt.Fprintf(w, `{"custom_id":%q,"result":{"type":"canceled"}}`+"\n", cid)
			}
		case sub == "parts" && r.Method == http.MethodPost:
			part, _, err := r.FormFile("data")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(part)
			f.content[id] = append(f.content[id], b...)
			f.n++
			reply(map[string]any{"id": "part_" + strconv.Itoa(f.n), "object": "upload.part", "upload_id": id, "created_at": 1700000000})
		case sub == "complete" && r.Method == http.MethodPost:
			f.n++
			file := map[string]any{"id": "file-" + strconv.Itoa(f.n), "object": "file", "filename": it["filename"], "bytes": len(f.content[id]),
				"purpose": it["purpose"], "created_at": 1700000000, "status": "processed"}
			f.content[file["id"].(string)] = f.content[id]
			f.items["openai/files"] = append(f.items["openai/files"], file)
			it["status"], it["file"] = "completed", file
			reply(it)
		default:
			f.notFound(w, anth, "Route", r.URL.Path)
		}
	}
}

// serveModels answers the model list and a model (a base model and the
// models the account's fine-tuning jobs made), a job's checkpoints (one,
// at step 10) and a checkpoint's permissions; it reports false for every
// other path.
func (f *fakeResources) serveModels(w http.ResponseWriter, r *http.Request, p string) bool {
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	models := []any{map[string]any{"id": "gpt-4o-mini", "object": "model", "created": 1700000000, "owned_by": "system"}}
	for _, job := range f.items["openai/fine_tuning/jobs"] {
		if m, ok := job["fine_tuned_model"].(string); ok {
			models = append(models, map[string]any{"id": m, "object": "model", "created": 1700000000, "owned_by": "org"})
		}
	}
	switch id, isModel := strings.CutPrefix(p, "models/"); {
	case p == "models":
		reply(map[string]any{"object": "list", "data": models})
	case isModel && r.Method == http.MethodDelete:
		for _, job := range f.items["openai/fine_tuning/jobs"] {
			if job["fine_tuned_model"] == id {
				delete(job, "fine_tuned_model")
				job["status"] = "deleted"
				reply(map[string]any{"id": id, "object": "model", "deleted": true})
				return true
			}
		}
		f.notFound(w, false, "Model", id)
	case isModel:
		for _, m := range models {
			if m.(map[string]any)["id"] == id {
				reply(m)
				return true
			}
		}
		f.notFound(w, false, "Model", id)
	case strings.HasPrefix(p, "fine_tuning/jobs/") && strings.HasSuffix(p, "/checkpoints"):
		job := strings.TrimSuffix(strings.TrimPrefix(p, "fine_tuning/jobs/"), "/checkpoints")
		_, it := f.find("openai/fine_tuning/jobs", job)
		if it == nil || it["fine_tuned_model"] == nil {
			f.notFound(w, false, "Fine-tuning job", job)
			return true
		}
		reply(map[string]any{"object": "list", "has_more": false, "data": []any{map[string]any{
			"object": "fine_tuning.job.checkpoint", "id": "ftckpt_" + job, "fine_tuning_job_id": job, "step_number": 10,
			"fine_tuned_model_checkpoint": it["fine_tuned_model"].(string) + ":ckpt-step-10", "created_at": 1700000000, "metrics": map[string]any{}}}})
	case strings.HasPrefix(p, "fine_tuning/checkpoints/"):
		reply(map[string]any{"object": "list", "has_more": false, "data": []any{}})
	default:
		return false
	}
	return true
}

// newOwnedHarness is a gateway whose OpenAI and Anthropic upstream is a
// fakeResources, with two tenants; it returns their gateway keys.
func newOwnedHarness(t *testing.T) (h *harness, f *fakeResources, acmeKey, globexKey string) {
	f, url := newFakeResources(t)
	h = newHarness(t, withUpstream(url+"/v1", "sk-provider"))
	return h, f, createGatewayKey(t, h, "acme"), createGatewayKey(t, h, "globex")
}

func ownedOpenAI(h *harness, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func ownedAnthropic(h *harness, key string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
}

// openAINotFound reports whether err is OpenAI's 404 for a missing object
// (invalid_request_error), and returns the raw body.
func openAINotFound(err error) (string, bool) {
	var api *openai.Error
	if !errors.As(err, &api) {
		return "", false
	}
	return api.RawJSON(), api.StatusCode == http.StatusNotFound && api.Type == "invalid_request_error"
}

// anthropicNotFound reports whether err is Anthropic's 404 not_found_error.
func anthropicNotFound(err error) bool {
	var api *anthropic.Error
	return errors.As(err, &api) && api.StatusCode == http.StatusNotFound && strings.Contains(api.RawJSON(), `"not_found_error"`)
}

func uploadFile(t *testing.T, cl openai.Client, name, text string) *openai.FileObject {
	t.Helper()
	f, err := cl.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader(text), name, "application/jsonl"), Purpose: openai.FilePurposeBatch,
	})
	if err != nil || !strings.HasPrefix(f.ID, "file-") {
		t.Fatalf("upload %s: %+v %v", name, f, err)
	}
	return f
}

func fileIDs(files []openai.FileObject) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.ID)
	}
	return out
}

// assertUntouched fails when the provider received any request since it
// had received the first n.
func assertUntouched(t *testing.T, f *fakeResources, n int, what string) {
	t.Helper()
	if got := f.requests(); len(got) != n {
		t.Errorf("%s reached the provider: %q", what, got[n:])
	}
}

// TestOwnedOpenAIFilesAndBatches: through the official OpenAI SDK, each
// tenant uploads, lists, reads, downloads, batches and deletes its own
// files; another tenant's file or batch — get, content, delete, batch
// input, get batch, cancel — is OpenAI's 404 for a missing object, the
// same answer as for an id that does not exist, with nothing sent
// upstream; lists show each tenant its own items only, first_id and
// last_id naming its own; a delete forgets the record.
func TestOwnedOpenAIFilesAndBatches(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedOpenAI(h, acmeKey), ownedOpenAI(h, globexKey)
	mine := uploadFile(t, acme, "acme.jsonl", "acme's requests\n")
	theirs := uploadFile(t, globex, "globex.jsonl", "globex's requests\n")

	// Globex against acme's file: refused before the provider, as a file
	// that does not exist.
	before := len(f.requests())
	_, err := globex.Files.Get(ctx, mine.ID)
	body, ok := openAINotFound(err)
	if !ok {
		t.Fatalf("get another tenant's file: %v", err)
	}
	_, err = globex.Files.Get(ctx, "file-nope")
	if missing, _ := openAINotFound(err); strings.ReplaceAll(body, mine.ID, "file-nope") != missing {
		t.Errorf("another tenant's file answers %s, a missing one %s", body, missing)
	}
	if !strings.Contains(body, `"param":"id"`) || !strings.Contains(body, `"code":null`) {
		t.Errorf("not OpenAI's not-found answer: %s", body)
	}
	if _, err := globex.Files.Content(ctx, mine.ID); err == nil {
		t.Errorf("another tenant's file content was served")
	} else if _, ok := openAINotFound(err); !ok {
		t.Errorf("content of another tenant's file: %v", err)
	}
	if _, err := globex.Files.Delete(ctx, mine.ID); err == nil {
		t.Errorf("another tenant's file was deleted")
	} else if _, ok := openAINotFound(err); !ok {
		t.Errorf("delete another tenant's file: %v", err)
	}
	_, err = globex.Batches.New(ctx, openai.BatchNewParams{InputFileID: mine.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if body, ok := openAINotFound(err); !ok || !strings.Contains(body, mine.ID) {
		t.Errorf("a batch of another tenant's file: %v", err)
	}
	assertUntouched(t, f, before, "a use of another tenant's file")

	// Each tenant's list holds its own file only.
	for _, c := range []struct {
		cl   openai.Client
		want string
	}{{acme, mine.ID}, {globex, theirs.ID}} {
		page, err := c.cl.Files.List(ctx, openai.FileListParams{})
		if err != nil || !slices.Equal(fileIDs(page.Data), []string{c.want}) {
			t.Fatalf("list: %v %v, want [%s]", fileIDs(page.Data), err, c.want)
		}
		raw := page.RawJSON()
		if strings.Contains(raw, map[string]string{mine.ID: theirs.ID, theirs.ID: mine.ID}[c.want]) {
			t.Errorf("a list names another tenant's file: %s", raw)
		}
		if page.JSON.ExtraFields["last_id"].Raw() != `"`+c.want+`"` || page.JSON.ExtraFields["first_id"].Raw() != `"`+c.want+`"` {
			t.Errorf("first_id/last_id do not name the page's own items: %s", raw)
		}
	}

	// The owner reads, downloads and batches its file.
	if got, err := acme.Files.Get(ctx, mine.ID); err != nil || got.ID != mine.ID {
		t.Fatalf("get own file: %+v %v", got, err)
	}
	res, err := acme.Files.Content(ctx, mine.ID)
	if err != nil {
		t.Fatalf("content of own file: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "acme's requests\n" {
		t.Fatalf("content %q", b)
	}
	newBatch := func(cl openai.Client, file string) *openai.Batch {
		t.Helper()
		bt, err := cl.Batches.New(ctx, openai.BatchNewParams{InputFileID: file,
			Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil || !strings.HasPrefix(bt.ID, "batch_") {
			t.Fatalf("batch of own file: %+v %v", bt, err)
		}
		return bt
	}
	myBatch, theirBatch := newBatch(acme, mine.ID), newBatch(globex, theirs.ID)

	before = len(f.requests())
	if _, err := globex.Batches.Get(ctx, myBatch.ID); err == nil {
		t.Errorf("another tenant's batch was served")
	} else if body, ok := openAINotFound(err); !ok || !strings.Contains(body, myBatch.ID) {
		t.Errorf("get another tenant's batch: %v", err)
	}
	if _, err := globex.Batches.Cancel(ctx, myBatch.ID); err == nil {
		t.Errorf("another tenant's batch was cancelled")
	} else if _, ok := openAINotFound(err); !ok {
		t.Errorf("cancel another tenant's batch: %v", err)
	}
	assertUntouched(t, f, before, "a use of another tenant's batch")
	for _, c := range []struct {
		cl   openai.Client
		want string
	}{{acme, myBatch.ID}, {globex, theirBatch.ID}} {
		page, err := c.cl.Batches.List(ctx, openai.BatchListParams{})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != c.want {
			t.Fatalf("batch list: %+v %v, want [%s]", page, err, c.want)
		}
	}
	if bt, err := acme.Batches.Cancel(ctx, myBatch.ID); err != nil || bt.Status != "cancelling" {
		t.Fatalf("cancel own batch: %+v %v", bt, err)
	}

	// The output file the provider made for a batch is its owner's once
	// the batch's answer names it.
	done, err := acme.Batches.Get(ctx, theirBatch.ID)
	if err == nil {
		t.Fatalf("another tenant's batch was served: %+v", done)
	}
	done, err = globex.Batches.Get(ctx, theirBatch.ID)
	if err != nil || done.OutputFileID == "" {
		t.Fatalf("get own batch: %+v %v", done, err)
	}
	res, err = globex.Files.Content(ctx, done.OutputFileID)
	if err != nil {
		t.Fatalf("the own batch's output file: %v", err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "ok\n" {
		t.Fatalf("output content %q", b)
	}
	if _, err := acme.Files.Content(ctx, done.OutputFileID); err == nil {
		t.Fatalf("another tenant's batch output was served")
	}

	// A delete forgets the record: the id is then nobody's.
	if del, err := acme.Files.Delete(ctx, mine.ID); err != nil || !del.Deleted {
		t.Fatalf("delete own file: %+v %v", del, err)
	}
	own, err := h.DB.OwnedResources(ctx, "acme", groundhog.ResourceKindOpenAIFile, []string{mine.ID})
	if err != nil || len(own) != 0 {
		t.Fatalf("the deleted file is still recorded: %v %v", own, err)
	}
	before = len(f.requests())
	if _, err := acme.Files.Get(ctx, mine.ID); err == nil {
		t.Fatalf("a deleted file is still served")
	}
	assertUntouched(t, f, before, "a get of a forgotten file")
}

// TestOwnedListSkipsForeignPages: a provider page holding only another
// tenant's files is not answered as an empty page (where the SDK's
// auto-pager stops): the gateway reads on, so paging by the SDK reaches
// every file of the tenant and none of another's.
func TestOwnedListSkipsForeignPages(t *testing.T) {
	h, _, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedOpenAI(h, acmeKey), ownedOpenAI(h, globexKey)
	for i := range 5 {
		uploadFile(t, globex, fmt.Sprintf("g%d.jsonl", i), "globex\n")
	}
	a1 := uploadFile(t, acme, "a1.jsonl", "acme\n")
	for i := range 5 {
		uploadFile(t, globex, fmt.Sprintf("h%d.jsonl", i), "globex\n")
	}
	a2 := uploadFile(t, acme, "a2.jsonl", "acme\n")
	var got []string
	it := acme.Files.ListAutoPaging(ctx, openai.FileListParams{Limit: openai.Int(2)})
	for it.Next() {
		got = append(got, it.Current().ID)
	}
	if err := it.Err(); err != nil || !slices.Equal(got, []string{a1.ID, a2.ID}) {
		t.Fatalf("acme's files by page: %v %v, want [%s %s]", got, err, a1.ID, a2.ID)
	}
}

// TestOwnedOpenAIUploads: an Upload, its parts and its completion are the
// tenant's own; the File a completed Upload makes is the tenant's, not
// another's.
func TestOwnedOpenAIUploads(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedOpenAI(h, acmeKey), ownedOpenAI(h, globexKey)
	up, err := acme.Uploads.New(ctx, openai.UploadNewParams{Bytes: 10, Filename: "big.jsonl", MimeType: "application/jsonl", Purpose: openai.FilePurposeBatch})
	if err != nil || !strings.HasPrefix(up.ID, "upload_") {
		t.Fatalf("create upload: %+v %v", up, err)
	}
	before := len(f.requests())
	if _, err := globex.Uploads.Parts.New(ctx, up.ID, openai.UploadPartNewParams{Data: strings.NewReader("intruder")}); err == nil {
		t.Errorf("a part was added to another tenant's upload")
	} else if _, ok := openAINotFound(err); !ok {
		t.Errorf("part of another tenant's upload: %v", err)
	}
	if _, err := globex.Uploads.Complete(ctx, up.ID, openai.UploadCompleteParams{PartIDs: []string{"part_1"}}); err == nil {
		t.Errorf("another tenant's upload was completed")
	}
	if _, err := globex.Uploads.Cancel(ctx, up.ID); err == nil {
		t.Errorf("another tenant's upload was cancelled")
	}
	assertUntouched(t, f, before, "a use of another tenant's upload")
	part, err := acme.Uploads.Parts.New(ctx, up.ID, openai.UploadPartNewParams{Data: strings.NewReader("0123456789")})
	if err != nil {
		t.Fatalf("add part: %v", err)
	}
	done, err := acme.Uploads.Complete(ctx, up.ID, openai.UploadCompleteParams{PartIDs: []string{part.ID}})
	if err != nil || done.File.ID == "" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	if got, err := acme.Files.Get(ctx, done.File.ID); err != nil || got.Bytes != 10 {
		t.Fatalf("the completed upload's file for its owner: %+v %v", got, err)
	}
	if _, err := globex.Files.Get(ctx, done.File.ID); err == nil {
		t.Fatalf("the completed upload's file was served to another tenant")
	}
}

// TestOwnedAnthropicBatchesAndFiles: through the official Anthropic SDK,
// message batches and (beta) files are their creator's: another tenant's
// get, results, cancel, delete, metadata and download are Anthropic's 404
// not_found_error with nothing sent upstream, lists show each tenant its
// own, and the owner uses them.
func TestOwnedAnthropicBatchesAndFiles(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedAnthropic(h, acmeKey), ownedAnthropic(h, globexKey)
	newBatch := func(cl anthropic.Client, id string) string {
		t.Helper()
		b, err := cl.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{{
			CustomID: id,
			Params: anthropic.MessageBatchNewParamsRequestParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}},
		}}})
		if err != nil || !strings.HasPrefix(b.ID, "msgbatch_") {
			t.Fatalf("create batch: %+v %v", b, err)
		}
		return b.ID
	}
	mine, theirs := newBatch(acme, "acme-1"), newBatch(globex, "globex-1")
	upload := func(cl anthropic.Client, text string) string {
		t.Helper()
		m, err := cl.Beta.Files.Upload(ctx, anthropic.BetaFileUploadParams{File: anthropic.File(strings.NewReader(text), "notes.txt", "text/plain")})
		if err != nil || !strings.HasPrefix(m.ID, "file_") {
			t.Fatalf("upload: %+v %v", m, err)
		}
		return m.ID
	}
	myFile, theirFile := upload(acme, "acme's notes"), upload(globex, "globex's notes")

	before := len(f.requests())
	checks := map[string]error{}
	_, checks["get batch"] = globex.Messages.Batches.Get(ctx, mine, anthropic.MessageBatchGetParams{})
	_, checks["cancel batch"] = globex.Messages.Batches.Cancel(ctx, mine, anthropic.MessageBatchCancelParams{})
	_, checks["delete batch"] = globex.Messages.Batches.Delete(ctx, mine, anthropic.MessageBatchDeleteParams{})
	stream := globex.Messages.Batches.ResultsStreaming(ctx, mine, anthropic.MessageBatchResultsParams{})
	for stream.Next() {
	}
	checks["batch results"] = stream.Err()
	_, checks["file metadata"] = globex.Beta.Files.GetMetadata(ctx, myFile, anthropic.BetaFileGetMetadataParams{})
	_, checks["delete file"] = globex.Beta.Files.Delete(ctx, myFile, anthropic.BetaFileDeleteParams{})
	_, checks["download file"] = globex.Beta.Files.Download(ctx, myFile, anthropic.BetaFileDownloadParams{})
	for what, err := range checks {
		if !anthropicNotFound(err) {
			t.Errorf("%s of another tenant: %v, want 404 not_found_error", what, err)
		}
	}
	assertUntouched(t, f, before, "a use of another tenant's batch or file")

	for _, c := range []struct {
		cl          anthropic.Client
		batch, file string
	}{{acme, mine, myFile}, {globex, theirs, theirFile}} {
		page, err := c.cl.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != c.batch || page.FirstID != c.batch || page.LastID != c.batch {
			t.Fatalf("batch list: %+v %v, want [%s]", page, err, c.batch)
		}
		files, err := c.cl.Beta.Files.List(ctx, anthropic.BetaFileListParams{})
		if err != nil || len(files.Data) != 1 || files.Data[0].ID != c.file {
			t.Fatalf("file list: %+v %v, want [%s]", files, err, c.file)
		}
	}

	stream = acme.Messages.Batches.ResultsStreaming(ctx, mine, anthropic.MessageBatchResultsParams{})
	var results []string
	for stream.Next() {
		results = append(results, stream.Current().CustomID)
	}
	if err := stream.Err(); err != nil || !slices.Equal(results, []string{"acme-1"}) {
		t.Fatalf("own batch results: %v %v", results, err)
	}
	res, err := acme.Beta.Files.Download(ctx, myFile, anthropic.BetaFileDownloadParams{})
	if err != nil {
		t.Fatalf("download own file: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "acme's notes" {
		t.Fatalf("own file content %q", b)
	}
	if _, err := acme.Messages.Batches.Delete(ctx, mine, anthropic.MessageBatchDeleteParams{}); err != nil {
		t.Fatalf("delete own batch: %v", err)
	}
	if own, err := h.DB.OwnedResources(ctx, "acme", groundhog.ResourceKindAnthropicMessageBatch, []string{mine}); err != nil || len(own) != 0 {
		t.Fatalf("the deleted batch is still recorded: %v %v", own, err)
	}
}

// TestOwnedBatchInputFileSpellings: a batch body naming another tenant's
// file under any spelling of input_file_id that a reader could take for it
// (another case, an escaped name) is refused before the provider; a body
// that is not a JSON object is a 400.
func TestOwnedBatchInputFileSpellings(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	mine := uploadFile(t, ownedOpenAI(h, acmeKey), "acme.jsonl", "acme\n")
	own := uploadFile(t, ownedOpenAI(h, globexKey), "globex.jsonl", "globex\n")
	before := len(f.requests())
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"input_file_id":"` + mine.ID + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`, 404},
		{`{"Input_File_Id":"` + mine.ID + `","input_file_id":"` + own.ID + `"}`, 404},
		{`{"input_file_id":"` + own.ID + `","input\u005ffile_id":"` + mine.ID + `"}`, 404},
		{`["input_file_id"]`, 400},
		{`{"input_file_id":`, 400},
	} {
		req, _ := http.NewRequest("POST", h.URL+"/v1/batches", bytes.NewReader([]byte(c.body)))
		req.Header.Set("Authorization", "Bearer "+globexKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.body, res.StatusCode, b, c.want)
		}
	}
	assertUntouched(t, f, before, "a batch body naming another tenant's file")
	// The multipart upload is answered as the provider answered it.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "batch")
	_ = mw.Close()
	req, _ := http.NewRequest("POST", h.URL+"/v1/files", &buf)
	req.Header.Set("Authorization", "Bearer "+globexKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("an upload without a file: %d, want the provider's 400", res.StatusCode)
	}
}

// TestOwnedFilesInModelCalls: a model call naming another tenant's file —
// an input_file of the Responses API (through the SDK), a file part of
// Chat Completions, an Anthropic document of type file (in a call or a
// token count), under an escaped member name — is a 404 with nothing sent upstream; the tenant's own file
// reaches the provider, and so does a call whose metadata or tool input
// merely holds a member named file_id.
func TestOwnedFilesInModelCalls(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedOpenAI(h, acmeKey), ownedOpenAI(h, globexKey)
	mine := uploadFile(t, acme, "acme.pdf", "acme's report")
	theirs := uploadFile(t, globex, "globex.pdf", "globex's report")
	acmeA := ownedAnthropic(h, acmeKey)
	am, err := acmeA.Beta.Files.Upload(ctx, anthropic.BetaFileUploadParams{File: anthropic.File(strings.NewReader("acme"), "a.txt", "text/plain")})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(cl openai.Client, file string) error {
		_, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{
			OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputFile: &responses.ResponseInputFileParam{FileID: openai.String(file)}},
				{OfInputText: &responses.ResponseInputTextParam{Text: "summarise"}},
			}, responses.EasyInputMessageRoleUser)},
		}})
		return err
	}
	before := len(f.requests())
	var api *openai.Error
	if err := ask(globex, mine.ID); !errors.As(err, &api) || api.StatusCode != http.StatusNotFound || !strings.Contains(api.RawJSON(), mine.ID) {
		t.Errorf("a Responses call on another tenant's file: %v", err)
	}
	raw := func(path, key, body string, hdr ...string) int {
		req, _ := http.NewRequest("POST", h.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	chat := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"` + mine.ID + `"}}]}]}`
	escaped := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"file","file":{"file\u005fid":"` + mine.ID + `"}}]}]}`
	doc := `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"` + am.ID + `"}}]}]}`
	count := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"` + am.ID + `"}}]}]}`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", chat}, {"/v1/chat/completions", escaped}, {"/v1/messages", doc}, {"/v1/messages/count_tokens", count},
	} {
		if got := raw(c.path, globexKey, c.body, "anthropic-version", "2023-06-01"); got != http.StatusNotFound {
			t.Errorf("%s naming another tenant's file: %d, want 404", c.path, got)
		}
	}
	assertUntouched(t, f, before, "a model call on another tenant's file")

	// The owner's own files, and file_id members that are the caller's own
	// data, reach the provider.
	sent := func(what string, call func()) {
		t.Helper()
		n := len(f.requests())
		call()
		if got := f.requests(); len(got) == n || !strings.HasPrefix(got[n], "POST /v1/") {
			t.Errorf("%s did not reach the provider", what)
		}
	}
	sent("own file in Responses", func() { _ = ask(acme, mine.ID) })
	sent("own file in chat", func() { raw("/v1/chat/completions", acmeKey, chat) })
	sent("own file in messages", func() { raw("/v1/messages", acmeKey, doc, "anthropic-version", "2023-06-01") })
	sent("own file in count_tokens", func() { raw("/v1/messages/count_tokens", acmeKey, count, "anthropic-version", "2023-06-01") })
	sent("metadata", func() {
		raw("/v1/chat/completions", globexKey, `{"model":"gpt-4o-mini","metadata":{"file_id":"`+mine.ID+`"},"messages":[{"role":"user","content":"hi `+theirs.ID+`"}]}`)
	})
	sent("tool input", func() {
		raw("/v1/messages", globexKey, `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"file_id":"`+am.ID+`"}}]}]}`, "anthropic-version", "2023-06-01")
	})
}

// TestOwnedVectorStoresConversationsJobsAndEvals: vector stores,
// conversations, evals, fine-tuning jobs and the models those jobs make
// belong to the tenant that created them. Another tenant's — by path, in a
// create's body (a vector store's files, a job's training file), in a
// Responses call (file_search's vector_store_ids, conversation) or as a
// chat call's model — is a 404 with nothing sent upstream; lists show each
// tenant its own.
func TestOwnedVectorStoresConversationsJobsAndEvals(t *testing.T) {
	h, f, acmeKey, globexKey := newOwnedHarness(t)
	ctx := context.Background()
	acme, globex := ownedOpenAI(h, acmeKey), ownedOpenAI(h, globexKey)
	mine := uploadFile(t, acme, "acme.jsonl", "acme's data\n")
	theirs := uploadFile(t, globex, "globex.jsonl", "globex's data\n")
	do := func(method, path, key, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b)
	}
	refused := func(what string, call func() (int, string)) {
		t.Helper()
		n := len(f.requests())
		if code, body := call(); code != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", what, code, body)
		}
		assertUntouched(t, f, n, what)
	}
	reached := func(what string, call func() (int, string)) {
		t.Helper()
		n := len(f.requests())
		call()
		if len(f.requests()) == n {
			t.Errorf("%s did not reach the provider", what)
		}
	}

	// Vector stores, through the SDK.
	vs, err := acme.VectorStores.New(ctx, openai.VectorStoreNewParams{Name: openai.String("acme"), FileIDs: []string{mine.ID}})
	if err != nil || !strings.HasPrefix(vs.ID, "vs_") {
		t.Fatalf("acme's vector store: %+v %v", vs, err)
	}
	n := len(f.requests())
	if _, err := globex.VectorStores.New(ctx, openai.VectorStoreNewParams{Name: openai.String("stolen"), FileIDs: []string{mine.ID}}); err == nil {
		t.Error("globex made a vector store of acme's file")
	} else if body, ok := openAINotFound(err); !ok || !strings.Contains(body, mine.ID) {
		t.Errorf("a vector store of another tenant's file: %v", err)
	}
	for what, err := range map[string]error{
		"get":    func() error { _, err := globex.VectorStores.Get(ctx, vs.ID); return err }(),
		"delete": func() error { _, err := globex.VectorStores.Delete(ctx, vs.ID); return err }(),
		"add a file": func() error {
			_, err := globex.VectorStores.Files.New(ctx, vs.ID, openai.VectorStoreFileNewParams{FileID: theirs.ID})
			return err
		}(),
	} {
		if _, ok := openAINotFound(err); !ok {
			t.Errorf("globex's %s on acme's vector store: %v", what, err)
		}
	}
	assertUntouched(t, f, n, "another tenant's vector store")
	if _, err := acme.VectorStores.Files.New(ctx, vs.ID, openai.VectorStoreFileNewParams{FileID: mine.ID}); err != nil {
		t.Errorf("acme adds its own file to its vector store: %v", err)
	}
	own, err := globex.VectorStores.New(ctx, openai.VectorStoreNewParams{Name: openai.String("globex"), FileIDs: []string{theirs.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{acmeKey: vs.ID, globexKey: own.ID} {
		cl := ownedOpenAI(h, key)
		page, err := cl.VectorStores.List(ctx, openai.VectorStoreListParams{})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != want {
			t.Errorf("list: %+v %v, want only %s", page, err, want)
		}
	}
	search := func(store string) string {
		return `{"model":"gpt-4o-mini","input":"find it","tools":[{"type":"file_search","vector_store_ids":["` + store + `"]}]}`
	}
	refused("file_search on another tenant's vector store", func() (int, string) { return do("POST", "/v1/responses", globexKey, search(vs.ID)) })
	reached("file_search on an own vector store", func() (int, string) { return do("POST", "/v1/responses", acmeKey, search(vs.ID)) })

	// Conversations.
	code, body := do("POST", "/v1/conversations", acmeKey, `{"metadata":{"topic":"q3"}}`)
	conv := wire.ResourceID([]byte(body))
	if code != http.StatusOK || !strings.HasPrefix(conv, "conv_") {
		t.Fatalf("acme's conversation: %d %s", code, body)
	}
	refused("get another tenant's conversation", func() (int, string) { return do("GET", "/v1/conversations/"+conv, globexKey, "") })
	refused("a Responses call in another tenant's conversation", func() (int, string) {
		return do("POST", "/v1/responses", globexKey, `{"model":"gpt-4o-mini","input":"hi","conversation":"`+conv+`"}`)
	})
	refused("the object form of conversation", func() (int, string) {
		return do("POST", "/v1/responses", globexKey, `{"model":"gpt-4o-mini","input":"hi","conversation":{"id":"`+conv+`"}}`)
	})
	reached("an own conversation", func() (int, string) { return do("GET", "/v1/conversations/"+conv, acmeKey, "") })

	// Evals, and an eval run's file.
	code, body = do("POST", "/v1/evals", acmeKey, `{"name":"acme","data_source_config":{"type":"custom","item_schema":{"type":"object"}},"testing_criteria":[]}`)
	eval := wire.ResourceID([]byte(body))
	if code != http.StatusOK || !strings.HasPrefix(eval, "eval_") {
		t.Fatalf("acme's eval: %d %s", code, body)
	}
	refused("get another tenant's eval", func() (int, string) { return do("GET", "/v1/evals/"+eval, globexKey, "") })
	refused("a run on another tenant's eval", func() (int, string) { return do("POST", "/v1/evals/"+eval+"/runs", globexKey, `{"name":"r"}`) })
	refused("an eval run over another tenant's file", func() (int, string) {
		return do("POST", "/v1/evals", globexKey, `{"name":"g","data_source":{"type":"jsonl","source":{"type":"file_id","id":"`+mine.ID+`"}}}`)
	})
	if code, body := do("GET", "/v1/evals", globexKey, ""); code != http.StatusOK || strings.Contains(body, eval) {
		t.Errorf("globex's eval list: %d %s", code, body)
	}

	// Fine-tuning jobs and their models, through the SDK.
	if _, err := globex.FineTuning.Jobs.New(ctx, openai.FineTuningJobNewParams{Model: "gpt-4o-mini-2024-07-18", TrainingFile: mine.ID}); err == nil {
		t.Error("globex trained on acme's file")
	}
	job, err := acme.FineTuning.Jobs.New(ctx, openai.FineTuningJobNewParams{Model: "gpt-4o-mini-2024-07-18", TrainingFile: mine.ID})
	if err != nil || !strings.HasPrefix(job.ID, "ftjob-") {
		t.Fatalf("acme's fine-tuning job: %+v %v", job, err)
	}
	if _, err := globex.FineTuning.Jobs.Get(ctx, job.ID); err == nil {
		t.Error("globex read acme's fine-tuning job")
	}
	done, err := acme.FineTuning.Jobs.Get(ctx, job.ID)
	if err != nil || !strings.HasPrefix(done.FineTunedModel, "ft:") {
		t.Fatalf("acme's finished job: %+v %v", done, err)
	}
	chat := `{"model":"` + done.FineTunedModel + `","messages":[{"role":"user","content":"hi"}]}`
	refused("a chat call on another tenant's fine-tuned model", func() (int, string) { return do("POST", "/v1/chat/completions", globexKey, chat) })
	reached("a chat call on an own fine-tuned model", func() (int, string) { return do("POST", "/v1/chat/completions", acmeKey, chat) })

	// The model list and a model: another tenant's fine-tuned model is not
	// there.
	if _, err := globex.Models.Get(ctx, done.FineTunedModel); err == nil {
		t.Error("globex read acme's fine-tuned model")
	}
	if m, err := acme.Models.Get(ctx, done.FineTunedModel); err != nil || m.ID != done.FineTunedModel {
		t.Errorf("acme's fine-tuned model: %+v %v", m, err)
	}
	listed := func(cl openai.Client) []string {
		t.Helper()
		page, err := cl.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if ids := listed(globex); slices.Contains(ids, done.FineTunedModel) || !slices.Contains(ids, "gpt-4o-mini") {
		t.Errorf("globex's model list: %v", ids)
	}
	if ids := listed(acme); !slices.Contains(ids, done.FineTunedModel) || !slices.Contains(ids, "gpt-4o-mini") {
		t.Errorf("acme's model list: %v", ids)
	}

	// A job's checkpoints are models of the job's owner: usable by it, and
	// their permissions its own.
	refused("another tenant's job's checkpoints", func() (int, string) {
		return do("GET", "/v1/fine_tuning/jobs/"+job.ID+"/checkpoints", globexKey, "")
	})
	ckpts, err := acme.FineTuning.Jobs.Checkpoints.List(ctx, job.ID, openai.FineTuningJobCheckpointListParams{})
	if err != nil || len(ckpts.Data) != 1 {
		t.Fatalf("acme's checkpoints: %+v %v", ckpts, err)
	}
	ckpt := ckpts.Data[0].FineTunedModelCheckpoint
	ckptChat := `{"model":"` + ckpt + `","messages":[{"role":"user","content":"hi"}]}`
	refused("a chat call on another tenant's checkpoint", func() (int, string) { return do("POST", "/v1/chat/completions", globexKey, ckptChat) })
	reached("a chat call on an own checkpoint", func() (int, string) { return do("POST", "/v1/chat/completions", acmeKey, ckptChat) })
	for _, model := range []string{done.FineTunedModel, ckpt} {
		perms := "/v1/fine_tuning/checkpoints/" + model + "/permissions"
		refused("sharing another tenant's model "+model, func() (int, string) {
			return do("POST", perms, globexKey, `{"project_ids":["proj_globex"]}`)
		})
		refused("reading another tenant's model's permissions", func() (int, string) { return do("GET", perms, globexKey, "") })
		refused("revoking another tenant's model's permission", func() (int, string) { return do("DELETE", perms+"/cp_1", globexKey, "") })
		reached("reading an own model's permissions", func() (int, string) { return do("GET", perms, acmeKey, "") })
	}

	// Deleting a fine-tuned model: only its owner's reaches the provider,
	// and the model is then no one's.
	refused("deleting another tenant's fine-tuned model", func() (int, string) {
		return do("DELETE", "/v1/models/"+done.FineTunedModel, globexKey, "")
	})
	if code, body := do("DELETE", "/v1/models/"+done.FineTunedModel, acmeKey, ""); code != http.StatusOK {
		t.Fatalf("acme deleting its fine-tuned model: %d %s", code, body)
	}
	refused("a chat call on a deleted fine-tuned model", func() (int, string) { return do("POST", "/v1/chat/completions", acmeKey, chat) })
}
