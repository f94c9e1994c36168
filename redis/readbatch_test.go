package redis

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

// holdFirstGet is a go-redis hook that holds the first GET until release
// is closed, and counts every round trip.
type holdFirstGet struct {
	held    chan struct{} // closed when the first GET is held
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	trips   int
	mgets   [][]string // the keys of each MGET
}

func (h *holdFirstGet) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *holdFirstGet) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.mu.Lock()
		h.trips++
		if cmd.Name() == "mget" {
			var keys []string
			for _, a := range cmd.Args()[1:] {
				keys = append(keys, a.(string))
			}
			h.mgets = append(h.mgets, keys)
		}
		h.mu.Unlock()
		if cmd.Name() == "get" {
			h.once.Do(func() {
				close(h.held)
				<-h.release
			})
		}
		return next(ctx, cmd)
	}
}

func (h *holdFirstGet) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.mu.Lock()
		h.trips++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// Reads that come while a read is in flight wait for it and then go
// together, in one round trip: each gets its own entry, a key never stored
// is a miss, and a reader whose context is cancelled while it waits does not
// fail the others. A lone read goes alone.
func TestConcurrentReadsShareARoundTrip(t *testing.T) {
	ctx := context.Background()
	prefix := "ghtest:" + groundhog.NewID()[:12] + ":"
	db, err := Open(ctx, storetest.RedisURL(t), Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if keys, _ := db.Client().Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			db.Client().Del(ctx, keys...)
		}
		db.Close()
	})
	now := time.Now()
	put := func(hash, body string) {
		e := &groundhog.CacheEntry{Tenant: "acme", RequestHash: hash, Shape: groundhog.ShapeChat, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			Response: groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(body)}}
		if err := db.PutCache(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	const queued = 10
	for i := range queued {
		if i != 3 { // sha256:3 is never stored
			put("sha256:"+strconv.Itoa(i), "answer "+strconv.Itoa(i))
		}
	}
	put("sha256:first", "first")
	h := &holdFirstGet{held: make(chan struct{}), release: make(chan struct{})}
	db.Client().AddHook(h)
	before := db.Stats()

	type got struct {
		e   *groundhog.CacheEntry
		err error
	}
	first := make(chan got, 1)
	go func() {
		e, err := db.GetCache(ctx, "acme", "sha256:first", now)
		first <- got{e, err}
	}()
	<-h.held // the first read is in flight, alone
	results := make([]chan got, queued)
	cancelled, cancel := context.WithCancel(ctx)
	for i := range queued {
		results[i] = make(chan got, 1)
		c := ctx
		if i == 0 {
			c = cancelled // the first in the queue leads the batch
		}
		go func() {
			e, err := db.GetCache(c, "acme", "sha256:"+strconv.Itoa(i), now)
			results[i] <- got{e, err}
		}()
		for deadline := time.Now().Add(10 * time.Second); db.reads.Queued() != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(h.release)
				t.Fatalf("%d reads queued behind the one in flight, want %d", db.reads.Queued(), i+1)
			}
		}
	}
	cancel()
	close(h.release)

	if g := <-first; g.err != nil || string(g.e.Response.Body) != "first" {
		t.Fatalf("the read in flight: %v, %v", g.e, g.err)
	}
	for i := range queued {
		g := <-results[i]
		if i == 3 {
			if !groundhog.IsNotFound(g.err) {
				t.Errorf("a key never stored: %v, %v; want not found", g.e, g.err)
			}
			continue
		}
		if g.err != nil || string(g.e.Response.Body) != "answer "+strconv.Itoa(i) {
			t.Errorf("read %d: %v, %v; want its own entry", i, g.e, g.err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.trips != 2 || len(h.mgets) != 1 || len(h.mgets[0]) != queued {
		t.Errorf("%d round trips, MGETs %q; want 2: the first read alone, then the %d queued in one MGET", h.trips, h.mgets, queued)
	}
	if s := db.Stats(); s.Reads-before.Reads != queued+1 || s.ReadTrips-before.ReadTrips != 2 {
		t.Errorf("Stats: %d reads in %d round trips, want %d in 2", s.Reads-before.Reads, s.ReadTrips-before.ReadTrips, queued+1)
	}
}
