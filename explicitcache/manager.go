package explicitcache

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Owner is whose a managed cache is: the tenant, the operation of the
// call that made it (for the ledger), and the model it serves.
type Owner struct {
	Tenant, Operation, Model string
}

// Provider is the explicit-cache API of the provider account, as the
// manager uses it on a tenant's behalf. The gateway implements it over
// the same upstream and provider key as the tenant's calls: it records
// every cache it creates as the tenant's (so no other tenant can name it)
// and books every call it makes in the ledger.
type Provider interface {
	// CountTokens returns how many prompt tokens the provider counts in a
	// cache create body.
	CountTokens(ctx context.Context, o Owner, body []byte) (int64, error)
	// Create creates a cache from a create body for tenant.
	Create(ctx context.Context, o Owner, body []byte) (Created, error)
	// Extend sets the cache's life to ttl from now; it returns the new
	// expiry.
	Extend(ctx context.Context, o Owner, c Created, ttl time.Duration) (time.Time, error)
	// Delete deletes the cache.
	Delete(ctx context.Context, o Owner, c Created) error
	// Forget drops the gateway's record of a cache the provider no longer
	// has (it expired at c.Expire, or the provider answered that it does
	// not exist at gone), without calling the provider.
	Forget(ctx context.Context, o Owner, c Created, gone time.Time)
}

// Created is a cache the provider made: its name ("cachedContents/{id}"),
// its size as the provider counts it, when it was created and when it
// expires (as the provider answered).
type Created struct {
	Name       string
	Tokens     int64
	CreateTime time.Time
	Expire     time.Time
}

// Config is a Manager's configuration.
type Config struct {
	Model
	// MinUses is how many times a prefix must have been sent (the current
	// request included, each within Window of the one before) before a
	// cache for it is considered.
	MinUses int
	// MinTokens returns the provider's smallest cache for model: a
	// shorter prefix is never created.
	MinTokens func(model string) int64
	// Rates returns the model's rates for a cache of tokens tokens; false
	// when the model has no price, which never creates.
	Rates func(model string, tokens int64) (Rates, bool)
	// MaxPrefixes bounds the prefixes tracked at once (default 10,000).
	MaxPrefixes int
	Provider    Provider
	Clock       groundhog.Clock
	Logger      *slog.Logger
}

// maxUses is how many recent uses of a prefix are kept.
const maxUses = 16

// Manager tracks the reuse of request prefixes and keeps the explicit
// caches it created. Its methods are safe for concurrent use. The
// lifecycle: Before on every eligible request (it may create or extend a
// cache and returns the body to send), Gone when the provider answered
// that a cache named by Before no longer exists, Sweep periodically (it
// deletes the caches that stopped paying), Close on shutdown (it deletes
// every cache left).
type Manager struct {
	cfg Config

	mu     sync.Mutex
	seen   map[string]*seen    // prefix ID → recent uses
	caches map[string]*managed // prefix ID → the cache holding it
	counts map[string]int64    // prefix ID → tokens counted by the provider
}

type seen struct {
	uses []time.Time
}

