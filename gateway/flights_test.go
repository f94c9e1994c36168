package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/gateway"
)

// otherReplicas stands in for the rest of the deployment behind the
// gateway.Flights seam (package distcoalesce is tested against real Redis):
// it either hands back an entry "another replica stored", or lets the call
// run and checks, when done is called, that the result is already in the
// shared cache.
type otherReplicas struct {
	mu        sync.Mutex
	shared    *groundhog.CacheEntry // returned by Lead when set
	followed  bool                  // Lead says shared came from a running flight
	calls     int
	doneCalls int
	storedAt  bool // the entry was in the cache when done ran
	store     func(ctx context.Context, tenant, hash string) bool
}

func (o *otherReplicas) Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap, _ func(string, time.Time)) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.shared != nil {
		e := *o.shared
		e.Tenant, e.RequestHash = tenant, hash
		return &e, o.followed, endFunc(nil), nil
	}
	// The second look is Lead's (gateway.Flights): after the claim.
	if e := lookup(ctx); e != nil {
		return e, false, endFunc(nil), nil
	}
	return nil, false, endFunc(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.doneCalls++
		o.storedAt = o.store(context.Background(), tenant, hash)
	}), nil
}

// endFunc is a Sink that only counts its End.
type endFunc func()

func (endFunc) Head(int, string, bool) {}
func (endFunc) Event(groundhog.Event)  {}
func (f endFunc) End(*groundhog.Response) {
	if f != nil {
		f()
	}
}

func withFlights(f gateway.Flights) harnessOpt { return func(s *setup) { s.flights = f } }

const flightBody = `{"model":"sim-small","messages":[{"role":"user","content":"flights"}]}`

// A result shared by another replica is served without an upstream call.
// It is accounted as coalesced when the call followed that replica's running
// flight (header, outcome, InFlight, saved = the flight's cost), as a cache
// hit when the flight had already ended.
func TestFlightsSharedResultIsServedWithoutUpstream(t *testing.T) {
	for _, tc := range []struct {
		followed bool
		state    string
		outcome  groundhog.Outcome
	}{
		{true, "coalesced", groundhog.OutcomeCoalesced},
		{false, "hit", groundhog.OutcomeCacheHit},
	} {
		t.Run(tc.state, func(t *testing.T) {
			o := &otherReplicas{followed: tc.followed, shared: &groundhog.CacheEntry{Shape: groundhog.ShapeChat, Response: groundhog.Response{
				Status: 200, ContentType: "application/json", Body: []byte(`{"id":"from-replica-b","object":"chat.completion","choices":[]}`), Cost: 1000}}}
			h := newHarness(t, withFlights(o))
			res, body := h.post("/v1/chat/completions", flightBody, map[string]string{"Groundhog-Cache": "use"})
			if res.StatusCode != 200 || string(body) != string(o.shared.Response.Body) {
				t.Fatalf("status %d body %s, want the other replica's result", res.StatusCode, body)
			}
			if got := res.Header.Get("Groundhog-Cache"); got != tc.state {
				t.Errorf("Groundhog-Cache = %q, want %s", got, tc.state)
			}
			if b := h.bill(); b.Calls != 0 {
				t.Errorf("the sim billed %d calls, want 0", b.Calls)
			}
			rows := h.ledgerRows()
			if len(rows) != 1 {
				t.Fatalf("%d ledger rows, want 1", len(rows))
			}
			r := rows[0]
			if r.Outcome != tc.outcome || r.InFlight != tc.followed || r.Cost != 0 || r.Saved != 1000 || r.FullCost != 1000 {
				t.Errorf("row: outcome %s, in flight %v, cost %d, saved %d, full %d; want %s, %v, 0, 1000, 1000",
					r.Outcome, r.InFlight, r.Cost, r.Saved, r.FullCost, tc.outcome, tc.followed)
			}
		})
	}
}

func TestFlightsDoneAfterTheCacheWrite(t *testing.T) {
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o))
	o.store = func(ctx context.Context, tenant, hash string) bool {
		_, err := h.DB.GetCache(ctx, tenant, hash, time.Now())
		return err == nil
	}
	res, _ := h.post("/v1/chat/completions", flightBody, map[string]string{"Groundhog-Cache": "use"})
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls != 1 || o.doneCalls != 1 || !o.storedAt {
		t.Errorf("Lead %d, done %d, entry stored before done: %v; want 1, 1, true", o.calls, o.doneCalls, o.storedAt)
	}
	if b := h.bill(); b.Calls != 1 {
		t.Errorf("the sim billed %d calls, want 1", b.Calls)
	}
}

