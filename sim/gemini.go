package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Gemini implicit caching: the minimum prompt length per model class and
// the granularity of the cached prefixes.
const (
	// GeminiMinTokens is the shortest prompt prefix implicit caching keeps
	// on the Flash and Flash-Lite models.
	GeminiMinTokens = 1024
	// GeminiProMinTokens is the same for the Pro models.
	GeminiProMinTokens = 4096
	// geminiBlockTokens is the step of the prefixes the sim caches.
	geminiBlockTokens = 128
)

// geminiMinTokens returns the implicit-caching minimum of model.
func geminiMinTokens(model string) int {
	if gemini.Tiered(model) {
		return GeminiProMinTokens
	}
	return GeminiMinTokens
}

// geminiPart is one part of a Gemini content: one member is set.
type geminiPart struct {
	Text         *string `json:"text"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// geminiRequest is the part of a GenerateContentRequest the sim reads.
type geminiRequest struct {
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []json.RawMessage `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig *struct {
		MaxOutputTokens *count `json:"maxOutputTokens"`
		CandidateCount  *count `json:"candidateCount"`
	} `json:"generationConfig"`
	CachedContent *string `json:"cachedContent"`
}

// parseGemini validates a Gemini generateContent request (model and stream
// from the path) and generates its answer. The prompt is tokenized in
// Gemini's order: tools, system instruction, contents. Implicit caching
// keeps every geminiBlockTokens-aligned prefix of at least the model's
// minimum (GeminiMinTokens, GeminiProMinTokens) for DefaultCacheTTL after
// its last use; a read is billed at the model's cached rate and a write is
// free and not reported (promptTokenCount includes the cached tokens).
//
// A request naming an explicit cache (cachedContent) is the cache's
// prompt (tools, system instruction, contents) followed by its own
// contents; the cache's tokens are read at the cached rate and no implicit
// caching applies. cache finds a cache by name (nil: none is found).
func parseGemini(r *http.Request, body []byte, sd seed, cache func(name string) (*geminiCache, error)) (*job, error) {
	model, method, ok := gemini.ParsePath(r.URL.EscapedPath())
	generate_, stream := gemini.IsGenerate(method)
	if !ok || !generate_ {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "method %q not found", method)
	}
	if err := gemini.CheckRequest(body); err != nil {
		return nil, err
	}
	var req geminiRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.GenerationConfig != nil && req.GenerationConfig.CandidateCount != nil && *req.GenerationConfig.CandidateCount > 1 {
		return nil, groundhog.Errorf(groundhog.EINVALID, "candidateCount above 1 is not supported by the simulator")
	}
	explicit := 0
	if req.CachedContent != nil {
		c, err := useGeminiCache(&req, model, cache)
		if err != nil {
			return nil, err
		}
		explicit = c.tokens
	}
	ts, tools, asked, err := geminiPrompt(&req)
	if err != nil {
		return nil, err
	}
	mode, name := "auto", ""
	if req.ToolConfig != nil && req.ToolConfig.FunctionCallingConfig != nil {
		fc := req.ToolConfig.FunctionCallingConfig
		switch strings.ToUpper(fc.Mode) {
		case "", "AUTO", "MODE_UNSPECIFIED", "VALIDATED":
		case "ANY":
			mode = "required"
			if len(fc.AllowedFunctionNames) > 0 {
				name = fc.AllowedFunctionNames[0]
			}
		case "NONE":
			mode = "none"
		default:
			return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid value at 'tool_config.function_calling_config.mode' (%s)", fc.Mode)
		}
	}
	call, err := pickTool(tools, mode, name, asked)
	if err != nil {
		return nil, err
	}
	limit := 0
	if req.GenerationConfig != nil && req.GenerationConfig.MaxOutputTokens != nil {
		limit = int(*req.GenerationConfig.MaxOutputTokens)
	}
	c := generate(sd, 0, limit, call)
	min := geminiMinTokens(model)
	var lookup []PrefixPoint
	for _, p := range ts.marks {
		if p.Tokens >= min && explicit == 0 {
			lookup = append(lookup, p)
		}
	}
	store := make([]PrefixWrite, len(lookup))
	for i, p := range lookup {
		store[i] = PrefixWrite{PrefixPoint: p}
	}
	j := &job{model: model, stream: stream, seed: sd, prompt: ts.n, lookup: lookup, store: store, output: c.tokens, explicitCached: explicit,
		priceModel: func(u groundhog.Usage) string { return gemini.PriceModel(model, u) }}
	j.respond = func(x *exchange) {
		if stream {
			streamGemini(x, model, c)
		} else {
			x.respondJSON(geminiBody(x, model, c, x.usage, true))
		}
	}
	return j, nil
}

