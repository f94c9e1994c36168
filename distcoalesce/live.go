package distcoalesce

// Live relay of a streamed answer to the other replicas' waiters.
//
// The leader of a flight whose upstream answer streams (a 2xx
// text/event-stream) appends the head and every event to a Redis Stream,
//
//	<prefix>s:<len(tenant)>.<tenant>:<request hash>:<claim token>
//
// (tenant-scoped like the claim key; the claim token makes each run of the
// flight its own stream, so a takeover never mixes two runs), with explicit
// entry IDs 0-1 (head), 0-2, 0-3 … (events) and a last entry, the end
// marker: ok (with the response's model, usage and cost), error or
// abandoned. The XADDs are pipelined by one writer goroutine per flight fed
// by a bounded queue: the leader's own client never waits for Redis. When
// the queue is full (Redis slower than the provider), an event is over the
// entry bound, or Redis fails, the relay is abandoned: no more events are
// written, the end marker says so, and the followers serve the stored
// result. Each XADD trims the stream to about MaxLen entries; the stream
// expires TTL after its last write.
//
// A waiter on another replica reads the stream of the claim's current
// holder with XREAD BLOCK (at most one second per read, never a hot poll)
// from the start and publishes the head and events to its in-process
// flight as they arrive, so its own followers get them too. The head is
// published with the first event, so a waiter that has published nothing
// can still take the call over. The entries must come in sequence: a gap
// (the window was trimmed before this waiter read it) or an abandoned
// stream makes the waiter wait for the stored result instead, from which
// only the events it has not published yet are published (the gateway
// checks that the published ones are its prefix). A read that times out
// checks the claim: a holder that is gone (dead replica, lease expired)
// without an end marker ends the live relay; a waiter that published
// nothing then claims the call as before, one that did cannot restart the
// call invisibly and fails (ErrLeaderLost: its clients get the provider's
// error event), and the other waiters take over.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
)

// ErrLeaderLost is Lead's error when the other replica's flight whose
// stream this call had begun to relay failed or died before its end: the
// call's clients already have part of a stream, so it cannot run the call
// itself.
var ErrLeaderLost = groundhog.Errorf(groundhog.EUPSTREAM, "the replica streaming this response failed before its end; retry the request")

// LiveOptions configure the live relay (defaults in brackets).
type LiveOptions struct {
	// Off disables it: waiters on other replicas get a streamed answer
	// whole when the flight ends (the stored result). The environment
	// variable GROUNDHOG_LIVE_STREAMS=off sets it (for measurements).
	Off bool
	// MaxLen is the approximate length (XADD MAXLEN ~) each stream is
	// trimmed to [1024 entries]; a waiter that falls further behind serves
	// the stored result.
	MaxLen int64
	// MaxEntryBytes bounds one event (name + data) [64 KiB]: a larger one
	// abandons the relay.
	MaxEntryBytes int
	// Queue is the leader's queue of entries not yet written [256]: when
	// full, the relay is abandoned.
	Queue int
	// TTL is how long a stream lives after its last write [30 s, at least
	// twice the lease].
	TTL time.Duration
	// MaxReaders bounds the waiters of this replica reading streams at
	// once (each holds a pooled connection during its XREAD BLOCK) [half
	// the client's pool]; a waiter over the bound waits for the stored
	// result.
	MaxReaders int
}

func (o LiveOptions) withDefaults(c *goredis.Client) LiveOptions {
	if os.Getenv("GROUNDHOG_LIVE_STREAMS") == "off" {
		o.Off = true
	}
	if o.MaxLen <= 0 {
		o.MaxLen = 1024
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = 64 << 10
	}
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.MaxReaders <= 0 {
		o.MaxReaders = 8
		if c != nil {
			o.MaxReaders = max(1, c.Options().PoolSize/2)
		}
	}
	return o
}

func (g *Group) streamKey(tenant, hash, token string) string {
	return g.o.Prefix + "s:" + strconv.Itoa(len(tenant)) + "." + tenant + ":" + hash + ":" + token
}

