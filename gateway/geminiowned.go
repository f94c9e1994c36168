package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Gemini files, batches, tuned models, file search stores and the
// operations of predictLongRunning live in the provider account,
// which every tenant shares through one provider key. As with explicit
// caches (geminicache.go) and the OpenAI and Anthropic resources
// (owned.go), a resource belongs to the tenant that created it through the
// gateway: the name Google answered a create with is recorded for that
// tenant (Options.Resources), and every other use of a name is checked
// against the record before anything is sent upstream.
//
//   - Creates — a media upload (/upload/v1beta/files: a resumable upload's
//     last chunk, a multipart or raw upload), POST …/files and
//     files:register, models/{model}:batchGenerateContent and
//     :asyncBatchEmbedContent, POST …/tunedModels: Google's answer is held
//     (it is small), the name it gives recorded for the tenant, then
//     relayed unchanged. A resumable upload's upload_id is recorded when it
//     starts: its chunks are the starter's only.
//   - Any method on files/{id}, batches/{id}, tunedModels/{id} and what
//     follows them (:download, :cancel, :generateContent, /operations/…)
//     of a name the tenant did not create: Google's 404 NOT_FOUND, as for
//     a name that does not exist, nothing sent upstream, no ledger row.
//   - A list: Google's page with only the tenant's own items,
//     nextPageToken kept; pages holding none of them are read past, up to
//     ownedListFollow, so a client paging until the token ends sees all.
//   - A model call, a batch (each inline request), a cache's or a tuned
//     model's create naming a file (fileData.fileUri, inputConfig.fileName),
//     a tuned model, a file search store (fileSearchStoreNames) or a
//     cachedContent the tenant did not create: 404 NOT_FOUND before the
//     cache or the provider. A batch's input file must also be one whose
//     lines the gateway read as it was uploaded (geminiscan.go).
//   - What lives under a store (documents, :importFile, uploads into it,
//     their operations) is the store owner's.
//   - With the provider account shared, a Gemini collection the gateway
//     does not keep per tenant is 404 NOT_FOUND (gemini.go); the
//     collections Google also serves under /v1/ are scoped there too.
//   - The file Google writes a batch's results to (responsesFile) becomes
//     the batch owner's when a get, cancel or list answer names it.
//   - DELETE of an own resource forgets the record once Google answered
//     2xx.
//
// As for owned.go, nothing is recorded or checked in keyless mode or when
// the caller's own Gemini key is forwarded (sharedAccount): the account is
// then the caller's. Explicit caches stay scoped in every mode
// (geminicache.go).

// geminiKinds maps a resource collection to the kind of its records.
var geminiKinds = map[string]string{
	gemini.Files:            groundhog.ResourceKindGeminiFile,
	gemini.Batches:          groundhog.ResourceKindGeminiBatch,
	gemini.TunedModels:      groundhog.ResourceKindGeminiTunedModel,
	gemini.FileSearchStores: groundhog.ResourceKindGeminiFileSearchStore,
	gemini.ModelOperations:  groundhog.ResourceKindGeminiOperation,
}

// geminiScoped reports whether the Gemini resources are kept per tenant:
// the provider account is the gateway's, shared by more than one tenant.
func (s *Server) geminiScoped(ctx context.Context) bool {
	return sharedAccount(&s.opts.Gemini) && !s.singleTenant(ctx)
}

// errGeminiNotFound is the answer for a resource the tenant does not own:
// the same as for one that does not exist.
func errGeminiNotFound(name string) error {
	return groundhog.Errorf(groundhog.ENOTFOUND, "Requested entity was not found: %s", name)
}

// geminiOwns returns ENOTFOUND unless tenant owns every name of kind.
func (s *Server) geminiOwns(ctx context.Context, tenant, kind string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	own, err := s.opts.Resources.OwnedResources(ctx, tenant, kind, names)
	if err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err)
	}
	for _, n := range names {
		if !slices.Contains(own, n) {
			return errGeminiNotFound(n)
		}
	}
	return nil
}

