package gemini

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// The Gemini API resources a tenant creates besides explicit caches —
// files, batches, tuned models, file search stores and the operations of
// predictLongRunning — as the gateway reads their routes and answers to
// scope each to the tenant that created it. A resource's name is Google's:
// "files/{id}", "batches/{id}", "tunedModels/{id}",
// "fileSearchStores/{id}", "models/{model}/operations/{id}".

// The collections of the resource routes, and the prefix of their names.
const (
	Files            = "files"
	Batches          = "batches"
	TunedModels      = "tunedModels"
	FileSearchStores = "fileSearchStores"
	// ModelOperations is the collection of the operations a model's
	// predictLongRunning starts: models/{model}/operations/{id}.
	ModelOperations = "operations"
)

// MethodPredictLongRunning is the model method that starts an operation
// (a video generation), answered {"name":"models/{model}/operations/{id}"}.
const MethodPredictLongRunning = "predictLongRunning"

// stableCollections are the resource collections Google also serves under
// /v1/. Files and batches are not among them: on the gateway /v1/files and
// /v1/batches are OpenAI's routes.
var stableCollections = []string{TunedModels, FileSearchStores}

// The model methods that create a batch.
const (
	MethodBatchGenerate   = "batchGenerateContent"
	MethodAsyncBatchEmbed = "asyncBatchEmbedContent"
)

// IsBatchCreate reports whether a models/{model}:{method} (or
// tunedModels/{id}:{method}) method creates a batch.
func IsBatchCreate(method string) bool {
	return method == MethodBatchGenerate || method == MethodAsyncBatchEmbed
}

// UploadPrefix starts the path of the media upload routes
// (/upload/v1beta/files, /upload/v1beta/fileSearchStores/{id}:uploadToFileSearchStore):
// a resumable upload's start and its chunks, a multipart or raw upload.
const UploadPrefix = "/upload/" + APIVersion + "/"

// StableUploadPrefix is UploadPrefix under the stable API version.
const StableUploadPrefix = "/upload/" + StableVersion + "/"

// IsUploadPath reports whether path is a media upload route, under either
// API version.
func IsUploadPath(path string) bool {
	return strings.HasPrefix(path, UploadPrefix) || strings.HasPrefix(path, StableUploadPrefix)
}

// UploadTarget returns the resource a media upload path writes into: ""
// for a file (/upload/v1beta/files), "fileSearchStores/{id}" for
// /upload/v1beta/fileSearchStores/{id}:uploadToFileSearchStore; ok is
// false for any other upload path.
func UploadTarget(escapedPath string) (store string, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, UploadPrefix)
	if !found {
		rest, found = strings.CutPrefix(escapedPath, StableUploadPrefix)
	}
	if !found {
		return "", false
	}
	if rest == Files {
		return "", true
	}
	id, found := strings.CutPrefix(rest, FileSearchStores+"/")
	id, method, _ := strings.Cut(id, ":")
	if !found || id == "" || strings.Contains(id, "/") || method != "uploadToFileSearchStore" {
		return "", false
	}
	return FileSearchStores + "/" + id, true
}

// Resource is a request path of the files, batches, tunedModels,
// fileSearchStores routes or of a model's operations.
type Resource struct {
	Collection string // Files, Batches, TunedModels, FileSearchStores or ModelOperations
	Name       string // "files/{id}", …, "models/{model}/operations/{id}"; "" for the collection itself
	Method     string // after a colon: files/{id}:download, batches/{id}:cancel, files:register, tunedModels/{id}:generateContent, fileSearchStores/{id}:importFile
	Sub        string // what follows the name after a slash: "operations/{op}", "documents/{doc}", "upload/operations/{op}"
	Model      string // the model of a ModelOperations path, "models/{model}"
}