// Stream entry fields.
const (
	fKind   = "k" // kindHead, kindEvent or kindEnd
	fStatus = "s" // head: HTTP status
	fType   = "t" // head: content type
	fName   = "n" // event: SSE event name
	fData   = "d" // event: SSE data
	fEnd    = "o" // end: endOK, endError or endAbandoned
	fMeta   = "m" // end ok: JSON of the response without its events

	kindHead, kindEvent, kindEnd  = "h", "e", "x"
	endOK, endError, endAbandoned = "ok", "error", "abandoned"
)

// nopSink is the Sink of a call that does not lead a flight.
type nopSink struct{}

func (nopSink) Head(int, string, bool)  {}
func (nopSink) Event(groundhog.Event)   {}
func (nopSink) End(*groundhog.Response) {}

// leaderSink is the Sink of a flight this replica claimed.
type leaderSink struct {
	g       *Group
	token   string // the claim's
	skey    string
	release func(released bool) // stops renewing the claim, releases it (unless released), wakes the waiters
	live    bool                // the caller's waiters may relay a stream: write one if the answer streams

	// The flight's claim key, wake-up topic and call, for RideStore.
	key, topic, tenant, hash string
	rode                     func() bool // set by RideStore: whether the release rode with the cache write

	// Used only from the flight's goroutine.
	started bool
	seq     int // ID of the last entry queued
	ended   bool

	gaveUp atomic.Bool // the relay was abandoned (by the flight or the writer)

	q   chan []any // entries (XADD field-value lists) for the writer
	end chan []any // the end marker
}

func (g *Group) leaderSink(tenant, hash, key, token, topic string, relay bool) *leaderSink {
	return &leaderSink{g: g, token: token, skey: g.streamKey(tenant, hash, token), release: g.hold(key, token, topic), live: relay && g.live != nil,
		key: key, topic: topic, tenant: tenant, hash: hash}
}

// RideStore returns ctx under which the cache write of the flight's result,
// made just before End, also releases the flight's claim and wakes its
// waiters, in that write's round trip and after it (Options.RideWithPut):
// a cached miss saves a round trip, and a woken waiter finds the entry.
// End releases the claim itself when that write did not. It returns ctx
// unchanged when the release cannot ride: no RideWithPut, a Waker that
// does not publish on the Group's Redis, or a flight that went live (its
// end marker must be written before the release).
func (s *leaderSink) RideStore(ctx context.Context) context.Context {
	ride := s.g.o.RideWithPut
	if ride == nil || s.started || s.ended || s.rode != nil {
		return ctx
	}
	w, ok := s.g.o.Waker.(channelWaker)
	if !ok {
		return ctx
	}
	ch, ok := w.PublishChannel(s.g.o.Client)
	if !ok {
		return ctx
	}
	keys := s.g.releaseKeys(s.key, s.token)
	ctx, s.rode = ride(ctx, s.tenant, s.hash, func(ctx context.Context, p goredis.Pipeliner) []goredis.Cmder {
		return []goredis.Cmder{releasePublishScript.EvalSha(ctx, p, keys, s.token, s.g.endTTL().Milliseconds(), ch, s.topic)}
	})
	return ctx
}

// Claim returns the token and claim time of the flight's claim: what a
// waiter that finds the claim gone reports to its lost (Lead).
func (s *leaderSink) Claim() (token string, claimed time.Time) {
	return s.token, ClaimTime(s.token)
}

func (s *leaderSink) Head(status int, contentType string, streamed bool) {
	if !s.live || s.started || !streamed || status/100 != 2 {
		return
	}
	s.started = true
	s.q = make(chan []any, s.g.o.Live.Queue)
	s.end = make(chan []any, 1)
	go s.write()
	s.put([]any{fKind, kindHead, fStatus, strconv.Itoa(status), fType, contentType})
}