type managed struct {
	Owner
	Created
	contents int
	busy     bool // a create, extend or delete is in progress
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.MinUses < 2 {
		cfg.MinUses = 2
	}
	if cfg.MaxPrefixes <= 0 {
		cfg.MaxPrefixes = 10_000
	}
	if cfg.Clock == nil {
		cfg.Clock = groundhog.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MinTokens == nil {
		cfg.MinTokens = func(string) int64 { return 1 }
	}
	return &Manager{cfg: cfg, seen: map[string]*seen{}, caches: map[string]*managed{}, counts: map[string]int64{}}
}

// Use is a request the manager pointed at one of its caches.
type Use struct {
	Body   []byte // the body to send upstream: names the cache, without what it holds
	Name   string // the cache
	Tokens int64  // the cache's size
	id     string
}

// Before observes body (a generateContent request of tenant for model)
// and returns how to send it: nil to send the client's body as it is, or
// a Use naming a live cache the manager holds for the body's prefix. It
// may create a cache (when the prefix has come back MinUses times and
// the cost model says a cache pays) or extend one (when less than half of
// its TTL is left and keeping it pays). A provider failure on the way is
// logged and the body goes as it is: the manager never fails a call.
func (m *Manager) Before(ctx context.Context, o Owner, body []byte) *Use {
	tenant, model := o.Tenant, o.Model
	r, ok := ParseRequest(tenant, model, body)
	if !ok {
		return nil
	}
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	for _, p := range r.points {
		m.observe(p.ID, now)
	}
	// A live cache for the longest prefix that has one.
	for i := len(r.points) - 1; i >= 0; i-- {
		p := r.points[i]
		c := m.caches[p.ID]
		if c == nil || !c.Expire.After(now.Add(time.Second)) {
			continue
		}
		extend := !c.busy && c.Expire.Sub(now) < m.cfg.TTL/2
		var est Estimate
		if extend {
			var uses []time.Time
			if s := m.seen[p.ID]; s != nil {
				uses = s.uses
			}
			rates, _ := m.cfg.Rates(model, c.Tokens)
			est = m.cfg.KeepEstimate(rates, c.Tokens, uses, now)
			extend = est.Pays
			if extend {
				c.busy = true
			}
		}
		u := &Use{Name: c.Name, Tokens: c.Tokens, id: p.ID}
		n := c.contents
		m.mu.Unlock()
		if extend {
			m.extend(ctx, p.ID, c, est)
		}
		u.Body = r.Rewrite(u.Name, n)
		return u
	}
	// Else the longest prefix that came back often enough.
	var cand point
	found := false
	for i := len(r.points) - 1; i >= 0; i-- {
		p := r.points[i]
		if s := m.seen[p.ID]; s != nil && len(s.uses) >= m.cfg.MinUses {
			cand, found = p, true
			break
		}
	}
	if found && m.caches[cand.ID] != nil {
		found = false // being created (or expiring): never a second cache beside it
	}
	if !found {
		m.mu.Unlock()
		return nil
	}
	uses := append([]time.Time(nil), m.seen[cand.ID].uses...)
	tokens, counted := m.counts[cand.ID]
	// Hold the place: a concurrent request with the same prefix does not
	// create a second cache.
	m.caches[cand.ID] = &managed{Owner: o, contents: cand.Contents, busy: true}
	m.mu.Unlock()

	u := m.create(ctx, o, r, cand, uses, tokens, counted, now)
	if u == nil {
		m.mu.Lock()
		if c := m.caches[cand.ID]; c != nil && c.Name == "" {
			delete(m.caches, cand.ID)
		}
		m.mu.Unlock()
	}
	return u
}

// create decides on and makes a cache for prefix cand of r; nil when it
// does not (the place held in caches is then dropped by the caller).
func (m *Manager) create(ctx context.Context, o Owner, r *Request, cand point, uses []time.Time, tokens int64, counted bool, now time.Time) *Use {
	ttl := strconv.FormatInt(int64(m.cfg.TTL/time.Second), 10) + "s"
	model := o.Model
	body := r.CacheBody(model, cand.Contents, ttl)
	log := m.cfg.Logger.With("tenant", o.Tenant, "operation", o.Operation, "model", model, "prefix", cand.ID[:16])
	if !counted {
		n, err := m.cfg.Provider.CountTokens(ctx, o, body)
		if err != nil {
			log.Warn("explicit cache: counting the prefix's tokens failed; the request goes without a cache", "err", err)
			return nil
		}
		tokens = n
		m.mu.Lock()
		m.counts[cand.ID] = n
		m.mu.Unlock()
	}
	if min := m.cfg.MinTokens(model); tokens < min {
		log.Debug("explicit cache: not created", "reason", "prefix below the provider's minimum", "tokens", tokens, "min_tokens", min)
		return nil
	}
	rates, ok := m.cfg.Rates(model, tokens)
	if !ok {
		rates = Rates{}
	}
	est := m.cfg.CreateEstimate(rates, tokens, uses, now)
	attrs := estimateAttrs(est)
	if !est.Pays {
		log.Info("explicit cache: not created", append(attrs, "reason", est.Reason)...)
		return nil
	}
	c, err := m.cfg.Provider.Create(ctx, o, body)
	if err != nil {
		log.Warn("explicit cache: create failed; the request goes without a cache", append(attrs, "err", err)...)
		return nil
	}
	if c.Tokens > 0 {
		tokens = c.Tokens
	}
	c.Tokens = tokens
	log.Info("explicit cache: created", append(attrs, "cache", c.Name, "expire", c.Expire)...)
	m.mu.Lock()
	m.caches[cand.ID] = &managed{Owner: o, Created: c, contents: cand.Contents}
	m.counts[cand.ID] = tokens
	m.mu.Unlock()
	return &Use{Body: r.Rewrite(c.Name, cand.Contents), Name: c.Name, Tokens: tokens, id: cand.ID}
}

// extend gives c another TTL; a failure leaves it as it was.
func (m *Manager) extend(ctx context.Context, id string, c *managed, est Estimate) {
	expire, err := m.cfg.Provider.Extend(ctx, c.Owner, c.Created, m.cfg.TTL)
	m.mu.Lock()
	defer m.mu.Unlock()
	c.busy = false
	log := m.cfg.Logger.With("tenant", c.Tenant, "model", c.Model, "prefix", id[:16], "cache", c.Name)
	if err != nil {
		log.Warn("explicit cache: extend failed", "err", err)
		return
	}
	c.Expire = expire
	log.Info("explicit cache: extended", append(estimateAttrs(est), "expire", expire)...)
}

// observe notes a use of prefix id at now. A use more than Window after
// the previous one starts the prefix's history again.
func (m *Manager) observe(id string, now time.Time) {
	s := m.seen[id]
	if s == nil {
		if len(m.seen) >= m.cfg.MaxPrefixes {
			m.prune(now)
		}
		if len(m.seen) >= m.cfg.MaxPrefixes {
			return
		}
		s = &seen{}
		m.seen[id] = s
	}
	if n := len(s.uses); n > 0 && now.Sub(s.uses[n-1]) > m.cfg.Window {
		s.uses = s.uses[:0]
	}
	if len(s.uses) == maxUses {
		copy(s.uses, s.uses[1:])
		s.uses = s.uses[:maxUses-1]
	}
	s.uses = append(s.uses, now)
}

// prune drops the prefixes not used within Window (except those a cache
// holds), and when that is not enough, every prefix without a cache.
func (m *Manager) prune(now time.Time) {
	for id, s := range m.seen {
		if m.caches[id] == nil && (len(s.uses) == 0 || now.Sub(s.uses[len(s.uses)-1]) > m.cfg.Window) {
			delete(m.seen, id)
			delete(m.counts, id)
		}
	}
	if len(m.seen) >= m.cfg.MaxPrefixes {
		for id := range m.seen {
			if m.caches[id] == nil {
				delete(m.seen, id)
				delete(m.counts, id)
			}
		}
	}
}

// Gone forgets the cache u named: the provider answered that it does not
// exist (it expired, or was deleted outside the manager).
func (m *Manager) Gone(ctx context.Context, u *Use) {
	m.mu.Lock()
	c := m.caches[u.id]
	if c == nil || c.Name != u.Name {
		m.mu.Unlock()
		return
	}
	delete(m.caches, u.id)
	m.mu.Unlock()
	m.cfg.Logger.Info("explicit cache: gone at the provider; forgotten", "tenant", c.Tenant, "model", c.Model, "cache", c.Name)
	m.cfg.Provider.Forget(ctx, c.Owner, c.Created, m.cfg.Clock.Now())
}

// Sweep deletes the caches that no longer pay at the clock's now (no
// reuse within Window, or reuse too sparse to cover the rent), forgets
// the ones that expired, and drops the tracked prefixes no longer used.
// The gateway calls it periodically.
func (m *Manager) Sweep(ctx context.Context) {
	now := m.cfg.Clock.Now()
	type del struct {
		id  string
		c   *managed
		est Estimate
	}
	var dels []del
	var gone []*managed
	m.mu.Lock()
	for id, c := range m.caches {
		if c.busy || c.Name == "" {
			continue
		}
		if !c.Expire.After(now) {
			delete(m.caches, id)
			gone = append(gone, c)
			continue
		}
		var uses []time.Time
		if s := m.seen[id]; s != nil {
			uses = s.uses
		}
		rates, _ := m.cfg.Rates(c.Model, c.Tokens)
		if est := m.cfg.KeepEstimate(rates, c.Tokens, uses, now); !est.Pays {
			c.busy = true
			dels = append(dels, del{id, c, est})
		}
	}
	m.prune(now)
	m.mu.Unlock()
	for _, c := range gone {
		m.cfg.Logger.Info("explicit cache: expired", "tenant", c.Tenant, "model", c.Model, "cache", c.Name)
		m.cfg.Provider.Forget(ctx, c.Owner, c.Created, c.Expire)
	}
	for _, d := range dels {
		err := m.cfg.Provider.Delete(ctx, d.c.Owner, d.c.Created)
		log := m.cfg.Logger.With("tenant", d.c.Tenant, "model", d.c.Model, "prefix", d.id[:16], "cache", d.c.Name)
		m.mu.Lock()
		d.c.busy = false
		if err == nil && m.caches[d.id] == d.c {
			delete(m.caches, d.id)
		}
		m.mu.Unlock()
		if err != nil {
			log.Warn("explicit cache: delete failed; retried on the next sweep", "err", err)
			continue
		}
		log.Info("explicit cache: deleted", append(estimateAttrs(d.est), "reason", d.est.Reason)...)
	}
}

// Close deletes every cache the manager holds (on shutdown: a cache no
// one will point requests at only costs rent).
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	var all []*managed
	for id, c := range m.caches {
		if c.Name != "" {
			all = append(all, c)
		}
		delete(m.caches, id)
	}
	m.mu.Unlock()
	for _, c := range all {
		if err := m.cfg.Provider.Delete(ctx, c.Owner, c.Created); err != nil {
			m.cfg.Logger.Warn("explicit cache: delete on shutdown failed; it expires by itself", "tenant", c.Tenant, "cache", c.Name, "expire", c.Expire, "err", err)
		}
	}
}

// Live returns the names of the caches the manager holds now.
func (m *Manager) Live() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.caches {
		if c.Name != "" {
			out = append(out, c.Name)
		}
	}
	return out
}

func estimateAttrs(e Estimate) []any {
	return []any{"tokens", e.Tokens, "expected_reads", float64(e.ExpectedMilliReads) / 1000,
		"savings", e.Savings.String(), "creation", e.Creation.String(), "rent", e.Rent.String(), "net", e.Net.String()}
}
