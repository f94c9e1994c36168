package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Gemini explicit caches (cachedContents) live in the provider account,
// which every tenant shares through one provider key. A cache belongs to
// the tenant that created it through the gateway: the name the provider
// answered a create with is recorded for that tenant (Options.Resources),
// and every other use of a cache name is checked against the record before
// anything is sent upstream.
//
//   - GET, PATCH, DELETE …/cachedContents/{id} of a cache the tenant did
//     not create: 404 NOT_FOUND, as Google answers an unknown cache.
//   - GET …/cachedContents: the provider's page with only the tenant's own
//     caches (nextPageToken kept).
//   - generateContent, streamGenerateContent and countTokens naming a
//     cachedContent the tenant did not create: 404 NOT_FOUND.
//   - DELETE of an own cache forgets the record once the provider answered
//     2xx.
//
// The storage rent of the caches is booked per day (cacherent.go): a
// create's answer records the cache, an update's answer its new expiry, a
// 2xx DELETE its end.

// heldAnswerBytes bounds an answer the gateway holds to read before the
// client sees it: a list page to filter (a page of at most 1,000 caches'
// or files' metadata), the answer to a create.
const heldAnswerBytes = 8 << 20

// errCacheNotFound is the answer for a cache the tenant does not own: the
// same as for a cache that does not exist, so a tenant learns nothing of
// another's caches.
func errCacheNotFound(name string) error {
	return groundhog.Errorf(groundhog.ENOTFOUND, "CachedContent not found (or permission denied): %s", name)
}

// checkCacheRefs returns ENOTFOUND unless tenant owns every cache in refs.
func (s *Server) checkCacheRefs(ctx context.Context, tenant string, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	own, err := s.opts.Resources.OwnedResources(ctx, tenant, groundhog.ResourceKindGeminiCache, refs)
	if err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "the cache records are unavailable", err)
	}
	for _, ref := range refs {
		found := false
		for _, o := range own {
			found = found || o == ref
		}
		if !found {
			return errCacheNotFound(ref)
		}
	}
	return nil
}

// checkGeminiBodyCaches returns ENOTFOUND unless tenant owns every cache
// a request body names. gk are the body's keys as the fingerprint's pass
// found them (gemini.FingerprintBodyRefs).
func (s *Server) checkGeminiBodyCaches(ctx context.Context, tenant string, body []byte, gk gemini.RefKeys) error {
	if !mayNameCache(body, gk) {
		return nil
	}
	return s.checkCacheRefs(ctx, tenant, gemini.CachedContentRefs(body))
}

// mayNameCache reports whether body may have a cachedContent member: as
// the keys the fingerprint's pass found say (gk), or when that pass did
// not run (gk.Known false), under some spelling of its bytes
// (mayHoldName).
func mayNameCache(body []byte, gk gemini.RefKeys) bool {
	if gk.Known {
		return gk.Cache
	}
	return mayHoldName(body, "cached")
}