// geminiPrompt tokenizes req's prompt in Gemini's order (tools, system
// instruction, contents) and returns its token stream, its function
// declarations, and whether it ends with a user's question (not a function
// response).
func geminiPrompt(req *geminiRequest) (ts *tokenStream, tools []toolSpec, asked bool, err error) {
	ts = newTokenStream(geminiBlockTokens)
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			schema := fd.Parameters
			if len(schema) == 0 {
				schema = fd.ParametersJSONSchema
			}
			ts.begin("tool")
			ts.text(fd.Name)
			ts.text(compactJSON(schema))
			ts.end()
			tools = append(tools, toolSpec{name: fd.Name, schema: lowerTypes(schema)})
		}
	}
	part := func(raw json.RawMessage, path string) (functionResponse bool, err error) {
		var p geminiPart
		if err := json.Unmarshal(raw, &p); err != nil {
			return false, groundhog.WrapError(groundhog.EINVALID, fmt.Sprintf("Invalid JSON payload received. Invalid value at '%s'", path), err)
		}
		switch {
		case p.Text != nil:
			ts.text(*p.Text)
		case p.FunctionCall != nil:
			ts.text(p.FunctionCall.Name)
			ts.text(compactJSON(p.FunctionCall.Args))
		case p.FunctionResponse != nil:
			ts.text(p.FunctionResponse.Name)
			ts.text(compactJSON(p.FunctionResponse.Response))
			return true, nil
		default:
			ts.text(compactJSON(raw))
		}
		return false, nil
	}
	if req.SystemInstruction != nil {
		ts.begin("system")
		for i, raw := range req.SystemInstruction.Parts {
			if _, err := part(raw, fmt.Sprintf("system_instruction.parts[%d]", i)); err != nil {
				return nil, nil, false, err
			}
		}
		ts.end()
	}
	for i, c := range req.Contents {
		role := c.Role
		if role == "" {
			role = "user"
		}
		if role != "user" && role != "model" {
			return nil, nil, false, groundhog.Errorf(groundhog.EINVALID, "Please use a valid role: user, model.")
		}
		if len(c.Parts) == 0 {
			return nil, nil, false, groundhog.Errorf(groundhog.EINVALID, "* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		ts.begin(role)
		fnResponse := false
		for k, raw := range c.Parts {
			fr, err := part(raw, fmt.Sprintf("contents[%d].parts[%d]", i, k))
			if err != nil {
				return nil, nil, false, err
			}
			fnResponse = fnResponse || fr
		}
		ts.end()
		asked = role == "user" && !fnResponse
	}
	return ts, tools, asked, nil
}

func (c *completion) geminiFinishReason() string {
	if c.truncated {
		return "MAX_TOKENS"
	}
	return "STOP"
}

// geminiBody is a GenerateContentResponse carrying parts; last adds the
// finishReason. usage is the usageMetadata reported with it.
func geminiBody(x *exchange, model string, c *completion, u groundhog.Usage, last bool) map[string]any {
	var parts []any
	if c.tool != nil {
		parts = []any{map[string]any{"functionCall": map[string]any{"name": c.tool.name, "args": json.RawMessage(c.tool.args)}}}
	} else {
		parts = []any{map[string]any{"text": c.text()}}
	}
	return geminiChunk(x, model, parts, c, u, last)
}

func geminiChunk(x *exchange, model string, parts []any, c *completion, u groundhog.Usage, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
	if last {
		cand["finishReason"] = c.geminiFinishReason()
		if c.tool != nil {
			cand["finishReason"] = "STOP"
		}
	}
	return map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": gemini.UsageOf(u),
		"modelVersion":  model,
		"responseId":    x.id.id(""),
	}
}

