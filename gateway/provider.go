package gateway

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Response and request header names of the wire contract (docs/reference/wire.md).
const (
	hdrRequestHash  = "Groundhog-Request-Hash"
	hdrCache        = "Groundhog-Cache"
	hdrCacheTTL     = "Groundhog-Cache-TTL"
	hdrCoalesce     = "Groundhog-Coalesce"
	hdrCacheVersion = "Groundhog-Cache-Version"
	hdrOperation    = "Groundhog-Operation"
	hdrCost         = "Groundhog-Cost-USD"
	hdrSaved        = "Groundhog-Saved-USD"
	hdrIdemKey      = "Idempotency-Key"
	hdrReplayed     = "Idempotent-Replayed"
)

// cachePolicy is what the cache stage does for one call.
type cachePolicy int

const (
	policyOff     cachePolicy = iota // cache not enabled for this call
	policyUse                        // read, and write on a miss
	policyRefresh                    // do not read; compute anew and overwrite
	policyBypass                     // neither read nor write (explicit)
)

func (p cachePolicy) on() bool { return p == policyUse || p == policyRefresh }

// call is one provider request as it moves through the pipeline.
type call struct {
	shape        groundhog.Shape
	invoke       bool // a native Anthropic body on Bedrock's InvokeModel routes (converse.go)
	route        string
	tenant       string
	op           string
	body         []byte
	pooled       *pooledBody // body's pooled buffer, if any (body.go: released after a hit; on a miss it moves to refs)
	refs         *bodyRefs   // who still reads the pooled body on the miss path (missbody.go)
	echoVals     [][]byte    // a follower's echoed request values, kept instead of its body (keepForFollowing)
	flightRef    bool        // the flight holds a reference to refs (missbody.go): set before it starts, then the flight's own
	flightEnded  bool        // the flight ended with its outcome (upstreamDone): the flight's own
	fp           fingerprint.Result
	fpIsBody     bool      // fp was computed over body itself, so its facts (Store, LetterEscapes) are body's
	quotes       *[]uint64 // body's quote bitmap from the fingerprint's pass, for the prompt-cache stage (quotes.go)
	policy       cachePolicy
	coalesce     int8 // Groundhog-Coalesce: +1 on, -1 off, 0 unset (then: the operation's config, else the cache policy)
	shared       bool // identical calls in flight share this call's upstream call
	ttl          time.Duration
	noStore      bool // Cache-Control: no-store: never write the cache
	includeUsage bool // chat stream_options.include_usage (for synthesized streams)
	idemKey      string
	session      string             // Groundhog-Session: the agent run (session.go)
	parent       string             // Groundhog-Parent-Session
	claim        *idempotency.Claim // held while this call runs an idempotent operation
	orphan       orphanState        // the leader's row when its client leaves before the flight ends
	recheckHit   atomic.Bool        // the leader's flight found the entry on its second cache look-up
	peerFollowed atomic.Bool        // the leader's flight followed another replica's running flight (flights.go)
	spent        groundhog.Money    // what a failed upstream attempt cost the provider (see attempt.go)
	// The claim of the cross-replica flight this call leads (flights.go):
	// its row is keyed by it. Written by the flight before it publishes.
	flightToken   string
	flightClaimed time.Time
	upHeader      http.Header            // the upstream response headers that pass to the leader's client (headers.go)
	header        http.Header            // the client's request headers
	stages        *stageLog              // timed pipeline stages, for traces (nil when not timed: stages.go)
	upWait        atomic.Int64           // nanoseconds this call's own flight waited for its upstream (overhead.go)
	follows       *coalesce.Subscription // the flight a coalesced follower joined (overhead.go)
	start         time.Time
	inFlight      bool
	stored        storedObjects // what the answer makes that the tenant owns (stored.go); the flight's own
	pc            pcState       // prompt-cache stage (gateway/promptcache.go)
	hv            headerVals    // the response head's values (hdrfast.go)
	cacheMark     cache.Mark    // the cache's writes as the call's look-up read the store (recheckCache)
}

// provider returns the handler of one provider route.
func (s *Server) provider(shape groundhog.Shape) http.HandlerFunc {
	// This frame stays under a call for as long as it runs, a follower's
	// wait included (see deliver): what is not needed then is done in
	// functions of its own.
	return func(w http.ResponseWriter, r *http.Request) {
		if shape == groundhog.ShapeChat && r.Method == http.MethodGet {
			s.listChatCompletions(w, r)
			return
		}
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		c, err := s.admit(w, r, shape)
		if err != nil {
			s.refuse(w, r, shape, err)
			return
		}
		c.inFlight = s.tracker.Add(flightID{c.tenant, c.fp.Hash}) // no string built: a hit needs none
		defer s.untrack(c)
		s.serveCall(w, r, c)
	}
}

// untrack ends c's count among the calls in flight (a call's tenant and
// fingerprint do not change once admitted).
func (s *Server) untrack(c *call) { s.tracker.Done(flightID{c.tenant, c.fp.Hash}) }

