package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/wire"
)

// Files, batches and uploads live in the provider account, which every
// tenant shares through the gateway's provider key. As with Gemini's
// explicit caches (geminicache.go), a resource belongs to the tenant that
// created it through the gateway: the id the provider answered a create
// with is recorded for that tenant (Options.Resources), and every other use
// of an id is checked against the record before anything is sent upstream.
//
//   - POST /v1/files, /v1/batches, /v1/uploads, /v1/messages/batches (and
//     Anthropic's /v1/files): the provider's answer is held (it is small),
//     its id recorded for the tenant, then relayed unchanged. A completed
//     Upload records the File it made.
//   - A batch create naming an input_file_id the tenant did not create: 404
//     as for a missing file, nothing sent upstream.
//   - Any method on …/{id} and its sub-routes (content, cancel, results,
//     parts, complete) of an id the tenant did not create: the provider's
//     own 404 not-found answer, nothing sent upstream, no ledger row.
//   - GET of a collection: the provider's page with only the tenant's own
//     items (ownedList).
//   - DELETE of an own resource forgets the record once the provider
//     answered 2xx.
//   - The files the provider makes for an own OpenAI batch (output_file_id,
//     error_file_id) become the tenant's when a get, cancel or list answer
//     of the batch names them.

// When the provider sees the caller's own key (Upstream.ForwardClientKey
// with no gateway key: the embedded transport), the account is the
// caller's and the provider keeps it apart from everyone else's: nothing
// is recorded or checked, and resources made outside groundhog stay
// reachable.

// sharedAccount reports whether up reaches the provider with the gateway's
// own account, which every tenant shares.
func sharedAccount(up *Upstream) bool { return up.APIKey != "" || !up.ForwardClientKey }

// singleTenant reports whether the gateway runs keyless (the one tenant
// "local"): nobody to keep resources apart from, so files and batches pass
// through unrecorded and unchecked, and those made outside groundhog — in
// the provider's console, by another tool — stay reachable. Resources made
// while keyless belong to no tenant once gateway keys exist.
func (s *Server) singleTenant(ctx context.Context) bool {
	keyless, err := s.noKeys(ctx)
	return err == nil && keyless
}

// ownedKind is one kind of provider resource scoped to its tenant.
type ownedKind struct {
	kind  string
	shape groundhog.Shape // the provider's error shape
	noun  string          // in the not-found message
}

var (
	kindOpenAIFile      = ownedKind{groundhog.ResourceKindOpenAIFile, groundhog.ShapeResponses, "File"}
	kindOpenAIBatch     = ownedKind{groundhog.ResourceKindOpenAIBatch, groundhog.ShapeResponses, "Batch"}
	kindOpenAIUpload    = ownedKind{groundhog.ResourceKindOpenAIUpload, groundhog.ShapeResponses, "Upload"}
	kindAnthropicFile   = ownedKind{groundhog.ResourceKindAnthropicFile, groundhog.ShapeMessages, "File"}
	kindAnthropicBatchM = ownedKind{groundhog.ResourceKindAnthropicMessageBatch, groundhog.ShapeMessages, "Message batch"}
	kindOpenAIVector    = ownedKind{groundhog.ResourceKindOpenAIVectorStore, groundhog.ShapeResponses, "Vector store"}
	kindOpenAIConv      = ownedKind{groundhog.ResourceKindOpenAIConversation, groundhog.ShapeResponses, "Conversation"}
	kindOpenAIEval      = ownedKind{groundhog.ResourceKindOpenAIEval, groundhog.ShapeResponses, "Eval"}
	kindOpenAIFineTune  = ownedKind{groundhog.ResourceKindOpenAIFineTuningJob, groundhog.ShapeResponses, "Fine-tuning job"}
	kindOpenAIFTModel   = ownedKind{groundhog.ResourceKindOpenAIFineTunedModel, groundhog.ShapeResponses, "Model"}
	kindOpenAIResponse  = ownedKind{groundhog.ResourceKindOpenAIResponse, groundhog.ShapeResponses, "Response"}
	kindOpenAIChat      = ownedKind{groundhog.ResourceKindOpenAIChatCompletion, groundhog.ShapeChat, "ChatCompletion"}
	kindOpenAIContainer = ownedKind{groundhog.ResourceKindOpenAIContainer, groundhog.ShapeResponses, "Container"}
	// A fine-tuned model's checkpoint (ft:…:ckpt-step-N) is a model too: a
	// job's checkpoint list records them, and the permissions of one
	// (/v1/fine_tuning/checkpoints/{model}/permissions) are its owner's.
	kindOpenAICheckpoint = ownedKind{groundhog.ResourceKindOpenAIFineTunedModel, groundhog.ShapeResponses, "Checkpoint"}
)

