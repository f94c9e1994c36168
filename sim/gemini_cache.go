package sim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Gemini explicit caches (cachedContents). A cache holds a prompt prefix
// (tools, tool config, system instruction, contents) of one model for a
// scope (API key) until its expireTime, by the server's Clock. Google bills
//
//   - its creation: the cached tokens at the model's input rate, once;
//   - every read: a generateContent naming it reads its tokens at the
//     cached rate (cachedContentTokenCount, included in promptTokenCount);
//   - its storage: tokens × the model's storage rate per million tokens per
//     hour over its life, prorated to the second (groundhog.Price's
//     CacheStorageCost): from creation to its deletion or its expiry,
//     whichever comes first. A live cache accrues up to the clock's now
//     when the bill is read.
//
// The shortest cache is the model's context-caching minimum
// (geminiMinTokens: 1,024 tokens on Flash and Flash-Lite, 4,096 on Pro);
// a shorter one is refused with 400 INVALID_ARGUMENT. A cache without ttl
// or expireTime lives one hour.

// geminiCacheDefaultTTL is the life of a cache created without ttl or
// expireTime.
const geminiCacheDefaultTTL = time.Hour

// geminiCache is one explicit cache.
type geminiCache struct {
	name        string // "cachedContents/{id}"
	scope       string
	model       string // "models/…"
	displayName string
	req         geminiRequest // its prompt: tools, toolConfig, systemInstruction, contents
	tokens      int
	priceModel  string // the price-table entry of its tokens
	created     time.Time
	updated     time.Time
	expire      time.Time
	deleted     time.Time // zero while not deleted
}

// end is when c stops living (and accruing rent): its deletion if it was
// deleted before its expiry, else its expiry.
func (c *geminiCache) end() time.Time {
	if !c.deleted.IsZero() && c.deleted.Before(c.expire) {
		return c.deleted
	}
	return c.expire
}

// alive reports whether c can be used at now.
func (c *geminiCache) alive(now time.Time) bool {
	return c.deleted.IsZero() && now.Before(c.expire)
}

// geminiCaches holds every explicit cache the server created, alive or not
// (the dead ones still count in the bill's rent).
type geminiCaches struct {
	mu    sync.Mutex
	seq   uint64
	all   []*geminiCache
	named map[string]*geminiCache
}

// geminiCacheFinder returns the lookup of r's scope's live caches by name
// (with or without the "cachedContents/" prefix).
func (s *Server) geminiCacheFinder(r *http.Request) func(string) (*geminiCache, error) {
	scope := scopeOf(r)
	return func(ref string) (*geminiCache, error) {
		return s.findGeminiCache(scope, gemini.CacheName(ref))
	}
}

// findGeminiCache returns scope's live cache name, or ENOTFOUND.
func (s *Server) findGeminiCache(scope, name string) (*geminiCache, error) {
	now := s.clock.Now()
	s.gcaches.mu.Lock()
	defer s.gcaches.mu.Unlock()
	c := s.gcaches.named[name]
	if c == nil || c.scope != scope || !c.alive(now) {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "CachedContent not found (or permission denied): %s", name)
	}
	return c, nil
}

// useGeminiCache makes req the cache's prompt followed by req's contents,
// as Google does for a request naming a cachedContent: such a request may
// not set its own systemInstruction, tools or toolConfig, and must use the
// cache's model.
func useGeminiCache(req *geminiRequest, model string, find func(string) (*geminiCache, error)) (*geminiCache, error) {
	if req.SystemInstruction != nil || len(req.Tools) > 0 || req.ToolConfig != nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.")
	}
	if find == nil {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "CachedContent not found (or permission denied): %s", *req.CachedContent)
	}
	c, err := find(*req.CachedContent)
	if err != nil {
		return nil, err
	}
	if gemini.TrimModel(c.model) != gemini.TrimModel(model) {
		return nil, groundhog.Errorf(groundhog.EINVALID, "Model used by GenerateContent request (models/%s) and CachedContent (%s) has to be the same!", gemini.TrimModel(model), c.model)
	}
	req.Tools = c.req.Tools
	req.ToolConfig = c.req.ToolConfig
	req.SystemInstruction = c.req.SystemInstruction
	req.Contents = append(append(req.Contents[:0:0], c.req.Contents...), req.Contents...)
	return c, nil
}