// listChatCompletions answers the list of stored chat completions: the
// tenant's own (stored.go), or the provider's when its account is not
// shared.
func (s *Server) listChatCompletions(w http.ResponseWriter, r *http.Request) {
	if !s.ownedResources(w, r) {
		s.passthrough(w, r)
	}
}

// refuse answers a call admit refused, before the cache stage.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, shape groundhog.Shape, err error) {
	w.Header().Set(hdrCache, "off")
	s.writeError(w, r, shape, err)
}

// admit runs authentication, parsing, validation and the fingerprint. Every
// failure here is the client's and is answered before anything is stored.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, shape groundhog.Shape) (*call, error) {
	t0 := s.clock.Now() // the call's one full clock reading (stages.go: after)
	tenant, err := s.authenticateAt(r, t0)
	if err != nil {
		return nil, err
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, groundhog.Errorf(codeMethod, "method %s not allowed on %s (use POST)", r.Method, r.URL.Path)
	}
	if err := checkJSONContentType(hget(r.Header, "Content-Type")); err != nil {
		return nil, err
	}
	body, pooled, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	c := &call{shape: shape, invoke: isInvoke(r, shape), route: r.URL.Path, tenant: tenant, body: body, pooled: pooled, header: r.Header, start: s.after(t0)}
	if s.stagesOn {
		c.stages = new(stageLog)
	}
	if err := s.readHeaders(c, r.Header); err != nil {
		return nil, err
	}
	var gk gemini.RefKeys
	fpBody, stream, err := fingerprintBody(r, shape, body, &gk) // converse.go: the model id from the path, cachePoints out
	if err != nil {
		return nil, err
	}
	if shape == groundhog.ShapeGemini {
		// A cachedContent the tenant did not create is not found (geminicache.go).
		if err := s.checkGeminiBodyCaches(r.Context(), tenant, body, gk); err != nil {
			return nil, err
		}
		// So is a file or a tuned model (geminiowned.go).
		if err := s.checkGeminiBodyFiles(r.Context(), tenant, body, gk); err != nil {
			return nil, err
		}
	}
	params := fingerprint.Params{Shape: shape, Tenant: tenant, Versions: versionsFor(s.cfg.Operations[c.op].Versions, shape, r.Header), Names: watchedNames, Top: echoNames[shape]}
	var notes *atomic.Uint32
	c.fpIsBody = sameBytes(fpBody, body)
	quotes := wantQuotes(c) // quotes.go
	c.fp, notes, err = s.fpMemo.ComputeQuoted(params, fpBody, quotes)
	if err != nil {
		putQuotes(quotes)
		return nil, err
	}
	c.keepQuotes(quotes)
	bodyFP := &c.fp
	if !c.fpIsBody {
		bodyFP, notes = nil, nil // facts and notes of the fingerprinted bytes, which are not the body
	}
	// A file, vector store or conversation the tenant did not create is
	// not found (owned.go).
	if err := s.checkRefs(r.Context(), tenant, shape, body, bodyFP, notes); err != nil {
		return nil, err
	}
	if c.fp.Model == "" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "missing required field \"model\"")
	}
	// A fine-tuned model another tenant's job made is not found (owned.go).
	if err := s.checkModel(r.Context(), tenant, shape, c.fp.Model); err != nil {
		return nil, err
	}
	c.fp.Stream = c.fp.Stream || stream
	defer func() { s.stage(c, "groundhog.admit", t0) }() // authenticate, parse, fingerprint
	if shape == groundhog.ShapeEmbeddings && c.fp.Stream {
		return nil, groundhog.Errorf(groundhog.EINVALID, "embeddings cannot be streamed")
	}
	if c.op == "" {
		// The operation comes from a rule, which needs the model: its
		// declared versions join the key now.
		c.op = s.cfg.OperationFor(c.route, c.fp.Model)
		if v := s.cfg.Operations[c.op].Versions; v != "" {
			params.Versions = versionsFor(v, shape, r.Header)
			if c.fp, err = s.fpMemo.Compute(params, fpBody); err != nil {
				return nil, err
			}
			c.fp.Stream = c.fp.Stream || stream
		}
	}
	opCfg := s.cfg.Operations[c.op]
	if c.policy == policyOff && opCfg.Cache {
		c.policy = policyUse
	}
	c.shared = coalesces(c.policy, opCfg.Coalesce, c.coalesce)
	if c.ttl == 0 {
		c.ttl = opCfg.TTL
	}
	if c.ttl == 0 {
		c.ttl = s.cfg.Cache.DefaultTTL
	}
	if c.fp.Stream && shape == groundhog.ShapeChat && mayIncludeUsage(c, body) {
		var so struct {
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.Unmarshal(body, &so)
		c.includeUsage = so.StreamOptions.IncludeUsage
	}
	return c, nil
}

