package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/explicitcache"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Managed Gemini explicit caches (prompt_cache.explicit: auto): on a
// generateContent or streamGenerateContent miss of an operation with auto
// on, the explicit-cache manager observes the request's prefix and, when a
// cache it holds covers it, the request goes upstream naming that cache
// instead of carrying the prefix. The client's body keeps its fingerprint,
// cache key and idempotency hash; only the upstream request changes.
//
// The caches are made through the same Gemini upstream and provider key,
// recorded as the tenant's (Options.Resources, as a client's own create
// is) and booked in the ledger under the call's operation: the create
// (its tokens at the input rate), and the storage rent of the cache per
// UTC day, as a client's own cache's (cacherent.go).

// newExplicitManager builds the manager from prompt_cache's explicit
// settings; the Server's clock drives it.
func newExplicitManager(s *Server) *explicitcache.Manager {
	pc := s.cfg.PromptCache
	ttl, window, minUses := pc.ExplicitTTL, pc.ExplicitWindow, pc.ExplicitMinUses
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	if window == 0 {
		window = 10 * time.Minute
	}
	if minUses == 0 {
		minUses = 3
	}
	return explicitcache.New(explicitcache.Config{
		Model:     explicitcache.Model{TTL: ttl, Window: window, ImplicitLife: geminiImplicitLife},
		MinUses:   minUses,
		MinTokens: geminiCacheMinTokens,
		Rates:     s.explicitRates,
		Provider:  geminiCaches{s},
		Clock:     s.clock,
		Logger:    s.log,
	})
}

// geminiImplicitLife is how long Gemini's implicit cache keeps a prefix
// after its last use.
const geminiImplicitLife = 5 * time.Minute

// geminiCacheMinTokens is the smallest explicit cache Google creates for
// model: 4,096 tokens on the Pro models, 1,024 on Flash and Flash-Lite.
func geminiCacheMinTokens(model string) int64 {
	if gemini.Tiered(model) {
		return 4096
	}
	return 1024
}

// explicitRates reads model's rates for a cache of tokens tokens from the
// price table: the entry a call with that prompt would be priced at.
func (s *Server) explicitRates(model string, tokens int64) (explicitcache.Rates, bool) {
	p, ok := s.cfg.PriceTable.Lookup(gemini.PriceModel(model, groundhog.Usage{InputTokens: tokens}))
	if !ok {
		return explicitcache.Rates{}, false
	}
	// Google bills a cache's creation as its tokens at the input rate.
	return explicitcache.Rates{Input: p.Input, Cached: p.CachedInput, Creation: p.Input, StoragePerHour: p.CacheStoragePerHour}, true
}

// rentCost is the storage rent of a cache of tokens tokens of model that
// lived from created to end, per whole second as the provider bills it.
func (s *Server) rentCost(model string, tokens int64, created, end time.Time) groundhog.Money {
	p, ok := s.cfg.PriceTable.Lookup(gemini.PriceModel(model, groundhog.Usage{InputTokens: tokens}))
	if !ok {
		return groundhog.CostUnknown
	}
	return p.CacheStorageCost(tokens, groundhog.CacheLifeSeconds(created, end))
}

// explicitBefore is the explicit-cache hook of a flight: for a Gemini call
// whose operation has prompt_cache.explicit auto, the manager's verdict
// (nil: send body as it is).
func (s *Server) explicitBefore(ctx context.Context, c *call, body []byte) *explicitcache.Use {
	if c.shape != groundhog.ShapeGemini || !s.cfg.ExplicitCache(c.op) {
		return nil
	}
	return s.explicit.Before(ctx, explicitcache.Owner{Tenant: c.tenant, Operation: c.op, Model: c.fp.Model}, body)
}

// cacheRefused reports whether an answer to a request naming a managed
// cache says the request cannot use it: the cache is gone (404, or 403
// as Google answers a cache it does not find for the key) or the rewritten
// request was refused (400). The client's own body is then sent.
func cacheRefused(status int) bool {
	return status == http.StatusNotFound || status == http.StatusForbidden || status == http.StatusBadRequest
}

// SweepExplicitCaches deletes the managed Gemini caches that stopped
// paying and forgets the expired ones, at the Server's clock. serve runs
// it every 30 seconds (ExplicitCacheLoop).
func (s *Server) SweepExplicitCaches(ctx context.Context) { s.explicit.Sweep(ctx) }

// ExplicitCaches returns the names of the managed caches the Server
// holds now.
func (s *Server) ExplicitCaches() []string { return s.explicit.Live() }

