package gateway

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/wire"
)

// An OpenAI model call makes objects at the provider besides its answer: a
// Responses call with store not false keeps the response ("resp_…"), a
// chat call with store true keeps the completion ("chatcmpl-…"), and a
// code interpreter tool whose container is "auto" makes a container
// ("cntr_…"). In a shared provider account (owned.go) they belong to the
// tenant whose call made them: the flight that makes the call records
// their ids for that tenant, and the routes that read, change, delete or
// continue them (ownedRoute, checkRefs) answer another tenant's as the
// provider answers a missing one.
//
// The ids are read from bytes the flight holds anyway: a body answer's
// "id", a stream's first event that carries it (response.created, a chat
// chunk), the container_id members of the answer or of the stream's
// terminal event. A cache hit, a coalesced follower and a replayed
// idempotent answer are the same tenant's (the cache key, the flight key
// and the operation record all hold the tenant) and replay ids their
// flight recorded: they record nothing.
//
// Ordering. A client may use an id as soon as it sees it. A body answer is
// recorded before the flight returns it, so before any client reads a
// byte of it; the write runs while the flight stores the answer in the
// cache. A stream's object id is known at its first event, and a client
// may use it before the stream ends (cancel a background response, resume
// it with GET …?stream=true): its record is written off the stream's
// path, started as that event is published, and the terminal event is
// held until it is durable (as the ledger row is). A look-up of an id
// whose record is still being written waits for it (pendingRecords), so a
// client of this replica never sees its own object missing; another
// replica may answer 404 until the write lands.
//
// A record that cannot be written is logged and the answer served all the
// same: the call was paid for, and an unrecorded object is one the tenant
// cannot reach through the gateway, never one another tenant can.

// storedObjects says what a call's answer makes that its tenant owns.
type storedObjects uint8

const (
	storesObject     storedObjects = 1 << iota // the response or chat completion itself
	mayMakeContainer                           // a code interpreter tool: the containers it ran in
)

// storedFor returns what chat or Responses call c makes that is recorded
// for its tenant: nothing when the account is not shared or the gateway
// is keyless (owned.go), and nothing for any other shape. The flight asks
// before it calls the provider: a cache hit never does. Whether the
// provider keeps the object is the body's top-level "store", which the
// fingerprint read on its pass (fingerprint.Result.Store); the body is
// parsed again only when the fingerprint was not of it.
func (s *Server) storedFor(ctx context.Context, c *call) storedObjects {
	shape, body := c.shape, c.body
	if shape != groundhog.ShapeChat && shape != groundhog.ShapeResponses {
		return 0
	}
	if !sharedAccount(&s.opts.OpenAI) || s.singleTenant(ctx) {
		return 0
	}
	var o storedObjects
	stores := shape == groundhog.ShapeResponses // the APIs' defaults
	switch {
	case c.fpIsBody && c.fp.Store == fingerprint.StoreTrue:
		stores = true
	case c.fpIsBody && c.fp.Store == fingerprint.StoreFalse:
		stores = false
	case !c.fpIsBody && mayHoldName(body, `"store"`):
		stores = wire.Stores(shape, body)
	}
	if stores {
		o |= storesObject
	}
	if shape == groundhog.ShapeResponses && containsUnderscored(body, "code_interpreter") { // bytes.Contains, faster
		o |= mayMakeContainer
	}
	return o
}

// objectKind is the kind of the object a call of shape stores.
func objectKind(shape groundhog.Shape) ownedKind {
	if shape == groundhog.ShapeChat {
		return kindOpenAIChat
	}
	return kindOpenAIResponse
}

// recordBody starts recording what a 2xx body answer of c made; the
// caller waits for it before the answer leaves the flight.
func (s *Server) recordBody(c *call, body []byte) *pendingRecord {
	var recs []groundhog.Resource
	if c.stored&storesObject != 0 {
		if id := wire.ResourceID(body); id != "" {
			recs = append(recs, s.resource(c, objectKind(c.shape), id))
		}
	}
	if c.stored&mayMakeContainer != 0 {
		for _, id := range wire.ContainerIDs(body) {
			recs = append(recs, s.resource(c, kindOpenAIContainer, id))
		}
	}
	return s.startRecord(c, recs)
}

// streamRecorder records what a 2xx stream of c makes, event by event.
type streamRecorder struct {
	s       *Server
	c       *call
	started bool             // the object's id was seen
	recs    []*pendingRecord // the writes started
}

