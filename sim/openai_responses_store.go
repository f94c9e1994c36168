package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// Stored responses: OpenAI keeps every Responses answer unless the request
// says store:false, so that a later request can continue it with
// previous_response_id and GET /v1/responses/{id} can read it back. The sim
// keeps them in memory per API key (scopeOf), the newest storedResponsesMax.

// storedResponsesMax bounds the responses kept; the oldest go first.
const storedResponsesMax = 4096

// storedResponse is one stored answer.
type storedResponse struct {
	object []byte            // the response object, as answered
	input  []json.RawMessage // this request's input items, with ids
	// context is what a continuation's prompt starts with: the previous
	// response's context, this request's input items, then its output
	// items. Instructions are not part of it (OpenAI does not carry them).
	context []json.RawMessage
}

// storeKey scopes a response id to the API key of r.
func storeKey(r *http.Request, id string) string { return scopeOf(r) + "\x00" + id }

// previousNotFound is OpenAI's answer to a previous_response_id it does not
// hold (never stored, store:false, deleted, or another key's).
func previousNotFound(id string) error {
	return &paramError{status: http.StatusBadRequest, param: "previous_response_id", code: "previous_response_not_found",
		msg: fmt.Sprintf("Previous response with id '%s' not found.", id)}
}

// paramError is an OpenAI error that names the offending parameter and an
// error code of its own.
type paramError struct {
	status           int
	msg, param, code string
}

func (e *paramError) Error() string { return e.msg }

func (e *paramError) write(w http.ResponseWriter) {
	body := openAIErrorBody{Message: e.msg, Type: "invalid_request_error"}
	if e.param != "" {
		body.Param = &e.param
	}
	if e.code != "" {
		body.Code = &e.code
	}
	writeJSON(w, e.status, openAIError{Error: body})
}

// previous returns the context of the stored response id for a request
// made with r's key.
func (s *Server) previous(r *http.Request) func(id string) ([]json.RawMessage, error) {
	return func(id string) ([]json.RawMessage, error) {
		p := s.stored.get(storeKey(r, id))
		if p == nil {
			return nil, previousNotFound(id)
		}
		return p.context, nil
	}
}

// inputItems returns a request's input as a list of items: a string input
// is one user message. Messages get the type, id and status OpenAI gives
// them once stored (fields that do not change their tokens); other items
// are kept as sent.
func inputItems(input json.RawMessage, sd seed) ([]json.RawMessage, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		return nil, nil
	}
	var raws []json.RawMessage
	if input[0] == '"' {
		msg, _ := json.Marshal(map[string]any{"role": "user", "content": input})
		raws = []json.RawMessage{msg}
	} else if err := json.Unmarshal(input, &raws); err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "Invalid 'input': expected a string or an array of input items.", err)
	}
	out := make([]json.RawMessage, len(raws))
	for i, raw := range raws {
		out[i] = storedMessage(raw, sd.derive("input", uint64(i)))
	}
	return out, nil
}

// storedMessage returns a message item as OpenAI stores it: type
// "message", an id, status "completed", a string content as one text
// part. Anything else is returned unchanged.
func storedMessage(raw json.RawMessage, sd seed) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m["role"] == nil {
		return raw
	}
	if t, ok := m["type"]; ok && string(t) != `"message"` {
		return raw
	}
	var role string
	json.Unmarshal(m["role"], &role)
	m["type"] = json.RawMessage(`"message"`)
	if _, ok := m["id"]; !ok {
		m["id"], _ = json.Marshal(sd.id("msg_"))
	}
	if _, ok := m["status"]; !ok {
		m["status"] = json.RawMessage(`"completed"`)
	}
	if c := bytes.TrimSpace(m["content"]); len(c) > 0 && c[0] == '"' {
		part := "input_text"
		if role == "assistant" {
			part = "output_text"
		}
		m["content"], _ = json.Marshal([]map[string]json.RawMessage{{"type": json.RawMessage(strconv.Quote(part)), "text": c}})
	}
	out, _ := json.Marshal(m)
	return out
}