// ExplicitCacheLoop sweeps the managed caches, then books the explicit
// caches' rent (SweepCacheRent), every interval until ctx ends; then it
// deletes the managed caches left (a cache no request will name only
// costs rent) and books their rent.
func (s *Server) ExplicitCacheLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			s.explicit.Close(dctx)
			s.SweepCacheRent(dctx)
			cancel()
			return
		case <-t.C:
			s.explicit.Sweep(ctx)
			s.SweepCacheRent(ctx)
		}
	}
}

// geminiCaches is explicitcache.Provider over the Gemini upstream.
type geminiCaches struct{ s *Server }

var _ explicitcache.Provider = geminiCaches{}

// call sends one request to the Gemini upstream with the provider key and
// returns the answer's status and body, booking it in the ledger through
// book (given the status and body).
func (g geminiCaches) call(ctx context.Context, o explicitcache.Owner, method, path string, body []byte, book func(status int, answer []byte) (groundhog.Money, groundhog.Usage)) (int, []byte, error) {
	s := g.s
	up := &s.opts.Gemini
	if up.BaseURL == "" {
		return 0, nil, groundhog.Errorf(groundhog.EUPSTREAM, "no gemini upstream is configured")
	}
	start := s.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.UpstreamTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(up.BaseURL, "/")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	up.authorize(req, nil, groundhog.ShapeGemini)
	if up.Sign != nil {
		if err := up.Sign(ctx, req, body); err != nil {
			return 0, nil, err
		}
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, upstreamError(ctx, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, heldAnswerBytes))
	if err != nil {
		return 0, nil, upstreamError(ctx, err)
	}
	cost, usage := groundhog.Money(0), groundhog.Usage{}
	if res.StatusCode/100 == 2 && book != nil {
		cost, usage = book(res.StatusCode, answer)
	}
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(body)
	row := groundhog.LedgerEntry{
		ID: groundhog.NewTimeID(start), Time: start.UTC(), Tenant: o.Tenant, Operation: o.Operation, Shape: groundhog.ShapeGemini,
		Model: boundModel(o.Model), Provider: up.Provider, Outcome: groundhog.OutcomePassthrough, Status: res.StatusCode,
		Usage: usage, Cost: cost, FullCost: cost,
		RequestHash: "sha256:" + hex.EncodeToString(h.Sum(nil)), Latency: s.clock.Now().Sub(start),
	}
	if s.opts.Ledger != nil {
		if err := s.opts.Ledger.Record(row); err != nil {
			s.log.Error("ledger record failed", "tenant", row.Tenant, "operation", row.Operation, "err", err)
		}
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, answer, groundhog.Errorf(groundhog.EUPSTREAM, "the provider answered %d to %s %s", res.StatusCode, method, path)
	}
	return res.StatusCode, answer, nil
}

func cachePath(name string) string { return "/" + gemini.APIVersion + "/" + gemini.CacheName(name) }

// CountTokens counts a create body's tokens with countTokens (free): the
// body as a generateContentRequest; a prefix without contents is counted
// with one one-character user turn, an estimate a token or two over.
func (g geminiCaches) CountTokens(ctx context.Context, o explicitcache.Owner, body []byte) (int64, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, err
	}
	delete(req, "ttl")
	if _, ok := req["contents"]; !ok {
		req["contents"] = json.RawMessage(`[{"role":"user","parts":[{"text":"."}]}]`)
	}
	wrapped, _ := json.Marshal(map[string]any{"generateContentRequest": req})
	_, answer, err := g.call(ctx, o, http.MethodPost, "/"+gemini.APIVersion+"/models/"+url.PathEscape(o.Model)+":"+gemini.MethodCountTokens, wrapped, nil)
	if err != nil {
		return 0, err
	}
	var n struct {
		TotalTokens int64 `json:"totalTokens"`
	}
	if err := json.Unmarshal(answer, &n); err != nil || n.TotalTokens <= 0 {
		return 0, groundhog.Errorf(groundhog.EUPSTREAM, "countTokens answered no totalTokens")
	}
	return n.TotalTokens, nil
}