// geminiCacheBody is a CachedContent as a create or an update sends it.
type geminiCacheBody struct {
	geminiRequest
	Model       *string `json:"model"`
	DisplayName *string `json:"displayName"`
	TTL         *string `json:"ttl"`
	ExpireTime  *string `json:"expireTime"`
	Name        *string `json:"name"`
}

// expiry reads a body's ttl ("300s", "1.5s") or expireTime (RFC 3339)
// against now; set is false when it has neither.
func (b *geminiCacheBody) expiry(now time.Time) (t time.Time, set bool, err error) {
	switch {
	case b.TTL != nil && b.ExpireTime != nil:
		return time.Time{}, false, groundhog.Errorf(groundhog.EINVALID, "Only one of ttl or expire_time may be set.")
	case b.TTL != nil:
		secs, ok := strings.CutSuffix(*b.TTL, "s")
		f, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil || f < 0 || f > 1e10 {
			return time.Time{}, false, groundhog.Errorf(groundhog.EINVALID, "Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf.Duration), Field 'ttl', Illegal duration format; duration must end with 's': %q", *b.TTL)
		}
		return now.Add(time.Duration(f * float64(time.Second))), true, nil
	case b.ExpireTime != nil:
		t, err := time.Parse(time.RFC3339Nano, *b.ExpireTime)
		if err != nil {
			return time.Time{}, false, groundhog.Errorf(groundhog.EINVALID, "Invalid value at 'cached_content.expire_time' (type.googleapis.com/google.protobuf.Timestamp), Field 'expireTime', Invalid time format: %q", *b.ExpireTime)
		}
		return t, true, nil
	}
	return time.Time{}, false, nil
}

