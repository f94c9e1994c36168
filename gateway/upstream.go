package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/explicitcache"
	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// maxUpstreamBytes bounds one upstream response held in memory: a body, or
// the total of a stream's bytes (config max_upstream_bytes).
func (s *Server) maxUpstreamBytes() int64 {
	if n := s.cfg.MaxUpstreamBytes; n > 0 {
		return n
	}
	return config.DefaultMaxUpstreamBytes
}

// errUpstreamTooLarge is boundedReader's error past its limit.
var errUpstreamTooLarge = errors.New("gateway: upstream response over max_upstream_bytes")

// boundedReader reads at most left bytes of r, then fails with
// errUpstreamTooLarge (not io.EOF: a stream cut by the bound must never look
// complete).
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errUpstreamTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// upstreamFor returns the provider endpoint that serves shape.
func (s *Server) upstreamFor(shape groundhog.Shape) *Upstream {
	switch shape {
	case groundhog.ShapeMessages:
		return &s.opts.Anthropic
	case groundhog.ShapeConverse:
		return &s.opts.Bedrock
	case groundhog.ShapeGemini:
		return &s.opts.Gemini
	}
	return &s.opts.OpenAI
}

// upstreamOf returns the provider endpoint that serves c: Bedrock's for a
// native body on its InvokeModel routes, else the shape's.
func (s *Server) upstreamOf(c *call) *Upstream {
	if c.invoke {
		return &s.opts.Bedrock
	}
	return s.upstreamFor(c.shape)
}

// hopHeaders are never forwarded upstream: hop-by-hop headers, the client's
// gateway credentials, and groundhog's own headers.
var dropHeaders = map[string]bool{
	"Authorization": true, "X-Api-Key": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Host": true,
	"Accept-Encoding": true, "Cookie": true, "Idempotency-Key": true, "Prefer": true,
	"Cache-Control": true, "X-Goog-Api-Key": true,
}

// upstreamCall is the work of a flight: one provider call. It publishes the
// head and, for streams, every event as it arrives, then stores a complete
// success in the cache (before returning, so a request that arrives after
// the flight ends finds the entry) and returns the response.
//
// The flight waits for the provider under this frame too: what it does
// before and after is done by functions of its own (design record 0021).
func (s *Server) upstreamCall(ctx context.Context, c *call, pub *coalesce.Publisher) (*groundhog.Response, error) {
	s.beginUpstream(c)
	defer s.upstreamEnded(c)
	resp, err := s.callUpstream(ctx, c, pub)
	s.upstreamDone(c, resp, err)
	return resp, err
}

// beginUpstream counts the flight's work and starts its stage.
//
//go:noinline
func (s *Server) beginUpstream(c *call) {
	s.working.Add(1)
	if s.stagesOn && c.stages != nil {
		c.stages.upstream = s.clock.Now()
	}
}

// upstreamDone records the flight's stage and ends the flight with its
// outcome.
//
//go:noinline
func (s *Server) upstreamDone(c *call, resp *groundhog.Response, err error) {
	if s.stagesOn && c.stages != nil {
		s.stage(c, "groundhog.upstream", c.stages.upstream)
	}
	c.flightEnded = true
	s.flightDone(c, resp, err)
}

// upstreamEnded ends the flight's work, deferred: a flight not ended by
// upstreamDone panicked, which coalesce turns into every waiter's error.
// The flight lets go of the body here if its answer never began.
func (s *Server) upstreamEnded(c *call) {
	if !c.flightEnded {
		s.flightDone(c, nil, groundhog.Errorf(groundhog.EINTERNAL, "upstream call failed"))
	}
	s.working.Add(-1)
	c.flightLetsGo()
}