// cachedContent is the part of a CachedContent answer the manager reads.
type cachedContent struct {
	Name          string `json:"name"`
	CreateTime    string `json:"createTime"`
	ExpireTime    string `json:"expireTime"`
	UsageMetadata struct {
		TotalTokenCount int64 `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// Create creates the cache, records it as the tenant's and books its
// creation: its tokens at the model's input rate.
func (g geminiCaches) Create(ctx context.Context, o explicitcache.Owner, body []byte) (explicitcache.Created, error) {
	s := g.s
	var cc cachedContent
	_, _, err := g.call(ctx, o, http.MethodPost, "/"+gemini.APIVersion+"/cachedContents", body, func(_ int, answer []byte) (groundhog.Money, groundhog.Usage) {
		if json.Unmarshal(answer, &cc) != nil || cc.Name == "" {
			return groundhog.CostUnknown, groundhog.Usage{}
		}
		return s.creationCost(o.Model, cc.UsageMetadata.TotalTokenCount), groundhog.Usage{InputTokens: cc.UsageMetadata.TotalTokenCount}
	})
	if err != nil {
		return explicitcache.Created{}, err
	}
	if cc.Name == "" {
		return explicitcache.Created{}, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's create answer names no cache")
	}
	c := explicitcache.Created{Name: cc.Name, Tokens: cc.UsageMetadata.TotalTokenCount, CreateTime: parseTime(cc.CreateTime, s.clock.Now()), Expire: parseTime(cc.ExpireTime, time.Time{})}
	err = s.opts.Resources.PutResource(context.WithoutCancel(ctx), groundhog.Resource{
		Tenant: o.Tenant, Kind: groundhog.ResourceKindGeminiCache, Name: cc.Name, CreatedAt: c.CreateTime.UTC(),
	})
	if err == nil {
		err = s.rentCreated(ctx, groundhog.RentedCache{
			Tenant: o.Tenant, Operation: o.Operation, Model: o.Model, Name: cc.Name, Tokens: c.Tokens, Created: c.CreateTime, Expire: c.Expire,
		})
	}
	if err != nil {
		// Unrecorded, no request may name it: delete it at once.
		s.log.Error("recording a managed Gemini cache failed; deleting it", "tenant", o.Tenant, "cache", cc.Name, "err", err)
		_ = g.Delete(ctx, o, c)
		return explicitcache.Created{}, err
	}
	return c, nil
}

// Extend sets the cache's ttl.
func (g geminiCaches) Extend(ctx context.Context, o explicitcache.Owner, c explicitcache.Created, ttl time.Duration) (time.Time, error) {
	body := []byte(`{"ttl":"` + strconv.FormatInt(int64(ttl/time.Second), 10) + `s"}`)
	_, answer, err := g.call(ctx, o, http.MethodPatch, cachePath(c.Name)+"?updateMask=ttl", body, nil)
	if err != nil {
		return time.Time{}, err
	}
	var cc cachedContent
	if json.Unmarshal(answer, &cc) != nil || cc.ExpireTime == "" {
		return time.Time{}, groundhog.Errorf(groundhog.EUPSTREAM, "the provider's update answer has no expireTime")
	}
	expire := parseTime(cc.ExpireTime, time.Time{})
	g.s.rentExtended(ctx, o.Tenant, c.Name, expire)
	return expire, nil
}

// Delete deletes the cache, forgets its record and ends its rent now. A
// cache the provider no longer has (404) is forgotten the same way, its
// rent ended at its expiry.
func (g geminiCaches) Delete(ctx context.Context, o explicitcache.Owner, c explicitcache.Created) error {
	status, _, err := g.call(ctx, o, http.MethodDelete, cachePath(c.Name), nil, nil)
	switch {
	case err == nil:
		g.Forget(ctx, o, c, g.s.clock.Now())
	case status == http.StatusNotFound:
		g.Forget(ctx, o, c, c.Expire)
		return nil
	}
	return err
}

// Forget drops the tenant's record of the cache and ends its rent at
// gone (at most its expiry), booking what is left of it (cacherent.go).
func (g geminiCaches) Forget(ctx context.Context, o explicitcache.Owner, c explicitcache.Created, gone time.Time) {
	s := g.s
	if !c.Expire.IsZero() && gone.After(c.Expire) {
		gone = c.Expire
	}
	if err := s.opts.Resources.DeleteResource(context.WithoutCancel(ctx), o.Tenant, groundhog.ResourceKindGeminiCache, c.Name); err != nil {
		s.log.Error("forgetting a managed Gemini cache failed", "tenant", o.Tenant, "cache", c.Name, "err", err)
	}
	s.rentEnded(ctx, o.Tenant, c.Name, gone)
}

// creationCost is the price of writing tokens into a new cache of model:
// the input rate of the entry a prompt of that length is priced at.
func (s *Server) creationCost(model string, tokens int64) groundhog.Money {
	r, ok := s.explicitRates(model, tokens)
	if !ok || tokens <= 0 {
		return groundhog.CostUnknown
	}
	return groundhog.Money(tokens * r.Creation)
}

func parseTime(v string, def time.Time) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return def
	}
	return t
}