// ownedListFollow bounds the provider pages one list call reads past pages
// that hold none of the tenant's items.
const ownedListFollow = 10

// ownedRoute returns the kind of resource a request's path addresses, the
// id it names ("" for the collection) and the rest of the path after the
// id; ok is false for every other route and for a provider account that
// is not shared.
func (s *Server) ownedRoute(r *http.Request) (k ownedKind, id, sub string, ok bool) {
	p := r.URL.Path
	up, shape := s.passthroughUpstream(r)
	if !sharedAccount(up) || s.singleTenant(r.Context()) {
		return ownedKind{}, "", "", false
	}
	anthropic := shape == groundhog.ShapeMessages
	for _, c := range []struct {
		prefix    string
		anthropic bool
		k         ownedKind
	}{
		{"/v1/messages/batches", true, kindAnthropicBatchM},
		{"/v1/files", true, kindAnthropicFile},
		{"/v1/files", false, kindOpenAIFile},
		{"/v1/batches", false, kindOpenAIBatch},
		{"/v1/uploads", false, kindOpenAIUpload},
		{"/v1/vector_stores", false, kindOpenAIVector},
		{"/v1/conversations", false, kindOpenAIConv},
		{"/v1/evals", false, kindOpenAIEval},
		{"/v1/fine_tuning/jobs", false, kindOpenAIFineTune},
		{"/v1/fine_tuning/checkpoints", false, kindOpenAICheckpoint},
		{"/v1/containers", false, kindOpenAIContainer},
		{"/v1/chat/completions", false, kindOpenAIChat}, // the collection only for a GET: its POST is a model call
		{"/v1/responses", false, kindOpenAIResponse},
	} {
		if c.anthropic != anthropic {
			continue
		}
		if rest, cut := strings.CutPrefix(p, c.prefix); cut && (rest == "" || rest[0] == '/') {
			id, sub, _ = strings.Cut(strings.TrimPrefix(rest, "/"), "/")
			if c.k == kindOpenAIResponse && (id == "" || countRoutes[p] != "") {
				break // a model call, or one that reads a model call's body (v1)
			}
			if c.k == kindOpenAIChat && id == "" && r.Method == http.MethodPost {
				break
			}
			return c.k, id, sub, true
		}
	}
	return ownedKind{}, "", "", false
}

