package e2e

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
)

// testPeerFollowerIsCoalesced: a call identical to one running on another
// replica waits for that replica's flight and is accounted as a coalesced
// follower, as it would be in one process — Groundhog-Cache: coalesced, a
// ledger row with outcome coalesced, InFlight set and Saved equal to the
// leader's cost — and the provider is called once.
func testPeerFollowerIsCoalesced(t *testing.T, cl *cluster) {
	ctx := context.Background()
	r := cl.replicas
	use := map[string]string{"Groundhog-Cache": "use"}
	body := chat(longPrompt("peer follower", 1000)) // about 2 s upstream
	before := simCalls(t, cl.sim.URL)

	lead := make(chan result, 1)
	go func() { lead <- post(ctx, r[0].URL+"/v1/chat/completions", body, use) }()
	waitFlightClaimed(t, cl)
	follower := post(ctx, r[1].URL+"/v1/chat/completions", body, use)
	leader := <-lead
	if leader.err != nil || follower.err != nil || leader.status != 200 || follower.status != 200 {
		t.Fatalf("leader %d (%v), follower %d (%v)", leader.status, leader.err, follower.status, follower.err)
	}
	if got := leader.header.Get("Groundhog-Cache"); got != "miss" {
		t.Errorf("leader: Groundhog-Cache = %q, want miss", got)
	}
	if got := follower.header.Get("Groundhog-Cache"); got != "coalesced" {
		t.Errorf("follower on another replica: Groundhog-Cache = %q, want coalesced", got)
	}
	if string(follower.body) != string(leader.body) {
		t.Error("the follower got another answer than the leader")
	}
	if got := simCalls(t, cl.sim.URL) - before; got != 1 {
		t.Errorf("the sim billed %d calls, want 1", got)
	}

	// The replicas write their ledger in batches: poll the shared ledger
	// until both rows are there.
	hash := leader.header.Get("Groundhog-Request-Hash")
	var rows []groundhog.LedgerEntry
	deadline := time.Now().Add(30 * time.Second)
	for len(rows) < 2 && time.Now().Before(deadline) {
		rows = rows[:0]
		err := cl.store.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
			if e.RequestHash == hash {
				rows = append(rows, *e)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) < 2 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("%d ledger rows for the call's hash %q, want 2", len(rows), hash)
	}
	var up, co *groundhog.LedgerEntry
	for i := range rows {
		switch rows[i].Outcome {
		case groundhog.OutcomeUpstream:
			up = &rows[i]
		case groundhog.OutcomeCoalesced:
			co = &rows[i]
		}
	}
	if up == nil || co == nil {
		t.Fatalf("ledger outcomes %s and %s, want upstream and coalesced", rows[0].Outcome, rows[1].Outcome)
	}
	if !up.Cost.Known() || up.Cost == 0 {
		t.Fatalf("leader's cost %d, want a known price", up.Cost)
	}
	if !co.InFlight || co.Cost != 0 || co.Saved != up.Cost || co.FullCost != up.Cost {
		t.Errorf("follower row: in flight %v, cost %d, saved %d, full %d; want true, 0, %d, %d",
			co.InFlight, co.Cost, co.Saved, co.FullCost, up.Cost, up.Cost)
	}
}

// waitFlightClaimed returns once some replica holds a cross-replica flight
// claim in Redis. It polls Redis: the test has no other signal from inside
// a replica.
func waitFlightClaimed(t *testing.T, cl *cluster) {
	t.Helper()
	opt, err := goredis.ParseURL(cl.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		keys, err := c.Keys(context.Background(), cl.prefix+"f:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no replica ever claimed the flight")
}