// callUpstream does upstreamCall's work. A stream's flight waits for each
// event under this frame and readStream's for as long as the stream lasts:
// both are kept small (design record 0021), and the rest of the call is done
// by functions that return before the wait, their state in an exchange.
func (s *Server) callUpstream(ctx context.Context, c *call, pub *coalesce.Publisher) (*groundhog.Response, error) {
	if c.policy == policyUse && !s.leadsAcross(c) {
		if resp := s.recheckCache(ctx, c, pub); resp != nil {
			return resp, nil
		}
	}
	x := exchanges.Get().(*exchange) // zero: release cleared it
	x.s, x.c, x.pub = s, c, pub
	defer x.release()
	if shared, err := x.leadAcross(ctx); shared != nil || err != nil {
		return shared, err
	}
	body := s.pcBefore(ctx, c) // prompt-cache hook: rewrites, diagnosis, fan-out hold (before the upstream deadline starts)
	x.pcHeld = true
	if err := x.send(ctx, body); err != nil {
		return nil, err
	}
	var (
		resp *groundhog.Response
		err  error
	)
	switch x.answerKind() {
	case answerError:
		return x.errorAnswer()
	case answerStream:
		resp, err = x.readStream()
	default:
		resp, err = x.readBody()
	}
	if err != nil {
		return nil, err
	}
	return x.settle(resp), nil
}

// The kinds of a provider's answer.
const (
	answerError  = iota // an error status: its body as sent
	answerStream        // a stream of events
	answerBody          // one JSON body
)

// answerKind reads the kind of the answer's head.
func (x *exchange) answerKind() int {
	switch {
	case x.res.StatusCode/100 != 2:
		return answerError
	case isEventStream(x.ct) || x.c.bedrockFramed() && isAWSEventStream(x.ct):
		return answerStream
	}
	return answerBody
}

// recheckCache answers a flight from the cache when a flight that just
// ended filled it between this call's lookup and its becoming leader: look
// once more before paying. It returns nil when the cache has no entry. A
// call that leads across replicas (leadsAcross) skips it: Flights.Lead
// looks once more after its claim, later than this look would.
//
// The flight that just ended is this process's: when no write of this
// process began in the key's part of the cache since the first look
// (cache.GetMarked, Cache.Unwritten), there is nothing to find and the
// cache is not looked in again. With a store this process alone writes
// (SQLite), nothing else can have appeared. On a store other replicas
// write (PostgreSQL without Redis, where they do not coordinate their
// flights), an identical call of another replica is not this call's to
// share: it pays its own upstream call whether its answer lands just
// before this look or just after.
func (s *Server) recheckCache(ctx context.Context, c *call, pub *coalesce.Publisher) *groundhog.Response {
	if s.opts.Cache.Unwritten(c.cacheMark) {
		return nil
	}
	e, err := s.opts.Cache.Get(ctx, c.tenant, c.fp.Hash)
	if err != nil {
		return nil
	}
	c.recheckHit.Store(true)
	resp := e.Response
	pub.Head(resp.Status, resp.ContentType, resp.Streamed)
	for _, ev := range resp.Events {
		pub.Event(ev)
	}
	return &resp
}

// exchange is one provider call of a flight, from the request sent to the
// answer settled: what callUpstream's steps share.
type exchange struct {
	s   *Server
	c   *call
	pub *coalesce.Publisher

	lead       coalesce.Sink   // the flight across replicas this replica leads, nil when none
	pcHeld     bool            // the prompt-cache hook's pending fan-out is released at the end
	ctx        context.Context // the call's, bounded by the upstream timeout once sent
	cancel     context.CancelFunc
	up         *Upstream          // the provider endpoint
	url        string             // the request's
	clientBody []byte             // the client's body (as keyed), sent again if a managed cache is refused
	upBody     *upstreamBody      // what the request's rewinds read, forgotten once the answer begins (missbody.go)
	ec         *explicitcache.Use // the managed cache the request names, nil when none
	res        *http.Response     // the answer's head; its body closed at the end
	ct         string             // its Content-Type
	sent       time.Time          // when the request went out
	sending    bool               // it went out: the end ends the upstream wait
	waited     bool               // the upstream wait was measured (waitEnd)

	rec            *streamRecorder       // the objects a streamed answer makes (stored.go)
	bodyRec        *pendingRecord        // the objects a body answer makes, being recorded (stored.go)
	parts          []groundhog.UsagePart // the iterations of a usage that ran in several
	providerFailed bool                  // a stream the provider ended with its own error
	ev             groundhog.Event       // the stream's event just read (readStream, event)
}