// event is called for each event before it is published: it starts the
// record of the object's id at the first event that carries it, and at
// the terminal event records the containers it names and waits until
// every record is durable.
func (r *streamRecorder) event(ev groundhog.Event) {
	c := r.c
	if !r.started && c.stored&storesObject != 0 {
		if id := wire.StreamObjectID(c.shape, ev); id != "" {
			r.started = true
			r.recs = append(r.recs, r.s.startRecord(c, []groundhog.Resource{r.s.resource(c, objectKind(c.shape), id)}))
		}
	}
	if wire.IsTerminal(c.shape, ev) {
		if c.stored&mayMakeContainer != 0 {
			var recs []groundhog.Resource
			for _, id := range wire.ContainerIDs(ev.Data) {
				recs = append(recs, r.s.resource(c, kindOpenAIContainer, id))
			}
			r.recs = append(r.recs, r.s.startRecord(c, recs))
		}
		r.wait()
	}
}

// wait returns when every record started is written.
func (r *streamRecorder) wait() {
	for _, p := range r.recs {
		p.wait()
	}
	r.recs = nil
}

func (s *Server) resource(c *call, k ownedKind, id string) groundhog.Resource {
	return groundhog.Resource{Tenant: c.tenant, Kind: k.kind, Name: id, CreatedAt: s.clock.Now().UTC()}
}

// pendingRecord is a write of records in progress.
type pendingRecord struct {
	done chan struct{}
}

// wait returns when the write has ended; a nil record has nothing to wait
// for.
func (p *pendingRecord) wait() {
	if p != nil {
		<-p.done
	}
}

// pendingRecords holds the records being written, by tenant, kind and
// name, so that a look-up of one waits for it instead of answering not
// found. n counts them: a look-up with none pending reads nothing more.
// ended counts the writes that ended: a look-up that began before one
// ended (and so may have missed it, and then not found it pending either)
// asks again.
type pendingRecords struct {
	n     atomic.Int64
	ended atomic.Uint64
	m     sync.Map // pendingKey → *pendingRecord
}

func pendingKey(tenant, kind, name string) string { return tenant + "\x00" + kind + "\x00" + name }

// startRecord writes recs off the caller's path and returns the write,
// or nil when there is nothing to write.
func (s *Server) startRecord(c *call, recs []groundhog.Resource) *pendingRecord {
	if len(recs) == 0 {
		return nil
	}
	p := &pendingRecord{done: make(chan struct{})}
	s.pending.n.Add(1)
	for _, rec := range recs {
		s.pending.m.Store(pendingKey(rec.Tenant, rec.Kind, rec.Name), p)
	}
	go func() {
		defer func() {
			s.pending.ended.Add(1) // before the entries go: see owned
			for _, rec := range recs {
				s.pending.m.CompareAndDelete(pendingKey(rec.Tenant, rec.Kind, rec.Name), p)
			}
			s.pending.n.Add(-1)
			close(p.done)
		}()
		for _, rec := range recs {
			if err := s.opts.Resources.PutResource(context.Background(), rec); err != nil {
				s.log.Error("recording an object a model call made failed: its tenant cannot reach it",
					append(logAttrs(c), "kind", rec.Kind, "id", rec.Name, "err", err)...)
			}
		}
	}()
	return p
}

// owned returns the names among names that tenant owns as resources of
// kind k. A name whose record is still being written (startRecord) is
// looked up again once the write ends, or ctx does.
//
// A write that ends after the look-up began may be in neither the
// look-up nor the pending writes by the time they are searched: ended,
// read before the look-up and again after the search, tells, and the
// names are looked up again.
func (s *Server) owned(ctx context.Context, tenant string, k ownedKind, names []string) ([]string, error) {
	ended := s.pending.ended.Load()
	own, err := s.opts.Resources.OwnedResources(ctx, tenant, k.kind, names)
	if err != nil || len(own) == len(names) || s.pending.n.Load() == 0 && s.pending.ended.Load() == ended {
		return own, err
	}
	waited := false
	for _, n := range names {
		if slices.Contains(own, n) {
			continue
		}
		if p, ok := s.pending.m.Load(pendingKey(tenant, k.kind, n)); ok {
			select {
			case <-p.(*pendingRecord).done:
				waited = true
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if !waited && s.pending.ended.Load() == ended {
		return own, nil
	}
	return s.opts.Resources.OwnedResources(ctx, tenant, k.kind, names)
}
