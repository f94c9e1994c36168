package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/gateway"
)

// On a miss the pooled request buffer goes back to the pool once the
// handler, the flight and the upstream request are done with it. Distinct
// bodies of several size classes, many misses at once (shared flights,
// private ones, i.e. coalescing on and off, and calls with an
// Idempotency-Key), round after round so that buffers are reused while
// other misses are still in flight: every body the provider receives is
// exactly one the clients sent, each client is answered for its own body,
// an idempotent call's retry replays its own answer, and the buffers do
// come back.
func TestMissBodiesReturnToThePool(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	h := newHarness(t, func(s *setup) {
		s.tap = func(_ string, b []byte) { mu.Lock(); seen[string(b)]++; mu.Unlock() }
	})
	sizes := []int{3 << 10, 40 << 10, 200 << 10}
	const perSize, rounds = 8, 3
	var bodies []string
	for r := 0; r < rounds; r++ {
		for _, n := range sizes {
			for k := 0; k < perSize; k++ {
				tag := fmt.Sprintf("round %d body %d of %d bytes: ", r, k, n)
				pad := strings.Repeat(string(rune('a'+k)), max(n-len(tag), 1))
				bodies = append(bodies, `{"model":"sim-small","messages":[{"role":"user","content":"`+tag+pad+`"}]}`)
			}
		}
	}
	before := gateway.MissBodiesReturned.Load()
	per := len(sizes) * perSize
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		errs := make(chan error, 2*per)
		answers := make([]string, per)
		post := func(i int, body, idemKey string) (*http.Response, []byte, error) {
			hr, _ := http.NewRequest("POST", h.URL+"/v1/chat/completions", strings.NewReader(body))
			hr.Header.Set("Content-Type", "application/json")
			switch {
			case idemKey != "":
				hr.Header.Set("Idempotency-Key", idemKey)
			case i%3 == 0:
				hr.Header.Set("Groundhog-Coalesce", "on") // a shared flight
			}
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				return nil, nil, err
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 {
				return nil, nil, fmt.Errorf("body %d: status %d: %s", i, res.StatusCode, b)
			}
			return res, b, nil
		}
		idemKey := func(i int) string {
			if i%3 != 2 {
				return ""
			}
			return fmt.Sprintf("round-%d-call-%d", r, i)
		}
		for i, body := range bodies[r*per : (r+1)*per] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, b, err := post(i, body, idemKey(i))
				if err != nil {
					errs <- err
					return
				}
				answers[i] = string(b)
				if hash := res.Header.Get("Groundhog-Request-Hash"); hash != hashOf(t, "chat", body) {
					errs <- fmt.Errorf("body %d: Groundhog-Request-Hash %s is not its body's", i, hash)
				}
				if res.Header.Get("Groundhog-Cache") == "hit" {
					errs <- fmt.Errorf("body %d: a hit, want a miss", i)
				}
			}()
		}
		wg.Wait()
		// Retry each idempotent call: it replays the answer its first
		// attempt got, for its own body.
		for i, body := range bodies[r*per : (r+1)*per] {
			if idemKey(i) == "" {
				continue
			}
			res, b, err := post(i, body, idemKey(i))
			if err != nil {
				errs <- err
				continue
			}
			if res.Header.Get("Idempotent-Replayed") != "true" || string(b) != answers[i] {
				errs <- fmt.Errorf("body %d: retry with its Idempotency-Key: replayed %q, answer %.80q, want the first answer %.80q",
					i, res.Header.Get("Idempotent-Replayed"), b, answers[i])
			}
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	mu.Lock()
	for _, b := range bodies {
		if seen[b] != 1 {
			t.Errorf("the provider received a body %d times, want once: %.60s…", seen[b], b)
		}
	}
	if len(seen) != len(bodies) {
		t.Errorf("the provider received %d distinct bodies, want %d (a reused buffer sent another call's bytes)", len(seen), len(bodies))
	}
	mu.Unlock()
	// The transport closes a request body when it is done writing it, which
	// may come after the response: wait for the last ones (not a timing
	// assertion: the count only has to get there).
	want := int64(len(bodies))
	for deadline := time.Now().Add(10 * time.Second); gateway.MissBodiesReturned.Load()-before < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := gateway.MissBodiesReturned.Load() - before; got != want {
		t.Fatalf("%d of %d miss bodies went back to the pool", got, want)
	}
	replays := 0
	for i := range bodies {
		if i%per%3 == 2 {
			replays++
		}
	}
	if rows := len(h.ledgerRows()); rows != len(bodies)+replays {
		t.Fatalf("%d ledger rows, want %d (%d calls, %d replays)", rows, len(bodies)+replays, len(bodies), replays)
	}
}
