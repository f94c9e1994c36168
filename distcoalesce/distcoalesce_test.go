package distcoalesce_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/distcoalesce"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
	goredis "github.com/redis/go-redis/v9"
)

var ctx = context.Background()

// replica is one process's view: its own Redis connections (cache store and
// wake-ups) and its Group.
type replica struct {
	db *redis.DB
	g  *distcoalesce.Group
}

func replicas(t *testing.T, n int, o distcoalesce.Options) []replica {
	t.Helper()
	url := storetest.RedisURL(t)
	prefix := "ghtest:" + groundhog.NewID()[:12] + ":"
	var rs []replica
	for range n {
		db, err := redis.Open(ctx, url, redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		o := o
		o.Client, o.Prefix, o.Waker, o.ClaimLook, o.RideWithPut = db.Client(), prefix, db, db.ClaimLook, db.RideWithPut // as serve sets them
		rs = append(rs, replica{db: db, g: distcoalesce.New(o)})
	}
	t.Cleanup(func() {
		c := rs[0].db.Client()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		for _, r := range rs {
			r.db.Close()
		}
	})
	return rs
}

// waitingOn returns once r has a call waiting for another replica's
// flight (its claim attempt failed and it sleeps on the wake-up).
func (r replica) waitingOn() {
	for r.g.Stats().Waiting == 0 {
		runtime.Gosched()
	}
}

func (r replica) lookup(tenant, hash string) func(context.Context) *groundhog.CacheEntry {
	return func(ctx context.Context) *groundhog.CacheEntry {
		e, err := r.db.GetCache(ctx, tenant, hash, time.Now())
		if err != nil {
			return nil
		}
		return e
	}
}

func result(tenant, hash, body string) *groundhog.CacheEntry {
	now := time.Now()
	return &groundhog.CacheEntry{Tenant: tenant, RequestHash: hash, Shape: groundhog.ShapeChat, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Response: groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(body)}}
}

type led struct {
	e        *groundhog.CacheEntry
	followed bool
	done     func()
	err      error
}

// lead calls r's Lead without a relay; done ends the flight without a result.
func lead(r replica, tenant, hash string) (*groundhog.CacheEntry, bool, func()) {
	e, followed, s, err := r.g.Lead(ctx, tenant, hash, r.lookup(tenant, hash), nil, nil)
	if err != nil {
		panic(err)
	}
	return e, followed, func() { s.End(nil) }
}

func leadAsync(r replica, c context.Context, tenant, hash string) <-chan led {
	ch := make(chan led, 1)
	go func() {
		e, followed, lead, err := r.g.Lead(c, tenant, hash, r.lookup(tenant, hash), nil, nil)
		ch <- led{e, followed, func() { lead.End(nil) }, err}
	}()
	return ch
}

// A follower on another replica waits for the leader's flight and gets its
// stored result without running the call.
func TestFollowerOnAnotherReplicaGetsLeadersResult(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: 5 * time.Second})
	a, b := rs[0], rs[1]
	e, _, done := lead(a, "acme", "sha256:h")
	if e != nil {
		t.Fatal("the first replica got an entry; want the claim")
	}
	follower := leadAsync(b, ctx, "acme", "sha256:h")
	// Another tenant's identical hash is another flight: it is not blocked.
	other := <-leadAsync(b, ctx, "globex", "sha256:h")
	if other.e != nil {
		t.Fatal("another tenant's call was given an entry")
	}
	other.done()
	b.waitingOn()
	if err := a.db.PutCache(ctx, result("acme", "sha256:h", `{"answer":42}`)); err != nil {
		t.Fatal(err)
	}
	done()
	f := <-follower
	if f.e == nil || string(f.e.Response.Body) != `{"answer":42}` {
		t.Fatalf("follower entry = %v, want the leader's result", f.e)
	}
	if !f.followed {
		t.Error("followed = false for a call that waited for the running flight, want true (accounted as coalesced)")
	}
	if st := b.g.Stats(); st.Shared != 1 || st.Led != 1 { // Led: globex's flight
		t.Errorf("follower stats = %+v, want Shared 1, Led 1", st)
	}
}