func (s *leaderSink) Event(ev groundhog.Event) {
	if !s.started || s.ended || s.gaveUp.Load() {
		return
	}
	if len(ev.Name)+len(ev.Data) > s.g.o.Live.MaxEntryBytes {
		s.abandon()
		return
	}
	s.put([]any{fKind, kindEvent, fName, ev.Name, fData, ev.Data})
}

// put queues one entry without blocking; a full queue abandons the relay.
func (s *leaderSink) put(fields []any) {
	select {
	case s.q <- append([]any{strconv.Itoa(s.seq + 1)}, fields...):
		s.seq++
	default:
		s.abandon()
	}
}

func (s *leaderSink) abandon() {
	if s.gaveUp.CompareAndSwap(false, true) {
		s.g.abandoned.Add(1)
	}
}

func (s *leaderSink) End(resp *groundhog.Response) {
	if s.ended {
		return
	}
	s.ended = true
	if !s.started {
		s.release(s.rode != nil && s.rode())
		return
	}
	marker := []any{strconv.Itoa(s.seq + 1), fKind, kindEnd, fEnd, endError}
	switch {
	case s.gaveUp.Load():
		marker[4] = endAbandoned
	case resp.OK() && resp.Streamed:
		meta, err := json.Marshal(groundhog.Response{Status: resp.Status, ContentType: resp.ContentType, Streamed: true, Model: resp.Model, Usage: resp.Usage, Cost: resp.Cost})
		if err == nil {
			marker[4] = endOK
			marker = append(marker, fMeta, meta)
		}
	}
	s.end <- marker // buffered: never blocks; the writer releases the claim after writing it
}

// write is the writer goroutine: it pipelines the queued entries, then the
// end marker, and then releases the claim (so a woken waiter finds the
// marker before the claim is gone).
func (s *leaderSink) write() {
	failed := false
	for {
		var batch [][]any
		end := false
		select {
		case e := <-s.q:
			batch = append(batch, e)
		case e := <-s.end:
			batch = append(drain(s.q, nil, -1), e)
			end = true
		}
		if !end {
			batch = drain(s.q, batch, 255)
		}
		if failed && !end {
			continue
		}
		if failed { // write only the end marker: its ID leaves a gap, which readers take as "wait for the stored result"
			batch = batch[len(batch)-1:]
			batch[0][4] = endAbandoned
			batch[0] = batch[0][:5]
		}
		if err := s.xadd(batch); err != nil {
			if !failed {
				failed = true
				s.abandon()
				s.g.o.Logger.Warn("distcoalesce: live stream write failed; waiters will serve the stored result", "err", err)
			}
		}
		if end {
			s.release(false)
			return
		}
	}
}

// drain appends to batch what q holds now, at most n entries (n < 0: all).
func drain(q chan []any, batch [][]any, n int) [][]any {
	for n != 0 {
		select {
		case e := <-q:
			batch = append(batch, e)
			n--
		default:
			return batch
		}
	}
	return batch
}

func (s *leaderSink) xadd(batch [][]any) error {
	lv := s.g.o.Live
	ctx, cancel := context.WithTimeout(context.Background(), max(s.g.o.Lease/3, time.Second))
	defer cancel()
	_, err := s.g.o.Client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, e := range batch {
			p.XAdd(ctx, &goredis.XAddArgs{Stream: s.skey, MaxLen: lv.MaxLen, Approx: true, ID: "0-" + e[0].(string), Values: e[1:]})
		}
		p.PExpire(ctx, s.skey, max(lv.TTL, 2*s.g.o.Lease))
		return nil
	})
	return err
}

// liveFollow is what a waiter relayed of another replica's stream.
type liveFollow struct {
	holder  string // the claim token whose stream was read last
	started bool   // head and events were published to relay
	status  int
	ctype   string
	events  []groundhog.Event
	meta    groundhog.Response // from the ok end marker
}

// entry is the whole response relayed live.
func (lv *liveFollow) entry(tenant, hash string) *groundhog.CacheEntry {
	r := lv.meta
	r.Status, r.ContentType, r.Streamed, r.Events = lv.status, lv.ctype, true, lv.events
	return &groundhog.CacheEntry{Tenant: tenant, RequestHash: hash, Response: r, CreatedAt: time.Now()}
}

