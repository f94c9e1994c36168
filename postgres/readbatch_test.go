package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundhog-ai/groundhog"
)

// holdFirstLookup is a pgx tracer that holds the first cache look-up until
// release is closed, and records every cache look-up's statement.
type holdFirstLookup struct {
	held, release chan struct{}
	once          sync.Once
	mu            sync.Mutex
	lookups       []string
}

func (h *holdFirstLookup) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "FROM cache") {
		return ctx
	}
	h.mu.Lock()
	h.lookups = append(h.lookups, d.SQL)
	h.mu.Unlock()
	h.once.Do(func() {
		close(h.held)
		<-h.release
	})
	return ctx
}

func (h *holdFirstLookup) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Look-ups that come while one is in flight wait for it and then go
// together, in one statement: each gets its own entry, an expired or never
// stored key is a miss, the same key twice is found twice, and a reader
// whose context is cancelled while it waits fails no one.
func TestConcurrentCacheLookupsShareAStatement(t *testing.T) {
	h := &holdFirstLookup{held: make(chan struct{}), release: make(chan struct{})}
	db, err := open(ctx, freshSchema(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = h })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	put := func(hash, body string, expires time.Time) {
		e := &groundhog.CacheEntry{Tenant: "acme", RequestHash: hash, Shape: groundhog.ShapeChat, CreatedAt: now.Add(-time.Hour), ExpiresAt: expires,
			Response: groundhog.Response{Status: 200, ContentType: "text/event-stream", Streamed: true,
				Events: []groundhog.Event{{Name: "e", Data: []byte(body)}}}}
		if err := db.PutCache(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"sha256:0", "sha256:1", "sha256:never", "sha256:expired", "sha256:1", "sha256:5"}
	for _, k := range []string{"sha256:0", "sha256:1", "sha256:5", "sha256:first"} {
		put(k, "answer "+k, time.Time{})
	}
	put("sha256:expired", "gone", now.Add(-time.Minute))
	reads, trips := db.ReadStats()

	type got struct {
		e   *groundhog.CacheEntry
		err error
	}
	first := make(chan got, 1)
	go func() {
		e, err := db.GetCache(ctx, "acme", "sha256:first", now)
		first <- got{e, err}
	}()
	<-h.held // the first look-up is in flight, alone
	results := make([]chan got, len(keys))
	cancelled, cancel := context.WithCancel(ctx)
	for i, k := range keys {
		results[i] = make(chan got, 1)
		c := ctx
		if i == 0 {
			c = cancelled // the first in the queue leads the batch
		}
		go func() {
			e, err := db.GetCache(c, "acme", k, now)
			results[i] <- got{e, err}
		}()
		for deadline := time.Now().Add(10 * time.Second); db.reads.q.Queued() != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(h.release)
				t.Fatalf("%d look-ups queued behind the one in flight, want %d", db.reads.q.Queued(), i+1)
			}
		}
	}
	cancel()
	close(h.release)

	if g := <-first; g.err != nil || string(g.e.Response.Events[0].Data) != "answer sha256:first" {
		t.Fatalf("the look-up in flight: %v, %v", g.e, g.err)
	}
	for i, k := range keys {
		g := <-results[i]
		if k == "sha256:never" || k == "sha256:expired" {
			if !groundhog.IsNotFound(g.err) {
				t.Errorf("%s: %v, %v; want not found", k, g.e, g.err)
			}
			continue
		}
		if g.err != nil || g.e.RequestHash != k || string(g.e.Response.Events[0].Data) != "answer "+k || !g.e.Response.Streamed {
			t.Errorf("%s (read %d): %+v, %v; want its own entry", k, i, g.e, g.err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lookups) != 2 || !strings.Contains(h.lookups[1], "unnest") {
		t.Errorf("%d look-up statements; want 2: the first alone, then the %d queued in one", len(h.lookups), len(keys))
	}
	if r, s := db.ReadStats(); r-reads != uint64(len(keys)+1) || s-trips != 2 {
		t.Errorf("ReadStats: %d look-ups in %d statements, want %d in 2", r-reads, s-trips, len(keys)+1)
	}
}