// A leader that dies (its claim is never renewed nor released) is taken
// over by one waiter once the lease expires.
func TestDeadLeaderIsTakenOverAfterLease(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: 300 * time.Millisecond})
	a, b := rs[0], rs[1]
	// The dead leader: a claim nobody renews.
	if err := a.db.Client().Set(ctx, a.db.Prefix()+"f:4.acme:sha256:d", "dead-token", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	got := <-leadAsync(b, ctx, "acme", "sha256:d")
	if got.e != nil {
		t.Fatal("got an entry although the dead leader stored none")
	}
	got.done()
	if st := b.g.Stats(); st.TookOver != 1 || st.Led != 1 {
		t.Errorf("stats = %+v, want TookOver 1 and Led 1", st)
	}
}

// A leader that ends without a result (upstream error) releases its claim
// and wakes the waiter, which runs the call itself.
func TestFailedLeaderHandsOver(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: time.Minute})
	a, b := rs[0], rs[1]
	_, _, done := lead(a, "acme", "sha256:f")
	follower := leadAsync(b, ctx, "acme", "sha256:f")
	b.waitingOn()
	done() // no cache write
	got := <-follower
	if got.e != nil {
		t.Fatal("got an entry although the leader stored none")
	}
	got.done()
	if st := b.g.Stats(); st.TookOver != 1 {
		t.Errorf("stats = %+v, want TookOver 1", st)
	}
}

// No waiter waits past its own context or MaxWait.
func TestWaiterBoundedByItsDeadline(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: time.Minute, MaxWait: 200 * time.Millisecond})
	a, b := rs[0], rs[1]
	_, _, done := lead(a, "acme", "sha256:w")
	defer done()
	got := <-leadAsync(b, ctx, "acme", "sha256:w")
	if got.e != nil {
		t.Fatal("entry without a result stored")
	}
	got.done()
	cctx, cancel := context.WithCancel(ctx)
	ch := leadAsync(rs[1], cctx, "acme", "sha256:w")
	cancel()
	if got := <-ch; got.e != nil {
		t.Fatal("entry after cancellation")
	}
}