// Calls that do not use the cache have no stored result to share: they
// never reach the cross-replica stage.
func TestFlightsOnlyForCacheUsingCalls(t *testing.T) {
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o))
	for _, hdr := range []map[string]string{nil, {"Groundhog-Cache": "bypass"}, {"Groundhog-Cache": "use", "Cache-Control": "no-store"}} {
		if res, _ := h.post("/v1/chat/completions", flightBody, hdr); res.StatusCode != 200 {
			t.Fatalf("%v: status %d", hdr, res.StatusCode)
		}
	}
	if o.calls != 0 {
		t.Errorf("Lead called %d times for calls that do not use the cache", o.calls)
	}
}

// A streaming call that follows another replica's streamed flight relays
// its events and is accounted as coalesced too (the relay path).
func TestFlightsStreamingFollowerIsCoalesced(t *testing.T) {
	chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	o := &otherReplicas{followed: true, shared: &groundhog.CacheEntry{Shape: groundhog.ShapeChat, Response: groundhog.Response{
		Status: 200, ContentType: "text/event-stream", Streamed: true, Cost: 2000,
		Events: []groundhog.Event{{Data: []byte(chunk)}, {Data: []byte("[DONE]")}}}}}
	h := newHarness(t, withFlights(o))
	body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"flights"}]}`
	res, got := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"})
	if res.StatusCode != 200 || !strings.Contains(string(got), `"content":"hi"`) || !strings.Contains(string(got), "data: [DONE]") {
		t.Fatalf("status %d body %s, want the other replica's stream", res.StatusCode, got)
	}
	if st := res.Header.Get("Groundhog-Cache"); st != "coalesced" {
		t.Errorf("Groundhog-Cache = %q, want coalesced", st)
	}
	rows := h.ledgerRows()
	if len(rows) != 1 {
		t.Fatalf("%d ledger rows, want 1", len(rows))
	}
	if r := rows[0]; r.Outcome != groundhog.OutcomeCoalesced || !r.InFlight || r.Cost != 0 || r.Saved != 2000 || !r.Stream {
		t.Errorf("row: outcome %s, in flight %v, cost %d, saved %d, stream %v; want coalesced, true, 0, 2000, true",
			r.Outcome, r.InFlight, r.Cost, r.Saved, r.Stream)
	}
	if b := h.bill(); b.Calls != 0 {
		t.Errorf("the sim billed %d calls, want 0", b.Calls)
	}
}

// relayingReplica relays a head and first events of "another replica's"
// stream to the call's flight, then returns what its flight turned out to
// be: a stored result (entry) or a failure (err).
type relayingReplica struct {
	relayed []groundhog.Event
	entry   *groundhog.CacheEntry
	err     error
}

func (o *relayingReplica) Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap, _ func(string, time.Time)) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	relay.Head(200, "text/event-stream", true)
	for _, ev := range o.relayed {
		relay.Event(ev)
	}
	return o.entry, true, endFunc(nil), o.err
}

// A call that relayed part of another replica's stream is never spliced
// with another answer: when the rest does not continue what it relayed, or
// the other replica's flight failed, its client's stream ends with an error
// event (and no [DONE]); when the stored result continues it, the client
// gets the exact whole stream once, coalesced.
func TestFlightsRelayedStreamIsNeverSpliced(t *testing.T) {
	ev := func(s string) groundhog.Event {
		return groundhog.Event{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`)}
	}
	done := groundhog.Event{Data: []byte("[DONE]")}
	whole := func(events ...groundhog.Event) *groundhog.CacheEntry {
		return &groundhog.CacheEntry{Shape: groundhog.ShapeChat, Response: groundhog.Response{
			Status: 200, ContentType: "text/event-stream", Streamed: true, Cost: 2000, Events: events}}
	}
	body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"relayed"}]}`
	for _, tc := range []struct {
		name string
		o    *relayingReplica
		ok   bool
	}{
		{"the stored result continues the relayed events", &relayingReplica{relayed: []groundhog.Event{ev("a")}, entry: whole(ev("a"), ev("b"), done)}, true},
		{"the stored result is another answer", &relayingReplica{relayed: []groundhog.Event{ev("a")}, entry: whole(ev("x"), ev("b"), done)}, false},
		{"the other replica's flight died", &relayingReplica{relayed: []groundhog.Event{ev("a")}, err: groundhog.Errorf(groundhog.EUPSTREAM, "leader lost")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withFlights(tc.o))
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Groundhog-Cache", "use")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body) // a broken stream ends in an aborted connection
			res.Body.Close()
			if n := strings.Count(string(got), `"content":"a"`); n != 1 {
				t.Errorf("the relayed event was sent %d times, want once: %s", n, got)
			}
			if tc.ok {
				if !strings.Contains(string(got), `"content":"b"`) || !strings.HasSuffix(string(got), "data: [DONE]\n\n") || strings.Contains(string(got), `"x"`) {
					t.Errorf("stream %q, want a, b, [DONE]", got)
				}
				if st := res.Header.Get("Groundhog-Cache"); st != "coalesced" {
					t.Errorf("Groundhog-Cache = %q, want coalesced", st)
				}
			} else if strings.Contains(string(got), "[DONE]") || !strings.Contains(string(got), `"error"`) || strings.Contains(string(got), `"content":"x"`) {
				t.Errorf("stream %q, want the relayed event, then an error event, no [DONE]", got)
			}
			if b := h.bill(); b.Calls != 0 {
				t.Errorf("the sim billed %d calls, want 0", b.Calls)
			}
		})
	}
}

// claimingReplica lets every call lead, holding a claim named by the next
// of tokens, and reports to lost the claims listed for that call.
type claimingReplica struct {
	mu     sync.Mutex
	tokens []string
	lost   [][]string // per call: the claims it finds lost
	at     map[string]time.Time
}

type claimSink struct {
	endFunc
	token string
	at    time.Time
}

func (s claimSink) Claim() (string, time.Time) { return s.token, s.at }

func (o *claimingReplica) Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap, lost func(string, time.Time)) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	o.mu.Lock()
	token, gone := o.tokens[0], o.lost[0]
	o.tokens, o.lost = o.tokens[1:], o.lost[1:]
	o.mu.Unlock()
	for _, g := range gone {
		lost(g, o.at[g])
	}
	return nil, false, claimSink{token: token, at: o.at[token]}, nil
}

// The attempt of a flight whose claim another replica found lost is booked
// once: at an unknown cost when its replica wrote no row for it, and not
// again when it did (its own row, priced, has the same key).
func TestFlightsLostClaimIsBookedOnce(t *testing.T) {
	t0 := time.Now().Add(-time.Minute)
	o := &claimingReplica{
		tokens: []string{"claim-a", "claim-b", "claim-c"},
		lost:   [][]string{nil, {"claim-a"}, {"claim-dead"}},
		at:     map[string]time.Time{"claim-a": t0, "claim-b": t0.Add(time.Second), "claim-c": t0.Add(2 * time.Second), "claim-dead": t0.Add(3 * time.Second)},
	}
	h := newHarness(t, withFlights(o))
	for i := range 3 {
		body := strings.Replace(flightBody, "flights", "flights "+string(rune('a'+i)), 1)
		if res, _ := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"}); res.StatusCode != 200 {
			t.Fatalf("call %d: status %d", i, res.StatusCode)
		}
	}
	var priced, unknown int
	for _, r := range h.ledgerRows() {
		switch {
		case r.Outcome != groundhog.OutcomeUpstream:
			t.Errorf("row with outcome %s", r.Outcome)
		case r.Status == 200 && r.Cost.Known() && r.Cost > 0:
			priced++
		case r.Status == 0 && r.Cost == groundhog.CostUnknown && r.FullCost == groundhog.CostUnknown && !r.InFlight:
			unknown++
		default:
			t.Errorf("row %+v", r)
		}
	}
	if b := h.bill(); priced != 3 || unknown != 1 || b.Calls != 3 {
		t.Errorf("ledger: %d priced attempts and %d at an unknown cost, the sim billed %d; want 3, 1 (the dead claim's only) and 3", priced, unknown, b.Calls)
	}
}

// Across replicas the second look before paying is Flights.Lead's, made
// once the call holds the flight's claim. A call whose first look was held
// while an identical call paid and stored is served that answer by it: one
// provider call, one upstream row, and the late call a hit at no cost.
func TestFlightsLookupAfterTheClaimServesAHit(t *testing.T) {
	bs := &blockingStore{entered: make(chan struct{}), release: make(chan struct{})}
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o), withCacheStore(func(s groundhog.CacheStore) groundhog.CacheStore { bs.CacheStore = s; return bs }))
	o.store = func(context.Context, string, string) bool { return true }
	hdr := map[string]string{"Groundhog-Cache": "use"}
	var wg sync.WaitGroup
	var late *http.Response
	wg.Add(1)
	go func() { defer wg.Done(); late, _ = h.post("/v1/chat/completions", flightBody, hdr) }()
	<-bs.entered
	first, _ := h.post("/v1/chat/completions", flightBody, hdr) // leads, pays, stores
	close(bs.release)
	wg.Wait()
	if first.Header.Get("Groundhog-Cache") != "miss" || late.Header.Get("Groundhog-Cache") != "hit" || late.Header.Get("Groundhog-Cost-USD") != "0.000000" {
		t.Fatalf("first: %s; late: %s at %s; want miss, then hit at 0.000000", first.Header.Get("Groundhog-Cache"),
			late.Header.Get("Groundhog-Cache"), late.Header.Get("Groundhog-Cost-USD"))
	}
	if b := h.bill(); b.Calls != 1 {
		t.Errorf("the sim billed %d calls, want 1", b.Calls)
	}
	upstream := 0
	for _, row := range h.ledgerRows() {
		if row.Outcome == groundhog.OutcomeUpstream {
			upstream++
		}
	}
	if upstream != 1 {
		t.Errorf("%d upstream rows, want 1", upstream)
	}
}