// ownedResources serves the routes of the resources a tenant owns
// (ownedRoute); it reports false for every other route, which the caller
// passes through.
func (s *Server) ownedResources(w http.ResponseWriter, r *http.Request) bool {
	k, id, sub, ok := s.ownedRoute(r)
	if !ok || !passthroughMethods[r.Method] {
		return false // the passthrough answers an unknown method
	}
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, k.shape, err)
		return true
	}
	ctx := r.Context()
	if id != "" && !s.ownsOrNotFound(w, r, tenant, k, id) {
		return true
	}
	if r.Method == http.MethodPost && checkJSONContentType(hget(r.Header, "Content-Type")) == nil {
		// A create or an action naming resources (a vector store's files,
		// a batch's requests, a fine-tuning job's training file) may name
		// only the tenant's own.
		body, _, err := readBody(w, r, s.cfg.MaxBodyBytes) // not pooled: the passthrough reads it after this returns
		if err == nil {
			err = s.checkRefs(ctx, tenant, k.shape, body, nil, nil)
		}
		if err != nil {
			s.writeRefError(w, r, k.shape, err)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	switch {
	case id == "" && r.Method == http.MethodPost:
		s.ownedCreate(w, r, tenant, k)
	case id == "" && r.Method == http.MethodGet:
		s.ownedList(w, r, tenant, k)
	case id == "":
		s.passthrough(w, r)
	default:
		switch {
		case sub == "" && r.Method == http.MethodDelete:
			sw := &statusWriter{ResponseWriter: w}
			s.passthrough(sw, r)
			if sw.status/100 == 2 {
				if err := s.opts.Resources.DeleteResource(context.WithoutCancel(ctx), tenant, k.kind, id); err != nil {
					s.log.Error("forgetting a deleted resource failed", "tenant", tenant, "kind", k.kind, "id", id, "err", err)
				}
			}
		case k == kindOpenAIUpload && sub == "complete" && r.Method == http.MethodPost:
			s.ownedHeld(w, r, tenant, kindOpenAIFile, one(wire.UploadFileID))
		case k == kindOpenAIBatch && (sub == "" && r.Method == http.MethodGet || sub == "cancel" && r.Method == http.MethodPost):
			s.ownedHeld(w, r, tenant, kindOpenAIFile, wire.BatchFileIDs)
		case k == kindOpenAIFineTune && sub == "" && r.Method == http.MethodGet:
			s.ownedHeld(w, r, tenant, kindOpenAIFTModel, wire.FineTunedModels)
		case k == kindOpenAIFineTune && sub == "checkpoints" && r.Method == http.MethodGet:
			s.ownedHeld(w, r, tenant, kindOpenAIFTModel, wire.CheckpointModels)
		default:
			s.passthrough(w, r)
		}
	}
	return true
}

// checkRefs returns ENOTFOUND unless tenant owns every resource a body
// names (wire.BodyRefs): OpenAI files, vector stores and conversations in
// a chat or Responses call or an OpenAI resource's create, Anthropic files
// in a messages call or a message batch. A body that cannot name one
// (mayHoldName) is not read again.
//
// fp, when not nil, is the fingerprint of these exact bytes, which looked
// out for the names on its pass (mayNameResource). notes, when not nil, are the
// fingerprint memo's notes on them (fingerprint.Memo.ComputeNoted): a body
// found naming no resource is noted so, and the same bytes sent again
// skip the search — at 200 KB, mayHoldName alone costs several times a
// whole cache hit. A body that names resources is checked every time:
// ownership can change.
func (s *Server) checkRefs(ctx context.Context, tenant string, shape groundhog.Shape, body []byte, fp *fingerprint.Result, notes *atomic.Uint32) error {
	file, up := kindOpenAIFile, &s.opts.OpenAI
	switch shape {
	case groundhog.ShapeChat, groundhog.ShapeResponses:
	case groundhog.ShapeMessages:
		file, up = kindAnthropicFile, &s.opts.Anthropic
	default:
		return nil
	}
	if !sharedAccount(up) || s.singleTenant(ctx) {
		return nil
	}
	if notes != nil && notes.Load()&noteNamesNoResource != 0 {
		return nil
	}
	if !mayNameResource(shape, body, fp) {
		noteNoResource(notes)
		return nil
	}
	refs := wire.BodyRefs(body)
	type check struct {
		k    ownedKind
		refs []string
	}
	checks := []check{{file, refs.Files}}
	if file == kindOpenAIFile {
		checks = append(checks, check{kindOpenAIVector, refs.VectorStores}, check{kindOpenAIConv, refs.Conversations},
			check{kindOpenAIResponse, refs.Responses}, check{kindOpenAIContainer, refs.Containers})
	}
	named := false
	for _, c := range checks {
		if len(c.refs) == 0 {
			continue
		}
		named = true
		own, err := s.owned(ctx, tenant, c.k, c.refs)
		if err != nil {
			return groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err)
		}
		for _, ref := range c.refs {
			if !slices.Contains(own, ref) {
				return groundhog.WrapError(groundhog.ENOTFOUND, fmt.Sprintf("No such %s object: %s", c.k.noun, ref), &notOwned{c.k, ref})
			}
		}
	}
	if !named {
		noteNoResource(notes) // a name in the text, or a file_id of the caller's own data
	}
	return nil
}