// serveGeminiCaches serves /v1beta/cachedContents (POST create, GET list)
// and /v1beta/cachedContents/{id} (GET, PATCH, DELETE), and the same under
// /v1/.
func (s *Server) serveGeminiCaches(w http.ResponseWriter, r *http.Request, name string, collection bool) {
	scope := scopeOf(r)
	if collection {
		switch r.Method {
		case http.MethodPost:
			s.createGeminiCache(w, r, scope)
		case http.MethodGet:
			s.listGeminiCaches(w, r, scope)
		default:
			w.Header().Set("Allow", "GET, POST")
			writeError(w, familyGemini, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed for %s", r.Method, r.URL.Path))
		}
		return
	}
	name = strings.TrimSuffix(name, "/")
	if strings.Count(name, "/") != 1 || strings.HasSuffix(name, "/") {
		writeError(w, familyGemini, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	switch r.Method {
	case http.MethodGet:
		c, err := s.findGeminiCache(scope, name)
		if err != nil {
			writeErr(w, familyGemini, err)
			return
		}
		s.gcaches.mu.Lock()
		body := c.json()
		s.gcaches.mu.Unlock()
		writeJSON(w, http.StatusOK, body)
	case http.MethodPatch:
		s.updateGeminiCache(w, r, scope, name)
	case http.MethodDelete:
		c, err := s.findGeminiCache(scope, name)
		if err != nil {
			writeErr(w, familyGemini, err)
			return
		}
		now := s.clock.Now()
		s.gcaches.mu.Lock()
		if c.deleted.IsZero() {
			c.deleted = now
		}
		delete(s.gcaches.named, c.name)
		s.gcaches.mu.Unlock()
		writeBody(w, http.StatusOK, []byte("{}\n"))
	default:
		w.Header().Set("Allow", "GET, PATCH, DELETE")
		writeError(w, familyGemini, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed for %s", r.Method, r.URL.Path))
	}
}

func (s *Server) createGeminiCache(w http.ResponseWriter, r *http.Request, scope string) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	var b geminiCacheBody
	if err := decodeBody(body, &b); err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if b.Model == nil || gemini.TrimModel(*b.Model) == "" {
		writeError(w, familyGemini, http.StatusBadRequest, "* CreateCachedContentRequest.cached_content.model: model is required.")
		return
	}
	if b.CachedContent != nil {
		writeError(w, familyGemini, http.StatusBadRequest, "A CachedContent can not be created from another CachedContent.")
		return
	}
	model := "models/" + gemini.TrimModel(*b.Model)
	now := s.clock.Now()
	expire, set, err := b.expiry(now)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if !set {
		expire = now.Add(geminiCacheDefaultTTL)
	}
	if !expire.After(now) {
		writeError(w, familyGemini, http.StatusBadRequest, "The expire_time of a CachedContent must be in the future.")
		return
	}
	ts, _, _, err := geminiPrompt(&b.geminiRequest)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if min := geminiMinTokens(model); ts.n < min {
		writeError(w, familyGemini, http.StatusBadRequest, fmt.Sprintf("Cached content is too small. total_token_count=%d, min_total_token_count=%d", ts.n, min))
		return
	}
	c := &geminiCache{
		scope: scope, model: model, req: b.geminiRequest, tokens: ts.n,
		created: now, updated: now, expire: expire,
	}
	if b.DisplayName != nil {
		c.displayName = *b.DisplayName
	}
	c.priceModel = gemini.PriceModel(model, groundhog.Usage{InputTokens: int64(ts.n)})
	s.gcaches.mu.Lock()
	s.gcaches.seq++
	c.name = gemini.CachePrefix + geminiCacheID(scope, s.gcaches.seq)
	if s.gcaches.named == nil {
		s.gcaches.named = map[string]*geminiCache{}
	}
	s.gcaches.named[c.name] = c
	s.gcaches.all = append(s.gcaches.all, c)
	out := c.json()
	s.gcaches.mu.Unlock()
	s.chargeCacheCreation(c.priceModel, int64(c.tokens))
	writeJSON(w, http.StatusOK, out)
}

// geminiCacheID is a cache's id: unique per server, and different for
// every scope so names do not hint at another key's caches.
func geminiCacheID(scope string, seq uint64) string {
	sd := seed{}.derive("cachedContents:"+scope, seq)
	return strings.ToLower(strings.TrimLeft(sd.id(""), "_-"))
}

func (s *Server) updateGeminiCache(w http.ResponseWriter, r *http.Request, scope, name string) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	var b geminiCacheBody
	if err := decodeBody(body, &b); err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if mask := r.URL.Query().Get("updateMask"); mask != "" {
		for _, f := range strings.Split(mask, ",") {
			switch strings.TrimSpace(f) {
			case "ttl", "expireTime", "expire_time":
			default:
				writeError(w, familyGemini, http.StatusBadRequest, fmt.Sprintf("Invalid update_mask path %q: only ttl and expire_time can be updated.", f))
				return
			}
		}
	}
	if b.Model != nil || b.DisplayName != nil || len(b.Contents) > 0 || b.SystemInstruction != nil || len(b.Tools) > 0 || b.ToolConfig != nil {
		writeError(w, familyGemini, http.StatusBadRequest, "Only ttl and expire_time of a CachedContent can be updated.")
		return
	}
	c, err := s.findGeminiCache(scope, name)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	now := s.clock.Now()
	expire, set, err := b.expiry(now)
	if err != nil {
		writeErr(w, familyGemini, err)
		return
	}
	if !set {
		writeError(w, familyGemini, http.StatusBadRequest, "An update of a CachedContent must set ttl or expire_time.")
		return
	}
	if !expire.After(now) {
		writeError(w, familyGemini, http.StatusBadRequest, "The expire_time of a CachedContent must be in the future.")
		return
	}
	s.gcaches.mu.Lock()
	c.expire, c.updated = expire, now
	out := c.json()
	s.gcaches.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listGeminiCaches(w http.ResponseWriter, r *http.Request, scope string) {
	q := r.URL.Query()
	size := 50
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, familyGemini, http.StatusBadRequest, fmt.Sprintf("Invalid value at 'page_size' (TYPE_INT32), %q", v))
			return
		}
		if n > 0 {
			size = min(n, 1000)
		}
	}
	after := uint64(0) // the list continues after the cache of this sequence number
	if tok := q.Get("pageToken"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		n, perr := strconv.ParseUint(string(b), 10, 64)
		if err != nil || perr != nil {
			writeError(w, familyGemini, http.StatusBadRequest, "Invalid page_token.")
			return
		}
		after = n
	}
	now := s.clock.Now()
	s.gcaches.mu.Lock()
	var page []any
	next := ""
	for i, c := range s.gcaches.all {
		seq := uint64(i + 1)
		if seq <= after || c.scope != scope || !c.alive(now) {
			continue
		}
		if len(page) == size {
			next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatUint(after, 10)))
			break
		}
		page = append(page, c.json())
		after = seq
	}
	s.gcaches.mu.Unlock()
	out := map[string]any{}
	if len(page) > 0 {
		out["cachedContents"] = page
	}
	if next != "" {
		out["nextPageToken"] = next
	}
	writeJSON(w, http.StatusOK, out)
}