// mayIncludeUsage reports whether a chat body may set
// stream_options.include_usage, so that it must be decoded to find out:
// whether the fingerprint's pass over these bytes saw a member named
// include_usage (at any depth, its key decoded: an escaped spelling counts),
// else whether the bytes hold the name. At 200 KB the search cost a streamed
// hit ≈ 7 µs of its ≈ 25.
func mayIncludeUsage(c *call, body []byte) bool {
	if c.fpIsBody {
		return c.fp.Names&includeUsageBit != 0
	}
	return containsUnderscored(body, "include_usage")
}

// versionsFor joins what, besides the body, decides a response: the
// operation's configured versions, the client's Groundhog-Cache-Version, and
// for Anthropic the API version and beta features requested by header. The
// order is fixed: the fingerprint hashes the string as given.
//
// Each present component is written name=<byte length>:<value>, so the
// string decodes back to exactly one set of components: no header value,
// whatever bytes it holds ("v1|anthropic-beta=…"), can forge another
// component. With nothing declared the result is "" (the hash of a plain
// request does not depend on this format).
func versionsFor(opVersions string, shape groundhog.Shape, h http.Header) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+"="+strconv.Itoa(len(v))+":"+v)
		}
	}
	add("op", opVersions)
	add("client", hget(h, hdrCacheVersion))
	if shape == groundhog.ShapeMessages {
		add("anthropic-version", strings.TrimSpace(hget(h, "Anthropic-Version")))
		add("anthropic-beta", strings.Join(hvalues(h, "Anthropic-Beta"), ","))
	}
	return strings.Join(parts, "|") // "" when nothing is declared
}

// readHeaders validates the groundhog request headers.
func (s *Server) readHeaders(c *call, h http.Header) error {
	if op := hget(h, hdrOperation); op != "" {
		if !config.ValidOperationName(op) {
			return groundhog.Errorf(groundhog.EINVALID, "%s must be 1–128 characters of letters, digits and . _ - : /", hdrOperation)
		}
		c.op = op
	}
	switch v := strings.ToLower(strings.TrimSpace(hget(h, hdrCache))); v {
	case "":
	case "use":
		c.policy = policyUse
	case "refresh":
		c.policy = policyRefresh
	case "bypass":
		c.policy = policyBypass
	default:
		return groundhog.Errorf(groundhog.EINVALID, "%s must be use, refresh or bypass, not %q", hdrCache, v)
	}
	switch v := strings.ToLower(strings.TrimSpace(hget(h, hdrCoalesce))); v {
	case "":
	case "on":
		c.coalesce = 1
	case "off":
		c.coalesce = -1
	default:
		return groundhog.Errorf(groundhog.EINVALID, "%s must be on or off, not %q", hdrCoalesce, v)
	}
	if v := hget(h, keyCacheTTL); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 || n > int64(s.cfg.Cache.MaxTTL/time.Second) { // compared before converting: no overflow
			return groundhog.Errorf(groundhog.EINVALID, "%s must be a whole number of seconds from 1 to %d", hdrCacheTTL, int64(s.cfg.Cache.MaxTTL/time.Second))
		}
		c.ttl = time.Duration(n) * time.Second
	}
	if v := hget(h, hdrCacheVersion); v != "" && (len(v) > 256 || !visibleASCII(v, true)) {
		return groundhog.Errorf(groundhog.EINVALID, "%s must be at most 256 printable ASCII characters", hdrCacheVersion)
	}
	for _, cc := range hvalues(h, "Cache-Control") {
		for _, d := range strings.Split(cc, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "no-store") {
				c.noStore = true
			}
		}
	}
	var err error
	if c.session, c.parent, err = groundhog.SessionHeaders(hvalues(h, groundhog.HeaderSession), hvalues(h, groundhog.HeaderParentSession)); err != nil {
		return err
	}
	if err := checkPromptCacheHeaders(h); err != nil { // prompt-cache hook
		return err
	}
	if vals := hvalues(h, hdrIdemKey); len(vals) > 0 {
		if len(vals) > 1 || len(vals[0]) < 1 || len(vals[0]) > 255 || !visibleASCII(vals[0], false) {
			return groundhog.Errorf(groundhog.EINVALID, "%s must be one value of 1–255 visible ASCII characters", hdrIdemKey)
		}
		c.idemKey = vals[0]
	}
	return nil
}

// visibleASCII reports whether s has only visible ASCII (0x21–0x7e), plus
// spaces when space is true.
func visibleASCII(s string, space bool) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 0x21 || b > 0x7e) && !(space && b == ' ') {
			return false
		}
	}
	return true
}

func checkJSONContentType(ct string) error {
	if ct == "" {
		return groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Type must be application/json")
	}
	switch ct {
	case "application/json", "application/json; charset=utf-8":
		return nil // what ParseMediaType accepts, without its parameter map
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Type must be application/json, not %q", ct)
	}
	return nil
}

// serveCall runs the stages after admission: idempotency, then cache,
// coalescing and upstream (serveCached's, without its frame under a
// follower's wait).
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, c *call) {
	switch {
	case c.idemKey != "" && s.opts.Idem != nil:
		if s.beginIdempotent(w, r, c) {
			s.serveCached(w, r, c) // under the claim
		}
	case c.policy == policyUse && s.serveFromCache(w, r, c):
	default:
		s.serveFlight(w, r, c)
	}
}

