package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// The provider prompt-cache stage's headers (docs/prompt-caching.md, docs/reference/wire.md).
const (
	// Response: what the provider read from / wrote to its prompt cache,
	// "read=<tokens> write=<tokens>", on every call the provider answered
	// with a success; for a relayed stream it is a trailer (the usage comes
	// at the end of the stream).
	hdrPromptCache = "Groundhog-Prompt-Cache"
	// Response: the cause of a break in prefix reuse; absent when nothing
	// broke. A trailer on relayed streams, like hdrPromptCache.
	hdrPromptCacheBreak = "Groundhog-Prompt-Cache-Break"
	// Request: "auto" injects cache breakpoints, "off" does not, whatever
	// the operation's config says.
	hdrPromptCacheBreakpoints = "Groundhog-Prompt-Cache-Breakpoints"
	// Request: "auto" sets a stable prompt_cache_key (OpenAI shapes) unless
	// the client set one.
	hdrPromptCacheKey = "Groundhog-Prompt-Cache-Key"
	// Request: "off" opts the call out of warm-then-fan-out.
	hdrFanOut = "Groundhog-Fan-Out"
	// Request: "provider" asks the provider for its own cache diagnostics
	// (Anthropic Messages, OpenAI Responses), adding the comparison id of
	// the chain's previous answer;
	// "off" does not, whatever the operation's config says.
	hdrPromptCacheDiagnostics = "Groundhog-Prompt-Cache-Diagnostics"
)

// pcState is one call's part in the prompt-cache stage. pending is used
// only by the flight's goroutine; held and out are read by the handler (and
// the orphan path) afterwards.
type pcState struct {
	pending *promptcache.Pending
	held    atomic.Bool
	out     atomic.Pointer[promptcache.Outcome]
}

// newPromptCacheStage builds the stage from the options and the config:
// the given tracker (or a new one bounded by prompt_cache), the given
// fan-out group (or one holding at most prompt_cache.fan_out_max_hold,
// across replicas with FanOutShared; a negative hold turns fan-out off).
func newPromptCacheStage(o Options) *promptcache.Stage {
	pc := o.Config.PromptCache
	t := o.PromptCache
	if t == nil {
		tc := TrackerConfig(pc)
		tc.Clock = o.Clock
		t = promptcache.NewTracker(tc)
	}
	f := o.FanOut
	if f == nil && pc.FanOutMaxHold >= 0 {
		f = fanout.New(fanout.Config{MaxHold: pc.FanOutMaxHold, PrewarmAfter: pc.FanOutPrewarmAfter, Clock: o.Clock, Shared: o.FanOutShared})
	}
	return &promptcache.Stage{Tracker: t, FanOut: f}
}

// TrackerConfig is the break-diagnosis tracker's configuration from the
// prompt_cache section.
func TrackerConfig(pc config.PromptCacheConfig) promptcache.Config {
	return promptcache.Config{MaxChains: pc.MaxChains, MaxBytes: pc.MaxBytes,
		PromptsPerChain: pc.PromptsPerChain, MinTokens: pc.MinTokens}
}

// checkPromptCacheHeaders validates the stage's request headers.
func checkPromptCacheHeaders(h http.Header) error {
	for _, c := range []struct{ name, a, b string }{
		{hdrPromptCacheBreakpoints, "auto", "off"},
		{hdrPromptCacheKey, "auto", "auto"},
		{hdrFanOut, "on", "off"},
		{hdrPromptCacheDiagnostics, "provider", "off"},
	} {
		if v := strings.ToLower(strings.TrimSpace(hget(h, c.name))); v != "" && v != c.a && v != c.b {
			if c.a == c.b {
				return groundhog.Errorf(groundhog.EINVALID, "%s must be %s, not %q", c.name, c.a, v)
			}
			return groundhog.Errorf(groundhog.EINVALID, "%s must be %s or %s, not %q", c.name, c.a, c.b, v)
		}
	}
	return nil
}