// exchanges keeps callUpstream's frame small without an allocation a call.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// leadAcross makes this replica the leader of the flight across replicas,
// or returns another replica's answer (flights.go).
func (x *exchange) leadAcross(ctx context.Context) (*groundhog.Response, error) {
	shared, lead, err := x.s.leadAcross(ctx, x.c, x.pub)
	if shared == nil && err == nil {
		x.lead = lead
	}
	return shared, err
}

// release ends the exchange in the reverse order its steps began it — the
// stream's records waited for, the answer's body closed, the upstream wait
// measured, the deadline's timer stopped, held fan-out requests released,
// the flight across replicas ended as failed unless settle ended it with
// the answer (the first End counts) — and puts it back in the pool.
func (x *exchange) release() {
	if x.rec != nil {
		x.rec.wait() // an answer cut short: its object may exist all the same
	}
	if x.res != nil {
		x.res.Body.Close()
	}
	if x.sending {
		x.waitEnd()
	}
	if x.cancel != nil {
		x.cancel()
	}
	if x.pcHeld {
		x.c.pc.pending.Done()
	}
	if x.lead != nil {
		x.lead.End(nil)
	}
	*x = exchange{}
	exchanges.Put(x)
}

// waitEnd ends the upstream wait, once: it ends with the answer's body
// (overhead.go).
func (x *exchange) waitEnd() {
	if !x.waited {
		x.waited = true
		x.s.upstreamWaited(x.c, x.pub, x.sent)
	}
}

// send sends the call's request upstream and reads the answer's head. The
// flight waits here for the head, as long as the provider takes to answer
// a call that is not streamed: building the request and the answer's
// bookkeeping are done in functions of their own.
func (x *exchange) send(ctx context.Context, body []byte) error {
	req, err := x.request(ctx, body)
	if err != nil {
		return err
	}
	x.sent, x.sending = x.s.clock.Now(), true // from here every return ends the upstream wait (release)
	res, err := x.s.roundTrip(req)            // s.client.Do without the client layer (roundtrip.go)
	if err == nil && x.ec != nil && cacheRefused(res.StatusCode) {
		if req, err = x.cacheRefused(res); err != nil {
			return err
		}
		res, err = x.s.roundTrip(req)
	}
	if err != nil {
		x.c.spent = spentOnTransportError(err)
		return upstreamError(x.ctx, err)
	}
	x.received(res)
	return nil
}

// request builds the call's upstream request: the provider's URL for the
// call, the body as sent (a managed cache named, include_usage asked), the
// upstream deadline started.
func (x *exchange) request(ctx context.Context, body []byte) (*http.Request, error) {
	s, c := x.s, x.c
	up := s.upstreamOf(c)
	if up.BaseURL == "" && (c.bedrockFramed() || c.shape == groundhog.ShapeGemini) {
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "no %s upstream is configured", c.shape.Provider())
	}
	x.up = up
	// explicit-cache hook: may name a managed Gemini cache instead of the
	// prefix it holds (explicitcache.go); the client's body stays the key.
	x.clientBody = body
	c.stored = s.storedFor(ctx, c) // what the answer makes that the tenant owns (stored.go): a hit never asks
	x.ec = s.explicitBefore(ctx, c, body)
	if x.ec != nil {
		body = x.ec.Body
	}
	ctx, x.cancel = context.WithTimeout(ctx, s.cfg.UpstreamTimeout)
	x.ctx = ctx
	url := strings.TrimSuffix(up.BaseURL, "/") + strings.TrimPrefix(c.route, "/v1")
	if c.shape == groundhog.ShapeConverse {
		url = strings.TrimSuffix(up.BaseURL, "/") + bedrock.Path(c.fp.Model, c.fp.Stream) // the model id escaped again
	}
	if c.invoke {
		url = strings.TrimSuffix(up.BaseURL, "/") + bedrock.InvokePath(c.fp.Model, c.fp.Stream)
	} else if c.shape == groundhog.ShapeGemini {
		url = strings.TrimSuffix(up.BaseURL, "/") + gemini.Path(gemini.Version(c.route), c.fp.Model, c.fp.Stream) // ?alt=sse for a stream; never the client's ?key=
	}
	x.url = url
	if c.shape == groundhog.ShapeChat && c.fp.Stream && !c.includeUsage {
		// A chat stream reports usage only when asked: ask, so the call's
		// cost is known; clients that did not ask never see the chunk.
		// The client's bytes with the member written in (includeusage.go).
		body = setIncludeUsage(body, sameBytes(body, c.body) && c.fpIsBody && c.fp.Names&streamOptionsBit == 0)
	}
	return x.newRequest(body)
}