// flightID is a call's tenant and fingerprint: the key of the calls in
// flight that the ledger's in-flight flag counts.
type flightID struct{ tenant, hash string }

// flightKey is the coalescing key of c's flight: its tenant and
// fingerprint. Built only when the call goes upstream.
func flightKey(c *call) string { return c.tenant + "\x00" + c.fp.Hash }

// serveCached runs the cache, coalescing and upstream stages.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request, c *call) {
	if c.policy == policyUse && s.serveFromCache(w, r, c) {
		return
	}
	s.serveFlight(w, r, c)
}

// serveFromCache answers c from the cache and reports whether it did.
func (s *Server) serveFromCache(w http.ResponseWriter, r *http.Request, c *call) bool {
	t0 := s.stageStart()
	e, mark, err := s.opts.Cache.GetMarked(r.Context(), c.tenant, c.fp.Hash)
	c.cacheMark = mark // recheckCache
	s.stage(c, "groundhog.cache", t0)
	if err == nil {
		s.serveHit(w, r, c, e)
		c.releaseBody() // the hit is written: nothing reads the body any more (body.go)
		return true
	}
	if !groundhog.IsNotFound(err) {
		s.log.Warn("cache read failed; serving as a miss", append(logAttrs(c), "err", err)...)
	}
	return false
}

// serveFlight leads or follows c's flight to the upstream (a private one
// when c is not shared) and answers from it. A follower waits under this
// frame as long as the flight runs (see deliver): joining is done in a
// function of its own.
func (s *Server) serveFlight(w http.ResponseWriter, r *http.Request, c *call) {
	var seat flightSeat
	defer seat.leave()
	s.joinFlight(r.Context(), c, &seat)
	s.deliver(w, r, c, &seat)
}

// flightSeat is a handler's place in a flight.
type flightSeat struct {
	sub   *coalesce.Subscription
	held  *bodyRefs // the handler's reference to the pooled body, nil once let go
	state string    // Groundhog-Cache: miss, refresh, bypass, off, or coalesced for a follower
	// keep: the flight goes on when this handler leaves it (decided on
	// joining: settling the claim clears c.claim before the handler leaves).
	leader, keep bool
}

// answerBegan lets go of the leader's body once the flight's answer has
// begun, where nothing the handler still does reads it: the answer is the
// call's own (not a cache entry the flight found: its echoed fields are
// rewritten from the body), and it is relayed as a stream or has no echoed
// fields (a complete answer may yet be replaced by an idempotent winner's,
// rewritten from the body; echo.go). The flight let go before it published
// the head (exchange.received), so the body is read by no one: the pooled
// buffer's reference is released, and the call forgets the body, which a
// stream would otherwise keep from the garbage collector for as long as it
// lasts (missbody.go).
//
//go:noinline
func (seat *flightSeat) answerBegan(c *call, relayed bool) {
	if c.recheckHit.Load() || !relayed && wire.HasEchoedFields(c.shape) {
		return
	}
	if seat.held != nil {
		seat.held.release()
		seat.held = nil
	}
	c.body = nil
}

// leave leaves the flight, then lets go of the pooled body unless a
// follower did so early.
func (seat *flightSeat) leave() {
	if seat.sub != nil {
		leaveFlight(seat.sub, seat.keep)
	}
	if seat.held != nil {
		seat.held.release()
	}
}

// joinFlight leads or follows c's flight, taking seat.
func (s *Server) joinFlight(ctx context.Context, c *call, seat *flightSeat) {
	key := flightKey(c)
	seat.keep = outlivesClient(c)
	refs := c.missBodyRefs() // missbody.go: the pooled body goes back when its last reader lets go
	if refs != nil {
		c.flightRef = refs.acquire() // the flight's, taken before it can start
	}
	seat.held = refs // the handler's reference
	leader := true
	fn := func(ctx context.Context, pub *coalesce.Publisher) (*groundhog.Response, error) {
		return s.upstreamCall(ctx, c, pub) // the flight lets go of the body when its answer begins, or at its end
	}
	if c.shared {
		seat.sub, leader = s.flights.Do(ctx, key, fn)
	} else {
		var solo coalesce.Group // a private flight: same delivery code, no sharing
		seat.sub, _ = solo.Do(ctx, key, fn)
	}
	seat.leader = leader
	if !leader {
		c.follows = seat.sub
		c.flightLetsGo() // fn never runs: the flight's reference is not needed
		// A follower waits as long as the flight runs, perhaps minutes:
		// it keeps only what it still reads of its body (body.go).
		keepForFollowing(c)
		if seat.held != nil {
			seat.held.release() // nothing reads the pooled buffer now
			seat.held = nil
		}
	}
	switch {
	case !leader:
		seat.state = "coalesced"
	case c.policy == policyUse:
		seat.state = "miss"
	case c.policy == policyRefresh:
		seat.state = "refresh"
	case c.policy == policyBypass:
		seat.state = "bypass"
	default:
		seat.state = "off"
	}
}