// noteNamesNoResource is the fingerprint memo's note (a bit of
// fingerprint.Memo.ComputeNoted's notes) on bytes that checkRefs found
// naming no resource, for the shape they were fingerprinted under.
const noteNamesNoResource = 1 << 0

func noteNoResource(notes *atomic.Uint32) {
	if notes != nil {
		notes.Or(noteNamesNoResource)
	}
}

// sameBytes reports whether a and b are the same bytes in memory (the
// fingerprinted body is the body itself for every shape but Bedrock's and
// Gemini's).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// notOwned is a resource named in a body that the tenant does not own.
type notOwned struct {
	k  ownedKind
	id string
}

func (e *notOwned) Error() string { return "not owned: " + e.id }

// writeRefError answers err from checkRefs: on a resource route, a
// resource the tenant does not own as the provider answers a missing one
// (writeNotFound).
func (s *Server) writeRefError(w http.ResponseWriter, r *http.Request, shape groundhog.Shape, err error) {
	if no := (*notOwned)(nil); errors.As(err, &no) {
		writeNotFound(w, no.k, no.id)
		return
	}
	s.writeError(w, r, shape, err)
}

// checkModel returns ENOTFOUND for an OpenAI fine-tuned model ("ft:…")
// that no fine-tuning job of tenant made, as OpenAI answers a model the
// caller cannot use.
func (s *Server) checkModel(ctx context.Context, tenant string, shape groundhog.Shape, model string) error {
	if !strings.HasPrefix(model, "ft:") || (shape != groundhog.ShapeChat && shape != groundhog.ShapeResponses) {
		return nil
	}
	if !sharedAccount(&s.opts.OpenAI) || s.singleTenant(ctx) {
		return nil
	}
	own, err := s.opts.Resources.OwnedResources(ctx, tenant, kindOpenAIFTModel.kind, []string{model})
	if err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err)
	}
	if len(own) == 0 {
		return groundhog.Errorf(groundhog.ENOTFOUND, "The model `%s` does not exist or you do not have access to it.", model)
	}
	return nil
}

// ownsOrNotFound reports whether tenant owns the resource id of kind k;
// when it does not, it has answered the provider's not-found.
func (s *Server) ownsOrNotFound(w http.ResponseWriter, r *http.Request, tenant string, k ownedKind, id string) bool {
	own, err := s.owned(r.Context(), tenant, k, []string{id})
	if err != nil {
		s.writeError(w, r, k.shape, groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err))
		return false
	}
	if len(own) == 0 {
		writeNotFound(w, k, id)
		return false
	}
	return true
}