// checkGeminiRefs returns ENOTFOUND unless tenant owns every resource refs
// names: caches always (geminicache.go), files and tuned models when the
// account is shared (scoped).
func (s *Server) checkGeminiRefs(ctx context.Context, tenant string, refs gemini.Refs, scoped bool) error {
	if err := s.checkCacheRefs(ctx, tenant, refs.Caches); err != nil {
		return err
	}
	if !scoped {
		return nil
	}
	if err := s.geminiOwns(ctx, tenant, groundhog.ResourceKindGeminiFile, refs.Files); err != nil {
		return err
	}
	if err := s.geminiOwns(ctx, tenant, groundhog.ResourceKindGeminiFileSearchStore, refs.FileSearchStores); err != nil {
		return err
	}
	return s.geminiOwns(ctx, tenant, groundhog.ResourceKindGeminiTunedModel, refs.TunedModels)
}

// checkGeminiInputFiles returns ENOTFOUND unless every file a batch's
// inputConfig.fileName names was uploaded through the gateway by tenant
// and named only tenant's resources (geminiscan.go): Google reads the
// requests of such a file itself.
func (s *Server) checkGeminiInputFiles(ctx context.Context, tenant string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	ok, err := s.opts.Resources.OwnedResources(ctx, tenant, groundhog.ResourceKindGeminiInputFile, files)
	if err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err)
	}
	for _, f := range files {
		if !slices.Contains(ok, f) {
			return groundhog.Errorf(groundhog.ENOTFOUND, "Requested entity was not found: %s names a resource that is not the caller's, or was not uploaded through the gateway", f)
		}
	}
	return nil
}

// mayNameGeminiResource reports whether body may name a file or a tuned
// model, as mayNameCache does a cache.
func mayNameGeminiResource(body []byte, gk gemini.RefKeys) bool {
	if gk.Known {
		return gk.Resource
	}
	return mayHoldName(body, "file", "uned")
}

// mayNameGeminiAny reports whether a body the fingerprint did not read may
// name a cache, a file or a tuned model (its escapes searched for once).
func mayNameGeminiAny(body []byte) bool { return mayHoldName(body, "cached", "file", "uned") }

// checkGeminiBodyFiles returns ENOTFOUND unless tenant owns every file and
// tuned model a generateContent body names. A body that is not a JSON
// object is left to the pipeline's own checks. Only a gateway whose
// tenants share the Gemini account looks (geminiScoped), before reading
// the body; gk is as for checkGeminiBodyCaches.
func (s *Server) checkGeminiBodyFiles(ctx context.Context, tenant string, body []byte, gk gemini.RefKeys) error {
	if !s.geminiScoped(ctx) || !mayNameGeminiResource(body, gk) {
		return nil
	}
	refs, err := gemini.BodyRefs(body)
	if err != nil {
		return nil
	}
	refs.Caches = nil // checkGeminiBodyCaches
	return s.checkGeminiRefs(ctx, tenant, refs, true)
}

