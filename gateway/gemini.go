package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// geminiPrefix is the path prefix of the Gemini API routes.
const geminiPrefix = "/" + gemini.APIVersion + "/"

// geminiUploadPrefix is the path prefix of the Gemini media upload routes.
const geminiUploadPrefix = gemini.UploadPrefix

// gemini serves every Gemini API route (/v1beta/…, and /v1/models/{model}:…
// and /v1/cachedContents…, gemini.IsPath): generateContent and
// streamGenerateContent run the pipeline (shape gemini); every other
// Gemini API route (countTokens, embedContent, batchEmbedContents, the
// cachedContents lifecycle, models, files…) passes through, authenticated
// and ledgered.
func (s *Server) gemini(generate http.Handler) http.HandlerFunc {
	// A generate call waits for its answer under this frame: what the other
	// routes need is in functions of their own (design record 0021).
	return func(w http.ResponseWriter, r *http.Request) {
		if isGeminiGenerate(r) {
			generate.ServeHTTP(w, r)
			return
		}
		s.geminiResources(w, r)
	}
}

// isGeminiGenerate reports whether r calls a model's generateContent or
// streamGenerateContent.
//
//go:noinline
func isGeminiGenerate(r *http.Request) bool {
	if _, method, ok := gemini.ParsePath(r.URL.EscapedPath()); ok {
		gen, _ := gemini.IsGenerate(method)
		return gen
	}
	return false
}

// geminiResources serves the Gemini routes that are not a model's
// generation: the tenant's own resources, or the provider's.
func (s *Server) geminiResources(w http.ResponseWriter, r *http.Request) {
	if s.geminiOwned(w, r) { // geminiowned.go: the tenant's own files, batches and tuned models only
		return
	}
	if s.geminiCachedContents(w, r) { // geminicache.go: the tenant's own caches only
		return
	}
	if !gemini.KnownCollection(r.URL.Path) && s.geminiScoped(r.Context()) {
		// A collection the gateway does not keep per tenant would
		// reach every tenant's resources on the shared account.
		if _, err := s.authenticate(r); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
		s.writeError(w, r, groundhog.ShapeGemini, errGeminiNotFound(r.URL.Path))
		return
	}
	s.passthrough(w, r)
}

// geminiFingerprintBody is fingerprintBody for the gemini shape: the model
// from the path (/v1beta/models/{model}:generateContent), the stream mode
// from the method (streamGenerateContent), so both methods with the same
// inputs share one hash and one cache entry.
func geminiFingerprintBody(r *http.Request, body []byte, keys *gemini.RefKeys) ([]byte, bool, error) {
	model, method, ok := gemini.ParsePath(r.URL.EscapedPath())
	if !ok {
		return nil, false, groundhog.Errorf(groundhog.ENOTFOUND, "unknown route %s %s", r.Method, r.URL.Path)
	}
	_, stream := gemini.IsGenerate(method)
	fp, k, err := gemini.FingerprintBodyRefs(model, body)
	if keys != nil {
		*keys = k
	}
	return fp, stream, err
}

// geminiKey returns the gateway key a Gemini client sends: the
// x-goog-api-key header (the SDKs' way) or, on Gemini routes only
// (gemini.IsPath), the key query parameter (REST examples' way). The parameter is never sent
// upstream nor kept in a logged URL (withoutKey).
func geminiKey(r *http.Request) string {
	if k := hget(r.Header, "X-Goog-Api-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	if strings.Contains(r.URL.RawQuery, "key=") && gemini.IsPath(r.URL.Path) {
		return strings.TrimSpace(r.URL.Query().Get("key"))
	}
	return ""
}

// withoutKey returns a raw query without its key parameters.
func withoutKey(rawQuery string) string {
	if !strings.Contains(rawQuery, "key=") {
		return rawQuery
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return ""
	}
	q.Del("key")
	return q.Encode()
}

// geminiPassthroughCost prices a relayed Gemini API response: countTokens,
// reads and deletions (GET, DELETE), uploads and the files routes
// (geminiFreeRoute) and error answers are free; the
// creation of an explicit cache (POST …/cachedContents) is its tokens
// (the answer's usageMetadata.totalTokenCount) at the model's input rate,
// as Google bills it; everything else the provider may bill by tokens
// (embedContent, …) is unknown — never a silent zero. An update (PATCH)
// bills nothing itself: the storage it extends is the cache's rent.
func (s *Server) geminiPassthroughCost(r *http.Request, status int, answer *capped) (string, groundhog.Usage, groundhog.Money) {
	model, method, _ := gemini.ParsePath(r.URL.EscapedPath())
	if status/100 != 2 || method == gemini.MethodCountTokens || r.Method == http.MethodGet || r.Method == http.MethodDelete || geminiFreeRoute(r) {
		return model, groundhog.Usage{}, 0
	}
	if _, collection, ok := gemini.CachePath(r.URL.Path); ok {
		if !collection && r.Method == http.MethodPatch {
			return model, groundhog.Usage{}, 0
		}
		if collection && r.Method == http.MethodPost && !answer.over {
			if c, ok := gemini.ParseCachedContent(answer.buf.Bytes()); ok {
				u := groundhog.Usage{InputTokens: c.Tokens}
				entry := gemini.PriceModel(c.Model, u)
				return entry, u, s.cfg.PriceTable.Cost(entry, u)
			}
		}
	}
	return model, groundhog.Usage{}, groundhog.CostUnknown
}

// geminiOr routes /v1/models/{id}: a Gemini method call
// ({model}:generateContent, …) to gemini, anything else to other (the
// OpenAI model listing).
func (s *Server) geminiOr(gemini, other http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); strings.Contains(id, ":") && !strings.HasPrefix(id, "ft:") { // OpenAI's fine-tuned models are ft:…
			gemini(w, r)
			return
		}
		other(w, r)
	}
}
