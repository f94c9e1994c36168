package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// barrier is a Config.Sleep that holds the first n sleepers until all n
// have arrived (so n requests are provably all past their prefix-cache
// lookup before any of them stores), then lets every sleep through. It
// records the durations asked for.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	release chan struct{}
	d       []time.Duration
}

func newBarrier(n int) *barrier { return &barrier{n: n, release: make(chan struct{})} }

func (b *barrier) Sleep(ctx context.Context, d time.Duration) error {
	b.mu.Lock()
	b.d = append(b.d, d)
	b.arrived++
	if b.arrived == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *barrier) last() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.d[len(b.d)-1]
}

// TestParallelRequestsAllMiss: a prefix becomes readable only once the
// request writing it has started answering, so n requests that arrive
// together all miss and each pays the write; the next one reads, and its
// first token comes sooner by the cached tokens.
func TestParallelRequestsAllMiss(t *testing.T) {
	const n = 4
	const first, perPrompt = time.Second, time.Millisecond
	for _, c := range []struct {
		name, path, body string
		written, total   int64 // per request
		usage            func(raw []byte) (read, written int64)
	}{
		{"anthropic", "/v1/messages", mreq(nil, []any{ablock(1100, "rule", "default")}, amsg("user", ablock(1, "hi", ""))), 1103, 1109,
			func(raw []byte) (int64, int64) {
				var r struct{ Usage anthUsage }
				json.Unmarshal(raw, &r)
				return r.Usage.Read, r.Usage.Creation
			}},
		{"openai explicit", "/v1/responses", respReq(explicitMode, rmsg{"developer", "rule", 1200, true}, rmsg{"user", "hi", 1, false}), 1203, 1209,
			func(raw []byte) (int64, int64) {
				var r struct {
					Usage struct {
						D struct {
							Cached  int64 `json:"cached_tokens"`
							Written int64 `json:"cache_write_tokens"`
						} `json:"input_tokens_details"`
					}
				}
				json.Unmarshal(raw, &r)
				return r.Usage.D.Cached, r.Usage.D.Written
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBarrier(n)
			s, base := startSim(t, Config{FirstToken: first, PerPromptToken: perPrompt, Sleep: b.Sleep})
			send := func() (read, written int64, err error) {
				req, _ := http.NewRequest(http.MethodPost, base+c.path, strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer sk-par")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0, 0, err
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				if res.StatusCode != 200 {
					return 0, 0, fmt.Errorf("status %d: %s", res.StatusCode, raw)
				}
				read, written = c.usage(raw)
				return read, written, nil
			}
			type result struct {
				read, written int64
				err           error
			}
			results := make(chan result, n)
			for range n {
				go func() {
					r, w, err := send()
					results <- result{r, w, err}
				}()
			}
			for range n {
				r := <-results
				if r.err != nil || r.read != 0 || r.written != c.written {
					t.Fatalf("parallel request: read %d written %d (%v), want a miss writing %d", r.read, r.written, r.err, c.written)
				}
			}
			if bill := s.Bill(); bill.CacheWriteTokens != n*c.written || bill.CachedInputTokens != 0 {
				t.Fatalf("bill %+v, want %d writes of %d", bill, n, c.written)
			}
			if b.last() != first+time.Duration(c.total)*perPrompt {
				t.Fatalf("TTFT of a miss %v", b.last())
			}
			read, written, err := send()
			if err != nil || read != c.written || written != 0 {
				t.Fatalf("after them: read %d written %d (%v)", read, written, err)
			}
			if want := first + time.Duration(c.total-c.written)*perPrompt; b.last() != want {
				t.Fatalf("TTFT of a read %v, want %v", b.last(), want)
			}
		})
	}
}