// newRequest is the upstream request of the call carrying body, with its
// headers and credentials.
func (x *exchange) newRequest(body []byte) (*http.Request, error) {
	req, up, err := newUpstreamRequest(x.ctx, x.url, x.c, body) // missbody.go
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINTERNAL, "", err)
	}
	x.upBody.forget() // a refused managed cache's request: its answer is in
	x.upBody = up
	if err := x.s.prepareUpstream(x.ctx, req, x.c, x.up, body, true); err != nil {
		x.c.spent = 0 // nothing was sent
		return nil, err
	}
	return req, nil
}

// cacheRefused handles the provider's refusal of a managed cache (gone, or
// refused: nothing was billed): it forgets the cache and returns the request
// with the client's own body.
func (x *exchange) cacheRefused(res *http.Response) (*http.Request, error) {
	s, ec := x.s, x.ec
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		s.explicit.Gone(x.ctx, ec)
	}
	s.log.Warn("explicit cache: the provider refused a managed cache; resending the client's body", append(logAttrs(x.c), "cache", ec.Name, "status", res.StatusCode)...)
	x.ec = nil
	return x.newRequest(x.clientBody)
}

// received takes the answer's head: from here the provider may bill.
func (x *exchange) received(res *http.Response) {
	c := x.c
	c.spent = groundhog.CostUnknown // known again only with its usage
	x.res, x.ct = res, res.Header.Get("Content-Type")
	c.upHeader = upstreamHeaders(res.Header) // before the head is published: the leader reads it after
	// prompt-cache hook: releases held fan-out requests
	c.pc.pending.Started(res.StatusCode/100 == 2)
	// No attempt sends the body again: the flight lets go of it
	// (missbody.go), the prompt-cache stage first.
	c.pc.pending.Sent()
	x.clientBody = nil
	x.upBody.forget()
	c.flightLetsGo()
}

// errorAnswer reads the provider's error answer, which it does not bill.
func (x *exchange) errorAnswer() (*groundhog.Response, error) {
	res, ct := x.res, x.ct
	x.c.spent = 0 // an error answer: providers do not bill it
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, upstreamError(x.ctx, err)
	}
	x.waitEnd()
	x.pub.Head(res.StatusCode, ct, false)
	return &groundhog.Response{Status: res.StatusCode, ContentType: ct, Body: body, Model: x.c.fp.Model}, nil
}

// readStream publishes the answer's head and each event of its stream as
// it arrives, and returns the answer. The flight waits here for each event.
func (x *exchange) readStream() (*groundhog.Response, error) {
	rd := x.startStream()
	resp := &groundhog.Response{Status: x.res.StatusCode, ContentType: x.ct}
	for {
		var err error
		if x.ev, err = rd.Next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, x.streamBroken(resp, err)
		}
		if x.event(resp) {
			break // done: do not wait for a server that keeps the stream open
		}
	}
	return resp, x.streamEnded(resp)
}

// event adds the event read (x.ev) to the stream's answer and publishes it;
// it reports whether the event ends the stream. A function of its own, the
// event kept in the exchange: the flight waits for the next event under
// readStream's frame.
//
//go:noinline
func (x *exchange) event(resp *groundhog.Response) bool {
	ev := x.ev
	x.ev = groundhog.Event{}
	resp.Events = append(resp.Events, ev)
	if x.rec != nil {
		x.rec.event(ev) // before the event: a terminal event waits for the records
	}
	x.pub.Event(ev)
	return wire.IsTerminal(x.c.shape, ev)
}