// serveHit replays a cache entry.
func (s *Server) serveHit(w http.ResponseWriter, r *http.Request, c *call, e *groundhog.CacheEntry) {
	resp := &e.Response
	row := s.row(c, groundhog.OutcomeCacheHit, resp.Status)
	if resp.Cost.Known() {
		row.Saved, row.FullCost = resp.Cost, resp.Cost
	} else {
		row.FullCost = groundhog.CostUnknown
	}
	row.Model = firstNonEmpty(resp.Model, c.fp.Model)
	s.writeStored(w, r, c, resp, "hit", 0, row.Saved, row)
}

// deliver answers the client from a flight's subscription: live events when
// both the client and the flight stream, the final response otherwise.
//
// A follower waits here, under Head or Wait, as long as the flight runs, so
// this frame is kept small and the work after the wait is done in
// functions it calls: the runtime halves a parked goroutine's stack only
// while less than a quarter of it is in use, and a follower's stack is then
// 8 KB instead of 16 (a ledger row in this frame was enough to keep it at 16).
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, c *call, seat *flightSeat) {
	ctx, sub, leader, state := r.Context(), seat.sub, seat.leader, seat.state
	status, ct, streamed, err := sub.Head(ctx)
	if err != nil {
		s.fail(w, r, c, err, leader, state)
		return
	}
	relayed := c.fp.Stream && streamed && status/100 == 2
	if leader {
		seat.answerBegan(c, relayed)
		if c.recheckHit.Load() {
			state = stateAcross(c)
		}
	}
	setUpstreamHeaders(w.Header(), c, leader)
	if relayed {
		s.writeRelayHead(w, c, state, ct)
		s.relay(w, r, c, sub, leader)
		return
	}
	resp, err := sub.Wait(ctx)
	if err != nil {
		s.fail(w, r, c, err, leader, state)
		return
	}
	s.deliverResponse(w, r, c, resp, leader, state)
}

// deliverResponse answers the client with the flight's final response.
func (s *Server) deliverResponse(w http.ResponseWriter, r *http.Request, c *call, resp *groundhog.Response, leader bool, state string) {
	outcome, cost, saved := s.accounting(c, resp, leader)
	row := s.row(c, outcome, resp.Status)
	row.Usage, row.Cost, row.Saved, row.FullCost = usageIf(leader && !c.recheckHit.Load(), resp), cost, saved, resp.Cost
	row.Model = firstNonEmpty(resp.Model, c.fp.Model)
	if answerFailed(c.shape, resp) {
		row.Outcome = groundhog.OutcomeError
	}
	s.writeStored(w, r, c, resp, state, cost, saved, row)
}

// accounting returns the ledger outcome, cost and saving of a call that got
// resp from a flight it led or followed.
func (s *Server) accounting(c *call, resp *groundhog.Response, leader bool) (groundhog.Outcome, groundhog.Money, groundhog.Money) {
	if leader && !c.recheckHit.Load() {
		return groundhog.OutcomeUpstream, resp.Cost, 0
	}
	if leader && !c.peerFollowed.Load() { // a cross-replica follower is coalesced, below
		if !resp.Cost.Known() {
			return groundhog.OutcomeCacheHit, 0, 0
		}
		return groundhog.OutcomeCacheHit, 0, resp.Cost
	}
	if !resp.Cost.Known() {
		return groundhog.OutcomeCoalesced, 0, 0
	}
	return groundhog.OutcomeCoalesced, 0, resp.Cost
}

func usageIf(leader bool, resp *groundhog.Response) groundhog.Usage {
	if leader && resp != nil {
		return resp.Usage
	}
	return groundhog.Usage{}
}