// writeNotFound answers a resource the tenant does not own as the provider
// answers one that does not exist, so a tenant learns nothing of
// another's resources: OpenAI's 404 invalid_request_error naming the id,
// Anthropic's 404 not_found_error.
func writeNotFound(w http.ResponseWriter, k ownedKind, id string) {
	var body []byte
	if k.shape == groundhog.ShapeMessages {
		body = wire.ErrorBody(k.shape, groundhog.ENOTFOUND, fmt.Sprintf("%s not found: %s", k.noun, id))
	} else {
		msg, _ := json.Marshal(fmt.Sprintf("No such %s object: %s", k.noun, id))
		body = []byte(`{"error":{"message":` + string(msg) + `,"type":"invalid_request_error","param":"id","code":null}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(body)
}

// ownedCreate passes a create through and records the id it answers for
// tenant. An OpenAI batch must name an input file the tenant owns.
func (s *Server) ownedCreate(w http.ResponseWriter, r *http.Request, tenant string, k ownedKind) {
	if k == kindOpenAIBatch {
		body, _, err := readBody(w, r, s.cfg.MaxBodyBytes) // not pooled: the passthrough reads it after this returns
		if err != nil {
			s.writeError(w, r, k.shape, err)
			return
		}
		refs, err := wire.InputFileIDs(body)
		if err != nil {
			s.writeError(w, r, k.shape, err)
			return
		}
		for _, ref := range refs {
			if !s.ownsOrNotFound(w, r, tenant, kindOpenAIFile, ref) {
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	s.ownedHeld(w, r, tenant, k, one(wire.ResourceID))
}

// one adapts a reader of one id to ownedHeld's.
func one(idOf func([]byte) string) func([]byte) []string {
	return func(b []byte) []string {
		if id := idOf(b); id != "" {
			return []string{id}
		}
		return nil
	}
}

// ownedHeld passes r through with its answer held, records the ids idsOf
// reads from a 2xx answer as tenant's resources of kind k, and relays the
// answer unchanged. A resource made but not recorded is a 503: the tenant
// could not reach it.
func (s *Server) ownedHeld(w http.ResponseWriter, r *http.Request, tenant string, k ownedKind, idsOf func([]byte) []string) {
	hw := newHeldWriter()
	s.passthrough(hw, r)
	if hw.over {
		s.writeError(w, r, k.shape, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's answer is over %d bytes", heldAnswerBytes))
		return
	}
	if hw.status/100 == 2 {
		if err := s.recordOwned(r.Context(), tenant, k, idsOf(hw.buf.Bytes())); err != nil {
			s.writeError(w, r, k.shape, err)
			return
		}
	}
	hw.relay(w, hw.buf.Bytes())
}

// recordOwned records ids as tenant's resources of kind k.
func (s *Server) recordOwned(ctx context.Context, tenant string, k ownedKind, ids []string) error {
	for _, id := range ids {
		err := s.opts.Resources.PutResource(context.WithoutCancel(ctx), groundhog.Resource{
			Tenant: tenant, Kind: k.kind, Name: id, CreatedAt: s.clock.Now().UTC(),
		})
		if err != nil {
			s.log.Error("recording a created resource failed", "tenant", tenant, "kind", k.kind, "id", id, "err", err)
			return groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource was created but could not be recorded for this tenant", err)
		}
	}
	return nil
}

// ownedList answers a list with the provider's page keeping only tenant's
// own items, in the provider's order. has_more stays the provider's;
// first_id and last_id name the first and last item kept (null when none),
// so a page never names another tenant's resource. A page may therefore
// hold fewer items than its limit. When a whole page is someone else's and
// the provider has more, the gateway reads on (after/after_id the page's
// last id, or before_id its first id when the client pages backwards), up
// to ownedListFollow pages, so a client that stops at an empty page (the
// official SDKs do) does not stop early; past that bound the empty page is
// answered with has_more true.
func (s *Server) ownedList(w http.ResponseWriter, r *http.Request, tenant string, k ownedKind) {
	ctx := r.Context()
	for hop := 0; ; hop++ {
		hw := newHeldWriter()
		s.passthrough(hw, r)
		if hw.status/100 != 2 {
			hw.relay(w, hw.buf.Bytes())
			return
		}
		if hw.over {
			s.writeError(w, r, k.shape, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's list is over %d bytes", heldAnswerBytes))
			return
		}
		page, isList, err := wire.ReadListPage(hw.buf.Bytes())
		if err != nil {
			s.writeError(w, r, k.shape, err)
			return
		}
		if !isList {
			hw.relay(w, hw.buf.Bytes()) // nothing listed
			return
		}
		var ids []string
		for _, id := range page.IDs {
			if id != "" {
				ids = append(ids, id)
			}
		}
		var owned []string
		if len(ids) > 0 {
			if owned, err = s.opts.Resources.OwnedResources(ctx, tenant, k.kind, ids); err != nil {
				s.writeError(w, r, k.shape, groundhog.WrapError(groundhog.EUNAVAILABLE, "the resource records are unavailable", err))
				return
			}
		}
		if len(owned) == 0 && (page.HasMore || page.NextPage != "") && hop < ownedListFollow {
			if next := nextPage(r, k, page, ids); next != nil {
				r = next
				continue
			}
		}
		keep := make(map[string]bool, len(owned))
		for _, n := range owned {
			keep[n] = true
		}
		body, err := wire.FilterListPage(hw.buf.Bytes(), func(id string) bool { return keep[id] })
		if err != nil {
			s.writeError(w, r, k.shape, err)
			return
		}
		if k == kindOpenAIBatch {
			if err := s.recordOwned(ctx, tenant, kindOpenAIFile, wire.BatchFileIDs(body)); err != nil {
				s.writeError(w, r, k.shape, err)
				return
			}
		}
		hw.relay(w, body)
		return
	}
}

// nextPage returns the request for the provider's page after page (before
// it, for an Anthropic list paged with before_id; the page its next_page
// token names, for a list that gives one), or nil when it cannot say where
// that is.
func nextPage(r *http.Request, k ownedKind, page wire.ListPage, ids []string) *http.Request {
	q := r.URL.Query()
	param, cursor := "after", ""
	if len(ids) > 0 {
		cursor = ids[len(ids)-1]
	}
	switch {
	case page.NextPage != "":
		param, cursor = "page", page.NextPage
	case k.shape == groundhog.ShapeMessages:
		param = "after_id"
		if page.LastID != "" {
			cursor = page.LastID
		}
		if q.Has("before_id") {
			param, cursor = "before_id", page.FirstID
		}
		q.Del("after_id")
		q.Del("before_id")
	}
	if cursor == "" {
		return nil
	}
	q.Set(param, cursor)
	next := r.Clone(r.Context())
	next.URL.RawQuery = q.Encode()
	next.Body = http.NoBody
	next.ContentLength = 0
	return next
}

// countRoutes are the passthrough routes that read a model call's body
// (and so the files, responses and containers it names) without making the
// objects a model call makes: token counts, and the compaction of a
// Responses conversation.
var countRoutes = map[string]groundhog.Shape{
	"/v1/messages/count_tokens":  groundhog.ShapeMessages,
	"/v1/responses/input_tokens": groundhog.ShapeResponses,
	"/v1/responses/compact":      groundhog.ShapeResponses,
}

// v1 serves every /v1/ route the gateway does not model: the resources a
// tenant owns (ownedResources) scoped to it, a token count or compaction
// naming only the tenant's own resources, everything else passed through.
func (s *Server) v1(w http.ResponseWriter, r *http.Request) {
	if s.ownedResources(w, r) {
		return
	}
	model := ""
	if shape, ok := countRoutes[r.URL.Path]; ok && r.Method == http.MethodPost {
		tenant, err := s.authenticate(r)
		if err != nil {
			s.writeError(w, r, shape, err)
			return
		}
		body, _, err := readBody(w, r, s.cfg.MaxBodyBytes) // not pooled: the passthrough reads it after this returns
		if err == nil {
			err = s.checkRefs(r.Context(), tenant, shape, body, nil, nil)
		}
		if err != nil {
			s.writeError(w, r, shape, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		// A compaction's answer has a usage and no model: it is billed
		// as a call of the model asked.
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(body, &m) == nil {
			model = m.Model
		}
	}
	s.passthroughFor(w, r, model)
}