// streamGemini writes the streamGenerateContent?alt=sse stream of c: one
// chunk per output token (a function call comes whole, as Gemini sends
// it), each with the usage so far; the last chunk carries the
// finishReason and the call's whole usage.
func streamGemini(x *exchange, model string, c *completion) {
	var pieces []string
	if c.tool == nil {
		pieces = c.deltas()
	}
	st := x.newSSE(max(1, len(pieces)))
	if c.tool != nil || len(pieces) == 0 {
		st.chunk("", geminiBody(x, model, c, x.usage, true))
		return
	}
	so := x.usage
	for i, p := range pieces {
		last := i == len(pieces)-1
		u := so
		if !last {
			u.OutputTokens = int64(i + 1)
		}
		if !st.chunk("", geminiChunk(x, model, []any{map[string]any{"text": p}}, c, u, last)) {
			return
		}
	}
}

// serveGemini routes the Gemini API: POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent are
// model calls, :countTokens counts a request's prompt; anything else is a
// Google-shaped 404. The cachedContents routes are explicit caches
// (gemini_cache.go).
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	if name, collection, ok := gemini.CachePath(r.URL.Path); ok {
		s.serveGeminiCaches(w, r, name, collection)
		return
	}
	model, method, ok := gemini.ParsePath(r.URL.EscapedPath())
	if !ok {
		writeError(w, familyGemini, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if gen, _ := gemini.IsGenerate(method); gen || isGeminiEmbed(method) {
		s.modelCall(w, r, groundhog.ShapeGemini)
		return
	}
	if method != gemini.MethodCountTokens {
		writeError(w, familyGemini, http.StatusNotFound, fmt.Sprintf("models/%s:%s is not found for API version %s", model, method, gemini.Version(r.URL.Path)))
		return
	}
	if !allow(w, r, familyGemini, http.MethodPost) {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	// countTokens takes {"contents": [...]} or {"generateContentRequest": {...}}.
	var wrap struct {
		GenerateContentRequest json.RawMessage `json:"generateContentRequest"`
	}
	if err := decodeBody(body, &wrap); err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if len(wrap.GenerateContentRequest) > 0 {
		body = wrap.GenerateContentRequest
	}
	n, err := geminiPromptTokens(model, body, s.geminiCacheFinder(r))
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	b, _ := json.Marshal(map[string]any{"totalTokens": n, "promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": n}}})
	writeBody(w, http.StatusOK, b)
}

// geminiPromptTokens counts the prompt tokens of a GenerateContentRequest
// body as a generate call would bill them.
func geminiPromptTokens(model string, body []byte, cache func(string) (*geminiCache, error)) (int, error) {
	r, _ := http.NewRequest(http.MethodPost, "/"+gemini.APIVersion+"/models/"+model+":"+gemini.MethodGenerate, nil)
	j, err := parseGemini(r, body, seed{}, cache)
	if err != nil {
		return 0, err
	}
	return j.prompt, nil
}

// lowerTypes returns a Gemini Schema (OpenAPI subset, types in upper case:
// OBJECT, STRING) as the JSON schema the generator reads: every "type"
// string in lower case.
func lowerTypes(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "type" {
					v[k] = strings.ToLower(s)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
