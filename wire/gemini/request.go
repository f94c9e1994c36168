// Package gemini is Google's Gemini API (generativelanguage, v1beta) on the
// wire: the generateContent and streamGenerateContent routes, their
// request as the fingerprint reads it, usageMetadata in groundhog's
// convention, the SSE stream of GenerateContentResponse chunks and its
// conversion to one body, and errors in Google's shape.
package gemini

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// APIVersion is the beta API version of the routes groundhog models (the
// one REST examples and the JS SDK use); StableVersion the stable one (the
// Go SDK's default). Both serve the same generateContent shape.
const (
	APIVersion    = "v1beta"
	StableVersion = "v1"
)

// MaxModel bounds the model name of a route.
const MaxModel = 256

// The methods of a /v1beta/models/{model}:{method} route.
const (
	MethodGenerate       = "generateContent"
	MethodStreamGenerate = "streamGenerateContent"
	MethodCountTokens    = "countTokens"
	MethodEmbed          = "embedContent"
	MethodBatchEmbed     = "batchEmbedContents"
)

// Path returns the upstream path of a generate call on model in API
// version (APIVersion or StableVersion): the streaming one asks for SSE
// (alt=sse), as the SDKs do.
func Path(version, model string, stream bool) string {
	if stream {
		return "/" + version + "/models/" + url.PathEscape(model) + ":" + MethodStreamGenerate + "?alt=sse"
	}
	return "/" + version + "/models/" + url.PathEscape(model) + ":" + MethodGenerate
}

// Version returns the API version of a Gemini path: StableVersion for a
// /v1/ path, APIVersion otherwise.
func Version(path string) string {
	if strings.HasPrefix(path, "/"+StableVersion+"/") {
		return StableVersion
	}
	return APIVersion
}

// IsPath reports whether path is a Gemini API route: anything under
// /v1beta/ and /upload/v1beta/ (media uploads, also /upload/v1/), and
// under /v1/ the cachedContents, tunedModels and fileSearchStores routes,
// the models/{model}:{method} ones (a colon in the last segment: OpenAI's
// /v1/models/{id} has none, but for its fine-tuned models, "ft:…") and a
// model's operations.
func IsPath(path string) bool {
	if strings.HasPrefix(path, "/"+APIVersion+"/") || strings.HasPrefix(path, "/"+StableVersion+"/cachedContents") || IsUploadPath(path) {
		return true
	}
	for _, c := range stableCollections {
		if rest, ok := strings.CutPrefix(path, "/"+StableVersion+"/"+c); ok && (rest == "" || rest[0] == '/' || rest[0] == ':') {
			return true
		}
	}
	rest, ok := strings.CutPrefix(path, "/"+StableVersion+"/models/")
	return ok && !strings.HasPrefix(rest, "ft:") && (strings.Contains(rest, ":") || strings.Contains(rest, "/"))
}

// ParsePath reads an escaped request path /v1beta/models/{model}:{method}
// (or /v1/models/{model}:{method}). model is the name without its
// "models/" prefix (the path's own), checked with CheckModel; ok is false
// for any other path.
func ParsePath(escapedPath string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, "/"+APIVersion+"/models/")
	if !found {
		rest, found = strings.CutPrefix(escapedPath, "/"+StableVersion+"/models/")
	}
	if !found || strings.Contains(rest, "/") {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	m, err := url.PathUnescape(rest[:i])
	if err != nil || CheckModel(m) != nil {
		return "", "", false
	}
	return m, rest[i+1:], true
}

// IsGenerate reports whether method is generateContent or
// streamGenerateContent, and which.
func IsGenerate(method string) (generate, stream bool) {
	switch method {
	case MethodGenerate:
		return true, false
	case MethodStreamGenerate:
		return true, true
	}
	return false, false
}