// startStream publishes the answer's head and returns the reader of its
// events, with the recorder of the objects they make when it makes any.
func (x *exchange) startStream() eventReader {
	c := x.c
	x.pub.Head(x.res.StatusCode, x.ct, true)
	if c.stored != 0 {
		x.rec = &streamRecorder{s: x.s, c: c}
	}
	body := &boundedReader{r: x.res.Body, left: x.s.maxUpstreamBytes()}
	switch {
	case c.invoke:
		return bedrock.NewChunkReader(body)
	case c.shape == groundhog.ShapeConverse:
		return bedrock.NewReader(body)
	case c.shape == groundhog.ShapeGemini:
		return wire.NewLiveDataSSEReader(body) // data lines only
	}
	return wire.NewLiveSSEReader(body) // a small buffer while it waits for tokens
}

// streamBroken books what a stream cut by err may have cost and returns the
// call's error.
func (x *exchange) streamBroken(resp *groundhog.Response, err error) error {
	x.c.spent = x.s.spentOnBrokenStream(x.c, resp.Events)
	if errors.Is(err, errUpstreamTooLarge) {
		return groundhog.Errorf(groundhog.EUPSTREAM, "upstream stream is over the limit of %d bytes (max_upstream_bytes)", x.s.maxUpstreamBytes())
	}
	return upstreamError(x.ctx, err)
}

// streamEnded checks that the stream read into resp is complete and reads
// its usage; a stream the provider ended with its own error is served as
// sent and booked as an error (providerFailed).
func (x *exchange) streamEnded(resp *groundhog.Response) error {
	c := x.c
	if !wire.StreamComplete(c.shape, resp.Events) {
		if !wire.StreamEndedWithError(c.shape, resp.Events) {
			c.spent = x.s.spentOnBrokenStream(c, resp.Events)
			return groundhog.Errorf(groundhog.EUPSTREAM, "upstream stream ended before completion")
		}
		// The provider ended the stream with its own error: the client
		// gets it as sent, the call is booked as an error, and it is
		// never cached.
		x.providerFailed = true
	}
	x.waitEnd()
	resp.Streamed = true
	resp.Model, resp.Usage, x.parts, _ = wire.UsagePartsFromEvents(c.shape, resp.Events)
	return nil
}

// readBody reads a whole (not streamed) answer and publishes its head.
func (x *exchange) readBody() (*groundhog.Response, error) {
	c, res, ct := x.c, x.res, x.ct
	limit := x.s.maxUpstreamBytes()
	body, err := readUpstreamBody(res, limit)
	if err != nil {
		return nil, upstreamError(x.ctx, err)
	}
	x.waitEnd()
	if int64(len(body)) > limit {
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "upstream response is over the limit of %d bytes (max_upstream_bytes)", limit)
	}
	if !jsonwalk.Valid(body) {
		// A connection closed early can look like a clean end: a
		// success must be whole JSON to be served, cached or committed.
		return nil, groundhog.Errorf(groundhog.EUPSTREAM, "upstream response body is incomplete or not JSON")
	}
	resp := &groundhog.Response{Status: res.StatusCode, ContentType: ct, Body: body}
	if c.stored != 0 {
		// Written while the answer is priced and cached, durable
		// before the flight returns it (stored.go).
		x.bodyRec = x.s.recordBody(c, body)
	}
	resp.Model, resp.Usage, x.parts, _ = wire.UsagePartsFromValidBody(c.shape, body) // json.Valid above
	x.pub.Head(res.StatusCode, ct, false)
	return resp, nil
}

// settle prices a successful answer, stores it, and ends the
// cross-replica flight with it.
func (x *exchange) settle(resp *groundhog.Response) *groundhog.Response {
	s, c := x.s, x.c
	resp.Model = firstNonEmpty(resp.Model, c.fp.Model)
	if c.invoke {
		resp.Model = c.fp.Model // Bedrock bills by the model id of the path, not the body's model name
	}
	resp.Cost = s.price(c, resp.Model, resp.Usage, x.parts)
	if x.providerFailed {
		resp.Cost = s.spentOnFailedStream(c, resp)
	}
	c.spent = resp.Cost
	s.pcAfter(x.ctx, c, resp) // prompt-cache hook: break verdict from the usage
	if c.policy.on() && !c.noStore && !x.providerFailed && storable(c.shape, resp) {
		ctx := x.ctx
		if x.bodyRec == nil { // else the flight ends after the record (below)
			ctx = rideStore(ctx, x.lead)
		}
		s.store(ctx, c, resp)
	}
	x.bodyRec.wait() // before any replica's client reads the answer
	x.lead.End(resp) // after the cache write: wakes the other replicas' waiters
	return resp
}