// writeStored writes a complete response in the client's mode, converting
// between a stored stream and a stored body when they differ, and records
// the ledger row before the response is complete.
func (s *Server) writeStored(w http.ResponseWriter, r *http.Request, c *call, resp *groundhog.Response, state string, cost, saved groundhog.Money, row groundhog.LedgerEntry) {
	h := w.Header()
	s.setHeaders(h, c, state)
	s.pcHeaders(h, c) // prompt-cache hook
	winner, rerr := s.finish(c, row, resp, nil)
	if rerr != nil {
		// No durable row, no response: the answer stays in the cache and
		// the operation record for the retry.
		s.writeError(w, r, c.shape, rerr)
		return
	}
	if winner != nil && winner.Result != nil {
		// This attempt lost its lease to another one that committed first:
		// answer with the committed result, as every later retry will.
		resp, cost, saved = winner.Result, 0, 0
		h.Set(hdrReplayed, "true")
		h.Set(hdrCache, "replayed")
		clearUpstreamHeaders(h)
		row.Outcome = groundhog.OutcomeReplayed // for the saved header only: the row is recorded
		state = "replayed"
	}
	if sharedAnswer(state) {
		resp = s.echoFor(c, resp)
	}
	if !resp.OK() {
		// Upstream errors pass through with their status and body.
		if c.bedrockFramed() && h.Get(bedrock.ErrorTypeHeader) == "" {
			// A stored or shared error lost the provider's header: the
			// AWS SDK reads the exception's name from it.
			h.Set(bedrock.ErrorTypeHeader, bedrock.ExceptionForStatus(resp.Status))
		}
		h.Set("Content-Type", firstNonEmpty(resp.ContentType, "application/json"))
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
		return
	}
	c.hv.set(h, hdrCost, costString(cost)) // exact casing of the wire contract
	c.hv.set(h, hdrSaved, savedHeaderFor(state, row.Outcome, saved, resp))
	if c.fp.Stream {
		events := resp.Events
		if !resp.Streamed {
			var err error
			if events, err = wire.EventsFromBody(c.shape, resp.Body, c.includeUsage); err != nil {
				s.writeError(w, r, c.shape, groundhog.WrapError(groundhog.EINTERNAL, "", err))
				return
			}
		}
		h.Set("Content-Type", streamContentType(c))
		h.Set("Cache-Control", "no-cache")
		writeEvents(w, resp.Status, state, c, events) // hitwrite.go: one write, its length known
		return
	}
	body, ct := resp.Body, firstNonEmpty(resp.ContentType, "application/json")
	if resp.Streamed {
		var err error
		if body, err = wire.BodyFromEvents(c.shape, resp.Events); err != nil {
			s.writeError(w, r, c.shape, groundhog.WrapError(groundhog.EINTERNAL, "", err))
			return
		}
		ct = "application/json"
	}
	c.hv.set(h, "Content-Type", ct)
	c.hv.set(h, "Content-Length", lengthFor(state, len(body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(body)
}

// relay streams a flight's events to the client as they arrive, after the
// head writeRelayHead wrote. The ledger row is recorded before the terminal
// event is written, so a client that received a complete stream always has
// its row.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, c *call, sub *coalesce.Subscription, leader bool) {
	// The call waits for each event under this frame: the relay's state is
	// in a pooled relaying, each event handled by a function of its own
	// (design record 0021).
	rl := relays.Get().(*relaying) // zero: release cleared it
	rl.s, rl.w, rl.r, rl.c, rl.sub, rl.leader = s, w, r, c, sub, leader
	defer rl.release()
	ctx := rl.start()
	for {
		if rl.unflushed && !sub.Buffered() { // flush before waiting: events already there go in one write
			rl.flush()
		}
		rl.ev, rl.err = sub.Next(ctx)
		if !rl.event() {
			return
		}
	}
}

// relaying is one relay's state.
type relaying struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	c      *call
	sub    *coalesce.Subscription
	leader bool

	ctx       context.Context
	h         http.Header
	rc        *http.ResponseController
	echo      *wire.EchoRewriter
	buf       []byte // grows to the largest event: a follower that waits holds none
	recorded  bool   // the terminal event's row is recorded
	unflushed bool
	ev        groundhog.Event // the flight's next event, or its end (err)
	err       error
}

// relays keeps relay's frame small without an allocation a stream.
var relays = sync.Pool{New: func() any { return new(relaying) }}

// start flushes the head written by writeRelayHead and returns the call's
// context.
func (rl *relaying) start() context.Context {
	rl.ctx, rl.h = rl.r.Context(), rl.w.Header()
	rl.rc = http.NewResponseController(rl.w)
	_ = rl.rc.Flush()
	rl.echo = echoRewriter(rl.c, rl.leader)
	return rl.ctx
}

func (rl *relaying) flush() {
	_ = rl.rc.Flush()
	rl.unflushed = false
}

// event relays the flight's next event (or its end, rl.err), and reports
// whether the relay goes on.
func (rl *relaying) event() bool {
	s, c, ev, err := rl.s, rl.c, rl.ev, rl.err
	rl.ev, rl.err = groundhog.Event{}, nil // held only while it is relayed
	if err == io.EOF {
		if !rl.recorded {
			// Complete per the flight, but no terminal event was seen:
			// record and settle from the result all the same.
			s.finishRelay(rl.ctx, c, rl.sub, rl.leader, rl.h)
		}
		return false
	}
	if err != nil {
		s.breakStream(rl.w, rl.r, c, err, rl.leader, rl.buf)
		return false
	}
	if wire.IsTerminal(c.shape, ev) {
		// Hold the terminal event until the row is durable.
		if err := s.finishRelay(rl.ctx, c, rl.sub, rl.leader, rl.h); err != nil {
			s.breakStream(rl.w, rl.r, c, err, rl.leader, rl.buf)
			return false
		}
		rl.recorded = true
	}
	if hiddenUsageChunk(c, ev) {
		return true
	}
	ev = rl.echo.Event(ev)
	rl.buf = appendEvent(c, rl.buf[:0], ev)
	if _, err := rl.w.Write(rl.buf); err != nil {
		if !wire.IsTerminal(c.shape, ev) { // the terminal event's row is already recorded
			s.abandon(c, rl.leader, err)
		}
		return false // the client went away; the flight goes on for the others
	}
	rl.unflushed = true
	return true
}

// release puts the relay's state back in the pool, holding nothing of it.
func (rl *relaying) release() {
	*rl = relaying{}
	relays.Put(rl)
}

// writeRelayHead writes the head of a relayed stream. A function of its
// own: a follower waits for each event under relay's frame.
func (s *Server) writeRelayHead(w http.ResponseWriter, c *call, state, ct string) {
	h := w.Header()
	s.setHeaders(h, c, state)
	h.Set("Content-Type", firstNonEmpty(ct, "text/event-stream"))
	if c.bedrockFramed() {
		h.Set("Content-Type", bedrock.ContentType)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("Trailer", hdrCost+", "+hdrSaved+", "+hdrPromptCache+", "+hdrPromptCacheBreak) // prompt-cache hook: its headers are trailers on streams
	w.WriteHeader(http.StatusOK)
}

// finishRelay records a relayed call's row and settles its claim from the
// flight's result, and sets the cost trailers.
func (s *Server) finishRelay(ctx context.Context, c *call, sub *coalesce.Subscription, leader bool, h http.Header) error {
	resp, err := sub.Wait(ctx)
	if err != nil {
		return err
	}
	outcome, cost, saved := s.accounting(c, resp, leader)
	row := s.row(c, outcome, resp.Status)
	row.Usage, row.Cost, row.Saved, row.FullCost = usageIf(leader && !c.recheckHit.Load(), resp), cost, saved, resp.Cost
	row.Model = firstNonEmpty(resp.Model, c.fp.Model)
	if answerFailed(c.shape, resp) {
		row.Outcome = groundhog.OutcomeError // the provider's own error, relayed as it sent it
	}
	if _, err := s.finish(c, row, resp, nil); err != nil {
		return err // the stream is broken off: no durable row, no complete response
	}
	h.Set(hdrCost, costString(cost)) // a trailer: net/http matches trailers by canonical key
	h.Set(hdrSaved, savedHeader(outcome, saved, resp))
	s.pcHeaders(h, c) // prompt-cache hook (trailers)
	return nil
}

// breakStream ends a stream whose flight failed after the head was sent: an
// error event in the provider's format, then the connection is aborted so
// the client cannot take the truncated stream for a complete one.
func (s *Server) breakStream(w http.ResponseWriter, r *http.Request, c *call, err error, leader bool, buf []byte) {
	if r.Context().Err() != nil {
		s.abandon(c, leader, err)
		return
	}
	code := groundhog.ErrorCode(err)
	_, _ = s.finish(c, s.failedRow(c, leader, statusFor(code)), nil, err)
	buf = appendEvent(c, buf[:0], wire.ErrorEvent(c.shape, code, groundhog.ErrorMessage(err)))
	_, _ = w.Write(buf)
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// fail answers a call whose flight failed before any response was sent.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, c *call, err error, leader bool, state string) {
	if r.Context().Err() != nil {
		s.abandon(c, leader, err)
		return
	}
	code := groundhog.ErrorCode(err)
	_, _ = s.finish(c, s.failedRow(c, leader, statusFor(code)), nil, err)
	s.setHeaders(w.Header(), c, state)
	s.writeError(w, r, c.shape, err)
}

// statusClientGone is the ledger status of a call whose client left before
// its response was complete (nginx's convention; never sent on the wire).
const statusClientGone = 499

// orphanState hands the leader's ledger row (and idempotency claim) to its
// flight when the leader's client leaves first. Followers may still be
// waiting, so the upstream call goes on — and what it costs must still reach
// the ledger under this call, as the upstream attempt it is.
type orphanState struct {
	mu      sync.Mutex
	done    bool                   // the flight's work has ended
	resp    *groundhog.Response    // its result, when done
	err     error                  // its error, when done
	pending *groundhog.LedgerEntry // the leader's row, waiting for the flight
}

// abandon ends a call whose client went away. A follower's row is recorded
// now (status 499). The leader's row waits for the flight: when it ends, the
// row gets the upstream outcome, usage and cost (still status 499) and the
// claim, if any, is settled with the real result — so a retry after a
// client timeout replays the answer instead of paying for it again.
func (s *Server) abandon(c *call, leader bool, err error) {
	row := s.row(c, groundhog.OutcomeError, statusClientGone)
	if !leader {
		_, _ = s.finish(c, row, nil, err)
		return
	}
	c.orphan.mu.Lock()
	defer c.orphan.mu.Unlock()
	if c.orphan.done {
		s.finishOrphan(c, row)
		return
	}
	c.orphan.pending = &row
}

// flightDone is called by the leader's flight when its work ends.
func (s *Server) flightDone(c *call, resp *groundhog.Response, err error) {
	c.orphan.mu.Lock()
	defer c.orphan.mu.Unlock()
	c.orphan.done, c.orphan.resp, c.orphan.err = true, resp, err
	if c.orphan.pending != nil {
		s.finishOrphan(c, *c.orphan.pending)
		c.orphan.pending = nil
	}
}

// finishOrphan records the abandoned leader's row with the flight's result.
// Called with c.orphan.mu held.
func (s *Server) finishOrphan(c *call, row groundhog.LedgerEntry) {
	resp, err := c.orphan.resp, c.orphan.err
	if err == nil && resp != nil {
		outcome, cost, saved := s.accounting(c, resp, true)
		if answerFailed(c.shape, resp) {
			outcome = groundhog.OutcomeError
		}
		row.Outcome, row.Cost, row.Saved, row.FullCost = outcome, cost, saved, resp.Cost
		row.Usage = usageIf(!c.recheckHit.Load(), resp)
		row.Model = firstNonEmpty(resp.Model, c.fp.Model)
	} else {
		row.Cost, row.FullCost = c.spent, c.spent // what the failed attempt cost, or unknown
	}
	_, _ = s.finish(c, row, resp, err)
}

func (s *Server) setHeaders(h http.Header, c *call, state string) {
	c.hv.set(h, hdrRequestHash, c.fp.Hash)
	if state != "" {
		c.hv.set(h, hdrCache, state)
	}
}

// maxModelName bounds the model name kept in the ledger: it comes from the
// client's body and every row is journaled.
const maxModelName = 256

func boundModel(m string) string {
	if len(m) > maxModelName {
		return m[:maxModelName]
	}
	return m
}

// row starts the ledger row of c.
func (s *Server) row(c *call, outcome groundhog.Outcome, status int) groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		ID:            groundhog.NewTimeID(c.start),
		Time:          c.start.UTC(),
		Tenant:        c.tenant,
		Operation:     c.op,
		RequestHash:   c.fp.Hash,
		Shape:         c.shape,
		Model:         c.fp.Model,
		Provider:      s.upstreamOf(c).Provider,
		Outcome:       outcome,
		Status:        status,
		InFlight:      c.inFlight || c.peerFollowed.Load(),
		CacheOn:       c.policy.on(),
		Idempotent:    c.idemKey != "",
		Stream:        c.fp.Stream,
		Attempt:       attemptFor(outcome),
		Session:       c.session,
		ParentSession: c.parent,
	}
}

