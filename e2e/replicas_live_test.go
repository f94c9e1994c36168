package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// slowStream is the sim of the live-stream tests: 200 ms to the first
// token, then 20 ms per output token, so a stream lasts a good while after
// its first byte.
var slowStream = []string{"--first-token", "200ms", "--per-output-token", "20ms"}

// timedStream is one streaming call's outcome with the times a client
// sees: when it sent the request, read its first body byte, and its last.
type timedStream struct {
	replica           int
	state             string // Groundhog-Cache
	body              []byte
	err               error
	sent, first, last time.Time
}

func postStream(ctx context.Context, replica int, url, body string) timedStream {
	ts := timedStream{replica: replica, sent: time.Now()}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Groundhog-Cache", "use")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.err = err
		return ts
	}
	defer res.Body.Close()
	ts.state = res.Header.Get("Groundhog-Cache")
	var all bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if all.Len() == 0 {
				ts.first = time.Now()
			}
			all.Write(buf[:n])
		}
		if err != nil {
			if err != io.EOF {
				ts.err = err
			}
			break
		}
	}
	ts.last = time.Now()
	ts.body = all.Bytes()
	if res.StatusCode != 200 && ts.err == nil {
		ts.err = fmt.Errorf("status %d: %s", res.StatusCode, ts.body)
	}
	return ts
}

// liveRound sends n identical streaming calls at once, round-robin over
// the replicas, and returns them with the index of the leader (the call
// that paid the provider: Groundhog-Cache miss).
func liveRound(t *testing.T, cl *cluster, n int, prompt string) ([]timedStream, int) {
	t.Helper()
	res, leader, err := liveRoundErr(t, cl, n, prompt)
	if err != nil {
		t.Fatal(err)
	}
	return res, leader
}