// geminiOwned serves the files, batches and tunedModels routes and the
// model methods other than generateContent whose body may name a
// resource; it reports false for every other route, and for a model method
// it has checked, which the caller serves on (the body is put back).
func (s *Server) geminiOwned(w http.ResponseWriter, r *http.Request) bool {
	esc := r.URL.EscapedPath()
	res, isRes := gemini.ResourcePath(esc)
	_, method, isModel := gemini.ParsePath(esc)
	modelPost := isModel && r.Method == http.MethodPost
	if !isRes && !modelPost || !passthroughMethods[r.Method] {
		return false
	}
	ctx := r.Context()
	scoped := s.geminiScoped(ctx)
	if !scoped && !(modelPost && gemini.IsBatchCreate(method)) {
		return false
	}
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, groundhog.ShapeGemini, err)
		return true
	}
	if modelPost {
		return s.geminiModelCall(w, r, tenant, method, scoped)
	}
	kind := geminiKinds[res.Collection]
	switch {
	case res.Collection == gemini.ModelOperations && res.Name == "" && r.Method == http.MethodGet:
		s.geminiList(w, r, tenant, res.Collection)
	case res.Collection == gemini.ModelOperations && res.Name == "":
		s.writeError(w, r, groundhog.ShapeGemini, errGeminiNotFound(res.Model+"/"+gemini.ModelOperations))
	case res.Name == "" && r.Method == http.MethodPost:
		if _, ok := s.geminiCheckBody(w, r, tenant, true, scoped); !ok {
			return true
		}
		s.geminiHeld(w, r, tenant, kind, func(b []byte) []string { return gemini.CreatedNames(res.Collection, b) })
	case res.Name == "" && r.Method == http.MethodGet && res.Method == "":
		s.geminiList(w, r, tenant, res.Collection)
	case res.Name == "":
		s.passthrough(w, r)
	default:
		if err := s.geminiOwns(ctx, tenant, kind, []string{res.Name}); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		switch {
		case r.Method == http.MethodDelete && res.Method == "" && res.Sub == "":
			sw := &statusWriter{ResponseWriter: w}
			s.passthrough(sw, r)
			if sw.status/100 == 2 {
				if err := s.opts.Resources.DeleteResource(context.WithoutCancel(ctx), tenant, kind, res.Name); err != nil {
					s.log.Error("forgetting a deleted resource failed", "tenant", tenant, "kind", kind, "name", res.Name, "err", err)
				}
			}
		case res.Collection == gemini.Batches && res.Sub == "" &&
			(r.Method == http.MethodGet && res.Method == "" || r.Method == http.MethodPost && res.Method == "cancel"):
			s.geminiHeld(w, r, tenant, groundhog.ResourceKindGeminiFile, gemini.BatchResultFiles)
		case res.Collection == gemini.TunedModels && res.Method != "" && r.Method == http.MethodPost:
			s.geminiModelCall(w, r, tenant, res.Method, true)
		case res.Collection == gemini.FileSearchStores && r.Method == http.MethodPost:
			// :importFile names a file; a document's methods may name more.
			if _, ok := s.geminiCheckBody(w, r, tenant, res.Method == "importFile", true); ok {
				s.passthrough(w, r)
			}
		default:
			s.passthrough(w, r)
		}
	}
	return true
}

// geminiModelCall checks the resources a model method's body names
// (models/{model}:{method} other than generateContent, or
// tunedModels/{id}:{method} of an own tuned model). A batch create is
// served here: its body must be a JSON object, and the batch it makes is
// recorded for tenant. Any other method is served here only when it is
// refused or on a tuned model (passed through); otherwise it reports false
// with the body put back.
func (s *Server) geminiModelCall(w http.ResponseWriter, r *http.Request, tenant, method string, scoped bool) bool {
	batch := gemini.IsBatchCreate(method)
	_, _, onModels := gemini.ParsePath(r.URL.EscapedPath())
	refs, ok := s.geminiCheckBody(w, r, tenant, batch, scoped)
	if !ok {
		return true
	}
	if batch && scoped {
		if err := s.checkGeminiInputFiles(r.Context(), tenant, refs.InputFiles); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
	}
	switch {
	case batch && scoped:
		s.geminiHeld(w, r, tenant, groundhog.ResourceKindGeminiBatch, func(b []byte) []string { return gemini.CreatedNames(gemini.Batches, b) })
	case method == gemini.MethodPredictLongRunning && scoped && onModels:
		s.geminiHeld(w, r, tenant, groundhog.ResourceKindGeminiOperation, func(b []byte) []string { return gemini.CreatedNames(gemini.ModelOperations, b) })
	case batch, !onModels:
		s.passthrough(w, r)
	default:
		return false
	}
	return true
}