func attemptFor(o groundhog.Outcome) int {
	if o == groundhog.OutcomeUpstream {
		return 1
	}
	return 0
}

// finish ends a call that may hold an operation claim: the ledger row is
// recorded first (so an attempt that paid the provider is in the ledger even
// if the process dies before the commit), then the claim is settled. It
// returns the winning record when the claim was stale.
func (s *Server) finish(c *call, row groundhog.LedgerEntry, resp *groundhog.Response, err error) (*groundhog.Operation, error) {
	if c.claim != nil {
		op := c.claim.Op()
		row.Attempt = op.Attempts
		// The row's key is reproducible from the record, so a worker that
		// takes over after a crash books this attempt under the same key
		// (recordLostAttempt) and the ledger never holds it twice.
		row.Time, row.ID = attemptKey(op.ID, op.Attempts, op.UpdatedAt)
	} else if c.flightToken != "" && !c.flightClaimed.IsZero() {
		// A replica taking over after this one died books this attempt
		// under the same key (recordLostFlight).
		row.Time, row.ID = flightAttemptKey(c.flightToken, c.flightClaimed)
	}
	rerr := s.record(c, row)
	return s.settle(c, resp, err), rerr
}

// record completes the row's latency and hands it to the ledger. An error
// means the row is not durable: the caller must not complete the response.
func (s *Server) record(c *call, row groundhog.LedgerEntry) error {
	now := s.after(c.start)
	row.Latency = now.Sub(c.start)
	row.UpstreamWait = c.upstreamWait(now, row.Latency) // overhead.go
	s.pcRow(c, &row)                                    // prompt-cache hook
	return s.book(c, row, s.stagesOn, now)
}