// prepareUpstream completes req, which carries body for c: the client's
// headers less the hop-by-hop and Groundhog ones, the upstream's
// credentials for c's shape, Anthropic's version, and the upstream's
// signature when it signs; with pc, what the prompt-cache stage's rewrites
// need (the cache-diagnosis beta). Nothing is sent yet.
func (s *Server) prepareUpstream(ctx context.Context, req *http.Request, c *call, up *Upstream, body []byte, pc bool) error {
	for k, vs := range c.header {
		if dropHeaders[k] || strings.HasPrefix(k, "Groundhog-") || up.Sign != nil && strings.HasPrefix(k, "X-Amz-") {
			continue
		}
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if pc {
		pcUpstreamHeaders(req.Header, c) // prompt-cache hook: the cache-diagnosis beta when the stage asked the provider
	}
	authShape := c.shape
	if c.invoke {
		authShape = groundhog.ShapeConverse // Bedrock's credentials, not Anthropic's header
	}
	up.authorize(req, c.header, authShape)
	if c.shape == groundhog.ShapeMessages && !c.invoke && req.Header.Get("Anthropic-Version") == "" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	if up.Sign != nil {
		if err := up.Sign(ctx, req, body); err != nil {
			return groundhog.WrapError(groundhog.EUPSTREAM, "signing the upstream request failed", err)
		}
	}
	return nil
}

// storable reports whether resp may be cached: a refusal never is (it is
// still answered and ledgered).
func storable(shape groundhog.Shape, resp *groundhog.Response) bool {
	if resp.Streamed {
		return wire.StorableEvents(shape, resp.Events)
	}
	return wire.Storable(shape, resp.Body)
}

// store writes a successful response to the cache. A failed write is
// logged: the client still gets its answer.
func (s *Server) store(ctx context.Context, c *call, resp *groundhog.Response) {
	now := s.clock.Now()
	e := &groundhog.CacheEntry{Tenant: c.tenant, RequestHash: c.fp.Hash, Shape: c.shape, Response: *resp, CreatedAt: now}
	if c.ttl > 0 {
		e.ExpiresAt = now.Add(c.ttl)
	}
	if err := s.opts.Cache.Put(context.WithoutCancel(ctx), e); err != nil {
		s.log.Warn("cache write failed", append(logAttrs(c), "err", err)...)
	}
}

// upstreamError classifies a transport failure: the upstream deadline is a
// timeout (504), anything else a bad gateway (502).
func upstreamError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return groundhog.WrapError(groundhog.ETIMEOUT, "upstream timed out", err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return groundhog.WrapError(groundhog.EUPSTREAM, "upstream call cancelled", err)
	}
	return groundhog.WrapError(groundhog.EUPSTREAM, "upstream connection failed", err)
}

// eventReader reads a provider stream's events: SSE, or Bedrock's
// eventstream framing.
type eventReader interface {
	Next() (groundhog.Event, error)
}

// isAWSEventStream reports whether ct is the AWS eventstream media type.
func isAWSEventStream(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == bedrock.ContentType
}

func isEventStream(ct string) bool {
	if es, ok := knownContentTypes[ct]; ok { // ctfast.go
		return es
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// withIncludeUsage returns body with stream_options.include_usage set to
// true (other stream_options kept). On any surprise it returns body as is.
func withIncludeUsage(body []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return body
	}
	so := map[string]json.RawMessage{}
	if raw, ok := m["stream_options"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &so); err != nil {
			return body
		}
	}
	so["include_usage"] = json.RawMessage("true")
	raw, err := json.Marshal(so)
	if err != nil {
		return body
	}
	m["stream_options"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// hiddenUsageChunk reports whether ev is the usage-only chunk of a chat
// stream (empty choices, a usage object), which a client that did not ask
// for stream_options.include_usage must not receive.
func hiddenUsageChunk(c *call, ev groundhog.Event) bool {
	return c.shape == groundhog.ShapeChat && !c.includeUsage &&
		containsEmptyChoices(ev.Data) && bytes.Contains(ev.Data, []byte(`"usage":{`)) // hitfast.go
}