// pcBefore runs the stage's request side for the flight of c and returns
// the body to send upstream. It may hold the call (warm-then-fan-out).
// The caller must defer c.pc.pending.Done().
func (s *Server) pcBefore(ctx context.Context, c *call) []byte {
	if c.shape == groundhog.ShapeEmbeddings {
		return c.body
	}
	op := s.cfg.Operations[c.op].PromptCache
	auto := func(name string) bool { return strings.EqualFold(strings.TrimSpace(c.header.Get(name)), "auto") }
	req := &promptcache.Request{
		Tenant: c.tenant, Operation: c.op, Shape: c.shape, Body: c.body,
		// Bedrock (Converse, InvokeModel) names the model in the path only.
		Model:       c.fp.Model,
		Breakpoints: injectOn(op.Breakpoints, c.header.Get(hdrPromptCacheBreakpoints)) && injectable(c),
		CacheKey:    auto(hdrPromptCacheKey),
		App:         op.App, PromptVersion: op.PromptVersion,
		AskProvider: askProvider(op.AskProvider, c.header.Get(hdrPromptCacheDiagnostics)),
		Stream:      c.fp.Stream,
	}
	if c.shape == groundhog.ShapeMessages && !c.invoke {
		// Held behind a writer that does not stream, this call may write
		// the prefix itself with a max_tokens 0 request (prewarm.go).
		req.Prewarm = func(ctx context.Context, body []byte) bool { return s.prewarm(ctx, c, body) }
	}
	if q := c.takeQuotes(); q != nil {
		req.Quotes = *q
		quotesShared.Add(1)
		defer putQuotes(q) // Before is done with it when it returns (quotes.go)
	}
	fan := !strings.EqualFold(strings.TrimSpace(c.header.Get(hdrFanOut)), "off")
	t0 := s.clock.Now()
	c.pc.pending = s.pc.Before(ctx, req, fan)
	c.pc.held.Store(c.pc.pending.Held)
	if c.pc.pending.Held {
		// A trace span of its own: the wait is part of the upstream stage,
		// and a user looking at a slow call should see why.
		s.stage(c, "groundhog.fan_out_hold", t0)
	}
	return c.pc.pending.Body
}

// askProvider decides whether to ask the provider for its cache
// diagnostics: the request header when set (provider or off), else the
// operation's config.
func askProvider(opCfg bool, header string) bool {
	switch strings.ToLower(strings.TrimSpace(header)) {
	case "provider":
		return true
	case "off":
		return false
	}
	return opCfg
}

// pcUpstreamHeaders adds what the stage's rewrites need on the upstream
// request: the cache-diagnosis beta when it asked Anthropic.
func pcUpstreamHeaders(h http.Header, c *call) {
	if c.invoke {
		return // Bedrock takes Anthropic's betas in the body, not as headers
	}
	if p := c.pc.pending; p != nil && p.AskedProvider && c.shape == groundhog.ShapeMessages && !strings.Contains(strings.Join(h.Values("Anthropic-Beta"), ","), promptcache.CacheDiagnosisBeta) {
		h.Add("Anthropic-Beta", promptcache.CacheDiagnosisBeta)
	}
}

// injectOn decides breakpoint injection: the request header when it is
// set (auto or off), else the operation's config.
func injectOn(opCfg, header string) bool {
	switch strings.ToLower(strings.TrimSpace(header)) {
	case "auto":
		return true
	case "off":
		return false
	}
	return opCfg == "auto"
}

// injectable reports whether breakpoint injection may rewrite c's body.
// Anthropic: always (without markers nothing is cached). OpenAI Responses:
// only when the client opted into prompt_cache_options — in automatic mode
// the provider caches for free, and a breakpoint would switch the request
// to billed cache writes (measured against the sim: reads +4 %, input cost
// +10 % on a six-turn loop). Options that only name a comparison response
// ask for diagnostics, not for a caching mode. Chat: Inject leaves it
// unchanged anyway.
func injectable(c *call) bool {
	if c.shape != groundhog.ShapeResponses {
		return true
	}
	if !bytes.Contains(c.body, []byte(`"prompt_cache_options"`)) {
		return false
	}
	var b struct {
		Options map[string]json.RawMessage `json:"prompt_cache_options"`
	}
	if json.Unmarshal(c.body, &b) != nil || b.Options == nil {
		return false
	}
	_, comparing := b.Options["comparison_response_id"]
	return !(comparing && len(b.Options) == 1)
}

// pcAfter runs the stage's response side on a success with known usage.
func (s *Server) pcAfter(ctx context.Context, c *call, resp *groundhog.Response) {
	if c.pc.pending == nil || !resp.OK() || resp.Usage == (groundhog.Usage{}) {
		return // no usage: nothing to diagnose, no header to promise
	}
	o := s.pc.AfterReply(ctx, c.pc.pending, resp.Usage, promptcache.ReadReply(c.shape, resp.Body, resp.Events))
	c.pc.out.Store(&o)
}

// pcHeaders sets the stage's response headers (or trailers, after the head
// was written) of a call the provider answered.
func (s *Server) pcHeaders(h http.Header, c *call) {
	o := c.pc.out.Load()
	if o == nil {
		return
	}
	h.Set(hdrPromptCache, o.CacheHeader())
	if v := o.Header(); v != "" {
		h.Set(hdrPromptCacheBreak, v)
	}
}

// pcRow adds the stage's verdict, and the provider's when it gave one, to
// the ledger row of c.
func (s *Server) pcRow(c *call, row *groundhog.LedgerEntry) {
	row.FanOutHeld = row.FanOutHeld || c.pc.held.Load()
	o := c.pc.out.Load()
	if o == nil {
		return
	}
	if o.Break {
		row.PromptCacheBreak, row.PromptCacheLostTokens = string(o.Cause), o.Lost
	}
	row.ProviderCacheReason = o.Provider
}

// PromptCacheTracker returns the break-diagnosis tracker (for a snapshot on
// shutdown).
func (s *Server) PromptCacheTracker() *promptcache.Tracker { return s.pc.Tracker }
