package distfanout_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/distfanout"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

var ctx = context.Background()

// replica is one process's view: its own Redis connections (keys and
// wake-ups), its Shared and the fanout.Group over it.
type replica struct {
	db   *redis.DB
	s    *distfanout.Shared
	g    *fanout.Group
	held chan struct{} // a value each time a request starts waiting
}

// replicas opens n replicas of one deployment (one key prefix). Waiters
// poll only every hour: a release must wake them.
func replicas(t *testing.T, n int, hold time.Duration) []replica {
	t.Helper()
	url := storetest.RedisURL(t)
	prefix := "ghtest:" + groundhog.NewID()[:12] + ":"
	var rs []replica
	for range n {
		db, err := redis.Open(ctx, url, redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		s := distfanout.New(distfanout.Options{Client: db.Client(), Prefix: prefix, Waker: db, Poll: time.Hour})
		held := make(chan struct{}, 100)
		g := fanout.New(fanout.Config{MaxHold: hold, Shared: s, OnHold: func() { held <- struct{}{} }})
		rs = append(rs, replica{db: db, s: s, g: g, held: held})
	}
	t.Cleanup(func() {
		c := rs[0].db.Client()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		for _, r := range rs {
			r.db.Close()
		}
	})
	return rs
}

// isHeld returns once a request has started waiting on r.
func (r replica) isHeld(t *testing.T) {
	t.Helper()
	select {
	case <-r.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no request was held in 30 s")
	}
}

func (r replica) enter(ctx context.Context, key string) <-chan *fanout.Ticket {
	ch := make(chan *fanout.Ticket, 1)
	go func() { ch <- r.g.Enter(ctx, key) }()
	return ch
}

// released returns the ticket of a request released by its writer's
// answer. The hold is an hour, and waiters poll hourly: only the writer's
// wake-up can release it within the bound.
func released(t *testing.T, ch <-chan *fanout.Ticket) *fanout.Ticket {
	t.Helper()
	select {
	case tk := <-ch:
		return tk
	case <-time.After(30 * time.Second):
		t.Fatal("a held request was not released 30 s after its writer ended")
		return nil
	}
}

func notYet(t *testing.T, chs ...<-chan *fanout.Ticket) {
	t.Helper()
	for _, ch := range chs {
		select {
		case <-ch:
			t.Fatal("a held request was released before the writer started answering")
		default:
		}
	}
}

// The first request over a new prefix, on any replica, writes it; the
// others — on its replica and on the others — wait until it has started
// answering, and a later one anywhere is not held at all.
func TestOneWriterAcrossReplicas(t *testing.T) {
	rs := replicas(t, 3, time.Hour)
	w := rs[0].g.Enter(ctx, "acme\x00m\x00\x00p")
	if w.Held {
		t.Fatal("the first request over a new prefix was held")
	}
	local := rs[0].enter(ctx, "acme\x00m\x00\x00p")
	rs[0].isHeld(t)
	b1 := rs[1].enter(ctx, "acme\x00m\x00\x00p")
	rs[1].isHeld(t)
	b2 := rs[1].enter(ctx, "acme\x00m\x00\x00p") // held behind replica 1's own waiter
	rs[1].isHeld(t)
	other := rs[2].g.Enter(ctx, "acme\x00m\x00\x00q") // another prefix is not held
	if other.Held {
		t.Fatal("a request over another prefix was held")
	}
	other.Started(true)
	time.Sleep(50 * time.Millisecond) // give a wrong release its chance
	notYet(t, local, b1, b2)

	w.Started(true)
	for i, ch := range []<-chan *fanout.Ticket{local, b1, b2} {
		tk := released(t, ch)
		if !tk.Held {
			t.Errorf("released request %d does not say it was held", i)
		}
		tk.Started(true) // no effect: not a writer
	}
	// Written: a request on a replica that never saw the prefix is not held.
	late := rs[2].g.Enter(ctx, "acme\x00m\x00\x00p")
	if late.Held {
		t.Fatal("a request after the prefix was written was held on another replica")
	}
	if st := rs[2].s.Stats(); st.Warm != 1 {
		t.Fatalf("replica 2 stats %+v, want the prefix found warm once", st)
	}
	// Replica 1 learnt it from its wait: no round trip for the next one.
	before := rs[1].s.Stats()
	if tk := rs[1].g.Enter(ctx, "acme\x00m\x00\x00p"); tk.Held {
		t.Fatal("held on replica 1 after the prefix was written")
	}
	if after := rs[1].s.Stats(); after != before {
		t.Fatalf("replica 1 asked Redis again (%+v → %+v) for a prefix it knows is written", before, after)
	}
}

// Tenants (and models, cache keys) are separate prefixes: one tenant's
// writer holds no other tenant's request.
func TestTenantsDoNotHoldEachOther(t *testing.T) {
	rs := replicas(t, 2, time.Hour)
	w := rs[0].g.Enter(ctx, "acme\x00m\x00\x00p")
	if tk := rs[1].g.Enter(ctx, "globex\x00m\x00\x00p"); tk.Held {
		t.Fatal("another tenant's request was held")
	}
	w.Done()
}

// A writer that fails before answering releases the other replicas'
// waiters without marking the prefix written; the next request writes it.
func TestFailedWriterReleasesWithoutWarm(t *testing.T) {
	rs := replicas(t, 2, time.Hour)
	w := rs[0].g.Enter(ctx, "k")
	b := rs[1].enter(ctx, "k")
	rs[1].isHeld(t)
	w.Done() // never answered
	if tk := released(t, b); !tk.Held {
		t.Fatal("not marked held")
	}
	// Nothing was written: the next request (on either replica) writes.
	n := rs[0].g.Enter(ctx, "k")
	if n.Held {
		t.Fatal("held after a failed writer")
	}
	c := rs[1].enter(ctx, "k")
	rs[1].isHeld(t) // …and holds the others again
	n.Started(true)
	released(t, c)
}

// A writer whose process died never releases: its claim lapses after the
// hold, and the waiters go at the hold's end as within one process.
func TestDeadWriterHoldsNoLongerThanTheHold(t *testing.T) {
	const hold = 300 * time.Millisecond
	rs := replicas(t, 2, hold)
	_ = rs[0].g.Enter(ctx, "k") // the writer, then nothing: its process is gone
	start := time.Now()
	b := rs[1].enter(ctx, "k")
	rs[1].isHeld(t)
	if tk := <-b; !tk.Held {
		t.Fatal("not marked held")
	}
	if d := time.Since(start); d < hold {
		t.Fatalf("released after %v, before the hold (%v) and with no writer answering", d, hold)
	}
	// The claim has lapsed (it lived for the hold): a new request writes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := rs[1].s.Claim(ctx, "k", hold)
		if c.State == fanout.Claimed {
			rs[1].s.Release("k", c, false, time.Minute)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead writer's claim is still %v after 5 s", c.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The client of a held request leaving ends its hold at once.
func TestClientGoneEndsHold(t *testing.T) {
	rs := replicas(t, 2, time.Hour)
	w := rs[0].g.Enter(ctx, "k")
	cctx, cancel := context.WithCancel(ctx)
	b := rs[1].enter(cctx, "k")
	rs[1].isHeld(t)
	cancel()
	<-b
	w.Done()
}

// Redis unreachable: every replica holds within itself, never longer than
// one bounded round trip more, and never fails a request.
func TestRedisDownHoldsWithinReplica(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	s := distfanout.New(distfanout.Options{Client: c, Prefix: "x:", Waker: hub{wake.New()}})
	held := make(chan struct{}, 10)
	g := fanout.New(fanout.Config{MaxHold: time.Hour, Shared: s, OnHold: func() { held <- struct{}{} }})
	w := g.Enter(ctx, "k")
	if w.Held {
		t.Fatal("held with Redis down and nobody writing")
	}
	ch := make(chan *fanout.Ticket, 1)
	go func() { ch <- g.Enter(ctx, "k") }()
	<-held // the in-process hold still works
	w.Started(true)
	if tk := <-ch; !tk.Held {
		t.Fatal("not marked held")
	}
	if st := s.Stats(); st.Errors == 0 {
		t.Fatalf("stats %+v: the failed claim was not counted", st)
	}
	if s.Wait(ctx, "k") {
		t.Fatal("Wait with Redis down must say not written")
	}
}

// hub is a wake.Transport within one process.
type hub struct{ h *wake.Hub }

func (h hub) Publish(topic string) { h.h.Deliver(topic) }
func (h hub) Wake(ctx context.Context, topic string) <-chan struct{} {
	return h.h.Subscribe(ctx, topic)
}