// liveRoundErr is liveRound; a round in which more than one call paid the
// provider is its error.
func liveRoundErr(t *testing.T, cl *cluster, n int, prompt string) ([]timedStream, int, error) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"sim-small","stream":true,"messages":[{"role":"user","content":%q}]}`, prompt)
	res := make([]timedStream, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = postStream(context.Background(), i%len(cl.replicas), cl.replicas[i%len(cl.replicas)].URL, body)
		}()
	}
	wg.Wait()
	leader := -1
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d (replica %d): %v", i, r.replica, r.err)
		}
		if r.state == "miss" {
			if leader >= 0 {
				states := make([]string, len(res))
				for j, r := range res {
					states[j] = fmt.Sprintf("%d@%d:%s", j, r.replica, r.state)
				}
				return res, -1, fmt.Errorf("%q: calls %d and %d both paid the provider (%v)", prompt, leader, i, states)
			}
			leader = i
		}
	}
	if leader < 0 {
		return res, -1, fmt.Errorf("%q: no call paid the provider", prompt)
	}
	return res, leader, nil
}

// Streaming calls spread over three replicas, the provider streaming
// slowly: the calls on the replicas other than the leader's receive their
// first bytes before the leader's last byte (they get the stream live, not
// at its end), every call gets the leader's exact stream, and the sim
// bills one call.
func TestReplicasStreamLiveToFollowers(t *testing.T) {
	cl := startClusterWith(t, 3, slowStream, nil)
	before := simCalls(t, cl.sim.URL)
	res, li := liveRound(t, cl, 30, "live stream across replicas")
	leader := res[li]
	if got := simCalls(t, cl.sim.URL) - before; got != 1 {
		t.Errorf("the sim billed %d calls, want 1", got)
	}
	if !bytes.Contains(leader.body, []byte("data: [DONE]")) {
		t.Fatalf("the leader's stream is incomplete: %q", leader.body)
	}
	others, late := 0, 0
	for i, r := range res {
		if !bytes.Equal(r.body, leader.body) {
			t.Errorf("call %d (replica %d, %s) got another stream than the leader", i, r.replica, r.state)
		}
		if r.replica == leader.replica {
			continue
		}
		if r.state == "hit" && r.sent.After(leader.last) {
			// Sent after the stream had ended (a loaded machine can start
			// a goroutine that late): the cached answer is the right one.
			late++
			continue
		}
		if r.state != "coalesced" {
			t.Errorf("call %d on replica %d: Groundhog-Cache %q, want coalesced", i, r.replica, r.state)
			continue
		}
		others++
		if !r.first.Before(leader.last) {
			t.Errorf("call %d on replica %d read its first byte %s after the leader's last byte: not live",
				i, r.replica, r.first.Sub(leader.last))
		}
	}
	if others+late != 20 || others == 0 {
		t.Errorf("%d coalesced calls on the other replicas and %d sent after the stream ended, want 20 in all, at least one coalesced", others, late)
	}
	if late > 0 {
		t.Logf("%d calls were sent after the leader's stream had ended and were cache hits", late)
	}
}

// TestBenchLiveStreams measures, in one run, what a streaming follower on
// another replica adds to the leader's latency to its first byte and its
// last byte, with the live relay (after) and with it off
// (GROUNDHOG_LIVE_STREAMS=off: the stored result, before), rounds
// alternating; and the Redis memory of a flight's stream. It prints
// figures and asserts nothing about time; it runs only with
// GROUNDHOG_BENCH_REPLICAS=1.
func TestBenchLiveStreams(t *testing.T) {
	if os.Getenv("GROUNDHOG_BENCH_REPLICAS") != "1" {
		t.Skip("set GROUNDHOG_BENCH_REPLICAS=1 to run the live-stream benchmark")
	}
	clusters := map[string]*cluster{
		"live":   startClusterWith(t, 3, slowStream, nil),
		"stored": startClusterWith(t, 3, slowStream, []string{"GROUNDHOG_LIVE_STREAMS=off"}),
	}
	type added struct{ first, last []time.Duration }
	got := map[string]*added{"live": {}, "stored": {}}
	streamBytes := 0 // the leader's stream as its client read it
	skipped := map[string]int{}
	for round := range 15 {
		for _, mode := range []string{"live", "stored"} {
			res, li, err := liveRoundErr(t, clusters[mode], 30, fmt.Sprintf("bench round %d %s", round, mode))
			if err != nil { // not a figure of this round; reported
				t.Logf("round skipped: %v", err)
				skipped[mode]++
				continue
			}
			l := res[li]
			streamBytes = len(l.body)
			for _, r := range res {
				if r.replica == l.replica || r.state != "coalesced" {
					continue
				}
				got[mode].first = append(got[mode].first, r.first.Sub(r.sent)-l.first.Sub(l.sent))
				got[mode].last = append(got[mode].last, r.last.Sub(r.sent)-l.last.Sub(l.sent))
			}
		}
	}
	pct := func(d []time.Duration, p int) time.Duration {
		slices.Sort(d)
		return d[min(len(d)-1, len(d)*p/100)]
	}
	for _, mode := range []string{"stored", "live"} {
		a := got[mode]
		t.Logf("%s: cross-replica follower added latency (n=%d, %d rounds skipped): first byte p50 %s p99 %s; last byte p50 %s p99 %s",
			mode, len(a.first), skipped[mode], pct(a.first, 50), pct(a.first, 99), pct(a.last, 50), pct(a.last, 99))
	}
	// Redis memory of the live flights' streams (they live on for their TTL).
	cl := clusters["live"]
	opt, err := goredis.ParseURL(cl.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Keys(ctx, cl.prefix+"s:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no live stream left in Redis (%v)", err)
	}
	var mem, entries int64
	for _, k := range keys {
		m, _ := c.MemoryUsage(ctx, k, 0).Result()
		n, _ := c.XLen(ctx, k).Result()
		mem += m
		entries += n
	}
	t.Logf("live streams in Redis: %d, %d bytes each on average (MEMORY USAGE SAMPLES 0), %d entries each; the client's stream %d bytes",
		len(keys), mem/int64(len(keys)), entries/int64(len(keys)), streamBytes)
}