// geminiCheckBody reads r's body and checks the resources it names
// (checkGeminiRefs), then puts it back for the passthrough; it returns
// what the body names, and false when it has answered. A body that is not
// a JSON object is a 400 when strict (a create), and otherwise left to
// Google.
func (s *Server) geminiCheckBody(w http.ResponseWriter, r *http.Request, tenant string, strict, scoped bool) (gemini.Refs, bool) {
	var refs gemini.Refs
	if r.ContentLength == 0 && !strict {
		return refs, true
	}
	body, _, err := readBody(w, r, s.cfg.MaxBodyBytes) // not pooled: the passthrough reads it after this returns
	if err != nil {
		s.writeError(w, r, groundhog.ShapeGemini, err)
		return refs, false
	}
	if strict || mayNameGeminiAny(body) {
		var err error
		refs, err = gemini.BodyRefs(body)
		switch {
		case err != nil && strict:
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return refs, false
		case err == nil:
			if err := s.checkGeminiRefs(r.Context(), tenant, refs, scoped); err != nil {
				s.writeError(w, r, groundhog.ShapeGemini, err)
				return refs, false
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return refs, true
}

// geminiHeld passes r through with its answer held, records the names
// namesOf reads from a 2xx answer as tenant's of kind, and relays the
// answer unchanged. A resource made but not recorded is a 503: the tenant
// could not reach it.
func (s *Server) geminiHeld(w http.ResponseWriter, r *http.Request, tenant, kind string, namesOf func([]byte) []string) {
	hw := newHeldWriter()
	s.passthrough(hw, r)
	if hw.over {
		s.writeError(w, r, groundhog.ShapeGemini, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's answer is over %d bytes", heldAnswerBytes))
		return
	}
	if hw.status/100 == 2 {
		if err := s.recordOwned(r.Context(), tenant, ownedKind{kind: kind}, namesOf(hw.buf.Bytes())); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
	}
	hw.relay(w, hw.buf.Bytes())
}

// geminiList answers a list of collection c with Google's page keeping
// only tenant's own items, in Google's order, nextPageToken kept. When a
// whole page is someone else's and Google has more, the gateway reads on
// (pageToken the page's nextPageToken), up to ownedListFollow pages, so a
// client that stops at an empty page does not stop early. The files
// Google made for the tenant's batches become the tenant's.
func (s *Server) geminiList(w http.ResponseWriter, r *http.Request, tenant, c string) {
	ctx := r.Context()
	kind := geminiKinds[c]
	for hop := 0; ; hop++ {
		hw := newHeldWriter()
		s.passthrough(hw, r)
		if hw.status/100 != 2 {
			hw.relay(w, hw.buf.Bytes())
			return
		}
		if hw.over {
			s.writeError(w, r, groundhog.ShapeGemini, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's list is over %d bytes", heldAnswerBytes))
			return
		}
		names, next, err := gemini.ListNames(c, hw.buf.Bytes())
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
		var ask []string
		for _, n := range names {
			if n != "" {
				ask = append(ask, n)
			}
		}
		var owned []string
		if len(ask) > 0 {
			if owned, err = s.opts.Resources.OwnedResources(ctx, tenant, kind, ask); err != nil {
				s.writeError(w, r, groundhog.ShapeGemini, groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err))
				return
			}
		}
		if len(owned) == 0 && next != "" && hop < ownedListFollow {
			q := r.URL.Query()
			q.Set("pageToken", next)
			nr := r.Clone(ctx)
			nr.URL.RawQuery = q.Encode()
			nr.Body, nr.ContentLength = http.NoBody, 0
			r = nr
			continue
		}
		body, err := gemini.FilterList(c, hw.buf.Bytes(), func(n string) bool { return slices.Contains(owned, n) })
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
		if c == gemini.Batches {
			if err := s.recordOwned(ctx, tenant, ownedKind{kind: groundhog.ResourceKindGeminiFile}, gemini.BatchResultFiles(body)); err != nil {
				s.writeError(w, r, groundhog.ShapeGemini, err)
				return
			}
		}
		hw.relay(w, body)
		return
	}
}

// geminiUpload serves the media upload routes (/upload/v1beta/…). A
// resumable upload's start is answered with Google's X-Goog-Upload-URL
// pointed at the gateway (the client sends its chunks through it, never to
// Google with its gateway key) and without any key parameter; its
// upload_id is recorded for the tenant, and a chunk naming an upload_id
// the tenant did not start is 404 NOT_FOUND. The file an upload makes is
// recorded for the tenant. A start's metadata body must be a JSON object.
func (s *Server) geminiUpload(w http.ResponseWriter, r *http.Request) {
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, groundhog.ShapeGemini, err)
		return
	}
	ctx := r.Context()
	scoped := s.geminiScoped(ctx)
	uploadID := gemini.UploadID(r.URL.RawQuery)
	store, known := gemini.UploadTarget(r.URL.EscapedPath())
	if scoped && !known && uploadID == "" { // a chunk is scoped by its upload_id
		s.writeError(w, r, groundhog.ShapeGemini, errGeminiNotFound(r.URL.Path))
		return
	}
	if scoped && store != "" && uploadID == "" {
		if err := s.geminiOwns(ctx, tenant, groundhog.ResourceKindGeminiFileSearchStore, []string{store}); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
	}
	if uploadID != "" && scoped && passthroughMethods[r.Method] {
		if err := s.geminiOwns(ctx, tenant, groundhog.ResourceKindGeminiUpload, []string{uploadID}); err != nil {
			if groundhog.ErrorCode(err) == groundhog.ENOTFOUND {
				err = errGeminiNotFound("upload " + uploadID)
			}
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
	}
	if r.Method != http.MethodPost {
		s.passthrough(w, r)
		return
	}
	if uploadID == "" && strings.Contains(strings.ToLower(r.Header.Get("X-Goog-Upload-Command")), "start") && r.ContentLength != 0 {
		body, _, err := readBody(w, r, s.cfg.MaxBodyBytes)
		if err == nil {
			_, err = gemini.BodyRefs(body)
		}
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	var sc *uploadScan
	var sr *scanReader
	if scoped && uploadID != "" && store == "" {
		sc, sr = s.scanChunk(r, uploadID, tenant) // geminiscan.go: the lines a batch's input file holds
	}
	hw := newHeldWriter()
	s.passthrough(hw, r)
	if hw.over {
		s.writeError(w, r, groundhog.ShapeGemini, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's answer is over %d bytes", heldAnswerBytes))
		return
	}
	for _, h := range []string{"X-Goog-Upload-Url", "X-Goog-Upload-Control-Url"} {
		if u := hw.h.Get(h); u != "" {
			if h == "X-Goog-Upload-Url" && scoped && hw.status/100 == 2 {
				if id := uploadIDOf(u); id != "" {
					if err := s.recordOwned(ctx, tenant, ownedKind{kind: groundhog.ResourceKindGeminiUpload}, []string{id}); err != nil {
						s.writeError(w, r, groundhog.ShapeGemini, err)
						return
					}
					if store == "" && uploadID == "" {
						s.scans.start(id, tenant)
					}
				}
			}
			hw.h.Set(h, gatewayUploadURL(r, u))
		}
	}
	final := strings.EqualFold(hw.h.Get("X-Goog-Upload-Status"), "final")
	var created []string
	if scoped && hw.status/100 == 2 {
		created = gemini.CreatedNames(gemini.Files, hw.buf.Bytes())
		if err := s.recordOwned(ctx, tenant, ownedKind{kind: groundhog.ResourceKindGeminiFile}, created); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
	}
	if sc != nil {
		if err := s.endChunk(ctx, uploadID, sc, sr, hw.status, final && hw.status/100 == 2, created); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return
		}
	}
	if scoped && hw.status/100 == 2 {
		if uploadID != "" && final {
			if err := s.opts.Resources.DeleteResource(context.WithoutCancel(ctx), tenant, groundhog.ResourceKindGeminiUpload, uploadID); err != nil {
				s.log.Error("forgetting a finished upload failed", "tenant", tenant, "err", err)
			}
		}
	}
	hw.relay(w, hw.buf.Bytes())
}

// uploadIDOf returns the upload_id of an upload URL.
func uploadIDOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return gemini.UploadID(u.RawQuery)
}

// gatewayUploadURL returns Google's upload URL pointed at the gateway that
// r reached, without a key parameter; "" when it cannot be read.
func gatewayUploadURL(r *http.Request, upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		return ""
	}
	u.Scheme, u.Host = "http", r.Host
	if r.TLS != nil {
		u.Scheme = "https"
	}
	u.RawQuery = withoutKey(u.RawQuery)
	return u.String()
}

// geminiFreeRoute reports whether r is a route Google does not bill: the
// Files API (a media upload of a file, a file's create or register) and a
// file search store's create, the start and the middle chunks of an upload
// to a store. Indexing into a store (the last chunk of
// uploadToFileSearchStore, :importFile) is billed by its embedding tokens,
// which the answer does not carry: unknown.
func geminiFreeRoute(r *http.Request) bool {
	if gemini.IsUploadPath(r.URL.Path) {
		store, ok := gemini.UploadTarget(r.URL.EscapedPath())
		cmd := strings.ToLower(r.Header.Get("X-Goog-Upload-Command"))
		return ok && (store == "" || cmd != "" && !strings.Contains(cmd, "finalize")) // a store indexes the upload when it ends
	}
	res, ok := gemini.ResourcePath(r.URL.EscapedPath())
	return ok && (res.Collection == gemini.Files || res.Collection == gemini.FileSearchStores && res.Name == "" && res.Method == "")
}