// CheckModel validates a model name taken from a path: 1–MaxModel bytes of
// letters, digits and "-", ".", "_" (gemini-2.5-flash,
// gemini-2.5-flash-preview-09-2025, gemini-3-pro-preview).
func CheckModel(m string) error {
	if m == "" {
		return groundhog.Errorf(groundhog.EINVALID, "missing model name in the path (/v1beta/models/{model}:generateContent)")
	}
	if len(m) > MaxModel {
		return groundhog.Errorf(groundhog.EINVALID, "model name is longer than %d bytes", MaxModel)
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return groundhog.Errorf(groundhog.EINVALID, "model name %q: only letters, digits, '-', '.' and '_'", m)
		}
	}
	return nil
}

// TrimModel returns a model name without the "models/" prefix that
// responses (modelVersion) and the SDKs may put before it.
func TrimModel(m string) string { return strings.TrimPrefix(m, "models/") }

// request is a GenerateContentRequest as far as its members' types are
// checked. Every member the API defines is an object or an array of
// objects or a string; a body with another type where one is expected is
// refused before anything is sent upstream, as Google refuses it.
type request struct {
	Contents          []map[string]json.RawMessage `json:"contents"`
	SystemInstruction map[string]json.RawMessage   `json:"systemInstruction"`
	Tools             []map[string]json.RawMessage `json:"tools"`
	ToolConfig        map[string]json.RawMessage   `json:"toolConfig"`
	SafetySettings    []map[string]json.RawMessage `json:"safetySettings"`
	GenerationConfig  map[string]json.RawMessage   `json:"generationConfig"`
	CachedContent     *string                      `json:"cachedContent"`
}

// FingerprintBody returns a generateContent request body as the
// fingerprint reads it: the body's members with "model" set to the model of
// the path (so the fingerprint's model and hash carry it). The stream mode
// is the route's, never the body's, so generateContent and
// streamGenerateContent with the same inputs share one hash and one cache
// entry. A cachedContent reference stays in the body: the tenant joins the
// hash, so the name is tenant-scoped.
//
// The error is EINVALID when body is not a JSON object, when a known
// member has the wrong type, or when contents is missing or empty.
//
// The usual body takes one pass (spliceModel); the rest are decoded and
// encoded again by encoding/json.
func FingerprintBody(model string, body []byte) ([]byte, error) {
	out, _, err := FingerprintBodyRefs(model, body)
	return out, err
}

// FingerprintBodyRefs is FingerprintBody, and which keys of the body may
// name a cache or a resource (RefKeys), when its one pass ran: a caller
// checking the body's references (BodyRefs) need not read it again when
// none does.
func FingerprintBodyRefs(model string, body []byte) ([]byte, RefKeys, error) {
	if out, keys, ok := spliceModel(model, body); ok {
		return out, keys, nil
	}
	out, err := decodeFingerprintBody(model, body)
	return out, RefKeys{}, err
}

// decodeFingerprintBody is FingerprintBody by encoding/json: the body
// decoded, its model set, and encoded again.
func decodeFingerprintBody(model string, body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if !json.Valid(body) {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid JSON payload received. The request body must be a JSON object.")
	}
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Invalid JSON payload received. The request body must be a JSON object.")
	}
	if err := CheckRequest(body); err != nil {
		return nil, err
	}
	m, _ := json.Marshal(model)
	top["model"] = m
	out, err := json.Marshal(top)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINVALID, "Invalid JSON payload received.", err)
	}
	return out, nil
}

// CheckRequest checks the types of the known members of a
// GenerateContentRequest and that contents is a non-empty array.
func CheckRequest(body []byte) error {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return groundhog.WrapError(groundhog.EINVALID, "Invalid JSON payload received. Invalid value at '"+te.Field+"' ("+te.Value+")", err)
		}
		return groundhog.WrapError(groundhog.EINVALID, "Invalid JSON payload received.", err)
	}
	if len(req.Contents) == 0 && req.CachedContent == nil {
		return groundhog.Errorf(groundhog.EINVALID, "* GenerateContentRequest.contents: contents is not specified")
	}
	return nil
}