// ResourcePath reads an escaped request path /v1beta/files[/{id}…],
// /v1beta/batches[/{id}…], /v1beta/tunedModels[/{id}…],
// /v1beta/fileSearchStores[/{id}…] or /v1beta/models/{model}/operations[/{id}…]
// — the last three also under /v1/; ok is false for any other path. The
// id is kept as it is escaped, so an escape can only name a resource that
// no tenant owns.
func ResourcePath(escapedPath string) (res Resource, ok bool) {
	collections := []string{Files, Batches, TunedModels, FileSearchStores}
	rest, found := strings.CutPrefix(escapedPath, "/"+APIVersion+"/")
	if !found {
		rest, found = strings.CutPrefix(escapedPath, "/"+StableVersion+"/")
		collections = stableCollections
	}
	if !found {
		return res, false
	}
	if m, ok := strings.CutPrefix(rest, "models/"); ok {
		model, tail, _ := strings.Cut(m, "/")
		if model == "" || strings.Contains(model, ":") {
			return res, false
		}
		tail, found := strings.CutPrefix(tail, ModelOperations)
		if !found || tail != "" && tail[0] != '/' {
			return res, false
		}
		res = Resource{Collection: ModelOperations, Model: "models/" + model}
		if id := strings.TrimPrefix(tail, "/"); id != "" {
			id, sub, _ := strings.Cut(id, "/")
			if i := strings.IndexByte(id, ':'); i >= 0 && sub == "" {
				id, res.Method = id[:i], id[i+1:]
			}
			res.Name, res.Sub = res.Model+"/"+ModelOperations+"/"+id, sub
		}
		return res, true
	}
	for _, c := range collections {
		tail, cut := strings.CutPrefix(rest, c)
		if !cut {
			continue
		}
		switch {
		case tail == "":
			return Resource{Collection: c}, true
		case tail[0] == ':':
			return Resource{Collection: c, Method: tail[1:]}, true
		case tail[0] != '/':
			continue
		}
		id, sub, _ := strings.Cut(tail[1:], "/")
		if i := strings.IndexByte(id, ':'); i >= 0 && sub == "" {
			id, res.Method = id[:i], id[i+1:]
		}
		res.Collection, res.Name, res.Sub = c, c+"/"+id, sub
		return res, true
	}
	return res, false
}

// KnownCollection reports whether path (/v1beta/… or /v1/…) is on a
// collection the gateway serves: models, and the collections of the
// resources it keeps per tenant (files, batches, tunedModels,
// cachedContents, fileSearchStores).
func KnownCollection(path string) bool {
	rest, ok := strings.CutPrefix(path, "/"+APIVersion+"/")
	if !ok {
		rest, ok = strings.CutPrefix(path, "/"+StableVersion+"/")
	}
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/:"); i >= 0 {
		rest = rest[:i]
	}
	switch rest {
	case "models", Files, Batches, TunedModels, "cachedContents", FileSearchStores:
		return true
	}
	return false
}

// Refs are the resources a request body names.
type Refs struct {
	Files       []string // "files/{id}"
	Caches      []string // "cachedContents/{id}"
	TunedModels []string // "tunedModels/{id}"
	// FileSearchStores are the stores a fileSearch tool searches
	// (fileSearchStoreNames): "fileSearchStores/{id}".
	FileSearchStores []string
	// InputFiles are the files named as a fileName (a batch's
	// inputConfig.fileName, an importFile's file): also among Files.
	InputFiles []string
}

// BodyRefs returns the files, caches and tuned models a request body
// names, wherever they are: a part's fileData.fileUri (as "files/{id}" or
// Google's URL of the file), a batch's inputConfig.fileName, a
// cachedContent, a model, baseModel or tunedModel naming a tuned model —
// in a generateContent, countTokens or embedding body, each inline request
// of a batch, a tuned model's source. Members are matched under their JSON
// and proto names (fileUri, file_uri), every occurrence of a repeated
// member counts. Members that hold the caller's own data rather than
// instructions to Google are not read: a function call's args, a function
// response's response, schemas, metadata. A body that is not a JSON object
// is EINVALID, as is a file reference that is not a string.
func BodyRefs(body []byte) (Refs, error) {
	var refs Refs
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return refs, groundhog.Errorf(groundhog.EINVALID, "the request body is not a JSON object")
	}
	if err := walkObject(dec, &refs); err != nil {
		return refs, err
	}
	if _, err := dec.Token(); err == nil {
		return refs, groundhog.Errorf(groundhog.EINVALID, "the request body holds more than one JSON value")
	}
	return refs, nil
}

var errBadJSON = groundhog.Errorf(groundhog.EINVALID, "the request body is not valid JSON")