// geminiCachedContents serves the cachedContents routes and the
// passthrough Gemini calls whose body may name a cache (countTokens); it
// reports false for every other route, which the caller passes through.
func (s *Server) geminiCachedContents(w http.ResponseWriter, r *http.Request) bool {
	name, collection, isCache := gemini.CachePath(r.URL.Path)
	_, method, isModel := gemini.ParsePath(r.URL.EscapedPath())
	countTokens := isModel && method == gemini.MethodCountTokens && r.Method == http.MethodPost
	if !isCache && !countTokens {
		return false
	}
	tenant, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, groundhog.ShapeGemini, err)
		return true
	}
	ctx := r.Context()
	switch {
	case countTokens:
		body, _, err := readBody(w, r, s.cfg.MaxBodyBytes) // not pooled: the passthrough reads it after this returns
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		if err := s.checkCacheRefs(ctx, tenant, gemini.CachedContentRefs(body)); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		s.passthrough(w, r)
	case !collection:
		if err := s.checkCacheRefs(ctx, tenant, []string{name}); err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		switch r.Method {
		case http.MethodPatch:
			// The answer's expireTime is the cache's new end of life.
			hw := newHeldWriter()
			s.passthrough(hw, r)
			if hw.status/100 == 2 && !hw.over {
				if c, ok := gemini.ParseCachedContent(hw.buf.Bytes()); ok {
					s.rentExtended(ctx, tenant, name, c.ExpireTime)
				}
			}
			hw.relay(w, hw.buf.Bytes())
		case http.MethodDelete:
			sw := &statusWriter{ResponseWriter: w}
			s.passthrough(sw, r)
			if sw.status/100 == 2 {
				s.rentEnded(ctx, tenant, name, s.clock.Now())
				if err := s.opts.Resources.DeleteResource(context.WithoutCancel(ctx), tenant, groundhog.ResourceKindGeminiCache, name); err != nil {
					s.log.Error("forgetting a deleted Gemini cache failed", "tenant", tenant, "cache", name, "err", err)
				}
			}
		default:
			s.passthrough(w, r)
		}
	case r.Method == http.MethodPost:
		// A cache holds contents and tools: the files and file search
		// stores they name must be the tenant's.
		if _, ok := s.geminiCheckBody(w, r, tenant, false, s.geminiScoped(ctx)); !ok {
			return true
		}
		hw := newHeldWriter()
		s.passthrough(hw, r)
		if hw.status/100 == 2 && !hw.over {
			created := gemini.CreatedCacheName(hw.buf.Bytes())
			if created != "" {
				err := s.opts.Resources.PutResource(context.WithoutCancel(ctx), groundhog.Resource{
					Tenant: tenant, Kind: groundhog.ResourceKindGeminiCache, Name: created, CreatedAt: s.clock.Now().UTC(),
				})
				if c, ok := gemini.ParseCachedContent(hw.buf.Bytes()); ok && err == nil {
					err = s.rentCreated(ctx, groundhog.RentedCache{
						Tenant: tenant, Operation: passthroughOperation(r), Model: strings.TrimPrefix(c.Model, "models/"), Name: c.Name, Tokens: c.Tokens,
						Created: timeOr(c.CreateTime, s.clock.Now()), Expire: c.ExpireTime,
					})
				}
				if err != nil {
					s.log.Error("recording a created Gemini cache failed", "tenant", tenant, "cache", created, "err", err)
					s.writeError(w, r, groundhog.ShapeGemini, groundhog.WrapError(groundhog.EUNAVAILABLE, "the cache was created but could not be recorded for this tenant", err))
					return true
				}
			}
		}
		hw.relay(w, hw.buf.Bytes())
	case r.Method == http.MethodGet:
		hw := newHeldWriter()
		s.passthrough(hw, r)
		if hw.status/100 != 2 {
			hw.relay(w, hw.buf.Bytes())
			return true
		}
		if hw.over {
			s.writeError(w, r, groundhog.ShapeGemini, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's cache list is over %d bytes", heldAnswerBytes))
			return true
		}
		names, err := gemini.CacheListNames(hw.buf.Bytes())
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		var owned []string
		if len(names) > 0 {
			if owned, err = s.opts.Resources.OwnedResources(ctx, tenant, groundhog.ResourceKindGeminiCache, names); err != nil {
				s.writeError(w, r, groundhog.ShapeGemini, groundhog.WrapError(groundhog.EUNAVAILABLE, "the cache records are unavailable", err))
				return true
			}
		}
		keep := make(map[string]bool, len(owned))
		for _, n := range owned {
			keep[n] = true
		}
		body, err := gemini.FilterCacheList(hw.buf.Bytes(), func(n string) bool { return keep[n] })
		if err != nil {
			s.writeError(w, r, groundhog.ShapeGemini, err)
			return true
		}
		hw.relay(w, body)
	default:
		s.passthrough(w, r)
	}
	return true
}

// statusWriter notes the status of a response written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// heldWriter holds a whole response (up to heldAnswerBytes) so the
// gateway can read it before the client sees it.
type heldWriter struct {
	h      http.Header
	status int
	buf    bytes.Buffer
	over   bool
}

func newHeldWriter() *heldWriter { return &heldWriter{h: http.Header{}} }

func (w *heldWriter) Header() http.Header { return w.h }

func (w *heldWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.over && w.buf.Len()+len(p) > heldAnswerBytes {
		w.over = true
		w.buf = bytes.Buffer{}
	}
	if !w.over {
		w.buf.Write(p)
	}
	return len(p), nil
}

// relay writes the held head with body to the client.
func (w *heldWriter) relay(dst http.ResponseWriter, body []byte) {
	h := dst.Header()
	for k, vs := range w.h {
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if w.status == 0 {
		w.status = http.StatusOK
	}
	dst.WriteHeader(w.status)
	_, _ = dst.Write(body)
}

// memResources is a ResourceStore in this process's memory, for a gateway
// built without a store that records resources.
type memResources struct {
	mu  sync.Mutex
	own map[[3]string]bool // tenant, kind, name
}

func newMemResources() *memResources { return &memResources{own: map[[3]string]bool{}} }

func (m *memResources) PutResource(_ context.Context, r groundhog.Resource) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.own[[3]string{r.Tenant, r.Kind, r.Name}] = true
	return nil
}

func (m *memResources) OwnedResources(_ context.Context, tenant, kind string, names []string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, n := range names {
		if m.own[[3]string{tenant, kind, n}] {
			out = append(out, n)
		}
	}
	return out, nil
}

func (m *memResources) DeleteResource(_ context.Context, tenant, kind, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.own, [3]string{tenant, kind, name})
	return nil
}

// passthroughOperation is the operation a passthrough request is booked
// under: its Groundhog-Operation header (the passthrough refused an
// invalid one), else "passthrough".
func passthroughOperation(r *http.Request) string {
	if v := r.Header.Get(hdrOperation); v != "" && config.ValidOperationName(v) {
		return v
	}
	return "passthrough"
}

// timeOr is t, or def when t is zero.
func timeOr(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
