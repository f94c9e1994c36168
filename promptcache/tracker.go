package promptcache

import (
	"container/list"
	"context"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

// Config configures a Tracker. Zero values take the defaults.
type Config struct {
	// MaxChains bounds how many prefix chains are kept (LRU); default 10,000.
	MaxChains int
	// MaxBytes bounds the memory of the kept chains, as Tracker.Bytes counts
	// it (LRU); default 64 MiB.
	MaxBytes int64
	// PromptsPerChain is how many recent prompts a chain keeps to find the
	// closest earlier one; default 4.
	PromptsPerChain int
	// BelowMinimumFloor: a reusable prefix under the model's minimum is
	// reported as below_minimum only when it is at least this fraction of
	// the minimum (smaller prompts are not worth a warning); default 0.5.
	BelowMinimumFloor float64
	// MinTokens overrides the table of minimum cacheable prefixes: model
	// name prefix -> tokens, the longest matching prefix winning (for a
	// provider that changed a model's minimum before groundhog's table
	// did). Injection, the expected read and warm-then-fan-out all use it.
	MinTokens map[string]int
	// Clock tells the time (TTL gaps); default groundhog.SystemClock.
	Clock groundhog.Clock
}

// Tracker is the break-diagnosis stage. Per chain — (tenant,
// prompt_cache_key, model), or (tenant, operation, model) when the request
// has no key — it keeps the fingerprints of recent prompts (never their
// text) and, for each request, says how much of its prefix the provider
// should read and, after the call, whether and why it read less.
//
// Lifecycle: Restore once at start (optional), then for every model call
// Before on the request and After with the provider's usage (After records
// the prompt; a call that fails upstream simply never calls After), then
// Snapshot on shutdown. Safe for concurrent use.
type Tracker struct {
	cfg    Config
	mu     sync.Mutex
	chains map[string]*list.Element // chain key -> *chain
	byOp   map[string]*chain        // tenant+operation -> its most recently used chain
	lru    *list.List               // front = most recently used
	bytes  int64
}

type chain struct {
	key, opKey string
	lastID     string       // the provider's id of the newest answer (Anthropic msg_…)
	prompts    []*promptRec // newest last
	bytes      int64
}

// NewTracker returns a Tracker configured by cfg.
func NewTracker(cfg Config) *Tracker {
	if cfg.MaxChains <= 0 {
		cfg.MaxChains = 10000
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.PromptsPerChain <= 0 {
		cfg.PromptsPerChain = 4
	}
	if cfg.BelowMinimumFloor <= 0 {
		cfg.BelowMinimumFloor = 0.5
	}
	if cfg.Clock == nil {
		cfg.Clock = groundhog.SystemClock{}
	}
	return &Tracker{cfg: cfg, chains: map[string]*list.Element{}, byOp: map[string]*chain{}, lru: list.New()}
}

// Request is one model call as the diagnosis stage sees it.
type Request struct {
	Tenant    string
	Operation string
	Shape     groundhog.Shape
	Body      []byte // the body as the client sent it (already validated)
	// Model is the model of a body that does not name it (Bedrock Converse
	// and InvokeModel: the path's model id); the body's "model" wins.
	Model string
	// Breakpoints asks for breakpoint injection (config
	// prompt_cache.breakpoints: auto, or Groundhog-Prompt-Cache-Breakpoints: auto).
	Breakpoints bool
	// CacheKey asks for a stable prompt_cache_key (Groundhog-Prompt-Cache-Key:
	// auto) on an OpenAI chat or responses body (no other shape has one);
	// App and PromptVersion name it (defaults: Operation, "v1").
	CacheKey           bool
	App, PromptVersion string
	// AskProvider asks the provider for its own cache diagnostics, naming
	// the chain's previous answer (Anthropic: diagnostics.previous_message_id;
	// OpenAI Responses: prompt_cache_options.comparison_response_id), unless
	// the client asked itself.
	AskProvider bool
	// Stream says the client asked for a stream: a call that does not
	// stream starts answering only when done, so requests held behind it
	// by warm-then-fan-out may be released by a pre-warm instead.
	Stream bool
	// Prewarm, when set, sends body (PrewarmBody of this call's upstream
	// body) to the provider and reports a success. Warm-then-fan-out calls
	// it, at most once per writer, when this call is held behind a writer
	// that does not stream (Anthropic Messages only: max_tokens 0). It
	// books what the provider billed itself.
	Prewarm func(ctx context.Context, body []byte) bool
	// Quotes, when not nil, is Body's unescaped-quote bitmap
	// (fingerprint.QuoteIndex of these very bytes, as
	// fingerprint.ComputeQuoted leaves it): the stage reads it instead of
	// building it again (WantsQuotes says for which sizes it reads one).
	Quotes []uint64
}

// Call is the result of Before, handed to After.
type Call struct {
	// Body is what to send upstream: Request.Body, or a copy with breakpoints
	// injected and/or prompt_cache_key set.
	Body []byte
	// Injected is how many breakpoints Before added; Key the
	// prompt_cache_key it set ("" when none).
	Injected int
	Key      string
	// AskedProvider is true when Before added the provider's cache
	// diagnostics to the body.
	AskedProvider bool
	// Diagnosis is the expectation for this call.
	Diagnosis Diagnosis

	prefix     *Prefix
	rules      Rules
	chainKey   string
	opKey      string
	responseID string // the provider's id of the answer, set by Stage.AfterReply
}

// Result is the verdict after the provider answered.
type Result struct {
	// Cause is set (and Break true) when the provider read fewer prompt
	// tokens than the reusable prefix; empty otherwise.
	Break   bool
	Cause   Cause
	Pattern string // the volatile pattern, for volatile_in_prefix
	// Expected is the reusable prefix (provider tokens), Read what the
	// provider reported reading, Lost = Expected − Read when Break.
	Expected, Read, Lost int64
}

// Header returns the value of Groundhog-Prompt-Cache-Break, "" when the
// header must be absent.
func (r Result) Header() string {
	if !r.Break {
		return ""
	}
	return string(r.Cause)
}

// chainKeys returns the chain and operation keys of a request. The shape is
// part of the chain: chat and responses bodies of one operation serialize
// the same tools differently and never share a provider cache entry, so
// comparing them would report a false tools_changed.
func chainKeys(tenant, op, key string, shape groundhog.Shape, model string) (ck, ok string) {
	ok = tenant + "\x00" + op
	if key != "" {
		return tenant + "\x00k\x00" + key + "\x00" + string(shape) + "\x00" + model, ok
	}
	return tenant + "\x00o\x00" + op + "\x00" + string(shape) + "\x00" + model, ok
}

// Before parses the request's prefix, applies the requested rewrites
// (stable cache key, then breakpoint injection) and diagnoses the body that
// will be sent against the closest earlier prompt of its chain. Errors are
// *groundhog.Error with code EINVALID for a body it cannot parse; the caller
// may then send the request unchanged and skip After.
func (t *Tracker) Before(ctx context.Context, req *Request) (*Call, error) {
	body, quotes := req.Body, req.Quotes
	c := &Call{Body: body}
	if req.CacheKey && (req.Shape == groundhog.ShapeChat || req.Shape == groundhog.ShapeResponses) {
		app, ver := req.App, req.PromptVersion
		if app == "" {
			app = req.Operation
		}
		if ver == "" {
			ver = "v1"
		}
		nb, key, err := SetCacheKey(req.Shape, body, app, ver)
		if err != nil {
			return nil, err
		}
		if string(nb) != string(body) {
			c.Key = key
			quotes = nil // of other bytes
		}
		body = nb
	}
	p, err := parse(req.Shape, body, req.Model, func(p *Prefix) *promptRec {
		ck, _ := chainKeys(req.Tenant, req.Operation, p.CacheKey, req.Shape, p.Model)
		t.mu.Lock()
		defer t.mu.Unlock()
		if el, ok := t.chains[ck]; ok {
			if ps := el.Value.(*chain).prompts; len(ps) > 0 {
				return ps[len(ps)-1]
			}
		}
		return nil
	}, quotes)
	if err != nil {
		return nil, err
	}
	r := modelRules(p.Shape, p.Model, t.cfg.MinTokens)
	if req.Breakpoints && !p.NotApplicable {
		nb, idx, err := inject(p, r, Options{})
		if err != nil {
			return nil, err
		}
		if n := len(idx); n > 0 {
			// The markers change neither hashes nor token offsets: mark the
			// chosen segments instead of parsing the new body again. The
			// prefix's byte spans refer to the old body from here on, and
			// nothing after this point reads them.
			body = nb
			for _, i := range idx {
				p.Segments[i].Marker = true
			}
			p.Markers += n
			p.body, p.fields = nil, nil
			c.Injected = n
		}
	}
	c.Body, c.prefix, c.rules = body, p, r
	c.chainKey, c.opKey = chainKeys(req.Tenant, req.Operation, p.CacheKey, req.Shape, p.Model)
	if p.NotApplicable {
		return c, nil
	}
	now := t.cfg.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.AskProvider {
		c.Body, c.AskedProvider = askProviderFor(req.Shape, c.Body, t.previousID(c))
	}
	if el, ok := t.chains[c.chainKey]; ok {
		ch := el.Value.(*chain)
		c.Diagnosis = compare(p, r, closest(p, ch), now, "", t.cfg.BelowMinimumFloor)
	} else if ch, ok := t.byOp[c.opKey]; ok && len(ch.prompts) > 0 {
		e := closest(p, ch)
		cross := CauseCacheKeyChanged
		if e.model != p.Model {
			cross = CauseModelChanged
		}
		c.Diagnosis = compare(p, r, e, now, cross, t.cfg.BelowMinimumFloor)
	} else {
		c.Diagnosis = Diagnosis{Diverged: len(p.Segments)}
	}
	return c, nil
}

// previousID returns the provider's id of the answer c is compared with:
// the newest of c's chain, else (a new chain: the model or the cache key
// changed) the newest of the operation's most recent chain — the same
// earlier prompts the diagnosis compares with. t.mu must be held.
func (t *Tracker) previousID(c *Call) string {
	if el, ok := t.chains[c.chainKey]; ok {
		return el.Value.(*chain).lastID
	}
	if ch, ok := t.byOp[c.opKey]; ok {
		return ch.lastID
	}
	return ""
}

// closest returns the prompt of ch sharing the longest prefix with p.
func closest(p *Prefix, ch *chain) *promptRec {
	var best *promptRec
	bn := -1
	for i := len(ch.prompts) - 1; i >= 0; i-- {
		if n := lcp(p.Segments, ch.prompts[i].segs); n > bn {
			best, bn = ch.prompts[i], n
		}
	}
	return best
}

// After takes the provider's usage for a call prepared by Before, records the
// prompt in its chain and returns the verdict: a break when the provider
// read fewer tokens than the reusable prefix (allowing for groundhog's token
// estimate, calibrated against the provider's own prompt count), with its
// cause — provider_miss when groundhog saw no reason.
func (t *Tracker) After(ctx context.Context, c *Call, u groundhog.Usage) Result {
	if c == nil || c.prefix == nil || c.prefix.NotApplicable {
		return Result{}
	}
	d := c.Diagnosis
	res := Result{Read: u.CachedInputTokens}
	expected := int64(d.Expected)
	if expected > 0 && u.InputTokens > 0 && c.prefix.Tokens > 0 {
		// Calibrate: groundhog's count is an estimate of the provider's.
		expected = expected * u.InputTokens / int64(c.prefix.Tokens)
		if c.rules.Step > 0 && d.Cause != CauseBelowMinimum && d.Cause != CauseNoBreakpoint {
			expected = expected / int64(c.rules.Step) * int64(c.rules.Step)
		}
	}
	if x := int64(d.ExpectedExact); x > 0 && (expected == 0 || x < expected) {
		// The provider said how long this prefix was when it stored it;
		// its figure can be larger (a response that ran in several
		// iterations reports their cache work together), never the
		// prefix shorter than what it counted.
		expected = x
	}
	if min := int64(c.rules.MinTokens); expected > 0 && expected < min && d.Cause != CauseBelowMinimum {
		// groundhog's token estimate overshot the provider's count: the
		// real prefix is under the model's minimum, never cached.
		if float64(expected) >= t.cfg.BelowMinimumFloor*float64(min) {
			d.Cause, d.Pattern = CauseBelowMinimum, ""
		} else {
			expected = 0
		}
	}
	res.Expected = expected
	tol := max(expected/50, 16)
	if c.rules.Step > 0 {
		tol = max(tol, int64(c.rules.Step))
	}
	if expected > 0 && u.CachedInputTokens+tol < expected {
		res.Break, res.Cause, res.Pattern = true, d.Cause, d.Pattern
		if res.Cause == "" {
			res.Cause = CauseProviderMiss
		}
		res.Lost = expected - u.CachedInputTokens
	}
	t.record(c, u)
	return res
}

// record adds the call's prompt to its chain (merging it with an earlier
// prompt it extends, whose stored points the provider still holds). For
// Anthropic and Bedrock Converse it keeps the provider's length of the prefix up to the last
// breakpoint (cache read + write), the exact figure the next turn expects.
func (t *Tracker) record(c *Call, u groundhog.Usage) {
	now := t.cfg.Clock.Now()
	rec := record(c.prefix, c.rules, now)
	if (c.prefix.Shape == groundhog.ShapeMessages || c.prefix.Shape == groundhog.ShapeConverse) && u.CachedInputTokens+u.CacheWriteTokens > 0 {
		for i := len(rec.segs) - 1; i >= 0; i-- {
			if rec.segs[i].Stored != 0 {
				rec.exactSeg, rec.exact = int32(i), uint32(u.CachedInputTokens+u.CacheWriteTokens)
				break
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var ch *chain
	if el, ok := t.chains[c.chainKey]; ok {
		ch = el.Value.(*chain)
		t.lru.MoveToFront(el)
	} else {
		ch = &chain{key: c.chainKey, opKey: c.opKey}
		t.chains[c.chainKey] = t.lru.PushFront(ch)
		ch.bytes = chainOverhead + int64(len(ch.key)+len(ch.opKey))
		t.bytes += ch.bytes
	}
	t.byOp[c.opKey] = ch
	if c.responseID != "" {
		ch.lastID = c.responseID
	}
	// An earlier prompt that rec extends (or repeats) is merged into it.
	kept := ch.prompts[:0]
	for _, e := range ch.prompts {
		if n := lcp(c.prefix.Segments, e.segs); n == len(e.segs) {
			for i := range e.segs {
				rec.segs[i].Stored |= e.segs[i].Stored
			}
			rec.implicit = rec.implicit || e.implicit
			rec.ttl = max(rec.ttl, e.ttl)
			t.bytes -= promptBytes(e)
			ch.bytes -= promptBytes(e)
			continue
		}
		kept = append(kept, e)
	}
	ch.prompts = append(kept, rec)
	ch.bytes += promptBytes(rec)
	t.bytes += promptBytes(rec)
	if d := c.Diagnosis; d.Predicted > 0 || d.Expected > 0 {
		// A read refreshes the TTL of the entry it read.
		for _, e := range ch.prompts {
			e.lastUsed = max(e.lastUsed, now.UnixNano())
		}
	}
	for len(ch.prompts) > t.cfg.PromptsPerChain {
		t.bytes -= promptBytes(ch.prompts[0])
		ch.bytes -= promptBytes(ch.prompts[0])
		ch.prompts = ch.prompts[1:]
	}
	t.evict()
}

// chainOverhead approximates the bookkeeping of one chain beyond its
// prompts: map entry, list element, chain struct.
const chainOverhead = 160

func promptBytes(p *promptRec) int64 {
	return int64(cap(p.segs))*segRecSize + 96 + int64(len(p.model)+len(p.key))
}

func (t *Tracker) evict() {
	for t.lru.Len() > 0 && (t.lru.Len() > t.cfg.MaxChains || t.bytes > t.cfg.MaxBytes) {
		el := t.lru.Back()
		t.drop(el)
	}
}

func (t *Tracker) drop(el *list.Element) {
	ch := el.Value.(*chain)
	t.lru.Remove(el)
	delete(t.chains, ch.key)
	if t.byOp[ch.opKey] == ch {
		delete(t.byOp, ch.opKey)
	}
	t.bytes -= ch.bytes
}

// Bytes returns the memory the kept chains take, as the MaxBytes bound
// counts it; Chains how many are kept.
func (t *Tracker) Bytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// Chains returns the number of chains kept.
func (t *Tracker) Chains() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}