// walkObject reads the members of an object whose '{' was read, through
// its '}'.
func walkObject(dec *json.Decoder, refs *Refs) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errBadJSON
		}
		key, _ := t.(string)
		switch k := strings.ToLower(strings.ReplaceAll(key, "_", "")); k {
		case "args", "response", "parameters", "parametersjsonschema", "responseschema", "responsejsonschema", "metadata":
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return errBadJSON
			}
		case "fileuri", "filename":
			s, err := refString(dec, key)
			if err != nil {
				return err
			}
			if name, ok := FileRef(s); ok {
				refs.Files = append(refs.Files, name)
				if k == "filename" {
					refs.InputFiles = append(refs.InputFiles, name)
				}
			}
		case "filesearchstorenames", "filesearchstorename":
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return errBadJSON
			}
			var one string
			var many []string
			switch {
			case string(v) == "null":
			case json.Unmarshal(v, &one) == nil:
				refs.FileSearchStores = append(refs.FileSearchStores, FileSearchStoreName(one))
			case json.Unmarshal(v, &many) == nil:
				for _, n := range many {
					refs.FileSearchStores = append(refs.FileSearchStores, FileSearchStoreName(n))
				}
			default:
				return groundhog.Errorf(groundhog.EINVALID, "%s must be a list of strings", key)
			}
		case "cachedcontent":
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return errBadJSON
			}
			var s string
			switch {
			case string(v) == "null":
			case json.Unmarshal(v, &s) == nil:
				refs.Caches = append(refs.Caches, CacheName(s))
			default:
				refs.Caches = append(refs.Caches, string(v)) // names no cache: not found
			}
		case "model", "basemodel", "tunedmodel":
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return errBadJSON
			}
			var s string
			if json.Unmarshal(v, &s) == nil && (strings.HasPrefix(s, TunedModels+"/") || k == "tunedmodel") {
				refs.TunedModels = append(refs.TunedModels, TunedModelName(s))
			} else if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
				if err := walkValue(v, refs); err != nil {
					return err
				}
			}
		default:
			if err := walkNext(dec, refs); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return errBadJSON
	}
	return nil
}

// walkNext reads the next value, walking the objects it holds.
func walkNext(dec *json.Decoder, refs *Refs) error {
	t, err := dec.Token()
	if err != nil {
		return errBadJSON
	}
	switch t {
	case json.Delim('{'):
		return walkObject(dec, refs)
	case json.Delim('['):
		for dec.More() {
			if err := walkNext(dec, refs); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return errBadJSON
		}
	}
	return nil
}

// walkValue walks one whole value held as its text.
func walkValue(v []byte, refs *Refs) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	return walkNext(dec, refs)
}

// refString reads a member that must be a string.
func refString(dec *json.Decoder, key string) (string, error) {
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return "", errBadJSON
	}
	var s string
	if string(v) == "null" {
		return "", nil
	}
	if json.Unmarshal(v, &s) != nil {
		return "", groundhog.Errorf(groundhog.EINVALID, "%s must be a string", key)
	}
	return s, nil
}

// geminiHost is the host of Google's URLs of files.
const geminiHost = "generativelanguage.googleapis.com"

// FileRef returns the file a fileUri or fileName names: "files/{id}" as
// it is, or Google's URL of a file
// (https://generativelanguage.googleapis.com/v1beta/files/{id}); ok is
// false for every other URI (a web or Cloud Storage URL, a YouTube
// video), which names no file of the account. A URL on Google's host that
// is not a file's is returned whole: no tenant owns it.
func FileRef(s string) (name string, ok bool) {
	if s == "" {
		return "", false
	}
	if strings.HasPrefix(s, Files+"/") {
		return s, true
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", false
	}
	if !strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), geminiHost) {
		return "", false
	}
	segs := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(segs) == 3 && segs[1] == Files && segs[2] != "" && u.RawQuery == "" && u.Fragment == "" {
		return Files + "/" + segs[2], true
	}
	return s, true
}

// FileSearchStoreName returns a file search store reference with its
// "fileSearchStores/" prefix.
func FileSearchStoreName(ref string) string {
	if strings.HasPrefix(ref, FileSearchStores+"/") {
		return ref
	}
	return FileSearchStores + "/" + ref
}

