package wire

import (
	"encoding/json"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// The answers of the OpenAI and Anthropic resource routes (files, batches,
// message batches, uploads) as the gateway reads them to scope each
// resource to the tenant that created it.

// ResourceID returns the "id" member of a provider's answer to a create
// (a File, a Batch, a message batch, an Upload object), or "" when it has
// none.
func ResourceID(body []byte) string {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var id string
	if json.Unmarshal(v.ID, &id) != nil {
		return ""
	}
	return id
}

// UploadFileID returns the id of the File a completed OpenAI Upload
// carries (its "file" member), or "" when it has none.
func UploadFileID(body []byte) string {
	var v struct {
		File json.RawMessage `json:"file"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.File) == 0 {
		return ""
	}
	return ResourceID(v.File)
}

// ListPage is what the gateway reads of a list answer: the ids of its
// items in order, and whether the provider has more after (or before) it.
type ListPage struct {
	IDs      []string // "" for an item without a string id
	HasMore  bool
	FirstID  string // the provider's first_id
	LastID   string // the provider's last_id
	NextPage string // the provider's next_page token (Anthropic's files)
}

type listPage struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	// NextPage is a page token some lists give instead of ids.
	NextPage *string `json:"next_page"`
}

// ReadListPage reads a list answer ({"data":[…],"has_more",…} or
// {"data":[…],"next_page",…}). An
// answer that is a JSON object without a data array is not a list: ok is
// false and there is nothing to filter.
func ReadListPage(body []byte) (p ListPage, ok bool, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return p, false, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is not a JSON object", err)
	}
	if d, has := top["data"]; !has || len(d) == 0 || d[0] != '[' {
		return p, false, nil
	}
	var l listPage
	if err := json.Unmarshal(body, &l); err != nil {
		return p, false, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
	}
	p.HasMore = l.HasMore
	if l.FirstID != nil {
		p.FirstID = *l.FirstID
	}
	if l.LastID != nil {
		p.LastID = *l.LastID
	}
	if l.NextPage != nil {
		p.NextPage = *l.NextPage
	}
	p.IDs = make([]string, len(l.Data))
	for i, item := range l.Data {
		p.IDs[i] = ResourceID(item)
	}
	return p, true, nil
}

// FilterListPage returns a list answer with only the items keep accepts
// by id, in the provider's order. first_id and last_id, when the answer
// has them, name the first and last item kept (null when none is kept),
// so a page never names a resource it does not show; has_more, next_page
// and every other member stay as the provider sent them.
func FilterListPage(body []byte, keep func(id string) bool) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is not a JSON object", err)
	}
	var l listPage
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
	}
	kept := []json.RawMessage{}
	var first, last string
	for _, item := range l.Data {
		if id := ResourceID(item); id != "" && keep(id) {
			kept = append(kept, item)
			if first == "" {
				first = id
			}
			last = id
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "the provider's list is malformed", err)
	}
	top["data"] = b
	for k, v := range map[string]string{"first_id": first, "last_id": last} {
		if _, has := top[k]; !has {
			continue
		}
		top[k] = json.RawMessage("null")
		if v != "" {
			top[k], _ = json.Marshal(v)
		}
	}
	return json.Marshal(top)
}

// InputFileIDs returns the string values of every top-level member of a
// JSON object whose name is input_file_id under any case (a reader that
// matches names without regard to case, as some do, must not find a file
// the gateway did not check). A body that is not a JSON object is
// EINVALID.
func InputFileIDs(body []byte) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "the request body is not a JSON object", err)
	}
	var out []string
	for k, v := range top {
		if !strings.EqualFold(k, "input_file_id") {
			continue
		}
		var id string
		if json.Unmarshal(v, &id) == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

// BatchFileIDs returns the files an OpenAI Batch answer names as made by
// the provider for it (output_file_id, error_file_id), of one Batch or of
// every Batch of a list page.
func BatchFileIDs(body []byte) []string {
	type batch struct {
		OutputFileID *string `json:"output_file_id"`
		ErrorFileID  *string `json:"error_file_id"`
	}
	var v struct {
		batch
		Data []batch `json:"data"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	for _, b := range append(v.Data, v.batch) {
		for _, id := range []*string{b.OutputFileID, b.ErrorFileID} {
			if id != nil && *id != "" {
				out = append(out, *id)
			}
		}
	}
	return out
}

// Refs are the provider resources a request body names: what the provider
// would read or write on the caller's behalf.
type Refs struct {
	// Files: every member named file_id, training_file or validation_file
	// (a string), every string of every member named file_ids, and the id
	// of an object of type "file_id" (an eval run's data source).
	Files []string
	// VectorStores: every string of every member named vector_store_ids
	// (the file_search tool; a vector store's own files).
	VectorStores []string
	// Conversations: the top-level conversation member of a Responses
	// call, as a string or as an object's id.
	Conversations []string
	// Responses: the top-level previous_response_id of a Responses call
	// (a string).
	Responses []string
	// Containers: every member named container whose value is a string
	// (a code interpreter tool run in an existing container).
	Containers []string
}

// FileRefs returns Refs(body).Files: the files a model call asks the
// provider to read (an input_file part of the Responses API, a file part of
// Chat Completions, an Anthropic document or container_upload source of
// type file, a tool's file list).
func FileRefs(body []byte) []string { return BodyRefs(body).Files }

// BodyRefs returns the resources a JSON body names (Refs), anywhere in it.
// A body that is not JSON names none. Members that hold the caller's own
// data rather than instructions to the provider are not read: metadata,
// JSON schemas (parameters, input_schema, schema) and the input of a tool
// use block.
func BodyRefs(body []byte) Refs {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return Refs{}
	}
	var out Refs
	strs := func(m any, to *[]string) {
		if ids, ok := m.([]any); ok {
			for _, id := range ids {
				if id, ok := id.(string); ok {
					*to = append(*to, id)
				}
			}
		}
	}
	if top, ok := v.(map[string]any); ok {
		switch c := top["conversation"].(type) {
		case string:
			out.Conversations = append(out.Conversations, c)
		case map[string]any:
			if id, ok := c["id"].(string); ok {
				out.Conversations = append(out.Conversations, id)
			}
		}
		if id, ok := top["previous_response_id"].(string); ok {
			out.Responses = append(out.Responses, id)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, m := range v {
				switch k {
				case "metadata", "parameters", "input_schema", "schema":
					continue
				case "input":
					if t, _ := v["type"].(string); strings.HasSuffix(t, "tool_use") {
						continue
					}
				case "file_id", "training_file", "validation_file":
					if id, ok := m.(string); ok {
						out.Files = append(out.Files, id)
					}
				case "id":
					// An eval run's data source names its file as
					// {"type": "file_id", "id": "file-…"}.
					if t, _ := v["type"].(string); t == "file_id" {
						if id, ok := m.(string); ok {
							out.Files = append(out.Files, id)
						}
					}
				case "file_ids":
					strs(m, &out.Files)
				case "vector_store_ids":
					strs(m, &out.VectorStores)
				case "container":
					if id, ok := m.(string); ok {
						out.Containers = append(out.Containers, id)
					}
				}
				walk(m)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// FineTunedModels returns the models an OpenAI fine-tuning job answer
// names as made for it (fine_tuned_model), of one job or of every job of a
// list page.
func FineTunedModels(body []byte) []string {
	type job struct {
		Model *string `json:"fine_tuned_model"`
	}
	var v struct {
		job
		Data []job `json:"data"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	for _, j := range append(v.Data, v.job) {
		if j.Model != nil && *j.Model != "" {
			out = append(out, *j.Model)
		}
	}
	return out
}

// CheckpointModels returns the models a page of a fine-tuning job's
// checkpoints names (fine_tuned_model_checkpoint): each is a model the job
// made, usable and shareable as its fine-tuned model is.
func CheckpointModels(body []byte) []string {
	var v struct {
		Data []struct {
			Model string `json:"fine_tuned_model_checkpoint"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	for _, c := range v.Data {
		if c.Model != "" {
			out = append(out, c.Model)
		}
	}
	return out
}