// Outcomes of follow.
const (
	liveComplete = iota // the whole stream was relayed (lv.entry)
	liveStored          // serve the stored result (or claim the call)
	liveGone            // the holder is gone without an end: claim the call or fail
)

type xbatch struct {
	msgs []goredis.XMessage
	err  error
}

// follow relays the stream skey of the claim holder to relay until its end
// marker, a gap, the holder's disappearance or the deadline.
func (g *Group) follow(ctx context.Context, lv *liveFollow, skey, key, holder string, relay coalesce.Tap, woken <-chan struct{}, deadline time.Time) int {
	lv.holder = holder
	select {
	case g.live <- struct{}{}: // released by readStream when its last read is over
	default:
		return liveStored // too many readers: wait for the stored result
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reads := make(chan xbatch)
	go g.readStream(rctx, skey, deadline, reads)
	next := 1     // ID of the next entry
	head := false // the head entry was read
	for {
		select {
		case b, ok := <-reads:
			if !ok || b.err != nil {
				return liveStored
			}
			if len(b.msgs) == 0 { // a read timed out: is the holder still there?
				v, err := g.o.Client.Get(ctx, key).Result()
				if err != nil && !errors.Is(err, goredis.Nil) {
					return liveStored
				}
				if v != holder {
					return liveGone
				}
				continue
			}
			for _, m := range b.msgs {
				if m.ID != "0-"+strconv.Itoa(next) {
					return liveStored // trimmed before this waiter read it
				}
				next++
				switch str(m.Values[fKind]) {
				case kindHead:
					head = true
					lv.status, _ = strconv.Atoi(str(m.Values[fStatus]))
					lv.ctype = str(m.Values[fType])
				case kindEvent:
					if !head {
						return liveStored
					}
					ev := groundhog.Event{Name: str(m.Values[fName]), Data: []byte(str(m.Values[fData]))}
					if !lv.started {
						lv.started = true
						relay.Head(lv.status, lv.ctype, true)
					}
					relay.Event(ev)
					lv.events = append(lv.events, ev)
				case kindEnd:
					switch str(m.Values[fEnd]) {
					case endOK:
						if !head || json.Unmarshal([]byte(str(m.Values[fMeta])), &lv.meta) != nil {
							return liveStored
						}
						if !lv.started { // no event (not a complete stream in practice)
							lv.started = true
							relay.Head(lv.status, lv.ctype, true)
						}
						return liveComplete
					case endAbandoned:
						return liveStored
					default:
						return liveGone
					}
				default:
					return liveStored
				}
			}
		case <-woken:
			// The flight ended. A streamed one wrote its end marker
			// before the wake-up: keep reading. Another (its answer was
			// not a stream) has nothing to read: serve the stored result.
			if !head {
				return liveStored
			}
		case <-ctx.Done():
			return liveStored
		}
	}
}

// readStream reads skey from its start and sends every read's entries (an
// empty batch when a read timed out) to out until ctx ends, a read fails or
// the deadline passes; then it closes out and frees its reader slot.
func (g *Group) readStream(ctx context.Context, skey string, deadline time.Time, out chan<- xbatch) {
	defer func() { <-g.live }()
	defer close(out)
	last := "0-0"
	for {
		block := min(fallbackPoll, time.Until(deadline))
		if block < time.Millisecond {
			return
		}
		res, err := g.o.Client.XRead(ctx, &goredis.XReadArgs{Streams: []string{skey, last}, Count: 512, Block: block}).Result()
		var msgs []goredis.XMessage
		if errors.Is(err, goredis.Nil) {
			err = nil
		} else if err == nil && len(res) > 0 {
			msgs = res[0].Messages
		}
		select {
		case out <- xbatch{msgs, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		if len(msgs) > 0 {
			last = msgs[len(msgs)-1].ID
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