// TunedModelName returns a tuned model reference with its "tunedModels/"
// prefix.
func TunedModelName(ref string) string {
	if strings.HasPrefix(ref, TunedModels+"/") {
		return ref
	}
	return TunedModels + "/" + ref
}

// CreatedNames returns the names of the resources of collection c a
// create answer holds: a File's name, or that of the file a media upload
// answers with ({"file":{…}}), the files of a files:register answer
// ({"files":[…]}); a batch's (an Operation named "batches/{id}"); a tuned
// model's (an Operation named "tunedModels/{id}/operations/{op}" whose
// metadata.tunedModel names it); a file search store's; the operation a
// predictLongRunning starts ("models/{model}/operations/{id}").
func CreatedNames(c string, body []byte) []string {
	var v struct {
		Name     string         `json:"name"`
		File     *named         `json:"file"`
		Files    []named        `json:"files"`
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	add := func(n string) {
		if strings.HasPrefix(n, c+"/") && len(n) > len(c)+1 {
			out = append(out, n)
		}
	}
	switch c {
	case Files:
		add(v.Name)
		if v.File != nil {
			add(v.File.Name)
		}
		for _, f := range v.Files {
			add(f.Name)
		}
	case Batches, FileSearchStores:
		add(v.Name)
	case ModelOperations:
		if strings.HasPrefix(v.Name, "models/") && strings.Contains(v.Name, "/"+ModelOperations+"/") {
			out = append(out, v.Name)
		}
	case TunedModels:
		if tm, _ := v.Metadata["tunedModel"].(string); tm != "" {
			add(tm)
		} else {
			n, _, _ := strings.Cut(v.Name, "/operations/")
			add(n)
		}
	}
	return out
}

type named struct {
	Name string `json:"name"`
}

// ListMember is the member of a list answer that holds the items of
// collection c: "files", "operations" (a batch is an Operation; a model's
// operations), "tunedModels" or "fileSearchStores".
func ListMember(c string) string {
	if c == Batches {
		return "operations"
	}
	return c
}

// ListNames returns the names of the items of a list answer of collection
// c, in order ("" for an item without a string name), and its
// nextPageToken.
func ListNames(c string, body []byte) (names []string, next string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, "", groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is not a JSON object", err)
	}
	var items []named
	if raw, ok := top[ListMember(c)]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, "", groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
		}
	}
	if raw, ok := top["nextPageToken"]; ok {
		_ = json.Unmarshal(raw, &next)
	}
	for _, it := range items {
		names = append(names, it.Name)
	}
	return names, next, nil
}

// FilterList returns a list answer of collection c with only the items
// keep accepts by name, in Google's order; nextPageToken and every other
// member stay as they were. An empty result has no items member, as
// Google's own empty pages.
func FilterList(c string, body []byte, keep func(name string) bool) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is not a JSON object", err)
	}
	member := ListMember(c)
	var items []json.RawMessage
	if raw, ok := top[member]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
		}
	}
	var kept []json.RawMessage
	for _, it := range items {
		var n named
		if json.Unmarshal(it, &n) == nil && n.Name != "" && keep(n.Name) {
			kept = append(kept, it)
		}
	}
	delete(top, member)
	if len(kept) > 0 {
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
		}
		top[member] = b
	}
	return json.Marshal(top)
}

// BatchResultFiles returns the files Google made for the batches of an
// answer — one batch (an Operation) or a list page of them — named as
// responsesFile in a batch's output (metadata.output) or its response.
func BatchResultFiles(body []byte) []string {
	type output struct {
		ResponsesFile string `json:"responsesFile"`
	}
	type op struct {
		Metadata struct {
			Output output `json:"output"`
		} `json:"metadata"`
		Response output `json:"response"`
	}
	var v struct {
		op
		Operations []op `json:"operations"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	for _, o := range append(v.Operations, v.op) {
		for _, f := range []string{o.Metadata.Output.ResponsesFile, o.Response.ResponsesFile} {
			if name, ok := FileRef(f); ok && f != "" && strings.HasPrefix(name, Files+"/") {
				out = append(out, name)
			}
		}
	}
	return out
}

// UploadID returns the upload_id query parameter of a media upload URL
// (Google's X-Goog-Upload-URL, or the request URL of a chunk), "" when it
// has none.
func UploadID(rawQuery string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return ""
	}
	return q.Get("upload_id")
}