// json is c as Google answers it (the prompt itself is never returned).
// Callers hold the caches' lock.
func (c *geminiCache) json() map[string]any {
	out := map[string]any{
		"name":          c.name,
		"model":         c.model,
		"createTime":    c.created.UTC().Format(time.RFC3339Nano),
		"updateTime":    c.updated.UTC().Format(time.RFC3339Nano),
		"expireTime":    c.expire.UTC().Format(time.RFC3339Nano),
		"usageMetadata": map[string]any{"totalTokenCount": c.tokens},
	}
	if c.displayName != "" {
		out["displayName"] = c.displayName
	}
	return out
}

// chargeCacheCreation bills a cache's creation: its tokens at the input
// rate of priceModel.
func (s *Server) chargeCacheCreation(priceModel string, tokens int64) {
	in, _ := s.cost(priceModel, groundhog.Usage{InputTokens: tokens})
	s.billMu.Lock()
	defer s.billMu.Unlock()
	s.bill.CacheCreations++
	s.bill.CacheCreateTokens += tokens
	s.bill.InputTokens += tokens
	s.bill.InputUSD += in
	s.bill.USD += in
}

// cacheRent is the storage rent of every explicit cache up to now (a live
// cache up to now, an ended one over its whole life), in picodollars, and
// the token-seconds it was charged for. A cache whose model has no storage
// rate in the price table costs nothing here: the simulated provider bills
// what its table says.
func (s *Server) cacheRent(now time.Time) (rent groundhog.Money, tokenSeconds int64) {
	s.gcaches.mu.Lock()
	caches := append([]*geminiCache(nil), s.gcaches.all...)
	ends := make([]time.Time, len(caches))
	for i, c := range caches {
		ends[i] = c.end()
	}
	s.gcaches.mu.Unlock()
	for i, c := range caches {
		end := ends[i]
		if now.Before(end) {
			end = now
		}
		secs := groundhog.CacheLifeSeconds(c.created, end)
		p, ok := s.prices.Lookup(c.priceModel)
		if !ok {
			continue
		}
		if m := p.CacheStorageCost(int64(c.tokens), secs); m.Known() {
			rent += m
			tokenSeconds += int64(c.tokens) * secs
		}
	}
	return rent, tokenSeconds
}

// GeminiCacheLife is one explicit cache's life as the simulated provider
// bills it: tests and tools compare it with what a gateway booked.
type GeminiCacheLife struct {
	Name    string
	Model   string // the price-table entry
	Tokens  int64
	Created time.Time
	End     time.Time // deletion or expiry
}

// GeminiCaches returns the life of every explicit cache the server
// created, alive or not, in creation order.
func (s *Server) GeminiCaches() []GeminiCacheLife {
	s.gcaches.mu.Lock()
	defer s.gcaches.mu.Unlock()
	out := make([]GeminiCacheLife, len(s.gcaches.all))
	for i, c := range s.gcaches.all {
		out[i] = GeminiCacheLife{Name: c.name, Model: c.priceModel, Tokens: int64(c.tokens), Created: c.created, End: c.end()}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}