// serveStoredResponse answers GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
func (s *Server) serveStoredResponse(w http.ResponseWriter, r *http.Request, rest string) {
	id, sub, _ := strings.Cut(rest, "/")
	if sub != "" && sub != "input_items" {
		writeError(w, familyOpenAI, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if sub == "" && r.Method == http.MethodDelete {
		if !s.stored.del(storeKey(r, id)) {
			responseNotFound(w, id)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
		return
	}
	if !allow(w, r, familyOpenAI, http.MethodGet) {
		return
	}
	p := s.stored.get(storeKey(r, id))
	if p == nil {
		responseNotFound(w, id)
		return
	}
	if sub == "" {
		writeBody(w, http.StatusOK, p.object)
		return
	}
	listInputItems(w, r, p.input)
}

func responseNotFound(w http.ResponseWriter, id string) {
	(&paramError{status: http.StatusNotFound, msg: fmt.Sprintf("Response with id '%s' not found.", id)}).write(w)
}

// listInputItems writes one page of items: order (desc by default, as the
// API), limit (20 by default, at most 100) and after (an item id).
func listInputItems(w http.ResponseWriter, r *http.Request, items []json.RawMessage) {
	q := r.URL.Query()
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		(&paramError{status: http.StatusBadRequest, param: "order", msg: fmt.Sprintf("Invalid value for 'order': expected 'asc' or 'desc', got '%s'.", order)}).write(w)
		return
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			(&paramError{status: http.StatusBadRequest, param: "limit", msg: fmt.Sprintf("Invalid value for 'limit': expected an integer between 1 and 100, got '%s'.", v)}).write(w)
			return
		}
		limit = n
	}
	all := make([]json.RawMessage, len(items))
	copy(all, items)
	if order == "desc" {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	if after := q.Get("after"); after != "" {
		for i, it := range all {
			if itemID(it) == after {
				all = all[i+1:]
				break
			}
		}
	}
	page := all[:min(limit, len(all))]
	out := map[string]any{"object": "list", "data": page, "first_id": nil, "last_id": nil, "has_more": len(all) > len(page)}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = itemID(page[0]), itemID(page[len(page)-1])
	}
	writeJSON(w, http.StatusOK, out)
}

func itemID(raw json.RawMessage) string {
	var m struct {
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &m)
	return m.ID
}

// Compaction. POST /v1/responses/compact reads a context (input, after the
// previous response's when previous_response_id is set) and answers the
// user messages of that context followed by one compaction item whose
// encrypted_content stands for everything else. The sim's compaction is a
// summary of compactionTokens(context) tokens; sent back as an input item,
// the compaction item counts as those summary tokens plus a message's
// framing (MessageOverhead). A compaction item the sim did not produce
// counts as the tokens of its JSON, like any other unknown item.

// compactionTokens is the length of the summary a compaction writes for a
// context of prompt tokens: its output tokens.
func compactionTokens(prompt int) int { return 64 + prompt/4 }

const compactionMagic = "groundhog-sim compaction v1 "

// compactionContent returns the encrypted_content of a compaction of the
// context whose digest is hash, standing for tokens summary tokens.
func compactionContent(hash uint64, tokens int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s%d %016x", compactionMagic, tokens, hash)))
}

// parseCompaction returns the summary tokens and the digest of a
// compaction's encrypted_content, ok false when the sim did not produce it.
func parseCompaction(content string) (tokens int, digest string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(content)
	if err != nil {
		return 0, "", false
	}
	rest, found := strings.CutPrefix(string(raw), compactionMagic)
	if !found {
		return 0, "", false
	}
	n, d, _ := strings.Cut(rest, " ")
	tokens, err = strconv.Atoi(n)
	if err != nil || tokens < 1 || tokens > 1<<20 {
		return 0, "", false
	}
	if _, err := hex.DecodeString(d); err != nil || len(d) != 16 {
		return 0, "", false
	}
	return tokens, d, true
}

// writeCompaction appends the tokens a sim compaction item stands for.
func writeCompaction(ts *tokenStream, tokens int, digest string) {
	ts.begin("compaction")
	ts.token("\x00summary " + digest)
	for i := 1; i < tokens; i++ {
		ts.token("\x00s" + strconv.Itoa(i))
	}
	ts.end()
}

type compactionItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	EncryptedContent string `json:"encrypted_content"`
}