// A flight that stored its result and ended between the caller's cache
// look-up and its claim is not run again: the claim is followed by one more
// look-up.
func TestFlightEndedJustBeforeTheClaimIsNotRunAgain(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: time.Minute})
	a, b := rs[0], rs[1]
	_, _, done := lead(a, "acme", "sha256:j")
	if err := a.db.PutCache(ctx, result("acme", "sha256:j", `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	done()
	e, followed, bdone := lead(b, "acme", "sha256:j")
	defer bdone()
	if e == nil || string(e.Response.Body) != `{"n":1}` {
		t.Fatalf("entry = %v, want the ended flight's result", e)
	}
	if followed {
		t.Error("followed = true for a flight that had ended: want a cache hit")
	}
	if st := b.g.Stats(); st.Led != 0 || st.Shared != 1 {
		t.Errorf("stats = %+v, want Led 0, Shared 1", st)
	}
}

// lostCalls records what Lead reports to lost.
type lostCalls struct {
	mu     sync.Mutex
	tokens []string
	times  []time.Time
}

func (l *lostCalls) lost(token string, claimed time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = append(l.tokens, token)
	l.times = append(l.times, claimed)
}

// A leader that dies holding its claim is reported lost once, by the one
// call of all replicas that claims the flight after it, with its token and
// claim time; the calls that claim it later report nothing.
func TestDeadLeaderIsReportedLostOnce(t *testing.T) {
	rs := replicas(t, 3, distcoalesce.Options{Lease: 300 * time.Millisecond})
	claimed := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	dead := groundhog.NewTimeID(claimed)
	if err := rs[0].db.Client().Set(ctx, rs[0].db.Prefix()+"f:4.acme:sha256:l", dead, 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	var l lostCalls
	var wg sync.WaitGroup
	for _, r := range rs[1:] {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, s, err := r.g.Lead(ctx, "acme", "sha256:l", r.lookup("acme", "sha256:l"), nil, l.lost)
				if err != nil {
					t.Error(err)
					return
				}
				s.End(nil) // no result: the next waiter claims it in turn
			}()
		}
	}
	wg.Wait()
	if len(l.tokens) != 1 || l.tokens[0] != dead || !l.times[0].Equal(claimed) {
		t.Fatalf("lost reports = %v at %v; want one, of %s at %v", l.tokens, l.times, dead, claimed)
	}
	var n uint64
	for _, r := range rs {
		n += r.g.Stats().Lost
	}
	if n != 1 {
		t.Errorf("Stats().Lost summed over the replicas = %d, want 1", n)
	}
}

// A leader that ends without a result releases its claim: the waiter that
// runs the call after it reports nothing lost; the claim a lead holds is
// the one its token and time name.
func TestReleasedClaimIsNotReportedLost(t *testing.T) {
	rs := replicas(t, 2, distcoalesce.Options{Lease: time.Minute})
	a, b := rs[0], rs[1]
	_, _, s, err := a.g.Lead(ctx, "acme", "sha256:r", a.lookup("acme", "sha256:r"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := s.(interface{ Claim() (string, time.Time) })
	if !ok {
		t.Fatalf("the lead %T of a claimed flight has no Claim", s)
	}
	token, at := fc.Claim()
	if held, _ := a.db.Client().Get(ctx, a.db.Prefix()+"f:4.acme:sha256:r").Result(); held != token || time.Since(at) > time.Minute || at.After(time.Now()) {
		t.Fatalf("Claim() = %s at %v; the claim holds %s", token, at, held)
	}
	var l lostCalls
	follower := make(chan error, 1)
	go func() {
		_, _, s, err := b.g.Lead(ctx, "acme", "sha256:r", b.lookup("acme", "sha256:r"), nil, l.lost)
		if err == nil {
			s.End(nil)
		}
		follower <- err
	}()
	b.waitingOn()
	s.End(nil)
	if err := <-follower; err != nil {
		t.Fatal(err)
	}
	if len(l.tokens) != 0 || b.g.Stats().TookOver != 1 {
		t.Errorf("lost reports %v, took over %d; want none after a release, and the takeover", l.tokens, b.g.Stats().TookOver)
	}
}

// Lead makes the call's second look before paying even where it cannot
// coordinate it: with Redis marked degraded, and with Redis unreachable.
// An entry found then is served; none found, the call runs uncoordinated.
func TestUncoordinatedLeadStillLooks(t *testing.T) {
	rs := replicas(t, 1, distcoalesce.Options{Lease: time.Minute})
	down := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer down.Close()
	for _, tc := range []struct {
		name string
		o    distcoalesce.Options
	}{
		{"degraded", distcoalesce.Options{Client: rs[0].db.Client(), Waker: rs[0].db, Lease: time.Minute, Degraded: func() bool { return true }}},
		{"unreachable", distcoalesce.Options{Client: down, Waker: rs[0].db, Lease: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := distcoalesce.New(tc.o)
			stored := result("acme", "sha256:u", `{"n":1}`)
			looks := 0
			e, _, s, err := g.Lead(ctx, "acme", "sha256:u", func(context.Context) *groundhog.CacheEntry { looks++; return stored }, nil, nil)
			if err != nil || e != stored || looks != 1 {
				t.Fatalf("with an entry stored: entry %v, err %v, %d looks; want the entry after one look", e, err, looks)
			}
			s.End(nil)
			e, _, s, err = g.Lead(ctx, "acme", "sha256:u", func(context.Context) *groundhog.CacheEntry { looks++; return nil }, nil, nil)
			if err != nil || e != nil || s == nil || looks != 2 {
				t.Fatalf("with none: entry %v, lead %v, err %v, %d looks; want a lead after one more look", e, s, err, looks)
			}
			s.End(nil)
		})
	}
}

// A flight's end releases its claim and wakes the waiters of every replica
// in one command: the wake-up is published by the release's script, on the
// channel the replicas listen on.
func TestFlightEndIsOneCommand(t *testing.T) {
	rs := replicas(t, 1, distcoalesce.Options{Lease: time.Minute})
	a := rs[0]
	count := &storetest.RedisCommands{}
	a.db.Client().AddHook(count)
	_, _, done := lead(a, "acme", "sha256:warm")
	done() // loads the script
	_, _, done = lead(a, "acme", "sha256:w")
	woken := a.db.Wake(ctx, wake.Topic("f", "acme", "sha256:w"))
	before := count.Count()
	done()
	if n := count.Count() - before; n != 1 {
		t.Errorf("the flight's end sent %d commands, want 1", n)
	}
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("the flight's end woke no waiter")
	}
}

// Taking a flight's claim and the look-up after it are one command: the
// claim's script reads the call's entry (redis.DB.ClaimLook), and the
// look-up answers from it.
func TestClaimAndItsLookAreOneCommand(t *testing.T) {
	rs := replicas(t, 1, distcoalesce.Options{Lease: time.Minute})
	a := rs[0]
	count := &storetest.RedisCommands{}
	a.db.Client().AddHook(count)
	_, _, done := lead(a, "acme", "sha256:warm") // loads the scripts
	done()
	before := count.Count()
	e, _, done := lead(a, "acme", "sha256:c")
	if n := count.Count() - before; e != nil || n != 1 {
		t.Errorf("leading a flight with nothing stored: entry %v after %d commands, want none after 1", e, n)
	}
	done()
	if err := a.db.PutCache(ctx, result("acme", "sha256:c", `{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	before = count.Count()
	e, _, done = lead(a, "acme", "sha256:c")
	done()
	if e == nil || string(e.Response.Body) != `{"n":2}` {
		t.Fatalf("entry %v, want the stored one", e)
	}
	if n := count.Count() - before; n != 2 { // the claim with its look, and its release
		t.Errorf("a claim whose look found the entry took %d commands, want 2", n)
	}
}

// storeRider is the lead's side of gateway.StoreRider.
type storeRider interface {
	RideStore(ctx context.Context) context.Context
}

// A flight's release and wake-up ride with the cache write of its result:
// the write and the flight's end take one round trip together, and a
// waiter on another replica, woken by it, is served that result. When the
// write does not carry them (it wrote another key, or none), End sends
// them itself, and the waiter is woken all the same.
func TestFlightEndRidesWithItsStoredResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		put    string // the hash written under the ride's context ("": none)
		trips  int64  // of the write and End together
		served bool   // the waiter gets the flight's result
	}{
		{name: "ridden", put: "sha256:r", trips: 1, served: true},
		{name: "another key written", put: "sha256:elsewhere", trips: 2},
		{name: "nothing written", trips: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := replicas(t, 2, distcoalesce.Options{Lease: time.Minute})
			a, b := rs[0], rs[1]
			count := &storetest.RedisCommands{}
			a.db.Client().AddHook(count)
			warm := func(hash string) { // loads the scripts and opens the connections
				_, _, s, err := a.g.Lead(ctx, "acme", hash, a.lookup("acme", hash), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				rctx := s.(storeRider).RideStore(ctx)
				if err := a.db.PutCache(rctx, result("acme", hash, `{}`)); err != nil {
					t.Fatal(err)
				}
				s.End(nil)
			}
			warm("sha256:warm1")
			warm("sha256:warm2")
			e, _, s, err := a.g.Lead(ctx, "acme", "sha256:r", a.lookup("acme", "sha256:r"), nil, nil)
			if err != nil || e != nil {
				t.Fatalf("Lead: %v, %v; want the claim", e, err)
			}
			waiter := leadAsync(b, ctx, "acme", "sha256:r")
			b.waitingOn()
			before := count.RoundTrips()
			rctx := s.(storeRider).RideStore(ctx)
			if tc.put != "" {
				if err := a.db.PutCache(rctx, result("acme", tc.put, `{"n":1}`)); err != nil {
					t.Fatal(err)
				}
			}
			s.End(nil)
			if n := count.RoundTrips() - before; n != tc.trips {
				t.Errorf("the write and the flight's end took %d round trips, want %d", n, tc.trips)
			}
			var w led
			select {
			case w = <-waiter:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter on the other replica was not woken")
			}
			if tc.served {
				if w.err != nil || w.e == nil || string(w.e.Response.Body) != `{"n":1}` || !w.followed {
					t.Errorf("the waiter got %v (followed %v, %v); want the flight's result, followed", w.e, w.followed, w.err)
				}
				return
			}
			if w.err != nil || w.e != nil {
				t.Errorf("the waiter got %v, %v; want the claim, nothing being stored", w.e, w.err)
			}
			w.done()
		})
	}
}
