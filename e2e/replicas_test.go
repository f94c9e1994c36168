package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/postgres"
	"github.com/groundhog-ai/groundhog/storetest"
)

// cluster is three `groundhog serve` replicas on one PostgreSQL schema and
// one Redis prefix, in front of one `groundhog sim`.
type cluster struct {
	sim      *proc
	replicas []*proc
	pgURL    string
	store    *postgres.DB // the test's own view of the shared database
	redisURL string
	prefix   string // the replicas' --redis-prefix
}

// freshPostgres creates a schema dropped when t ends and returns the URL
// that selects it.
func freshPostgres(t testing.TB) string { return storetest.FreshPostgres(t) }

// freshRedisPrefix returns a key prefix whose keys are deleted when t ends.
func freshRedisPrefix(t testing.TB, redisURL string) string {
	t.Helper()
	prefix := "ghe2e:" + groundhog.NewID()[:12] + ":"
	t.Cleanup(func() {
		opt, err := goredis.ParseURL(redisURL)
		if err != nil {
			return
		}
		c := goredis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return prefix
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	// ~200 ms to the first token, plus 2 ms per uncached prompt token so a
	// long prompt keeps a call running for seconds.
	return startClusterWith(t, n, []string{"--first-token", "200ms", "--per-prompt-token", "2ms"}, nil)
}

// startClusterWith starts a cluster whose sim takes simArgs and whose
// replicas run with env added to their environment.
func startClusterWith(t testing.TB, n int, simArgs, env []string) *cluster {
	t.Helper()
	redisURL := storetest.RedisURL(t)
	pg := freshPostgres(t)
	prefix := freshRedisPrefix(t, redisURL)
	sim := start(t, nil, append([]string{"sim"}, simArgs...)...)
	cl := &cluster{sim: sim, pgURL: pg, redisURL: redisURL, prefix: prefix}
	dir := t.TempDir()
	var wg sync.WaitGroup
	var mu sync.Mutex
	cl.replicas = make([]*proc, n)
	for i := range n {
		wg.Add(1)
		go func() { // replicas start together: migrations must not race
			defer wg.Done()
			p := start(t, env, "serve", "--db", pg, "--cache", redisURL, "--redis-prefix", prefix,
				"--upstream", sim.URL+"/v1", "--anthropic-upstream", sim.URL+"/v1", "--lease", "2s", "--journal-dir", filepath.Join(dir, fmt.Sprint("journal", i)))
			mu.Lock()
			cl.replicas[i] = p
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	db, err := postgres.Open(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cl.store = db
	return cl
}

// stop ends a replica gracefully (SIGTERM), so its ledger is flushed.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Error("replica did not stop after SIGTERM")
	}
}

func chat(content string) string {
	return fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":%q}]}`, content)
}

// longPrompt is a prompt of about n tokens (a slow call on this sim).
func longPrompt(tag string, n int) string {
	return tag + strings.Repeat(" lorem", n)
}

func TestReplicasShareCacheFlightsAndOperations(t *testing.T) {
	cl := startCluster(t, 3)
	r := cl.replicas
	ctx := context.Background()
	use := map[string]string{"Groundhog-Cache": "use"}

	t.Run("cache hit written by one replica is served by another", func(t *testing.T) {
		before := simCalls(t, cl.sim.URL)
		a := post(ctx, r[0].URL+"/v1/chat/completions", chat("cache across replicas"), use)
		b := post(ctx, r[1].URL+"/v1/chat/completions", chat("cache across replicas"), use)
		if a.err != nil || b.err != nil || a.status != 200 || b.status != 200 {
			t.Fatalf("statuses %d %d, errors %v %v", a.status, b.status, a.err, b.err)
		}
		if a.header.Get("Groundhog-Cache") != "miss" || b.header.Get("Groundhog-Cache") != "hit" {
			t.Errorf("Groundhog-Cache = %q then %q, want miss then hit", a.header.Get("Groundhog-Cache"), b.header.Get("Groundhog-Cache"))
		}
		if string(a.body) != string(b.body) {
			t.Errorf("replica 1 served another body than replica 0 wrote")
		}
		if got := simCalls(t, cl.sim.URL) - before; got != 1 {
			t.Errorf("the sim billed %d calls, want 1", got)
		}
	})

	t.Run("identical concurrent calls round-robin cost one upstream call", func(t *testing.T) {
		const n = 300
		before := simCalls(t, cl.sim.URL)
		body := chat("coalesce across replicas")
		res := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hdr := map[string]string{"Groundhog-Cache": "use"}
				if i%2 == 1 {
					body := strings.Replace(body, `"messages"`, `"stream":true,"messages"`, 1)
					res[i] = post(ctx, r[i%3].URL+"/v1/chat/completions", body, hdr)
					return
				}
				res[i] = post(ctx, r[i%3].URL+"/v1/chat/completions", body, hdr)
			}()
		}
		wg.Wait()
		var first string
		for i, x := range res {
			if x.err != nil || x.status != 200 {
				t.Fatalf("call %d: status %d, err %v", i, x.status, x.err)
			}
			if i%2 == 0 {
				if first == "" {
					first = string(x.body)
				} else if string(x.body) != first {
					t.Fatalf("call %d got another answer", i)
				}
			} else if !strings.Contains(string(x.body), "data: [DONE]") {
				t.Fatalf("stream %d incomplete: %q", i, x.body)
			}
		}
		if got := simCalls(t, cl.sim.URL) - before; got != 1 {
			t.Errorf("%d identical concurrent calls over 3 replicas cost %d upstream calls, want 1", n, got)
		}
	})

	t.Run("a follower on another replica is accounted as coalesced", func(t *testing.T) {
		testPeerFollowerIsCoalesced(t, cl)
	})

	t.Run("Idempotency-Key retry on another replica replays, waits or gets 409", func(t *testing.T) {
		key := map[string]string{"Idempotency-Key": "op-" + groundhog.NewID()}
		body := chat(longPrompt("idem", 1500)) // about 3 s upstream
		first := make(chan result, 1)
		go func() { first <- post(ctx, r[0].URL+"/v1/chat/completions", body, key) }()
		waitRunning(t, cl.store, groundhog.LocalTenant, key["Idempotency-Key"])
		busy := post(ctx, r[1].URL+"/v1/chat/completions", body, key)
		if busy.status != 409 || busy.header.Get("Retry-After") == "" {
			t.Errorf("retry on replica 1 while running: status %d (Retry-After %q), want 409 with Retry-After", busy.status, busy.header.Get("Retry-After"))
		}
		mism := post(ctx, r[1].URL+"/v1/chat/completions", chat("another payload"), key)
		if mism.status != 422 {
			t.Errorf("same key, other payload: status %d, want 422", mism.status)
		}
		waited := post(ctx, r[2].URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": key["Idempotency-Key"], "Prefer": "wait=20"})
		got := <-first
		if got.status != 200 || waited.status != 200 {
			t.Fatalf("first %d (%v), waited %d (%v)", got.status, got.err, waited.status, waited.err)
		}
		if waited.header.Get("Idempotent-Replayed") != "true" || string(waited.body) != string(got.body) {
			t.Errorf("Prefer: wait on replica 2: replayed %q, same body %v; want the first attempt's result replayed",
				waited.header.Get("Idempotent-Replayed"), string(waited.body) == string(got.body))
		}
		again := post(ctx, r[1].URL+"/v1/chat/completions", body, key)
		if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(got.body) {
			t.Errorf("later retry on replica 1: status %d replayed %q", again.status, again.header.Get("Idempotent-Replayed"))
		}
	})

	t.Run("kill -9 of the leading replica: another recovers after the lease", func(t *testing.T) {
		key := "op-" + groundhog.NewID()
		body := chat(longPrompt("kill", 2500)) // about 5 s upstream
		first := make(chan result, 1)
		go func() {
			first <- post(ctx, r[0].URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": key})
		}()
		waitRunning(t, cl.store, groundhog.LocalTenant, key)
		r[0].kill()
		if res := <-first; res.err == nil {
			t.Errorf("the killed replica's client got status %d, want a connection error", res.status)
		}
		retry := post(ctx, r[1].URL+"/v1/chat/completions", body, map[string]string{"Idempotency-Key": key, "Prefer": "wait=30"})
		if retry.err != nil || retry.status != 200 {
			t.Fatalf("retry on replica 1: status %d, err %v, body %s", retry.status, retry.err, retry.body)
		}
		op, err := cl.store.GetOperationByKey(ctx, groundhog.LocalTenant, key)
		if err != nil {
			t.Fatal(err)
		}
		if op.Status != groundhog.StatusCompleted || op.Attempts != 2 {
			t.Errorf("operation record: status %s, %d attempts; want completed after 2", op.Status, op.Attempts)
		}
		r[1].stop() // flush its ledger
		// Both attempts are in the ledger: the killed replica's, booked by
		// the replica that took over (no response was seen: cost unknown,
		// never $0), and the takeover's own, priced.
		var attempts []groundhog.LedgerEntry
		err = cl.store.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
			if e.Idempotent && e.Outcome == groundhog.OutcomeUpstream && e.RequestHash == retry.header.Get("Groundhog-Request-Hash") {
				attempts = append(attempts, *e)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 2 || attempts[0].Attempt != 1 || attempts[0].Cost != groundhog.CostUnknown ||
			attempts[1].Attempt != 2 || !attempts[1].Cost.Known() || attempts[1].Cost <= 0 {
			t.Errorf("ledger rows of the call's attempts = %+v; want attempt 1 at an unknown cost, then attempt 2 priced", attempts)
		}
	})
}

// waitRunning returns once the operation (tenant, key) is running in the
// shared database (a replica has claimed it). It polls the store: the test
// process has no other signal from inside a replica.
func waitRunning(t *testing.T, db *postgres.DB, tenant, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		op, err := db.GetOperationByKey(context.Background(), tenant, key)
		if err == nil && op.Status == groundhog.StatusRunning {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("operation %s never became running", key)
}