// book hands a complete row of c to the ledger, with c's stage times when
// stages is set. Every row passes here: its prompt-cache saving is priced
// from its own usage and model, as the call's cost is (CostUnknown when
// unpriced). at is when the row was completed, or zero.
func (s *Server) book(c *call, row groundhog.LedgerEntry, stages bool, at time.Time) error {
	row.PromptCacheSaved = s.cfg.PriceTable.PromptCacheSaving(row.Model, row.Usage)
	row.Model = boundModel(row.Model)
	if s.opts.Ledger == nil {
		return nil
	}
	var err error
	if tr, ok := s.opts.Ledger.(TimedRecorder); ok && s.sysClk && !at.IsZero() {
		var st []groundhog.Stage
		if stages {
			st = c.stageTimes()
		}
		err = tr.RecordAt(row, st, at)
	} else if sr, ok := s.opts.Ledger.(StageRecorder); ok && stages {
		err = sr.RecordStages(row, c.stageTimes())
	} else {
		err = s.opts.Ledger.Record(row)
	}
	if err != nil {
		s.log.Error("ledger record failed", append(logAttrs(c), "err", err)...)
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "ledger unavailable", err)
	}
	return nil
}

func costString(m groundhog.Money) string {
	if !m.Known() {
		return "unknown"
	}
	return m.String()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"type":"server_error","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