type compactionObject struct {
	ID        string           `json:"id"`
	Object    string           `json:"object"`
	CreatedAt int64            `json:"created_at"`
	Output    []any            `json:"output"`
	Usage     *compactionUsage `json:"usage"`
}

// compactionUsage is a compaction's usage: the API's fields, and
// cache_write_tokens only when the model bills a cache write.
type compactionUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// keptMessages returns the user messages of a context, as stored.
func keptMessages(context []json.RawMessage) []any {
	var out []any
	for _, raw := range context {
		var m struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Role == "user" && (m.Type == "" || m.Type == "message") {
			out = append(out, raw)
		}
	}
	return out
}

// parseCompact validates a POST /v1/responses/compact body and plans the
// call: input = the whole context (instructions, the previous response's
// context, input), output = the summary.
func parseCompact(body []byte, sd seed, prev func(string) ([]json.RawMessage, error)) (*job, error) {
	var req responsesRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'model'.")
	}
	sd = sd.derive("compact", 0)
	items, err := inputItems(req.Input, sd)
	if err != nil {
		return nil, err
	}
	if req.PreviousResponseID != "" {
		before, err := prev(req.PreviousResponseID)
		if err != nil {
			return nil, err
		}
		items = append(append([]json.RawMessage(nil), before...), items...)
	}
	if len(items) == 0 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Missing required parameter: 'input'.")
	}
	pc, err := newOpenAICache(req.Model, &req.openaiCacheFields, "input_text", "input_image", "input_file")
	if err != nil {
		return nil, err
	}
	req.Tools = nil // a compaction reads the conversation, not the tool catalog
	all, _ := json.Marshal(items)
	pr := &responsesPrint{}
	if _, _, err := responsesPrompt(&req, all, pc, pr); err != nil {
		return nil, err
	}
	hash := pc.ts.hash
	j := &job{model: req.Model, seed: sd}
	pc.apply(j)
	j.output = compactionTokens(j.prompt)
	j.respond = func(x *exchange) {
		u := &compactionUsage{InputTokens: x.usage.InputTokens, OutputTokens: x.usage.OutputTokens,
			TotalTokens: x.usage.InputTokens + x.usage.OutputTokens}
		u.InputTokensDetails.CachedTokens = x.usage.CachedInputTokens
		u.InputTokensDetails.CacheWriteTokens = x.usage.CacheWriteTokens
		out := keptMessages(items)
		out = append(out, compactionItem{ID: x.id.id("cmp_"), Type: "compaction", EncryptedContent: compactionContent(hash, j.output)})
		x.respondJSON(compactionObject{ID: x.id.id("resp_"), Object: "response.compaction", CreatedAt: x.created.Unix(), Output: out, Usage: u})
	}
	return j, nil
}

// storeResponse keeps r, answered to x's request with input items own
// after the previous response's context before.
func (s *Server) storeResponse(x *exchange, r *responseObject, before, own []json.RawMessage) {
	object, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("sim: encode response: %v", err))
	}
	context := make([]json.RawMessage, 0, len(before)+len(own)+len(r.Output))
	context = append(append(context, before...), own...)
	for _, o := range r.Output {
		item, _ := json.Marshal(o)
		context = append(context, item)
	}
	s.stored.put(storeKey(x.r, r.ID), &storedResponse{object: object, input: own, context: context}, storedResponsesMax)
}

// isSimCompaction reports whether a compaction item's encrypted_content
// is one the sim produced.
func isSimCompaction(content string) bool {
	_, _, ok := parseCompaction(content)
	return ok
}
