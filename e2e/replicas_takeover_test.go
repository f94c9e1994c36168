package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// A coalesced call (no Idempotency-Key) whose leading replica is killed
// (kill -9) after the provider billed it: a waiter on another replica takes
// the flight over and pays the provider again. The ledger then books both
// attempts — the dead leader's at an unknown cost (no answer was seen),
// the takeover's priced — and stays so after the dead replica restarts on
// its journal: the report's known spend equals the bill minus the lost
// attempt, and the lost attempt is counted as unknown. Every follower is
// booked as what its client received.
func TestReplicasKilledFlightLeaderIsBookedAsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		when   string // when the followers come: waiting, live, late
	}{
		// The followers wait for the leader's answer when it dies: one of
		// them takes the flight over, all get its answer.
		{"json", false, "waiting"},
		// The followers come once the dead leader's claim missed a
		// renewal: they do not relay its stream, one of them takes the
		// flight over, all get its whole stream.
		{"stream, followers after the leader died", true, "late"},
		// Killed while the followers relay its stream: their clients get
		// an error (they cannot be given another answer's rest), and no
		// one pays the provider again.
		{"stream, followers relaying the leader's stream", true, "live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testKilledFlightLeader(t, tc.stream, tc.when)
		})
	}
}

func testKilledFlightLeader(t *testing.T, stream bool, when string) {
	// 200 ms to the first token (when the sim bills the call), then 100 ms
	// an output token: the call runs for seconds after it was billed.
	cl := startClusterWith(t, 3, []string{"--first-token", "200ms", "--per-output-token", "100ms"}, nil)
	r := cl.replicas
	ctx := context.Background()
	body := chat(fmt.Sprintf("the leading replica dies (stream %v)", stream))
	if stream {
		body = strings.Replace(body, `"messages"`, `"stream":true,"messages"`, 1)
	}
	call := func(replica int, op string, first chan<- struct{}) result {
		return postNotify(ctx, r[replica].URL+"/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use", "Groundhog-Operation": op}, first)
	}

	lead := make(chan result, 1)
	go func() { lead <- call(0, "leader", nil) }()
	waitFlightClaimed(t, cl)
	// Four followers on the two other replicas.
	followers := map[string]result{}
	first := make(chan struct{}, 4)
	var mu sync.Mutex
	var wg sync.WaitGroup
	follow := func() {
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := fmt.Sprintf("follower-%d", i)
				res := call(1+i%2, op, first)
				mu.Lock()
				followers[op] = res
				mu.Unlock()
			}()
		}
	}
	if when != "late" {
		follow()
	}
	// Kill the leader's replica once the provider has billed its call.
	deadline := time.Now().Add(20 * time.Second)
	for simCalls(t, cl.sim.URL) < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if when == "live" {
		// The followers receive the leader's stream live: kill it once
		// each has part of it.
		for range 4 {
			select {
			case <-first:
			case <-time.After(20 * time.Second):
				t.Fatal("a follower received nothing of the leader's stream")
			}
		}
	}
	billedBeforeKill := simBillUSD(t, cl.sim.URL)
	if billedBeforeKill.Calls != 1 {
		t.Fatalf("the sim billed %d calls before the kill, want 1", billedBeforeKill.Calls)
	}
	r[0].kill()
	if when == "late" {
		waitClaimUnrenewed(t, cl, 2*time.Second)
		follow()
	}
	if res := <-lead; res.err == nil && (!stream || bytes.Contains(res.body, []byte("data: [DONE]"))) {
		t.Fatalf("the killed replica's client got a whole answer (status %d)", res.status)
	}
	wg.Wait()

	// The dead replica restarts on its journal, then every replica stops
	// gracefully: the ledger holds all it will ever hold.
	restarted := start(t, nil, argsWithoutAddr(r[0])...)
	restarted.stop()
	r[1].stop()
	r[2].stop()

	final := simBillUSD(t, cl.sim.URL)
	if !stream && final.Calls != 2 {
		t.Fatalf("the sim billed %d calls, want 2 (the dead leader's and the takeover's)", final.Calls)
	}
	var hash string
	for _, f := range followers {
		if h := f.header.Get("Groundhog-Request-Hash"); h != "" {
			hash = h
		}
	}
	rows := map[string][]groundhog.LedgerEntry{} // by operation: the client they belong to
	var lost []groundhog.LedgerEntry
	err := cl.store.ScanLedger(ctx, groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		switch {
		case e.RequestHash != hash:
		case e.Outcome == groundhog.OutcomeUpstream && e.Status == 0:
			lost = append(lost, *e) // booked by the call that took the flight over
		default:
			rows[e.Operation] = append(rows[e.Operation], *e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The dead leader's attempt: booked once, at an unknown cost.
	if len(lost) != 1 || lost[0].Cost != groundhog.CostUnknown || lost[0].FullCost != groundhog.CostUnknown {
		t.Errorf("ledger rows of the killed leader's attempt = %+v; want one upstream row, status 0, cost unknown", lost)
	}
	if got := rows["leader"]; len(got) != 0 {
		t.Errorf("the killed leader's call has rows %+v besides its lost attempt", got)
	}
	// Each follower is booked as what its client received.
	upstream := 0
	for op, res := range followers {
		got := rows[op]
		if len(got) != 1 {
			t.Errorf("%s: %d ledger rows, want 1", op, len(got))
			continue
		}
		e := got[0]
		complete := res.err == nil && res.status == 200 && (!stream || bytes.Contains(res.body, []byte("data: [DONE]")))
		state := res.header.Get("Groundhog-Cache")
		want := map[string]groundhog.Outcome{"miss": groundhog.OutcomeUpstream, "coalesced": groundhog.OutcomeCoalesced, "hit": groundhog.OutcomeCacheHit}[state]
		switch {
		case complete && want == "":
			t.Errorf("%s: complete answer with Groundhog-Cache %q", op, state)
		case complete && (e.Outcome != want || e.Status != 200):
			t.Errorf("%s: received a whole answer (Groundhog-Cache %s), booked %s|%d", op, state, e.Outcome, e.Status)
		case !complete && e.Outcome != groundhog.OutcomeError:
			t.Errorf("%s: received an error (status %d, err %v), booked %s|%d", op, res.status, res.err, e.Outcome, e.Status)
		}
		if e.Outcome == groundhog.OutcomeUpstream {
			upstream++
			if !e.Cost.Known() || e.Cost <= 0 {
				t.Errorf("%s: the takeover's attempt cost %s, want its price", op, e.Cost)
			}
		}
		t.Logf("%s: status %d, err %v, whole %v, Groundhog-Cache %q; booked %s|%d cost %s", op, res.status, res.err, complete, state, e.Outcome, e.Status, e.Cost)
	}
	if int64(upstream) != final.Calls-1 {
		t.Errorf("%d followers booked as upstream, want %d (the takeover's calls)", upstream, final.Calls-1)
	}

	// The report: the known spend is the bill without the lost attempt,
	// which is counted as unknown.
	rep, err := ledger.BuildReport(ctx, cl.store, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	spend, _ := rep.Total.Spend.Money()
	if want := final.USD - billedBeforeKill.USD; spend.String() != want.String() {
		t.Errorf("report spend %s, want %s (the bill %s minus the lost attempt's %s)", spend, want, final.USD, billedBeforeKill.USD)
	}
	if rep.Total.UpstreamCalls != final.Calls || rep.Total.UnknownCostCalls != 1 {
		t.Errorf("report: %d upstream calls, %d at an unknown cost; want %d and 1", rep.Total.UpstreamCalls, rep.Total.UnknownCostCalls, final.Calls)
	}
}

// waitClaimUnrenewed returns once the flight claim in Redis has missed a
// renewal (a live holder renews it every third of the lease) or is gone.
func waitClaimUnrenewed(t *testing.T, cl *cluster, lease time.Duration) {
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
		if len(keys) == 0 {
			return
		}
		if ttl, err := c.PTTL(context.Background(), keys[0]).Result(); err == nil && ttl < lease/2 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the dead leader's claim was still renewed")
}

// postNotify is post that sends to first (when not nil) once the
// response's first body bytes arrived.
func postNotify(ctx context.Context, url, body string, hdr map[string]string, first chan<- struct{}) result {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer res.Body.Close()
	var all bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 && all.Len() == 0 && first != nil {
			first <- struct{}{}
		}
		all.Write(buf[:n])
		if err == io.EOF {
			return result{status: res.StatusCode, header: res.Header, body: all.Bytes()}
		}
		if err != nil {
			return result{status: res.StatusCode, header: res.Header, body: all.Bytes(), err: err}
		}
	}
}

// usdBill is the sim's bill with its total in dollars.
type usdBill struct {
	Calls int64
	USD   groundhog.Money
}

func simBillUSD(t *testing.T, simURL string) usdBill {
	t.Helper()
	res, err := http.Get(simURL + "/sim/v1/bill")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b struct {
		Calls int64  `json:"calls"`
		USD   string `json:"usd"`
	}
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	usd, err := groundhog.ParseMoney(b.USD)
	if err != nil {
		t.Fatal(err)
	}
	return usdBill{b.Calls, usd}
}

// argsWithoutAddr is the command line p was started with, without its
// --addr (start adds a new one).
func argsWithoutAddr(p *proc) []string {
	var args []string
	a := p.cmd.Args[1:]
	for i := 0; i < len(a); i++ {
		if a[i] == "--addr" {
			i++
			continue
		}
		args = append(args, a[i])
	}
	return args
}
